#!/usr/bin/env bash
# Throughput over simulated lines, ours against amodem in one run (scripts/bench-rate.py):
#   - the sound-card cable and the speaker-like line, 256 KiB each: the best byte-exact effective rate
#     of our OFDM, our FSK and amodem 1.16, and the ratio;
#   - an SNR sweep on the cable's band and drift (16 KiB per point) and its picture
#     (Benchmarks/rate-snr.png, by the rate-plot benchmark);
#   - with --thresholds, the lowest SNR of each OFDM configuration (the table of `modem tx --help`).
# MODEM names a built modem (default: the release build of the modem's half is made).
#   bash scripts/bench-rate.sh [--thresholds] [--no-sweep]
set -euo pipefail
cd "$(dirname "$0")/.."
thresholds=no sweep=yes
for a in "$@"; do
  case $a in
    --thresholds) thresholds=yes ;;
    --no-sweep) sweep=no ;;
    *) echo "usage: bash scripts/bench-rate.sh [--thresholds] [--no-sweep]" >&2; exit 64 ;;
  esac
done
command -v sox >/dev/null || { echo "bench-rate: sox is missing (apt install sox)" >&2; exit 1; }
if [[ -z ${MODEM:-} ]]; then
  source scripts/build-config.sh
  SWIFTMODEM_BUILD=modem swift build "${modem_build_config[@]}" --product modem >&2
  MODEM=$PWD/.build-tests/release/modem
fi
export MODEM
python=$(bash scripts/venv.sh amodem scripts/amodem-requirements.txt .build/amodem-venv 'import amodem')
export AMODEM=$(dirname "$python")/amodem
echo "## Lines (256 KiB, $(date -u +%Y-%m-%d), $(nproc) cores)"
python3 scripts/bench-rate.py lines
if [[ $sweep == yes ]]; then
  echo
  echo "## Rate against SNR (cable band and drift, 16 KiB per point)"
  python3 scripts/bench-rate.py sweep --csv Benchmarks/rate-snr.csv
  swift run -c release --package-path Benchmarks --scratch-path Benchmarks/.build rate-plot Benchmarks/rate-snr.csv Benchmarks/rate-snr.png >&2
  echo "(picture: Benchmarks/rate-snr.png)"
fi
if [[ $thresholds == yes ]]; then
  echo
  echo "## OFDM configurations: the lowest SNR for 16 KiB byte-exact (white noise, flat line)"
  python3 scripts/bench-rate.py thresholds
fi

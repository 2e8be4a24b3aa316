#!/usr/bin/env bash
# The pictures of the high-rate and HF modems (issue "rates to the limit"), into Benchmarks/pictures/:
#   hf-snr.png       ours and FreeDV's best data mode against SNR3k, white noise and MPP fading, from
#                    Benchmarks/hf.csv (which `bash Benchmarks/hf.sh` writes)
#   cable.png        one transmission at --bitrate 320000 through the cable line (SNR 40 dB, 20-20,000 Hz,
#                    100 ppm): `modem analyze --png`: spectrogram, the constellation after equalisation, the
#                    SNR of every carrier as the training measured it
#   speaker.png      the same at --bitrate 64000 through the speaker-like line (SNR 24 dB, 250-9000 Hz,
#                    a 1.5 ms echo at 0.5, 300 ppm)
# Usage: bash Benchmarks/pictures.sh   (MODEM=path/to/modem, default .build-tests/release/modem)
set -euo pipefail
cd "$(dirname "$0")/.."
modem=${MODEM:-.build-tests/release/modem}
[[ -x $modem ]] || { echo "pictures.sh: no modem binary at $modem (build it, or set MODEM)" >&2; exit 1; }
out=Benchmarks/pictures
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# HF: four series in rate-plot's CSV (series,snr,bitrate).
{
  echo "series,snr,bitrate"
  awk -F, 'NR > 1 { printf "ours %s,%s,%s\n", $1, $2, $3 }' Benchmarks/hf.csv
  awk -F, 'NR > 1 { printf "freedv %s,%s,%s\n", $1, $2, $5 }' Benchmarks/hf.csv
} >"$work/hf.csv"
swift run -c release --package-path Benchmarks --scratch-path Benchmarks/.build rate-plot \
  "$work/hf.csv" "$out/hf-snr.png" "HF: byte-exact rate against SNR3k, ours and FreeDV (AWGN, MPP fading)" "SNR in 3 kHz (dB)"

# OFDM: one transmission through each line, drawn by modem analyze.
head -c 65536 /dev/urandom >"$work/payload"
line() {
  local name=$1 bitrate=$2; shift 2
  "$modem" tx --profile ofdm --bitrate "$bitrate" --out "$work/$name-tx.wav" "$work/payload"
  "$modem" impair "$work/$name-tx.wav" "$work/$name.wav" --seed 7 "$@"
  "$modem" analyze --png "$out/$name.png" "$work/$name.wav" | sed "s|$work/||"
}
line cable 320000 --snr 40 --drift 100 --band 20-20000 --gain -3.1
line speaker 64000 --snr 24 --band 250-9000 --echo 1.5:0.5 --drift 300
echo "pictures.sh: wrote $out/hf-snr.png, $out/cable.png, $out/speaker.png"

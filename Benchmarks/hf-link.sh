#!/usr/bin/env bash
# The channel protocol over the HF modem in channel time: `modem transfer-test --profile hf` over the
# simulated SSB line (steady, and two paths fading with a 1 Hz Doppler spread) at a few SNR3k, Noise
# sessions and data connections on top, one line per run: goodput, the configuration the sender ended
# on and the goodput's share of its net rate. Uses the release modem unless MODEM names one.
#   bash Benchmarks/hf-link.sh [SIZE] [SEED]      (default 65536 bytes, seed 1; ~1-3 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-65536}
seed=${2:-1}
if [[ -z ${MODEM:-} ]]; then
  SWIFTMODEM_BUILD=modem swift build -c release --product modem --scratch-path .build-rel >&2
  MODEM=$PWD/.build-rel/release/modem
fi
echo "## HF link: transfer-test --profile hf --size $size --seed $seed ($(date -u +%Y-%m-%d), $(nproc) cores)"
echo "| line | SNR3k dB | result | goodput bit/s | channel s | sender ended on | share of its rate | wall s |"
echo "|---|---|---|---|---|---|---|---|"
for line in hf hf-fading; do
  for snr in 25 15 8 3; do
    start=$(date +%s.%N)
    out=$("$MODEM" transfer-test --profile hf --line "$line" --snr "$snr" --size "$size" --seed "$seed" 2>/dev/null || true)
    wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
    result=$(sed -n 1p <<<"$out" | cut -d: -f1)
    goodput=$(sed -n 2p <<<"$out" | sed -E 's/goodput ([0-9]+) bit\/s over ([0-9.]+) s.*/\1/')
    seconds=$(sed -n 2p <<<"$out" | sed -E 's/goodput ([0-9]+) bit\/s over ([0-9.]+) s.*/\2/')
    ended=$(sed -n 4p <<<"$out" | sed -E 's/the sender sent with (.*) at the end \(([0-9]+) bit\/s line rate(, goodput ([0-9]+) % of it)?\).*/\1 (\2 bit\/s)/')
    share=$(sed -n 4p <<<"$out" | sed -E 's/.*goodput ([0-9]+) % of it.*/\1 %/')
    printf '| %s | %s | %s | %s | %s | %s | %s | %.0f |\n' "$line" "$snr" "$result" "$goodput" "$seconds" "$ended" "$share" "$wall"
  done
done

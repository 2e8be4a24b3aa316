#!/usr/bin/env bash
# The channel protocol: `modem link-test` over the in-memory audio channel for the issue's targets
# (clean, faulty, 64 KiB, goodput) and a sweep of SNRs, with the wall time of each run. Channel time
# is simulated, so the wall time is the cost of modulating, impairing and demodulating both ends.
#   bash scripts/bench-link.sh            (about a minute plus the release build)
set -euo pipefail
NAME=bench-link
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SCRATCH=${SCRATCH:-$ROOT/.build-bench}
source "$ROOT/scripts/bench-common.sh"
build_modem
run() {
    local s e
    s=$(date +%s.%N)
    out=$("$MODEM" link-test "$@" --json | cut -d, -f1-8)
    e=$(date +%s.%N)
    printf '%-75s %s  wall %.1f s\n' "$*" "$out" "$(echo "$e - $s" | bc -l)"
}
echo "== targets"
run --mode master-slave --count 200 --size 64 --seed 3
run --mode duplex --count 200 --size 64 --seed 4
run --mode master-slave --count 300 --size 200 --snr 0 --loss 0.2 --drift 500 --seed 7
run --mode duplex --count 300 --size 200 --snr 0 --loss 0.2 --seed 8
run --mode master-slave --count 3 --size 65536 --snr 6 --seed 9
run --mode master-slave --count 10 --size 4096 --seed 1
echo "== SNR sweep (master-slave, 30 x 200 B, seed 3; full-band SNR at 48 kHz: Eb/N0 = SNR + 13 dB at 1200 baud)"
for snr in 6 0 -2 -3 -4 -5; do run --count 30 --size 200 --seed 3 --snr "$snr"; done
echo "== other rates (30 x 200 B, seed 3)"
for b in "300 --snr 0" "2400 --snr 3" "4800 --snr 6" "9600 --snr 10"; do run --count 30 --size 200 --seed 3 --baud $b; done

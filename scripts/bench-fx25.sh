#!/usr/bin/env bash
# FX.25 (AX.25 inside Reed-Solomon blocks) against Dire Wolf 1.6, on the same files in the same run:
#   1. Dire Wolf's noise test with FX.25, `gen_packets -X 16|32|64 -n 100` (noise rising through the
#      file; deterministic), at 1200 baud (and -B 300, -B 9600): frames decoded by
#      `modem rx --framing ax25` and by `atest -P E+ -F 1` (the issue's target: ours at least atest's + 3),
#      with the frames our rx says FEC corrected;
#   2. plain AX.25, `gen_packets -n 100`: ours (stays at least 80 at 1200 baud);
#   3. ours to Dire Wolf: 20 frames sent with `modem tx --fx25 16|32|64`, counted by atest's FX.25
#      decoder ("FEC complete").
#   bash scripts/bench-fx25.sh            (about a minute plus the release build)
set -euo pipefail
NAME=bench-fx25
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SCRATCH=${SCRATCH:-$ROOT/.build-bench}
source "$ROOT/scripts/bench-common.sh"
need gen_packets "apt-get install direwolf"
need atest "apt-get install direwolf"
build_modem
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
declare -A PROFILE=([1200]=bell202 [300]=hf300 [9600]=g3ruh)
declare -A GENOPT=([1200]="" [300]="-B 300" [9600]="-B 9600")
declare -A ATESTOPT=([1200]="-P E+ -F 1" [300]="-B 300 -F 1" [9600]="-B 9600 -P E+ -F 1")
# The "N packets decoded" of atest's output.
atest_count() { sed 's/\x1b\[[0-9;]*[A-Za-z]//g' "$1" | grep -o '[0-9]* packets decoded' | tail -1 | cut -d' ' -f1; }

echo "== gen_packets -n 100 (44.1 kHz): frames decoded, ours (FEC-corrected) against atest"
printf '%-6s %-8s %-22s %s\n' baud code ours atest
for b in 1200 300 9600; do
    for x in none 16 32 64; do
        f="$WORK/g$b-$x.wav"
        xopt=""; [ "$x" != none ] && xopt="-X $x"
        # shellcheck disable=SC2086
        gen_packets ${GENOPT[$b]} $xopt -n 100 -o "$f" >/dev/null 2>&1
        "$MODEM" rx --profile "${PROFILE[$b]}" --framing ax25 --stats "$f" >"$WORK/ours" 2>"$WORK/ours.err"
        ours=$(wc -l <"$WORK/ours")
        fec=$(grep -o '[0-9]* corrected by FEC' "$WORK/ours.err" | cut -d' ' -f1 || true)
        # shellcheck disable=SC2086
        atest ${ATESTOPT[$b]} "$f" >"$WORK/atest" 2>&1 || true
        printf '%-6s %-8s %-22s %s\n' "$b" "$x" "$ours${fec:+ ($fec by FEC)}" "$(atest_count "$WORK/atest") (atest ${ATESTOPT[$b]})"
    done
done

echo "== ours to Dire Wolf: 20 frames with --fx25 N, atest's FX.25 decoder"
for i in $(seq 1 20); do echo "N0CALL-$((i % 15 + 1))>APZ001,WIDE1-1:FX.25 frame $i of 20, the quick brown fox"; done >"$WORK/frames.txt"
for b in 1200 300 9600; do
    for x in 16 32 64; do
        "$MODEM" tx --profile "${PROFILE[$b]}" --framing ax25 --fx25 "$x" --rate 48000 -q --out "$WORK/tx.wav" "$WORK/frames.txt"
        bopt="-B $b -d x"
        # shellcheck disable=SC2086
        atest $bopt "$WORK/tx.wav" >"$WORK/atest" 2>&1 || true
        printf '%-6s --fx25 %-3s atest: %s of 20 decoded, %s FEC complete\n' "$b" "$x" "$(atest_count "$WORK/atest")" \
            "$(sed 's/\x1b\[[0-9;]*[A-Za-z]//g' "$WORK/atest" | grep -c 'FEC complete' || true)"
    done
done

#!/usr/bin/env bash
# IL2P (AX.25 in Reed-Solomon blocks instead of HDLC) against Dire Wolf 1.8, built from the archive in
# Fixtures/peers by scripts/direwolf18.sh, on the same files in the same run:
#   1. Dire Wolf's noise test with IL2P, `gen_packets -n 100 -r 48000 -I 1|-I 0|-i 1` (noise rising through
#      the file; deterministic) at 1200, 300 and 9600 baud: frames decoded by
#      `modem rx --framing ax25` (true: a line gen_packets sent; corrupt: any other) and by atest
#      (1200: `atest -P E+ -F 1`, 300: `atest -B 300`, 9600: `atest -B 9600`; its lines counted the same
#      way), with the frames our rx says the codes corrected, and each side's time;
#   2. ours to Dire Wolf: 20 monitor lines through `modem tx --il2p 1|0`, counted by atest 1.8 (and how
#      many it marks IL2P).
#   bash scripts/bench-il2p.sh            (about a minute plus the builds)
set -euo pipefail
NAME=bench-il2p
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SCRATCH=${SCRATCH:-$ROOT/.build-bench}
source "$ROOT/scripts/bench-common.sh"
DW=$(bash "$ROOT/scripts/direwolf18.sh")
build_modem
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
declare -A PROFILE=([1200]=bell202 [300]=hf300 [9600]=g3ruh)
declare -A GENOPT=([1200]="" [300]="-B 300" [9600]="-B 9600")
declare -A ATESTOPT=([1200]="-P E+ -F 1" [300]="-B 300" [9600]="-B 9600")
plain() { sed 's/\x1b\[[0-9;]*[A-Za-z]//g' "$1"; }
# True and corrupt among unique lines (gen_packets' frames are "... dog!  NNNN of 0100").
count() {
    local t c
    t=$(sort -u "$1" | grep -caE '^WB2OSZ-15>TEST:,The quick brown fox jumps over the lazy dog!  [0-9]{4} of 0100$' || true)
    c=$(( $(sort -u "$1" | wc -l) - t ))
    echo "$t true, $c corrupt"
}

echo "== gen_packets -n 100 -r 48000 (Dire Wolf 1.8): ours against atest 1.8 on the same file"
printf '%-6s %-6s %-44s %s\n' baud option ours atest
for opt in "-I 1" "-I 0" "-i 1"; do
    for b in 1200 300 9600; do
        f="$WORK/g$b.wav"
        # shellcheck disable=SC2086
        "$DW/gen_packets" ${GENOPT[$b]} $opt -n 100 -r 48000 -o "$f" >/dev/null 2>&1
        "$MODEM" rx --profile "${PROFILE[$b]}" --framing ax25 --stats "$f" >"$WORK/ours" 2>"$WORK/ours.err"
        /usr/bin/time -f %e -o "$WORK/t" "$MODEM" rx --profile "${PROFILE[$b]}" --framing ax25 "$f" >/dev/null 2>&1
        t=$(cat "$WORK/t")
        fec=$(grep -o '[0-9]* corrected by FEC ([0-9]* symbols' "$WORK/ours.err" | sed 's/ corrected by FEC (/ corrected, /; s/$/ fixed/' || true)
        # shellcheck disable=SC2086
        /usr/bin/time -f %e -o "$WORK/t" "$DW/atest" ${ATESTOPT[$b]} "$f" >"$WORK/atest" 2>/dev/null || true
        ta=$(cat "$WORK/t")
        # A decoded frame's line: "[0] ..." ("[0.2] ..." with -P E+: the slicer that found it).
        plain "$WORK/atest" | grep -aE '^\[0(\.[0-9]+)?\] ' | sed -E 's/^\[[0-9.]+\] //' >"$WORK/atest.lines" || true
        printf '%-6s %-6s %-44s %s\n' "$b" "$opt" "$(count "$WORK/ours") ($fec) ${t} s" \
            "$(count "$WORK/atest.lines") ${ta} s (atest ${ATESTOPT[$b]})"
    done
done

echo "== ours to Dire Wolf: 20 frames with modem tx --il2p N, atest 1.8"
for i in $(seq 1 20); do echo "N0CALL-1>APZ001,WIDE1-1:frame $i of 20, the quick brown fox jumps over the lazy dog"; done >"$WORK/frames.txt"
for b in 1200 300 9600; do
    for n in 1 0; do
        "$MODEM" tx --profile "${PROFILE[$b]}" --framing ax25 --il2p "$n" -q --out "$WORK/tx.wav" "$WORK/frames.txt"
        bopt=""; [ "$b" != 1200 ] && bopt="-B $b"
        # shellcheck disable=SC2086
        "$DW/atest" $bopt "$WORK/tx.wav" >"$WORK/atest" 2>&1 || true
        printf '%-6s --il2p %s  atest: %s of 20 decoded, %s marked IL2P\n' "$b" "$n" \
            "$(plain "$WORK/atest" | grep -o '[0-9]* packets decoded' | tail -1 | cut -d' ' -f1)" \
            "$(plain "$WORK/atest" | grep -c '   IL2P' || true)"
    done
done

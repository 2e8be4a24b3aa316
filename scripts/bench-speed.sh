#!/usr/bin/env bash
# Speed and memory of `modem` against minimodem, measured in the same run on the same files.
#
#   scripts/bench-speed.sh            # full run (about 2 minutes on 2 cores, ~0.5 GB of scratch disk)
#   RUNS=3 scripts/bench-speed.sh     # fewer timed runs per command (default 5)
#   SKIP_HOUR=1 scripts/bench-speed.sh  # skip the one-hour file
#
# What it does:
#   1. builds `modem` in release mode (scratch dir .build-bench);
#   2. writes 36,000 bytes of text (300 s at 1200 baud 8N1) and makes a 48 kHz WAV of it with
#      `minimodem --tx 1200 -R 48000`;
#   3. checks that `modem rx --baud 1200 FILE` decodes the text exactly (fails otherwise);
#   4. times `modem rx --baud 1200 -q FILE` and `minimodem --rx 1200 -q -f FILE` (median of RUNS
#      wall times each, hyperfine if installed, else a loop over `date +%s.%N`) and prints the ratio;
#   5. decodes a one-hour file (the 300 s audio 12 times) with `/usr/bin/time -f %M` for the peak
#      resident memory of both decoders (target for modem: under 32 MiB), then deletes it;
#   6. times `modem tx --baud 1200 --out FILE` on the 36,000 bytes (seconds of audio per wall second),
#      beside `minimodem --tx 1200 -R 48000 -f FILE` on the same bytes.
# Needs: swift, minimodem, sox (soxi), /usr/bin/time; optional: hyperfine.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${RUNS:-5}"
SKIP_HOUR="${SKIP_HOUR:-0}"
SCRATCH="${SCRATCH:-$ROOT/.build-bench}"
WORK="$(mktemp -d /tmp/bench-speed.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

NAME=bench-speed
source "$ROOT/scripts/bench-common.sh"
need swift "the Swift toolchain"
need minimodem "apt-get install minimodem"
need soxi "apt-get install sox"
[ -x /usr/bin/time ] || { echo "bench-speed: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }

build_modem

# Times a command line RUNS times (after one warm-up run) and prints "WALL CPU": the median wall
# seconds and the CPU seconds (user + system, all threads; the median with the date loop, hyperfine's
# mean with hyperfine), 4 decimals each.
median_wall() {
    if command -v hyperfine >/dev/null 2>&1; then
        hyperfine --runs "$RUNS" --warmup 1 --style none --export-json "$WORK/hf.json" "$1" >/dev/null 2>&1
        python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("%.4f %.4f" % (r["median"], r["user"] + r["system"]))' "$WORK/hf.json"
    else
        bash -c "$1" >/dev/null 2>&1 || true   # warm-up (page cache)
        local i t0 t1
        : > "$WORK/times"
        for ((i = 0; i < RUNS; i++)); do
            t0=$(date +%s.%N)
            # bash's `times` prints the children's user and system time (getrusage, ms resolution).
            bash -c "$1 >/dev/null 2>&1; times" > "$WORK/cpu" 2>/dev/null
            t1=$(date +%s.%N)
            awk -v a="$t0" -v b="$t1" -v c="$(tail -1 "$WORK/cpu")" 'BEGIN {
                n = split(c, u, " "); cpu = 0
                for (i = 1; i <= n; i++) { split(u[i], ms, "m"); sub("s", "", ms[2]); cpu += ms[1] * 60 + ms[2] }
                printf "%.6f %.6f\n", b - a, cpu }' >> "$WORK/times"
        done
        python3 -c 'import sys, statistics as st; r=[l.split() for l in open(sys.argv[1])]; print("%.4f %.4f" % (st.median(float(a) for a, b in r), st.median(float(b) for a, b in r)))' "$WORK/times"
    fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
timer="date loop"; command -v hyperfine >/dev/null 2>&1 && timer="hyperfine"

echo "== test file"
# 36,000 bytes of text: 1200 baud 8N1 is 120 characters per second, so 300 s.
python3 - "$WORK/text.txt" <<'EOF'
import sys
line = b"The quick brown fox jumps over the lazy dog 0123456789 SwiftModem vs minimodem.\n"
n = 36000
data = (line * (n // len(line) + 1))[:n - 1] + b"\n"
open(sys.argv[1], "wb").write(data)
EOF
minimodem --tx 1200 -R 48000 -f "$WORK/tx300.wav" < "$WORK/text.txt"
DUR=$(soxi -D "$WORK/tx300.wav")
echo "minimodem --tx 1200 -R 48000: $(soxi -r "$WORK/tx300.wav") Hz, $(soxi -b "$WORK/tx300.wav") bits, ${DUR} s, $(stat -c %s "$WORK/tx300.wav") bytes"

echo "== correctness"
"$MODEM" rx --baud 1200 "$WORK/tx300.wav" > "$WORK/rx.txt" 2> "$WORK/rx.err" || true
if cmp -s "$WORK/text.txt" "$WORK/rx.txt"; then
    echo "modem rx --baud 1200: decodes all $(stat -c %s "$WORK/text.txt") bytes exactly"
else
    echo "modem rx --baud 1200: MISMATCH ($(stat -c %s "$WORK/rx.txt") bytes out of $(stat -c %s "$WORK/text.txt"))" >&2
    cmp "$WORK/text.txt" "$WORK/rx.txt" | head -3 >&2 || true
    tail -5 "$WORK/rx.err" >&2
    exit 1
fi
minimodem --rx 1200 -q -f "$WORK/tx300.wav" > "$WORK/mm.txt" 2>/dev/null || true
if cmp -s "$WORK/text.txt" "$WORK/mm.txt"; then mm_ok="exact"; else mm_ok="NOT exact ($(stat -c %s "$WORK/mm.txt") bytes)"; fi
echo "minimodem --rx 1200: $mm_ok"

echo "== decode speed, ${DUR} s of 1200 baud at 48 kHz, median of $RUNS ($timer)"
read -r T_MODEM C_MODEM <<< "$(median_wall "'$MODEM' rx --baud 1200 -q '$WORK/tx300.wav'")"
read -r T_MM C_MM <<< "$(median_wall "minimodem --rx 1200 -q -f '$WORK/tx300.wav'")"
echo "modem rx:      ${T_MODEM} s wall ($(ratio "$DUR" "$T_MODEM")x real time), ${C_MODEM} s CPU"
echo "minimodem rx:  ${T_MM} s wall ($(ratio "$DUR" "$T_MM")x real time), ${C_MM} s CPU"
echo "speed ratio (minimodem time / modem time): wall $(ratio "$T_MM" "$T_MODEM"), CPU $(ratio "$C_MM" "$C_MODEM")"

if [ "$SKIP_HOUR" != 1 ]; then
    echo "== one hour (the 300 s file 12 times), peak resident memory"
    args=(); for i in $(seq 12); do args+=("$WORK/tx300.wav"); done
    sox "${args[@]}" "$WORK/hour.wav"
    HDUR=$(soxi -D "$WORK/hour.wav")
    python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); open(sys.argv[2],"wb").write(d*12)' "$WORK/text.txt" "$WORK/hour.txt"
    t0=$(date +%s.%N)
    /usr/bin/time -f "%M %U %S" -o "$WORK/mem.modem" "$MODEM" rx --baud 1200 -q "$WORK/hour.wav" > "$WORK/hour.rx"
    t1=$(date +%s.%N)
    /usr/bin/time -f "%M %U %S" -o "$WORK/mem.mm" minimodem --rx 1200 -q -f "$WORK/hour.wav" > "$WORK/hour.mm" 2>/dev/null || true
    t2=$(date +%s.%N)
    # "exact", or how many bytes differ and where the runs of differences start.
    compare() {
        python3 - "$1" "$2" <<'PY'
import sys
a = open(sys.argv[1], "rb").read(); b = open(sys.argv[2], "rb").read()
if a == b:
    print("exact"); sys.exit()
d = [i for i in range(min(len(a), len(b))) if a[i] != b[i]]
starts = [i for k, i in enumerate(d) if k == 0 or d[k - 1] != i - 1]
print("NOT exact: %d of %d bytes out, %d bytes differ in %d runs starting at byte offsets %s"
      % (len(b), len(a), len(d) + abs(len(a) - len(b)), len(starts), ", ".join(map(str, starts[:12]))))
PY
    }
    fmt() { awk -v a="$1" -v b="$2" -v c="$(tail -1 "$3")" 'BEGIN { split(c, u, " "); printf "peak RSS %.1f MiB, %.2f s wall, %.2f s CPU", u[1] / 1024, b - a, u[2] + u[3] }'; }
    echo "audio: ${HDUR} s, $(stat -c %s "$WORK/hour.wav") bytes"
    echo "modem rx:     $(fmt "$t0" "$t1" "$WORK/mem.modem") (target: under 32 MiB); output $(compare "$WORK/hour.txt" "$WORK/hour.rx")"
    echo "minimodem rx: $(fmt "$t1" "$t2" "$WORK/mem.mm"); output $(compare "$WORK/hour.txt" "$WORK/hour.mm")"
    rm -f "$WORK/hour.wav" "$WORK/hour.rx" "$WORK/hour.mm" "$WORK/hour.txt"
fi

echo "== modulation speed, 36,000 bytes at 1200 baud 8N1, 48 kHz s16 WAV, median of $RUNS ($timer)"
read -r T_TX C_TX <<< "$(median_wall "'$MODEM' tx --baud 1200 -q --out '$WORK/x.wav' '$WORK/text.txt'")"
TXDUR=$(soxi -D "$WORK/x.wav")
read -r T_MMTX C_MMTX <<< "$(median_wall "minimodem --tx 1200 -R 48000 -f '$WORK/y.wav' < '$WORK/text.txt'")"
MMTXDUR=$(soxi -D "$WORK/y.wav")
echo "modem tx:      ${T_TX} s wall (${C_TX} s CPU) for ${TXDUR} s of audio = $(ratio "$TXDUR" "$T_TX") s of audio per wall second"
echo "minimodem tx:  ${T_MMTX} s wall (${C_MMTX} s CPU) for ${MMTXDUR} s of audio = $(ratio "$MMTXDUR" "$T_MMTX") s of audio per wall second"
echo "speed ratio (minimodem time / modem time): wall $(ratio "$T_MMTX" "$T_TX")"
"$MODEM" rx --baud 1200 -q "$WORK/x.wav" | cmp -s - "$WORK/text.txt" && echo "modem tx output decodes back exactly (modem rx)" || echo "modem tx output does NOT decode back exactly" >&2

#!/usr/bin/env bash
# Packet radio (AX.25): frames decoded from Dire Wolf's noise test, and decode speed, of `modem rx`
# against Dire Wolf 1.6's `atest` (and multimon-ng), measured in the same run on the same files.
#
#   scripts/bench-ax25.sh                 # full run (about a minute on 2 cores plus the build; ~0.2 GB of /tmp)
#   RUNS=3 scripts/bench-ax25.sh          # fewer timed runs per command on the short files (default 5)
#   LONG_RUNS=5 scripts/bench-ax25.sh     # more timed runs on the 20-copy file (default 3: atest takes ~11 s a run)
#   SKIP_LONG=1 scripts/bench-ax25.sh     # skip the 20-copy file
#   SKIP_CORRUPT=1 scripts/bench-ax25.sh  # skip the true/corrupt sweep (step 7)
#
# What it does:
#   1. builds `modem` in release mode (scratch dir .build-bench) and prints the machine (date, cores, load);
#   2. makes Dire Wolf's 100-frame noise test at three rates with gen_packets (44.1 kHz, 16 bit, the
#      noise rising through the file; gen_packets is deterministic, so the files are the same every run):
#        1200 baud  gen_packets -n 100          decoded with  modem rx --profile bell202 --framing ax25
#         300 baud  gen_packets -B 300 -n 100                 modem rx --profile hf300   --framing ax25
#        9600 baud  gen_packets -B 9600 -n 100                modem rx --profile g3ruh   --framing ax25
#   3. counts frames: ours = unique monitor lines on standard output (`sort -u | wc -l`), with the
#      `--stats` counts (decoded, repaired, CRC failures) and the number of lines that are not one of the
#      frames gen_packets sent (false frames); Dire Wolf = the "N packets decoded" of
#      `atest` with its default demodulator, `-P E+`, `-P E+ -F 1` (with -B 300 / -B 9600; at 300 baud
#      -P E+ cannot run on 44.1 kHz audio, so `-P D+ -F 1` and `-P E+ -D 2 -F 1` are added); multimon-ng =
#      lines starting "AFSK1200:" (or "FSK9600:") of `multimon-ng -r -t wav -a AFSK1200 FILE` (multimon-ng
#      pipes a non-raw file through sox, resampled to its demodulator's 22,050 Hz; -r makes sox repeatable);
#   4. times `modem rx` and `atest -P E+` (with the right -B; at 300 baud atest's default `-B 300`, see
#      above) on each file: median of RUNS wall times after a warm-up run, hyperfine if installed, else a
#      loop over `date +%s.%N`; prints the ratio ours/atest (the issue's target: at most 0.2);
#   5. the same on a long file, the 1200 baud file 20 times over (sox, 1563 s), median of LONG_RUNS runs
#      without a warm-up (the file has just been written), counting the frames of the timed runs;
#   6. prints a table of everything;
#   7. true and corrupt frames, ours and `atest -P E+ -F 1`, on 12 files of 60 frames of random text
#      through white noise at -4/-3/-2 dB: scripts/bench-ax25-corrupt.sh with the same binary
#      (about 45 s; SKIP_CORRUPT=1 skips it, CORRUPT_FILES=N changes the number of files).
# Needs: swift, gen_packets and atest (Dire Wolf), multimon-ng, sox (soxi), python3; optional: hyperfine.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${RUNS:-5}"
LONG_RUNS="${LONG_RUNS:-3}"
SKIP_LONG="${SKIP_LONG:-0}"
SCRATCH="${SCRATCH:-$ROOT/.build-bench}"
WORK="$(mktemp -d /tmp/bench-ax25.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

NAME=bench-ax25
source "$ROOT/scripts/bench-common.sh"
need swift "the Swift toolchain"
need gen_packets "apt-get install direwolf"
need atest "apt-get install direwolf"
need multimon-ng "apt-get install multimon-ng"
need sox "apt-get install sox"
need soxi "apt-get install sox"
need python3 "apt-get install python3"

build_modem
echo "modem $("$MODEM" --version 2>/dev/null || echo '(no --version)'); Dire Wolf $(dpkg-query -W -f '${Version}' direwolf 2>/dev/null || echo '(version unknown)'); $(multimon-ng -h 2>&1 | head -1)"

timer="date loop"; command -v hyperfine >/dev/null 2>&1 && timer="hyperfine"

# median_wall N WARMUP OUT CMD: runs CMD (a shell command line) N times after WARMUP warm-up runs,
# its standard output to OUT and standard error to OUT.err (the last run's stay there), and prints
# "WALL CPU": the median wall seconds and the CPU seconds (user + system; hyperfine's mean, the date
# loop's median), 4 decimals each.
median_wall() {
    local n="$1" warm="$2" out="$3" cmd="$4 > '$3' 2> '$3.err'"
    if command -v hyperfine >/dev/null 2>&1; then
        hyperfine --runs "$n" --warmup "$warm" --style none --export-json "$WORK/hf.json" "$cmd" >/dev/null 2>&1
        python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("%.4f %.4f" % (r["median"], r["user"] + r["system"]))' "$WORK/hf.json"
    else
        local i t0 t1
        for ((i = 0; i < warm; i++)); do bash -c "$cmd" || true; done
        : > "$WORK/times"
        for ((i = 0; i < n; i++)); do
            t0=$(date +%s.%N)
            # bash's `times` prints the children's user and system time (getrusage, ms resolution).
            bash -c "$cmd; times" > "$WORK/cpu" 2>/dev/null || true
            t1=$(date +%s.%N)
            awk -v a="$t0" -v b="$t1" -v c="$(tail -1 "$WORK/cpu")" 'BEGIN {
                n = split(c, u, " "); cpu = 0
                for (i = 1; i <= n; i++) { split(u[i], ms, "m"); sub("s", "", ms[2]); cpu += ms[1] * 60 + ms[2] }
                printf "%.6f %.6f\n", b - a, cpu }' >> "$WORK/times"
        done
        python3 -c 'import sys, statistics as st; r=[l.split() for l in open(sys.argv[1])]; print("%.4f %.4f" % (st.median(float(a) for a, b in r), st.median(float(b) for a, b in r)))' "$WORK/times"
    fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
# "N packets decoded" of an atest run (standard output and error in FILE*), or "fails" with the reason.
atest_count() {
    local n
    n=$(cat "$1" "$1.err" 2>/dev/null | sed 's/\x1b\[[0-9;]*[A-Za-z]//g' | grep -o '[0-9]* packets decoded' | tail -1 | cut -d' ' -f1 || true)
    if [ -n "$n" ]; then echo "$n"; else
        echo "fails: $(cat "$1" "$1.err" 2>/dev/null | sed 's/\x1b\[[0-9;]*[A-Za-z]//g' | grep -m1 -i 'too large\|error' | sed 's/\.$//' || echo 'no count printed')"
    fi
}

declare -A PROFILE=([1200]=bell202 [300]=hf300 [9600]=g3ruh)
declare -A GENOPT=([1200]="" [300]="-B 300" [9600]="-B 9600")
# atest option sets to count with, per rate ("" = atest's default demodulator for the rate).
declare -A ATEST_SETS=(
    [1200]="|-P E+|-P E+ -F 1"
    [300]="|-F 1|-P E+|-P E+ -F 1|-P D+ -F 1|-P E+ -D 2 -F 1"
    [9600]="|-F 1|-P E+|-P E+ -F 1"
)
# the atest command timed against ours (-P E+; at 300 baud E+ does not run at 44.1 kHz, so the default).
declare -A ATEST_TIMED=([1200]="-P E+" [300]="" [9600]="-P E+")
declare -A MULTIMON=([1200]=AFSK1200 [9600]=FSK9600)
RATES=(1200 300 9600)

echo "== test files (gen_packets -n 100, 44.1 kHz)"
for b in "${RATES[@]}"; do
    # shellcheck disable=SC2086
    gen_packets ${GENOPT[$b]} -n 100 -o "$WORK/n$b.wav" >/dev/null 2>&1
    echo "n$b.wav: gen_packets ${GENOPT[$b]:+${GENOPT[$b]} }-n 100, $(soxi -r "$WORK/n$b.wav") Hz, $(soxi -D "$WORK/n$b.wav") s, md5 $(md5sum < "$WORK/n$b.wav" | cut -c1-12)"
done

echo "== frames decoded (of 100)"
declare -A OURS STATS COUNT
COUNT_ROWS=()
for b in "${RATES[@]}"; do
    f="$WORK/n$b.wav"
    "$MODEM" rx --profile "${PROFILE[$b]}" --framing ax25 --stats "$f" > "$WORK/ours$b.txt" 2> "$WORK/ours$b.err"
    OURS[$b]=$(sort -u "$WORK/ours$b.txt" | wc -l)
    # "modem rx: 79 frames decoded (4 repaired by inverting one bit), 33 CRC failures, 100 duplicates ..."
    STATS[$b]=$(grep -m1 'frames decoded' "$WORK/ours$b.err" | sed -E 's/.* ([0-9]+) frames decoded \(([0-9]+) repaired.*, ([0-9]+) CRC failures.*/\1 decoded, \2 repaired, \3 CRC failures/' || true)
    STATS[$b]=${STATS[$b]:-no --stats line}
    # Every frame gen_packets sends is "WB2OSZ-15>TEST:,The quick brown fox jumps over the lazy dog!  0001 of 0100".
    bad=$(grep -Evc '^WB2OSZ-15>TEST:,The quick brown fox jumps over the lazy dog!  0[0-9]{3} of 0100$' "$WORK/ours$b.txt" || true)
    STATS[$b]="${STATS[$b]}; $bad false"
    echo "$b baud: modem rx --profile ${PROFILE[$b]}: ${OURS[$b]} unique frames ($(wc -l < "$WORK/ours$b.txt") lines); --stats: ${STATS[$b]}"
    COUNT_ROWS+=("$b|modem rx --profile ${PROFILE[$b]} --framing ax25|${OURS[$b]}|${STATS[$b]}")
    IFS='|' read -r -a sets <<< "${ATEST_SETS[$b]}|"
    for o in "${sets[@]}"; do
        # shellcheck disable=SC2086
        atest ${GENOPT[$b]} $o "$f" > "$WORK/atest.txt" 2> "$WORK/atest.txt.err" || true
        c=$(atest_count "$WORK/atest.txt")
        cmd="atest${GENOPT[$b]:+ ${GENOPT[$b]}}${o:+ $o}"
        echo "$b baud: $cmd: $c"
        COUNT_ROWS+=("$b|$cmd|$c|")
    done
    if [ -n "${MULTIMON[$b]:-}" ]; then
        d=${MULTIMON[$b]}
        c=$(multimon-ng -r -t wav -a "$d" "$f" 2>/dev/null | grep -c "^$d:" || true)
        echo "$b baud: multimon-ng -a $d: $c"
        COUNT_ROWS+=("$b|multimon-ng -r -t wav -a $d|$c|(resampled by sox to 22,050 Hz)")
    fi
done

echo "== decode speed, median of $RUNS after 1 warm-up ($timer)"
SPEED_ROWS=()
for b in "${RATES[@]}"; do
    f="$WORK/n$b.wav"
    a="${GENOPT[$b]} ${ATEST_TIMED[$b]}"; a=$(echo $a)   # trimmed
    read -r T_US C_US <<< "$(median_wall "$RUNS" 1 "$WORK/t-ours.txt" "'$MODEM' rx --profile ${PROFILE[$b]} --framing ax25 '$f'")"
    read -r T_DW C_DW <<< "$(median_wall "$RUNS" 1 "$WORK/t-atest.txt" "atest $a '$f'")"
    n_us=$(sort -u "$WORK/t-ours.txt" | wc -l); n_dw=$(atest_count "$WORK/t-atest.txt")
    r=$(ratio "$T_US" "$T_DW")
    echo "$b baud ($(soxi -D "$f") s): modem ${T_US} s wall (${C_US} s CPU, $n_us frames), atest${a:+ $a} ${T_DW} s (${C_DW} s CPU, $n_dw frames): ours/atest $r"
    SPEED_ROWS+=("n$b.wav, $(printf '%.0f' "$(soxi -D "$f")") s|${T_US} s ($n_us)|atest${a:+ $a}|${T_DW} s ($n_dw)|$r")
done

if [ "$SKIP_LONG" != 1 ]; then
    args=(); for i in $(seq 20); do args+=("$WORK/n1200.wav"); done
    sox "${args[@]}" "$WORK/n1200x20.wav"
    f="$WORK/n1200x20.wav"
    echo "== long file: n1200.wav 20 times (sox), $(soxi -D "$f") s, median of $LONG_RUNS, no warm-up ($timer)"
    read -r T_US C_US <<< "$(median_wall "$LONG_RUNS" 0 "$WORK/t-ours.txt" "'$MODEM' rx --profile bell202 --framing ax25 '$f'")"
    read -r T_DW C_DW <<< "$(median_wall "$LONG_RUNS" 0 "$WORK/t-atest.txt" "atest -P E+ '$f'")"
    n_us=$(wc -l < "$WORK/t-ours.txt"); n_dw=$(atest_count "$WORK/t-atest.txt")
    r=$(ratio "$T_US" "$T_DW")
    echo "modem ${T_US} s wall (${C_US} s CPU, $n_us frames), atest -P E+ ${T_DW} s (${C_DW} s CPU, $n_dw frames): ours/atest $r"
    SPEED_ROWS+=("n1200.wav × 20, $(printf '%.0f' "$(soxi -D "$f")") s|${T_US} s ($n_us)|atest -P E+|${T_DW} s ($n_dw)|$r")
    rm -f "$f"
fi

echo
echo "== frames decoded from gen_packets -n 100 (targets: 1200 >= 78, 300 >= 72, 9600 >= 64)"
echo "| baud | decoder | frames | notes (modem: --stats) |"
echo "| --- | --- | --- | --- |"
for row in "${COUNT_ROWS[@]}"; do
    IFS='|' read -r b cmd c s <<< "$row"
    echo "| $b | \`$cmd\` | $c | $s |"
done
echo
echo "== decode wall time, median (frames in brackets; target: ours/atest -P E+ at most 0.2)"
echo "| file | modem rx | Dire Wolf | atest | ours/atest |"
echo "| --- | --- | --- | --- | --- |"
for row in "${SPEED_ROWS[@]}"; do
    IFS='|' read -r fl us cmd dw r <<< "$row"
    echo "| $fl | $us | \`$cmd\` | $dw | $r |"
done
if [ "${SKIP_CORRUPT:-0}" != 1 ]; then
    echo
    echo "== true and corrupt frames (scripts/bench-ax25-corrupt.sh, FILES=${CORRUPT_FILES:-12}; target: 0 corrupt, true >= atest's)"
    FILES="${CORRUPT_FILES:-12}" MODEM="$MODEM" bash "$ROOT/scripts/bench-ax25-corrupt.sh" | grep -v '^file '
fi

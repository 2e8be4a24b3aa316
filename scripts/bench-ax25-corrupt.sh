#!/usr/bin/env bash
# Packet radio: true and corrupt frames under white noise, ours against Dire Wolf's `atest -P E+ -F 1`.
#
#   scripts/bench-ax25-corrupt.sh                  # 12 files x 60 frames at -4/-3/-2 dB (about 1 minute)
#   FILES=24 scripts/bench-ax25-corrupt.sh         # more files (seeds 1...FILES)
#   FIRST=101 FILES=60 scripts/bench-ax25-corrupt.sh   # other files: seeds 101...160
#   SNRS="-5 -4 -3 -2" scripts/bench-ax25-corrupt.sh
#   PROFILE=g3ruh scripts/bench-ax25-corrupt.sh    # 9600 baud G3RUH (default SNRs 3, 4, 5 dB)
#   PROFILE=qpsk2400 ATEST=.build/direwolf18/bin/atest scripts/bench-ax25-corrupt.sh   # 2400 bit/s QPSK
#       (V.26 A, -3/-2/-1 dB), against atest -B 2400 -j; PROFILE=qpsk2400-mfj: V.26 B (--v26 mfj, -J);
#       PROFILE=8psk4800: 4800 bit/s 8PSK (4/5/6 dB), against atest -B 4800 (Dire Wolf 1.6's atest
#       has them too)
#   MODEM=/path/to/modem scripts/bench-ax25-corrupt.sh   # skip the build, use this binary
#   KEEP=DIR scripts/bench-ax25-corrupt.sh         # keep the files (texts, WAVs, outputs) in DIR
#
# For file i (seed i, i = FIRST...FIRST+FILES-1, FIRST = 1 by default):
#   1. FRAMES frames of random text (python3 `random` seeded with i, never used elsewhere): random
#      callsigns and SSIDs, destinations, 0-3 digipeaters (sometimes one marked repeated), an
#      information field of 8-90 printable ASCII characters; written as TNC2 monitor lines;
#   2. `modem tx --profile PROFILE --framing ax25 --rate 44100` makes the clean WAV (PROFILE bell202 by
#      default, or g3ruh);
#   3. `modem impair --snr S --seed i --format s16` adds white noise, S taken in turn from SNRS
#      (the first file at the first, the second at the second, ...);
#   4. decoded by `modem rx --profile PROFILE --framing ax25 --stats` and `atest -P E+ -F 1` (for
#      g3ruh `atest -B 9600 -P E+ -F 1`) (atest's "[n] SRC>DST...:info" lines);
#   5. per tool and file, the unique decoded lines are counted as true (exactly one of the sent lines)
#      or corrupt (not one of them): a corrupt frame is one that was never sent.
# Prints one line per file and a total, the corrupt lines themselves, and our --stats counts summed.
# Needs: swift (unless MODEM is set), atest (Dire Wolf), python3.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FILES="${FILES:-12}"
FIRST="${FIRST:-1}"
FRAMES="${FRAMES:-60}"
PROFILE="${PROFILE:-bell202}"
case "$PROFILE" in
    bell202) ATEST_OPTS="-P E+ -F 1"; SNRS="${SNRS:--4 -3 -2}" ;;
    # About half the frames decode at these SNRs (white noise over the whole 22 kHz band).
    g3ruh) ATEST_OPTS="-B 9600 -P E+ -F 1"; SNRS="${SNRS:-3 4 5}" ;;
    qpsk2400) ATEST_OPTS="-B 2400 -j"; SNRS="${SNRS:--3 -2 -1}" ;;
    qpsk2400-mfj) ATEST_OPTS="-B 2400 -J"; SNRS="${SNRS:--3 -2 -1}" ;;
    8psk4800) ATEST_OPTS="-B 4800"; SNRS="${SNRS:-4 5 6}" ;;
    *) echo "PROFILE must be bell202, g3ruh, qpsk2400, qpsk2400-mfj or 8psk4800" >&2; exit 2 ;;
esac
# The modem's options for the profile (qpsk2400-mfj is qpsk2400 with --v26 mfj).
if [ "$PROFILE" = qpsk2400-mfj ]; then MODEM_PROFILE=(--profile qpsk2400 --v26 mfj); else MODEM_PROFILE=(--profile "$PROFILE"); fi
ATEST="${ATEST:-atest}"
SCRATCH="${SCRATCH:-$ROOT/.build}"
if [ -n "${KEEP:-}" ]; then WORK="$KEEP"; mkdir -p "$WORK"; else
    WORK="$(mktemp -d /tmp/bench-ax25-corrupt.XXXXXX)"; trap 'rm -rf "$WORK"' EXIT; fi

NAME=bench-ax25-corrupt
source "$ROOT/scripts/bench-common.sh"
need "$ATEST" "apt-get install direwolf (or bash scripts/direwolf18.sh)"
need python3 "apt-get install python3"
if [ -z "${MODEM:-}" ]; then need swift "the Swift toolchain"; build_modem; fi

cat > "$WORK/gen.py" <<'EOF'
import random, sys
seed, n = int(sys.argv[1]), int(sys.argv[2])
r = random.Random(seed)
letters, digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789"
def call():
    c = "".join(r.choice(letters) for _ in range(r.randint(1, 2))) + r.choice(digits) \
        + "".join(r.choice(letters) for _ in range(r.randint(1, 3)))
    s = r.choice([0, 0, 0, 1, 2, 5, 7, 9, 10, 15])
    return c if s == 0 else f"{c}-{s}"
chars = [chr(c) for c in range(0x20, 0x7F) if chr(c) != "<"]   # "<" could read as a <0xNN> escape
for _ in range(n):
    dst = r.choice(["APRS", "APDW16", "CQ", "BEACON", "ID", call()])
    path = [r.choice(["WIDE1-1", "WIDE2-2", "WIDE2-1", "RELAY", call()]) for _ in range(r.choice([0, 0, 1, 1, 2, 3]))]
    if path and r.random() < 0.3:
        path[0] += "*"
    text = "".join(r.choice(chars) for _ in range(r.randint(8, 90))).strip() or "x"
    print(f"{call()}>{dst}{''.join(',' + p for p in path)}:{text}")
EOF

cat > "$WORK/count.py" <<'EOF'
import re, sys
sent = set(open(sys.argv[1]).read().splitlines())
lines = open(sys.argv[2], errors="replace").read().splitlines()
if sys.argv[3] == "atest":
    lines = [m.group(1) for m in (re.match(r"^\[[0-9.]+\] (.*)$", re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", l)) for l in lines) if m]
got = set(lines)
true, bad = got & sent, got - sent
print(len(true), len(bad))
for b in sorted(bad):
    print("CORRUPT " + b)
EOF

read -r -a snrs <<< "$SNRS"
echo "== $PROFILE: $FILES files x $FRAMES frames (seeds $FIRST...$((FIRST + FILES - 1))), white noise at SNR ${snrs[*]} dB (file i: seed i, SNR in turn)"
t_ours=0; c_ours=0; t_dw=0; c_dw=0
: > "$WORK/corrupt.txt"; : > "$WORK/stats.txt"
for ((i = FIRST; i < FIRST + FILES; i++)); do
    s=${snrs[$(((i - FIRST) % ${#snrs[@]}))]}
    python3 "$WORK/gen.py" "$i" "$FRAMES" > "$WORK/f$i.txt"
    "$MODEM" tx "${MODEM_PROFILE[@]}" --framing ax25 --rate 44100 -q --out "$WORK/c$i.wav" "$WORK/f$i.txt"
    "$MODEM" impair "$WORK/c$i.wav" "$WORK/n$i.wav" --snr "$s" --seed "$i" --format s16
    "$MODEM" rx "${MODEM_PROFILE[@]}" --framing ax25 --stats "$WORK/n$i.wav" > "$WORK/o$i.txt" 2> "$WORK/o$i.err"
    grep -h 'frames decoded' "$WORK/o$i.err" | tr '\n' ' ' >> "$WORK/stats.txt" || true
    { grep -h 'repairs rejected' "$WORK/o$i.err" || true; echo; } >> "$WORK/stats.txt"
    # shellcheck disable=SC2086
    "$ATEST" $ATEST_OPTS "$WORK/n$i.wav" > "$WORK/a$i.txt" 2>&1 || true
    python3 "$WORK/count.py" "$WORK/f$i.txt" "$WORK/o$i.txt" ours > "$WORK/co$i.txt"
    python3 "$WORK/count.py" "$WORK/f$i.txt" "$WORK/a$i.txt" atest > "$WORK/ca$i.txt"
    read -r to co < "$WORK/co$i.txt"; read -r ta ca < "$WORK/ca$i.txt"
    sed -n "s/^CORRUPT /file $i ours:  /p" "$WORK/co$i.txt" >> "$WORK/corrupt.txt"
    sed -n "s/^CORRUPT /file $i atest: /p" "$WORK/ca$i.txt" >> "$WORK/corrupt.txt"
    printf 'file %2d  SNR %3s dB  ours %2d true %d corrupt   atest %s %2d true %d corrupt\n' "$i" "$s" "$to" "$co" "$ATEST_OPTS" "$ta" "$ca"
    t_ours=$((t_ours + to)); c_ours=$((c_ours + co)); t_dw=$((t_dw + ta)); c_dw=$((c_dw + ca))
done
echo "== total of $((FILES * FRAMES)) frames sent: ours $t_ours true, $c_ours corrupt; atest $ATEST_OPTS $t_dw true, $c_dw corrupt"
cat "$WORK/corrupt.txt"
# Our --stats lines summed field by field (the numbers in order).
python3 - "$WORK/stats.txt" <<'EOF'
import re, sys
rows = [list(map(int, re.findall(r"\d+", l))) for l in open(sys.argv[1]) if l.strip()]
if rows:
    total = [sum(c) for c in zip(*rows)]
    template = open(sys.argv[1]).readline().strip()
    it = iter(total)
    print("== ours, --stats summed: " + re.sub(r"\d+", lambda m: str(next(it)), template))
    aligned = total[-1]
    print("== expected false FCS passes on whole-byte frames: %d / 65536 = %.1f" % (aligned, aligned / 65536))
EOF

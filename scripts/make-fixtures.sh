#!/usr/bin/env bash
# make-fixtures.sh — regenerates Fixtures/fsk/: FSK recordings made by independent tools (minimodem,
# sox) and a few by our own `modem tx`, each with the exact bytes it carries, plus MANIFEST.tsv.
#
#   scripts/make-fixtures.sh            (from anywhere; writes into <package>/Fixtures/fsk)
#
# Idempotent and deterministic: the input texts are fixed below, minimodem's transmitter has no
# randomness, sox runs with -R (repeatable) and -D (no dither), so running it again rewrites the same
# bytes. Needs minimodem (0.24), sox, perl; and the `modem` binary for the few fixtures minimodem
# cannot make (set MODEM=/path/to/modem, else .build/debug/modem, built if missing).
#
# MANIFEST.tsv columns (tab-separated; lines starting with '#' are comments):
#   file             the WAV file, relative to Fixtures/fsk
#   rx arguments     the `modem rx` options that decode it (split on spaces; the file goes last)
#   expected         the file holding the exact bytes `modem rx` must write to standard output
#   made by          the command that generated the WAV (for humans; tests ignore it)
#
# minimodem 0.24 has no parity option. 7E1 and 7O1 are made by minimodem anyway, exactly: on the wire
# a 7E1 character is an 8N1 character whose eighth data bit is the parity bit, so minimodem is fed
# bytes with the parity bit computed into bit 7. 8N2 uses minimodem's --stopbits 2, 7N1 its -7.
# 5N1.5 (raw 5-bit codes: minimodem's 5-bit mode is Baudot text) and a second 7E1 and 8N2 are made
# by our own `modem tx`; their "made by" column says so. Those three depend on our transmitter, so
# they are byte-identical on reruns only as long as it does not change.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$ROOT/Fixtures/fsk
MODEM=${MODEM:-$ROOT/.build/debug/modem}

die() { echo "make-fixtures: $*" >&2; exit 1; }
command -v minimodem >/dev/null || die "minimodem is not installed (apt-get install minimodem)"
command -v sox >/dev/null || die "sox is not installed (apt-get install sox)"
command -v perl >/dev/null || die "perl is not installed"
if [ ! -x "$MODEM" ]; then
    echo "make-fixtures: building modem ..." >&2
    (cd "$ROOT" && swift build --product modem >&2) || die "could not build modem"
fi

mkdir -p "$OUT"
# Start clean so files that are no longer made do not linger (only our own kinds of files).
rm -f "$OUT"/*.wav "$OUT"/*.txt "$OUT"/*.bin "$OUT"/MANIFEST.tsv
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ---- the input texts (fixed) ---------------------------------------------------------------------

# ~56 bytes: 300 baud at 48 kHz 16-bit is 96 kB/s of audio for 30 chars/s, so keep it short.
TEXT_SHORT='The quick brown fox jumps over the lazy dog. 0123456789
'
# ~200 bytes, mixed case, punctuation, a tab and CR LF.
TEXT_MED='SwiftModem fixture: 1200 baud, minimodem-made.
Pack my box with five dozen liquor jugs!	Tab, CR LF:
Sphinx of black quartz, judge my vow. <>[]{}|\~^`@#$%&*()_+=-
How vexingly quick daft zebras jump; 42 = 6 * 7.
'
# ~300 bytes, for fast rates and low sample rates.
TEXT_LONG='Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor
incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud
exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure
dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur.
'
# Upper case only: what ITA2 Baudot can carry (letters, figures, space, newline).
TEXT_RTTY='CQ CQ DE SWIFTMODEM K
RYRY 0123456789 -?:$!&#()./;,'"'"'"
'
TEXT_RTTY_SHORT='RYRY DE SWIFTMODEM 599 TU 73 K
'

put() { printf '%s' "$2" > "$OUT/$1"; }   # put NAME TEXT: writes an expected file, no newline added

put short.txt "$TEXT_SHORT"
# CR LF in the medium text: replace the literal "CR LF:" line end.
printf '%s' "$TEXT_MED" | perl -pe 's/CR LF:\n/CR LF:\r\n/' > "$OUT/med.txt"
put long.txt "$TEXT_LONG"
put rtty.txt "$TEXT_RTTY"
put rtty-short.txt "$TEXT_RTTY_SHORT"
# All 256 byte values.
perl -e 'print pack("C*", 0..255)' > "$OUT/allbytes.bin"
# Raw 5-bit codes (bytes < 32) for 5N1.5.
perl -e 'print pack("C*", (0..31), map { ($_ * 7 + 3) % 32 } 0..63)' > "$OUT/codes5.bin"

MANIFEST=$TMP/manifest
{
    printf '# Fixtures/fsk: FSK recordings and the exact bytes `modem rx <rx arguments> <file>` must print.\n'
    printf '# Regenerate with scripts/make-fixtures.sh (deterministic). Columns are tab-separated.\n'
    printf '# file\trx arguments\texpected\tmade by\n'
} > "$MANIFEST"

# entry FILE RXARGS EXPECTED MADEBY
entry() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$MANIFEST"; }

# expect NAME EXPECTED-SOURCE: each WAV gets its own expected file next to it (NAME.txt or NAME.bin).
expect() {
    local name=$1 src=$2 ext=${2##*.}
    cp "$OUT/$src" "$OUT/$name.$ext"
    echo "$name.$ext"
}

# mm NAME RXARGS EXPECTED-SOURCE MINIMODEM-ARGS...: minimodem --tx, input from the expected bytes.
mm() {
    local name=$1 rx=$2 src=$3; shift 3
    local exp; exp=$(expect "$name" "$src")
    minimodem --tx "$@" -f "$OUT/$name.wav" < "$OUT/$exp"
    entry "$name.wav" "$rx" "$exp" "minimodem --tx $*"
}

# ---- minimodem, default tones --------------------------------------------------------------------
mm mm-300-48k        "--baud 300"  short.txt   300
mm mm-1200-48k       "--baud 1200" med.txt     1200
mm mm-4800-48k       "--baud 4800" long.txt    4800
mm mm-1200-allbytes  "--baud 1200" allbytes.bin 1200 -R 22050
# Other sample rates.
mm mm-1200-44k1      "--baud 1200" med.txt     1200 -R 44100
mm mm-300-8k         "--baud 300"  long.txt    300 -R 8000
# RTTY (ITA2 Baudot, 45.45 baud, 170 Hz shift, 1.5 stop bits); at 45 baud a character lasts 165 ms,
# so low sample rates keep the files small.
mm mm-rtty-8k        "--profile rtty" rtty.txt       rtty -R 8000
mm mm-rtty-11k025    "--profile rtty" rtty-short.txt rtty -R 11025

# ---- standard tone plans through minimodem's -M/-S ---------------------------------------------
mm mm-bell103-answer "--profile bell103-answer" short.txt 300 -M 2225 -S 2025
mm mm-v21            "--profile v21"            short.txt 300 -M 980 -S 1180
mm mm-v23            "--profile v23"            med.txt   1200 -M 1300 -S 2100

# ---- framings ------------------------------------------------------------------------------------
# 7N1 (minimodem -7).
mm mm-1200-7n1       "--baud 1200 --framing 7N1" med.txt 1200 -7
# 8N2 (minimodem --stopbits 2).
mm mm-1200-8n2       "--baud 1200 --framing 8N2" med.txt 1200 --stopbits 2
# 7E1 / 7O1: minimodem sends 8N1 bytes whose bit 7 is the parity of bits 0-6 (see the header).
withparity() {  # withparity even|odd < text > bytes
    perl -e 'local $/; my $odd = $ARGV[0] eq "odd"; my $s = <STDIN>;
             print join "", map { my $c = ord($_) & 0x7f; my $p = unpack("%32b*", chr $c) % 2;
                                  $p ^= 1 if $odd; chr($c | ($p << 7)) } split //, $s;' "$1"
}
for par in even odd; do
    name=mm-1200-7${par:0:1}1
    fr=7$(echo "${par:0:1}" | tr eo EO)1
    exp=$(expect "$name" med.txt)
    withparity $par < "$OUT/$exp" > "$TMP/$name.in"
    minimodem --tx 1200 -f "$OUT/$name.wav" < "$TMP/$name.in"
    entry "$name.wav" "--baud 1200 --framing $fr" "$exp" \
        "minimodem --tx 1200 fed 8-bit bytes with $par parity in bit 7 (= $fr on the wire)"
done

# ---- sample formats and channels, converted by sox from a minimodem 1200 baud file ---------------
# sox -R: repeatable; -D: no dither (so the conversion is deterministic and clean).
minimodem --tx 1200 -f "$TMP/base.wav" < "$OUT/med.txt"
minimodem --tx 1200 -f "$TMP/base-short.wav" < "$OUT/short.txt"
sx() {  # sx NAME RXARGS EXPECTED-SOURCE DESCRIPTION INPUTS... -- OUTPUT-FORMAT... -- EFFECTS...
    local name=$1 rx=$2 src=$3 what=$4; shift 4
    local inputs=() format=()
    while [ "$1" != "--" ]; do inputs+=("$1"); shift; done; shift
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do format+=("$1"); shift; done; [ $# -gt 0 ] && shift
    local exp; exp=$(expect "$name" "$src")
    sox -R -D "${inputs[@]}" ${format[@]+"${format[@]}"} "$OUT/$name.wav" "$@"
    entry "$name.wav" "$rx" "$exp" "minimodem --tx 1200, then sox $what"
}
sx mm-1200-u8  "--baud 1200" med.txt   "to unsigned 8-bit at -1 dB" "$TMP/base.wav"       -- -b 8 -e unsigned-integer -- vol -1dB
sx mm-1200-s24 "--baud 1200" short.txt "to signed 24-bit"  "$TMP/base-short.wav" -- -b 24 -e signed-integer
sx mm-1200-f32 "--baud 1200" short.txt "to 32-bit float"   "$TMP/base-short.wav" -- -b 32 -e floating-point
# Stereo: silence on channel 0 (left), the data on channel 1 (right).
sx mm-1200-stereo-silence "--baud 1200 --channel 1" short.txt "remix to stereo: channel 0 silent, data on channel 1" \
    "$TMP/base-short.wav" -- -- remix 0 1
# Stereo: white noise at about -10 dBFS on channel 0, the data on channel 1.
dur=$(soxi -D "$TMP/base-short.wav")
sox -R -D -n -r 48000 -b 16 -c 1 "$TMP/noise.wav" synth "$dur" whitenoise vol 0.3
sx mm-1200-stereo-noise "--baud 1200 --channel 1" short.txt "-M: white noise on channel 0, data on channel 1" \
    -M "$TMP/noise.wav" "$TMP/base-short.wav" -- --

# ---- made by our own modem tx (minimodem cannot) ---------------------------------------------------
# These depend on our transmitter: regenerating them after it changes may change their bytes (the
# expected data stays the same).
mt() {  # mt NAME RXARGS EXPECTED-SOURCE WHY TX-ARGS...
    local name=$1 rx=$2 src=$3 why=$4; shift 4
    local exp; exp=$(expect "$name" "$src")
    "$MODEM" tx -q "$@" --out "$OUT/$name.wav" "$OUT/$exp"
    entry "$name.wav" "$rx" "$exp" "modem tx $* ($why)"
}
mt mt-1200-5n1.5 "--baud 1200 --framing 5N1.5" codes5.bin "minimodem cannot send raw 5-bit codes" \
    --baud 1200 --framing 5N1.5
mt mt-300-7e1    "--baud 300 --framing 7E1"    short.txt  "minimodem 0.24 has no parity option" \
    --baud 300 --framing 7E1 --rate 22050
mt mt-2400-8n2   "--baud 2400 --framing 8N2"   long.txt   "our own transmitter, for comparison with mm-1200-8n2" \
    --baud 2400 --framing 8N2

rm -f "$OUT/short.txt" "$OUT/med.txt" "$OUT/long.txt" "$OUT/rtty.txt" "$OUT/rtty-short.txt" \
      "$OUT/allbytes.bin" "$OUT/codes5.bin"
mv "$MANIFEST" "$OUT/MANIFEST.tsv"

# Sanity: sizes.
total=0
for f in "$OUT"/*.wav; do
    s=$(stat -c %s "$f"); total=$((total + s))
    [ "$s" -lt 204800 ] || echo "make-fixtures: warning: $(basename "$f") is $s bytes (over 200 KB)" >&2
done
echo "make-fixtures: $(ls "$OUT"/*.wav | wc -l) WAV files, $((total / 1024)) KB, in $OUT" >&2

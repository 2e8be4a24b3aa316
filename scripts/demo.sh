#!/usr/bin/env bash
# Sets up and runs the main job on an embedded default that needs no sound card: modulates a
# message to a WAV file at 1200 baud (Bell 202 tones), decodes it back, checks it is byte-exact,
# and prints the throughput of both directions. Pass a file to send it instead of the message.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# Only the modem's half of the package (Package.swift: SWIFTMODEM_BUILD), so a first run neither fetches
# nor resolves the hub's server packages; built as the test command builds it (scripts/build-config.sh),
# so scripts/test.sh afterwards compiles only the tests.
source scripts/build-config.sh
SWIFTMODEM_BUILD=modem swift build "${modem_build_config[@]}" --product modem 2>&1 | tail -n 1
modem=.build-tests/release/modem
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
if [[ $# -gt 0 ]]; then cp "$1" "$work/in.bin"; else
  for i in $(seq 200); do echo "SwiftModem demo line $i: the quick brown fox jumps over the lazy dog 0123456789"; done > "$work/in.bin"
fi
now() { date +%s.%N; }
t0=$(now); "$modem" tx --baud 1200 --out "$work/demo.wav" "$work/in.bin"; t1=$(now)
"$modem" rx --baud 1200 "$work/demo.wav" > "$work/out.bin"; t2=$(now)
bytes=$(stat -c %s "$work/in.bin")
audio=$(echo "$bytes * 10 / 1200" | bc -l)
if cmp -s "$work/in.bin" "$work/out.bin"; then verdict="byte-exact"; else verdict="MISMATCH"; fi
printf 'sent %d bytes as %.1f s of 1200 baud audio (48 kHz WAV): decoded %s\n' "$bytes" "$audio" "$verdict"
printf 'modulate: %.0fx real time   demodulate: %.0fx real time\n' \
  "$(echo "$audio / ($t1 - $t0)" | bc -l)" "$(echo "$audio / ($t2 - $t1)" | bc -l)"
[[ $verdict == byte-exact ]]
# The channel protocol: a phone and a device emulator exchange 4 KiB both ways, ten times, over the
# in-memory audio channel (channel time: about ten minutes of 1200 baud audio in a second or so).
echo "link test: 10 master-slave exchanges of 4 KiB at 1200 baud over the in-memory audio channel"
"$modem" link-test --count 10 --size 4096

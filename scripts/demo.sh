#!/usr/bin/env bash
# Sets up and runs the main job on an embedded default that needs no sound card:
#   1. FSK: modulates a message to a WAV file at 1200 baud (Bell 202 tones), decodes it back, checks it
#      is byte-exact, and prints the throughput of both directions;
#   2. OFDM, the high-rate modem: 256 KiB of seeded random bytes with `modem tx --profile ofdm` through
#      the simulated sound-card cable (`modem impair`: SNR 40 dB, 100 ppm, 20-20,000 Hz, gain 0.7, as
#      scripts/bench-rate.py's cable line), decoded, checked byte-exact, with the effective rate
#      (payload bits over the audio's seconds) and the real-time factors, and `modem analyze --png`'s
#      picture of the received line (constellation, SNR per carrier), its report and the line's WAV
#      kept in demo-output/;
#   3. the channel protocol: a link test over the in-memory audio channel.
# Pass a file to send it instead of the message and the random bytes. Exits non-zero when a decode is
# not byte-exact.
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
output=demo-output              # kept after the demo (git-ignored)
mkdir -p "$output"
if [[ $# -gt 0 ]]; then cp "$1" "$work/in.bin"; cp "$1" "$work/ofdm-in.bin"; else
  for i in $(seq 200); do echo "SwiftModem demo line $i: the quick brown fox jumps over the lazy dog 0123456789"; done > "$work/in.bin"
  python3 -c 'import random, sys; random.seed(2026); sys.stdout.buffer.write(random.randbytes(256 * 1024))' > "$work/ofdm-in.bin"
fi
now() { date +%s.%N; }
# Seconds of audio in a WAV file.
seconds() { python3 -c 'import sys, wave; w = wave.open(sys.argv[1]); print(w.getnframes() / w.getframerate())' "$1"; }
same() { if cmp -s "$1" "$2"; then echo byte-exact; else echo MISMATCH; fi; }

# 1. FSK at 1200 baud.
t0=$(now); "$modem" tx --baud 1200 --out "$work/demo.wav" "$work/in.bin"; t1=$(now)
"$modem" rx --baud 1200 "$work/demo.wav" > "$work/out.bin"; t2=$(now)
bytes=$(stat -c %s "$work/in.bin")
audio=$(echo "$bytes * 10 / 1200" | bc -l)
verdict=$(same "$work/in.bin" "$work/out.bin")
printf 'sent %d bytes as %.1f s of 1200 baud audio (48 kHz WAV): decoded %s\n' "$bytes" "$audio" "$verdict"
printf 'modulate: %.0fx real time   demodulate: %.0fx real time\n' \
  "$(echo "$audio / ($t1 - $t0)" | bc -l)" "$(echo "$audio / ($t2 - $t1)" | bc -l)"
[[ $verdict == byte-exact ]]

# 2. OFDM through the simulated sound-card cable. --bitrate 320000 picks the fastest configuration,
# 16,384-QAM rate 5/6 on the wide grid (the line's 40 dB carries it); a failed block ends rx's output, so anything short of
# the whole file is a mismatch.
cable=(--snr 40 --drift 100 --band 20-20000 --gain -3.1)
t0=$(now); "$modem" tx -q --profile ofdm --bitrate 320000 --out "$work/ofdm.wav" "$work/ofdm-in.bin"; t1=$(now)
"$modem" impair "$work/ofdm.wav" "$output/ofdm-cable.wav" "${cable[@]}" --format s16 --seed 1; t2=$(now)
"$modem" rx -q --profile ofdm "$output/ofdm-cable.wav" > "$work/ofdm-out.bin" || true; t3=$(now)
bytes=$(stat -c %s "$work/ofdm-in.bin")
audio=$(seconds "$work/ofdm.wav")
verdict=$(same "$work/ofdm-in.bin" "$work/ofdm-out.bin")
png=$output/ofdm-cable.png
"$modem" analyze --png "$png" "$output/ofdm-cable.wav" > "$output/ofdm-cable.txt"
config=$(awk '$1 == "ofdm" { print $2, $3, $4; exit }' "$output/ofdm-cable.txt")
printf 'OFDM: sent %d bytes as %.2f s of audio (%s), through the simulated sound-card cable (SNR 40 dB, 100 ppm, 20-20000 Hz, gain 0.7): decoded %s\n' \
  "$bytes" "$audio" "${config:-no transmission found}" "$verdict"
# A rate only for what came back whole.
if [[ $verdict == byte-exact ]]; then
  rate=$(printf '%.0f bit/s effective (payload bits over the audio'"'"'s seconds)' "$(echo "$bytes * 8 / $audio" | bc -l)")
else rate="no rate: the decode is not byte-exact"; fi
printf 'OFDM: %s   modulate: %.0fx   cable: %.0fx   demodulate: %.0fx real time\n' \
  "$rate" "$(echo "$audio / ($t1 - $t0)" | bc -l)" "$(echo "$audio / ($t2 - $t1)" | bc -l)" "$(echo "$audio / ($t3 - $t2)" | bc -l)"
echo "OFDM: constellation and SNR per carrier of the received line: $png (the analysis: $output/ofdm-cable.txt; the line: $output/ofdm-cable.wav)"
[[ $verdict == byte-exact ]]

# 3. The channel protocol: a phone and a device emulator exchange 4 KiB both ways, ten times, over the
# in-memory audio channel (channel time: about ten minutes of 1200 baud audio in a second or so).
echo "link test: 10 master-slave exchanges of 4 KiB at 1200 baud over the in-memory audio channel"
"$modem" link-test --count 10 --size 4096

#!/usr/bin/env bash
# Sets up and runs the whole test suite: unit tests per layer, round trips, interoperability with
# minimodem as a separate process, seeded-noise tests, ALSA loopback tests through a private
# PulseAudio null sink (started by the tests themselves via scripts/audio-loop.sh), bad input.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build --build-tests 2>&1 | tail -n 3
swift test --skip-build 2>&1 | tee .test-output.log | grep -vE '^(◇|↳|Test Suite|\s+Executed)' || true
status=${PIPESTATUS[0]}
tail -n 3 .test-output.log
rm -f .test-output.log
exit "$status"

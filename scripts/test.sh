#!/usr/bin/env bash
# Sets up and runs the whole test suite: unit tests per layer, round trips, interoperability with
# minimodem and Dire Wolf as separate processes, seeded-noise tests, ALSA loopback tests through a
# private PulseAudio null sink (started by the tests themselves via scripts/audio-loop.sh), bad input.
# Exits non-zero when the build or any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The Bumble peer of the Bluetooth tests (scripts/bt-peer.py) lives in .build/bt-venv. Without it
# the peer tests skip themselves; in CI they must run, so a missing peer fails them instead.
if [[ -n ${CI:-} ]]; then export SWIFTMODEM_REQUIRE_BUMBLE=1; fi
if ! bash scripts/bt-venv.sh >/dev/null; then
  [[ -n ${CI:-} ]] && { echo "test.sh: could not make the Bumble venv (.build/bt-venv)" >&2; exit 1; }
  echo "test.sh: no Bumble venv (.build/bt-venv); the Bluetooth peer tests will skip" >&2
fi

# The messaging interop peer (Python noiseprotocol, Tests/scripts/noise_peer.py) lives in .build/msg-venv.
if [[ -n ${CI:-} ]]; then export SWIFTMODEM_REQUIRE_PEERS=1; fi
if ! bash scripts/msg-venv.sh >/dev/null; then
  [[ -n ${CI:-} ]] && { echo "test.sh: could not make the messaging venv (.build/msg-venv)" >&2; exit 1; }
  echo "test.sh: no messaging venv (.build/msg-venv); the Noise interop tests will skip" >&2
fi

# The hub's Python peers (requests-oauthlib, authlib, websockets, schemathesis) live in .build/hub-venv;
# its multi-node tests use a private PostgreSQL cluster (scripts/hub-postgres.sh), stopped on exit.
if [[ -n ${CI:-} ]]; then export SWIFTMODEM_REQUIRE_HUB_PEERS=1; fi
if ! bash scripts/hub-venv.sh >/dev/null; then
  [[ -n ${CI:-} ]] && { echo "test.sh: could not make the hub venv (.build/hub-venv)" >&2; exit 1; }
  echo "test.sh: no hub venv (.build/hub-venv); the hub's peer tests will skip" >&2
fi
pg_started=""
if url=$(bash scripts/hub-postgres.sh start 2>/dev/null); then
  export HUB_TEST_POSTGRES_URL=$url
  pg_started=yes
else
  [[ -n ${CI:-} ]] && { echo "test.sh: could not start PostgreSQL (scripts/hub-postgres.sh)" >&2; exit 1; }
  echo "test.sh: no PostgreSQL cluster; the hub's multi-node tests will skip" >&2
fi

log=$(mktemp)
trap 'rm -f "$log"; [[ -n $pg_started ]] && bash scripts/hub-postgres.sh stop >/dev/null 2>&1 || true' EXIT

# The suite runs on a release build (with -enable-testing for @testable imports): the DSP keeps its
# preconditions but is optimised, so the CLI tests decode at the speed users get (a debug build of the
# demodulators is 15x slower, which turns the 30 s limits of the CLI tests into timeouts on a loaded
# machine). Build first, so a compile error is shown whole rather than as the tail of a test run.
# Its own build folder, so the ordinary release build (benchmarks, `modem` itself) is not rebuilt each time.
config=(-c release -Xswiftc -enable-testing --scratch-path .build-tests)
# The hub's process-level tests run this build's server.
export HUB_BINARY=$PWD/.build-tests/release/modem-hub
if ! swift build "${config[@]}" --build-tests >"$log" 2>&1; then
  grep -E 'error:|warning: unable' "$log" | head -n 40 || tail -n 40 "$log"
  echo "test.sh: the build failed" >&2
  exit 1
fi
tail -n 1 "$log"

# Run the tests; show the readable lines (no per-test progress noise). Several runs: the hub's tests start
# servers and Python clients as processes and wait for them on their own threads of the test process,
# which would hold up the timing of the modem's tests if both shared one process on 2 cores. Each
# status is the one of `swift test` itself (PIPESTATUS read straight after the pipeline).
run_tests() {
  local name=$1; shift
  set +e
  swift test "${config[@]}" --skip-build "$@" 2>&1 | tee "$log" | grep -vE '^(◇|↳|Test Suite|\s+Executed)'
  local status=${PIPESTATUS[0]}
  set -e
  if [[ $status != 0 ]]; then
    echo "test.sh: swift test ($name) failed (exit $status); failing tests:" >&2
    grep -E '✘|error:' "$log" | head -n 40 >&2 || true
  fi
  return "$status"
}
# The test processes write into pipes whose readers may be gone (children that exit early): such a
# write must fail with EPIPE instead of killing the whole run. `swift test` starts the test bundle with
# every signal at its default, so the bundle ignores SIGPIPE itself when it loads (Tests/CTestSignals);
# this trap covers the scripts and peers started from here. The `modem` CLI ignores SIGPIPE itself.
trap '' PIPE
status=0
# Groups that must not share the 2 cores: the link-transport tests simulate hours of 1200-baud audio
# (CPU-bound), the Bluetooth tests time disconnects and start-up against the Bumble peer.
run_tests "modem" --skip "HubTests|HubServerTests|HubClientTests|LinkTransportTests|Bluetooth|BlueZ|Bumble" || status=1
run_tests "bluetooth" --filter "Bluetooth|BlueZ|Bumble" || status=1
run_tests "link transport" --filter "LinkTransportTests" || status=1
run_tests "hub" --filter "HubTests|HubServerTests|HubClientTests" || status=1
exit "$status"

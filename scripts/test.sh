#!/usr/bin/env bash
# Sets up and runs the whole test suite: unit tests per layer, round trips, interoperability with
# minimodem, Dire Wolf, Bumble, Python noiseprotocol and OAuth2/WebSocket clients as separate processes,
# seeded-noise tests, ALSA loopback tests through a private PulseAudio null sink (started by the tests
# themselves via scripts/audio-loop.sh), bad input, and every fuzz target on seeded mutations of its
# seeds (libFuzzer itself: scripts/fuzz.sh).
# Exits non-zero when a build or any test fails. How the suite is organised: docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
# What the Swift build needs first; the peers and tools (most of the download) are installed beside the
# builds below (a fresh machine spent about 100 s in apt before its first compile).
bash scripts/install-deps.sh --build
start=$SECONDS
work=$(mktemp -d)
pg_started=""
hub_build_pid=""
cleanup() {
  if [[ -n $hub_build_pid ]]; then pkill -P "$hub_build_pid" 2>/dev/null; kill "$hub_build_pid" 2>/dev/null; fi
  [[ -n $pg_started ]] && bash scripts/hub-postgres.sh stop >/dev/null 2>&1
  rm -rf "$work"
  return 0
}
trap cleanup EXIT
stamp() { echo "test.sh: [$((SECONDS - start)) s] $*"; }

# In CI a missing peer fails its tests instead of skipping them: the one switch the tests read
# (Tests/ProcessTestSupport/Peer.swift, docs/testing.md "Peers and services").
if [[ -n ${CI:-} ]]; then
  export SWIFTMODEM_REQUIRE_PEERS=1
fi

# The Python peers' venvs (mostly waiting on PyPI) are made while the modem's half compiles:
# Bumble (.build/bt-venv), noiseprotocol (.build/msg-venv), the hub's OAuth2/WebSocket clients and
# schemathesis (.build/hub-venv), stock magic-wormhole with its reference rendezvous server, transit relay
# and python-spake2 (.build/wormhole-venv).
# They, and Dire Wolf 1.8's build, wait for the rest of the Debian packages (python3-venv, cmake).
( if bash scripts/install-deps.sh >"$work/apt.log" 2>&1; then echo 0; else echo 1; fi >"$work/apt.status" ) &
wait_apt() {
  while [[ ! -s $work/apt.status ]]; do sleep 0.2; done
  if [[ $(cat "$work/apt.status") != 0 ]]; then
    tail -n 20 "$work/apt.log" >&2
    echo "test.sh: could not install the test peers' Debian packages (scripts/install-deps.sh)" >&2
    return 1
  fi
}
for v in bt msg hub wormhole; do
  ( if wait_apt && bash "scripts/$v-venv.sh" >"$work/$v-venv.log" 2>&1; then echo 0; else echo 1; fi >"$work/$v-venv.status" ) &
done
# Dire Wolf 1.8 (IL2P; Debian has 1.6) from the archive in Fixtures/peers, into .build/direwolf18: about
# 15 s of C on two cores the first time (it competes with the modem's build then), nothing once built.
( if wait_apt && nice -n 10 bash scripts/direwolf18.sh >"$work/direwolf18.log" 2>&1; then echo 0; else echo 1; fi >"$work/direwolf18.status" ) &

# Two builds, each in its own folder (Package.swift's SWIFTMODEM_BUILD), side by side from the start:
# - the modem's layers in release (with -enable-testing for @testable imports), so the DSP keeps its
#   preconditions but is optimised and the tests decode at the speed users get (a debug build of the
#   demodulators is 15x slower);
# - the hub's targets and tests in debug: they test protocols, not speed, and a release build of
#   SwiftNIO, Hummingbird, PostgresNIO and AsyncHTTPClient would cost minutes more.
# Both are CPU-bound (about 670 and 610 CPU-s on a fresh clone), so the order decides the wall time. The
# hub's build runs under the idle scheduling class (SCHED_IDLE, `chrt --idle`, which every compiler
# process it starts inherits; nice 10 was seen not to hold them back): it gets only the CPU that nothing
# else wants. The modem's build therefore finishes first, its groups run, and then its real-time group
# runs while the hub's build soaks up the idle time the real-time tests leave (they wait on sound
# devices, sockets and peers): a task of the idle class is preempted as soon as anything else wakes, so
# the sound server and the tests' processes are not starved by it. The hub's groups run after its build.
# Neither build writes debug information (scripts/build-config.sh, shared with the demo, whose build is
# the modem's half without its tests), and both fail on an import of a target that is not a declared
# dependency (--explicit-target-dependency-import-check error), so Package.swift stays what the code imports.
source scripts/build-config.sh
modem_config=("${modem_build_config[@]}")
hub_config=(-c debug -debug-info-format none --explicit-target-dependency-import-check error --scratch-path .build-hub)
show_build_failure() {
  grep -E 'error:|warning: unable' "$1" | head -n 40 || tail -n 40 "$1"
  echo "test.sh: the $2 build failed" >&2
}
stamp "building the modem's half (release, .build-tests) and the hub's (debug, .build-hub, in the background)"
idle_class=(chrt --idle 0)
"${idle_class[@]}" true 2>/dev/null || idle_class=(nice -n 19)
( SWIFTMODEM_BUILD=hub "${idle_class[@]}" swift build "${hub_config[@]}" --build-tests >"$work/hub-build.log" 2>&1; echo $? >"$work/hub-build.status" ) &
hub_build_pid=$!
if ! SWIFTMODEM_BUILD=modem swift build "${modem_config[@]}" --build-tests >"$work/modem-build.log" 2>&1; then
  show_build_failure "$work/modem-build.log" modem
  exit 1
fi
stamp "modem build: $(tail -n 1 "$work/modem-build.log")"

wait_venv() {
  local v=$1 what=$2
  while [[ ! -s $work/$v-venv.status ]]; do sleep 0.2; done
  if [[ $(cat "$work/$v-venv.status") != 0 ]]; then
    if [[ -n ${CI:-} ]]; then
      tail -n 20 "$work/$v-venv.log" >&2
      echo "test.sh: could not make the $what venv (.build/$v-venv)" >&2
      exit 1
    fi
    echo "test.sh: no $what venv (.build/$v-venv); its peer tests will skip" >&2
  fi
}
wait_venv bt Bumble
wait_venv msg messaging
# The IL2P tests (ModemCLITests' IL2PCLITests) run Dire Wolf 1.8's atest and gen_packets.
while [[ ! -s $work/direwolf18.status ]]; do sleep 0.2; done
if [[ $(cat "$work/direwolf18.status") != 0 ]]; then
  if [[ -n ${CI:-} ]]; then
    tail -n 20 "$work/direwolf18.log" >&2
    echo "test.sh: could not build Dire Wolf 1.8 (scripts/direwolf18.sh)" >&2
    exit 1
  fi
  echo "test.sh: no Dire Wolf 1.8 (.build/direwolf18); its IL2P peer tests will skip" >&2
fi
# `modem send/receive --wormhole` and the mailbox by code against stock magic-wormhole, the reference
# rendezvous server and transit relay (ModemCLITests' WormholeCLITests) need this venv in the modem group.
wait_venv wormhole magic-wormhole

# Run the tests; show the readable lines (no per-test progress noise). Several runs, so CPU-bound
# simulations and the Bluetooth peer's start-ups do not share one process. Each status is the one of
# `swift test` itself (PIPESTATUS read straight after the pipeline).
run_tests() {
  local name=$1 part=$2; shift 2
  local config=("${modem_config[@]}")
  [[ $part == hub ]] && config=("${hub_config[@]}")
  local log=$work/tests.log
  stamp "tests: $name"
  set +e
  SWIFTMODEM_BUILD=$part swift test "${config[@]}" --skip-build "$@" 2>&1 | tee "$log" | grep -vE '^(◇|↳|Test Suite|\s+Executed)'
  local status=${PIPESTATUS[0]}
  set -e
  if [[ $status != 0 ]]; then
    echo "test.sh: swift test ($name) failed (exit $status); failing tests, with their comments (↳):" >&2
    awk '/✘|error:/ { print; shown = 1; next } shown && /^[[:space:]]*↳/ { print; next } { shown = 0 }' "$log" \
      | head -n 80 >&2 || true
  fi
  return "$status"
}
# The test processes write into pipes whose readers may be gone (children that exit early): such a
# write must fail with EPIPE instead of killing the whole run. `swift test` starts the test bundle with
# every signal at its default, so the bundle ignores SIGPIPE itself when it loads (Tests/CTestSignals);
# this trap covers the scripts and peers started from here. The `modem` CLI ignores SIGPIPE itself.
trap '' PIPE
# The CLI tests, and the hub tests that run `modem hub`, use this build's `modem`.
export MODEM_BINARY=$PWD/.build-tests/release/modem
status=0
# Every time limit in these groups is a hang guard far above the expected time, and protocol timers
# run on manual clocks, so a busy machine only makes them slower. Tests that measure real time (a
# disconnect reported within N s, real-time audio through the null sink) live in suites named
# `...RealTimeTests` and run one at a time after every other group of their half, with nothing beside
# them but the hub's build in the idle class. (They once ran beside the hub's build at nice 10; a CI run
# lost an OFDM handshake over the null sink that way: the compilers did not keep the nice value, and a
# sound server starved for seconds loses the line.)
realtime="RealTimeTests"
run_tests "modem" modem --skip "LinkTransportTests|Bluetooth|BlueZ|Bumble|$realtime" || status=1
run_tests "bluetooth" modem --filter "Bluetooth|BlueZ|Bumble" --skip "$realtime" || status=1
run_tests "link transport" modem --filter "LinkTransportTests" --skip "$realtime" || status=1
run_tests "real time (modem)" modem --filter "$realtime" --no-parallel || status=1

# The fuzzing smoke is part of the modem group: every fuzz target on seeded mutations of its seeds
# (Tests/ModemFuzzTargetsTests). Coverage-guided libFuzzer runs with AddressSanitizer need a build of
# their own: scripts/fuzz.sh, or SWIFTMODEM_FUZZ_SECONDS=N here to run every target N s at the end.
fuzz_seconds=${SWIFTMODEM_FUZZ_SECONDS:-0}

# The hub: its build, its venv, a private PostgreSQL cluster for the multi-node tests (stopped on exit).
while [[ ! -s $work/hub-build.status ]]; do sleep 0.5; done
hub_build_pid=""
if [[ $(cat "$work/hub-build.status") != 0 ]]; then
  show_build_failure "$work/hub-build.log" hub
  exit 1
fi
stamp "hub build: $(tail -n 1 "$work/hub-build.log")"
wait_venv hub hub
if url=$(bash scripts/hub-postgres.sh start 2>/dev/null); then
  export HUB_TEST_POSTGRES_URL=$url
  pg_started=yes
else
  [[ -n ${CI:-} ]] && { echo "test.sh: could not start PostgreSQL (scripts/hub-postgres.sh)" >&2; exit 1; }
  echo "test.sh: no PostgreSQL cluster; the hub's multi-node tests will skip" >&2
fi
# The hub's process-level tests run the debug build's server.
export HUB_BINARY=$PWD/.build-hub/debug/modem-hub
run_tests "hub" hub --skip "$realtime" || status=1

run_tests "real time (hub)" hub --filter "$realtime" --no-parallel || status=1
if [[ $fuzz_seconds != 0 ]]; then
  stamp "fuzzing: every target $fuzz_seconds s (libFuzzer, scripts/fuzz.sh)"
  if ! bash scripts/fuzz.sh --all --seconds "$fuzz_seconds"; then
    echo "test.sh: a fuzz target found a crash (see above)" >&2
    status=1
  fi
fi
stamp "done (exit $status)"
exit "$status"

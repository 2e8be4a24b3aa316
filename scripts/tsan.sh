#!/usr/bin/env bash
# Runs the suites with concurrency under ThreadSanitizer: messaging (sessions, mailbox, data
# connections, transports), the link transport and the link driver threads, the Bluetooth host driver
# and BlueZ paths, and the hub (WebSocket fan-out, the bus across nodes). Exits non-zero when a test
# fails or TSan reports a data race (TSan's report makes the test process exit non-zero).
#   bash scripts/tsan.sh            # every group below
#   bash scripts/tsan.sh messaging  # one group: messaging | link | bluetooth | hub
# Builds in debug with -sanitize=thread in .build-tsan (the modem's half) and .build-tsan-hub (the hub's
# half): about 10-15 minutes the first time on 2 cores. Not part of CI (scripts/test.sh); run it after
# changing concurrent code, and write the result in Benchmarks/README.md ("ThreadSanitizer").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
groups=("$@"); [[ ${#groups[@]} == 0 ]] && groups=(messaging link bluetooth hub)
# Every report in a run, not only the first (the script fails on any).
export TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
trap '' PIPE
needs_hub=""; needs_modem=""
for g in "${groups[@]}"; do
  case $g in
    hub) needs_hub=yes ;;
    messaging|link|bluetooth) needs_modem=yes ;;
    *) echo "tsan.sh: unknown group '$g' (messaging, link, bluetooth, hub)" >&2; exit 64 ;;
  esac
done
modem_config=(-c debug --sanitize thread --scratch-path .build-tsan)
hub_config=(-c debug --sanitize thread --scratch-path .build-tsan-hub)
if [[ -n $needs_modem ]]; then
  bash scripts/msg-venv.sh >/dev/null || echo "tsan.sh: no messaging venv; the Noise interop tests will skip" >&2
  bash scripts/bt-venv.sh >/dev/null || echo "tsan.sh: no Bumble venv; the Bluetooth peer tests will skip" >&2
  SWIFTMODEM_BUILD=modem swift build "${modem_config[@]}" --build-tests 2>&1 | grep -E "error:|Compiling|Build complete" | tail -n 3
fi
pg_started=""
if [[ -n $needs_hub ]]; then
  bash scripts/hub-venv.sh >/dev/null || echo "tsan.sh: no hub venv; the hub's peer tests will skip" >&2
  if url=$(bash scripts/hub-postgres.sh start 2>/dev/null); then export HUB_TEST_POSTGRES_URL=$url; pg_started=yes; fi
  SWIFTMODEM_BUILD=hub swift build "${hub_config[@]}" --build-tests 2>&1 | grep -E "error:|Compiling|Build complete" | tail -n 3
  export HUB_BINARY=$PWD/.build-tsan-hub/debug/modem-hub
fi
trap '[[ -n $pg_started ]] && bash scripts/hub-postgres.sh stop >/dev/null 2>&1 || true' EXIT
# Swift's Synchronization.Mutex takes and gives a contended lock in an uninstrumented library, so
# TSan would report accesses under one lock as races: scripts/tsan-mutex.c tells it (see there).
toolchain_lib=$(dirname "$(dirname "$(command -v swift)")")/lib/swift/linux
for symbol in '_MutexHandleV9_lockSlowyys6UInt32VF' '_MutexHandleV11_unlockSlowyyF' '_MutexHandleV12_tryLockSlowSbyF'; do
  if ! nm -D "$toolchain_lib/libswiftSynchronization.so" 2>/dev/null | grep -q "$symbol"; then
    echo "tsan.sh: this toolchain's libswiftSynchronization.so has no $symbol; scripts/tsan-mutex.c must follow its Mutex" >&2
    exit 1
  fi
done
mkdir -p .build-tsan
clang -shared -fPIC -O1 -o .build-tsan/libtsan-mutex.so scripts/tsan-mutex.c -ldl
export LD_PRELOAD=$PWD/.build-tsan/libtsan-mutex.so
status=0
run() {
  local name=$1 part=$2; shift 2
  local config=("${modem_config[@]}"); [[ $part == hub ]] && config=("${hub_config[@]}")
  echo "== tsan: $name"
  set +e
  SWIFTMODEM_BUILD=$part swift test "${config[@]}" --skip-build "$@" > "/tmp/tsan-$name.log" 2>&1
  local rc=$?
  set -e
  grep -E "WARNING: ThreadSanitizer|SUMMARY: ThreadSanitizer|✘|passed after|failed after|Test run with" "/tmp/tsan-$name.log" | tail -n 20 || true
  if [[ $rc != 0 ]] || grep -q "WARNING: ThreadSanitizer" "/tmp/tsan-$name.log"; then
    echo "tsan.sh: $name: failures or data races (exit $rc; whole log: /tmp/tsan-$name.log)" >&2
    status=1
  fi
}
for g in "${groups[@]}"; do
  case $g in
    messaging) run messaging modem --filter "ModemMessagingTests" --skip "RealTimeTests" ;;
    # Not the transfer tests and the 16 KiB frames at 1200 baud: minutes of audio each, which the
    # debug DSP under TSan computes for over half an hour; the other tests run the same threads.
    link) run link modem --filter "LinkTransportTests|LinkDriverTests|AudioJackManagerTests" --skip "transferTest|sixteenKiB" ;;
    bluetooth) run bluetooth modem --filter "HostStackTests|BlueZPathTests|BluetoothManager" --skip "RealTimeTests" ;;
    hub) run hub hub --filter "HubServerTests|GroupBus|GroupHub|WebSocket" --skip "RealTimeTests" ;;
  esac
done
exit "$status"

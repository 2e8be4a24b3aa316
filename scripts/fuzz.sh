#!/usr/bin/env bash
# Fuzzes SwiftModem's parsers with libFuzzer (docs/fuzzing.md).
#
#   scripts/fuzz.sh --list                      target names, one per line (builds nothing)
#   scripts/fuzz.sh TARGET [--seconds N]        builds, then fuzzes TARGET for N s (default 60)
#   scripts/fuzz.sh --all [--seconds N]         every target in turn, N s each
#   scripts/fuzz.sh --build                     only builds .build-fuzz/.../modem-fuzz
#   scripts/fuzz.sh --make-seeds                rewrites Fixtures/fuzz/<target>/ from the targets' own seeds
#
# A run starts from a scratch copy of Fixtures/fuzz/TARGET/ (.build-fuzz/corpus/TARGET, kept between
# runs), so the committed seeds are never touched. Exits 0 when no crash was found; otherwise prints the
# crashing input's path (.build-fuzz/crashes/TARGET/...) and exits non-zero. Keep such an input in
# Fixtures/fuzz/regressions/TARGET/ once the parser is fixed: ModemFuzzTargetsTests replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=.build-fuzz
sources=Sources/ModemFuzzTargets

list_targets() {
  grep -ho 'name: "[a-z0-9-]*",$' "$sources"/*FuzzTargets.swift | sed 's/name: "\(.*\)",/\1/'
}

seconds=60
mode=""
target=""
while (($#)); do
  case $1 in
    --list) list_targets; exit 0 ;;
    --seconds) seconds=${2:?--seconds needs a number}; shift ;;
    --seconds=*) seconds=${1#--seconds=} ;;
    --all) mode=all ;;
    --build) mode=build ;;
    --make-seeds) mode=seeds ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) target=$1; mode=${mode:-one} ;;
  esac
  shift
done
[[ -n $mode ]] || { echo "usage: scripts/fuzz.sh --list | TARGET [--seconds N] | --all [--seconds N] | --build | --make-seeds" >&2; exit 2; }
[[ $seconds =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --seconds needs a whole number, got '$seconds'" >&2; exit 2; }
if [[ $mode == one ]] && ! list_targets | grep -qx -- "$target"; then
  echo "fuzz.sh: no target '$target'; scripts/fuzz.sh --list names them" >&2
  exit 2
fi

bash scripts/install-deps.sh

# Release with the sanitizers: libFuzzer's coverage and AddressSanitizer in every Swift module of the
# parsers, optimised so that a run makes many executions. Idempotent: swift build only redoes what changed.
# SWIFTMODEM_FUZZ_CONFIG=debug builds unoptimised instead (about half the build time, far fewer
# executions a second): what the test command's short smoke run uses. SWIFTMODEM_BUILD=modem: the root
# package without the hub's server packages, which the parsers do not need (nothing of them is resolved).
config=${SWIFTMODEM_FUZZ_CONFIG:-release}
[[ $config == release || $config == debug ]] || { echo "fuzz.sh: SWIFTMODEM_FUZZ_CONFIG is release or debug, not '$config'" >&2; exit 2; }
build=(env SWIFTMODEM_BUILD=modem swift build --package-path Fuzz --scratch-path "$scratch" -c "$config"
       -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS
if ! nice -n 10 "${build[@]}" >"$log" 2>&1; then
  grep -E 'error:' "$log" | head -n 40 || tail -n 40 "$log"
  echo "fuzz.sh: the build failed" >&2
  exit 1
fi
echo "fuzz.sh: built in $((SECONDS - start)) s ($(tail -n 1 "$log"))" >&2
binary=$("${build[@]}" --show-bin-path)/modem-fuzz

if [[ $mode == build ]]; then exit 0; fi
if [[ $mode == seeds ]]; then
  mkdir -p Fixtures/fuzz
  for t in $(list_targets); do rm -rf "Fixtures/fuzz/$t"; done
  ASAN_OPTIONS=detect_leaks=0 SWIFT_BACKTRACE=enable=no MODEM_FUZZ_WRITE_SEEDS=$PWD/Fixtures/fuzz "$binary"
  du -sh Fixtures/fuzz >&2
  exit 0
fi

# Runs one target for $seconds; prints a summary line; returns non-zero on a crash.
fuzz_one() {
  local t=$1 corpus=$scratch/corpus/$1 crashes=$scratch/crashes/$1 out
  mkdir -p "$corpus" "$crashes"
  cp -n Fixtures/fuzz/"$t"/* "$corpus"/ 2>/dev/null || true
  out=$scratch/logs/$t.log
  mkdir -p "$scratch/logs"
  local max_len=8192
  [[ $t == wav ]] && max_len=32768
  local status=0
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb/-malloc_limit_mb: unbounded memory is a bug.
  MODEM_FUZZ_TARGET=$t SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} nice -n 10 "$binary" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" >"$out" 2>&1 || status=$?
  local execs cov ft
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out" | grep -o '[0-9]*$' || true)
  cov=$(grep -o 'cov: [0-9]*' "$out" | tail -n 1 | grep -o '[0-9]*' || true)
  ft=$(grep -o 'ft: [0-9]*' "$out" | tail -n 1 | grep -o '[0-9]*' || true)
  if ((status == 0)); then
    echo "fuzz: $t: ${execs:-?} executions in $seconds s, cov ${cov:-?}, ft ${ft:-?}, no crash"
    return 0
  fi
  echo "fuzz: $t: FAILED (libFuzzer exit $status) after ${execs:-?} executions; log $out" >&2
  grep -E '^(==[0-9]+==ERROR|SUMMARY|Fatal error|.*Fatal error:|.*error:)' "$out" | head -n 5 >&2 || true
  grep -o 'Test unit written to .*' "$out" | sed 's/Test unit written to /fuzz: crash input: /' >&2 || true
  return 1
}

failed=0
if [[ $mode == all ]]; then
  for t in $(list_targets); do fuzz_one "$t" || failed=1; done
else
  fuzz_one "$target" || failed=1
fi
exit $failed

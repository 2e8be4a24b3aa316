#!/usr/bin/env bash
# The issue's 1 GiB TCP target, measured the way its acceptance check does it, RUNS times (default 5):
# a 1 GiB random file copied by `socat -u` over loopback, then `modem receive` / `modem send` (release
# build) between two key folders that trust each other. One line per run: wall times, the ratio
# socat/ours (target >= 0.5), SHA-256 equality, and each side's peak RSS (KiB), user and system CPU
# (s) and minor page faults, from /usr/bin/time. Scratch files in $TMPDIR (2 GiB+).
#   scripts/bench-msg-transfer.sh [RUNS]
set -uo pipefail
cd "$(dirname "$0")/.."
for t in socat python3 sha256sum bc /usr/bin/time; do command -v "$t" >/dev/null || { echo "needs $t" >&2; exit 1; }; done
swift build -c release --product modem 2>&1 | grep -E "error|Build complete" >&2
M=$PWD/.build/release/modem
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
head -c 1073741824 /dev/urandom > "$D/big.bin"
ka=$("$M" keys show --keys "$D/ka" 2>/dev/null | tail -n 1); kb=$("$M" keys show --keys "$D/kb" 2>/dev/null | tail -n 1)
"$M" keys trust bob "$kb" --keys "$D/ka" >/dev/null 2>&1; "$M" keys trust alice "$ka" --keys "$D/kb" >/dev/null 2>&1
for i in $(seq 1 "${1:-5}"); do
  port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
  rm -rf "$D/in" "$D/plain.bin"; mkdir -p "$D/in"
  s=$(date +%s.%N)
  socat -u TCP-LISTEN:$port,reuseaddr OPEN:"$D/plain.bin",creat,trunc & sp=$!; sleep 0.3
  socat -u OPEN:"$D/big.bin" TCP:127.0.0.1:$port; wait $sp
  plain=$(echo "$(date +%s.%N) - $s" | bc -l)
  /usr/bin/time -f "%M %U %S %R" -o "$D/rx.t" "$M" receive --listen tcp:127.0.0.1:$((port+1)) --dir "$D/in" --accept-all --keys "$D/kb" >"$D/rx.out" 2>&1 & rp=$!; sleep 0.5
  s=$(date +%s.%N)
  /usr/bin/time -f "%M %U %S %R" -o "$D/tx.t" "$M" send --to tcp:127.0.0.1:$((port+1)) "$D/big.bin" --keys "$D/ka" >"$D/tx.out" 2>&1; trc=$?
  ours=$(echo "$(date +%s.%N) - $s" | bc -l)
  wait $rp
  same=no; [[ $(sha256sum < "$D/big.bin") == $(sha256sum < "$D/in/big.bin") ]] && same=yes
  printf 'run %d: ours %.2f s, socat %.2f s, ratio %.2f; sha256 equal %s; send rss/user/sys/faults %s; receive %s; send exit %s; load %s\n' \
    "$i" "$ours" "$plain" "$(echo "$plain / $ours" | bc -l)" "$same" "$(tail -n 1 "$D/tx.t")" "$(tail -n 1 "$D/rx.t")" "$trc" "$(cut -d' ' -f1 /proc/loadavg)"
done

#!/usr/bin/env bash
# Fan-out at 10,000 sockets: modem-hub's groups under the compiled load generator (Benchmarks/hub-load/
# loadgen.c, built here with gcc), one node on SQLite, then two nodes on one PostgreSQL database
# (scripts/hub-postgres.sh), members and posters alternating between them.
#
#   bash Benchmarks/hub-load.sh MODEM_HUB [CLIENTS=10000] [GROUPS=1000] [SECONDS=20] [one|two|both]
#
# CLIENTS members in GROUPS groups, one poster per group posting once a second: CLIENTS deliveries per
# second. Use a release build of the hub (`swift build -c release --product modem-hub`). Prints the
# generator's JSON line per setup (latency percentiles, deliveries, the hub's resident memory before the
# sockets, with them idle and at the end) and the memory per idle socket.
set -euo pipefail
cd "$(dirname "$0")/.."
hub=${1:?usage: hub-load.sh MODEM_HUB [CLIENTS] [GROUPS] [SECONDS] [one|two|both]}
clients=${2:-10000} groups=${3:-1000} seconds=${4:-20} which=${5:-both}
[[ -x $hub ]] || { echo "hub-load: $hub is not an executable" >&2; exit 64; }
mkdir -p .build
gcc -O2 -Wall -Wextra -o .build/hub-loadgen Benchmarks/hub-load/loadgen.c
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
trap "exit 143" TERM
trap "exit 130" INT
# Each socket is a descriptor in the hub and in the generator (the hub refuses connections over its soft
# limit less a reserve).
ulimit -n "$(ulimit -Hn)"

# The caps a stranger meets are per address; the generator is one trusted local client here.
caps=(--max-connections-per-address 100000 --devices-per-address-per-hour 1000000 --log-level warning)

start_hub() {  # start_hub NAME ARGS...: starts a node, sets $port and $pid
  local name=$1; shift
  "$hub" serve --listen 127.0.0.1:0 "${caps[@]}" "$@" 2>"$work/$name.log" &
  pid=$!; pids+=("$pid")
  for _ in $(seq 1 600); do
    port=$(sed -n 's/.*modem-hub: listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/$name.log" | head -n 1)
    [[ -n $port ]] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "hub-load: $name did not start:" >&2; tail -n 5 "$work/$name.log" >&2; exit 1
}

token_for() {  # token_for DB PORT: a client-credentials token of a new OAuth client
  local kv id secret
  kv=$("$hub" client add "load-$RANDOM" --db "$1")
  id=$(sed -n 's/^client_id=//p' <<<"$kv"); secret=$(sed -n 's/^client_secret=//p' <<<"$kv")
  curl -sf -u "$id:$secret" -d grant_type=client_credentials "http://127.0.0.1:$2/oauth/token" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])'
}

hub_errors() {  # hub_errors NAME...: the nodes' logged errors and warnings, counted, the last few shown
  local n
  for n in "$@"; do
    local c; c=$(grep -cE ' (error|warning) ' "$work/$n.log" || true)
    echo "$n: $c errors and warnings logged"
    grep -E ' (error|warning) ' "$work/$n.log" | tail -n 3 | cut -c1-300
  done
}

per_socket() {  # the hub's resident memory per idle socket from the generator's line
  python3 - "$1" <<'PY'
import json, sys
r = json.loads(sys.argv[1]); n = r["clients"] + r["groups"]
for key in ("hub_rss_kib", "hub2_rss_kib"):
    m = r[key]
    if m["before"] > 0:
        share = n if r["nodes"] == 1 else n / 2
        per = (m["idle"] - m["before"]) * 1024 / share
        print(f"{key}: {m['before'] / 1024:.1f} MiB before, {m['idle'] / 1024:.1f} MiB with the sockets idle "
              f"({per:.0f} bytes per idle socket), {m['end'] / 1024:.1f} MiB at the end")
PY
}

status=0
if [[ $which == one || $which == both ]]; then
  db="sqlite:$work/hub.sqlite"
  "$hub" client add warmup --db "$db" >/dev/null  # creates the database before the server opens it
  start_hub one --db "$db"; one_pid=$pid
  token=$(token_for "$db" "$port")
  line=$(.build/hub-loadgen --url "http://127.0.0.1:$port" --token "$token" --clients "$clients" --groups "$groups" \
         --seconds "$seconds" --run "one$RANDOM" --hub-pid "$one_pid" ${HUB_LOAD_DUMP:+--dump "$HUB_LOAD_DUMP.one"}) || status=1
  echo "one node (SQLite): $line"; per_socket "$line"; hub_errors one
  kill "$one_pid"; wait "$one_pid" 2>/dev/null || true
fi
if [[ $which == two || $which == both ]]; then
  pg=$(bash scripts/hub-postgres.sh start)
  dbname="hub_load_$RANDOM$RANDOM"
  psql "$pg" -qc "CREATE DATABASE $dbname" >/dev/null
  db="${pg%/*}/$dbname"
  "$hub" client add warmup --db "$db" >/dev/null
  start_hub n1 --db "$db" --node n1; p1=$port; pid1=$pid
  start_hub n2 --db "$db" --node n2; p2=$port; pid2=$pid
  token=$(token_for "$db" "$p1")
  line=$(.build/hub-loadgen --url "http://127.0.0.1:$p1" --url2 "http://127.0.0.1:$p2" --token "$token" \
         --clients "$clients" --groups "$groups" --seconds "$seconds" --run "two$RANDOM" --hub-pid "$pid1" --hub-pid2 "$pid2" ${HUB_LOAD_DUMP:+--dump "$HUB_LOAD_DUMP.two"}) || status=1
  echo "two nodes (PostgreSQL): $line"; per_socket "$line"; hub_errors n1 n2
fi
exit $status

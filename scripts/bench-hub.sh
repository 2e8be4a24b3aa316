#!/usr/bin/env bash
# Group fan-out of modem-hub against mosquitto, in one run: 1,000 clients in 100 groups (topics), one
# post per group per second (1,000 deliveries/s) for SECONDS (default 20, as the project's load check):
#   1. one modem-hub node on SQLite;
#   2. two modem-hub nodes on one PostgreSQL (clients alternate nodes);
#   3. Debian's mosquitto carrying the same fan-out as MQTT (QoS 0), on a free port, generated config.
# Prints one JSON line per setup (Benchmarks/hub_load.py) with the load average, then the ratios of the
# hub's p50/p99 to mosquitto's. RUNS (default 1) repeats the three.
#
#   scripts/bench-hub.sh [SECONDS] [RUNS]
#
# Needs: a release build of modem-hub (built here unless HUB_BINARY is set), the Python peers
# (scripts/hub-venv.sh), mosquitto (apt-get install -y mosquitto) and PostgreSQL (apt-get install -y
# postgresql). KEEP_LOGS=DIR keeps the hubs' and mosquitto's logs. PostgreSQL runs in a private cluster with the server's default settings (fsync on),
# like the project's load check, not scripts/hub-postgres.sh's test cluster (fsync off for speed).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}; runs=${2:-1}
mosq=$(command -v mosquitto || echo /usr/sbin/mosquitto)
[[ -x $mosq ]] || { echo "bench-hub: mosquitto is not installed (apt-get install -y mosquitto)" >&2; exit 2; }
pgbin=${PG_BIN:-}
if [[ -z $pgbin ]]; then for b in /usr/lib/postgresql/*/bin; do [[ -x $b/pg_ctl ]] && pgbin=$b; done; fi
[[ -n $pgbin ]] || { echo "bench-hub: PostgreSQL is not installed (apt-get install -y postgresql)" >&2; exit 2; }
if [[ -z ${HUB_BINARY:-} ]]; then
  swift build -c release --product modem-hub 2>&1 | tail -n 1 >&2
  HUB_BINARY=$PWD/.build/release/modem-hub
fi
py=$(scripts/hub-venv.sh)
ulimit -n 8192

scratch=$(mktemp -d /tmp/bench-hub.XXXXXX)
pids=(); mqpid=
as_owner() { if [[ $(id -u) == 0 ]]; then local q; printf -v q '%q ' "$@"; su postgres -s /bin/sh -c "$q"; else "$@"; fi; }
cleanup() {
  for p in "${pids[@]}" $mqpid; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ -f $scratch/pg/PG_VERSION ]] && as_owner "$pgbin/pg_ctl" -D "$scratch/pg" -m immediate stop >/dev/null 2>&1 || true
  if [[ -n ${KEEP_LOGS:-} ]]; then mkdir -p "$KEEP_LOGS"; cp "$scratch"/*.log "$KEEP_LOGS"/ 2>/dev/null || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT
freeport() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# hub PORTVAR ARGS...: starts `modem-hub serve` on a free port and waits until it answers.
hub() {
  local var=$1; shift; local port; port=$(freeport)
  "$HUB_BINARY" serve --listen "127.0.0.1:$port" "$@" >>"$scratch/hub.$port.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/.well-known/oauth-authorization-server" >/dev/null && break; sleep 0.1; done
  printf -v "$var" '%s' "$port"
}
# client DB: registers an OAuth client for the load generator; sets CID and CSECRET.
client() {
  local out; out=$("$HUB_BINARY" client add "bench-$RANDOM" --db "$1")
  CID=$(sed -n 's/^client_id=//p' <<<"$out"); CSECRET=$(sed -n 's/^client_secret=//p' <<<"$out")
}
stop_hubs() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait "${pids[@]}" 2>/dev/null || true; pids=(); }

# PostgreSQL: a private cluster, server defaults.
mkdir -p "$scratch/pgsock"
[[ $(id -u) == 0 ]] && { chown postgres "$scratch" "$scratch/pgsock"; chmod 755 "$scratch"; }
pgport=$(freeport)
as_owner "$pgbin/initdb" -D "$scratch/pg" -A trust -U postgres >"$scratch/initdb.log" 2>&1
as_owner "$pgbin/pg_ctl" -D "$scratch/pg" -l "$scratch/pg/log" -w \
  -o "-p $pgport -k $scratch/pgsock -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
pg="postgres://postgres@127.0.0.1:$pgport/postgres"

# mosquitto: 127.0.0.1 only, anonymous, no persistence.
mqport=$(freeport)
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\nlog_type error\nlog_type warning\n' \
  "$mqport" >"$scratch/mosquitto.conf"
"$mosq" -c "$scratch/mosquitto.conf" 2>"$scratch/mosquitto.log" &
mqpid=$!
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $HUB_BINARY, $($mosq -h 2>/dev/null | head -n 1), PostgreSQL $("$pgbin/postgres" -V | awk '{print $3}')"

for r in $(seq 1 "$runs"); do
  db="sqlite:$scratch/hub$r.sqlite"; client "$db"
  hub P --db "$db" --max-connections-per-address 5000   # 1,000 clients from 127.0.0.1, one address to the hub
  l=$(load); one=$("$py" Benchmarks/hub_load.py "http://127.0.0.1:$P" "http://127.0.0.1:$P" "$CID" "$CSECRET" 1000 100 "$seconds")
  echo "one node, SQLite:       $one load $l"
  stop_hubs

  client "$pg"
  hub P1 --db "$pg" --node n1 --max-connections-per-address 5000; hub P2 --db "$pg" --node n2 --max-connections-per-address 5000
  l=$(load); two=$("$py" Benchmarks/hub_load.py "http://127.0.0.1:$P1" "http://127.0.0.1:$P2" "$CID" "$CSECRET" 1000 100 "$seconds")
  echo "two nodes, PostgreSQL:  $two load $l"
  stop_hubs
  # A live node taken for dead would show here (its users marked offline by the other node).
  grep -h "presences of dead nodes marked offline" "$scratch"/hub.*.log | sed 's/^/  hub log: /' || true

  l=$(load); mq=$("$py" Benchmarks/hub_load.py --mqtt "127.0.0.1:$mqport" 1000 100 "$seconds")
  echo "mosquitto, MQTT QoS 0:  $mq load $l"

  python3 - "$one" "$two" "$mq" <<'PY'
import json, sys
one, two, mq = (json.loads(a) for a in sys.argv[1:4])
def ratio(a, b, k): return "%.1fx" % (a[k] / b[k]) if a.get(k) and b.get(k) else "-"
for name, h in (("one node", one), ("two nodes", two)):
    print(f"ratio {name} / mosquitto: p50 {ratio(h, mq, 'p50ms')}, p99 {ratio(h, mq, 'p99ms')}, "
          f"delivered {h['delivered']}/{h['expected']} vs {mq['delivered']}/{mq['expected']}")
PY
done

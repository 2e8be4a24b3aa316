#!/bin/bash
# A private PostgreSQL cluster for the hub's tests and CI: trust authentication, 127.0.0.1 only, on a
# free port, everything inside one folder.
#
#   scripts/hub-postgres.sh start [DIR]   initialise (once) and start; prints the URL (postgres://...)
#   scripts/hub-postgres.sh url   [DIR]   prints the URL of a running cluster
#   scripts/hub-postgres.sh stop  [DIR]   stops it (fast shutdown); the folder stays
#
# DIR defaults to $HUB_PG_DIR or /tmp/modem-hub-pg-XXXXXXXX, one per checkout (XXXXXXXX from the
# checkout's path), so two clones' test runs on one machine never share or stop each other's cluster
# (under /tmp: the `postgres` user must be able to reach it). Idempotent: start on a running cluster prints its
# URL; stop on a stopped one does nothing. PostgreSQL refuses to run as root, so as root the server
# runs as the `postgres` user (DIR is handed to it). Binaries: $PG_BIN or /usr/lib/postgresql/*/bin.
# Install on Debian/Ubuntu: apt-get install -y postgresql.
set -euo pipefail

cmd=${1:-}
checkout=$(cd "$(dirname "$0")/.." && pwd)
dir=${2:-${HUB_PG_DIR:-/tmp/modem-hub-pg-$(printf %s "$checkout" | md5sum | cut -c1-8)}}

usage() { echo "usage: $0 start|stop|url [DIR]" >&2; exit 64; }
[[ $cmd == start || $cmd == stop || $cmd == url ]] || usage

bin=${PG_BIN:-}
if [[ -z $bin ]]; then
  for b in /usr/lib/postgresql/*/bin; do [[ -x $b/pg_ctl ]] && bin=$b; done
fi
if [[ -z $bin || ! -x $bin/pg_ctl ]]; then
  echo "hub-postgres: no PostgreSQL binaries found (apt-get install -y postgresql, or set PG_BIN)" >&2
  exit 1
fi

# Runs a PostgreSQL tool as the cluster's owner.
as_owner() {
  if [[ $(id -u) == 0 ]]; then
    local q; printf -v q '%q ' "$@"
    su postgres -s /bin/sh -c "$q"
  else
    "$@"
  fi
}

running() { [[ -f $dir/data/postmaster.pid ]] && as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; }
url() { echo "postgres://postgres@127.0.0.1:$(cat "$dir/port")/postgres"; }

case $cmd in
  url)
    running || { echo "hub-postgres: no cluster running in $dir" >&2; exit 1; }
    url ;;
  stop)
    if running; then as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null; fi ;;
  start)
    if running; then url; exit 0; fi
    mkdir -p "$dir"
    if [[ $(id -u) == 0 ]]; then
      id postgres >/dev/null 2>&1 || { echo "hub-postgres: running as root needs the 'postgres' user" >&2; exit 1; }
      chown postgres "$dir"; chmod 755 "$dir"
    fi
    if [[ ! -f $dir/data/PG_VERSION ]]; then
      as_owner "$bin/initdb" -D "$dir/data" -A trust -U postgres >"$dir/initdb.log" 2>&1 \
        || { echo "hub-postgres: initdb failed: $(tail -n 3 "$dir/initdb.log")" >&2; exit 1; }
    fi
    port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
    echo "$port" >"$dir/port"
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/data/log" -w \
      -o "-p $port -k $dir/data -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off" start >/dev/null \
      || { echo "hub-postgres: the server did not start: $(tail -n 3 "$dir/data/log" 2>/dev/null)" >&2; exit 1; }
    url ;;
esac

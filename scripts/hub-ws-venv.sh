#!/usr/bin/env bash
# Makes the Python virtual environment of the hub's WebSocket scenario tests, .build/hub-ws-venv, with
# websockets and requests (scripts/hub-ws-requirements.txt). Idempotent: reinstalls only when the
# requirements changed. Prints the environment's python path on standard output.
# (hub-core's scripts/hub-venv.sh makes the wider venv of the OAuth peers; either one serves.)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.build/hub-ws-venv
requirements=scripts/hub-ws-requirements.txt
stamp=$venv/.requirements
if [[ ! -x $venv/bin/python ]]; then
  mkdir -p .build
  python3 -m venv "$venv" >&2 || { echo "hub-ws-venv: python3 -m venv failed (install python3-venv)" >&2; exit 1; }
fi
if ! cmp -s "$requirements" "$stamp"; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
  cp "$requirements" "$stamp"
fi
echo "$PWD/$venv/bin/python"

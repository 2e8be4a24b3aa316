#!/usr/bin/env bash
# Makes the Python virtual environment of the messaging interop tests, .build/msg-venv, with the
# `noiseprotocol` package (scripts/msg-requirements.txt): an independent Noise implementation that
# Tests/scripts/noise_peer.py drives against our sessions. Idempotent: reinstalls only when the
# requirements changed. Prints the environment's python path on standard output.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.build/msg-venv
requirements=scripts/msg-requirements.txt
stamp=$venv/.requirements
if [[ ! -x $venv/bin/python ]]; then
  mkdir -p .build
  python3 -m venv "$venv" >&2 || { echo "msg-venv: python3 -m venv failed (install python3-venv)" >&2; exit 1; }
fi
if ! cmp -s "$requirements" "$stamp"; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
  cp "$requirements" "$stamp"
fi
echo "$PWD/$venv/bin/python"

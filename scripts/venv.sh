#!/usr/bin/env bash
# Makes (or completes) the Python virtual environment of a peer test suite and prints its python
# path on standard output (pip's and venv's chatter goes to standard error).
#
#   scripts/venv.sh NAME REQUIREMENTS [DIR] [CHECK]
#
# NAME names it in messages; REQUIREMENTS is a pip requirements file; DIR defaults to
# .build/NAME-venv; relative paths are taken from the package root (beside Package.swift). CHECK,
# when given, is Python code that must run in the venv (the imports the tests need).
# Idempotent: pip runs only when the venv is new, when REQUIREMENTS differs from the copy kept in the
# venv at the last install (DIR/.requirements), or when CHECK fails. Used by bt-venv.sh, msg-venv.sh
# and hub-venv.sh.
set -euo pipefail
if [[ $# -lt 2 || $# -gt 4 ]]; then
  echo "usage: scripts/venv.sh NAME REQUIREMENTS [DIR] [CHECK]" >&2
  exit 64
fi
cd "$(dirname "$0")/.."
name=$1 requirements=$2 venv=${3:-.build/$1-venv} check=${4:-}
[[ $venv == /* ]] || venv=$PWD/$venv
[[ -f $requirements ]] || { echo "$name-venv: no requirements file $requirements" >&2; exit 1; }
stamp=$venv/.requirements
if [[ ! -x $venv/bin/python ]]; then
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv" >&2 || { echo "$name-venv: python3 -m venv failed (install python3-venv)" >&2; exit 1; }
fi
passes() { [[ -z $check ]] || "$venv/bin/python" -c "$check" 2>/dev/null; }
if ! cmp -s "$requirements" "$stamp" || ! passes; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2 \
    || { echo "$name-venv: pip install failed" >&2; exit 1; }
  passes || { echo "$name-venv: modules missing after install" >&2; exit 1; }
  cp "$requirements" "$stamp"
fi
echo "$venv/bin/python"

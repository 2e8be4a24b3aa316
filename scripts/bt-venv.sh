#!/usr/bin/env bash
# Makes the Python virtual environment of the Bluetooth peer tests, .build/bt-venv, with Bumble
# (scripts/bt-requirements.txt). Idempotent: reinstalls only when the requirements changed.
# Prints the environment's python path on standard output.
exec bash "$(dirname "$0")/venv.sh" bt scripts/bt-requirements.txt

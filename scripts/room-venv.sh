#!/usr/bin/env bash
# Makes the Python virtual environment of the room benchmark (Benchmarks/room.py), .build/room-venv,
# with pyroomacoustics, numpy and scipy (scripts/room-requirements.txt). Idempotent: reinstalls only
# when the requirements changed. Prints the environment's python path on standard output.
exec bash "$(dirname "$0")/venv.sh" room scripts/room-requirements.txt .build/room-venv "import pyroomacoustics, numpy, scipy"

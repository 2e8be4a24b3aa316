#!/usr/bin/env bash
# Makes the Python virtual environment of the messaging interop tests, .build/msg-venv, with the
# `noiseprotocol` package (scripts/msg-requirements.txt): an independent Noise implementation that
# Tests/scripts/noise_peer.py drives against our sessions. Idempotent: reinstalls only when the
# requirements changed. Prints the environment's python path on standard output.
exec bash "$(dirname "$0")/venv.sh" msg scripts/msg-requirements.txt

#!/bin/bash
# The hub's Python peers: requests-oauthlib and authlib (independent OAuth2 clients), websockets, and
# schemathesis (property tests from docs/openapi.yaml), paho-mqtt and aiomqtt (the mosquitto side of
# Benchmarks/hub_load.py), in a virtual environment (default .build/hub-venv).
#
#   scripts/hub-venv.sh [DIR]    creates or completes the venv; prints its python path
#
# Idempotent: an existing venv with every module importable is reused. The tests find it through
# HUB_VENV (default .build/hub-venv beside Package.swift).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${HUB_VENV:-$here/.build/hub-venv}}
check='import requests_oauthlib, oauthlib, authlib, requests, websockets, schemathesis, paho.mqtt, aiomqtt'
if [[ -x $venv/bin/python ]] && "$venv/bin/python" -c "$check" 2>/dev/null; then
  echo "$venv/bin/python"; exit 0
fi
python3 -m venv "$venv" >&2 || { echo "hub-venv: python3 -m venv failed (apt-get install -y python3-venv)" >&2; exit 1; }
"$venv/bin/pip" install -q --disable-pip-version-check \
  'requests-oauthlib>=2.0' 'oauthlib>=3.2' 'authlib>=1.3' 'requests>=2.31' 'websockets>=12' 'schemathesis==4.32.5' 'paho-mqtt==2.2.0' 'aiomqtt==2.5.1' >&2 \
  || { echo "hub-venv: pip install failed" >&2; exit 1; }
"$venv/bin/python" -c "$check" || { echo "hub-venv: modules missing after install" >&2; exit 1; }
echo "$venv/bin/python"

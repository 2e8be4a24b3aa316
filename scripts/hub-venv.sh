#!/bin/bash
# The hub's Python peers: requests-oauthlib and authlib (independent OAuth2 clients), websockets, and
# schemathesis (property tests from docs/openapi.yaml), prometheus-client (parses GET /metrics), paho-mqtt and aiomqtt (the mosquitto side of
# Benchmarks/hub_load.py), in a virtual environment (default .build/hub-venv).
#
#   scripts/hub-venv.sh [DIR]    creates or completes the venv; prints its python path
#
# Idempotent: an existing venv with every module importable and the same requirements
# (scripts/hub-requirements.txt) is reused. The tests find it through HUB_VENV (default
# .build/hub-venv beside Package.swift).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${HUB_VENV:-$here/.build/hub-venv}}
[[ $venv == /* ]] || venv=$PWD/$venv
exec bash "$here/scripts/venv.sh" hub scripts/hub-requirements.txt "$venv" \
  'import requests_oauthlib, oauthlib, authlib, requests, websockets, schemathesis, prometheus_client, paho.mqtt, aiomqtt'

#!/bin/bash
# Stock magic-wormhole 0.24 (the `wormhole` client), the reference rendezvous server, the reference
# transit relay and python-spake2
# (`twist wormhole-mailbox`, `twist transitrelay`), in a virtual environment (default .build/wormhole-venv).
#
#   scripts/wormhole-venv.sh [DIR]    creates or completes the venv; prints its python path
#
# Idempotent (see scripts/venv.sh). The hub's tests find it through WORMHOLE_VENV (default
# .build/wormhole-venv beside Package.swift).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${WORMHOLE_VENV:-$here/.build/wormhole-venv}}
[[ $venv == /* ]] || venv=$PWD/$venv
exec bash "$here/scripts/venv.sh" wormhole scripts/wormhole-requirements.txt "$venv" \
  'import wormhole, wormhole_mailbox_server, wormhole_transit_relay, spake2, twisted'

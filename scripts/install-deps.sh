#!/usr/bin/env bash
# Installs the Debian packages SwiftModem builds, tests and benchmarks with. Idempotent: installs
# only what is missing, and runs `apt-get update` only when something must be installed.
# `--build`: only what the Swift build needs (a few libraries' headers), so scripts/test.sh can start
# compiling at once and install the peers and tools (most of the download) beside the build.
set -euo pipefail
build_packages=(
  pkg-config libasound2-dev libfftw3-dev libsndfile1-dev zlib1g-dev   # build: alsa-lib, FFTW, libsndfile, zlib
  libsodium-dev libssl-dev                                 # build: ModemCrypto (X25519, ChaCha20-Poly1305, HMAC; SHA-256, AES-GCM), wss:// (libssl)
)
packages=(
  "${build_packages[@]}"
  minimodem direwolf multimon-ng sox bc                    # peers and tools for tests and benchmarks
  cmake make gcc                                           # build Dire Wolf 1.8 (IL2P) from Fixtures/peers: scripts/direwolf18.sh
  pulseaudio libasound2-plugins alsa-utils                 # the sound-card loopback for ALSA tests
  python3-venv tshark socat                                # Python peers' venvs; reading --capture files; the TCP baseline
  postgresql openssl curl                                  # the hub: a private cluster for multi-node tests; TLS and HTTP in its tests
)
case ${1:-} in
  --build) packages=("${build_packages[@]}") ;;
  "") ;;
  *) echo "usage: install-deps.sh [--build]" >&2; exit 64 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""; [[ $(id -u) != 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  # tshark asks whether non-root users may capture: answer no, without a question.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections 2>/dev/null || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || { echo "install-deps: the Swift toolchain (swift) is not on PATH" >&2; exit 1; }

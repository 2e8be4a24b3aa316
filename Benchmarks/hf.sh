#!/usr/bin/env bash
# The HF benchmark (Benchmarks/hf.py): `modem --profile hf` against FreeDV's data modes (datac1/3/0/4/13)
# over codec2's channel simulator ch, 8 KiB per run, at AWGN 20/10/3/-3 dB and MPP (two paths 2 ms apart,
# 1 Hz Doppler spread) 20/10/5/0 dB SNR3k. Builds codec2 from Fixtures/peers (scripts/codec2.sh), the fading
# file ch --mpp reads (scripts/hf-fading.py in the hf venv: 1500 s, seed 1) and the release modem unless
# MODEM names one. Arguments go to hf.py (--points awgn3,mpp5, --no-freedv, --csv FILE).
#   bash Benchmarks/hf.sh [--points LIST] [--no-freedv] [--csv FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v sox >/dev/null || { echo "hf bench: sox is missing (apt install sox)" >&2; exit 1; }
CODEC2_BIN=$(bash scripts/codec2.sh)
python=$(bash scripts/venv.sh hf scripts/hf-requirements.txt .build/hf-venv 'import numpy, scipy.signal')
FADING_DIR=$PWD/.build/hf-fading
if [[ ! -f $FADING_DIR/fast_fading_samples.float ]]; then
  "$python" scripts/hf-fading.py "$FADING_DIR" 1500 --seed 1 --which fast >&2
fi
if [[ -z ${MODEM:-} ]]; then
  SWIFTMODEM_BUILD=modem swift build -c release --product modem --scratch-path .build-rel >&2
  MODEM=$PWD/.build-rel/release/modem
fi
export MODEM CODEC2_BIN FADING_DIR
echo "## HF: ours against FreeDV over codec2's ch (8 KiB per run, $(date -u +%Y-%m-%d), $(nproc) cores)"
"$python" Benchmarks/hf.py "$@"

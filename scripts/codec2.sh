#!/usr/bin/env bash
# Builds FreeDV's codec2 (commit 96e8a19) from the source archive kept in the project
# (Fixtures/peers/codec2-96e8a19.tar.gz) and prints the folder of its programs on standard output
# (cmake's and make's chatter goes to a log). Debian's codec2 lacks these programs.
#
#   scripts/codec2.sh [DEST]        (default .build/codec2; the programs land in DEST/bin)
#
# Built: freedv_data_raw_tx and freedv_data_raw_rx (FreeDV's data modes datac0/1/3/4/13, the peers of
# `--profile hf`) and ch (codec2's HF channel simulator: SSB filter, Watterson fading, AWGN measured in
# 3 kHz). Idempotent and cached: nothing is done when DEST/bin holds the programs built from this very
# archive (DEST/.archive holds its checksum). Needs cmake, gcc and make. Benchmarks/hf.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
archive=$PWD/Fixtures/peers/codec2-96e8a19.tar.gz
dest=${1:-.build/codec2}
[[ $dest == /* ]] || dest=$PWD/$dest
programs=(freedv_data_raw_tx freedv_data_raw_rx ch)
[[ -f $archive ]] || { echo "codec2: no source archive $archive" >&2; exit 1; }
sum=$(sha256sum "$archive" | cut -d' ' -f1)
built() {
  [[ -f $dest/.archive && $(cat "$dest/.archive") == "$sum" ]] || return 1
  for p in "${programs[@]}"; do [[ -x $dest/bin/$p ]] || return 1; done
}
if built; then echo "$dest/bin"; exit 0; fi
for tool in cmake gcc make; do
  command -v "$tool" >/dev/null || { echo "codec2: $tool is missing (bash scripts/install-deps.sh installs it)" >&2; exit 1; }
done
# One build at a time per DEST.
mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9
if built; then echo "$dest/bin"; exit 0; fi
rm -rf "$dest/src" "$dest/bin" "$dest/.archive"
mkdir -p "$dest/src" "$dest/bin"
log=$dest/build.log
tar -xzf "$archive" -C "$dest/src"
top=$(find "$dest/src" -mindepth 1 -maxdepth 1 -type d | head -n 1)
mkdir -p "$top/build"
cd "$top/build"
if ! { cmake -DCMAKE_BUILD_TYPE=Release -DUNITTEST=OFF .. && make -j"$(nproc)" "${programs[@]}"; } >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "codec2: the build failed (log: $log)" >&2
  exit 1
fi
for p in "${programs[@]}"; do cp "src/$p" "$dest/bin/$p"; done
echo "$sum" >"$dest/.archive"
echo "$dest/bin"

#!/usr/bin/env bash
# Builds the test peer Dire Wolf 1.8 (development branch, commit 44f576c: IL2P, which Debian's direwolf
# 1.6 lacks) from the source archive kept in the project (Fixtures/peers/direwolf-dev-44f576c.tar.gz),
# and prints the folder of its programs on standard output (cmake's and make's chatter goes to a log).
#
#   scripts/direwolf18.sh [DEST]        (default .build/direwolf18; the programs land in DEST/bin)
#
# Only what the tests and benchmarks run is built: atest and gen_packets (IL2P, PSK), and for the AGW
# tests the TNC itself (direwolf: its AGW server on port 8000, its KISS server on 8001) with its AGW
# and KISS clients (aclients, tnctest and tnctest-20, kissutil, appserver). Idempotent: nothing is done when DEST/bin
# holds every program built from this very archive (DEST/.archive holds its checksum); a source tree
# configured from the same archive (DEST/.source) is reused, so make builds only what is missing. Needs cmake, gcc and
# libasound2-dev (scripts/install-deps.sh installs them). scripts/test.sh runs it beside the Swift builds;
# tests find the programs through `Peers.atest18` and `Peers.genPackets18` (Tests/ModemCLITests/Support/
# CLIHarness.swift), or in the folder DIREWOLF18_BIN names.
set -euo pipefail
cd "$(dirname "$0")/.."
archive=$PWD/Fixtures/peers/direwolf-dev-44f576c.tar.gz
dest=${1:-.build/direwolf18}
[[ $dest == /* ]] || dest=$PWD/$dest
programs=(atest gen_packets direwolf aclients tnctest kissutil appserver)
# Beside them, tnctest-20: tnctest with its one count changed from 9,999 lines to 20 (nothing else), so that a
# connected-mode session between two TNCs at 1200 bit/s takes about a minute instead of hours.
extra=(tnctest-20)
[[ -f $archive ]] || { echo "direwolf18: no source archive $archive" >&2; exit 1; }
sum=$(sha256sum "$archive" | cut -d' ' -f1)
built() {
  [[ -f $dest/.archive && $(cat "$dest/.archive") == "$sum" ]] || return 1
  for p in "${programs[@]}" "${extra[@]}"; do [[ -x $dest/bin/$p ]] || return 1; done
}
if built; then echo "$dest/bin"; exit 0; fi
for tool in cmake gcc make; do
  command -v "$tool" >/dev/null || { echo "direwolf18: $tool is missing (bash scripts/install-deps.sh installs it)" >&2; exit 1; }
done
# One build at a time per DEST (scripts/test.sh and a benchmark may start it together).
mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9
if built; then echo "$dest/bin"; exit 0; fi
log=$dest/build.log
# A configured tree of this archive is reused (make builds only what is missing); any other is replaced.
if [[ ! -f $dest/.source || $(cat "$dest/.source") != "$sum" || ! -d $dest/src/direwolf/build ]]; then
  rm -rf "$dest/src" "$dest/bin" "$dest/.archive" "$dest/.source"
  mkdir -p "$dest/src"
  tar -xzf "$archive" -C "$dest/src"
  mkdir -p "$dest/src/direwolf/build"
  echo "$sum" >"$dest/.source"
fi
rm -f "$dest/.archive"
mkdir -p "$dest/bin"
cd "$dest/src/direwolf/build"
if ! { [[ -f Makefile ]] || cmake -DCMAKE_BUILD_TYPE=Release -DUNITTEST=OFF ..; } >"$log" 2>&1 ||
   ! make -j"$(nproc)" "${programs[@]}" >>"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "direwolf18: the build failed (log: $log)" >&2
  exit 1
fi
for p in "${programs[@]}"; do cp "src/$p" "$dest/bin/$p"; done
# tnctest-20 from a copy of tnctest.c with `max_count = 9999;` made 20, linked with tnctest's own objects.
sed 's/^\tmax_count = 9999;/\tmax_count = 20;/' ../src/tnctest.c >src/tnctest20.c
grep -q $'^\tmax_count = 20;' src/tnctest20.c || { echo "direwolf18: tnctest.c no longer sets max_count = 9999" >&2; exit 1; }
if ! (cd src && cc -O2 -D_GNU_SOURCE -DUSE_ALSA -I. -I../../src -o "$dest/bin/tnctest-20" tnctest20.c CMakeFiles/tnctest.dir/textcolor.c.o \
        CMakeFiles/tnctest.dir/dtime_now.c.o CMakeFiles/tnctest.dir/serial_port.c.o -lrt -lm ../external/misc/libmisc.a) >>"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "direwolf18: tnctest-20 did not build (log: $log)" >&2
  exit 1
fi
echo "$sum" >"$dest/.archive"
echo "$dest/bin"

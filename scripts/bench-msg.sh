#!/usr/bin/env bash
# Throughput of the messaging record path: a NoiseSession moving BYTES (default 1 GiB) of 64,000-byte
# records to another over loopback TCP, both in one process, release build (scratch .build-msgbench).
# Prints "one process: N bytes in R records of B: S s, X MB/s", then the same with the receiver in a
# child process. Compare with a plain copy on the same machine, e.g.
#   head -c 1G /dev/zero | socat -u - TCP:127.0.0.1:PORT   (or the Python copy in docs/messaging-plan.md)
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --package-path scripts/msg-throughput --scratch-path .build-msgbench 2>&1 | grep -E "error|warning: |Compiling msg|Build complete" >&2 || true
.build-msgbench/release/msg-throughput "${1:-1073741824}" "${2:-64000}"
.build-msgbench/release/msg-throughput --two-process "${1:-1073741824}" "${2:-64000}"

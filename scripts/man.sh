#!/usr/bin/env bash
# Writes the manual pages docs/man/modem.1 and docs/man/modem-hub.1 from the tools' own argument
# parsers (swift-argument-parser's generate-manual reads `TOOL --experimental-dump-help`), so they say
# what `--help` says. Builds what is missing: generate-manual (debug, beside the test build), the modem
# (the test command's release build) and modem-hub (its debug build). Run it after changing an option
# or a help text; StdoutTests checks that every option the tools have is in the committed pages.
#   bash scripts/man.sh            then: man -l docs/man/modem.1
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build-config.sh
SWIFTMODEM_BUILD=modem swift build "${modem_build_config[@]}" --product modem 2>&1 | tail -n 1
SWIFTMODEM_BUILD=hub swift build -c debug -debug-info-format none --explicit-target-dependency-import-check error --scratch-path .build-hub --product modem-hub 2>&1 | tail -n 1
# A debug build in the test build's folder: its own subfolder, the release build's flags untouched.
SWIFTMODEM_BUILD=modem swift build -c debug --scratch-path .build-tests --product generate-manual 2>&1 | tail -n 1
mkdir -p docs/man
# The date of the last commit, so a page made again from the same sources is the same file.
date=$(git log -1 --format=%cs 2>/dev/null || date +%F)
.build-tests/debug/generate-manual .build-tests/release/modem -o docs/man --date "$date" --authors "SwiftModem developers"
.build-tests/debug/generate-manual .build-hub/debug/modem-hub -o docs/man --date "$date" --authors "SwiftModem developers"
echo "man.sh: wrote docs/man/modem.1 and docs/man/modem-hub.1 (man -l docs/man/modem.1)"

# Sourced by scripts/demo.sh and scripts/test.sh: how both build the modem's half, so the demo's build
# is the first half of the test command's (a newcomer who runs the demo first, then the tests, compiles
# the layers once). Release, so the DSP runs at the speed users get; with testing enabled, for the
# tests' @testable imports; no debug information (nobody steps through these builds; a crash still
# prints a backtrace with function names). (The index store stays: on Linux, SwiftPM finds the XCTest
# cases through it, and --disable-index-store fails a build with tests.)
# Every import must be of a declared dependency (--explicit-target-dependency-import-check), so the
# layers' declared dependencies stay what they import.
modem_build_config=(-c release -Xswiftc -enable-testing -debug-info-format none
                    --explicit-target-dependency-import-check error --scratch-path .build-tests)

# Shared by the benchmark scripts (sourced, not run): set NAME first.
# need CMD HINT: exits 2 with a message when CMD is missing.
need() { command -v "$1" >/dev/null 2>&1 || { echo "$NAME: $1 is not installed ($2)" >&2; exit 2; }; }

# Prints the machine's state, builds modem in release mode into $SCRATCH and sets MODEM (or, when
# MODEM is set already, e.g. MODEM=.build-tests/release/modem, uses that release binary as it is).
build_modem() {
    echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    if [ -n "${MODEM:-}" ]; then
        [ -x "$MODEM" ] || { echo "$NAME: MODEM=$MODEM is not an executable" >&2; exit 1; }
        echo "== using $MODEM as built"
        return
    fi
    echo "== build (release, $SCRATCH)"
    (cd "$ROOT" && swift build -c release --scratch-path "$SCRATCH" --product modem 2>&1 | tail -1)
    MODEM="$(cd "$ROOT" && swift build -c release --scratch-path "$SCRATCH" --show-bin-path)/modem"
    [ -x "$MODEM" ] || { echo "$NAME: $MODEM was not built" >&2; exit 1; }
}

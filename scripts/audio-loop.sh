#!/usr/bin/env bash
# audio-loop.sh — a private PulseAudio server with one null sink, for testing ALSA code on a machine
# without a sound card.
#
#   scripts/audio-loop.sh start    start the server (or reuse a running one) and print, on stdout,
#                                  the `export` lines a client needs:  eval "$(scripts/audio-loop.sh start)"
#   scripts/audio-loop.sh stop     stop the server started from the same runtime folder (by its PID)
#   scripts/audio-loop.sh status   say whether it runs; exit 0 if it does, 3 if not
#   scripts/audio-loop.sh env      print the export lines again (exit 3 if not running)
#
# With the server reachable, alsa-lib's `default` PCM routes to it (libasound2-plugins), so playing
# on `default` writes into the null sink `loopsink` (s16le, 48000 Hz, mono) and capturing on `default`
# records its monitor: bit-exact at S16_LE / 48000 Hz / mono, paced in real time.
#
# State (socket, PID, log, PulseAudio's own files) lives in $AUDIO_LOOP_DIR, by default
# ${TMPDIR:-/tmp}/swiftmodem-audio-loop-$UID; nothing is written to $HOME. Both commands are
# idempotent. Diagnostics go to stderr; exit status 0 on success, 1 on failure, 2 on misuse or when
# PulseAudio is not installed.
set -u

die() { echo "audio-loop: $*" >&2; exit "${EXIT:-1}"; }

RT=${AUDIO_LOOP_DIR:-${TMPDIR:-/tmp}/swiftmodem-audio-loop-$(id -u)}
MARK=$RT/.swiftmodem-audio-loop   # marks a folder this script made, so `stop` only ever cleans its own
PIDFILE=$RT/server.pid
SOCKET=$RT/native
SERVER=unix:$SOCKET

# Whether a process runs. A zombie does not count: where PID 1 does not reap orphans, a stopped
# server stays a zombie and `kill -0` would still succeed.
alive() {
    local state
    state=$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
    [[ -n $state && $state != Z && $state != X ]]
}

# The PID of our server if it is alive, else nothing (a stale or recycled PID is ignored).
running_pid() {
    [[ -f $PIDFILE ]] || return 1
    local pid; pid=$(<"$PIDFILE")
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [[ -r /proc/$pid/comm && $(</proc/$pid/comm) == pulseaudio* ]] || return 1
    alive "$pid" || return 1
    echo "$pid"
}

answers() { PULSE_SERVER=$SERVER timeout 5 pactl info >/dev/null 2>&1; }

print_env() {
    echo "export PULSE_SERVER=$SERVER"
    echo "export AUDIO_LOOP_DIR=$RT"
}

start() {
    command -v pulseaudio >/dev/null || EXIT=2 die "pulseaudio is not installed (apt-get install pulseaudio libasound2-plugins)"
    command -v pactl >/dev/null || EXIT=2 die "pactl is not installed (it comes with pulseaudio-utils)"
    [[ -f /usr/share/alsa/pulse-alsa.conf ]] ||
        echo "audio-loop: warning: libasound2-plugins seems missing; alsa-lib's 'default' will not reach the server" >&2

    if pid=$(running_pid) && answers; then print_env; return 0; fi
    if pid=$(running_pid); then   # alive but not answering: replace it
        kill "$pid" 2>/dev/null; sleep 0.2; kill -9 "$pid" 2>/dev/null
    fi

    if [[ -e $RT && ! -f $MARK ]] && [[ -n $(ls -A "$RT" 2>/dev/null) ]]; then
        die "$RT exists, is not empty and was not made by this script; set AUDIO_LOOP_DIR to another folder"
    fi
    mkdir -p "$RT" && chmod 700 "$RT" || die "cannot create the runtime folder $RT"
    : > "$MARK"
    rm -f "$SOCKET" "$PIDFILE"
    mkdir -p "$RT/config" "$RT/state"

    cat > "$RT/loop.pa" <<EOF
# Written by scripts/audio-loop.sh: one null sink, its monitor as the default source.
load-module module-native-protocol-unix auth-anonymous=1 socket=$SOCKET
load-module module-null-sink sink_name=loopsink format=s16le rate=48000 channels=1 norewinds=1 sink_properties=device.description=SwiftModem-loopback
set-default-sink loopsink
set-default-source loopsink.monitor
EOF

    # -n: no default.pa; --daemonize=no keeps the PID ours; memfd off because it fails in some sandboxes.
    HOME=$RT XDG_RUNTIME_DIR=$RT XDG_CONFIG_HOME=$RT/config PULSE_RUNTIME_PATH=$RT \
    PULSE_STATE_PATH=$RT/state PULSE_COOKIE=$RT/cookie \
        setsid pulseaudio -n -F "$RT/loop.pa" --daemonize=no --exit-idle-time=-1 --use-pid-file=no \
        --disallow-exit=yes --disallow-module-loading=no --enable-memfd=no --system=no \
        --log-target="file:$RT/pulse.log" </dev/null >/dev/null 2>&1 &
    pid=$!
    echo "$pid" > "$PIDFILE"

    for _ in $(seq 1 100); do   # up to ~5 s; usually ready in 0.1 s
        if answers; then print_env; return 0; fi
        alive "$pid" || break
        sleep 0.05
    done
    kill "$pid" 2>/dev/null; sleep 0.1; kill -9 "$pid" 2>/dev/null
    rm -f "$PIDFILE"
    echo "audio-loop: the PulseAudio server did not come up; last lines of $RT/pulse.log:" >&2
    tail -n 5 "$RT/pulse.log" >&2 2>/dev/null
    return 1
}

stop() {
    local pid
    if pid=$(running_pid); then
        kill "$pid" 2>/dev/null
        for _ in $(seq 1 40); do alive "$pid" || break; sleep 0.05; done
        alive "$pid" && kill -9 "$pid" 2>/dev/null
    fi
    # Clean only a folder this script made.
    if [[ -f $MARK ]]; then rm -rf "$RT"; fi
    return 0
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status)
        if running_pid >/dev/null && answers; then echo "running (PID $(running_pid)), PULSE_SERVER=$SERVER"; exit 0; fi
        echo "not running"; exit 3 ;;
    env)
        if running_pid >/dev/null && answers; then print_env; exit 0; fi
        echo "audio-loop: not running" >&2; exit 3 ;;
    *) echo "usage: $0 start|stop|status|env   (state in \$AUDIO_LOOP_DIR, default ${TMPDIR:-/tmp}/swiftmodem-audio-loop-\$UID)" >&2; exit 2 ;;
esac

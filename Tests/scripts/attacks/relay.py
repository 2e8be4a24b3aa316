#!/usr/bin/env python3
"""Attacks on the transit relay of `modem-hub serve --transit-listen` (issue 32, defect 4), each asserted
to fail while an honest pair beside it is still relayed. Attackers connect from 127.0.0.2, honest clients
from 127.0.0.1 (every address counts, loopback included). Standard library only.

- one address makes 1,030 pairs of its own and holds them: it gets no more than its share
  (--transit-max-pairs-per-address), and a pair from 127.0.0.1 is still joined and carries bytes;
- one address opens 300 silent connections (no handshake): beyond --max-connections-per-address they
  are closed at once, the rest at the handshake deadline (--transit-handshake-timeout);
- one address leaves many connections waiting with tokens nobody else has: capped per address;
- a joined pair that stays silent is closed at --transit-idle-timeout; one that talks is not.

Prints `ok|FAIL name` lines and `N passed, M failed`; exits 1 on a failure.

    relay.py MODEM_HUB [caps|deadlines]

`caps` (the default) runs the first three; `deadlines` the last, which measures real time (the hub's
deadlines run on its wall clock) and so runs in the real-time group, alone (AttackRelayDeadlinesRealTimeTests).
"""
import os, resource, selectors, socket, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from script_checks import Checks, start_server  # noqa: E402

HUB = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else "caps"
GUARD = 30  # seconds: a hang guard far above every deadline under test
check = Checks()
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))


def start_hub(work, name, extra):
    return start_server([HUB, "serve", "--bcrypt-cost", "4", "--listen", "127.0.0.1:0", "--db", "sqlite:" + os.path.join(work, f"{name}.sqlite"),
                         "--transit-listen", "127.0.0.1:0"] + extra, os.path.join(work, f"{name}.log"),
                        "modem-hub: transit relay listening on 127.0.0.1:")


def conn(port, src, timeout=GUARD):
    s = socket.socket()
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def hello(token, side):
    return b"please relay " + token + b" for side " + side + b"\n"


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        b = s.recv(n - len(out))
        if not b:
            break
        out += b
    return out


def closed_within(s, seconds):
    """Whether the server closes `s` (EOF or reset) within `seconds` (a hang guard)."""
    s.settimeout(seconds)
    try:
        while True:
            if not s.recv(4096):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def wait_closed(socks, want, seconds):
    """Waits (a hang guard of `seconds`) until at least `want` of `socks` are closed by the server;
    returns how many were."""
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    closed, end = 0, time.monotonic() + seconds
    while closed < want and time.monotonic() < end:
        for key, _ in sel.select(timeout=max(0.01, end - time.monotonic())):
            try:
                gone = key.fileobj.recv(4096) == b""
            except BlockingIOError:
                gone = False
            except OSError:
                gone = True
            if gone:
                sel.unregister(key.fileobj)
                closed += 1
    sel.close()
    return closed


def released(port, want):
    """Waits (a hang guard of GUARD) until the hub has let go of the previous section's connections from
    127.0.0.2: `want` connections from it opened at once must each be let in, which shows as the hub's
    answer to a bad first line (`bad handshake`; a connection over a cap is closed unanswered). The hub
    closes these probes itself, so it has released them before their close reaches us. Returns whether it
    did within the guard."""
    end = time.monotonic() + GUARD
    while time.monotonic() < end:
        probes = []
        for _ in range(want):
            try:
                s = conn(port, "127.0.0.2")
                s.sendall(b"not a handshake\n")
                probes.append(s)
            except OSError:
                break
        answered = 0
        for s in probes:
            try:
                answered += recv_exact(s, len(b"bad handshake\n")) == b"bad handshake\n"
            except OSError:
                pass
        for s in probes:
            s.close()
        if answered == want:
            return True
        time.sleep(0.05)  # pacing between probes only: the result is the hub's answer
    return False


def honest_pair(port, tag):
    """A pair from 127.0.0.1: joined, and bytes both ways."""
    try:
        x, y = conn(port, "127.0.0.1"), conn(port, "127.0.0.1")
        tok = (tag * 64)[:64].encode()
        x.sendall(hello(tok, b"3333333333333333"))
        y.sendall(hello(tok, b"4444444444444444"))
        ok = recv_exact(x, 3) == b"ok\n" and recv_exact(y, 3) == b"ok\n"
        if ok:
            x.sendall(b"legit-x")
            y.sendall(b"legit-y")
            ok = recv_exact(y, 7) == b"legit-x" and recv_exact(x, 7) == b"legit-y"
        x.close(); y.close()
        return ok
    except OSError as e:
        return False


def caps(work):
    # The defaults, as shipped.
    hub, port = start_hub(work, "defaults", [])
    try:
        # 1. One address makes 1,030 pairs of its own and holds them.
        held, made = [], 0
        for i in range(1030):
            tok = f"{i:064x}".encode()
            try:
                a, b = conn(port, "127.0.0.2"), conn(port, "127.0.0.2")
                held += [a, b]
                a.sendall(hello(tok, b"1111111111111111"))
                b.sendall(hello(tok, b"2222222222222222"))
                if recv_exact(b, 3) == b"ok\n":
                    made += 1
            except OSError:
                pass
        check("one address gets at most its share of pairs (64 by default) of 1,030 tried", 0 < made <= 64, f"made {made}")
        check("a pair from 127.0.0.1 is relayed while 127.0.0.2 holds its pairs", honest_pair(port, "e"))
        for s in held:
            s.close()
        check("the hub lets go of 127.0.0.2's pairs once they close", released(port, 256))

        # 2. Silent connections from one address: the cap per address (256) closes the rest at once.
        silent = []
        for i in range(300):
            try:
                silent.append(conn(port, "127.0.0.2"))
            except OSError:
                pass
        want = len(silent) - 256
        refused = wait_closed(silent, want, GUARD)
        check("silent connections over the per-address cap (256) are closed at once", len(silent) == 300 and refused >= want,
              f"{refused} of {len(silent)} closed, {want} expected")
        check("a pair from 127.0.0.1 is relayed beside 256 silent connections of 127.0.0.2", honest_pair(port, "d"))
        for s in silent:
            s.close()
        check("the hub lets go of 127.0.0.2's silent connections once they close", released(port, 256))

        # 3. Waiting connections from one address (tokens nobody else has): capped (64 by default).
        waiting = []
        for i in range(100):
            try:
                s = conn(port, "127.0.0.2")
                s.sendall(hello(f"{i + 5000:064x}".encode(), b"5555555555555555"))
                waiting.append(s)
            except OSError:
                pass
        refused = wait_closed(waiting, len(waiting) - 64, GUARD)
        check("one address keeps at most 64 connections waiting for a peer", len(waiting) == 100 and refused >= 36,
              f"{refused} of {len(waiting)} closed")
        check("a pair from 127.0.0.1 is relayed beside 64 waiting connections of 127.0.0.2", honest_pair(port, "c"))
        for s in waiting:
            s.close()
    finally:
        hub.terminate()
        hub.wait(30)



def deadlines(work):
    # Short deadlines: a handshake within 1 s, a joined pair silent for 4 s is closed.
    hub, port = start_hub(work, "deadlines", ["--transit-handshake-timeout", "1", "--transit-idle-timeout", "4"])
    try:
        s = conn(port, "127.0.0.2")
        t0 = time.monotonic()
        check("a connection that never sends its handshake is closed at the handshake deadline", closed_within(s, GUARD),
              "still open after the hang guard")
        a, b = conn(port, "127.0.0.2"), conn(port, "127.0.0.2")
        tok = b"ab" * 32
        a.sendall(hello(tok, b"1111111111111111")); b.sendall(hello(tok, b"2222222222222222"))
        joined = recv_exact(a, 3) == b"ok\n" and recv_exact(b, 3) == b"ok\n"
        check("a silent joined pair is closed at the idle deadline", joined and closed_within(a, GUARD) and closed_within(b, GUARD))
        # A pair that talks every 0.2 s for 8 s (twice the 4 s idle deadline; each gap a twentieth of it) stays joined.
        x, y = conn(port, "127.0.0.1"), conn(port, "127.0.0.1")
        tok = b"cd" * 32
        x.sendall(hello(tok, b"3333333333333333")); y.sendall(hello(tok, b"4444444444444444"))
        talking = recv_exact(x, 3) == b"ok\n" and recv_exact(y, 3) == b"ok\n"
        for i in range(40):
            (x if i % 2 else y).sendall(b"tick")
            talking = talking and recv_exact(y if i % 2 else x, 4) == b"tick"
            time.sleep(0.2)
        check("a joined pair that talks is not closed by the idle deadline", talking)
        for c in (a, b, x, y):
            c.close()
    finally:
        hub.terminate()
        hub.wait(30)


with tempfile.TemporaryDirectory() as work:
    if MODE == "caps":
        caps(work)
    elif MODE == "deadlines":
        deadlines(work)
    else:
        raise SystemExit(f"relay.py: unknown mode {MODE!r} (caps or deadlines)")
check.finish()

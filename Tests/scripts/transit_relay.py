#!/usr/bin/env python3
"""The transit relay of `modem-hub serve --transit-listen`, driven by clients written here with the
standard library (the relay handshake of magic-wormhole's transit protocol): pairs relay bytes exactly
both ways, tokens never cross, bad handshakes are refused, unmatched connections time out, a client's
own two connections (same side) never meet, the older handshake without a side pairs, bytes sent
before the peer came arrive after its ok, a joined pair keeps its two places in the connection caps
until it ends, many pairs at once. Prints `ok|FAIL name` lines and `N passed, M failed`; exits 1 on a
failure.

    transit_relay.py MODEM_HUB [--pairs N] [--size BYTES] [--serve-option OPTION]...

`--serve-option` (repeatable) is passed to every `modem-hub serve` (`--serve-option=--no-transit-splice`:
pairs relayed through SwiftNIO instead of splice(2)).
"""
from script_checks import Checks, start_server
import argparse, asyncio, hashlib, http.client, os, re, subprocess, sys, tempfile, time, urllib.request

ap = argparse.ArgumentParser()
ap.add_argument("hub")
ap.add_argument("--pairs", type=int, default=200)
ap.add_argument("--size", type=int, default=256 * 1024)
ap.add_argument("--serve-option", action="append", default=[])
args = ap.parse_args()
GUARD = 60  # seconds: a hang guard far above every expected time
TIMEOUT = 2  # the relay's --transit-timeout in this run
check = Checks()


def start_hub(work, name, timeout, per_address=5000):
    return start_server([args.hub, "serve", "--bcrypt-cost", "4", "--listen", "127.0.0.1:0", "--db", "sqlite:" + os.path.join(work, f"{name}.sqlite"),
                         "--transit-listen", "127.0.0.1:0", "--transit-timeout", str(timeout),
                         # Every client here is 127.0.0.1, counted as one address: room for --pairs at once.
                         "--max-connections-per-address", str(per_address), "--transit-max-pairs-per-address", "5000",
                         "--transit-max-waiting-per-address", "5000", *args.serve_option],
                        os.path.join(work, f"{name}.log"), "modem-hub: transit relay listening on 127.0.0.1:", GUARD)


def handshake(token, side=None):
    return f"please relay {token}".encode() + (f" for side {side}".encode() if side else b"") + b"\n"


async def connect(port, line):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(line)
    await w.drain()
    return r, w


async def answer(r, n=3):
    try:
        return await asyncio.wait_for(r.readexactly(n), GUARD)
    except asyncio.IncompleteReadError as e:
        return e.partial
    except ConnectionResetError:  # closed with bytes unread (refused at once by a cap)
        return b""


def scrape(http_port):
    """(transit pairs, connections) from the hub's /metrics, or None when it did not answer."""
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=GUARD).read().decode()
    except (OSError, http.client.HTTPException):  # closed at once: over the cap
        return None
    values = dict(re.findall(r"^(modemhub_transit_pairs|modemhub_connections) (\S+)$", text, re.M))
    return tuple(int(float(values.get(k, "-1"))) for k in ("modemhub_transit_pairs", "modemhub_connections"))


async def relay_pair(port, size, seed):
    """Two clients of one token send `size` random bytes each way at once; returns whether both got
    exactly the other's bytes."""
    token = hashlib.sha256(f"pair {seed} {os.getpid()}".encode()).hexdigest()
    a = await connect(port, handshake(token, "a" * 15 + "1"))
    b = await connect(port, handshake(token, "b" * 15 + "2"))
    oks = [await answer(a[0]), await answer(b[0])]
    if oks != [b"ok\n", b"ok\n"]:
        return False, f"answers {oks}"
    da, db = os.urandom(size), os.urandom(size)

    async def send(w, data):
        for i in range(0, len(data), 65536):
            w.write(data[i:i + 65536])
            await w.drain()

    async def recv(r):
        return await asyncio.wait_for(r.readexactly(size), GUARD)

    _, _, got_b, got_a = await asyncio.gather(send(a[1], da), send(b[1], db), recv(b[0]), recv(a[0]))
    for _, w in (a, b):
        w.close()
    return got_b == da and got_a == db, "bytes differ"


async def main():
    work = tempfile.mkdtemp(prefix="transit-")
    # Two relays: one whose unmatched connections wait 2 s (the timeout checks), one with the default
    # 120 s for the transfers (on a busy machine a pair's second connection may come seconds later).
    quick, qport = start_hub(work, "quick", TIMEOUT)
    hub, port = start_hub(work, "hub", 120)
    # Two connections from 127.0.0.1 at most (the HTTP listener's and the relay's together).
    capped, cport = start_hub(work, "capped", 120, per_address=2)
    try:
        ok, why = await relay_pair(port, 1 << 20, 1)
        check("a pair relays 1 MiB each way at once, exact", ok, why)

        # Two tokens at once: each client gets its own peer's bytes, never the other pair's.
        t1, t2 = (hashlib.sha256(f"t{i} {os.getpid()}".encode()).hexdigest() for i in (1, 2))
        a1 = await connect(port, handshake(t1, "0" * 16))
        a2 = await connect(port, handshake(t2, "0" * 16))
        b2 = await connect(port, handshake(t2, "1" * 16))
        b1 = await connect(port, handshake(t1, "1" * 16))
        answers = [await answer(c[0]) for c in (a1, a2, b2, b1)]
        for (_, w), msg in ((a1, b"from a1"), (a2, b"from a2")):
            w.write(msg)
            await w.drain()
        got = [await asyncio.wait_for(c[0].readexactly(7), GUARD) for c in (b1, b2)]
        check("two tokens at once: each pair gets its own bytes", answers == [b"ok\n"] * 4 and got == [b"from a1", b"from a2"],
              (answers, got))
        for c in (a1, a2, b1, b2):
            c[1].close()

        # A first line that is not a handshake: "bad handshake", then the relay closes.
        for line in (b"GET / HTTP/1.1\r\n\r\n", b"please relay 1234\n", b"please relay " + b"A" * 64 + b"\n", b"x" * 300):
            r, w = await connect(port, line)
            data = await asyncio.wait_for(r.read(100), GUARD)
            rest = await asyncio.wait_for(r.read(100), GUARD)
            check(f"bad first line {line[:20]!r}...: answered and closed", data == b"bad handshake\n" and rest == b"", (data, rest))
            w.close()

        # Nobody comes: closed after the timeout, never "ok".
        t = hashlib.sha256(b"alone").hexdigest()
        r, w = await connect(qport, handshake(t, "2" * 16))
        t0 = time.monotonic()
        data = await asyncio.wait_for(r.read(100), GUARD)
        dt = time.monotonic() - t0
        check(f"an unmatched connection is closed after the timeout ({dt:.1f} s), nothing sent", data == b"" and dt >= TIMEOUT - 0.5,
              (data, dt))
        w.close()

        # A client's own two connections (same side) never meet: both time out.
        t = hashlib.sha256(b"same side").hexdigest()
        c1 = await connect(qport, handshake(t, "3" * 16))
        c2 = await connect(qport, handshake(t, "3" * 16))
        got = [await asyncio.wait_for(c[0].read(100), GUARD) for c in (c1, c2)]
        check("the same side twice is never paired", got == [b"", b""], got)

        # The older handshake, without a side, pairs on the token.
        t = hashlib.sha256(b"old").hexdigest()
        o1 = await connect(port, handshake(t))
        o2 = await connect(port, handshake(t))
        got = [await answer(c[0]) for c in (o1, o2)]
        o1[1].write(b"ping")
        await o1[1].drain()
        echo = await asyncio.wait_for(o2[0].readexactly(4), GUARD)
        check("the older handshake without a side pairs", got == [b"ok\n", b"ok\n"] and echo == b"ping", (got, echo))
        for c in (o1, o2):
            c[1].close()

        # A token claimed three times: the first two pair, the third waits alone and times out.
        t = hashlib.sha256(b"thrice").hexdigest()
        cs = [await connect(qport, handshake(t, f"{i}" * 16)) for i in (4, 5, 6)]
        got = [await asyncio.wait_for(c[0].read(3), GUARD) for c in cs]
        # (Which two pair depends on the order their handshakes reach the relay.)
        check("a token claimed three times: two paired, one closed unpaired", sorted(got) == [b"", b"ok\n", b"ok\n"], got)
        for c in cs:
            c[1].close()

        # One side closes: the other is closed too.
        t = hashlib.sha256(b"close").hexdigest()
        x = await connect(port, handshake(t, "7" * 16))
        y = await connect(port, handshake(t, "8" * 16))
        await answer(x[0]); await answer(y[0])
        x[1].close()
        data = await asyncio.wait_for(y[0].read(100), GUARD)
        check("when one side closes, the relay closes the other", data == b"", data)

        # A sender that half-closes right after its last byte: every byte arrives before the FIN, and
        # the other direction still works until that side closes too.
        t = hashlib.sha256(b"half close").hexdigest()
        x = await connect(port, handshake(t, "9" * 16))
        y = await connect(port, handshake(t, "a" * 16))
        await answer(x[0]); await answer(y[0])
        blob = os.urandom(4 << 20)
        x[1].write(blob)
        await x[1].drain()
        x[1].write_eof()
        got = await asyncio.wait_for(y[0].read(), GUARD)  # to EOF
        y[1].write(b"bye")
        await y[1].drain()
        y[1].close()
        back = await asyncio.wait_for(x[0].read(), GUARD)
        check("a half-closed sender: all 4 MiB arrive before the FIN, the reply after it", got == blob and back == b"bye",
              (len(got), back))
        x[1].close()

        # What a client sends after its handshake, before its peer comes, is held and passed on after the
        # peer's ok; the peer's own early bytes go the other way.
        t = hashlib.sha256(b"early").hexdigest()
        x = await connect(port, handshake(t, "b" * 16) + b"sent early by x")
        y = await connect(port, handshake(t, "c" * 16) + b"and by y")
        got_y = await asyncio.wait_for(y[0].readexactly(3 + 15), GUARD)
        got_x = await asyncio.wait_for(x[0].readexactly(3 + 8), GUARD)
        check("bytes sent before the peer came arrive after its ok, both ways", got_y == b"ok\nsent early by x" and got_x == b"ok\nand by y",
              (got_x, got_y))
        for c in (x, y):
            c[1].close()

        # A joined pair holds its two places in the connection caps while it is relayed, and gives them
        # back when it ends: with two connections per address, a third is closed at once while the pair
        # lives, and a new pair is joined once it has ended.
        t = hashlib.sha256(b"caps 1").hexdigest()
        x = await connect(cport, handshake(t, "d" * 16))
        y = await connect(cport, handshake(t, "e" * 16))
        joined = [await answer(x[0]), await answer(y[0])]
        third = await connect(cport, handshake(hashlib.sha256(b"caps 3").hexdigest(), "f" * 16))
        try:
            refused = await asyncio.wait_for(third[0].read(100), GUARD)
        except ConnectionResetError:  # closed with its handshake unread
            refused = b""
        except asyncio.TimeoutError:  # admitted: waiting for a peer
            refused = None
        x[1].write(b"still relayed")
        await x[1].drain()
        relayed = await asyncio.wait_for(y[0].readexactly(13), GUARD)
        check("a joined pair keeps its places in the connection caps: a third connection is closed",
              joined == [b"ok\n", b"ok\n"] and refused == b"" and relayed == b"still relayed", (joined, refused, relayed))
        third[1].close()
        for c in (x, y):
            c[1].close()
        # The relay closes the pair once it sees both ends go; its /metrics (a connection of its own, so
        # answered only under the cap) then shows no pair and one connection, the scrape's.
        http_port = int(re.search(r"modem-hub: listening on 127\.0\.0\.1:(\d+)", open(os.path.join(work, "capped.log")).read()).group(1))
        seen, deadline = None, time.monotonic() + GUARD
        while time.monotonic() < deadline and seen != (0, 1):
            seen = await asyncio.to_thread(scrape, http_port)
            await asyncio.sleep(0.05)
        t = hashlib.sha256(b"caps 2").hexdigest()
        x = await connect(cport, handshake(t, "d" * 16))
        y = await connect(cport, handshake(t, "e" * 16))
        again = [await answer(x[0]), await answer(y[0])]
        check("an ended pair gives its places in the connection caps back", seen == (0, 1) and again == [b"ok\n", b"ok\n"], (seen, again))
        for c in (x, y):
            c[1].close()

        # Many pairs at once.
        t0 = time.monotonic()
        results = await asyncio.gather(*(relay_pair(port, args.size, 1000 + i) for i in range(args.pairs)))
        bad = [(i, why) for i, (ok, why) in enumerate(results) if not ok]
        check(f"{args.pairs} pairs at once, {args.size} bytes each way, all exact ({time.monotonic() - t0:.1f} s)", not bad, bad[:5])
    finally:
        for h in (hub, quick, capped):
            h.terminate()
            try:
                h.wait(GUARD)
            except subprocess.TimeoutExpired:
                h.kill()
    log = open(os.path.join(work, "hub.log")).read()
    check("the relay logs its counts when it stops", "transit relay stopped:" in log and " pairs, " in log, log[-500:])
    check.finish()


asyncio.run(main())

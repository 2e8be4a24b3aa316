#!/usr/bin/env python3
"""Attacks on the magic-wormhole rendezvous of `modem-hub serve` (/wormhole/v1; issue 32, defects 5 and 11),
each asserted to fail with the protocol's `error` message while an honest client beside it still works.
Attackers connect from 127.0.0.2, honest clients from 127.0.0.1 (every address counts, loopback included).
Uses the hub venv's `websockets`.

On a hub with its defaults:
- nameplates pinned: one address claims nameplate after nameplate and never releases them: refused past
  --wormhole-max-nameplates-per-address (100);
- mailboxes pinned: one address opens mailbox after mailbox: refused past --wormhole-max-mailboxes-per-address (200);
- bytes pinned across mailboxes: one address (127.0.0.3) fills mailbox after mailbox (1 MiB each, the per-mailbox
  bound): refused past --wormhole-max-bytes-per-address (8 MiB);
- meanwhile an honest allocate, claim, open, add and close from 127.0.0.1 works.
On a hub with `--trusted-proxy 127.0.0.1 --wormhole-max-nameplates-per-address 2`:
- X-Forwarded-For from the trusted proxy names the client: two clients behind it have a share each;
- from 127.0.0.2 (not trusted) the header is ignored: whatever it says, the share is 127.0.0.2's;
- refused allocations (past the nameplates an address may hold) give their count back: after 70 of them,
  more than the 64 allocations an address may hold at once, it allocates again once it has room;
- the same over HTTP (the sign-up bound per address, `--signups-per-address-per-hour 1`): 429 for a
  second sign-up of one forwarded client, 202 for another; from 127.0.0.2 every forged header is one client.

With `--postgres URL` (an empty database), also two nodes sharing it, with
`--wormhole-max-nameplates-per-address 4`: an address claiming on both nodes in turn gets 4 in all, not 4
per node, while an honest exchange from 127.0.0.1 works.

Prints `ok|FAIL name` lines and `N passed, M failed`; exits 1 on a failure.

    rendezvous.py MODEM_HUB [--postgres URL]
"""
import asyncio, base64, http.client, itertools, json, os, subprocess, sys, tempfile, time, urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from script_checks import Checks, start_server  # noqa: E402
import websockets  # noqa: E402

HUB = sys.argv[1]
POSTGRES = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--postgres" else None
GUARD = 30  # seconds: a hang guard for each answer
NAMEPLATES = itertools.count(100000)  # fresh nameplate numbers, never claimed before in a run
check = Checks()


def start_hub(work, name, extra, db=None):
    return start_server([HUB, "serve", "--bcrypt-cost", "4", "--listen", "127.0.0.1:0", "--db", db or "sqlite:" + os.path.join(work, f"{name}.sqlite")] + extra,
                        os.path.join(work, f"{name}.log"), "modem-hub: listening on 127.0.0.1:")


class Client:
    """One rendezvous connection from `src`, bound to an application with a side."""

    def __init__(self, port, src, side, app="attacks/rendezvous", headers=None):
        self.port, self.src, self.side, self.app, self.headers = port, src, side, app, headers or {}

    async def __aenter__(self):
        self.ws = await websockets.connect(f"ws://127.0.0.1:{self.port}/wormhole/v1", local_addr=(self.src, 0),
                                           additional_headers=self.headers, max_size=None, open_timeout=GUARD)
        await self.answer()  # welcome
        await self.ws.send(json.dumps({"type": "bind", "appid": self.app, "side": self.side}))
        return self

    async def __aexit__(self, *exc):
        await self.ws.close()

    async def answer(self):
        """The next message that is not an ack."""
        while True:
            m = json.loads(await asyncio.wait_for(self.ws.recv(), GUARD))
            if m.get("type") != "ack":
                return m

    async def ask(self, **msg):
        await self.ws.send(json.dumps(msg))
        return await self.answer()


async def claim_many(port, src, count, headers=None, tag="n"):
    """Claims `count` fresh nameplates, one connection each, never released; returns (claimed, first error)."""
    done = 0
    for i in range(count):
        async with Client(port, src, f"{tag}{i}", headers=headers) as c:
            m = await c.ask(type="claim", nameplate=str(next(NAMEPLATES)))
            if m.get("type") == "error":
                return done, m.get("error")
            done += 1
    return done, None


async def honest(port, tag):
    """An honest exchange from 127.0.0.1: allocate, claim from the other side, open, add, see it, close."""
    try:
        async with Client(port, "127.0.0.1", "a" + tag) as a, Client(port, "127.0.0.1", "b" + tag) as b:
            m = await a.ask(type="allocate")
            if m.get("type") != "allocated":
                return False, m
            n = m["nameplate"]
            ma = await a.ask(type="claim", nameplate=n)
            mb = await b.ask(type="claim", nameplate=n)
            if ma.get("type") != "claimed" or mb.get("type") != "claimed" or ma["mailbox"] != mb["mailbox"]:
                return False, (ma, mb)
            await a.ws.send(json.dumps({"type": "open", "mailbox": ma["mailbox"]}))
            await b.ws.send(json.dumps({"type": "open", "mailbox": mb["mailbox"]}))
            await a.ws.send(json.dumps({"type": "add", "phase": "pake", "body": "00" * 64}))
            got = await b.answer()
            if got.get("type") != "message" or got.get("phase") != "pake":
                return False, got
            for c in (a, b):
                await c.ask(type="release", nameplate=n)
                await c.ask(type="close", mailbox=ma["mailbox"], mood="happy")
            return True, ""
    except Exception as e:
        return False, repr(e)


async def defaults(port):
    # Nameplates: claimed and never released, from one address.
    n, err = await claim_many(port, "127.0.0.2", 120)
    check("one address pins at most 100 nameplates (the protocol's error past them)",
          n == 100 and err is not None and "too many nameplates" in err, (n, err))
    ok, why = await honest(port, "1")
    check("an honest exchange from 127.0.0.1 works beside the pinned nameplates", ok, why)

    # Mailboxes: opened one per connection, never closed.
    opened, err = 0, None
    for i in range(220):
        async with Client(port, "127.0.0.2", f"m{i}") as c:
            await c.ws.send(json.dumps({"type": "open", "mailbox": f"pinned{i:05d}"}))
            # An open has no answer but its ack: a ping after it shows whether an error came first.
            m = await c.ask(type="ping", ping=i)
            if m.get("type") == "error":
                err = m.get("error")
                break
            opened += 1
    # The nameplates above made 100 mailboxes of this address already.
    check("one address pins at most 200 mailboxes (the protocol's error past them)",
          opened == 100 and err is not None and "too many mailboxes" in err, (opened, err))

    # Bytes: mailbox after mailbox filled to the per-mailbox bound, by a second attacker (127.0.0.3: the
    # first holds all the nameplates it may).
    added, err, body = 0, None, "ab" * 16384  # 32 KiB of body per message (a message is at most 64 KiB)
    for box in range(12):
        async with Client(port, "127.0.0.3", f"b{box}", app="attacks/bytes") as c:
            m = await c.ask(type="allocate")
            if m.get("type") != "allocated":
                err = m.get("error")
                break
            m = await c.ask(type="claim", nameplate=m["nameplate"])
            if m.get("type") != "claimed":
                err = m.get("error")
                break
            await c.ws.send(json.dumps({"type": "open", "mailbox": m["mailbox"]}))
            for i in range(32):
                await c.ws.send(json.dumps({"type": "add", "phase": f"p{i}", "body": body}))
                m = await c.answer()  # its own message back, or the refusal
                if m.get("type") == "error":
                    err = m.get("error")
                    break
                added += len(body)
            if err:
                break
    check("one address keeps at most 8 MiB of messages over every mailbox (the protocol's error past them)",
          err is not None and "too many bytes" in err and added == 8 << 20, (added, err))
    ok, why = await honest(port, "2")
    check("an honest exchange from 127.0.0.1 works beside the pinned mailboxes and bytes", ok, why)


async def proxied(port):
    xff = lambda a: {"X-Forwarded-For": a}
    n1, e1 = await claim_many(port, "127.0.0.1", 3, xff("198.51.100.7"), "p7")
    n2, e2 = await claim_many(port, "127.0.0.1", 3, xff("203.0.113.5, 198.51.100.8"), "p8")
    check("behind the trusted proxy, X-Forwarded-For names the client: each client has its own share",
          (n1, n2) == (2, 2) and e1 and e2 and "too many nameplates" in e1 + e2, (n1, e1, n2, e2))
    n3, e3 = 0, None
    for i in range(3):
        # A different forged address every time: from an untrusted peer the header is ignored.
        k, e = await claim_many(port, "127.0.0.2", 1, xff(f"192.0.2.{i + 1}"), f"f{i}")
        n3 += k
        if e:
            e3 = e
            break
    check("from an address that is not a trusted proxy, X-Forwarded-For is ignored", n3 == 2 and e3 and "too many" in e3, (n3, e3))


async def refusals_do_not_count(port):
    """Refused allocations give their count back: 127.0.0.4 holds its 2 nameplates, is refused 70
    allocations (more than the 64 an address may hold at once), releases its nameplates, and may allocate."""
    src, held = "127.0.0.4", [str(next(NAMEPLATES)) for _ in range(2)]
    for i, n in enumerate(held):
        async with Client(port, src, f"h{i}") as c:
            await c.ask(type="claim", nameplate=n)
    refused, last = 0, None
    for i in range(70):
        async with Client(port, src, f"r{i}") as c:
            last = await c.ask(type="allocate")
            refused += last.get("type") == "error" and "too many nameplates held" in last.get("error", "")
    for i, n in enumerate(held):
        async with Client(port, src, f"h{i}") as c:
            await c.ask(type="release", nameplate=n)
    async with Client(port, src, "after") as c:
        m = await c.ask(type="allocate")
    check("70 refused allocations use up none of an address's 64: once it has room it allocates",
          refused == 70 and m.get("type") == "allocated", (refused, last, m))


async def across_nodes(p1, p2):
    n, err = 0, None
    for i in range(8):
        k, err = await claim_many((p1, p2)[i % 2], "127.0.0.2", 1, tag=f"pg{i}")
        n += k
        if err:
            break
    check("two nodes on PostgreSQL: one address pins 4 nameplates in all, not 4 per node",
          n == 4 and err is not None and "too many nameplates" in err, (n, err))
    ok, why = await honest(p2, "pg")
    check("two nodes on PostgreSQL: an honest exchange from 127.0.0.1 works beside it", ok, why)


def request(port, src, method, path, body=None, headers=None):
    """One HTTP request from `src` (a fresh connection): status, headers, JSON body."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=GUARD, source_address=(src, 0))
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    try:
        return r.status, dict(r.getheaders()), json.loads(data or b"{}")
    except ValueError:
        return r.status, dict(r.getheaders()), {}


def http_proxied(port, cid, secret):
    basic = base64.b64encode(f"{cid}:{secret}".encode()).decode()
    form = urllib.parse.urlencode({"grant_type": "client_credentials"})
    _, _, t = request(port, "127.0.0.1", "POST", "/oauth/token", form,
                      {"Authorization": "Basic " + basic, "Content-Type": "application/x-www-form-urlencoded"})
    token = t.get("access_token", "")

    def signup(src, xff, name):
        body = json.dumps({"username": name, "password": "proxy-test-password-1", "contact": name + "@example.org"})
        status, h, _ = request(port, src, "POST", "/v1/accounts", body,
                               {"Authorization": "Bearer " + token, "Content-Type": "application/json", "X-Forwarded-For": xff})
        return status, h.get("Retry-After")

    a1, a2, b1 = signup("127.0.0.1", "198.51.100.7", "proxA1"), signup("127.0.0.1", "198.51.100.7", "proxA2"), \
        signup("127.0.0.1", "203.0.113.1, 198.51.100.8", "proxB1")
    check("over HTTP behind the trusted proxy, each forwarded client has its own sign-up bound",
          a1[0] == 202 and a2[0] == 429 and a2[1] and b1[0] == 202, (a1, a2, b1))
    f1, f2 = signup("127.0.0.2", "192.0.2.1", "forgeA"), signup("127.0.0.2", "192.0.2.2", "forgeB")
    check("over HTTP from an untrusted address, X-Forwarded-For is ignored", f1[0] == 202 and f2[0] == 429, (f1, f2))


def add_client(db):
    out = subprocess.run([HUB, "client", "add", "attack-rendezvous", "--db", db], capture_output=True, text=True, timeout=GUARD)
    kv = dict(line.split("=", 1) for line in out.stdout.split() if "=" in line)
    if "client_id" not in kv:
        raise SystemExit(f"client add failed: {out.returncode} {out.stdout} {out.stderr}")
    return kv["client_id"], kv["client_secret"]


with tempfile.TemporaryDirectory() as work:
    hub, port = start_hub(work, "defaults", [])
    try:
        asyncio.run(defaults(port))
        check("the hub still runs", hub.poll() is None, hub.returncode)
    finally:
        hub.terminate()
        hub.wait(30)
    cid, secret = add_client("sqlite:" + os.path.join(work, "proxied.sqlite"))
    hub, port = start_hub(work, "proxied", ["--trusted-proxy", "127.0.0.1", "--wormhole-max-nameplates-per-address", "2",
                                            "--signups-per-address-per-hour", "1"])
    try:
        asyncio.run(proxied(port))
        asyncio.run(refusals_do_not_count(port))
        http_proxied(port, cid, secret)
    finally:
        hub.terminate()
        hub.wait(30)
    if POSTGRES:
        small = ["--wormhole-max-nameplates-per-address", "4", "--heartbeat", "5"]
        n1, p1 = start_hub(work, "pg1", small + ["--node", "n1"], POSTGRES)
        n2, p2 = start_hub(work, "pg2", small + ["--node", "n2"], POSTGRES)
        try:
            asyncio.run(across_nodes(p1, p2))
        finally:
            for h in (n1, n2):
                h.terminate()
                h.wait(30)

check.finish()

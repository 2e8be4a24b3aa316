#!/usr/bin/env python3
"""Seed 001's five scenarios against `modem-hub serve`, driven by WebSocket clients in Python
(`websockets`), checking the exact events each client receives; on one node (SQLite) and, with --pg,
on two nodes sharing PostgreSQL (clients alternate nodes), then SIGKILL of one node: its users must go
offline on the other within two heartbeats.

usage: hub_ws_scenarios.py MODEM_HUB [--pg URL] [--kills N] [--only-kills] [--dir DIR]
--kills 0 leaves the kill out; --only-kills runs only it (on --pg): its "within two heartbeats" is a
real-time figure, run by the Swift suite HubNodesRealTimeTests, alone on the machine. Every other wait
is for an event, bounded only by a hang guard.
Prints one line per check and a closing 'N passed, N failed'; exit 1 on any failure."""
import argparse, asyncio, json, os, signal, subprocess, sys, tempfile, time
import requests, websockets
from hub_ws_common import Checks, Client, Nodes, token

ap = argparse.ArgumentParser()
ap.add_argument("hub")
ap.add_argument("--pg")
ap.add_argument("--kills", type=int, default=3)
ap.add_argument("--only-kills", action="store_true")
ap.add_argument("--dir")
args = ap.parse_args()
WORK = args.dir or tempfile.mkdtemp(prefix="hub-ws-")
# The kills measure "within two heartbeats" (real time, HubNodesRealTimeTests): 1 s. Without kills nothing
# here depends on the heartbeat, and 5 s keeps a node that a busy machine starves for a few seconds from
# being judged dead by the other (the hub's group runs in the idle class beside the real-time tests).
HEARTBEAT = 1.0 if args.kills else 5.0
check = Checks()
nodes = Nodes(args.hub, WORK, HEARTBEAT)
start_node = nodes.start
add_client = nodes.add_client


def U(g, u, ts=0, load=None):
    return {"type": "user", "group": g, "user": u, "timestamp": ts, "userload": load if load is not None else {}}


def seen(ev, g, u, lo, hi):
    return (isinstance(ev, dict) and set(ev) == {"type", "group", "user", "timestamp", "userload"} and ev["type"] == "user"
            and ev["group"] == g and ev["user"] == u and lo <= ev["timestamp"] <= hi)


async def scenarios(label, bases, creds):
    node = lambda i: bases[i % len(bases)]
    g = f"{'S' if len(bases) == 1 else 'T'}{int(time.time() * 1000) % 10 ** 7}"
    # 1. join: A and B see each other online.
    a = await Client(node(0), creds).open(); b = await Client(node(1), creds).open()
    check(f"{label} hello gives distinct user ids", a.user and b.user and a.user != b.user, (a.user, b.user))
    await a.send({"op": "join", "group": g + "J"})
    got = await a.settle(1)
    check(f"{label} 1 join: A's snapshot is A online", got == [U(g + "J", a.user)], got)
    await b.send({"op": "join", "group": g + "J"})
    got_b, got_a = await b.settle(2), await a.settle(1)
    check(f"{label} 1 join: A gets exactly B online", got_a == [U(g + "J", b.user)], got_a)
    check(f"{label} 1 join: B gets A and B online", sorted(got_b, key=lambda e: e["user"]) == sorted(
        [U(g + "J", a.user), U(g + "J", b.user)], key=lambda e: e["user"]), got_b)
    # 2. listen: C sees A, A hears nothing of C.
    c = await Client(node(1), creds).open()
    await c.send({"op": "listen", "group": g + "J"})
    got_c, got_a = await c.settle(2), await a.settle(0, quiet=0.8)
    check(f"{label} 2 listen: C gets A and B", sorted(got_c, key=lambda e: e["user"]) == sorted(
        [U(g + "J", a.user), U(g + "J", b.user)], key=lambda e: e["user"]), got_c)
    check(f"{label} 2 listen: A is not told of C", got_a == [], got_a)
    # 3. disconnect: A gets B's last-seen time; C (listening) too.
    t0 = int(time.time() * 1000)
    await b.close()
    got_a, got_c = await a.settle(1), await c.settle(1)
    t1 = int(time.time() * 1000)
    check(f"{label} 3 disconnect: A gets exactly B's last seen", len(got_a) == 1 and seen(got_a[0], g + "J", b.user, t0 - 5, t1), got_a)
    check(f"{label} 3 disconnect: the listener too", len(got_c) == 1 and seen(got_c[0], g + "J", b.user, t0 - 5, t1), got_c)
    last_b = got_a[0]["timestamp"] if got_a else None
    # A newcomer sees B with that last-seen time; B comes back with its id and is online again.
    d = await Client(node(0), creds).open()
    await d.send({"op": "listen", "group": g + "J"})
    got = await d.settle(2)
    check(f"{label} 3 newcomer sees B's last seen", U(g + "J", b.user, last_b) in got and U(g + "J", a.user) in got, got)
    b2 = await Client(node(0), creds).open(user=b.user)
    check(f"{label} stable user id on reconnect (other node, new token)", b2.user == b.user, (b2.user, b.user))
    await b2.send({"op": "join", "group": g + "J"}); await b2.settle(2)
    got = await a.settle(1)
    check(f"{label} 3 back online: A gets B online once", got == [U(g + "J", b.user)], got)
    # 4. update: B's userload reaches both groups B joined, not a group it only listens to.
    e = await Client(node(1), creds).open()
    await e.send({"op": "join", "group": g + "U"}); await e.settle(1)
    await b2.send({"op": "join", "group": g + "U"}); await b2.settle(2); await e.settle(1)
    await b2.send({"op": "listen", "group": g + "X"}); await b2.settle(0)
    x = await Client(node(0), creds).open(); await x.send({"op": "join", "group": g + "X"}); await x.settle(1)
    await a.settle(0, quiet=0.1)
    load = {"a": "A", "b": "B", "n": 1.5}
    await b2.send({"op": "update", "userload": load})
    got_a, got_e, got_x = await a.settle(1), await e.settle(1), await x.settle(0, quiet=0.3)
    check(f"{label} 4 update reaches group J exactly", got_a == [U(g + "J", b.user, 0, load)], got_a)
    check(f"{label} 4 update reaches group U exactly", got_e == [U(g + "U", b.user, 0, load)], got_e)
    check(f"{label} 4 update skips a group only listened to", got_x == [], got_x)
    # 5. post: to everyone in the group, kept for newcomers, only the author unposts.
    await b2.settle(0, quiet=0.1); await c.settle(0, quiet=0.1)
    before = int(time.time() * 1000)
    await a.send({"op": "post", "group": g + "J", "pid": "PID-1", "pidload": {"a": "A", "t": 1732430000.123456}})
    got_a, got_b2, got_c = await a.settle(1), await b2.settle(1), await c.settle(1)
    ev = got_b2[0] if got_b2 else {}
    check(f"{label} 5 post: seed shape", set(ev) == {"type", "group", "pid", "pidload", "timestamp", "user"} and ev["type"] == "post"
          and ev["user"] == a.user and ev["pidload"] == {"a": "A", "t": 1732430000.123456} and before - 5 <= ev["timestamp"], ev)
    check(f"{label} 5 post reaches author, member and listener once", got_a == [ev] and got_b2 == [ev] and got_c == [ev],
          (got_a, got_b2, got_c))
    n = await Client(node(1), creds).open(); await n.send({"op": "join", "group": g + "J"})
    got = await n.settle(4)
    check(f"{label} 5 newcomer gets the kept post", ev in got, got)
    await b2.send({"op": "unpost", "group": g + "J", "pid": "PID-1"})
    got = [e for e in await b2.settle(1) if e.get("type") != "user"]
    check(f"{label} 5 unpost by another user is an error", len(got) == 1 and got[0].get("type") == "error", got)
    await a.send({"op": "unpost", "group": g + "J", "pid": "PID-1"})
    # The unpost done: the kept posts (REST) no longer hold it; only then does the newcomer come.
    check(f"{label} 5 unpost by the author is done", await gone(node(0), creds, g + "J", "PID-1"))
    m = await Client(node(0), creds).open(); await m.send({"op": "listen", "group": g + "J"})
    got = await m.settle(3)
    check(f"{label} 5 unposted post no longer delivered", not any(e.get("type") == "post" for e in got), got)
    # One online and one offline event per user, however many connections (on both nodes).
    w = await Client(node(0), creds).open(); await w.send({"op": "join", "group": g + "M"}); await w.settle(1)
    k1 = await Client(node(0), creds).open(); k2 = await Client(node(1), creds).open(user=k1.user)
    await asyncio.gather(k1.send({"op": "join", "group": g + "M"}), k2.send({"op": "join", "group": g + "M"}))
    got = await w.settle(1, quiet=1.0)
    check(f"{label} one online event for two connections", got == [U(g + "M", k1.user)], got)
    await k1.close()
    got = await w.settle(0, quiet=1.5)
    check(f"{label} no offline while a connection remains", got == [], got)
    await k2.close()
    got = await w.settle(1)
    check(f"{label} one offline event after the last", len(got) == 1 and got[0]["user"] == k1.user and got[0]["timestamp"] > 0, got)
    # Bad input: an error event, the socket stays open.
    await w.send({"op": "join", "group": "a/b"})
    got = await w.settle(1)
    check(f"{label} bad group name answered with an error", len(got) == 1 and got[0].get("type") == "error", got)
    await w.send({"op": "post", "group": g + "M", "pid": "big", "pidload": {"x": "y" * 70000}})
    try:  # the hub closes the socket: wait for the close itself (a hang guard only)
        await asyncio.wait_for(w.ws.wait_closed(), 60)
    except asyncio.TimeoutError:
        pass
    check(f"{label} a frame over 64 KiB closes the socket with 1009", w.ws.close_code == 1009, w.ws.close_code)
    # A text frame that is not UTF-8: 1007 (invalid frame payload data), not 1009.
    u = await Client(node(0), creds).open()
    await u.ws.send(b'{"op":"join","group":"\xff\xfe"}', text=True)
    try:  # a hang guard only
        await asyncio.wait_for(u.ws.wait_closed(), 60)
    except asyncio.TimeoutError:
        pass
    check(f"{label} a text frame that is not UTF-8 closes the socket with 1007", u.ws.close_code == 1007, u.ws.close_code)
    for cl in (a, c, d, b2, e, x, n, m):
        await cl.close()


async def gone(base, creds, g, pid, guard=60.0):
    """Waits until group g's kept posts (REST) no longer hold pid; False after `guard` s (a hang guard)."""
    h = {"Authorization": "Bearer " + token(base, creds)}
    end = time.monotonic() + guard
    while time.monotonic() < end:
        posts = requests.get(f"{base}/v1/groups/{g}/posts?limit=100", headers=h, timeout=60).json()
        if posts.get("status") == "success" and not any(p.get("pid") == pid for p in posts.get("data", [])):
            return True
        await asyncio.sleep(0.02)
    return False


async def refused_upgrades(base):
    """The socket's upgrade needs a good Bearer token: none, a forged one, a revoked one -> HTTP 401 with a
    Bearer challenge, never a socket."""
    for label, headers in (("no token", {}), ("forged token", {"Authorization": "Bearer mha_" + "A" * 43}),
                           ("Basic credentials", {"Authorization": "Basic eDp5"})):
        try:
            ws = await websockets.connect(base.replace("http", "ws", 1) + "/v1/socket", additional_headers=headers, open_timeout=60)
            await ws.close()
            check(f"upgrade with {label} refused", False, "a socket was opened")
        except websockets.exceptions.InvalidStatus as e:
            r = e.response
            check(f"upgrade with {label} refused: 401 with a Bearer challenge",
                  r.status_code == 401 and (r.headers.get("WWW-Authenticate") or "").startswith("Bearer realm="), (r.status_code, dict(r.headers)))


async def revoked_upgrade(base, creds):
    tok = requests.post(base + "/oauth/token", data={"grant_type": "client_credentials"}, auth=creds, timeout=60).json()["access_token"]
    requests.post(base + "/oauth/revoke", data={"token": tok}, auth=creds, timeout=60)
    try:
        ws = await websockets.connect(base.replace("http", "ws", 1) + "/v1/socket", additional_headers={"Authorization": "Bearer " + tok},
                                      open_timeout=60)
        await ws.close()
        check("upgrade with a revoked token refused", False, "a socket was opened")
    except websockets.exceptions.InvalidStatus as e:
        r = e.response
        check("upgrade with a revoked token refused: 401 invalid_token",
              r.status_code == 401 and "invalid_token" in (r.headers.get("WWW-Authenticate") or ""), (r.status_code, dict(r.headers)))


async def kill_test(db, creds, p1, base1):
    g = f"K{int(time.time() * 1000) % 10 ** 7}"
    # The watcher first: its hello makes the client's user (on a fresh database, --only-kills) before the REST post.
    w = await Client(base1, creds).open(); await w.send({"op": "join", "group": g}); await w.settle(1)
    r = requests.post(f"{base1}/v1/groups/{g}/posts", json={"pid": "keep", "pidload": {"k": 1}},
                      headers={"Authorization": "Bearer " + requests.post(base1 + "/oauth/token", data={"grant_type": "client_credentials"},
                                                                         auth=creds, timeout=60).json()["access_token"]}, timeout=60)
    check("kill: the REST post before the kills is made", r.status_code == 201, (r.status_code, r.text))
    times = []
    for cycle in range(args.kills):
        p2, base2 = start_node(db, "n2")
        users = []
        for _ in range(3):
            c = await Client(base2, creds).open(); await c.send({"op": "join", "group": g}); users.append(c.user)
        got = await w.settle(3)
        check(f"kill {cycle + 1}: the 3 users on node 2 online for the watcher on node 1 before the kill",
              sum(1 for e in got if e.get("type") == "user" and e.get("user") in users and e.get("timestamp") == 0) == 3, got)
        p2.send_signal(signal.SIGKILL); p2.wait(); t0 = time.monotonic()
        pending = set(users)
        while pending and time.monotonic() - t0 < 10:
            for e in w.events:
                if e.get("type") == "user" and e.get("user") in pending and e.get("timestamp", 0) > 0:
                    pending.discard(e["user"])
            await asyncio.sleep(0.02)
        times.append(time.monotonic() - t0)
        w.events.clear()
        check(f"kill {cycle + 1}: the dead node's 3 users offline within two heartbeats ({times[-1]:.2f} s)",
              not pending and times[-1] <= 2 * HEARTBEAT + 0.3, pending)
    tok = requests.post(base1 + "/oauth/token", data={"grant_type": "client_credentials"}, auth=creds, timeout=60).json()["access_token"]
    mem = requests.get(f"{base1}/v1/groups/{g}/members?limit=1000", headers={"Authorization": "Bearer " + tok}, timeout=60).json()
    ghosts = [m for m in mem.get("data", []) if m.get("timestamp") == 0 and m.get("user") != w.user]
    check("no ghost online after the kills", mem.get("status") == "success" and not ghosts and len(mem["data"]) == 3 * args.kills + 1, mem)
    posts = requests.get(f"{base1}/v1/groups/{g}/posts", headers={"Authorization": "Bearer " + tok}, timeout=60).json()
    check("the post made before the kills is kept", r.status_code == 201 and any(p.get("pid") == "keep" for p in posts.get("data", [])), posts)
    await w.close()


async def main():
    if not args.only_kills:
        db = "sqlite:" + os.path.join(WORK, "hub.sqlite")
        creds = add_client(db)
        p, base = start_node(db, "solo")
        await scenarios("one-node ", [base], creds)
        await refused_upgrades(base)
        await revoked_upgrade(base, creds)
        p.terminate(); p.wait()
    if args.pg and args.only_kills:
        creds = add_client(args.pg)
        p1, base1 = start_node(args.pg, "n1")
        await kill_test(args.pg, creds, p1, base1)
    elif args.pg:
        creds = add_client(args.pg)
        p1, base1 = start_node(args.pg, "n1")
        p2, base2 = start_node(args.pg, "n2")
        await scenarios("two-nodes ", [base1, base2], creds)
        p2.terminate(); p2.wait()
        if args.kills > 0:
            await kill_test(args.pg, creds, p1, base1)


try:
    asyncio.run(main())
except BaseException:
    for line in nodes.error_lines():
        print(line, file=sys.stderr)
    raise
finally:
    nodes.stop_all()
check.finish()

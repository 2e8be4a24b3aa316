#!/usr/bin/env python3
"""Kill-and-restart cycles of a hub node, driven by WebSocket clients in Python (`websockets`).

Two `modem-hub serve` nodes share one PostgreSQL database, both with `--heartbeat 1`. Clients stay
connected on node 1 the whole time: a watcher W, a member K, and a user D who is also connected on
node 2 (same user id, two connections). Each cycle, three users A, B, C (the same ids every cycle,
presented again with `hello`) connect to node 2 and join; node 2 is killed with SIGKILL and restarted.
After each kill the survivor must tell W that A, B and C went offline, once each, within two
heartbeats, with a last-seen time within two heartbeats of the kill; K and D (still connected on
node 1) must not go offline. After the cycles no member is online who is not connected, and the posts
made before the first kill (by REST on node 1 and over the socket on node 2) are still kept.

"Within two heartbeats" is a real-time figure: the Swift suite HubNodesRealTimeTests runs this script alone
on the machine. Every other wait is for an event, bounded only by a hang guard (GUARD seconds); nodes
listen on ports the kernel picks (a restarted node 2 gets a new one).

usage: hub_ws_kill_cycles.py MODEM_HUB --pg URL [--cycles N] [--dir DIR]
Prints one line per check and a closing 'N passed, N failed'; exit 1 on any failure."""
import argparse, asyncio, json, os, signal, subprocess, sys, tempfile, time
import requests, websockets
from hub_ws_common import Checks, Client, Nodes, token

ap = argparse.ArgumentParser()
ap.add_argument("hub")
ap.add_argument("--pg", required=True)
ap.add_argument("--cycles", type=int, default=20)
ap.add_argument("--dir")
args = ap.parse_args()
WORK = args.dir or tempfile.mkdtemp(prefix="hub-kill-")
HEARTBEAT = 1.0
GUARD = 60.0  # seconds: hang guard of the waits for events that come in milliseconds
check = Checks()
nodes = Nodes(args.hub, WORK, HEARTBEAT)


def start_node(name):
    return nodes.start(args.pg, name)


def add_client():
    return nodes.add_client(args.pg, prefix="kill")


async def wait_for(pred, timeout, every=0.01):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        await asyncio.sleep(every)
    return pred()


def presence(events, g):
    return [e for e in events if e.get("type") == "user" and e.get("group") == g]


async def main():
    creds = add_client()
    p1, b1 = start_node("n1")
    p2, b2 = start_node("n2")
    g = f"KC{int(time.time() * 1000) % 10 ** 7}"
    h = {"Authorization": "Bearer " + token(b1, creds)}
    r = requests.post(f"{b1}/v1/groups/{g}/posts", json={"pid": "rest-keep", "pidload": {"k": 1}}, headers=h, timeout=60)
    check("REST post on node 1 before the kills", r.status_code == 201, r.text)

    w = await Client(b1, creds).open(); await w.join(g)
    k = await Client(b1, creds).open(); await k.join(g)
    d1 = await Client(b1, creds).open(); await d1.join(g)
    d2 = await Client(b2, creds).open(user=d1.user); await d2.join(g)
    stay = {w.user, k.user, d1.user}
    abc, ids = [], [None, None, None]
    late, wrong_seen, lost, dup, stayers_off, times = [], [], [], [], [], []
    socket_post = False
    for cycle in range(args.cycles):
        abc = [await Client(b2, creds).open(user=ids[i]) for i in range(3)]
        ids = [c.user for c in abc]
        for c in abc:
            await c.join(g)
        # Every one of them online for the watcher before the kill (once each; a stable id each cycle).
        ok = await wait_for(lambda: all(any(e["user"] == u and e["timestamp"] == 0 for e in presence(w.events, g)) for u in ids), GUARD)
        if not ok:
            check(f"cycle {cycle + 1}: A, B, C online on node 1 before the kill", False, presence(w.events, g))
        if cycle == 0:
            await abc[0].ws.send(json.dumps({"op": "post", "group": g, "pid": "ws-keep", "pidload": {"from": "node 2"}}))
            socket_post = await wait_for(lambda: any(e.get("type") == "post" and e.get("pid") == "ws-keep" for e in w.events), GUARD)
            check("socket post on node 2 reaches the watcher on node 1", socket_post, w.events[-5:])
        w.events.clear()
        kill_ms = int(time.time() * 1000)
        p2.send_signal(signal.SIGKILL); p2.wait(); t0 = time.monotonic()
        # The node is dead by now: no last-seen time can be later (on a busy machine this script may be
        # descheduled between reading the clock above and the kill, while the node still beats).
        dead_ms = int(time.time() * 1000)
        ok = await wait_for(lambda: all(any(e["user"] == u and e["timestamp"] > 0 for e in presence(w.events, g)) for u in ids), 10)
        dt = time.monotonic() - t0
        times.append(dt)
        if not ok:
            lost.append(cycle + 1)
        elif dt > 2 * HEARTBEAT + 0.3:  # two heartbeats, plus the polling and delivery of this script
            late.append(round(dt, 2))
        # A short quiet period: no second offline event, and nobody still connected on node 1 goes offline.
        await asyncio.sleep(0.2)
        ev = presence(w.events, g)
        offline = [e for e in ev if e["timestamp"] > 0]
        if sorted(e["user"] for e in offline if e["user"] in ids) != sorted(ids):
            dup.append((cycle + 1, [e["user"][-6:] for e in offline]))
        if any(e["user"] in stay for e in offline):
            stayers_off.append((cycle + 1, [e for e in offline if e["user"] in stay]))
        for e in offline:
            if e["user"] in ids and not (kill_ms - 2 * HEARTBEAT * 1000 <= e["timestamp"] <= dead_ms + 50):
                wrong_seen.append((cycle + 1, e["timestamp"] - kill_ms))
        for c in abc:
            await c.close()
        p2, b2 = start_node("n2")
    check(f"{args.cycles} kills: every time A, B and C went offline on the survivor", not lost, f"cycles {lost}")
    check(f"{args.cycles} kills: within two heartbeats (max {max(times):.2f} s, mean {sum(times) / len(times):.2f} s)",
          not late, late)
    check(f"{args.cycles} kills: last-seen times within two heartbeats before the kill", not wrong_seen, wrong_seen[:5])
    check(f"{args.cycles} kills: exactly one offline event per user per kill", not dup, dup[:5])
    check(f"{args.cycles} kills: users still connected on node 1 never went offline", not stayers_off, stayers_off[:3])
    off = [(round(t, 2), e["user"][-6:], e["timestamp"]) for t, e in w.all if e.get("type") == "user" and e.get("user") in stay and e["timestamp"] > 0]
    check("over all the cycles, no user connected on node 1 was ever marked offline", not off, off[:6])
    check("the connections on node 1 outlived the kills", not (w.closed or k.closed or d1.closed), (w.closed, k.closed, d1.closed))

    # After the cycles: A, B, C back on the restarted node 2; the online members are exactly those connected.
    abc = [await Client(b2, creds).open(user=ids[i]) for i in range(3)]
    for c in abc:
        await c.join(g)

    def members():
        m = requests.get(f"{b1}/v1/groups/{g}/members?limit=1000", headers={"Authorization": "Bearer " + token(b1, creds)}, timeout=60).json()
        return m, {x["user"] for x in m.get("data", []) if x.get("timestamp") == 0}, {x["user"] for x in m.get("data", [])}

    # Wait for the joins to be done (the online members reach the connected users; the check below says
    # whether they are exactly those), a hang guard only.
    await wait_for(lambda: members()[1] >= stay | set(ids), GUARD, every=0.05)
    m, online, everyone = members()
    check("online members are exactly the connected users", online == stay | set(ids), (sorted(online), sorted(stay | set(ids))))
    check("every user ever connected is still a member", everyone == stay | set(ids) and m.get("more") is False, m)
    # D's connection on node 2 died with the first kill: D must have stayed online throughout (node 1).
    for c in abc:
        await c.close()
    await k.close()
    ok = await wait_for(lambda: members()[1] == {w.user, d1.user}, GUARD, every=0.05)
    check("closing connections leaves only the connected online", ok, sorted(members()[1]))
    posts = requests.get(f"{b1}/v1/groups/{g}/posts", headers={"Authorization": "Bearer " + token(b1, creds)}, timeout=60).json()
    pids = {x.get("pid") for x in posts.get("data", [])}
    check("posts made before the kills survive them (REST on node 1, socket on node 2)", pids == {"rest-keep", "ws-keep"}, posts)
    n = await Client(b2, creds).open()
    await n.ws.send(json.dumps({"op": "listen", "group": g}))
    ok = await wait_for(lambda: {e.get("pid") for e in n.events if e.get("type") == "post"} == {"rest-keep", "ws-keep"}, GUARD)
    check("a newcomer on the restarted node receives both kept posts", ok, n.events)
    for c in (n, w, d1):
        await c.close()


try:
    asyncio.run(main())
finally:
    nodes.stop_all()
check.finish()

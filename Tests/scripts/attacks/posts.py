#!/usr/bin/env python3
"""Attack: the post flood (issue 32, defect 8), against a real `modem-hub serve`.

Flooders from 127.0.0.2 post until the bounds on kept posts refuse them (REST: 409 naming the bound;
the socket: an `error` event); nothing anyone kept is evicted. Beside them, from 127.0.0.1: an honest
poster, a late joiner that must get every post the group keeps (members first, then posts in order of
time and pid) and stay connected, and a slow joiner (it reads a frame every few ms, so the hub must wait
for it) that must not be cut off while the history is written, nor miss or repeat a post replaced while
it reads. The group keeps more posts (1,400 of ~8 KiB) than the old 1,024-frame queue held and far more
bytes than --max-socket-queue-bytes, and the slow joiner's receive buffer is small (so the kernel takes
little of it): a join that queued its history instead of writing it as the socket drains is cut off with 1008.
One flooder also invents groups (its posts in all groups together are bounded: 409 naming
max-posts-per-user), and another says hello without a user id again and again (new user ids are bounded
per address per hour: close 4029 naming devices-per-address-per-hour; an id given before still works).
Every result is decided on what arrived; the clocks here are hang guards only.

usage: posts.py MODEM_HUB [--dir DIR] [--pg URL]   (the hub venv's Python: requests, websockets)
Prints one line per check and 'N passed, M failed'; exit 1 when a check failed."""
import argparse, asyncio, base64, http.client, json, os, socket, subprocess, sys, tempfile, time
import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from script_checks import Checks, start_server  # noqa: E402

ATTACKER, HONEST = "127.0.0.2", "127.0.0.1"
PER_USER, PER_GROUP, QUEUE = 400, 1400, 65536
ALL_PER_USER = 1000   # --max-posts-per-user: one user's posts in all groups together
DEVICES_PER_HOUR = 12  # --devices-per-address-per-hour: new user ids (hello without one) per address
PAD = "x" * 8000  # ~8 KiB per post: the history is ~11 MB, 170 times the socket's queue bound and more
                  # than the kernel's buffers take, so the hub is still writing it when the burst below comes
LISTENING = "modem-hub: listening on 127.0.0.1:"

ap = argparse.ArgumentParser()
ap.add_argument("hub")
ap.add_argument("--dir", default=None)
ap.add_argument("--pg", default=None, help="a PostgreSQL database URL (default: SQLite in --dir)")
args = ap.parse_args()
work = args.dir or tempfile.mkdtemp(prefix="attack-posts-")
db = args.pg or f"sqlite:{work}/hub.sqlite"
check = Checks()


def add_client(name):
    out = subprocess.run([args.hub, "client", "add", f"{name}-{os.getpid()}-{time.time_ns()}", "--db", db],
                         capture_output=True, text=True, timeout=60)
    kv = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    if "client_id" not in kv:
        raise SystemExit(f"client add failed: {out.stdout} {out.stderr}")
    return kv["client_id"], kv["client_secret"]


clients = {n: add_client(n) for n in ["honest", "flood1", "flood2", "flood3", "reader"]}
log_path = os.path.join(work, "hub.log")
hub, port = start_server([args.hub, "serve", "--bcrypt-cost", "4", "--listen", "127.0.0.1:0", "--db", db, "--node", "attack-posts",
                          "--max-posts-per-user-per-group", str(PER_USER), "--max-posts-per-group", str(PER_GROUP),
                          "--max-socket-queue-bytes", str(QUEUE), "--max-posts-per-user", str(ALL_PER_USER),
                          "--devices-per-address-per-hour", str(DEVICES_PER_HOUR)], log_path, LISTENING)
base = f"http://127.0.0.1:{port}"


class Rest:
    """One keep-alive HTTP connection from a chosen local address, with a client-credentials token."""

    def __init__(self, source, creds):
        self.source, self.conn = source, None
        basic = base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode()
        s, body = self.call("POST", "/oauth/token", "grant_type=client_credentials",
                            {"Authorization": "Basic " + basic, "Content-Type": "application/x-www-form-urlencoded"})
        if s != 200:
            raise SystemExit(f"token from {source}: {s} {body}")
        self.token = json.loads(body)["access_token"]

    def call(self, method, path, body=None, headers=None):
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(self.source, 0))
            try:
                self.conn.request(method, path, body=body, headers=headers or {})
                r = self.conn.getresponse()
                return r.status, r.read().decode()
            except (http.client.HTTPException, ConnectionError):
                self.conn.close(); self.conn = None
                if attempt: raise

    def json(self, method, path, obj=None):
        h = {"Authorization": "Bearer " + self.token}
        if obj is not None: h["Content-Type"] = "application/json"
        s, body = self.call(method, path, json.dumps(obj) if obj is not None else None, h)
        return s, (json.loads(body) if body else None)

    def post(self, group, pid, load):
        return self.json("POST", f"/v1/groups/{group}/posts", {"pid": pid, "pidload": load})

    def all_posts(self, group):
        out, skip = [], 0
        while True:
            s, b = self.json("GET", f"/v1/groups/{group}/posts?limit=100&skip={skip}")
            items = b["data"]
            out += items
            if not b.get("more"): return out
            skip += len(items)


G = f"flood{os.getpid()}"
honest = Rest(HONEST, clients["honest"])
floods = [Rest(ATTACKER, clients[f"flood{i}"]) for i in (1, 2, 3)]

# 1. The honest poster keeps 300 posts; three flooders from 127.0.0.2 post 500 each.
honest_res = [honest.post(G, f"h{i:04d}", {"i": i, "pad": PAD}) for i in range(300)]
honest_ok = sum(s == 201 for s, _ in honest_res)
check("honest poster's 300 posts kept", honest_ok == 300, [(s, b) for s, b in honest_res if s != 201][:2])
results = []
for k, f in enumerate(floods, 1):
    results.append([f.post(G, f"f{k}-{i:04d}", {"i": i, "pad": PAD}) for i in range(450)])
accepted = [sum(s == 201 for s, _ in r) for r in results]
check("flooders of 450 posts each kept 400, 400 and 300 (per user, then per group)", accepted == [400, 400, 300], accepted)
refusals = [(s, b) for r in results for s, b in r if s != 201]
check("every refused post is a 409 JSend fail", refusals and all(s == 409 and b.get("status") == "fail" for s, b in refusals),
      {s for s, _ in refusals})
per_user = [b for s, b in results[0][400:]]
check("the refusal names the bound per user per group",
      all(b["data"].get("field") == "max-posts-per-user-per-group" and str(PER_USER) in b["data"]["message"] for b in per_user),
      [b.get("data", {}).get("field", b.get("data", {}).get("pid")) for b in per_user[:2]])
per_group = [b for s, b in results[2][300:]]
check("the refusal names the bound per group",
      all(b["data"].get("field") == "max-posts-per-group" and str(PER_GROUP) in b["data"]["message"] for b in per_group),
      [b.get("data", {}).get("field", b.get("data", {}).get("pid")) for b in per_group[:2]])
kept = honest.all_posts(G)
check(f"the group keeps exactly {PER_GROUP} posts, the honest poster's all there (nothing evicted)",
      len(kept) == PER_GROUP and sum(p["user"] == "client:" + clients["honest"][0] for p in kept) == 300, len(kept))
s, _ = honest.post(G, "h9999", {"new": True})
check("a new post in the full group is refused for everyone (409)", s == 409, s)
s, b = honest.post(G, "h0000", {"i": 0, "pad": PAD, "v": 2})
check("the honest poster may still replace its own post in the full group (200)", s == 200, (s, b))
s, _ = honest.post(G + "-other", "h0", {"i": 0})
check("and post in another group (201)", s == 201, s)


async def flood_socket():
    """A flooder over the socket: its post over the bound is answered with an `error` event."""
    ws = await websockets.connect(base.replace("http", "ws", 1) + "/v1/socket", open_timeout=30, local_addr=(ATTACKER, 0),
                                  additional_headers={"Authorization": "Bearer " + floods[0].token})
    await ws.send(json.dumps({"op": "hello"}))
    await ws.send(json.dumps({"op": "post", "group": G, "pid": "sock1", "pidload": {"x": 1}}))
    try:
        while True:
            e = json.loads(await asyncio.wait_for(ws.recv(), 120))  # a hang guard
            if e.get("type") == "error": return e
    finally:
        await ws.close()

err = asyncio.run(flood_socket())
check("a post over the bound on the socket gets an error event naming it",
      err.get("op") == "post" and "max-posts-per-group" in err.get("message", ""), err)

# 2. One account invents groups (a group exists as soon as someone posts to it): its posts in all groups
# together are bounded too. flood1 keeps 400 in G; 400 more in G-a, then 200 in G-b, then refused.
invented = []
for k in range(3):
    invented += [floods[0].post(f"{G}-inv{k}", f"i{i:04d}", {"i": i}) for i in range(PER_USER)]
inv_ok = sum(s == 201 for s, _ in invented)
check(f"one account in invented groups keeps {ALL_PER_USER} posts in all", inv_ok == ALL_PER_USER - PER_USER, inv_ok)
inv_refused = [b for s, b in invented if s != 201]
check("its posts over that are 409s naming max-posts-per-user",
      inv_refused and all(b.get("status") == "fail" and b["data"].get("field") == "max-posts-per-user"
                          and str(ALL_PER_USER) in b["data"]["message"] for b in inv_refused),
      [b.get("data") for b in inv_refused[:1]])
s, _ = floods[1].post(f"{G}-inv2", "other", {"x": 1})
check("another user may still post in those groups (201)", s == 201, s)


async def device_ids(creds_token, source, count):
    """Opens `count` sockets from `source` saying hello without a user id; the user ids given, the close
    of the first refused one, and whether a user id given before is still accepted."""
    given, refused = [], None
    for _ in range(count):
        ws = await websockets.connect(base.replace("http", "ws", 1) + "/v1/socket", open_timeout=30, local_addr=(source, 0),
                                      additional_headers={"Authorization": "Bearer " + creds_token})
        await ws.send(json.dumps({"op": "hello"}))
        try:
            e = json.loads(await asyncio.wait_for(ws.recv(), 120))  # a hang guard
            if e.get("type") == "hello":
                given.append(e["user"])
                await ws.close()
                continue
            await asyncio.wait_for(ws.wait_closed(), 120)
            refused = (e, ws.close_code, ws.close_reason)
        except websockets.ConnectionClosed as c:
            refused = (None, c.rcvd.code if c.rcvd else None, c.rcvd.reason if c.rcvd else "")
        break
    again = None
    if given:
        ws = await websockets.connect(base.replace("http", "ws", 1) + "/v1/socket", open_timeout=30, local_addr=(source, 0),
                                      additional_headers={"Authorization": "Bearer " + creds_token})
        await ws.send(json.dumps({"op": "hello", "user": given[0]}))
        again = json.loads(await asyncio.wait_for(ws.recv(), 120))
        await ws.close()
    return given, refused, again

# 3. New user ids (each one a new user with its own post bounds) bounded per address per hour: the
# attacker's address (one id given above already) gets the rest of its hour's ids, then a close 4029.
given, refused, again = asyncio.run(device_ids(floods[1].token, ATTACKER, DEVICES_PER_HOUR + 5))
check(f"an address gets {DEVICES_PER_HOUR} new user ids an hour", len(given) == DEVICES_PER_HOUR - 1, len(given))
check("the next hello is refused: a close 4029 naming devices-per-address-per-hour (after an error event, if one came)",
      refused is not None and refused[1] == 4029 and "devices-per-address-per-hour" in (refused[2] or "")
      and (refused[0] is None or refused[0].get("type") == "error"), refused)
check("a user id given before is still accepted from there", (again or {}).get("type") == "hello", again)


def order_key(e): return (e["timestamp"], e["pid"])


async def joiner(delay, replace_while_reading):
    """Joins G from 127.0.0.1 and reads until every kept post arrived (sleeping `delay` s per frame);
    optionally replaces one of the honest poster's posts three times while reading, and 20 others (160 KiB,
    more than the socket may hold) at once as soon as the history begins."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if delay: sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)  # the slow reader's kernel holds little
    sock.bind((HONEST, 0))
    sock.connect(("127.0.0.1", port))
    # No keepalive pings from the client: the hub's pong waits behind the history frames this reader has
    # not read yet, so on a busy machine the client's 20 s ping timeout closed the socket itself (and
    # the hub has its own idle deadline).
    ws = await websockets.connect(base.replace("http", "ws", 1) + "/v1/socket", open_timeout=30, max_size=None, max_queue=4, sock=sock,
                                  ping_interval=None,
                                  additional_headers={"Authorization": "Bearer " + Rest(HONEST, clients["reader"]).token})
    await ws.send(json.dumps({"op": "hello"}))
    await ws.send(json.dumps({"op": "join", "group": G}))
    events, closed, replaced = [], None, []
    deadline = time.monotonic() + 120  # a hang guard: the reads themselves take seconds
    try:
        while time.monotonic() < deadline:
            e = json.loads(await asyncio.wait_for(ws.recv(), deadline - time.monotonic()))
            if e.get("group") != G: continue
            events.append(e)
            posts = [x for x in events if x["type"] == "post"]
            if replace_while_reading and len(posts) == 1 and not replaced:
                # More bytes of live posts than the socket may hold, while its history is written: the
                # hub drops them from memory and reads them again from the store after the history.
                for k in range(20):
                    s, b = await asyncio.to_thread(honest.post, G, f"h{100 + k:04d}", {"i": 100 + k, "pad": PAD, "v": 2})
                    replaced.append(s)
            if replace_while_reading and len(posts) in (50, 400, 900):
                # Live traffic while the history is written: the joiner must end with the last version.
                s, b = await asyncio.to_thread(honest.post, G, "h0001", {"i": 1, "v": len(posts)})
                replaced.append(s)
            if len({(p["pid"]) for p in posts}) >= PER_GROUP and (not replace_while_reading or len(replaced) == 23):
                # Every pid seen: read a little longer for the replacements' live events.
                want = {p["pid"]: p for p in honest.all_posts(G)}
                last = {p["pid"]: p for p in posts}
                if all(last.get(k, {}).get("timestamp") == v["timestamp"] for k, v in want.items()): break
            if delay: await asyncio.sleep(delay)
    except websockets.ConnectionClosed as e:
        closed = (e.rcvd.code, e.rcvd.reason) if e.rcvd else "closed"
    except asyncio.TimeoutError:
        closed = "timed out"
    if closed is None:
        try: await ws.close()
        except Exception: pass
    return events, closed, replaced


def judge(name, events, closed, replaced):
    posts = [e for e in events if e["type"] == "post"]
    users = [e for e in events if e["type"] == "user"]
    want = {p["pid"]: p for p in honest.all_posts(G)}
    last = {}
    for p in posts: last[p["pid"]] = p
    check(f"{name}: not cut off", closed is None, closed)
    check(f"{name}: members came before the posts", bool(users and posts and events.index(users[0]) < events.index(posts[0])))
    check(f"{name}: got every post the group keeps ({len(want)}), none other", set(last) == set(want), (len(last), len(want)))
    check(f"{name}: each ends at its kept version (replacements live)",
          all(last.get(k, {}).get("timestamp") == v["timestamp"] and last[k]["pidload"] == v["pidload"] for k, v in want.items()))
    seen = [(p["pid"], p["timestamp"]) for p in posts]
    check(f"{name}: no post twice", len(seen) == len(set(seen)), len(seen) - len(set(seen)))
    moved = {"h0000", "h0001"} | {f"h{100 + k:04d}" for k in range(20)}  # replaced: their new versions come later
    history = [p for p in posts if p["pid"] not in moved]
    check(f"{name}: history in order of time and pid", all(order_key(a) < order_key(b) for a, b in zip(history, history[1:])))
    if replaced: check(f"{name}: the replacements while it read were accepted", replaced == [200] * 23, replaced)


# The joiners decide on what arrived; their clocks are hang guards only (how fast is not claimed here).
ev, closed, rep = asyncio.run(joiner(0, False))
judge("late joiner", ev, closed, rep)
ev, closed, rep = asyncio.run(joiner(0.003, True))
judge("slow joiner", ev, closed, rep)

hub.terminate()
try: hub.wait(10)
except subprocess.TimeoutExpired: hub.kill()
errors = [l for l in open(log_path, errors="replace") if " error " in l and "upgrade result" not in l]
check("the hub logged no errors", not errors, errors[-3:])
check.finish()

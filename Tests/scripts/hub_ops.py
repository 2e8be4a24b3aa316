#!/usr/bin/env python3
"""The hub in production, from outside: a real `modem-hub serve` (with its transit relay) driven by
clients in Python, its `GET /metrics` parsed with prometheus_client.

  metrics:  HTTP requests, a groups socket pair with a post, a REST post, a rendezvous socket with an
            allocated nameplate, a transit pair relaying bytes both ways and a waiting connection refused
            by --transit-max-waiting-per-address 1: each counter moved by exactly what was done, the
            gauges up while the connections are open and back to 0 after, labels bounded (route
            templates, not paths), and nothing secret or personal on the page (the client secret,
            tokens, user ids, group names).
  shutdown: a groups socket joined to a group, a rendezvous socket with a nameplate and a transit pair
            open, then SIGTERM: the hub exits 0 within a hang guard, the sockets are closed, and its log
            has no "transaction within a transaction" nor a failed clean stop; a hub started again on
            the same database shows the user offline.
  stalled:  clients that never answer the hub's close frame (a groups socket joined to a group and a
            rendezvous socket, raw TCP that stops reading) and `--shutdown-timeout 1`: SIGTERM ends the
            hub with exit 0 (within a hang guard, far from the 75 s the idle timeout would take), the
            stalled connections closed, and the groups' clean stop still marked the user offline.

Prints `ok|FAIL name` lines and `N passed, M failed`; exits 1 on a failure.

    hub_ops.py MODEM_HUB {metrics|shutdown|stalled} [--db URL]
"""
import argparse, asyncio, base64, json, os, select, signal, socket, subprocess, sys, tempfile, time
import requests, websockets
from prometheus_client.parser import text_string_to_metric_families
from script_checks import Checks

ap = argparse.ArgumentParser()
ap.add_argument("hub")
ap.add_argument("phase", choices=["metrics", "shutdown", "stalled"])
ap.add_argument("--db", help="database URL (default: a new SQLite file)")
args = ap.parse_args()
GUARD = 60.0  # seconds: a hang guard far above every expected time
check = Checks()
work = tempfile.mkdtemp(prefix="hub-ops-")
DB = args.db or "sqlite:" + os.path.join(work, "hub.sqlite")
LISTENING = "modem-hub: listening on 127.0.0.1:"
TRANSIT = "modem-hub: transit relay listening on 127.0.0.1:"


def start_hub(name, extra=()):
    """`modem-hub serve` on ports the kernel picks; waits (a hang guard) for both listening lines."""
    log = os.path.join(work, f"{name}.log")
    p = subprocess.Popen([args.hub, "serve", "--bcrypt-cost", "4", "--listen", "127.0.0.1:0", "--db", DB, "--node", name, "--heartbeat", "1",
                          "--transit-listen", "127.0.0.1:0", *extra], stdout=open(log, "w"), stderr=subprocess.STDOUT)
    end = time.monotonic() + GUARD
    ports = {}
    while time.monotonic() < end and p.poll() is None and len(ports) < 2:
        for line in open(log, errors="replace").read().split("\n")[:-1]:
            for key, marker in (("http", LISTENING), ("transit", TRANSIT)):
                if line.startswith(marker):
                    ports[key] = int(line[len(marker):])
        time.sleep(0.02)
    if len(ports) < 2:
        p.kill()
        raise SystemExit(f"modem-hub did not start: {open(log, errors='replace').read()[-800:]}")
    return p, ports["http"], ports["transit"], log


def add_client():
    out = subprocess.run([args.hub, "client", "add", f"ops-{os.getpid()}-{time.time_ns()}", "--db", DB],
                         capture_output=True, text=True, timeout=GUARD)
    kv = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    if "client_id" not in kv:
        raise SystemExit(f"client add failed: {out.stdout} {out.stderr}")
    return kv["client_id"], kv["client_secret"]


def token(base, creds):
    return requests.post(base + "/oauth/token", data={"grant_type": "client_credentials"}, auth=creds, timeout=GUARD).json()["access_token"]


def scrape(base):
    """The page's text and its samples {(name, frozenset(labels)): value}, parsed by prometheus_client."""
    r = requests.get(base + "/metrics", timeout=GUARD)
    samples = {}
    for fam in text_string_to_metric_families(r.text):
        for s in fam.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return r, samples


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


async def wait_for(pred, what):
    """Waits (a hang guard) until pred() is true; False if it never was."""
    end = time.monotonic() + GUARD
    while time.monotonic() < end:
        if pred():
            return True
        await asyncio.sleep(0.02)
    print(f"  (gave up waiting for {what})")
    return False


async def sigterm(proc, log):
    """SIGTERM to the hub, then its exit waited for on the event loop (so the clients answer its close
    frames meanwhile), bounded by the hang guard: (status or "hung", the hub's log)."""
    proc.send_signal(signal.SIGTERM)
    started = time.monotonic()
    if await wait_for(lambda: proc.poll() is not None, "the hub's exit"):
        status = proc.returncode
    else:
        proc.kill()
        status = "hung"
    print(f"  (stopped in {time.monotonic() - started:.2f} s)")
    return status, open(log, errors="replace").read()


class Socket:
    """A WebSocket client that keeps every JSON message it gets."""

    async def open(self, url, headers=None):
        self.ws = await websockets.connect(url, open_timeout=GUARD, additional_headers=headers or {})
        self.got, self.closed = [], False
        self.reader = asyncio.create_task(self._read())
        return self

    async def _read(self):
        try:
            async for m in self.ws:
                self.got.append(json.loads(m))
        except (websockets.ConnectionClosed, OSError):
            pass
        self.closed = True

    async def send(self, obj):
        await self.ws.send(json.dumps(obj))

    async def until(self, pred, what):
        ok = await wait_for(lambda: any(pred(m) for m in self.got), what)
        return next((m for m in self.got if pred(m)), None) if ok else None

    async def close(self):
        try:
            await asyncio.wait_for(self.ws.close(), GUARD)
        except Exception:
            pass


async def groups_socket(base, creds, group):
    s = await Socket().open(base.replace("http", "ws", 1) + "/v1/socket", {"Authorization": "Bearer " + token(base, creds)})
    await s.send({"op": "hello"})
    hello = await s.until(lambda m: m.get("type") == "hello", "hello")
    s.user = hello and hello["user"]
    await s.send({"op": "join", "group": group})
    await s.until(lambda m: m.get("type") == "user" and m.get("user") == s.user, "own presence")
    return s


async def rendezvous_socket(base):
    s = await Socket().open(base.replace("http", "ws", 1) + "/wormhole/v1")
    await s.until(lambda m: m.get("type") == "welcome", "welcome")
    await s.send({"type": "bind", "appid": "hub-ops", "side": "side-1"})
    await s.send({"type": "allocate"})
    allocated = await s.until(lambda m: m.get("type") == "allocated", "allocated")
    return s, allocated and allocated["nameplate"]


def transit_pair(port, tok):
    """Two transit connections of one token, answered ok."""
    a = socket.create_connection(("127.0.0.1", port), timeout=GUARD)
    b = socket.create_connection(("127.0.0.1", port), timeout=GUARD)
    a.sendall(f"please relay {tok} for side {'a' * 16}\n".encode())
    b.sendall(f"please relay {tok} for side {'b' * 16}\n".encode())
    return a, b, recv_exactly(a, 3), recv_exactly(b, 3)


def recv_exactly(s, n):
    got = b""
    while len(got) < n:
        chunk = s.recv(n - len(got))
        if not chunk:
            break
        got += chunk
    return got


async def metrics_phase():
    creds = add_client()
    proc, port, tport, log = start_hub("ops", ["--transit-max-waiting-per-address", "1"])
    base = f"http://127.0.0.1:{port}"
    try:
        r, before = scrape(base)
        check("metrics page is Prometheus text", r.status_code == 200 and r.headers["Content-Type"].startswith("text/plain; version=0.0.4"),
              r.headers)
        names = {n for (n, _) in before}
        for n in ["modemhub_websocket_connections", "modemhub_rendezvous_connections",
                  "modemhub_transit_relayed_bytes_total", "modemhub_wormhole_nameplates", "modemhub_transit_pairs",
                  "modemhub_database_errors_total", "modemhub_group_fanout_deliveries_total"]:
            check(f"family {n} present before traffic", n in names, sorted(names)[:40])

        check("requests counted from the first answer on", "modemhub_http_requests_total" in {n for (n, _) in scrape(base)[1]})
        # HTTP: probes, a refused request, a path no route has.
        h = requests.get(base + "/healthz", timeout=GUARD)
        # (the scrape above counted one /metrics request)
        check("healthz 200 ok", h.status_code == 200 and h.text == "ok\n", (h.status_code, h.text))
        ready = await wait_for(lambda: requests.get(base + "/readyz", timeout=GUARD).status_code == 200, "readyz 200")
        check("readyz 200 once the first heartbeat is written", ready, requests.get(base + "/readyz", timeout=GUARD).text)
        for _ in range(2):
            requests.get(base + "/v1/groups/room-ops/posts", timeout=GUARD)
        requests.get(base + "/no/such/path/ops-secret-path", timeout=GUARD)
        _, s = scrape(base)
        check("requests counted by route template and status",
              value(s, "modemhub_http_requests_total", method="GET", route="/healthz", status="200") == 1
              and value(s, "modemhub_http_requests_total", method="GET", route="/v1/groups/{group}/posts", status="401") == 2
              and value(s, "modemhub_http_requests_total", method="GET", route="NotFound", status="404") == 1,
              {k: v for k, v in s.items() if k[0] == "modemhub_http_requests_total"})
        check("request latency histogram counts them",
              value(s, "modemhub_http_request_duration_seconds_count", method="GET", route="/v1/groups/{group}/posts") == 2)

        # Groups: two sockets in one group, a post over the socket and one over REST.
        a = await groups_socket(base, creds, "room-ops")
        b = await groups_socket(base, creds, "room-ops")
        await a.send({"op": "post", "group": "room-ops", "pid": "p1", "pidload": {"text": "hi"}})
        got = await b.until(lambda m: m.get("type") == "post" and m.get("pid") == "p1", "the post on the other socket")
        rest = requests.post(base + "/v1/groups/room-ops/posts", timeout=GUARD, json={"pid": "p2", "pidload": {"text": "rest"}},
                             headers={"Authorization": "Bearer " + token(base, creds)})
        await b.until(lambda m: m.get("type") == "post" and m.get("pid") == "p2", "the REST post on a socket")
        _, s = scrape(base)
        check("groups sockets open: gauge 2, accepted 2",
              value(s, "modemhub_websocket_connections") == 2 and value(s, "modemhub_websocket_connections_accepted_total") == 2,
              (value(s, "modemhub_websocket_connections"), value(s, "modemhub_websocket_connections_accepted_total")))
        check("posts counted by way", got is not None and rest.status_code == 201
              and value(s, "modemhub_group_posts_total", via="socket") == 1 and value(s, "modemhub_group_posts_total", via="rest") == 1,
              (rest.status_code, {k: v for k, v in s.items() if k[0] == "modemhub_group_posts_total"}))
        deliveries = value(s, "modemhub_group_fanout_deliveries_total") or 0
        check("fan-out deliveries and their latency counted",
              deliveries >= 4 and (value(s, "modemhub_group_fanout_seconds_count") or 0) >= 2, deliveries)

        # Rendezvous: one socket with an allocated nameplate.
        w, nameplate = await rendezvous_socket(base)
        _, s = scrape(base)
        check("rendezvous socket open: gauge 1, accepted 1, a nameplate held",
              nameplate is not None and value(s, "modemhub_rendezvous_connections") == 1
              and value(s, "modemhub_rendezvous_connections_accepted_total") == 1 and value(s, "modemhub_wormhole_nameplates") == 1,
              (nameplate, value(s, "modemhub_rendezvous_connections"), value(s, "modemhub_wormhole_nameplates")))

        # Transit: a pair relaying 100,000 bytes each way, then a waiting connection over the bound.
        x, y, okx, oky = transit_pair(tport, "ab" * 32)
        size = 100_000
        x.sendall(os.urandom(size))
        y.sendall(os.urandom(size))
        gx, gy = recv_exactly(y, size), recv_exactly(x, size)
        _, s = scrape(base)
        check("transit pair relayed both ways", okx == oky == b"ok\n" and len(gx) == len(gy) == size, (okx, oky, len(gx), len(gy)))
        check("relayed bytes counted exactly", value(s, "modemhub_transit_relayed_bytes_total") == 2 * size,
              value(s, "modemhub_transit_relayed_bytes_total"))
        check("transit pair gauge 1, joined 1", value(s, "modemhub_transit_pairs") == 1 and value(s, "modemhub_transit_pairs_joined_total") == 1)
        c1 = socket.create_connection(("127.0.0.1", tport), timeout=GUARD)
        c1.sendall(b"please relay " + b"cd" * 32 + b" for side " + b"c" * 16 + b"\n")
        c2 = socket.create_connection(("127.0.0.1", tport), timeout=GUARD)
        c2.sendall(b"please relay " + b"ef" * 32 + b" for side " + b"e" * 16 + b"\n")
        # Whichever of the two the relay took second waits over --transit-max-waiting-per-address 1: it is
        # closed (EOF); the other waits on.
        readable, _, _ = select.select([c1, c2], [], [], GUARD)
        closed = len(readable) == 1 and readable[0].recv(1) == b""
        _, s = scrape(base)
        check("a refusal by a limit counted under its name",
              closed and value(s, "modemhub_limit_refusals_total", limit="transit-max-waiting-per-address") == 1,
              {k: v for k, v in s.items() if k[0] == "modemhub_limit_refusals_total"})
        check("transit connections accepted counted",
              (value(s, "modemhub_connections_accepted_total", listener="transit") or 0) >= 4
              and (value(s, "modemhub_connections_accepted_total", listener="http") or 0) >= 10)

        # Everything closed: the gauges come back to 0.
        for c in (x, y, c1, c2):
            c.close()
        for sock in (a, b, w):
            await sock.close()
        zero = await wait_for(lambda: all(value(scrape(base)[1], n) == 0 for n in
                                          ["modemhub_websocket_connections", "modemhub_rendezvous_connections", "modemhub_transit_pairs"]),
                              "gauges back to 0")
        check("gauges back to 0 once the connections closed", zero)

        # Nothing secret or personal on the page; labels bounded.
        page, s = scrape(base)
        text = page.text
        secrets = {"client secret": creds[1], "client id": creds[0], "user id": a.user or "?", "group name": "room-ops",
                   "raw path": "ops-secret-path", "nameplate": f'"{nameplate}"'}
        leaked = [k for k, v in secrets.items() if v and v in text]
        check("no secret, id, group name or raw path on the page", not leaked, leaked)
        routes = {dict(k[1]).get("route") for k in s if k[0] == "modemhub_http_requests_total"}
        check("route labels are templates", routes <= {"/healthz", "/readyz", "/metrics", "/v1/groups/{group}/posts", "NotFound",
                                                        "/oauth/token"}, routes)
        check("the hub still runs", proc.poll() is None)
    finally:
        proc.terminate()
        try:
            proc.wait(GUARD)
        except subprocess.TimeoutExpired:
            proc.kill()


async def shutdown_phase():
    creds = add_client()
    proc, port, tport, log = start_hub("stop")
    base = f"http://127.0.0.1:{port}"
    await wait_for(lambda: requests.get(base + "/readyz", timeout=GUARD).status_code == 200, "readyz 200")
    g = await groups_socket(base, creds, "room-stop")
    w, nameplate = await rendezvous_socket(base)
    x, y, okx, oky = transit_pair(tport, "12" * 32)
    x.sendall(b"in flight")
    check("sockets open before the stop", g.user is not None and nameplate is not None and okx == oky == b"ok\n")
    status, text = await sigterm(proc, log)
    check("SIGTERM: exit 0 within the hang guard", status == 0, f"{status}: {text[-1500:]}")
    closed = await wait_for(lambda: g.closed and w.closed, "sockets closed")
    check("the groups and rendezvous sockets were closed", closed, (g.closed, w.closed))
    check("the transit connections were closed", recv_exactly(y, 100) in (b"in flight", b"") and recv_exactly(x, 1) == b"")
    check("no 'transaction within a transaction' in the log", "transaction within a transaction" not in text, text[-1500:])
    bad = [l for l in text.splitlines() if "clean stop failed" in l or " error " in l or "critical" in l]
    check("no failed clean stop, no error in the log", not bad, bad[-5:])
    # The clean stop marked the user offline: a hub started again on the database shows it so.
    proc2, port2, _, _ = start_hub("stop-again")
    try:
        base2 = f"http://127.0.0.1:{port2}"
        members = requests.get(base2 + "/v1/groups/room-stop/members", timeout=GUARD,
                               headers={"Authorization": "Bearer " + token(base2, creds)}).json()
        row = next((m for m in members.get("data", []) if m.get("user") == g.user), None)
        check("the stopped hub's user is offline (a last-seen time, not 0)", row is not None and row.get("timestamp", 0) > 0, members)
    finally:
        proc2.terminate()
        proc2.wait(GUARD)


def raw_upgrade(port, path, headers=""):
    """A WebSocket upgrade on raw TCP (a client that will stop reading): the socket after the 101."""
    s = socket.create_connection(("127.0.0.1", port), timeout=GUARD)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{headers}\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            break
        head += chunk
    return s, head.split(b"\r\n")[0]


def send_text(s, obj):
    """One masked text frame (as a client must send)."""
    data, mask = json.dumps(obj).encode(), os.urandom(4)
    assert len(data) < 126
    s.sendall(bytes([0x81, 0x80 | len(data)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))


async def stalled_phase():
    creds = add_client()
    proc, port, _, log = start_hub("stall", ["--shutdown-timeout", "1"])
    base = f"http://127.0.0.1:{port}"
    await wait_for(lambda: requests.get(base + "/readyz", timeout=GUARD).status_code == 200, "readyz 200")
    g, g101 = raw_upgrade(port, "/v1/socket", f"Authorization: Bearer {token(base, creds)}\r\n")
    send_text(g, {"op": "hello"})
    send_text(g, {"op": "join", "group": "room-stall"})
    seen = b""
    while b'"type":"user"' not in seen:  # the hello, then its own presence in the group: joined
        chunk = g.recv(4096)
        if not chunk:
            break
        seen += chunk
    user = seen.split(b'"user":"')[1].split(b'"')[0].decode() if b'"user":"' in seen else None
    w, w101 = raw_upgrade(port, "/wormhole/v1")
    check("stalled clients upgraded and joined", g101.endswith(b"101 Switching Protocols") and w101.endswith(b"101 Switching Protocols")
          and user is not None, (g101, w101, seen[:200]))
    # From here on neither reads nor answers the close frame.
    status, text = await sigterm(proc, log)
    check("SIGTERM with stalled clients: exit 0 within the hang guard", status == 0, f"{status}: {text[-1500:]}")
    g.settimeout(GUARD)
    w.settimeout(GUARD)

    def drained(s):
        try:
            while s.recv(65536):
                pass
            return True
        except OSError:
            return True
    check("the stalled connections were closed", drained(g) and drained(w))
    check("no 'transaction within a transaction' in the log", "transaction within a transaction" not in text, text[-1500:])
    proc2, port2, _, _ = start_hub("stall-again")
    try:
        base2 = f"http://127.0.0.1:{port2}"
        members = requests.get(base2 + "/v1/groups/room-stall/members", timeout=GUARD,
                               headers={"Authorization": "Bearer " + token(base2, creds)}).json()
        row = next((m for m in members.get("data", []) if m.get("user") == user), None)
        check("the stalled client's user is offline after the stop", row is not None and row.get("timestamp", 0) > 0, members)
    finally:
        proc2.terminate()
        proc2.wait(GUARD)


asyncio.run({"metrics": metrics_phase, "shutdown": shutdown_phase, "stalled": stalled_phase}[args.phase]())
check.finish()

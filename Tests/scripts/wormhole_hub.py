#!/usr/bin/env python3
"""modem-hub's rendezvous and transit relay with `modem` by code and with hostile clients (standard
library only, besides the programs named):
  - `modem mailbox --listen|--to wormhole:CODE` through one hub (SQLite), fresh key folders: 100 chunks
    each way in order, END_USER_QUIT / END_OTHER_USER_QUIT; `modem send --to wormhole:CODE` to
    `modem receive --listen wormhole:CODE` with both --no-listen (a 1 MiB file through the relay);
  - hostile clients against the hub: unknown message types and bad JSON (errors, the connection goes on),
    a 1 MB message (the connection closed 1009), 10,000 allocations from one address (limited with the
    protocol's error), half-open transit handshakes; after each, a stock text still goes through;
  - with --postgres URL and --venv: two hub nodes on one database, stock senders on node 1, receivers on
    node 2: 10/10 texts, and `modem mailbox` by code across the nodes.
Prints `ok|FAIL name` lines and `N passed, M failed`; exits 1 on a failure.

    wormhole_hub.py MODEM_HUB MODEM [--venv VENV_BIN] [--postgres URL]
"""
from script_checks import Checks, stop_all
import argparse, base64, shutil, filecmp, json, os, re, socket, subprocess, sys, tempfile, threading, time

ap = argparse.ArgumentParser()
ap.add_argument("hub")
ap.add_argument("modem")
ap.add_argument("--venv")
ap.add_argument("--postgres")
args = ap.parse_args()
GUARD = 120
check = Checks()
work = tempfile.mkdtemp(prefix="wormhole-hub-")
procs = []


def start_hub(name, *extra):
    log = os.path.join(work, f"{name}.log")
    p = subprocess.Popen([args.hub, "serve", "--bcrypt-cost", "4", "--listen", "127.0.0.1:0", "--transit-listen", "127.0.0.1:0", *extra],
                         stdout=open(log, "w"), stderr=subprocess.STDOUT)
    procs.append(p)
    end = time.monotonic() + GUARD
    while time.monotonic() < end and p.poll() is None:
        text = open(log, errors="replace").read()
        h, t = re.search(r"modem-hub: listening on 127\.0\.0\.1:(\d+)", text), re.search(r"transit relay listening on 127\.0\.0\.1:(\d+)", text)
        if h and t:
            return p, int(h.group(1)), int(t.group(1))
        time.sleep(0.05)
    raise SystemExit(f"modem-hub {name} did not start: {open(log).read()[-600:]}")


class WS:
    """A minimal WebSocket client (RFC 6455, text frames) for hostile tests, from 127.0.0.2: every address
    counts in the hub's limits per address, so the honest clients (127.0.0.1) keep their own share."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=("127.0.0.2", 0))
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(f"GET /wormhole/v1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.s.recv(4096)
            if not chunk:
                raise ConnectionError("closed during the upgrade")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError(head[:80])

    def send(self, obj_or_text):
        data = (obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text)).encode()
        mask = os.urandom(4)
        n = len(data)
        hdr = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big") if n < 65536
                               else bytes([0x80 | 127]) + n.to_bytes(8, "big"))
        self.s.sendall(hdr + mask + bytes(b ^ mask[i & 3] for i, b in enumerate(data)))

    def _need(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk

    def recv(self):
        """The next text message as JSON, or ('close', code)."""
        while True:
            self._need(2)
            op, n = self.buf[0] & 15, self.buf[1] & 127
            off = 2
            if n == 126:
                self._need(4); n = int.from_bytes(self.buf[2:4], "big"); off = 4
            elif n == 127:
                self._need(10); n = int.from_bytes(self.buf[2:10], "big"); off = 10
            self._need(off + n)
            payload, self.buf = self.buf[off:off + n], self.buf[off + n:]
            if op == 8:
                return ("close", int.from_bytes(payload[:2], "big") if len(payload) >= 2 else None)
            if op == 1:
                return json.loads(payload)

    def until(self, mtype):
        """Messages until one of `mtype` (or an error, or a close); that one."""
        while True:
            m = self.recv()
            if isinstance(m, tuple) or m.get("type") in (mtype, "error"):
                return m

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


def mailbox_by_code(port, tport, code, name):
    """Two `modem mailbox` processes by code; (in order, quit reasons right, detail)."""
    d = os.path.join(work, name)
    os.makedirs(d)
    common = ["--relay-url", f"ws://127.0.0.1:{port[0]}/wormhole/v1", "--transit-helper", f"tcp:127.0.0.1:{tport[0]}"]
    common_b = ["--relay-url", f"ws://127.0.0.1:{port[1]}/wormhole/v1", "--transit-helper", f"tcp:127.0.0.1:{tport[1]}"]
    alice = subprocess.Popen([args.modem, "mailbox", "--listen", f"wormhole:{code}", *common, "--name", "alice", "--keys", os.path.join(d, "ka")],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(os.path.join(d, "a.err"), "w"), text=True)
    bob = subprocess.Popen([args.modem, "mailbox", "--to", f"wormhole:{code}", *common_b, "--name", "bob", "--keys", os.path.join(d, "kb")],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(os.path.join(d, "b.err"), "w"), text=True)
    procs.extend([alice, bob])
    a_in, b_in = [f"from alice {i}" for i in range(1, 101)], [f"from bob {i}" for i in range(1, 101)]
    alice.stdin.write("".join(x + "\n" for x in a_in)); alice.stdin.flush()
    bob.stdin.write("".join(x + "\n" for x in b_in)); bob.stdin.flush()
    b_out = [bob.stdout.readline().rstrip("\n") for _ in range(100)]
    bob.stdin.close()
    a_out = alice.stdout.read().splitlines()
    alice.wait(GUARD); bob.wait(GUARD); alice.stdin.close()
    a_err, b_err = open(os.path.join(d, "a.err")).read(), open(os.path.join(d, "b.err")).read()
    quit_ok = "END_USER_QUIT" in b_err and "END_OTHER_USER_QUIT" in a_err and bob.returncode == 0 and alice.returncode == 0
    return a_out == b_in and b_out == a_in, quit_ok, (len(a_out), len(b_out), bob.returncode, alice.returncode, a_err[-300:], b_err[-300:])


def stock_text(relay_send, relay_recv, code):
    wormhole = os.path.join(args.venv, "wormhole")
    msg = f"text {code} {os.urandom(4).hex()}"
    s = subprocess.Popen([wormhole, "--relay-url", relay_send, "send", "--hide-progress", "--code", code, "--text", msg],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    r = subprocess.run([wormhole, "--relay-url", relay_recv, "receive", "--only-text", code], capture_output=True, text=True, timeout=GUARD)
    _, serr = s.communicate(timeout=GUARD)
    return r.returncode == 0 and s.returncode == 0 and r.stdout.strip() == msg, (r.returncode, s.returncode, r.stderr[-200:], serr[-200:])


try:
    hub, port, tport = start_hub("one", "--db", "sqlite:" + os.path.join(work, "hub.sqlite"))
    relay = f"ws://127.0.0.1:{port}/wormhole/v1"
    ordered, quits, detail = mailbox_by_code((port, port), (tport, tport), "7-guitarist-revenge", "mb1")
    check("modem mailbox by code through modem-hub, fresh keys: 100 chunks each way in order", ordered, detail)
    check("mailbox by code: bob END_USER_QUIT, alice END_OTHER_USER_QUIT, both exit 0", quits, detail)
    # A data connection by code, both sides --no-listen: through the hub's transit relay.
    d = os.path.join(work, "data")
    os.makedirs(os.path.join(d, "in"))
    src = os.path.join(d, "blob.bin")
    open(src, "wb").write(os.urandom(1 << 20))
    common = ["--relay-url", relay, "--transit-helper", f"tcp:127.0.0.1:{tport}", "--no-listen"]
    rx = subprocess.Popen([args.modem, "receive", "--listen", "wormhole:8-data-by-code", *common, "--dir", os.path.join(d, "in"),
                           "--accept-all", "--keys", os.path.join(d, "kr")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs.append(rx)
    tx = subprocess.run([args.modem, "send", "--to", "wormhole:8-data-by-code", *common, "--keys", os.path.join(d, "ks"), src],
                        capture_output=True, text=True, timeout=GUARD)
    rout, rerr = rx.communicate(timeout=GUARD)
    got = os.path.join(d, "in", "blob.bin")
    check("modem send --to wormhole:CODE -> modem receive --listen wormhole:CODE, 1 MiB through the relay, exact",
          tx.returncode == 0 and rx.returncode == 0 and os.path.exists(got) and filecmp.cmp(src, got, shallow=False),
          (tx.returncode, rx.returncode, tx.stderr[-300:], rerr[-300:]))
    # Resume by code: the receiver killed once 16 MiB of a 200 MiB file are in its partial file; a new
    # session by another code resumes from the verified blocks and the file arrives whole.
    d = os.path.join(work, "resume")
    os.makedirs(os.path.join(d, "in"))
    src = os.path.join(d, "resume.bin")
    with open(src, "wb") as f:
        f.write(os.urandom(200 << 20))
    common = ["--relay-url", relay, "--transit-helper", f"tcp:127.0.0.1:{tport}"]
    def receiver(code):
        p = subprocess.Popen([args.modem, "receive", "--listen", f"wormhole:{code}", *common, "--dir", os.path.join(d, "in"),
                              "--accept-all", "--keys", os.path.join(d, "kr")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(p)
        return p
    rx = receiver("10-resume-first")
    tx = subprocess.Popen([args.modem, "send", "--to", "wormhole:10-resume-first", *common, "--keys", os.path.join(d, "ks"), src],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    partial, killed, end = os.path.join(d, "in", ".modem-partial"), False, time.monotonic() + GUARD
    while not killed and time.monotonic() < end and rx.poll() is None:
        for name in (os.listdir(partial) if os.path.isdir(partial) else []):
            try:
                if name.endswith(".part") and os.path.getsize(os.path.join(partial, name)) > 16 << 20:
                    rx.kill(); killed = True
                    break
            except OSError:
                pass
        time.sleep(0.005)
    rx.wait(GUARD)
    _, cut_err = tx.communicate(timeout=GUARD)
    rx = receiver("11-resume-again")
    again = subprocess.run([args.modem, "send", "--to", "wormhole:11-resume-again", *common, "--keys", os.path.join(d, "ks"), src],
                           capture_output=True, text=True, timeout=GUARD)
    rx.communicate(timeout=GUARD)
    got = os.path.join(d, "in", "resume.bin")
    check("a data connection by code cut mid-file (receiver killed at 16 MiB) resumes by a new code, the file whole",
          killed and tx.returncode != 0 and again.returncode == 0 and "resume.bin: resumed, " in again.stderr and os.path.exists(got)
          and filecmp.cmp(src, got, shallow=False), (killed, tx.returncode, again.returncode, cut_err[-200:], again.stderr[-300:]))
    os.unlink(src)
    # Hostile clients.
    w = WS(port)
    w.until("welcome")
    w.send({"type": "bind", "appid": "hostile", "side": "h1"})
    w.send({"type": "frobnicate", "id": "1"})
    e1 = w.until("error")
    w.send("this is not json")
    e2 = w.until("error")
    w.send({"type": "ping", "ping": 7})
    p = w.until("pong")
    check("an unknown message type and bad JSON: protocol errors, the connection goes on (pong)",
          isinstance(e1, dict) and e1.get("error") == "unknown type" and isinstance(e2, dict) and e2.get("type") == "error"
          and isinstance(p, dict) and p.get("pong") == 7, (e1, e2, p))
    w.close()
    w = WS(port)
    w.until("welcome")
    try:
        w.send({"type": "bind", "appid": "x" * 1_000_000, "side": "s"})
        big = w.until("nothing")
    except (ConnectionError, OSError) as e:
        big = ("closed", str(e))
    check("a 1 MB message: the connection is closed (1009, too large)", isinstance(big, tuple), big)
    w.close()
    held, refused = [], None
    for i in range(80):
        c = WS(port)
        c.until("welcome")
        c.send({"type": "bind", "appid": "flood", "side": f"s{i}"})
        c.send({"type": "allocate"})
        m = c.until("allocated")
        held.append(c)
        if m.get("type") == "error":
            refused = (i, m.get("error"))
            break
    for c in held:
        c.close()
    check("allocations held at once from one address are limited with the protocol's error", refused is not None
          and "too many" in refused[1], refused)
    t0, limited, n = time.monotonic(), None, 0
    while n < 10_000 and time.monotonic() - t0 < 90:
        c = WS(port)
        c.until("welcome")
        c.send({"type": "bind", "appid": "flood2", "side": f"t{n}"})
        c.send({"type": "allocate"})
        m = c.until("allocated")
        c.close()
        n += 1
        if m.get("type") == "error":
            limited = (n, m.get("error"))
            break
    check("allocation after allocation from one address: limited with the protocol's error long before 10,000",
          limited is not None and limited[0] <= 1000 and "too many" in limited[1], (n, limited))
    # Half-open transit handshakes: 300 connections that send half a line and wait.
    half = []
    for i in range(300):
        try:
            s = socket.create_connection(("127.0.0.1", tport), timeout=10, source_address=("127.0.0.2", 0))
            s.sendall(b"please relay " + b"ab" * 16)
            half.append(s)
        except OSError:
            break
    if args.venv:
        ok, why = stock_text(relay, relay, "77-purple-sausages")
        check("after the floods, with 300 half-open transit handshakes held, a stock text still goes through", ok, why)
    for s in half:
        s.close()
    check("the hub still runs after the hostile clients", hub.poll() is None, hub.returncode)
    if args.postgres and args.venv:
        n1, p1, t1 = start_hub("n1", "--db", args.postgres, "--node", "n1", "--heartbeat", "5")
        n2, p2, t2 = start_hub("n2", "--db", args.postgres, "--node", "n2", "--heartbeat", "5")
        exact = 0
        for i in range(10):
            ok, why = stock_text(f"ws://127.0.0.1:{p1}/wormhole/v1", f"ws://127.0.0.1:{p2}/wormhole/v1", f"{500 + i}-purple-sausages")
            exact += ok
        check("two hub nodes on PostgreSQL: stock sender on node 1, receiver on node 2, 10/10 texts", exact == 10, f"{exact}/10 {why}")
        ordered, quits, detail = mailbox_by_code((p1, p2), (t1, t2), "9-across-nodes", "mb2")
        check("modem mailbox by code across two PostgreSQL nodes: 100 chunks each way, quit reasons right", ordered and quits, detail)
finally:
    stop_all(procs)
    shutil.rmtree(work, ignore_errors=True)
check.finish()

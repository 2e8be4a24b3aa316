"""What the hub's WebSocket test scripts share: checks with a closing count, `modem-hub` nodes started
and stopped, OAuth clients and tokens, and a socket client that keeps every event it receives."""
import asyncio, json, os, subprocess, sys, time
import requests, websockets
from script_checks import Checks  # noqa: F401 (the scripts take it from here)


LISTENING = "modem-hub: listening on 127.0.0.1:"
START_GUARD = 120.0  # seconds: a hang guard for a node's start, far above the second or so it takes


class Nodes:
    """`modem-hub serve` processes, their logs in `work`; all killed by stop_all()."""

    def __init__(self, hub, work, heartbeat=1.0):
        self.hub, self.work, self.heartbeat, self.procs = hub, work, heartbeat, []

    def start(self, db, name):
        """Starts a node on a port the kernel picks (`--listen 127.0.0.1:0`) and waits for its
        'modem-hub: listening on 127.0.0.1:PORT' line (written once it accepts connections)."""
        path = os.path.join(self.work, f"{name}.{time.time_ns()}.log")
        log = open(path, "a")
        # Every client here connects from 127.0.0.1, which the hub counts as one address like any other:
        # the cap per address is raised for the many sockets of these runs.
        p = subprocess.Popen([self.hub, "serve", "--bcrypt-cost", "4", "--listen", "127.0.0.1:0", "--db", db, "--node", name,
                              "--heartbeat", str(int(self.heartbeat)), "--max-connections-per-address", "5000"],
                             stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.procs.append(p)
        end = time.monotonic() + START_GUARD
        while time.monotonic() < end and p.poll() is None:
            with open(path) as f:
                lines = f.read().split("\n")[:-1]  # whole lines only
            for line in lines:
                if line.startswith(LISTENING):
                    return p, f"http://127.0.0.1:{int(line[len(LISTENING):])}"
            time.sleep(0.02)
        why = f"exited with {p.returncode}" if p.poll() is not None else f"no listening line within {START_GUARD} s"
        raise SystemExit(f"modem-hub {name} did not start ({why}); log: {open(path).read()[-600:]}")

    def add_client(self, db, prefix="ws"):
        out = subprocess.run([self.hub, "client", "add", f"{prefix}-{os.getpid()}-{time.time_ns()}", "--db", db],
                             capture_output=True, text=True, timeout=60)
        kv = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
        if "client_id" not in kv:
            raise SystemExit(f"client add failed: {out.stdout} {out.stderr}")
        return kv["client_id"], kv["client_secret"]

    def error_lines(self, limit=20):
        """The nodes' logged errors (the refused upgrades' expected ones left out), for a failed run."""
        out = []
        for name in sorted(os.listdir(self.work)):
            if name.endswith(".log"):
                with open(os.path.join(self.work, name), errors="replace") as f:
                    out += [f"{name}: {l.rstrip()}" for l in f if " error " in l and "upgrade result" not in l]
        return out[-limit:]

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()


def token(base, creds):
    return requests.post(base + "/oauth/token", data={"grant_type": "client_credentials"}, auth=creds, timeout=60).json()["access_token"]


class Client:
    """A `/v1/socket` client: `events` since the last settle/clear, `all` (with arrival times) forever."""

    def __init__(self, base, creds):
        self.base, self.creds, self.events, self.all, self.user, self.closed = base, creds, [], [], None, False

    async def open(self, user=None):
        self.ws = await websockets.connect(self.base.replace("http", "ws", 1) + "/v1/socket", open_timeout=60,
                                           additional_headers={"Authorization": "Bearer " + token(self.base, self.creds)})
        self.reader = asyncio.create_task(self._read())
        await self.send({"op": "hello", **({"user": user} if user else {})})
        hello = await self.wait(lambda e: e.get("type") == "hello", 60)
        if not hello:
            raise SystemExit(f"no hello from {self.base}: {self.events}")
        self.user = hello["user"]
        self.events.clear()
        return self

    async def _read(self):
        try:
            async for m in self.ws:
                self.events.append(json.loads(m))
                self.all.append((time.time(), self.events[-1]))
        except (websockets.ConnectionClosed, OSError):
            pass
        self.closed = True

    async def send(self, obj):
        await self.ws.send(json.dumps(obj))

    async def join(self, g):
        await self.send({"op": "join", "group": g})

    async def wait(self, pred, timeout=30.0):
        """The first event so far satisfying pred, waiting for it up to `timeout` s (a hang guard); None if none came."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for e in self.events:
                if pred(e):
                    return e
            await asyncio.sleep(0.01)
        return None

    async def settle(self, n, timeout=30.0, quiet=0.4):
        """Waits for at least n events (up to `timeout` s: a hang guard, only reached when fewer come), then a
        quiet period in which events that should not come would show; returns and clears them."""
        end = time.monotonic() + timeout
        while len(self.events) < n and time.monotonic() < end:
            await asyncio.sleep(0.01)
        await asyncio.sleep(quiet)
        got, self.events = self.events, []
        return got

    async def close(self):
        try:
            await asyncio.wait_for(self.ws.close(), 5)
        except Exception:
            pass
        self.reader.cancel()

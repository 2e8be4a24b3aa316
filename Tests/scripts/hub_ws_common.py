"""What the hub's WebSocket test scripts share: checks with a closing count, `modem-hub` nodes started
and stopped, OAuth clients and tokens, and a socket client that keeps every event it receives."""
import asyncio, json, os, socket, subprocess, sys, time
import requests, websockets


class Checks:
    """One printed line per check ('ok   NAME' / 'FAIL NAME: detail') and a closing count."""

    def __init__(self):
        self.passed, self.failed = 0, []

    def __call__(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok   {name}", flush=True)
        else:
            self.failed.append(name)
            print(f"FAIL {name}: {str(detail)[:400]}", flush=True)

    def finish(self):
        print(f"{self.passed} passed, {len(self.failed)} failed")
        sys.exit(1 if self.failed else 0)


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


class Nodes:
    """`modem-hub serve` processes, their logs in `work`; all killed by stop_all()."""

    def __init__(self, hub, work, heartbeat=1.0):
        self.hub, self.work, self.heartbeat, self.procs = hub, work, heartbeat, []

    def start(self, db, name, port=None):
        port = port or free_port()
        path = os.path.join(self.work, f"{name}.log")
        log = open(path, "a")
        p = subprocess.Popen([self.hub, "serve", "--listen", f"127.0.0.1:{port}", "--db", db, "--node", name,
                              "--heartbeat", str(int(self.heartbeat))], stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(p)
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if requests.get(base + "/.well-known/oauth-authorization-server", timeout=1).ok:
                    return p, base
            except requests.RequestException:
                pass
            if p.poll() is not None:
                break
            time.sleep(0.05)
        raise SystemExit(f"modem-hub {name} did not start; log: {open(path).read()[-600:]}")

    def add_client(self, db, prefix="ws"):
        out = subprocess.run([self.hub, "client", "add", f"{prefix}-{os.getpid()}-{time.time_ns()}", "--db", db],
                             capture_output=True, text=True, timeout=60)
        kv = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
        if "client_id" not in kv:
            raise SystemExit(f"client add failed: {out.stdout} {out.stderr}")
        return kv["client_id"], kv["client_secret"]

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()


def token(base, creds):
    return requests.post(base + "/oauth/token", data={"grant_type": "client_credentials"}, auth=creds, timeout=10).json()["access_token"]


class Client:
    """A `/v1/socket` client: `events` since the last settle/clear, `all` (with arrival times) forever."""

    def __init__(self, base, creds):
        self.base, self.creds, self.events, self.all, self.user, self.closed = base, creds, [], [], None, False

    async def open(self, user=None):
        self.ws = await websockets.connect(self.base.replace("http", "ws", 1) + "/v1/socket", open_timeout=10,
                                           additional_headers={"Authorization": "Bearer " + token(self.base, self.creds)})
        self.reader = asyncio.create_task(self._read())
        await self.send({"op": "hello", **({"user": user} if user else {})})
        hello = await self.wait(lambda e: e.get("type") == "hello", 10)
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

    async def wait(self, pred, timeout=3.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for e in self.events:
                if pred(e):
                    return e
            await asyncio.sleep(0.01)
        return None

    async def settle(self, n, timeout=3.0, quiet=0.4):
        """Waits for at least n events, then a quiet period; returns and clears them."""
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

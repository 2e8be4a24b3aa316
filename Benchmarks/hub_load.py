#!/usr/bin/env python3
"""Fan-out latency of modem-hub's groups, and of an MQTT broker carrying the same fan-out.

Hub: N WebSocket members in G groups (joined), one listening poster per group posting once a second for
S seconds (N deliveries/s). Latency = arrival time - the poster's clock carried in pidload (same
machine). Members and posters alternate between BASE_A and BASE_B.
MQTT (--mqtt): N subscribers on G topics, one publisher per topic (also subscribed, as the hub's
poster listens and gets its own post) publishing once a second for S seconds, QoS 0, the same
payload and clock; MQTT 3.1.1 through aiomqtt (paho-mqtt underneath).

usage: hub_load.py BASE_A BASE_B CLIENT_ID CLIENT_SECRET [N=1000] [G=100] [S=20]
       hub_load.py --mqtt HOST:PORT [N=1000] [G=100] [S=20]
Python: websockets, requests, aiomqtt (scripts/hub-venv.sh). Raise `ulimit -n` first. Prints one JSON line;
with HUB_LOAD_DUMP=FILE also writes one "send-time latency-ms" line per delivery (to find when the tail happens)."""
import asyncio, json, os, sys, time

mqtt = len(sys.argv) > 2 and sys.argv[1] == "--mqtt"
args = sys.argv[3:] if mqtt else sys.argv[5:]
if (not mqtt and len(sys.argv) < 5) or len(args) > 3:
    sys.exit(__doc__.split("\n\n")[-1])
n, groups, seconds = (int(x) for x in (args + ["1000", "100", "20"][len(args):]))
latencies = []
samples = []  # (send time, latency ms) for HUB_LOAD_DUMP
run = f"r{int(time.time()) % 100000}"  # fresh group names: kept posts of earlier runs belong to other users


def report(name, sent, start):
    if os.environ.get("HUB_LOAD_DUMP"):
        with open(os.environ["HUB_LOAD_DUMP"], "w") as f:
            f.writelines("%.3f %.1f\n" % (t, ms) for t, ms in samples)
    lat = sorted(latencies)
    pick = lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))], 1) if lat else None
    print(json.dumps({"server": name, "clients": n, "groups": groups, "posts": sent, "expected": sent * (n // groups),
                      "delivered": len(lat), "p50ms": pick(0.5), "p99ms": pick(0.99),
                      "maxms": round(lat[-1], 1) if lat else None, "seconds": round(time.time() - start, 1)}), flush=True)


def record(sent):
    ms = (time.time() - sent) * 1000
    latencies.append(ms)
    samples.append((sent, ms))


async def pace(posters, publish):
    """One post per group per second, spread evenly over the second; returns how many were sent."""
    sent = 0
    for k in range(seconds):
        for g, p in enumerate(posters):
            await publish(p, g, k, json.dumps({"sent": time.time()}))
            sent += 1
            await asyncio.sleep(0.98 / groups)
    return sent


async def hub_main(a, b, cid, secret):
    import requests, websockets
    token = requests.post(a + "/oauth/token", data={"grant_type": "client_credentials"}, auth=(cid, secret),
                          timeout=10).json()["access_token"]

    async def connect(base):
        ws = await websockets.connect(base.replace("http", "ws", 1) + "/v1/socket", max_queue=None, open_timeout=60,
                                      additional_headers={"Authorization": "Bearer " + token})
        await ws.send('{"op":"hello"}')
        return ws

    async def member(i, joined):
        ws = await connect((a, b)[i % 2])
        await ws.send(json.dumps({"op": "join", "group": f"{run}g{i % groups}"}))
        joined.release()
        async for text in ws:
            ev = json.loads(text)
            if ev.get("type") == "post":
                record(ev["pidload"]["sent"])

    joined = asyncio.Semaphore(0)
    members = [asyncio.create_task(member(i, joined)) for i in range(n)]
    for _ in range(n):
        await asyncio.wait_for(joined.acquire(), 120)
    posters = []
    for g in range(groups):
        ws = await connect((a, b)[g % 2])
        await ws.send(json.dumps({"op": "listen", "group": f"{run}g{g}"}))
        posters.append(ws)
    await asyncio.sleep(2)
    latencies.clear()
    samples.clear()

    async def post(ws, g, k, load):
        await ws.send('{"op":"post","group":"%sg%d","pid":"p%d","pidload":%s}' % (run, g, k, load))

    start = time.time()
    sent = await pace(posters, post)
    await asyncio.sleep(3)
    for t in members:
        t.cancel()
    report("modem-hub", sent, start)


async def mqtt_main(address):
    import aiomqtt
    host, _, port = address.rpartition(":")

    def topic(g):
        return f"{run}/g{g}"

    async def subscriber(i, g, ready, stop, count):
        async with aiomqtt.Client(host, int(port), identifier=f"{run}-{i}", timeout=60, keepalive=60) as c:
            await c.subscribe(topic(g), qos=0)
            ready.release()
            async def read():
                async for m in c.messages:
                    if count:
                        record(json.loads(m.payload)["sent"])
            reader = asyncio.create_task(read())
            await stop.wait()
            reader.cancel()

    ready, stop = asyncio.Semaphore(0), asyncio.Event()
    subs = [asyncio.create_task(subscriber(i, i % groups, ready, stop, True)) for i in range(n)]
    for _ in range(n):
        await asyncio.wait_for(ready.acquire(), 120)
    posters = []
    for g in range(groups):
        c = aiomqtt.Client(host, int(port), identifier=f"{run}-p{g}", timeout=60, keepalive=60)
        await c.__aenter__()
        await c.subscribe(topic(g), qos=0)  # the hub's poster listens to its group and gets its own post
        async def drain(c=c):
            async for _ in c.messages:
                pass
        posters.append((c, asyncio.create_task(drain())))
    await asyncio.sleep(2)
    latencies.clear()
    samples.clear()

    async def publish(p, g, k, load):
        await p[0].publish(topic(g), load, qos=0)

    start = time.time()
    sent = await pace(posters, publish)
    await asyncio.sleep(3)
    report("mosquitto", sent, start)
    stop.set()
    for c, t in posters:
        t.cancel()
        await c.__aexit__(None, None, None)
    await asyncio.gather(*subs, return_exceptions=True)


asyncio.run(mqtt_main(sys.argv[2]) if mqtt else hub_main(*sys.argv[1:5]))

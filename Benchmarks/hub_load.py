#!/usr/bin/env python3
"""Fan-out latency of modem-hub's groups: N WebSocket members in G groups (joined), one listening poster
per group posting once a second for S seconds (N deliveries/s). Latency = arrival time - the poster's
clock carried in pidload (same machine). Members and posters alternate between BASE_A and BASE_B.
usage: hub_load.py BASE_A BASE_B CLIENT_ID CLIENT_SECRET [N=1000] [G=100] [S=20]
Python: websockets and requests (scripts/hub-venv.sh). Raise `ulimit -n` first. Prints one JSON line."""
import asyncio, json, sys, time
import requests, websockets

a, b, cid, secret = sys.argv[1:5]
n, groups, seconds = (int(x) for x in (sys.argv[5:8] + ["1000", "100", "20"][len(sys.argv[5:8]):]))
token = requests.post(a + "/oauth/token", data={"grant_type": "client_credentials"}, auth=(cid, secret), timeout=10).json()["access_token"]
latencies = []
run = f"r{int(time.time()) % 100000}"  # fresh group names: kept posts of earlier runs belong to other users


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
            latencies.append((time.time() - ev["pidload"]["sent"]) * 1000)


async def main():
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
    sent, start = 0, time.time()
    for k in range(seconds):
        for g, ws in enumerate(posters):
            await ws.send(json.dumps({"op": "post", "group": f"{run}g{g}", "pid": f"p{k}", "pidload": {"sent": time.time()}}))
            sent += 1
            await asyncio.sleep(0.98 / groups)
    await asyncio.sleep(3)
    for t in members:
        t.cancel()
    lat = sorted(latencies)
    pick = lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))], 1) if lat else None
    print(json.dumps({"clients": n, "groups": groups, "posts": sent, "expected": sent * (n // groups), "delivered": len(lat),
                      "p50ms": pick(0.5), "p99ms": pick(0.99), "maxms": round(lat[-1], 1) if lat else None,
                      "seconds": round(time.time() - start, 1)}))


asyncio.run(main())

#!/usr/bin/env python3
"""Holds idle and slowloris connections against a running hub and times its answers meanwhile.

    python3 Benchmarks/hub-connection-flood.py PORT [--idle 1000] [--slow 100] [--seconds S]

Opens --idle sockets that send nothing and --slow sockets that send a request head one byte a second
(never finishing it), then asks GET /.well-known/oauth-authorization-server on a fresh connection every
100 ms for --seconds (default: 15, past the hub's 10 s head deadline). Prints the answer times (median,
95th percentile, max), how many asks failed, and how many flood sockets the hub had closed by the end
and when. Exit status 1 when an ask failed or a flood socket was still open at the end.
"""
import argparse, resource, selectors, socket, statistics, sys, time

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('port', type=int)
    p.add_argument('--idle', type=int, default=1000)
    p.add_argument('--slow', type=int, default=100)
    p.add_argument('--seconds', type=float, default=15)
    a = p.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, a.idle + a.slow + 256)), hard))

    start = time.monotonic()
    flood = []
    for i in range(a.idle + a.slow):
        # The flood comes from 127.0.0.2 and the timed asks from 127.0.0.1: the hub counts every address
        # (loopback too) on its own, so the asks keep their share whatever the flood does.
        s = socket.create_connection(('127.0.0.1', a.port), source_address=('127.0.0.2', 0))
        s.setblocking(False)
        flood.append((s, i >= a.idle))
    opened = time.monotonic() - start
    head = b'GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: hub\r\nX-Slow: ' + b'x' * 4096
    sel = selectors.DefaultSelector()
    for n, (s, slow) in enumerate(flood):
        sel.register(s, selectors.EVENT_READ, n)
    closed_at = {}
    times, when, failures = [], [], 0
    next_byte = time.monotonic()
    sent = 0
    end = start + a.seconds
    while time.monotonic() < end:
        now = time.monotonic()
        if now >= next_byte:  # one byte a second on each slow socket
            for n, (s, slow) in enumerate(flood):
                if slow and n not in closed_at:
                    try:
                        s.send(head[sent:sent + 1])
                    except OSError:
                        pass
            sent += 1
            next_byte += 1
        t = time.monotonic()
        try:
            c = socket.create_connection(('127.0.0.1', a.port), timeout=5)
            c.sendall(b'GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: hub\r\nConnection: close\r\n\r\n')
            answer = b''
            while True:
                d = c.recv(65536)
                if not d:
                    break
                answer += d
            c.close()
            if answer.startswith(b'HTTP/1.1 200'):
                times.append(time.monotonic() - t)
                when.append(t - start)
            else:
                failures += 1
        except OSError:
            failures += 1
        for key, _ in sel.select(timeout=0.1):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b''
            if not data:
                closed_at[key.data] = time.monotonic() - start
                sel.unregister(s)
    still = len(flood) - len(closed_at)
    ms = sorted(x * 1000 for x in times)
    p95 = ms[int(0.95 * (len(ms) - 1))] if ms else float('nan')
    last = max(closed_at.values()) if closed_at else float('nan')
    print(f'flood: {a.idle} idle + {a.slow} slowloris sockets opened in {opened:.2f} s; '
          f'{len(closed_at)} closed by the hub (last at {last:.1f} s), {still} still open at {a.seconds:.0f} s')
    print(f'metadata during the flood: {len(ms)} answers, median {statistics.median(ms) if ms else float("nan"):.1f} ms, '
          f'p95 {p95:.1f} ms, max {max(ms) if ms else float("nan"):.1f} ms; {failures} failed')
    worst = sorted(zip(times, when), reverse=True)[:3]
    print('slowest answers: ' + ', '.join(f'{x * 1000:.1f} ms at {w:.1f} s' for x, w in worst))
    for s, _ in flood:
        s.close()
    return 0 if failures == 0 and still == 0 else 1

sys.exit(main())

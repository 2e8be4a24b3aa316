#!/usr/bin/env python3
"""The hub's transit relay against a direct TCP copy: SIZE bytes (default 1 GiB) from one client to the
other, once straight over loopback and once through `modem-hub serve --transit-listen`, in the same run;
prints both throughputs, their ratio and the relay's peak resident memory (VmHWM), then the processor time
each transfer took (the clients' process, and the relay's during its transfer).

    python3 scripts/bench-transit.py MODEM_HUB [--size BYTES] [--serve-option OPTION]...

`--serve-option` (repeatable) is passed to `modem-hub serve` (`--serve-option=--no-transit-splice`: the
pair relayed through SwiftNIO instead of splice(2)).
"""
import argparse, os, re, resource, socket, subprocess, tempfile, threading, time

ap = argparse.ArgumentParser()
ap.add_argument("hub")
ap.add_argument("--size", type=int, default=1 << 30)
ap.add_argument("--serve-option", action="append", default=[])
args = ap.parse_args()
CHUNK = os.urandom(1 << 20)


def sender(sock, size):
    left = size
    while left > 0:
        n = min(left, len(CHUNK))
        sock.sendall(CHUNK[:n])
        left -= n
    sock.shutdown(socket.SHUT_WR)


def receiver(sock, size, out):
    got = 0
    buf = bytearray(1 << 20)
    while True:
        n = sock.recv_into(buf)
        if n == 0:
            break
        got += n
    out.append(got)


def cpu(pid=None):
    """Processor seconds (user and system) of this process, or of process `pid`."""
    if pid is None:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(a, b, size, pid=None):
    """Throughput, and the processor seconds of the clients and of process `pid` meanwhile."""
    out = []
    t = threading.Thread(target=receiver, args=(b, size, out))
    c0, r0 = cpu(), cpu(pid) if pid else 0
    t0 = time.monotonic()
    t.start()
    sender(a, size)
    t.join()
    dt = time.monotonic() - t0
    assert out == [size], out
    return size / dt, cpu() - c0, (cpu(pid) - r0 if pid else 0)


# Direct: a listening socket and a client.
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
a = socket.create_connection(srv.getsockname()); b, _ = srv.accept()
direct, direct_cpu, _ = timed(a, b, args.size)
a.close(); b.close(); srv.close()

work = tempfile.mkdtemp(prefix="transit-bench-")
log = os.path.join(work, "hub.log")
hub = subprocess.Popen([args.hub, "serve", "--listen", "127.0.0.1:0", "--db", "sqlite:" + os.path.join(work, "hub.sqlite"),
                        "--transit-listen", "127.0.0.1:0", *args.serve_option], stdout=open(log, "w"), stderr=subprocess.STDOUT)
try:
    port = None
    for _ in range(600):
        m = re.search(r"transit relay listening on 127\.0\.0\.1:(\d+)", open(log).read())
        if m:
            port = int(m.group(1)); break
        time.sleep(0.05)
    token = os.urandom(32).hex()
    a = socket.create_connection(("127.0.0.1", port)); a.sendall(f"please relay {token} for side {'a' * 16}\n".encode())
    b = socket.create_connection(("127.0.0.1", port)); b.sendall(f"please relay {token} for side {'b' * 16}\n".encode())
    assert a.recv(3) == b"ok\n" and b.recv(3) == b"ok\n"
    relayed, relayed_cpu, relay_cpu = timed(a, b, args.size, hub.pid)
    a.close(); b.close()
    hwm = re.search(r"VmHWM:\s+(\d+) kB", open(f"/proc/{hub.pid}/status").read()).group(1)
finally:
    hub.terminate(); hub.wait(30)
print(f"{args.size} bytes: direct {direct / 1e6:.0f} MB/s, through the relay {relayed / 1e6:.0f} MB/s, "
      f"ratio {relayed / direct:.2f}; relay peak RSS {int(hwm) / 1024:.1f} MiB")
print(f"processor time: direct {direct_cpu:.2f} s (clients); through the relay {relayed_cpu:.2f} s (clients) + {relay_cpu:.2f} s (relay)")

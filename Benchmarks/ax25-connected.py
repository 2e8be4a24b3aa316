#!/usr/bin/env python3
"""Connected-mode AX.25 with Dire Wolf 1.8 over the air: 20 KiB both ways, byte-exact, through noise.

    python3 Benchmarks/ax25-connected.py MODEM [--bytes 20480] [--noise 0.12] [--seed 1] [--path agw|kiss]

Starts a private PulseAudio null sink (scripts/audio-loop.sh), Dire Wolf 1.8 on it (scripts/direwolf18.sh
builds it; call N0DW, 1200 bit/s, AGW port), `MODEM tnc --device default --agw P --kiss-port K` on it too,
and white noise played into the same sink (sox, peak level --noise, 0: none), so both modems hear each
other through noise and lose frames. An AGW client on Dire Wolf registers N0DW-1 and echoes every byte a
caller sends. Our side calls N0DW-1 and sends --bytes random bytes:

  --path agw   an AGW client of `modem tnc` (its data-link station, T1 paused by its carrier detector);
  --path kiss  `modem ax25 connect N0DW-1 --kiss 127.0.0.1:K` (the terminal session's own data link,
               which counts airtime itself).

It passes when the echo comes back byte for byte. Prints one JSON line: bytes each way, seconds,
throughput each way, frames Dire Wolf and we retransmitted (from the logs) and the counts of frames
our TNC decoded and failed to decode.
"""
import argparse
import json
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def agw(kind, call_from="", call_to="", data=b"", port=0, pid=0xF0):
    header = struct.pack("<B3xBxBx10s10sII", port, ord(kind), pid, call_from.encode(), call_to.encode(), len(data), 0)
    return header + data


class AGWClient:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=600)
        self.buffer = b""

    def send(self, *args, **kw):
        self.sock.sendall(agw(*args, **kw))

    def has_message(self):
        return len(self.buffer) >= 36 and len(self.buffer) >= 36 + struct.unpack_from("<I", self.buffer, 28)[0]

    def receive(self):
        while True:
            if len(self.buffer) >= 36:
                length = struct.unpack_from("<I", self.buffer, 28)[0]
                if len(self.buffer) >= 36 + length:
                    header, data = self.buffer[:36], self.buffer[36:36 + length]
                    self.buffer = self.buffer[36 + length:]
                    kind = chr(header[4])
                    src = header[8:18].split(b"\0")[0].decode()
                    dst = header[18:28].split(b"\0")[0].decode()
                    return kind, src, dst, data
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("AGW connection closed")
            self.buffer += chunk


def wait_for(path, pattern, seconds, proc=None):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with open(path, errors="replace") as f:
                text = f.read()
            m = re.search(pattern, text)
            if m:
                return m
        except FileNotFoundError:
            pass
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.1)
    raise SystemExit(f"ax25-connected: gave up waiting for {pattern!r} in {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("modem")
    ap.add_argument("--bytes", type=int, default=20480)
    ap.add_argument("--noise", type=float, default=0.12, help="peak level of the white noise (0...1; 0: none)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--path", choices=["agw", "kiss"], default="agw")
    ap.add_argument("--limit", type=float, default=1800, help="seconds before giving up (a hang guard)")
    args = ap.parse_args()
    dw_bin = subprocess.run(["bash", f"{ROOT}/scripts/direwolf18.sh"], check=True, capture_output=True, text=True).stdout.strip()
    env_lines = subprocess.run(["bash", f"{ROOT}/scripts/audio-loop.sh", "start"], check=True, capture_output=True, text=True).stdout
    for m in re.finditer(r"export (\w+)=(\S+)", env_lines):
        os.environ[m.group(1)] = m.group(2).strip("'\"")
    work = tempfile.mkdtemp(prefix="ax25-connected-")
    procs = []

    def stop_all(*_):
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()

    signal.signal(signal.SIGTERM, lambda *_: (stop_all(), sys.exit(143)))
    try:
        dw_agw = free_port() % 20000 + 20000
        conf = os.path.join(work, "dw.conf")
        with open(conf, "w") as f:
            f.write(f"ADEVICE default\nARATE 48000\nACHANNELS 1\nCHANNEL 0\nMYCALL N0DW\nMODEM 1200\nAGWPORT {dw_agw}\nKISSPORT 0\n")
        dw_log = os.path.join(work, "direwolf.log")
        procs.append(subprocess.Popen(["stdbuf", "-oL", f"{dw_bin}/direwolf", "-c", conf, "-t", "0"],
                                      stdout=open(dw_log, "w"), stderr=subprocess.STDOUT))
        wait_for(dw_log, rf"Ready to accept AGW client application 0 on port {dw_agw}", 60, procs[-1])
        tnc_log = os.path.join(work, "tnc.log")
        procs.append(subprocess.Popen([args.modem, "tnc", "--device", "default", "--agw", "0", "--kiss-port", "0"],
                                      stdout=subprocess.DEVNULL, stderr=open(tnc_log, "w")))
        our_agw = int(wait_for(tnc_log, r"AGW on 127\.0\.0\.1:(\d+)", 60, procs[-1]).group(1))
        our_kiss = int(wait_for(tnc_log, r"KISS over TCP on 127\.0\.0\.1:(\d+)", 60, procs[-1]).group(1))
        if args.noise > 0:
            noise = os.path.join(work, "noise.wav")
            subprocess.run(["sox", "-q", "-n", "-r", "48000", "-c", "1", "-b", "16", noise, "synth", str(int(args.limit) + 60),
                            "whitenoise", "vol", str(args.noise)], check=True)
            procs.append(subprocess.Popen(["aplay", "-q", "-D", "default", noise], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

        # Dire Wolf's side: register N0DW-1 and echo.
        echo = AGWClient(dw_agw)
        echo.send("X", "N0DW-1")
        kind, *_ , data = echo.receive()
        assert kind == "X" and data[:1] == b"\x01", "Dire Wolf refused to register N0DW-1"

        payload = random.Random(args.seed).randbytes(args.bytes)
        start = time.time()
        received = bytearray()
        caller = None
        if args.path == "agw":
            ours = AGWClient(our_agw)
            ours.send("X", "N0CALL")
            ours.receive()
            ours.send("C", "N0CALL", "N0DW-1")
        else:
            pay = os.path.join(work, "payload.bin")
            with open(pay, "wb") as f:
                f.write(payload)
            caller = subprocess.Popen([args.modem, "ax25", "connect", "N0DW-1", "--mycall", "N0CALL", "--kiss", f"127.0.0.1:{our_kiss}",
                                       "--binary", "--at-end", "stay"],
                                      stdin=open(pay, "rb"), stdout=subprocess.PIPE, stderr=open(os.path.join(work, "ax25.log"), "w"))
            procs.append(caller)
        # Dire Wolf's echo loop runs here; our AGW client is served in the same loop.
        import selectors
        sel = selectors.DefaultSelector()
        sel.register(echo.sock, selectors.EVENT_READ, "echo")
        if args.path == "agw":
            sel.register(ours.sock, selectors.EVENT_READ, "ours")
        else:
            os.set_blocking(caller.stdout.fileno(), False)
            sel.register(caller.stdout, selectors.EVENT_READ, "caller")
        echoed = 0
        sent = 0
        connected_at = None
        done = False
        while not done:
            if time.time() - start > args.limit:
                raise SystemExit(f"ax25-connected: not done after {args.limit:.0f} s: {len(received)} of {args.bytes} bytes back")
            for key, _ in sel.select(timeout=1):
                if key.data == "echo":
                    while True:
                        kind, src, dst, data = echo.receive()
                        if kind == "D":
                            echo.send("D", "N0DW-1", src, data)
                            echoed += len(data)
                        elif kind == "d":
                            done = True
                        if not echo.has_message():
                            break
                elif key.data == "ours":
                  while True:
                    kind, src, dst, data = ours.receive()
                    more = ours.has_message()
                    if kind == "C" and connected_at is None:
                        connected_at = time.time()
                        for i in range(0, len(payload), 256):
                            ours.send("D", "N0CALL", "N0DW-1", payload[i:i + 256])
                        sent = len(payload)
                    elif kind == "D":
                        received += data
                        if len(received) >= len(payload):
                            ours.send("d", "N0CALL", "N0DW-1")
                    elif kind == "d":
                        done = True
                        if len(received) < len(payload):
                            raise SystemExit(f"ax25-connected: the link ended: {data!r}; {len(received)} of {len(payload)} bytes back")
                    if not more:
                        break
                else:
                    chunk = caller.stdout.read()
                    if chunk:
                        received += chunk
                        if len(received) >= len(payload):
                            caller.send_signal(signal.SIGINT)   # disconnect now (the test's end)
                    elif chunk == b"" and caller.poll() is not None:
                        done = True
                        sel.unregister(caller.stdout)
        seconds = time.time() - start
        ok = bytes(received[:len(payload)]) == payload and len(received) == len(payload)
        with open(dw_log, errors="replace") as f:
            dw_text = f.read()
        with open(tnc_log, errors="replace") as f:
            tnc_text = f.read()
        result = {
            "path": args.path, "bytes_each_way": args.bytes, "noise_peak": args.noise, "byte_exact": ok,
            "seconds": round(seconds, 1), "echoed": echoed, "received": len(received),
            "bit_per_s_each_way": round(args.bytes * 8 / seconds, 1),
            "our_frames_sent": len(re.findall(r"\btx N0CALL>N0DW-1", tnc_text)),
            "our_frames_decoded": len(re.findall(r"\brx N0DW-1>N0CALL", tnc_text)),
            "direwolf_frames_decoded": len(re.findall(r"N0CALL>N0DW-1", dw_text)),
        }
        print(json.dumps(result), flush=True)
        return 0 if ok else 1
    finally:
        stop_all()


if __name__ == "__main__":
    sys.exit(main())

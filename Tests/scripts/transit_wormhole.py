#!/usr/bin/env python3
"""Stock magic-wormhole clients through `modem-hub serve --transit-listen`: with `--rendezvous
reference`, the reference rendezvous server (`twist wormhole-mailbox`, from the same venv) introduces
them; with `--rendezvous hub`, modem-hub's own (`/wormhole/v1`), which also carries text messages, an
allocated code, and a wrong code (refused, nothing written). For files both sides refuse direct
connections (`--no-listen`), so every byte crosses our transit relay. Prints `ok|FAIL name` lines and
`N passed, M failed`; exits 1 on a failure.

    transit_wormhole.py VENV_BIN MODEM_HUB [--files N] [--texts N] [--rendezvous reference|hub]
"""
from script_checks import Checks
import argparse, filecmp, os, re, sqlite3, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("bin")
ap.add_argument("hub")
ap.add_argument("--files", type=int, default=3)
ap.add_argument("--texts", type=int, default=10)
ap.add_argument("--rendezvous", choices=["reference", "hub"], default="reference")
args = ap.parse_args()
GUARD = 120  # seconds: a hang guard far above every expected time
check = Checks()


def wait_for_line(path, pattern, proc):
    """The first match of `pattern` in the log at `path`, waiting for it (bounded by GUARD)."""
    end = time.monotonic() + GUARD
    while time.monotonic() < end and proc.poll() is None:
        m = re.search(pattern, open(path, errors="replace").read())
        if m:
            return m
        time.sleep(0.05)
    raise SystemExit(f"no {pattern!r} in {path}: {open(path, errors='replace').read()[-800:]}")


work = tempfile.mkdtemp(prefix="wormhole-")
procs = []
try:
    hlog = os.path.join(work, "hub.log")
    hub = subprocess.Popen([args.hub, "serve", "--bcrypt-cost", "4", "--listen", "127.0.0.1:0", "--db", "sqlite:" + os.path.join(work, "hub.sqlite"),
                            "--transit-listen", "127.0.0.1:0"], stdout=open(hlog, "w"), stderr=subprocess.STDOUT)
    procs.append(hub)
    tport = int(wait_for_line(hlog, r"transit relay listening on 127\.0\.0\.1:(\d+)", hub).group(1))
    if args.rendezvous == "hub":
        hport = int(wait_for_line(hlog, r"modem-hub: listening on 127\.0\.0\.1:(\d+)", hub).group(1))
        relay_url = f"ws://127.0.0.1:{hport}/wormhole/v1"
    else:
        mlog = os.path.join(work, "mailbox.log")
        mailbox = subprocess.Popen([os.path.join(args.bin, "twist"), "wormhole-mailbox", "--port", "tcp:0:interface=127.0.0.1",
                                    "--channel-db", os.path.join(work, "mailbox.sqlite")],
                                   stdout=open(mlog, "w"), stderr=subprocess.STDOUT, cwd=work)
        procs.append(mailbox)
        mport = int(wait_for_line(mlog, r"Site starting on (\d+)", mailbox).group(1))
        relay_url = f"ws://127.0.0.1:{mport}/v1"
    common = ["--relay-url", relay_url, "--transit-helper", f"tcp:127.0.0.1:{tport}"]
    wormhole = os.path.join(args.bin, "wormhole")
    if args.rendezvous == "hub":
        exact = 0
        for i in range(args.texts):
            msg = f"text {i} {os.urandom(6).hex()}"
            code = f"{100 + i}-purple-sausages"
            send = subprocess.Popen([wormhole, *common, "send", "--hide-progress", "--code", code, "--text", msg],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            recv = subprocess.run([wormhole, *common, "receive", "--only-text", code], capture_output=True, text=True, timeout=GUARD)
            send.communicate(timeout=GUARD)
            exact += recv.stdout.strip() == msg and recv.returncode == 0 and send.returncode == 0
        check(f"{args.texts} text messages through the hub's rendezvous, exact", exact == args.texts, f"{exact} exact")
        # A code the server allocates: the sender prints it, the receiver types it.
        send = subprocess.Popen([wormhole, *common, "send", "--hide-progress", "--text", "allocated"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        code, lines = None, []
        for line in send.stdout:
            lines.append(line)
            m = re.search(r"Wormhole code is: (\S+)", line)
            if m:
                code = m.group(1)
                break
        recv = subprocess.run([wormhole, *common, "receive", "--only-text", code or "1-x-y"], capture_output=True, text=True, timeout=GUARD)
        send.communicate(timeout=GUARD)
        check(f"a code the hub allocated ({code}) works", recv.stdout.strip() == "allocated" and send.returncode == 0, (lines, recv))
        # A wrong code: both fail, nothing is written.
        d = os.path.join(work, "wrong"); os.makedirs(os.path.join(d, "in")); os.makedirs(os.path.join(d, "out"))
        with open(os.path.join(d, "in", "secret.bin"), "wb") as f:
            f.write(os.urandom(4096))
        send = subprocess.Popen([wormhole, *common, "send", "--hide-progress", "--code", "555-purple-sausages", "secret.bin"],
                                cwd=os.path.join(d, "in"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        recv = subprocess.run([wormhole, *common, "receive", "--accept-file", "555-wrong-words"], cwd=os.path.join(d, "out"),
                              capture_output=True, text=True, timeout=GUARD)
        sout, _ = send.communicate(timeout=GUARD)
        check("a wrong code fails both sides, nothing written", recv.returncode != 0 and send.returncode != 0
              and os.listdir(os.path.join(d, "out")) == [], (recv.returncode, send.returncode, os.listdir(os.path.join(d, "out"))))
        # A sender waits; the hub is killed (SIGKILL) once the sender's first message is in its database,
        # and restarted on the same database and port; the sender reconnects, the receiver comes.
        msg = f"survives a restart {os.urandom(4).hex()}"
        send = subprocess.Popen([wormhole, *common, "send", "--hide-progress", "--code", "99-purple-sausages", "--text", msg],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        db = os.path.join(work, "hub.sqlite")
        end = time.monotonic() + GUARD
        stored = False
        while time.monotonic() < end and not stored:
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                    stored = any('"phase":"pake"' in b for (b,) in con.execute("SELECT body FROM wormhole_mailboxes"))
            except sqlite3.Error:
                pass
            time.sleep(0.05)
        hub.kill(); hub.wait(GUARD)
        hub = subprocess.Popen([args.hub, "serve", "--bcrypt-cost", "4", "--listen", f"127.0.0.1:{hport}", "--db", "sqlite:" + db,
                                "--transit-listen", f"127.0.0.1:{tport}"], stdout=open(hlog, "a"), stderr=subprocess.STDOUT)
        procs.append(hub)
        wait_for_line(hlog, r"(?s)transit relay listening.*transit relay listening", hub)
        recv = subprocess.run([wormhole, *common, "receive", "--only-text", "99-purple-sausages"], capture_output=True, text=True,
                              timeout=GUARD)
        sout, _ = send.communicate(timeout=GUARD)
        check("a sender waiting across a kill -9 and restart of the hub is still received", stored and recv.stdout.strip() == msg
              and send.returncode == 0, (stored, recv.stdout[-200:], recv.stderr[-300:], sout[-300:]))
    for i in range(args.files):
        d = os.path.join(work, f"f{i}")
        os.makedirs(os.path.join(d, "in")); os.makedirs(os.path.join(d, "out"))
        src = os.path.join(d, "in", f"blob{i}.bin")
        with open(src, "wb") as f:
            f.write(os.urandom(1 << 20))
        code = f"{300 + i}-purple-sausages"
        send = subprocess.Popen([wormhole, *common, "send", "--no-listen", "--hide-progress", "--code", code, f"blob{i}.bin"],
                                cwd=os.path.join(d, "in"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        recv = subprocess.run([wormhole, *common, "receive", "--no-listen", "--hide-progress", "--accept-file", code],
                              cwd=os.path.join(d, "out"), capture_output=True, text=True, timeout=GUARD)
        sout, _ = send.communicate(timeout=GUARD)
        dst = os.path.join(d, "out", f"blob{i}.bin")
        exact = os.path.exists(dst) and filecmp.cmp(src, dst, shallow=False)
        relayed = f"relay:tcp:127.0.0.1:{tport}" in recv.stdout + recv.stderr + sout
        check(f"file {i + 1}: 1 MiB from stock wormhole send to stock receive through our relay ({args.rendezvous} rendezvous), exact",
              exact and relayed and recv.returncode == 0 and send.returncode == 0,
              (recv.returncode, send.returncode, relayed, (recv.stdout + recv.stderr)[-400:], sout[-400:]))
    hub.terminate(); hub.wait(GUARD)
    log = open(hlog).read()
    m = list(re.finditer(r"transit relay stopped: (\d+) pairs, (\d+) bytes relayed", log))
    m = m[-1] if m else None
    check(f"the relay counted {args.files} pairs and at least {args.files} MiB", m is not None and int(m.group(1)) == args.files
          and int(m.group(2)) >= args.files << 20, log[-400:])
finally:
    for p in procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
check.finish()

#!/usr/bin/env python3
"""`modem send/receive --wormhole` against stock magic-wormhole 0.24 through the reference rendezvous
server (`twist wormhole-mailbox`) and the reference transit relay (`twist transitrelay`), all from the
venv, nothing of ours in the middle: text both ways, 1 MiB files both ways direct and through the relay
(both sides --no-listen: every byte crosses the relay), a folder both ways, a wrong code refused with
nothing written (both ways), a file refused by --text-only, and hostile offered names cleaned. Prints
`ok|FAIL name` lines and `N passed, M failed`; exits 1 on a failure.

    wormhole_modem.py VENV_BIN MODEM
"""
from script_checks import Checks, port_from, stop_all
import filecmp, os, re, shutil, subprocess, sys, tempfile, time

venv, modem = sys.argv[1], sys.argv[2]
GUARD = 120  # seconds: a hang guard far above every expected time
check = Checks()
wormhole = os.path.join(venv, "wormhole")




work = tempfile.mkdtemp(prefix="wormhole-modem-")
procs = []
try:
    mlog, tlog = os.path.join(work, "mailbox.log"), os.path.join(work, "transit.log")
    mb = subprocess.Popen([os.path.join(venv, "twist"), "wormhole-mailbox", "--port", "tcp:0:interface=127.0.0.1",
                           "--channel-db", os.path.join(work, "ch.sqlite")], stdout=open(mlog, "w"), stderr=subprocess.STDOUT, cwd=work)
    tr = subprocess.Popen([os.path.join(venv, "twist"), "transitrelay", "--port", "tcp:0:interface=127.0.0.1"],
                          stdout=open(tlog, "w"), stderr=subprocess.STDOUT, cwd=work)
    procs += [mb, tr]
    mport = port_from(mlog, mb, r"Site starting on (\d+)")
    tport = port_from(tlog, tr, r"ServerFactory starting on (\d+)")
    relay, helper = f"ws://127.0.0.1:{mport}/v1", f"tcp:127.0.0.1:{tport}"
    stock = [wormhole, "--relay-url", relay, "--transit-helper", helper]

    def ours(verb, *args):
        return [modem, verb, "--wormhole", "--relay-url", relay, "--transit-helper", helper, *args]

    def pair(first, second, first_cwd=None, second_cwd=None):
        """Starts `first` (the waiting side), runs `second`; both results."""
        a = subprocess.Popen(first, cwd=first_cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        b = subprocess.run(second, cwd=second_cwd, capture_output=True, text=True, timeout=GUARD)
        ao, ae = a.communicate(timeout=GUARD)
        return (a.returncode, ao, ae), (b.returncode, b.stdout, b.stderr)

    code = iter(f"{n}-purple-sausages" for n in range(100, 1000))
    # Text both ways.
    msg, c = f"from modem {os.urandom(4).hex()}", next(code)
    (sr, so, se), (rr, ro, re_) = pair(ours("send", "--code", c, "--text", msg), stock + ["receive", "--only-text", c])
    check("text: modem send -> stock receive", sr == 0 and rr == 0 and ro.strip() == msg and f"wormhole code: {c}" in se,
          (sr, rr, ro, se[-300:], re_[-300:]))
    msg, c = f"from stock {os.urandom(4).hex()}", next(code)
    (sr, so, se), (rr, ro, re_) = pair(stock + ["send", "--hide-progress", "--code", c, "--text", msg], ours("receive", "--text-only", c))
    check("text: stock send -> modem receive (standard output)", sr == 0 and rr == 0 and ro == msg + "\n", (sr, rr, ro, re_[-300:]))
    # An allocated code: ours prints it, stock types it.
    a = subprocess.Popen(ours("send", "--text", "allocated"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = a.stderr.readline()
    m = re.match(r"wormhole code: (\d+-\S+)", line)
    r = subprocess.run(stock + ["receive", "--only-text", m.group(1) if m else "1-a-b"], capture_output=True, text=True, timeout=GUARD)
    a.communicate(timeout=GUARD)
    check("an allocated code printed by modem send works", m is not None and r.stdout.strip() == "allocated" and a.returncode == 0, (line, r.stderr[-300:]))
    # Files both ways, direct and through the relay.
    for mode in ("direct", "relay"):
        nl = ["--no-listen"] if mode == "relay" else []
        d = os.path.join(work, mode)
        for sub in ("a", "b", "c", "e"):
            os.makedirs(os.path.join(d, sub))
        with open(os.path.join(d, "a", "ours.bin"), "wb") as f:
            f.write(os.urandom(1 << 20))
        with open(os.path.join(d, "c", "theirs.bin"), "wb") as f:
            f.write(os.urandom(1 << 20))
        c = next(code)
        (sr, so, se), (rr, ro, re_) = pair(ours("send", *nl, "--code", c, os.path.join(d, "a", "ours.bin")),
                                           stock + ["receive", *nl, "--hide-progress", "--accept-file", c], second_cwd=os.path.join(d, "b"))
        got = os.path.join(d, "b", "ours.bin")
        relayed = "relay:" in ro + re_
        check(f"1 MiB file {mode}: modem send -> stock receive, exact", sr == 0 and rr == 0 and os.path.exists(got)
              and filecmp.cmp(got, os.path.join(d, "a", "ours.bin"), shallow=False) and (relayed == (mode == "relay")),
              (sr, rr, relayed, se[-300:], (ro + re_)[-300:]))
        c = next(code)
        (sr, so, se), (rr, ro, re_) = pair(stock + ["send", *nl, "--hide-progress", "--code", c, "theirs.bin"],
                                           ours("receive", *nl, "--dir", os.path.join(d, "e"), "--accept-all", c), first_cwd=os.path.join(d, "c"))
        got = os.path.join(d, "e", "theirs.bin")
        relayed = "relay:" in so + se
        check(f"1 MiB file {mode}: stock send -> modem receive, exact, only the file in --dir", sr == 0 and rr == 0 and os.path.exists(got)
              and filecmp.cmp(got, os.path.join(d, "c", "theirs.bin"), shallow=False) and os.listdir(os.path.join(d, "e")) == ["theirs.bin"]
              and (relayed == (mode == "relay")) and re.match(r"received theirs\.bin 1048576 sha256 [0-9a-f]{64} in ", ro),
              (sr, rr, relayed, ro, re_[-300:], (so + se)[-300:], os.listdir(os.path.join(d, "e"))))
    # Folders both ways.
    d = os.path.join(work, "folders")
    tree = {"top.txt": b"top\n", "sub/inner.bin": os.urandom(70000), "sub/deeper/.hidden": b"dot file\n", "empty.txt": b""}
    for rel, data in tree.items():
        p = os.path.join(d, "src", "tree", rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        open(p, "wb").write(data)
    os.makedirs(os.path.join(d, "in1"))  # in2 is not made: modem receive creates its --dir as over TCP
    def same_tree(root):
        return all(os.path.exists(os.path.join(root, rel)) and open(os.path.join(root, rel), "rb").read() == data for rel, data in tree.items())
    c = next(code)
    (sr, so, se), (rr, ro, re_) = pair(ours("send", "--code", c, os.path.join(d, "src", "tree")),
                                       stock + ["receive", "--hide-progress", "--accept-file", c], second_cwd=os.path.join(d, "in1"))
    check("a folder: modem send -> stock receive, every file exact", sr == 0 and rr == 0 and same_tree(os.path.join(d, "in1", "tree")),
          (sr, rr, se[-300:], (ro + re_)[-300:]))
    c = next(code)
    (sr, so, se), (rr, ro, re_) = pair(stock + ["send", "--hide-progress", "--code", c, "tree"],
                                       ours("receive", "--dir", os.path.join(d, "in2"), "--accept-all", c), first_cwd=os.path.join(d, "src"))
    check("a folder: stock send -> modem receive into a --dir it creates, every file exact, nothing else", sr == 0 and rr == 0
          and same_tree(os.path.join(d, "in2", "tree")) and os.listdir(os.path.join(d, "in2")) == ["tree"], (sr, rr, ro, re_[-300:], se[-300:]))
    # A wrong code, both ways: refused with a non-zero exit, nothing written.
    d = os.path.join(work, "wrong")
    os.makedirs(os.path.join(d, "out"))
    open(os.path.join(d, "secret.bin"), "wb").write(os.urandom(4096))
    c = next(code)
    (sr, so, se), (rr, ro, re_) = pair(stock + ["send", "--hide-progress", "--code", c, "secret.bin"],
                                       ours("receive", "--dir", os.path.join(d, "never"), "--accept-all", c.replace("sausages", "elephants")),
                                       first_cwd=d)
    check("a wrong code: modem receive refuses (exit 3: no connection, one line), its --dir not left behind, the stock sender fails too",
          rr == 3 and sr != 0 and not os.path.exists(os.path.join(d, "never")) and re_.strip().count("\n") == 0 and "wrong code" in re_
          and c.split("-", 1)[1] not in re_, (rr, sr, re_, os.listdir(d)))
    c = next(code)
    (sr, so, se), (rr, ro, re_) = pair(ours("send", "--code", c, os.path.join(d, "secret.bin")),
                                       stock + ["receive", "--accept-file", c.replace("sausages", "elephants")], second_cwd=os.path.join(d, "out"))
    check("a wrong code: modem send fails (exit 3: no connection) against a stock receiver with another code", sr == 3 and rr != 0
          and os.listdir(os.path.join(d, "out")) == [] and "wrong code" in se, (sr, rr, se[-300:]))
    # --text-only refuses a file; the stock sender hears it was refused.
    c = next(code)
    (sr, so, se), (rr, ro, re_) = pair(stock + ["send", "--hide-progress", "--code", c, "secret.bin"], ours("receive", "--text-only", c),
                                       first_cwd=d)
    check("--text-only refuses a file (exit 1); the stock sender is told 'transfer rejected'", rr == 1 and sr != 0
          and "rejected" in so + se, (rr, sr, re_[-200:], (so + se)[-300:]))
    # Declined (no terminal to ask on, no --accept-all): no failure here, as over TCP; the sender fails.
    c = next(code)
    (sr, so, se), (rr, ro, re_) = pair(stock + ["send", "--hide-progress", "--code", c, "secret.bin"],
                                       ours("receive", "--dir", os.path.join(d, "declined"), c), first_cwd=d)
    check("declined for want of a terminal: modem receive exits 0 (as over TCP), keeps nothing; the stock sender is told 'transfer rejected'",
          rr == 0 and sr != 0 and "declined" in re_ and "rejected" in so + se and not os.path.exists(os.path.join(d, "declined")),
          (rr, sr, re_[-200:], (so + se)[-300:]))
    # Hostile names from a stock sender: ../ and a hidden name are cleaned, nothing lands outside --dir.
    d = os.path.join(work, "names")
    os.makedirs(os.path.join(d, "src")); os.makedirs(os.path.join(d, "out", "inside"))
    open(os.path.join(d, "src", "..evil"), "wb").write(b"x" * 10)
    c = next(code)
    (sr, so, se), (rr, ro, re_) = pair(stock + ["send", "--hide-progress", "--code", c, "..evil"],
                                       ours("receive", "--dir", os.path.join(d, "out", "inside"), "--accept-all", c), first_cwd=os.path.join(d, "src"))
    check("an offered name '..evil' is stored as 'evil' inside --dir", rr == 0 and os.listdir(os.path.join(d, "out", "inside")) == ["evil"]
          and os.listdir(os.path.join(d, "out")) == ["inside"], (rr, re_[-300:], os.listdir(os.path.join(d, "out", "inside"))))
    # The mailbox by code: fresh key folders, nothing trusted; 100 chunks each way in order, the side
    # whose input ends first (bob, once he has all of alice's) quits, alice hears he quit.
    d = os.path.join(work, "mailbox")
    os.makedirs(d)
    c = next(code)
    common = ["--relay-url", relay, "--transit-helper", helper]
    alice = subprocess.Popen([modem, "mailbox", "--listen", f"wormhole:{c}", *common, "--name", "alice", "--keys", os.path.join(d, "ka")],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(os.path.join(d, "a.err"), "w"), text=True)
    bob = subprocess.Popen([modem, "mailbox", "--to", f"wormhole:{c}", *common, "--name", "bob", "--keys", os.path.join(d, "kb"),
                            "--trust-as", "alice"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(os.path.join(d, "b.err"), "w"), text=True)
    a_in = [f"from alice {i}" for i in range(1, 101)]
    b_in = [f"from bob {i}" for i in range(1, 101)]
    alice.stdin.write("".join(x + "\n" for x in a_in)); alice.stdin.flush()
    bob.stdin.write("".join(x + "\n" for x in b_in)); bob.stdin.flush()
    b_out = [bob.stdout.readline().rstrip("\n") for _ in range(100)]  # waits for each line (the guard: the processes' own limits)
    bob.stdin.close()
    a_out = alice.stdout.read().splitlines()
    alice.wait(GUARD); bob.wait(GUARD)
    alice.stdin.close()
    a_err, b_err = open(os.path.join(d, "a.err")).read(), open(os.path.join(d, "b.err")).read()
    trusted = open(os.path.join(d, "kb", "trusted")).read() if os.path.exists(os.path.join(d, "kb", "trusted")) else ""
    check("modem mailbox by code (reference servers, fresh keys): 100 chunks each way in order", a_out == b_in and b_out == a_in,
          (len(a_out), len(b_out), a_err[-300:], b_err[-300:]))
    check("mailbox by code: bob END_USER_QUIT (exit 0), alice END_OTHER_USER_QUIT (exit 0); --trust-as kept alice's key",
          "END_USER_QUIT" in b_err and "END_OTHER_USER_QUIT" in a_err and bob.returncode == 0 and alice.returncode == 0
          and trusted.startswith("alice "), (bob.returncode, alice.returncode, a_err[-200:], b_err[-200:], trusted[:40]))
    # No relay URL anywhere: one clear line, exit 64.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MODEM_WORMHOLE")}
    r = subprocess.run([modem, "send", "--wormhole", "--text", "x"], capture_output=True, text=True, timeout=GUARD, env=env)
    check("no rendezvous server named: exit 64, one line naming --relay-url and MODEM_WORMHOLE_RELAY",
          r.returncode == 64 and "--relay-url" in r.stderr and "MODEM_WORMHOLE_RELAY" in r.stderr and r.stderr.count("\n") == 1, (r.returncode, r.stderr))
    r = subprocess.run([modem, "send", "--wormhole", "--relay-url", "http://example.org/v1", "--text", "x"], capture_output=True, text=True, timeout=GUARD)
    check("a relay URL that is neither ws:// nor wss:// is refused (exit 64)", r.returncode == 64 and "ws:// or wss://" in r.stderr, r.stderr)
    r = subprocess.run([modem, "receive", "--wormhole", "--folder-max-ratio", "0", "1-a-b"], capture_output=True, text=True, timeout=GUARD)
    check("--folder-max-ratio 0 is refused (exit 64, the range named)", r.returncode == 64 and "--folder-max-ratio must be 1 to" in r.stderr, r.stderr)
finally:
    stop_all(procs)
    shutil.rmtree(work, ignore_errors=True)
check.finish()

#!/usr/bin/env python3
"""`modem send/receive --wormhole --relay-url wss://...`: the reference rendezvous server (`twist
wormhole-mailbox`, from the venv) behind socat's TLS listener, with self-signed certificates made here
by `openssl req`; stock magic-wormhole 0.24 on the server's plain ws:// side as the peer. Text and files
over wss:// trusted through SSL_CERT_FILE and through --ca; without trust refused with one line naming
the problem and --ca (exit 3); a certificate for another host name, and for another IP address, refused
(exit 3); --ca misused (exit 64). Prints `ok|FAIL name` lines and `N passed, M failed`; exits 1 on a
failure.

    wormhole_wss.py VENV_BIN MODEM
"""
from script_checks import Checks, port_from, stop_all
import filecmp, os, re, shutil, subprocess, sys, tempfile, time

venv, modem = sys.argv[1], sys.argv[2]
GUARD = 120  # seconds: a hang guard far above every expected time
check = Checks()
wormhole = os.path.join(venv, "wormhole")




def self_signed(folder, name, sans):
    """A self-signed P-256 certificate and key for `sans`; (certificate file, certificate+key file)."""
    cert, key, both = (os.path.join(folder, f"{name}.{x}") for x in ("crt.pem", "key.pem", "pem"))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}", "-addext", f"subjectAltName={sans}"],
                   check=True, capture_output=True)
    open(both, "w").write(open(key).read() + open(cert).read())
    return cert, both


work = tempfile.mkdtemp(prefix="wormhole-wss-")
procs = []
try:
    good_cert, good_pem = self_signed(work, "localhost", "DNS:localhost,IP:127.0.0.1")
    other_cert, other_pem = self_signed(work, "wrong.example", "DNS:wrong.example,IP:127.0.0.9")
    mlog = os.path.join(work, "mailbox.log")
    mb = subprocess.Popen([os.path.join(venv, "twist"), "wormhole-mailbox", "--port", "tcp:0:interface=127.0.0.1",
                           "--channel-db", os.path.join(work, "ch.sqlite")], stdout=open(mlog, "w"), stderr=subprocess.STDOUT, cwd=work)
    procs.append(mb)
    mport = port_from(mlog, mb, r"Site starting on (\d+)")

    def tls_front(pem, log):
        """socat: TLS on a free port of 127.0.0.1 with `pem`, each connection to the mailbox server's ws port."""
        p = subprocess.Popen(["socat", "-d", "-d", f"OPENSSL-LISTEN:0,bind=127.0.0.1,reuseaddr,fork,cert={pem},verify=0",
                              f"TCP:127.0.0.1:{mport}"], stdout=subprocess.DEVNULL, stderr=open(log, "w"))
        procs.append(p)
        return port_from(log, p, r"listening on AF=2 127\.0\.0\.1:(\d+)")

    good = tls_front(good_pem, os.path.join(work, "socat-good.log"))
    other = tls_front(other_pem, os.path.join(work, "socat-other.log"))
    plain = f"ws://127.0.0.1:{mport}/v1"
    stock = [wormhole, "--relay-url", plain]
    base_env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR") and not k.startswith("MODEM_WORMHOLE")}
    cert_env = dict(base_env, SSL_CERT_FILE=good_cert)

    def ours(verb, relay, *args):
        return [modem, verb, "--wormhole", "--relay-url", relay, *args]

    def pair(first, second, first_env=None, second_env=None, first_cwd=None, second_cwd=None):
        """Starts `first` (the waiting side), runs `second`; both results."""
        a = subprocess.Popen(first, cwd=first_cwd, env=first_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        b = subprocess.run(second, cwd=second_cwd, env=second_env, capture_output=True, text=True, timeout=GUARD)
        ao, ae = a.communicate(timeout=GUARD)
        return (a.returncode, ao, ae), (b.returncode, b.stdout, b.stderr)

    code = iter(f"{n}-purple-sausages" for n in range(100, 1000))
    wss_name, wss_ip = f"wss://localhost:{good}/v1", f"wss://127.0.0.1:{good}/v1"

    # Text: modem over wss:// (trusted through SSL_CERT_FILE, a host name) -> stock over ws://.
    msg, c = f"over tls {os.urandom(4).hex()}", next(code)
    (sr, so, se), (rr, ro, re_) = pair(ours("send", wss_name, "--code", c, "--text", msg), stock + ["receive", "--only-text", c],
                                       first_env=cert_env, second_env=base_env)
    check("text over wss:// (SSL_CERT_FILE, a host name): modem send -> stock receive", sr == 0 and rr == 0 and ro.strip() == msg,
          (sr, rr, ro, se[-300:], re_[-300:]))

    # A file: stock over ws:// -> modem over wss:// (trusted through --ca, an IP address).
    d = os.path.join(work, "files")
    os.makedirs(os.path.join(d, "src")); os.makedirs(os.path.join(d, "in"))
    open(os.path.join(d, "src", "data.bin"), "wb").write(os.urandom(300_000))
    c = next(code)
    (sr, so, se), (rr, ro, re_) = pair(stock + ["send", "--hide-progress", "--code", c, "data.bin"],
                                       ours("receive", wss_ip, "--ca", good_cert, "--dir", os.path.join(d, "in"), "--accept-all", c),
                                       first_env=base_env, second_env=base_env, first_cwd=os.path.join(d, "src"))
    got = os.path.join(d, "in", "data.bin")
    check("a file over wss:// (--ca, an IP address): stock send -> modem receive, exact", sr == 0 and rr == 0 and os.path.exists(got)
          and filecmp.cmp(got, os.path.join(d, "src", "data.bin"), shallow=False), (sr, rr, re_[-300:], (so + se)[-300:]))

    # A file, modem to modem, both over wss:// (--ca on one side, SSL_CERT_FILE on the other).
    os.makedirs(os.path.join(d, "in2"))
    c = next(code)
    (sr, so, se), (rr, ro, re_) = pair(ours("send", wss_name, "--ca", good_cert, "--code", c, os.path.join(d, "src", "data.bin")),
                                       ours("receive", wss_name, "--dir", os.path.join(d, "in2"), "--accept-all", c),
                                       first_env=base_env, second_env=cert_env)
    got = os.path.join(d, "in2", "data.bin")
    check("a file over wss:// both sides (modem send --ca -> modem receive with SSL_CERT_FILE), exact", sr == 0 and rr == 0
          and os.path.exists(got) and filecmp.cmp(got, os.path.join(d, "src", "data.bin"), shallow=False), (sr, rr, se[-300:], re_[-300:]))

    # Not trusted: one line naming the server, the verification's reason and how to trust it; exit 3.
    r = subprocess.run(ours("send", wss_ip, "--code", next(code), "--text", "x"), capture_output=True, text=True, timeout=GUARD, env=base_env)
    check("an untrusted self-signed certificate: exit 3, one line 'wss://127.0.0.1:PORT: certificate verify failed: self-signed certificate; ... --ca FILE or SSL_CERT_FILE'",
          r.returncode == 3 and r.stderr.count("\n") == 1 and f"wss://127.0.0.1:{good}: certificate verify failed: self-signed certificate" in r.stderr
          and "--ca FILE or SSL_CERT_FILE" in r.stderr, (r.returncode, r.stderr))
    # Trusting another certificate does not help.
    r = subprocess.run(ours("receive", wss_name, "--ca", other_cert, "--accept-all", next(code)), capture_output=True, text=True,
                       timeout=GUARD, env=base_env)
    check("another certificate trusted with --ca: still refused (exit 3)", r.returncode == 3 and "certificate verify failed" in r.stderr,
          (r.returncode, r.stderr))
    # A trusted certificate for another name, and for another IP address.
    r = subprocess.run(ours("send", f"wss://localhost:{other}/v1", "--ca", other_cert, "--code", next(code), "--text", "x"),
                       capture_output=True, text=True, timeout=GUARD, env=base_env)
    check("a trusted certificate for another host name: exit 3, 'hostname mismatch'", r.returncode == 3
          and "certificate verify failed: hostname mismatch" in r.stderr and "not for localhost" in r.stderr and "--ca" not in r.stderr
          and r.stderr.count("\n") == 1, (r.returncode, r.stderr))
    r = subprocess.run(ours("send", f"wss://127.0.0.1:{other}/v1", "--code", next(code), "--text", "x"),
                       capture_output=True, text=True, timeout=GUARD, env=dict(base_env, SSL_CERT_FILE=other_cert))
    check("a trusted certificate for another IP address: exit 3, 'IP address mismatch'", r.returncode == 3
          and "certificate verify failed: IP address mismatch" in r.stderr, (r.returncode, r.stderr))
    # The mailbox by code takes the same options: refused the same way before any session.
    r = subprocess.run([modem, "mailbox", "--to", f"wormhole:{next(code)}", "--relay-url", wss_name, "--keys", os.path.join(work, "keys")],
                       capture_output=True, text=True, timeout=GUARD, env=base_env, stdin=subprocess.DEVNULL)
    check("modem mailbox by code over wss:// without trust: exit 3, the same reason", r.returncode == 3
          and "certificate verify failed: self-signed certificate" in r.stderr and "--ca FILE" in r.stderr, (r.returncode, r.stderr))
    # TLS spoken to a plain port: a clear failure, no hang.
    r = subprocess.run(ours("send", f"wss://127.0.0.1:{mport}/v1", "--code", next(code), "--text", "x"), capture_output=True, text=True,
                       timeout=GUARD, env=base_env)
    check("wss:// to a port without TLS: exit 3, one line naming the server", r.returncode == 3 and r.stderr.count("\n") == 1
          and f"wss://127.0.0.1:{mport}" in r.stderr, (r.returncode, r.stderr))
    # --ca misused: usage errors.
    r = subprocess.run(ours("send", plain, "--ca", good_cert, "--text", "x"), capture_output=True, text=True, timeout=GUARD, env=base_env)
    check("--ca with a ws:// relay: exit 64", r.returncode == 64 and "--ca" in r.stderr and "wss://" in r.stderr, (r.returncode, r.stderr))
    r = subprocess.run(ours("send", wss_name, "--ca", os.path.join(work, "missing.pem"), "--text", "x"), capture_output=True, text=True,
                       timeout=GUARD, env=base_env)
    check("--ca naming no certificate file: exit 64, the file named", r.returncode == 64 and "missing.pem" in r.stderr, (r.returncode, r.stderr))
finally:
    stop_all(procs)
    shutil.rmtree(work, ignore_errors=True)
check.finish()

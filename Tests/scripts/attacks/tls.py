#!/usr/bin/env python3
"""TLS of `modem-hub serve --tls-cert/--tls-key` (issue 32, defect 9): a hub with a self-signed
certificate made here refuses TLS 1.0 and 1.1 handshakes, and TLS 1.2 with a cipher outside Mozilla's
"intermediate" list, and accepts TLS 1.2 (with a forward-secret AEAD suite) and TLS 1.3. The client is
`openssl s_client` with OPENSSL_CONF=/dev/null and `@SECLEVEL=0`, so that it would offer the old
protocols itself (Debian's configuration refuses them on the client side). Standard library only.

Prints `ok|FAIL name` lines and `N passed, M failed`; exits 1 on a failure.

    tls.py MODEM_HUB
"""
import os, re, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from script_checks import Checks, start_server  # noqa: E402

HUB = sys.argv[1]
check = Checks()


def start_hub(work, cert, key):
    return start_server([HUB, "serve", "--bcrypt-cost", "4", "--listen", "127.0.0.1:0", "--db", "sqlite:" + os.path.join(work, "hub.sqlite"),
                         "--tls-cert", cert, "--tls-key", key], os.path.join(work, "hub.log"), "modem-hub: listening on 127.0.0.1:")


def handshake(port, *args):
    """The protocol and cipher `openssl s_client` negotiated, or None when the handshake failed."""
    env = dict(os.environ, OPENSSL_CONF="/dev/null")
    o = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", *args], input=b"", env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    text = o.stdout.decode(errors="replace")
    m = re.search(r"^New, (TLSv1(?:\.\d)?), Cipher is (\S+)", text, re.M)
    return (m.group(1), m.group(2)) if m else None


with tempfile.TemporaryDirectory() as work:
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    hub, port = start_hub(work, cert, key)
    try:
        old = "DEFAULT:@SECLEVEL=0"
        for flag, name in (("-tls1", "TLS 1.0"), ("-tls1_1", "TLS 1.1")):
            got = handshake(port, flag, "-cipher", old)
            check(f"a {name} handshake is refused", got is None, got)
        got = handshake(port, "-tls1_2", "-cipher", "AES128-SHA:AES256-SHA:" + old.split(":")[1])
        check("TLS 1.2 with only CBC suites without forward secrecy is refused", got is None, got)
        got = handshake(port, "-tls1_2")
        check("a TLS 1.2 handshake succeeds with an intermediate-profile suite",
              got is not None and got[0] == "TLSv1.2" and got[1].startswith("ECDHE-") and ("GCM" in got[1] or "CHACHA20" in got[1]), got)
        got = handshake(port, "-tls1_3")
        check("a TLS 1.3 handshake succeeds", got is not None and got[0] == "TLSv1.3", got)
        alive = subprocess.run(["curl", "-sf", "--cacert", cert, f"https://127.0.0.1:{port}/.well-known/oauth-authorization-server"],
                               stdout=subprocess.DEVNULL, timeout=30).returncode == 0
        check("the hub answers HTTPS", alive)
    finally:
        hub.terminate()
        hub.wait(30)

check.finish()

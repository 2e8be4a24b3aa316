#!/usr/bin/env python3
"""Makes Fixtures/wormhole/spake2-vectors.json with python-spake2 0.9 (the PAKE of magic-wormhole 0.24):
    .build/wormhole-venv/bin/python Tests/scripts/make_spake2_vectors.py > Fixtures/wormhole/spake2-vectors.json
Fixed inputs: for each case a password (a wormhole code), an identity (an application id) and the 64
bytes of entropy each side's secret scalar comes from; written: python-spake2's M, N and S elements,
each side's message (b"S" + element) and the key both finish with (the keys differ when the passwords
do). Also the magic-wormhole keys derived from the first case's key (derive_key, derive_phase_key), and
a secretbox under one of them with a fixed nonce (PyNaCl), so the test checks our whole key schedule."""
import hashlib, json
from spake2 import SPAKE2_Symmetric
from spake2.parameters.ed25519 import ParamsEd25519
from wormhole._key import derive_key, derive_phase_key
from nacl.secret import SecretBox


def entropy(tag):
    data = hashlib.sha512(tag.encode()).digest()
    return lambda n: data[:n]


cases = [
    ("11-purple-sausages", "lothar.com/wormhole/text-or-file-xfer", "11-purple-sausages"),
    ("7-guitarist-revenge", "swiftmodem.org/session-v1", "7-guitarist-revenge"),
    ("41-purple-sausages", "lothar.com/wormhole/text-or-file-xfer", "41-purple-elephants"),
    ("", "", ""),
    ("1-" + "x" * 200, "app", "1-" + "x" * 200),
]
out = {"M": ParamsEd25519.M.to_bytes().hex(), "N": ParamsEd25519.N.to_bytes().hex(), "S": ParamsEd25519.S.to_bytes().hex(),
       "cases": []}
for i, (pw_a, ident, pw_b) in enumerate(cases):
    ea, eb = entropy(f"case {i} side a"), entropy(f"case {i} side b")
    a = SPAKE2_Symmetric(pw_a.encode(), idSymmetric=ident.encode(), entropy_f=ea)
    b = SPAKE2_Symmetric(pw_b.encode(), idSymmetric=ident.encode(), entropy_f=eb)
    ma, mb = a.start(), b.start()
    ka, kb = a.finish(mb), b.finish(ma)
    out["cases"].append({"password_a": pw_a, "password_b": pw_b, "identity": ident,
                         "entropy_a": ea(64).hex(), "entropy_b": eb(64).hex(),
                         "message_a": ma.hex(), "message_b": mb.hex(), "key_a": ka.hex(), "key_b": kb.hex()})
key = bytes.fromhex(out["cases"][0]["key_a"])
phase = derive_phase_key(key, "0123456789", "version")
nonce = bytes(range(24))
out["derived"] = {
    "key": key.hex(),
    "transit_key": derive_key(key, b"lothar.com/wormhole/text-or-file-xfer/transit-key").hex(),
    "phase_key_side_0123456789_version": phase.hex(),
    "sealed_hello_with_nonce_00_to_17": SecretBox(phase).encrypt(b"hello", nonce).hex(),
}
print(json.dumps(out, indent=1, sort_keys=True))

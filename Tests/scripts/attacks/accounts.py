#!/usr/bin/env python3
"""Attacks on the hub's account flow (issue 32, defects 1 and 2) from 127.0.0.2, with an honest user on
127.0.0.1 beside them, against a real `modem-hub serve --log-codes` this script starts. Each attack must
fail; the honest user must sign up, confirm, log in, ask for a reset and reset all the same.

  - takeover through names that differ in case: the attacker signs up `VICTIM`, the victim `victim`
    and confirms; the attacker's code must not confirm anything nor give the victim's tokens;
  - a pending sign-up replaced (any case): the old code has no power left;
  - reset-code guessing: rounds of forgot + 5 wrong codes: few codes issued, few guesses answered;
  - a sign-up burst from one address: refused with 429 before it is over;
  - password guessing against one account under many cases of its name, and across many names;
  - every refusal is 429 with Retry-After and a JSend `fail` body.

Prints `ok|FAIL name` lines and `N passed, M failed`; exits 1 on a failure.

    accounts.py MODEM_HUB DB WORKDIR      (DB: sqlite:PATH or postgres://...)
"""
import os, re, subprocess, sys, threading, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from script_checks import Checks, start_server
import requests
from requests.adapters import HTTPAdapter

HUB, DB, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
GUARD = 120  # seconds: a hang guard far above every expected time
check = Checks()
os.makedirs(WORK, exist_ok=True)


class SourceAdapter(HTTPAdapter):
    """Connections from a given local address (127.0.0.2 is another client than 127.0.0.1)."""
    def __init__(self, source, **kw):
        self.source = source
        super().__init__(**kw)

    def init_poolmanager(self, *a, **kw):
        kw["source_address"] = (self.source, 0)
        return super().init_poolmanager(*a, **kw)


def session(source):
    s = requests.Session()
    s.mount("http://", SourceAdapter(source))
    return s


def add_client(name, grant):
    out = subprocess.run([HUB, "client", "add", name, "--db", DB] + (["--password-grant"] if grant else []),
                         capture_output=True, text=True, timeout=GUARD)
    kv = dict(line.split("=", 1) for line in out.stdout.split() if "=" in line)
    if "client_id" not in kv: raise SystemExit(f"client add failed: {out.returncode} {out.stdout} {out.stderr}")
    return kv["client_id"], kv["client_secret"]


cid, secret = add_client("attack-suite", True)
log_path = os.path.join(WORK, "hub.log")
# No bound that decides a check here has a window shorter than an hour, so the outcome does not depend on
# how fast this machine runs bcrypt: the per-minute login bounds are raised out of the way and the per-hour
# ones set low (the per-minute bounds are covered on a manual clock by AttackAccountsTests). Every other
# bound used here (sign-ups, codes, guesses) is per hour by default.
# bcrypt at its lowest cost (--bcrypt-cost 4): the bounds are counts, not times, and a debug build's
# bcrypt at the default 12 takes about a second (the default is tested in PeerInteropTests).
LOGIN_FAILURES_PER_HOUR, LOGINS_PER_ADDRESS_PER_HOUR = 5, 25
hub, port = start_server([HUB, "serve", "--bcrypt-cost", "4", "--listen", "127.0.0.1:0", "--db", DB, "--log-codes",
                          "--login-failures-per-account-per-minute", "10000",
                          "--login-failures-per-account-per-hour", str(LOGIN_FAILURES_PER_HOUR),
                          "--logins-per-address-per-minute", "100000",
                          "--logins-per-address-per-hour", str(LOGINS_PER_ADDRESS_PER_HOUR)],
                         log_path, "modem-hub: listening on 127.0.0.1:", GUARD)
B = f"http://127.0.0.1:{port}"
attacker, honest = session("127.0.0.2"), session("127.0.0.1")


def cc_token(s):
    r = s.post(B + "/oauth/token", data={"grant_type": "client_credentials"}, auth=(cid, secret), timeout=GUARD)
    return r.json()["access_token"]


AH = {"Authorization": "Bearer " + cc_token(attacker)}
HH = {"Authorization": "Bearer " + cc_token(honest)}


def post(s, h, path, body):
    return s.post(B + path, json=body, headers=h, timeout=GUARD)


def login(s, user, pw):
    return s.post(B + "/oauth/token", data={"grant_type": "password", "username": user, "password": pw},
                  auth=(cid, secret), timeout=GUARD)


def codes(kind, user):
    what = "reset code" if kind == "reset" else "confirmation code"
    return re.findall(re.escape(f"{what} for {user}: ") + r"(\d{8})", open(log_path, errors="replace").read())


def wait_code(kind, user, n=1):
    end = time.monotonic() + GUARD
    while time.monotonic() < end:
        c = codes(kind, user)
        if len(c) >= n: return c[-1]
        time.sleep(0.02)
    return None


refusals = []  # every 429 seen, checked for its form at the end


def note(r):
    if r.status_code == 429: refusals.append(r)
    return r


def me_name(access):
    r = requests.get(B + "/v1/users/me", headers={"Authorization": "Bearer " + access}, timeout=GUARD)
    return (r.json().get("data") or {}).get("name")


sfx = str(int(time.time() * 1000) % 10**7)

# 1. The takeover through names that differ only in case.
upper, lower = "VICTIM" + sfx, "victim" + sfx
r = post(attacker, AH, "/v1/accounts", {"username": upper, "password": "attacker-password-1", "contact": "attacker@example.org"})
check("the attacker's sign-up of VICTIM is accepted (pending)", r.status_code == 202, r.text)
attacker_code = wait_code("confirm", upper)
r = post(honest, HH, "/v1/accounts", {"username": lower, "password": "victim-password-12", "contact": "victim@example.org"})
check("the victim's sign-up of victim replaces the pending VICTIM", r.status_code == 202, r.text)
victim_code = wait_code("confirm", lower)
r = post(honest, HH, "/v1/accounts/confirm", {"username": lower, "code": victim_code or "00000000"})
check("the victim confirms and gets tokens", r.status_code == 200 and me_name(r.json()["data"]["access_token"]) == lower, r.text)
for name in (upper, lower, upper.capitalize()):
    r = post(attacker, AH, "/v1/accounts/confirm", {"username": name, "code": attacker_code or "00000000"})
    got = r.status_code == 200 and (me_name(r.json()["data"]["access_token"]) or "").lower() == lower
    check(f"the attacker's code for the pending VICTIM confirms nothing as {name[:7]}...", r.status_code in (404, 429) and not got,
          f"{r.status_code} {r.text[:200]}")
r = post(attacker, AH, "/v1/accounts", {"username": upper, "password": "attacker-password-1", "contact": "attacker@example.org"})
check("a confirmed name is taken in any case (409)", r.status_code == 409 and r.json().get("status") == "fail", r.text)

# 2. A pending sign-up replaced (another case): the old code has no power left.
m1, m2 = "mallory" + sfx, "MALLORY" + sfx
post(attacker, AH, "/v1/accounts", {"username": m1, "password": "mallory-password-1", "contact": "m@example.org"})
old = wait_code("confirm", m1)
post(attacker, AH, "/v1/accounts", {"username": m2, "password": "mallory-password-2", "contact": "m@example.org"})
new = wait_code("confirm", m2)
r = post(attacker, AH, "/v1/accounts/confirm", {"username": m2, "code": old or "00000000"})
check("the code of a replaced sign-up confirms nothing", r.status_code == 404 or (old == new), r.text)
r = post(attacker, AH, "/v1/accounts/confirm", {"username": m1, "code": new or "00000000"})
check("the replacing sign-up's code confirms it (under any case of the name)",
      r.status_code == 200 and me_name(r.json()["data"]["access_token"]) == m2, r.text)

# 3. Reset-code guessing: 40 rounds of forgot + 5 wrong codes, the name in changing case.
target = "guessme" + sfx
post(honest, HH, "/v1/accounts", {"username": target, "password": "guess-me-password", "contact": "g@example.org"})
r = post(honest, HH, "/v1/accounts/confirm", {"username": target, "code": wait_code("confirm", target) or "00000000"})
check("the target account is confirmed", r.status_code == 200, r.text)
answered, t0 = 0, time.monotonic()
for i in range(40):
    name = target.upper() if i % 2 else target
    note(post(attacker, AH, "/v1/accounts/forgot", {"username": name}))
    for j in range(5):
        r = note(post(attacker, AH, "/v1/accounts/reset", {"username": name, "code": f"{(i * 5 + j) % 10**8:08d}", "password": "new-password-123"}))
        if r.status_code != 429: answered += 1
        if r.status_code == 200: check("a guessed reset code (should be 1 in 10^8)", False, r.text)
issued = len(codes("reset", target)) + len(codes("reset", target.upper()))
check("reset-code guessing: at most 3 codes issued for the account", issued <= 3, f"{issued} codes")
check("reset-code guessing: at most 10 guesses answered for the account", answered <= 10,
      f"{answered} of 200 answered in {time.monotonic() - t0:.1f} s")

# 4. Password guessing: one account under many cases, then many names, from one address.
failures, locked = 0, False
for i in range(12):
    name = "".join(c.upper() if (i >> k) & 1 else c for k, c in enumerate(target))
    r = note(login(attacker, name, f"wrong-password-{i}"))
    if r.status_code == 429: locked = True
    elif r.status_code == 400: failures += 1
check(f"password guessing on one account is refused after {LOGIN_FAILURES_PER_HOUR} failures, whatever the case of its name",
      locked and failures <= LOGIN_FAILURES_PER_HOUR, f"{failures} failures answered")
spread = [note(login(attacker, f"nobody{sfx}x{i}", "wrong-password")).status_code for i in range(30)]
check(f"password grants from one address are bounded ({LOGINS_PER_ADDRESS_PER_HOUR} an hour: 429 within 30 names)",
      429 in spread and spread.count(400) <= LOGINS_PER_ADDRESS_PER_HOUR, sorted(set(spread)))

# 4b. A burst of concurrent guesses at one account is counted before its bcrypt: at most the bound answered.
burst_target = "burst" + sfx
post(honest, HH, "/v1/accounts", {"username": burst_target, "password": "burst-password-1", "contact": "b@example.org"})
r = post(honest, HH, "/v1/accounts/confirm", {"username": burst_target, "code": wait_code("confirm", burst_target) or "00000000"})
check("the burst target account is confirmed", r.status_code == 200, r.text)
burst_statuses = []
def guess(i):
    s = session("127.0.0.%d" % (3 + i % 2))  # two more addresses, so that the address bounds do not decide
    burst_statuses.append(note(login(s, burst_target, f"wrong-burst-{i}")).status_code)
threads = [threading.Thread(target=guess, args=(i,)) for i in range(20)]
for t in threads: t.start()
for t in threads: t.join(GUARD)
check(f"20 concurrent guesses at one account: at most {LOGIN_FAILURES_PER_HOUR} answered",
      burst_statuses.count(400) <= LOGIN_FAILURES_PER_HOUR and burst_statuses.count(429) >= 20 - LOGIN_FAILURES_PER_HOUR,
      sorted(burst_statuses))

# 5. A sign-up burst from 127.0.0.2 while the honest user signs up, confirms and logs in from 127.0.0.1.
burst = []
def flood():
    for i in range(60):
        burst.append(note(post(attacker, AH, "/v1/accounts", {"username": f"flood{sfx}x{i}", "password": "flood-password-1",
                                                             "contact": "f@example.org"})).status_code)
t = threading.Thread(target=flood)
t.start()
me = "honest" + sfx
r = post(honest, HH, "/v1/accounts", {"username": me, "password": "honest-password-1", "contact": "h@example.org"})
check("the honest user signs up during the burst", r.status_code == 202, r.text)
r = post(honest, HH, "/v1/accounts/confirm", {"username": me, "code": wait_code("confirm", me) or "00000000"})
check("the honest user confirms", r.status_code == 200, r.text)
t.join(GUARD * 3)
check("60 sign-ups from one address in a burst are refused with 429 before the end", 429 in burst and burst.count(202) <= 20,
      f"{burst.count(202)} accepted, statuses {sorted(set(burst))}")
r = login(honest, me, "honest-password-1")
check("the honest user logs in (password grant)", r.status_code == 200 and "access_token" in r.json(), r.text)
r = post(honest, HH, "/v1/accounts/forgot", {"username": me.upper()})
check("the honest user asks for a reset code", r.status_code == 202, r.text)
r = post(honest, HH, "/v1/accounts/reset", {"username": me, "code": wait_code("reset", me) or "00000000", "password": "honest-password-2"})
check("the honest user resets the password", r.status_code == 200 and me_name(r.json()["data"]["access_token"]) == me, r.text)
r = login(honest, me.upper(), "honest-password-2")
check("the honest user logs in with the new password (any case of the name)", r.status_code == 200, r.text)

# Every refusal: 429, Retry-After in whole seconds, a JSend fail body (the token endpoint's is OAuth's).
bad = []
for r in refusals:
    ra = r.headers.get("Retry-After", "")
    body = r.json() if r.headers.get("Content-Type", "").startswith("application/json") else {}
    shape = body.get("status") == "fail" if "/v1/" in r.url else body.get("error") == "invalid_request"
    if not (ra.isdigit() and int(ra) >= 1 and shape): bad.append(f"{r.url} {ra!r} {r.text[:80]}")
check(f"every refusal ({len(refusals)}) is 429 with Retry-After and a JSend fail (or OAuth) body", refusals and not bad, bad[:3])
check("the hub is alive", requests.get(B + "/.well-known/oauth-authorization-server", timeout=GUARD).ok)
hub.terminate()
try: hub.wait(GUARD)
except subprocess.TimeoutExpired: hub.kill()
check.finish()

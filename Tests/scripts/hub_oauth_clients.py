#!/usr/bin/env python3
"""Independent OAuth2 clients against a running modem-hub: requests-oauthlib's BackendApplicationClient
(client credentials) and LegacyApplicationClient (password grant), and authlib's OAuth2Session; each gets
a token, uses it, refreshes (where the grant has refresh tokens) and revokes it. Plus the RFC error cases
seen from plain requests.

usage: hub_oauth_clients.py BASE CID CSECRET PWCID PWSECRET USER PASSWORD [CA_BUNDLE]
Prints one line per failure and a closing 'N passed, M failed'; exit 1 on any failure."""
import os
import sys

import requests
from requests.auth import HTTPBasicAuth
from oauthlib.oauth2 import BackendApplicationClient, LegacyApplicationClient
from requests_oauthlib import OAuth2Session
from authlib.integrations.requests_client import OAuth2Session as AuthlibSession

base, cid, csec, pcid, psec, user, pw = sys.argv[1:8]
verify = sys.argv[8] if len(sys.argv) > 8 else True
if verify is not True:
    # Every requests-based client (authlib passes its own verify=True) trusts the test's certificate.
    os.environ["REQUESTS_CA_BUNDLE"] = verify
if base.startswith("http://"):
    # oauthlib refuses plain HTTP unless told; the loopback run is the only place we allow it.
    os.environ["OAUTHLIB_INSECURE_TRANSPORT"] = "1"
tok_url, rev_url, me_url = base + "/oauth/token", base + "/oauth/revoke", base + "/v1/users/me"
passed, failed = 0, []


def check(name, cond, detail=""):
    global passed
    if cond:
        passed += 1
    else:
        failed.append(f"{name}: {str(detail)[:200]}")


def run(name, fn):
    try:
        fn()
    except Exception as e:  # a client library refusing the answer counts as a failure
        failed.append(f"{name}: {type(e).__name__}: {str(e)[:200]}")


def bearer_refused(token, name):
    r = requests.get(me_url, headers={"Authorization": "Bearer " + token}, verify=verify, timeout=60)
    www = r.headers.get("WWW-Authenticate", "")
    check(name, r.status_code == 401 and www.startswith("Bearer") and "invalid_token" in www
          and r.json().get("status") == "fail", (r.status_code, www, r.text))


def revoke_with_oauthlib(client, token, hint, auth):
    # oauthlib builds the RFC 7009 request; requests sends it with HTTP Basic client authentication.
    url, headers, body = client.prepare_token_revocation_request(rev_url, token, token_type_hint=hint)
    return requests.post(url, data=body, headers=headers, auth=auth, verify=verify, timeout=60)


def backend_application():
    client = BackendApplicationClient(client_id=cid)
    s = OAuth2Session(client=client)
    t = s.fetch_token(token_url=tok_url, client_id=cid, client_secret=csec, verify=verify, timeout=60)
    check("backend: bearer token", t.get("token_type", "").lower() == "bearer" and t.get("expires_in") and "access_token" in t, t)
    check("backend: no refresh token", "refresh_token" not in t, t)
    r = s.get(me_url, verify=verify, timeout=60)
    check("backend: token used", r.status_code == 200 and r.json()["data"]["kind"] == "client", r.text)
    # A client-credentials client "refreshes" by asking again: a new, different token.
    t2 = s.fetch_token(token_url=tok_url, client_id=cid, client_secret=csec, verify=verify, timeout=60)
    check("backend: new token", t2["access_token"] != t["access_token"], t2)
    rv = revoke_with_oauthlib(client, t2["access_token"], "access_token", HTTPBasicAuth(cid, csec))
    check("backend: revoke 200", rv.status_code == 200, (rv.status_code, rv.text))
    bearer_refused(t2["access_token"], "backend: revoked token refused")
    r = requests.get(me_url, headers={"Authorization": "Bearer " + t["access_token"]}, verify=verify, timeout=60)
    check("backend: other token still good", r.status_code == 200, r.text)


def legacy_application():
    client = LegacyApplicationClient(client_id=pcid)
    s = OAuth2Session(client=client)
    t = s.fetch_token(token_url=tok_url, username=user, password=pw, client_id=pcid, client_secret=psec,
                      verify=verify, timeout=60)
    check("legacy: access and refresh", "access_token" in t and "refresh_token" in t, t)
    r = s.get(me_url, verify=verify, timeout=60)
    check("legacy: token used", r.status_code == 200 and r.json()["data"]["kind"] == "account", r.text)
    t2 = s.refresh_token(tok_url, auth=HTTPBasicAuth(pcid, psec), verify=verify, timeout=60)
    check("legacy: refreshed", t2.get("access_token") and t2["access_token"] != t["access_token"]
          and t2.get("refresh_token") and t2["refresh_token"] != t["refresh_token"], t2)
    r = s.get(me_url, verify=verify, timeout=60)
    check("legacy: refreshed token used", r.status_code == 200, r.text)
    rv = revoke_with_oauthlib(client, t2["refresh_token"], "refresh_token", HTTPBasicAuth(pcid, psec))
    check("legacy: revoke refresh 200", rv.status_code == 200, rv.text)
    bearer_refused(t2["access_token"], "legacy: access token of a revoked family refused")
    old = requests.post(tok_url, data={"grant_type": "refresh_token", "refresh_token": t2["refresh_token"]},
                        auth=HTTPBasicAuth(pcid, psec), verify=verify, timeout=60)
    check("legacy: revoked refresh refused", old.status_code == 400 and old.json().get("error") == "invalid_grant", old.text)


def authlib_clients():
    for method in ("client_secret_basic", "client_secret_post"):
        s = AuthlibSession(cid, csec, token_endpoint_auth_method=method)
        s.verify = verify
        t = s.fetch_token(tok_url, grant_type="client_credentials")
        r = s.get(me_url)
        check(f"authlib {method}: client credentials", "access_token" in t and r.status_code == 200, (t, r.status_code))
        rv = s.revoke_token(rev_url, token=t["access_token"], token_type_hint="access_token")
        check(f"authlib {method}: revoke", rv.status_code == 200, rv.text)
        bearer_refused(t["access_token"], f"authlib {method}: revoked token refused")
    s = AuthlibSession(pcid, psec, token_endpoint_auth_method="client_secret_basic")
    s.verify = verify
    t = s.fetch_token(tok_url, username=user, password=pw)
    check("authlib password", "refresh_token" in t, t)
    t2 = s.refresh_token(tok_url, refresh_token=t["refresh_token"])
    check("authlib refresh", t2["access_token"] != t["access_token"], t2)
    r = s.get(me_url)
    check("authlib refreshed token used", r.status_code == 200, r.text)
    replay = requests.post(tok_url, data={"grant_type": "refresh_token", "refresh_token": t["refresh_token"]},
                           auth=HTTPBasicAuth(pcid, psec), verify=verify, timeout=60)
    check("authlib: rotated refresh token refused", replay.status_code == 400 and replay.json().get("error") == "invalid_grant", replay.text)
    bearer_refused(t2["access_token"], "authlib: reuse revoked the family")


def errors():
    def post(data, auth):
        return requests.post(tok_url, data=data, auth=auth, verify=verify, timeout=60)
    good, pwc = HTTPBasicAuth(cid, csec), HTTPBasicAuth(pcid, psec)
    r = post({"grant_type": "client_credentials"}, HTTPBasicAuth(cid, csec + "x"))
    check("wrong secret", r.status_code == 401 and r.json().get("error") == "invalid_client"
          and r.headers.get("WWW-Authenticate", "").startswith("Basic"), (r.status_code, r.text))
    for data, auth, status, code in (({"grant_type": "foo"}, good, 400, "unsupported_grant_type"),
                                     ({}, good, 400, "invalid_request"),
                                     ({"grant_type": "password", "username": user, "password": pw}, good, 400, "unauthorized_client"),
                                     ({"grant_type": "password", "username": user, "password": pw + "x"}, pwc, 400, "invalid_grant"),
                                     ({"grant_type": "client_credentials", "scope": "admin"}, good, 400, "invalid_scope")):
        r = post(data, auth)
        check(f"error {code}", r.status_code == status and r.json().get("error") == code
              and "no-store" in r.headers.get("Cache-Control", ""), (r.status_code, r.text))
    r = requests.get(me_url, verify=verify, timeout=60)
    check("no token", r.status_code == 401 and r.headers.get("WWW-Authenticate") == 'Bearer realm="modem-hub"', r.status_code)
    bearer_refused("mha_forged", "forged token refused")
    r = requests.post(rev_url, data={"token": "no-such-token"}, auth=good, verify=verify, timeout=60)
    check("revoke unknown 200", r.status_code == 200, r.text)
    m = requests.get(base + "/.well-known/oauth-authorization-server", verify=verify, timeout=60).json()
    check("metadata", m.get("token_endpoint") == tok_url and m.get("revocation_endpoint") == rev_url, m)


for name, fn in (("backend application", backend_application), ("legacy application", legacy_application),
                 ("authlib", authlib_clients), ("errors", errors)):
    run(name, fn)
for f in failed:
    print("FAIL " + f)
print(f"{passed} passed, {len(failed)} failed")
sys.exit(1 if failed else 0)

# SPDX-License-Identifier: ISC
"""Ingest for real providers (issue 3): verification presets, on_verify_failure,
dedupe, tenant rate limits, the quarantine pen, the counters.

Requests are signed here, in Python, independently of workers/verify.c.
"""

import base64
import concurrent.futures
import hashlib
import hmac
import json
import time

from ankusa import (Daemon, expect, expect_accepted, jbody, hold_source, post,
                    wait_until)

SWH_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SWH_KEY = base64.b64decode(SWH_SECRET[len("whsec_"):])


def hm(key, msg, algo=hashlib.sha256):
    if isinstance(key, str):
        key = key.encode()
    return hmac.new(key, msg, algo).digest()


def sign_stripe(secret, body, t=None):
    t = int(time.time()) if t is None else t
    sig = hm(secret, b"%d." % t + body).hex()
    return {"Stripe-Signature": "t=%d,v1=%s,v1=%s" % (t, "00" * 32, sig)}


def sign_github(secret, body):
    return {"X-Hub-Signature-256": "sha256=" + hm(secret, body).hex()}


def sign_swh(key, body, msg_id="msg_1", t=None):
    t = int(time.time()) if t is None else t
    sig = base64.b64encode(hm(key, b"%s.%d." % (msg_id.encode(), t) +
                              body)).decode()
    return {"webhook-id": msg_id, "webhook-timestamp": str(t),
            "webhook-signature": "v1,%s v1,%s" % (
                base64.b64encode(b"x" * 32).decode(), sig)}


def sign_shopify(secret, body):
    return {"X-Shopify-Hmac-SHA256": base64.b64encode(hm(secret,
                                                         body)).decode()}


def sign_slack(secret, body, t=None):
    t = int(time.time()) if t is None else t
    return {"X-Slack-Request-Timestamp": str(t),
            "X-Slack-Signature": "v0=" + hm(secret, b"v0:%d:" % t +
                                          body).hex()}


def sign_custom(secret, body, t=None):
    """signed "{ts}:{header:x-shop}:{body}", sha512, base64, prefix sig="""
    t = int(time.time()) if t is None else t
    msg = b"%d:shop-1:" % t + body
    return {"X-Ts": str(t), "X-Shop": "shop-1",
            "X-Sig": "sig=" + base64.b64encode(hm(secret, msg,
                                                  hashlib.sha512)).decode()}


def src(vtype, secret, **extra):
    s = hold_source(**extra)
    s["verify"] = {"type": vtype, "secret": secret}
    return s


def preset_sources():
    custom = src("hmac", "custom-secret")
    custom["verify"].update({
        "signature_header": "x-sig", "signed": "{ts}:{header:x-shop}:{body}",
        "hash": "sha512", "encoding": "base64", "sig_prefix": "sig=",
        "timestamp_header": "x-ts"})
    return {
        "stripe": src("stripe", "sk-stripe"),
        "github": src("github", ["new-secret", "old-secret"]),
        "swh": src("standard_webhooks", SWH_SECRET),
        "shopify": src("shopify", "shpss"),
        "slack": src("slack", "slack-secret"),
        "custom": custom,
    }


def count_source(d, source):
    return len(d.queue(source=source))


def counters(d):
    _, out, _ = d.ctl("stats", json_out=True)
    return json.loads(out)["counters"]


def test_presets_accept_signed_reject_forged():
    d = Daemon(sources=preset_sources()).start()
    body = b'{"id":"evt_1","type":"ping"}'
    signed = {
        "stripe": sign_stripe("sk-stripe", body),
        "github": sign_github("old-secret", body),      # rotation: 2nd key
        "swh": sign_swh(SWH_KEY, body),
        "shopify": sign_shopify("shpss", body),
        "slack": sign_slack("slack-secret", body),
        "custom": sign_custom("custom-secret", body),
    }
    for name, hdrs in signed.items():
        st, h, data = post(d.port, "/webhooks/" + name, body, headers=hdrs)
        expect_accepted(st, h, data, "signed %s" % name)

    forged = {
        "stripe": sign_stripe("wrong", body),
        "github": sign_github("wrong", body),
        "swh": sign_swh(b"w" * 24, body),
        "shopify": sign_shopify("wrong", body),
        "slack": sign_slack("wrong", body),
        "custom": sign_custom("wrong", body),
    }
    for name, hdrs in forged.items():
        st, h, data = post(d.port, "/webhooks/" + name, body, headers=hdrs)
        expect(st, h, data, 401, {"error": "verification_failed",
                                  "reason": "no_match"}, "forged " + name)
    # Other failure reasons, each through its preset.
    st, h, data = post(d.port, "/webhooks/github", body)
    expect(st, h, data, 401, {"error": "verification_failed",
                              "reason": "missing_signature"})
    st, h, data = post(d.port, "/webhooks/github", body,
                       headers={"X-Hub-Signature-256": "sha256=zz"})
    expect(st, h, data, 401, {"error": "verification_failed",
                              "reason": "malformed_signature"})
    old = int(time.time()) - 301
    st, h, data = post(d.port, "/webhooks/stripe", body,
                       headers=sign_stripe("sk-stripe", body, t=old))
    expect(st, h, data, 401, {"error": "verification_failed",
                              "reason": "timestamp_out_of_tolerance"})
    # A signed request whose body was changed on the way.
    st, h, data = post(d.port, "/webhooks/shopify", body + b" ",
                       headers=sign_shopify("shpss", body))
    expect(st, h, data, 401, {"error": "verification_failed",
                              "reason": "no_match"})

    # Nothing forged was stored: one hook per source.
    q = d.queue()
    per = {}
    for item in q:
        per[item["source"]] = per.get(item["source"], 0) + 1
    assert per == {n: 1 for n in signed}, "stored per source: %r" % per
    c = counters(d)
    key = 'ankusa_verify_failures_total{source_id="github",scheme="github"}'
    assert c.get(key) == 3, "counter %s = %r (%r)" % (key, c.get(key), c)
    key = 'ankusa_ingest_refused_total{reason="verification_failed"}'
    assert c.get(key) == 10, "counter %s = %r" % (key, c.get(key))


def test_dedupe_duplicate_answered_with_original_id():
    sources = {
        "gh": hold_source(dedupe="github"),
        "st": hold_source(dedupe="stripe", tenant="acme"),
        "other": hold_source(dedupe="github"),
    }
    d = Daemon(sources=sources).start()
    h1 = {"X-GitHub-Delivery": "d-1"}
    st, h, data = post(d.port, "/webhooks/gh", b"{}", headers=h1)
    first = expect_accepted(st, h, data, "first")
    st, h, data = post(d.port, "/webhooks/gh", b'{"again":1}', headers=h1)
    expect(st, h, data, 201, {"status": "accepted", "id": first,
                              "duplicate": True}, "duplicate")
    # Scope is (tenant, source, key): the same key on another source is new.
    st, h, data = post(d.port, "/webhooks/other", b"{}", headers=h1)
    other = expect_accepted(st, h, data, "same key, other source")
    assert other != first
    # stripe: the JSON field id.
    st, h, data = post(d.port, "/webhooks/st", b'{"id":"evt_9","n":1}')
    sid = expect_accepted(st, h, data, "stripe first")
    st, h, data = post(d.port, "/webhooks/st", b'{"n":2,"id":"evt_9"}')
    expect(st, h, data, 201, {"status": "accepted", "id": sid,
                              "duplicate": True}, "stripe duplicate")
    # Concurrent posts of one new key: one stored, all answered its id.
    hdr = {"X-GitHub-Delivery": "burst-1"}
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        res = list(ex.map(lambda i: post(d.port, "/webhooks/gh", b"{}",
                                         headers=hdr), range(16)))
    ids = set()
    for st, h, data in res:
        assert st == 201, "burst: %d %r" % (st, data)
        ids.add(jbody(data)["id"])
    assert len(ids) == 1, "burst of one key got ids %r" % ids
    assert sum(1 for _, _, data in res if "duplicate" not in jbody(data)) \
        == 1, "burst: exactly one answer must be the original"
    q = d.queue(source="gh")
    assert len(q) == 2, "gh stores %d hooks, want 2" % len(q)
    # Survives a restart: the key is in the store.
    d.stop()
    d.start()
    st, h, data = post(d.port, "/webhooks/gh", b"{}", headers=h1)
    expect(st, h, data, 201, {"status": "accepted", "id": first,
                              "duplicate": True}, "after restart")


def test_rate_limit_per_tenant():
    sources = {"a": hold_source(tenant="acme"),
               "g": hold_source(tenant="globex")}
    extra = {"rate_limits": {"tenants": {"acme": {"rate": 0.5,
                                                  "burst": 2}}}}
    d = Daemon(sources=sources, extra=extra).start()
    for i in range(2):
        st, h, data = post(d.port, "/webhooks/a", b"{}")
        expect_accepted(st, h, data, "acme %d" % i)
    st, h, data = post(d.port, "/webhooks/a", b"{}")
    expect(st, h, data, 429, {"error": "rate_limited"}, "acme over limit")
    ra = h.get("retry-after")
    assert ra in ("1", "2"), "Retry-After %r, want whole seconds 1..2" % ra
    # Another tenant is not limited.
    for i in range(5):
        st, h, data = post(d.port, "/webhooks/g", b"{}")
        expect_accepted(st, h, data, "globex %d" % i)
    assert count_source(d, "a") == 2, "a refused hook was stored"
    c = counters(d)
    key = 'ankusa_rate_limit_rejected_total{tenant_id="acme"}'
    assert c.get(key) == 1, "counter %s = %r" % (key, c.get(key))
    # After the wait, acme passes again.
    time.sleep(int(ra))
    st, h, data = post(d.port, "/webhooks/a", b"{}")
    expect_accepted(st, h, data, "acme after Retry-After")


def test_accept_flag():
    s = src("github", "right")
    s["on_verify_failure"] = "accept_flag"
    s["dedupe"] = "github"
    d = Daemon(sources={"gh": s}).start()
    hdrs = dict(sign_github("wrong", b"{}"), **{"X-GitHub-Delivery": "k"})
    st, h, data = post(d.port, "/webhooks/gh", b"{}", headers=hdrs)
    a = expect_accepted(st, h, data, "forged, accept_flag")
    # No dedupe key: the same forged request again is stored again.
    st, h, data = post(d.port, "/webhooks/gh", b"{}", headers=hdrs)
    b = expect_accepted(st, h, data, "forged again")
    assert a != b
    q = {x["id"]: x for x in d.queue()}
    assert q[a]["flagged"] is True and q[b]["flagged"] is True, q


def test_quarantine_list_release_purge():
    s = src("github", "current")
    s["on_verify_failure"] = "quarantine"
    extra = {"quarantine": {"burst": 3, "rate": 0.001,
                            "max_bytes": 1000000}}
    d = Daemon(sources={"gh": s}, extra=extra).start()
    body = b'{"held":true}'
    # Signed with a secret the daemon does not know yet.
    st, h, data = post(d.port, "/webhooks/gh", body,
                       headers=sign_github("next", body))
    j = jbody(data)
    assert st == 202 and j.get("status") == "quarantined", (st, data)
    held = j["id"]
    # A plain forgery, held too.
    st, h, data = post(d.port, "/webhooks/gh", b"{}",
                       headers=sign_github("forger", b"{}"))
    assert st == 202, (st, data)
    forged = jbody(data)["id"]
    st, h, data = post(d.port, "/webhooks/gh", b"{}",
                       headers=sign_github("forger", b"{}"))
    assert st == 202, (st, data)
    # The pen's bucket (burst 3) is spent.
    st, h, data = post(d.port, "/webhooks/gh", b"{}",
                       headers=sign_github("forger", b"{}"))
    expect(st, h, data, 429, {"error": "quarantine_rate_limited"})
    assert h.get("retry-after"), "429 without Retry-After"

    assert d.queue() == [], "held hooks must not be queued"
    _, out, _ = d.ctl("quarantine", "list", json_out=True)
    pen = [json.loads(l) for l in out.splitlines() if l.strip()]
    assert len(pen) == 3, pen
    assert {p["id"] for p in pen} >= {held, forged}
    for p in pen:
        assert p["source"] == "gh" and p["reason"] == "no_match", p
        assert "body" not in p and "body_base64" not in p, p
    _, out, _ = d.ctl("quarantine", "list")
    assert held in out and "no_match" in out, out

    # Rotate: the new secret in, then release.  Only the hook signed with
    # it passes; it is stored with its original id.
    s["verify"]["secret"] = ["next", "current"]
    d.write_config()
    d.ctl("reload")
    _, out, _ = d.ctl("quarantine", "release", json_out=True)
    r = json.loads(out)
    assert r == {"released": 1, "kept": 2, "failed": 0}, r
    q = d.queue()
    assert [x["id"] for x in q] == [held], q
    assert q[0]["size"] == len(body)
    _, out, _ = d.ctl("quarantine", "list", json_out=True)
    assert len([l for l in out.splitlines() if l.strip()]) == 2

    # Purge one by id, then the rest.
    _, out, _ = d.ctl("quarantine", "purge", "--id", forged, json_out=True)
    assert json.loads(out) == {"purged": 1}, out
    # Without -S or --id, purge refuses unless given --all.
    rc, out, err = d.ctl("quarantine", "purge", check=False)
    assert rc == 1 and "--all" in err, (rc, out, err)
    assert len(d.ctl("quarantine", "list", json_out=True)[1].split()) == 1
    _, out, _ = d.ctl("quarantine", "purge", "--all", json_out=True)
    assert json.loads(out) == {"purged": 1}, out
    rc, out, err = d.ctl("quarantine", "purge", "--all", "-S", "x",
                         check=False)
    assert rc == 2, (rc, out, err)
    _, out, _ = d.ctl("quarantine", "list", json_out=True)
    assert out.strip() == "", out
    rc, _, err = d.ctl("quarantine", "bogus", check=False)
    assert rc == 2, (rc, err)


def test_quarantine_full():
    s = src("github", "current")
    s["on_verify_failure"] = "quarantine"
    extra = {"quarantine": {"burst": 100, "rate": 100, "max_bytes": 3000}}
    d = Daemon(sources={"gh": s}, extra=extra).start()
    body = b"x" * 1000
    for i in range(3):
        st, h, data = post(d.port, "/webhooks/gh", body,
                           headers=sign_github("forger", body))
        assert st == 202, (i, st, data)
    st, h, data = post(d.port, "/webhooks/gh", body,
                       headers=sign_github("forger", body))
    expect(st, h, data, 503, {"error": "quarantine_full"})
    assert h.get("retry-after") == "60", h
    # A full pen refuses; it never evicts what it answered 202 for.
    _, out, _ = d.ctl("quarantine", "list", json_out=True)
    assert len([l for l in out.splitlines() if l.strip()]) == 3

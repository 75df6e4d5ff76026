# SPDX-License-Identifier: ISC
"""Queue sinks and the claim check through the real daemon (issue 5):
hooks posted to ankusad are batched by the master's batcher, sent by
deliver processes to moto's SQS and Google's Pub/Sub emulator, read back
and checked byte for byte; bodies above inline_max_bytes go by claim, and
the consumer fetches them from the claim gateway.

The emulators are the ones test_queue_sinks.py starts (once per run); a
missing one skips its tests with a line saying so.  The claim check's
failures (a pack refused, a store that hangs, packs of two tenants) need
none: ankusa.FakeSQS takes the messages, a TestSink plays the s3 claim
store (any 2xx to a PUT is a stored pack; hang and fail_first are its
failures).
"""

import base64
import concurrent.futures
import json
import os
import re
import time
import urllib.error
import urllib.request
import zipfile

import ankusa
import claimref
import qmsg
from ankusa import Daemon, expect_accepted, post
from test_queue_sinks import (make_queue, make_topic, moto, pubsub,
                              pull_all, receive_all, REGION)


def _post_all(d, source, bodies, workers=8):
    def one(b):
        st, h, data = post(d.port, "/webhooks/" + source, b)
        return expect_accepted(st, h, data, "POST %s" % source), b
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        return dict(ex.map(one, bodies))


def _batches(d, sink):
    _, out, _ = d.ctl("stats", json_out=True)
    c = json.loads(out)["counters"]
    return (c.get('ankusa_dispatch_batches_total{sink="%s"}' % sink, 0),
            c.get('ankusa_dispatch_batch_entries_total{sink="%s"}' % sink,
                  0))


def test_daemon_sqs_batched():
    """40 hooks to an SQS sink: delivered in batches (fewer requests than
    hooks, none over 10 entries), every message equal to its hook."""
    ep, _, key, secret = moto()
    url, sqs = make_queue()
    src = ankusa.sink_source([{
        "type": "sqs", "queue_url": url, "region": REGION, "endpoint": ep,
        "access_key_id": key, "secret_access_key": secret}],
        tenant="acme", retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"orders": src}).start()
    bodies = [b'{"n":%d,"pad":"%s"}' % (i, b"x" * (i * 7)) for i in range(40)]
    posted = _post_all(d, "orders", bodies)
    d.tick(60)
    got = receive_all(sqs, url, 40)
    assert len(got) == 40, "received %d of 40" % len(got)
    seen = set()
    for m in got:
        v = qmsg.decode(m["Body"])
        assert v["id"] in posted, v["id"]
        qmsg.assert_matches(v, posted[v["id"]])
        assert (v["tenant_id"], v["source_id"]) == ("acme", "orders"), v
        attrs = {k: a["StringValue"] for k, a in
                 m["MessageAttributes"].items()}
        assert attrs["ankusa_id"] == v["id"], attrs
        assert attrs["ankusa_message_version"] == "1", attrs
        seen.add(v["id"])
    assert seen == set(posted), "missing %r" % (set(posted) - seen)
    batches, entries = _batches(d, "sqs")
    ankusa.note("sqs: 40 hooks in %d requests (%d entries)" % (batches,
                                                               entries))
    assert entries >= 40 and batches < 40, (batches, entries)
    assert batches * 10 >= entries, "a request carried more than 10"
    st = d.status()
    assert (st["hooks"], st["pending"]) == (0, 0), st


def test_daemon_pubsub_batched():
    """200 hooks to a Pub/Sub topic through the daemon: pulled back whole,
    in far fewer publish requests than hooks."""
    ep = pubsub()
    topic, sub = make_topic(ordering=False)
    src = ankusa.sink_source([{
        "type": "google_pubsub", "project": "test", "topic": topic,
        "endpoint": ep, "auth": "none"}], retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"events": src}).start()
    bodies = [b'{"e":%d}' % i for i in range(200)]
    posted = _post_all(d, "events", bodies, workers=16)
    d.tick(60)
    got = pull_all(sub, 200)
    assert len(got) == 200, "pulled %d of 200" % len(got)
    for m in got:
        data = base64.b64decode(m["data"])
        v = qmsg.decode(data)
        qmsg.assert_matches(v, posted[v["id"]])
        qmsg.check_attributes(m.get("attributes", {}), v)
    assert {qmsg.decode(base64.b64decode(m["data"]))["id"] for m in got} \
        == set(posted)
    batches, entries = _batches(d, "google_pubsub")
    ankusa.note("pubsub: 200 hooks in %d requests" % batches)
    assert entries >= 200 and batches < 200, (batches, entries)


def test_daemon_claim_check_gateway():
    """Bodies above the sink's inline_max_bytes are checked in once per
    hook (packed per tenant), the SQS message carries the claim, and the
    consumer fetches the body from the claim gateway: sha256 equal.  Small
    bodies stay inline.  A hook with two queue sinks is checked in once."""
    ep, _, key, secret = moto()
    url, sqs = make_queue()
    url2, sqs2 = make_queue()
    gw_port = ankusa.free_port()
    src = ankusa.sink_source([
        {"type": "sqs", "queue_url": url, "region": REGION, "endpoint": ep,
         "access_key_id": key, "secret_access_key": secret,
         "inline_max_bytes": 1000},
        {"type": "sqs", "queue_url": url2, "region": REGION,
         "endpoint": ep, "access_key_id": key,
         "secret_access_key": secret, "inline_max_bytes": 2000},
    ], tenant="acme", retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"big": src}, extra={"claim_check": {
        "ip": "127.0.0.1", "port": gw_port,
        "store": {"type": "local", "root": os.path.join(ankusa.tmpdir(),
                                                         "claims")}}})
    d.start()
    bodies = [os.urandom(5000 + i) for i in range(5)] + [b"small-%d" % i
                                                         for i in range(3)]
    posted = _post_all(d, "big", bodies, workers=4)
    d.tick(60)

    def fetch(urn):
        claimref.parse(urn)             # signed with the key
        with urllib.request.urlopen("http://127.0.0.1:%d%s"
                                    % (gw_port, claimref.path(urn)),
                                    timeout=10) as r:
            assert r.status == 200
            return r.read()

    for q, s in ((url, sqs), (url2, sqs2)):
        got = receive_all(s, q, 8)
        assert len(got) == 8, "received %d of 8" % len(got)
        claims, urns = {}, {}
        for m in got:
            v = qmsg.decode(m["Body"])
            body = posted[v["id"]]
            if len(body) > 1000:
                assert "claim" in v, "a %d-byte body went inline" % \
                    len(body)
                # The claim: the same for every sink (its reference is
                # renewed for each delivery, claim_upload_renew).
                claims[v["id"]] = claimref.parse(v["claim"])[:2]
                urns[v["id"]] = v["claim"]
            else:
                assert "body_base64" in v, v
            qmsg.assert_matches(v, body, fetch_claim=fetch)
        if q == url:
            first, first_urns = claims, urns
        else:
            # One check-in per hook: both sinks carry the same claim.
            assert claims == first, (claims, first)
    # A range through the gateway.
    urn = sorted(first_urns.values())[0]
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (
        gw_port, claimref.path(urn)), headers={"Range": "bytes=10-19"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 206, r.status
        part = r.read()
    whole = posted[[i for i, u in first_urns.items() if u == urn][0]]
    assert part == whole[10:20]


def _one_pack(pack_max_bytes):
    """Six large-body hooks of one tenant claimed in one scan: the
    tenant's window (max_inflight 1) is held by a hanging http attempt
    while they are committed, then a reload opens it, and the next scan
    claims every row.  Returns (pack files, {hook id: claim})."""
    s = ankusa.TestSink().start()
    s.mode("/hang", hang=True)
    q = ankusa.FakeSQS().start()
    name = "p%d" % pack_max_bytes
    root = os.path.join(ankusa.tmpdir(name), "claims")
    src = ankusa.sink_source([{"type": "http", "url": s.url("/hang")},
                              q.sink(inline_max_bytes=1000)],
                             tenant="acme", retry=dict(ankusa.FAST_RETRY))
    d = Daemon(name=name, sources={"big": src}, extra={
        "dispatch": ankusa.dispatch_conf(
            attempt_timeout_ms=60000,
            tenants={"acme": {"max_inflight": 1}}),
        "claim_check": {"ip": "127.0.0.1", "port": ankusa.free_port(),
                        "pack_max_bytes": pack_max_bytes,
                        "store": {"type": "local", "root": root}}})
    d.start()
    first = _post_all(d, "big", [os.urandom(3000)], workers=1)
    ankusa.wait_until(lambda: s.received("/hang") == 1, 10,
                      what="the hanging attempt that holds the window")
    posted = dict(first)
    posted.update(_post_all(d, "big", [os.urandom(3000 + i)
                                       for i in range(5)], workers=5))
    assert q.entries() == [], "sent before the window opened"
    d.extra["dispatch"]["tenants"] = {"acme": {"max_inflight": 100}}
    claims = {}
    for v in _reload_sent(d, q, posted):
        claims[v["id"]] = v["claim"]
    return _packs(root), claims


def _reload_sent(d, q, posted):
    """Reload d's config as edited (its window opens), then wait until q
    has a message for every hook of posted; each, checked to go by
    claim."""
    d.write_config()
    d.ctl("reload")
    ankusa.wait_until(lambda: len(q.entries()) == len(posted), 20,
                      what="%d messages" % len(posted))
    out = [e["body"] for e in q.entries()]
    for v in out:
        assert v["id"] in posted and "claim" in v, v
    return out


def _packs(root):
    return [os.path.join(dp, f) for dp, _, fs in os.walk(root) for f in fs]


def _bodies_in(pack):
    with zipfile.ZipFile(pack) as z:
        return len([n for n in z.namelist()
                    if n not in ("index.bin", "manifest.json")])


def test_daemon_claims_one_pack():
    """Several hooks of one tenant claimed in one scan are checked in as
    one pack (one upload), each with a claim of its own.  The first hook
    is checked in alone, when its http row is claimed (a hook is checked
    in before any of its sinks runs); the five behind it share a pack.
    With pack_max_bytes below one body, a pack each (so the count is the
    glue's doing)."""
    packs, claims = _one_pack(16 << 20)
    assert len(set(claims.values())) == 6, claims
    assert sorted(_bodies_in(p) for p in packs) == [1, 5], \
        "bodies per pack: %r" % [_bodies_in(p) for p in packs]
    packs, claims = _one_pack(1)
    assert len(set(claims.values())) == 6, claims
    assert sorted(_bodies_in(p) for p in packs) == [1] * 6, \
        "pack_max_bytes 1: bodies per pack %r" % [_bodies_in(p)
                                                  for p in packs]


def _s3_store(s3):
    """A claim_check section whose s3 store is the TestSink s3."""
    return {"ip": "127.0.0.1", "port": ankusa.free_port(),
            "store": {"type": "s3", "s3": {
                "bucket": "claims", "region": REGION,
                "endpoint": s3.url(""), "access_key_id": "AKIAFAKE",
                "secret_access_key": "fake"}}}


def _puts(s3):
    return [r for r in s3.records() if r["method"] == "PUT"]


def _row(d, hook_id):
    st, _, h = d.api("GET", "/v1/hooks/" + hook_id)
    assert st == 200, (st, h)
    rows = h["rows"]
    assert len(rows) == 1, rows
    return h, rows[0]


def test_daemon_claim_fallback_hung_checkin():
    """The claim store never answers (a TestSink that holds every request):
    the pack's check-in is killed at dispatch.attempt_timeout_ms and its
    row goes on; its attempt then checks the body in itself, inside the
    same deadline, and fails as attempt_timeout:1500 (the sink's own
    timeout_ms is 30 s), nothing sent to the queue.  With the store back,
    the hook goes by claim."""
    s3 = ankusa.TestSink(name="s3").start()
    s3.mode("*", hang=True)
    q = ankusa.FakeSQS().start()
    src = ankusa.sink_source([q.sink(inline_max_bytes=1000,
                                     timeout_ms=30000)], tenant="acme",
                             retry={"base_ms": 60000, "max_ms": 60000,
                                    "jitter": False})
    d = Daemon(sources={"big": src}, extra={
        "dispatch": ankusa.dispatch_conf(attempt_timeout_ms=1500,
                                         breaker_failures=0),
        "claim_check": _s3_store(s3)}).start()
    t0 = time.monotonic()
    (hid, _), = _post_all(d, "big", [os.urandom(3000)], workers=1).items()
    ankusa.wait_until(lambda: _row(d, hid)[1]["attempts"] == 1, 20, 0.05,
                      "the attempt's failure")
    took = time.monotonic() - t0
    h, row = _row(d, hid)
    assert row["last_error"] == "attempt_timeout:1500", row
    assert h["claim_ref"] is None, h
    puts = _puts(s3)
    assert len(puts) == 2, "PUTs to the claim store: %d, want 2 (the " \
        "pack, then the attempt's own check-in)" % len(puts)
    assert q.requests == 0, "the queue got a request without a claim"
    # Two deadlines (the pack's, then the attempt's), far from 30 s.
    assert took < 10, "the attempt failed %.1f s after the post" % took
    s3.mode("*", status=200)
    d.ctl("flush", "big")
    d.tick(30)
    got = q.entries()
    assert len(got) == 1 and got[0]["body"]["id"] == hid and \
        "claim" in got[0]["body"], got
    st = d.status()
    assert (st["hooks"], st["pending"]) == (0, 0), st
    ankusa.note("failed as attempt_timeout:1500 %.1f s after the post" %
                took)


def test_daemon_claim_pack_fails_rows_run():
    """A pack the store refuses (500 to its PUT) fails its check-in job:
    the rows that waited for it are released and run at once, their
    attempt checks the body in itself and the message goes by claim, on
    the first attempt."""
    s3 = ankusa.TestSink(name="s3").start()
    s3.mode("*", status=200, fail_first=1, fail_status=500)
    q = ankusa.FakeSQS().start()
    src = ankusa.sink_source([q.sink(inline_max_bytes=1000)], tenant="acme",
                             retry={"base_ms": 60000, "max_ms": 60000,
                                    "jitter": False})
    d = Daemon(sources={"big": src}, extra={
        "dispatch": ankusa.dispatch_conf(breaker_failures=0),
        "claim_check": _s3_store(s3)}).start()
    posted = _post_all(d, "big", [os.urandom(3000)], workers=1)
    d.tick(30)
    got = q.entries()
    assert len(got) == 1 and got[0]["body"]["id"] in posted and \
        "claim" in got[0]["body"], got
    puts = _puts(s3)
    assert [p["status"] for p in puts] == [500, 200], puts
    log = d.log_since_start()
    assert re.search(r"claim: check-in job \d+ failed: .*its rows go on "
                     r"without a claim", log), log[-2000:]
    st = d.status()
    assert (st["hooks"], st["pending"], st["dead"]) == (0, 0, 0), st
    assert q.requests == 1, "%d requests: the rows did not run on the " \
        "first attempt" % q.requests


def test_daemon_claim_packs_never_mix_tenants():
    """Large-body hooks of two tenants claimed in one scan (a hanging
    attempt held the global window while they were committed; a reload
    opens it) are checked in as one pack per tenant: each pack's path and
    claims name one tenant, and each tenant's bodies share a pack."""
    s = ankusa.TestSink().start()
    s.mode("/hang", hang=True)
    q = ankusa.FakeSQS().start()
    root = os.path.join(ankusa.tmpdir("claims"), "store")
    retry = dict(ankusa.FAST_RETRY)
    d = Daemon(sources={
        "hold": ankusa.sink_source([{"type": "http", "url": s.url("/hang")}],
                                   tenant="zz", retry=retry),
        "a": ankusa.sink_source([q.sink(inline_max_bytes=1000)],
                                tenant="ta", retry=retry),
        "b": ankusa.sink_source([q.sink(inline_max_bytes=1000)],
                                tenant="tb", retry=retry)},
        extra={"dispatch": ankusa.dispatch_conf(
            attempt_timeout_ms=60000, max_inflight=1),
            "claim_check": {"ip": "127.0.0.1", "port": ankusa.free_port(),
                            "store": {"type": "local", "root": root}}})
    d.start()
    _post_all(d, "hold", [b"{}"], workers=1)
    ankusa.wait_until(lambda: s.received("/hang") == 1, 10,
                      what="the hanging attempt that holds the window")
    posted = {}
    for k in range(3):
        for src in ("a", "b"):
            posted.update(_post_all(d, src, [os.urandom(3000 + k)],
                                    workers=1))
    assert q.entries() == [], "sent before the window opened"
    d.extra["dispatch"]["max_inflight"] = 100
    tenant_of = {}
    for v in _reload_sent(d, q, posted):
        assert v["claim"].split(":")[4] == v["tenant_id"], v
        tenant_of[v["claim"].split(":")[5]] = v["tenant_id"]
    packs = _packs(root)
    assert len(packs) == 2, "packs: %r" % packs
    for p in packs:
        t = re.search(r"/tenant=([^/]+)/", p).group(1)
        with zipfile.ZipFile(p) as z:
            ids = [n for n in z.namelist()
                   if n not in ("index.bin", "manifest.json")]
        assert len(ids) == 3, "%s holds %d bodies" % (p, len(ids))
        assert {tenant_of[i] for i in ids} == {t}, \
            "pack %s of tenant %s holds claims of %r" % (
                p, t, sorted({tenant_of[i] for i in ids}))


def _gw(port, path, headers=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_daemon_claim_refs_v2():
    """A large body goes to an SQS sink by a v2 reference the daemon
    signed with claim_check.signing_key, expiring claim_check.ref_ttl_s
    (3 s here) after its check-in; the consumer reads it from the
    gateway with a bearer token of claim_check.auth.tokens (a file only
    root may read: ankusad reads it before it leaves root, the gateways
    get its digest), and without one is 401; the reference
    changed is 400 bad_signature; past its expiry it is 410 ref_expired."""
    q = ankusa.FakeSQS().start()
    gw_port = ankusa.free_port()
    tok = "consumer-token-0123456789"
    tok_file = os.path.join(ankusa.tmpdir("tokens"), "consumer.token")
    with open(tok_file, "w") as f:
        f.write(tok + "\n")
    os.chmod(tok_file, 0o600)
    auth = {"Authorization": "Bearer " + tok}
    src = ankusa.sink_source([q.sink(inline_max_bytes=1000)],
                             tenant="acme", retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"big": src}, extra={"claim_check": {
        "ip": "127.0.0.1", "port": gw_port, "ref_ttl_s": 3,
        "auth": {"tokens": [{"name": "consumer", "token_file": tok_file}]},
        "store": {"type": "local", "root": os.path.join(ankusa.tmpdir(),
                                                         "claims")}}})
    d.start()
    body = os.urandom(5000)
    t0 = int(time.time())
    posted = _post_all(d, "big", [body], workers=1)
    ankusa.wait_until(lambda: len(q.entries()) == 1, 20, what="the message")
    v = q.entries()[0]["body"]
    assert v["id"] in posted and "claim" in v, v
    tenant, cid, exp = claimref.parse(v["claim"])
    assert tenant == "acme" and t0 + 3 <= exp <= int(time.time()) + 3, \
        (exp, t0)
    st, h, data = _gw(gw_port, claimref.path(v["claim"]))
    assert st == 401 and json.loads(data) == {"error": "unauthenticated"} \
        and h.get("WWW-Authenticate") == "Bearer", (st, h, data)
    st, _, data = _gw(gw_port, claimref.path(v["claim"]), auth)
    assert st == 200 and data == body, (st, data[:100])
    bad = v["claim"][:-1] + ("A" if v["claim"][-1] != "A" else "B")
    st, _, data = _gw(gw_port, claimref.path(bad), auth)
    assert st == 400 and json.loads(data) == {"error": "bad_signature"}, \
        (st, data)
    ankusa.wait_until(lambda: time.time() >= exp, 10, what="the expiry")
    st, _, data = _gw(gw_port, claimref.path(v["claim"]), auth)
    assert st == 410 and json.loads(data) == {"error": "ref_expired"}, \
        (st, data)


def test_daemon_claim_v1_stored_renewed():
    """A hook stored with a v1 claim reference, as a build before
    references were signed stored it (planted by tests/store_plant -c,
    its claim in a v1 pack written by Python), is delivered with a v2
    reference to the same claim signed at the delivery: the gateway
    serves it without claim_check.accept_v1, and refuses the v1
    reference itself (400 bad_signature)."""
    import subprocess
    from test_claims import write_v1_pack
    q = ankusa.FakeSQS().start()
    gw_port = ankusa.free_port()
    root = os.path.join(ankusa.tmpdir("v1"), "claims")
    src = ankusa.sink_source([q.sink(inline_max_bytes=1000)],
                             tenant="acme", retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"big": src}, extra={"claim_check": {
        "ip": "127.0.0.1", "port": gw_port,
        "store": {"type": "local", "root": root}}})
    d.start()
    pause = "/v1/tenants/acme/sources/big/sinks/0/"
    st, _, doc = d.api("POST", pause + "pause")
    assert st == 200, (st, doc)
    body = os.urandom(4000)
    cid = write_v1_pack(root, "acme", [body])[0]
    ankusa.give_to_daemon_user(root)
    hid = list(_post_all(d, "big", [body], workers=1))[0]
    _, out, _ = d.ctl("show", hid, json_out=True)
    seq = json.loads(out.strip().splitlines()[-1])["seq"]
    d.stop()
    v1 = "urn:ankusa:claim:v1:acme:" + cid
    r = subprocess.run([ankusa.binary("tests/store_plant"), "-c",
                        d.data_dir, str(seq), v1], capture_output=True,
                       timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == b"1", r
    d.start()
    t0 = int(time.time())
    st, _, doc = d.api("POST", pause + "resume")
    assert st == 200, (st, doc)
    ankusa.wait_until(lambda: len(q.entries()) == 1, 20, what="the message")
    v = q.entries()[0]["body"]
    assert v["id"] == hid and "claim" in v, v
    tenant, got, exp = claimref.parse(v["claim"])
    assert (tenant, got) == ("acme", cid), v["claim"]
    assert t0 + claimref.TTL <= exp <= int(time.time()) + claimref.TTL
    st, _, data = _gw(gw_port, claimref.path(v["claim"]))
    assert st == 200 and data == body, (st, data[:100])
    st, _, data = _gw(gw_port, claimref.path(v1))
    assert st == 400 and json.loads(data) == {"error": "bad_signature"}, \
        (st, data)

# SPDX-License-Identifier: ISC
"""Queue sinks and the claim check through the real daemon (issue 5):
hooks posted to ankusad are batched by the master's batcher, sent by
deliver processes to moto's SQS and Google's Pub/Sub emulator, read back
and checked byte for byte; bodies above inline_max_bytes go by claim, and
the consumer fetches them from the claim gateway.

The emulators are the ones test_queue_sinks.py starts (once per run); a
missing one skips its tests with a line saying so.
"""

import base64
import concurrent.futures
import json
import os
import urllib.request
import zipfile

import ankusa
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
        assert m.get("attributes", {}) == qmsg.attributes(v), m
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
        _, _, _, _, tenant, cid = urn.split(":")
        with urllib.request.urlopen("http://127.0.0.1:%d/v1/claims/%s/%s"
                                    % (gw_port, tenant, cid),
                                    timeout=10) as r:
            assert r.status == 200
            return r.read()

    for q, s in ((url, sqs), (url2, sqs2)):
        got = receive_all(s, q, 8)
        assert len(got) == 8, "received %d of 8" % len(got)
        claims = {}
        for m in got:
            v = qmsg.decode(m["Body"])
            body = posted[v["id"]]
            if len(body) > 1000:
                assert "claim" in v, "a %d-byte body went inline" % \
                    len(body)
                claims[v["id"]] = v["claim"]
            else:
                assert "body_base64" in v, v
            qmsg.assert_matches(v, body, fetch_claim=fetch)
        if q == url:
            first = claims
        else:
            # One check-in per hook: both sinks carry the same claim.
            assert claims == first, (claims, first)
    # A range through the gateway.
    urn = sorted(first.values())[0]
    _, _, _, _, tenant, cid = urn.split(":")
    req = urllib.request.Request("http://127.0.0.1:%d/v1/claims/%s/%s" % (
        gw_port, tenant, cid), headers={"Range": "bytes=10-19"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 206, r.status
        part = r.read()
    whole = posted[[i for i, u in first.items() if u == urn][0]]
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
    d.write_config()
    d.ctl("reload")
    ankusa.wait_until(lambda: len(q.entries()) == 6, 20,
                      what="six messages")
    claims = {}
    for e in q.entries():
        v = e["body"]
        assert v["id"] in posted and "claim" in v, v
        claims[v["id"]] = v["claim"]
    packs = [os.path.join(dp, f) for dp, _, fs in os.walk(root) for f in fs]
    return packs, claims


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

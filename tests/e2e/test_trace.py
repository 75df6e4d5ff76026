# SPDX-License-Identifier: ISC
"""Trace context and the delivery headers the SDKs read (issue 37, part
5), through the real daemon.

A provider's W3C traceparent (and tracestate) is kept with the hook when
it is valid, else one is made at ingest; every attempt carries the hook's
trace id with a span id of its own, as the traceparent header of an http
delivery and as a message attribute on SQS (moto) and Pub/Sub (Google's
emulator).  An http delivery carries x-ankusa-received-at,
x-ankusa-body-sha256, x-ankusa-verification and
x-ankusa-verification-flagged.  A whsec_ secret that is not padded,
canonical base64 is refused when the config loads.
"""

import base64
import hashlib
import hmac
import re
import signal
import time

import ankusa
import qmsg
from ankusa import (Daemon, Raw, TestSink, check_config, dispatch_conf,
                    expect_accepted, head_bytes, jbody, post, sink_source,
                    wait_until)
from test_queue_sinks import (make_queue, make_topic, moto, pubsub,
                              pull_all, receive_all, REGION)

TRACEPARENT = re.compile(r"\A00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})\Z")
# The specification's example.
PROVIDER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PROVIDER_SPAN = "00f067aa0ba902b7"
PROVIDER_TP = "00-%s-%s-01" % (PROVIDER_TRACE, PROVIDER_SPAN)
PROVIDER_TS = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"

SWH_KEY = b"ankusa-e2e-trace-verify-key-0001"
SWH_SECRET = "whsec_" + base64.b64encode(SWH_KEY).decode()


def now_ms():
    return int(time.time() * 1000)


def tp_parts(v):
    m = TRACEPARENT.match(v or "")
    assert m is not None, "not a version 00 traceparent: %r" % v
    return m.groups()


def http_source(s, path, **extra):
    return sink_source([{"type": "http", "url": s.url(path)}],
                       retry=dict(ankusa.FAST_RETRY), **extra)


def attempts(s, path, n, what, timeout=20):
    """The first n records to path, once there are n."""
    wait_until(lambda: len(s.records(path)) >= n, timeout, 0.05, what)
    return s.records(path)[:n]


def raw_post(d, path, headers, body):
    """POST with headers as a list of pairs (a name twice is sent twice);
    the hook's id."""
    r = Raw(d.port)
    try:
        r.send(head_bytes("POST", path, [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body)))] + headers, body))
        resp = r.read_response()
    finally:
        r.close()
    assert resp.status in (200, 201), resp
    return resp.json()["id"]


def test_trace_from_provider_new_span_per_attempt():
    """A valid traceparent: every attempt carries its trace id and flags
    with a span id of its own (W3C: the parent-id a callee sees is the
    caller's span, here the attempt's), never the provider's; the
    tracestate goes with it; the provider's own headers are not passed
    on beside ours."""
    s = TestSink().start()
    d = Daemon(sources={"p": http_source(s, "/p")}).start()
    s.mode("/p", fail_first=1, fail_status=503, status=200)
    st, h, data = post(d.port, "/webhooks/p", b'{"t":1}', headers={
        "traceparent": PROVIDER_TP, "tracestate": PROVIDER_TS})
    hid = expect_accepted(st, h, data, "traced post")
    a, b = attempts(s, "/p", 2, "two attempts")
    assert (a["status"], b["status"]) == (503, 200), (a, b)
    for r in (a, b):
        assert r["x-ankusa-id"] == hid, r
        trace, span, flags = tp_parts(r["traceparent"])
        assert trace == PROVIDER_TRACE, r["traceparent"]
        assert flags == "01", r["traceparent"]
        assert span != PROVIDER_SPAN and int(span, 16) != 0, r
        assert r["tracestate"] == PROVIDER_TS, r
        assert (r["n-traceparent"], r["n-tracestate"]) == (1, 1), r
    assert tp_parts(a["traceparent"])[1] != tp_parts(b["traceparent"])[1], \
        "one span id for two attempts: %s" % a["traceparent"]
    # Flags as the provider sent them.
    tp0 = "00-%s-%s-00" % ("a" * 32, "b" * 16)
    st, h, data = post(d.port, "/webhooks/p", b'{"t":2}',
                       headers={"traceparent": tp0})
    expect_accepted(st, h, data, "unsampled post")
    r = attempts(s, "/p", 3, "the unsampled hook")[2]
    assert tp_parts(r["traceparent"])[0] == "a" * 32, r
    assert tp_parts(r["traceparent"])[2] == "00", r
    assert r["tracestate"] is None and r["n-tracestate"] == 0, r


def test_trace_made_at_ingest():
    """No traceparent: the edge makes one (random trace id, sampled), the
    same trace id on every attempt, a new span id each; a tracestate
    without a traceparent is not kept."""
    s = TestSink().start()
    d = Daemon(sources={"m": http_source(s, "/m")}).start()
    s.mode("/m", fail_first=2, fail_status=500, status=200)
    st, h, data = post(d.port, "/webhooks/m", b'{"m":1}',
                       headers={"tracestate": "orphan=1"})
    expect_accepted(st, h, data, "untraced post")
    st, h, data = post(d.port, "/webhooks/m", b'{"m":2}')
    expect_accepted(st, h, data, "a second untraced post")
    recs = attempts(s, "/m", 4, "three attempts and another hook")
    by_hook = {}
    for r in recs:
        by_hook.setdefault(r["x-ankusa-id"], []).append(r)
    traces = set()
    for hid, rs in by_hook.items():
        parts = [tp_parts(r["traceparent"]) for r in rs]
        assert len({p[0] for p in parts}) == 1, \
            "hook %s: several trace ids: %r" % (hid, parts)
        assert len({p[1] for p in parts}) == len(parts), \
            "hook %s: a span id reused: %r" % (hid, parts)
        assert all(p[2] == "01" for p in parts), parts
        assert all(int(p[0], 16) != 0 for p in parts), parts
        assert all(r["n-tracestate"] == 0 for r in rs), rs
        traces.add(parts[0][0])
    assert len(traces) == 2, "two hooks, one trace id: %r" % traces


def test_trace_invalid_replaced():
    """An invalid traceparent is replaced (never stored or sent as it
    came), and its tracestate dropped with it; two traceparents are
    invalid too."""
    s = TestSink().start()
    d = Daemon(sources={"i": http_source(s, "/i")}).start()
    zero = "00-%s-%s-01" % ("0" * 32, PROVIDER_SPAN)
    bad = [
        [("traceparent", PROVIDER_TP.upper())],
        [("traceparent", zero)],
        [("traceparent", "00-%s-%s-01" % (PROVIDER_TRACE, "0" * 16))],
        [("traceparent", "ff-%s-%s-01" % (PROVIDER_TRACE, PROVIDER_SPAN))],
        [("traceparent", "01-%s-%s-01-extra" % (PROVIDER_TRACE,
                                                 PROVIDER_SPAN))],
        [("traceparent", PROVIDER_TP[:-1] + "g")],
        [("traceparent", PROVIDER_TP), ("traceparent", PROVIDER_TP)],
    ]
    ids = []
    for i, hs in enumerate(bad):
        ids.append(raw_post(d, "/webhooks/i", hs + [
            ("tracestate", PROVIDER_TS)], b'{"bad":%d}' % i))
    recs = attempts(s, "/i", len(bad), "the invalid ones")
    got = {r["x-ankusa-id"]: r for r in recs}
    assert set(got) == set(ids), (sorted(got), ids)
    seen = set()
    for hid, hs in zip(ids, bad):
        r = got[hid]
        trace, span, flags = tp_parts(r["traceparent"])
        assert trace not in (PROVIDER_TRACE, "0" * 32), (hs, r)
        assert flags == "01", (hs, r)
        assert r["n-traceparent"] == 1, (hs, r)
        assert r["tracestate"] is None, (hs, r)
        seen.add(trace)
    assert len(seen) == len(bad), "made trace ids repeat: %r" % seen
    # A tracestate over the bound (or not of the grammar) is dropped, the
    # traceparent kept.
    for i, ts in enumerate(["k=" + "v" * 600, "Upper=1", "a=1,b"]):
        hid = raw_post(d, "/webhooks/i", [("traceparent", PROVIDER_TP),
                                          ("tracestate", ts)],
                       b'{"ts":%d}' % i)
        r = [x for x in attempts(s, "/i", len(bad) + i + 1, "tracestate")
             if x["x-ankusa-id"] == hid][0]
        assert tp_parts(r["traceparent"])[0] == PROVIDER_TRACE, r
        assert r["tracestate"] is None, (ts[:20], r)
    # Two tracestate headers are one list.
    hid = raw_post(d, "/webhooks/i", [("traceparent", PROVIDER_TP),
                                      ("tracestate", "rojo=1"),
                                      ("tracestate", "congo=2")], b"{}")
    r = [x for x in attempts(s, "/i", len(bad) + 4, "joined tracestate")
         if x["x-ankusa-id"] == hid][0]
    assert r["tracestate"] == "rojo=1,congo=2", r


def sign_swh(body, msg_id="msg_trace", key=SWH_KEY):
    t = int(time.time())
    sig = base64.b64encode(hmac.new(key, b"%s.%d." % (msg_id.encode(), t) +
                                    body, hashlib.sha256).digest()).decode()
    return {"webhook-id": msg_id, "webhook-timestamp": str(t),
            "webhook-signature": "v1," + sig}


def test_delivery_headers():
    """x-ankusa-received-at within the test's window, x-ankusa-body-sha256
    of the body, and the verification of a verified source, an
    unverified one and an accept_flag source whose check failed; the
    provider's x-ankusa-* are never passed on."""
    s = TestSink().start()
    ok = http_source(s, "/ok")
    ok["verify"] = {"type": "standard_webhooks", "secret": SWH_SECRET}
    flag = http_source(s, "/flag")
    flag["verify"] = {"type": "standard_webhooks", "secret": SWH_SECRET}
    flag["on_verify_failure"] = "accept_flag"
    d = Daemon(sources={"ok": ok, "none": http_source(s, "/none"),
                        "flag": flag}).start()
    body = b'{"hdr":"\xc3\xa9t\xc3\xa9","n":1}'
    want = {}
    t0 = now_ms()
    for src, hdrs in (("ok", sign_swh(body)), ("none", {}),
                      ("flag", sign_swh(body, key=b"not-the-key"))):
        hdrs = dict(hdrs, **{"x-ankusa-verification": "ok",
                             "x-ankusa-verification-flagged": "false",
                             "x-ankusa-body-sha256": "0" * 64})
        st, h, data = post(d.port, "/webhooks/" + src, body, headers=hdrs)
        want[src] = expect_accepted(st, h, data, "post to " + src)
    t1 = now_ms()
    expected = {"ok": ("ok", "false"), "none": ("skipped", "false"),
                "flag": ("failed", "true")}
    for src, (status, flagged) in expected.items():
        r, = attempts(s, "/" + src, 1, "delivery to " + src)
        assert r["x-ankusa-id"] == want[src], r
        ra = r["x-ankusa-received-at"]
        assert re.fullmatch(r"[0-9]{1,15}", ra or ""), r
        assert t0 <= int(ra) <= t1, (t0, ra, t1)
        # The id is made at the commit, after the edge took the hook.
        assert 0 <= ankusa.uuid7_ms(want[src]) - int(ra) < 5000, r
        assert r["x-ankusa-body-sha256"] == hashlib.sha256(body).hexdigest()
        assert r["x-ankusa-body-sha256"] == r["sha256"], r
        assert (r["x-ankusa-verification"],
                r["x-ankusa-verification-flagged"]) == (status, flagged), \
            (src, r)


def test_verification_kept_across_reload():
    """The verification is the one stored with the hook: a source that
    gains verification by a reload does not change what its hooks
    already stored say."""
    s = TestSink().start()
    d = Daemon(sources={"r": http_source(s, "/r")},
               extra={"dispatch": dispatch_conf(breaker_failures=0)}).start()
    s.mode("/r", status=503)
    st, h, data = post(d.port, "/webhooks/r", b'{"r":1}')
    hid = expect_accepted(st, h, data, "post before the reload")
    attempts(s, "/r", 1, "a failed attempt")
    d.sources["r"]["verify"] = {"type": "standard_webhooks",
                                "secret": SWH_SECRET}
    d.write_config()
    d.ctl("reload")
    # The edges of the old config finish what they hold and go: a hook
    # taken by one of them was judged by the old config.
    wait_until(lambda: d.log_since_start().count("retired") >= 2, 10, 0.05,
               "the old edges retired")
    body = b'{"r":2}'
    st, h, data = post(d.port, "/webhooks/r", body, headers=sign_swh(body))
    hid2 = expect_accepted(st, h, data, "post after the reload")
    s.mode("/r", status=200)
    wait_until(lambda: {hid, hid2} <= {r["x-ankusa-id"] for r in
                                       s.records("/r")
                                       if r["status"] == 200},
               20, 0.05, "both delivered")
    for r in s.records("/r"):
        want = "skipped" if r["x-ankusa-id"] == hid else "ok"
        assert r["x-ankusa-verification"] == want, r


def test_sqs_trace_attribute():
    """SQS (moto): the traceparent rides as a message attribute with the
    provider's trace id and a span id of the attempt, the tracestate
    beside it; the v1 body is the contracts' byte for byte."""
    ep, _, key, secret = moto()
    url, sqs = make_queue()
    src = sink_source([{
        "type": "sqs", "queue_url": url, "region": REGION, "endpoint": ep,
        "access_key_id": key, "secret_access_key": secret}],
        retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"q": src}).start()
    bodies = {}
    for i, hs in enumerate([{"traceparent": PROVIDER_TP,
                             "tracestate": PROVIDER_TS}, {}]):
        b = b'{"q":%d}' % i
        st, h, data = post(d.port, "/webhooks/q", b, headers=hs)
        bodies[expect_accepted(st, h, data, "post %d" % i)] = (b, hs)
    got = receive_all(sqs, url, 2)
    assert len(got) == 2, "received %d of 2" % len(got)
    for m in got:
        v = qmsg.decode(m["Body"])
        b, hs = bodies[v["id"]]
        qmsg.assert_matches(v, b)
        attrs = {k: a["StringValue"] for k, a in
                 m["MessageAttributes"].items()}
        trace, span, flags = qmsg.check_attributes(
            attrs, v, tracestate=hs.get("tracestate"))
        if hs:
            assert (trace, flags) == (PROVIDER_TRACE, "01"), attrs
            assert span != PROVIDER_SPAN, attrs
            # The provider's headers are forwarded as the contracts say,
            # in the body's headers; ours are the attributes.
            assert v["headers"]["traceparent"] == PROVIDER_TP, v
        else:
            assert trace != PROVIDER_TRACE and flags == "01", attrs


def test_pubsub_trace_attribute():
    """Pub/Sub (the emulator): the traceparent attribute likewise."""
    ep = pubsub()
    topic, sub = make_topic(ordering=False)
    src = sink_source([{"type": "google_pubsub", "project": "test",
                        "topic": topic, "endpoint": ep, "auth": "none"}],
                      retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"e": src}).start()
    b = b'{"e":1}'
    st, h, data = post(d.port, "/webhooks/e", b,
                       headers={"traceparent": PROVIDER_TP})
    hid = expect_accepted(st, h, data, "traced post")
    got = pull_all(sub, 1)
    assert len(got) == 1, got
    v = qmsg.decode(base64.b64decode(got[0]["data"]))
    assert v["id"] == hid
    qmsg.assert_matches(v, b)
    trace, span, flags = qmsg.check_attributes(got[0].get("attributes", {}),
                                               v)
    assert (trace, flags) == (PROVIDER_TRACE, "01"), got[0]
    assert span != PROVIDER_SPAN, got[0]


def test_whsec_unpadded_refused():
    """whsec_dGVzdA ("test" unpadded) as a sink's signing secret or a
    verify secret: refused when the config loads, at start and at a
    reload, naming the key; the padded form loads."""
    s = TestSink().start()
    d = Daemon(sources={"w": http_source(s, "/w")})
    d.sources["w"]["sinks"][0]["secret"] = "whsec_dGVzdA"
    d.write_config()
    rc, out = check_config(d.conf)
    assert rc != 0, out
    assert "sources.w.sinks[0].secret" in out and "unpadded" in out, out
    assert "dGVzdA" not in out, "the secret was echoed: " + out

    d.sources["w"]["sinks"][0]["secret"] = "whsec_dGVzdA=="
    d.sources["w"]["verify"] = {"type": "standard_webhooks",
                                "secret": ["whsec_dGVzdA==", "whsec_dGVzdB=="]}
    d.write_config()
    rc, out = check_config(d.conf)
    assert rc != 0, out
    assert "sources.w.verify.secret[1]" in out, out
    assert "non-zero trailing bits" in out, out

    d.sources["w"]["verify"] = {"type": "none"}
    d.write_config()
    rc, out = check_config(d.conf)
    assert rc == 0, out
    d.start()
    # A reload that brings one in is refused, the old config kept.
    d.sources["w"]["sinks"][0]["secret"] = "whsec_dGVzdA"
    d.write_config()
    d.signal(signal.SIGHUP)
    wait_until(lambda: "old config kept" in d.log_since_start(), 10, 0.1,
               "the reload refused")
    log = d.log_since_start()
    assert "sources.w.sinks[0].secret" in log and "unpadded" in log, log
    assert d.running()
    st, h, data = post(d.port, "/webhooks/w", b"{}")
    expect_accepted(st, h, data, "after the refused reload")
    r, = attempts(s, "/w", 1, "a delivery signed with the old secret")
    assert r["webhook-id"] == jbody(data)["id"], r


def test_released_hook_verified_and_traced():
    """A hook held in the quarantine pen and released once its signature
    checks (the secret rotated in) is delivered as verified, not flagged,
    with the trace context it came with."""
    s = TestSink().start()
    src = http_source(s, "/q")
    src["verify"] = {"type": "standard_webhooks", "secret": SWH_SECRET}
    src["on_verify_failure"] = "quarantine"
    d = Daemon(sources={"q": src}).start()
    new_key = b"ankusa-e2e-trace-rotated-key-002"
    body = b'{"held":1}'
    hdrs = dict(sign_swh(body, key=new_key), traceparent=PROVIDER_TP,
                tracestate=PROVIDER_TS)
    st, h, data = post(d.port, "/webhooks/q", body, headers=hdrs)
    assert st == 202 and jbody(data).get("status") == "quarantined", \
        (st, data)
    held = jbody(data)["id"]
    src["verify"]["secret"] = ["whsec_" + base64.b64encode(new_key).decode(),
                               SWH_SECRET]
    d.write_config()
    d.ctl("reload")
    _, out, _ = d.ctl("quarantine", "release", json_out=True)
    assert '"released": 1' in out or '"released":1' in out, out
    r, = attempts(s, "/q", 1, "the released hook")
    assert r["x-ankusa-id"] == held, r
    assert (r["x-ankusa-verification"],
            r["x-ankusa-verification-flagged"]) == ("ok", "false"), r
    trace, span, flags = tp_parts(r["traceparent"])
    assert (trace, flags) == (PROVIDER_TRACE, "01"), r
    assert span != PROVIDER_SPAN, r
    assert r["tracestate"] == PROVIDER_TS and r["n-traceparent"] == 1, r

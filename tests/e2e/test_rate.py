# SPDX-License-Identifier: ISC
"""Per-destination rate limits and retry schedules (issue 38, sections 2
and 3; daemon/dispatch/bucket.c, daemon/dispatch/dispatch_rate.c,
daemon/dispatch/dispatch_policy.c): a sink limited to 20/s gets 100 hooks
in about 5 s with no attempt spent waiting while another sink of the same
tenant gets its 100 at once; a 429 with Retry-After holds only its key
and does not open its breaker; a retry schedule is kept at the sink."""

import http.client
import json
import time

from ankusa import (Daemon, TestSink, dispatch_conf, expect_accepted, post,
                    sink_source, wait_until)


def _post_n(d, source, n):
    """n hooks one after the other on one connection: their ids."""
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    out = []
    try:
        for i in range(n):
            st, hd, data = post(d.port, "/webhooks/" + source,
                                b'{"n":%d}' % i, conn=c)
            out.append(expect_accepted(st, hd, data, "post %d" % i))
    finally:
        c.close()
    return out


def _ids(s, path):
    return [r["x-ankusa-id"] for r in s.records(path)]


def _wait_all(s, path, ids, timeout, what):
    want = set(ids)
    wait_until(lambda: want <= set(_ids(s, path)), timeout, 0.05, what)


def test_rate_limited_sink():
    """100 hooks to a source with two sinks, /a limited to 20/s (burst 1)
    and /b not: /b gets its 100 at once, /a over about 5 s (4 to 7), each
    hook exactly once (no attempt spent waiting: the attempt log lists one
    attempt per sink), and the key's rate and tokens are shown."""
    s = TestSink().start()
    d = Daemon(sources={"s": sink_source([
        {"type": "http", "url": s.url("/a"),
         "rate": {"per_second": 20, "burst": 1}},
        {"type": "http", "url": s.url("/b")}])},
        extra={"dispatch": dispatch_conf(breaker_failures=0)}).start()
    ids = _post_n(d, "s", 100)
    _wait_all(s, "/b", ids, 10, "the unlimited sink's 100")
    rb = s.records("/b")
    _wait_all(s, "/a", ids, 20, "the limited sink's 100")
    ra = s.records("/a")
    assert sorted(_ids(s, "/a")) == sorted(ids), "an /a hook twice"
    assert sorted(_ids(s, "/b")) == sorted(ids), "a /b hook twice"
    assert all(r["status"] == 200 for r in ra + rb)
    span_a = (ra[-1]["t"] - ra[0]["t"]) / 1000.0
    span_b = (rb[-1]["t"] - rb[0]["t"]) / 1000.0
    assert 4.0 <= span_a <= 7.0, "/a's 100 over %.2f s" % span_a
    assert span_b < 2.5, "/b's 100 over %.2f s (limited too?)" % span_b
    # No two /a deliveries closer than the rate allows, give or take.
    gaps = [b["t"] - a["t"] for a, b in zip(ra, ra[1:])]
    assert sum(1 for g in gaps if g < 25) <= 3, "bursts at /a: %r" % gaps
    for hid in ids[::20]:
        st, _, doc = d.api("GET", "/v1/hooks/%s/attempts" % hid)
        assert st == 200, (st, doc)
        assert len(doc["attempts"]) == 2, doc
        assert all(a["outcome"] == "ok" for a in doc["attempts"]), doc
    rates = d.status()["rates"]
    assert [(r["source"], r["sink"], r["per_second"], r["burst"],
             r["overridden"]) for r in rates] == [("s", 0, 20, 1, False)], \
        rates
    assert 0 <= rates[0]["tokens"] <= 1, rates


test_rate_limited_sink.timeout = 90


def test_retry_after_holds_key():
    """/a answers 429 with Retry-After: 2 once: its key is held 2 s (the
    hooks posted meanwhile wait, none attempted) while /b of the same
    tenant keeps delivering; the 429 does not open /a's breaker (1
    failure would)."""
    s = TestSink().start()
    d = Daemon(sources={"s": sink_source([
        {"type": "http", "url": s.url("/a")},
        {"type": "http", "url": s.url("/b")}])},
        extra={"dispatch": dispatch_conf(breaker_failures=1)}).start()
    s.mode("/a", fail_first=1, fail_status=429, retry_after=2, status=200)
    first = _post_n(d, "s", 1)
    wait_until(lambda: len(s.records("/a")) == 1, 10, 0.02, "the 429")
    t429 = s.records("/a")[0]["t"]
    more = _post_n(d, "s", 5)
    _wait_all(s, "/b", first + more, 5, "/b during the hold")
    tb = max(r["t"] for r in s.records("/b"))
    assert tb < t429 + 1500, "/b waited for /a's hold"
    assert len(s.records("/a")) == 1, "an /a attempt during its hold"
    assert d.breakers() == [], d.breakers()
    _wait_all(s, "/a", first + more, 10, "/a after the hold")
    ra = s.records("/a")
    assert [r["status"] for r in ra].count(429) == 1, ra
    assert len(ra) == 7, "attempts at /a: %d" % len(ra)
    assert min(r["t"] for r in ra[1:]) >= t429 + 1990, \
        "an /a attempt %d ms after the 429" % (
            min(r["t"] for r in ra[1:]) - t429)
    assert d.breakers() == [], d.breakers()


test_retry_after_holds_key.timeout = 60


def test_retry_schedule():
    """A sink with retry: {schedule_ms: [200, 1000, 3000], jitter: false}
    failing 4 times then answering 200: the attempts come 0.2, 1, 3 and
    3 s apart (the last step repeats)."""
    s = TestSink().start()
    d = Daemon(sources={"s": sink_source([
        {"type": "http", "url": s.url("/a"),
         "retry": {"schedule_ms": [200, 1000, 3000], "jitter": False}}])},
        extra={"dispatch": dispatch_conf(breaker_failures=0)}).start()
    s.mode("/a", fail_first=4, fail_status=500, status=200)
    ids = _post_n(d, "s", 1)
    wait_until(lambda: any(r["status"] == 200 for r in s.records("/a")),
               20, 0.05, "the fifth attempt")
    ra = s.records("/a")
    assert [r["x-ankusa-id"] for r in ra] == ids * 5, ra
    assert [r["status"] for r in ra] == [500] * 4 + [200], ra
    gaps = [b["t"] - a["t"] for a, b in zip(ra, ra[1:])]
    for g, want in zip(gaps, (200, 1000, 3000, 3000)):
        assert want - 10 <= g <= want + 400, \
            "gaps %r ms, schedule 200, 1000, 3000, 3000" % gaps
    # The effective config shows the sink's schedule.
    st, _, doc = d.api("GET", "/v1/config")
    assert st == 200, (st, doc)
    text = json.dumps(doc)
    assert '"schedule_ms": [200, 1000, 3000]' in text, text[:2000]


test_retry_schedule.timeout = 60


def _rate(d, tenant, sink, method="GET", body=None):
    return d.api(method, "/v1/tenants/%s/sources/s/sinks/%d/rate" % (
        tenant, sink), body)


def test_rate_override_restart():
    """PUT .../sinks/1/rate {per_second: 5, burst: 1} limits a sink
    without a rate of its own: 20 hooks over about 4 s; audited; it
    survives a restart; ankusactl rate shows it and removes it (the next
    20 at once), and that too survives a restart; bad bodies are
    refused."""
    s = TestSink().start()
    d = Daemon(sources={"s": sink_source([
        {"type": "http", "url": s.url("/a"),
         "rate": {"per_second": 50}},
        {"type": "http", "url": s.url("/b")}])},
        extra={"dispatch": dispatch_conf(breaker_failures=0)}).start()
    ids = _post_n(d, "s", 1)
    _wait_all(s, "/b", ids, 10, "the first hook")
    tenant = [r for r in d.status()["rates"] if r["sink"] == 0][0]["tenant"]
    st, _, doc = _rate(d, tenant, 1)
    assert st == 200 and doc["per_second"] is None, (st, doc)
    st, _, doc = _rate(d, tenant, 0)
    assert (st, doc["per_second"], doc["burst"], doc["overridden"]) == \
        (200, 50, 50, False), (st, doc)
    for bad in ({"per_second": 0}, {"per_second": "x"}, {"burst": 2},
                {"per_second": 1, "burst": 0}, {"per_second": 1, "x": 1}):
        st, _, doc = _rate(d, tenant, 1, "PUT", bad)
        assert st == 400, (bad, st, doc)
    st, _, doc = _rate(d, tenant, 9, "PUT", {"per_second": 1})
    assert st == 404, (st, doc)
    st, _, doc = _rate(d, tenant, 1, "PUT", {"per_second": 5, "burst": 1})
    assert st == 200, (st, doc)
    assert (doc["per_second"], doc["burst"], doc["overridden"]) == \
        (5, 1, True), doc
    st, _, doc = d.api("GET", "/v1/audit?limit=10")
    assert st == 200, (st, doc)
    assert any(e.get("action") == "sink_rate.set"
               for e in doc.get("entries", [])), doc
    # GET /v1/sinks shows each key's rate and tokens, [] without one.
    st, _, doc = d.api("GET", "/v1/sinks")
    assert st == 200, (st, doc)
    keys = {k["sink"]: k for k in doc["sinks"] if k["source_id"] == "s"}
    r0, r1 = keys[0]["rate"], keys[1]["rate"]
    assert [(r["tenant"], r["per_second"], r["overridden"]) for r in r0] \
        == [(tenant, 50, False)], r0
    assert [(r["tenant"], r["per_second"], r["burst"], r["overridden"])
            for r in r1] == [(tenant, 5, 1, True)], r1
    assert 0 <= r1[0]["tokens"] <= 1, r1

    d.stop()
    d.start()
    st, _, doc = _rate(d, tenant, 1)
    assert (st, doc["per_second"], doc["overridden"]) == (200, 5, True), \
        (st, doc)
    before = len(s.records("/b"))
    ids = _post_n(d, "s", 20)
    _wait_all(s, "/b", ids, 20, "20 hooks at 5/s")
    rb = s.records("/b")[before:]
    span = (rb[-1]["t"] - rb[0]["t"]) / 1000.0
    assert 3.0 <= span <= 6.0, "20 hooks at 5/s over %.2f s" % span

    # ankusactl rate: the same routes, tenant default unless -t.
    assert tenant == "default", tenant
    _, out, _ = d.ctl("rate", "s#1")
    doc = json.loads(out)
    assert (doc["per_second"], doc["burst"], doc["overridden"]) == \
        (5, 1, True), doc
    _, out, _ = d.ctl("rate", "-t", "default", "s#1", "off")
    assert json.loads(out)["per_second"] is None, out
    st, _, doc = _rate(d, tenant, 1, "DELETE")
    assert st == 404, (st, doc)
    rc, _, err = d.ctl("rate", "s", "5", check=False)
    assert rc == 2 and "names no sink" in err, (rc, err)
    d.stop()
    d.start()
    st, _, doc = _rate(d, tenant, 1)
    assert st == 200 and doc["per_second"] is None, (st, doc)
    before = len(s.records("/b"))
    ids = _post_n(d, "s", 20)
    _wait_all(s, "/b", ids, 10, "20 hooks without the override")
    rb = s.records("/b")[before:]
    assert (rb[-1]["t"] - rb[0]["t"]) < 1500, "still limited"


test_rate_override_restart.timeout = 120

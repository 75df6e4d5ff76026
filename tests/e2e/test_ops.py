# SPDX-License-Identifier: ISC
"""Manual operations over the admin API (daemon/admin/admin_api_ops.c,
daemon/admin/admin_ops.c): retry now, pause and resume of a sink, rate-limit
overrides, the dead-lettering of a source; each across a restart where it is
stored.  And a reload of the replication section: its restart-only keys
kept."""

import json

from ankusa import (Daemon, TestSink, dispatch_conf, expect_accepted,
                    free_port, post, request, sink_source, wait_until)
from test_metrics import parse, scrape

HOUR = {"base_ms": 3600000, "max_ms": 3600000, "jitter": False}


def delivered(sink, path):
    return {r["x-ankusa-id"] for r in sink.records(path)
            if 200 <= r["status"] < 300}


def post_hooks(d, source, n):
    ids = []
    for i in range(n):
        st, hd, data = post(d.port, "/webhooks/" + source,
                            b'{"n":%d}' % i)
        ids.append(expect_accepted(st, hd, data, "post to " + source))
    return ids


def bad(d, method, path, body, field):
    st, _, doc = d.api(method, path, body)
    assert st == 400 and doc["error"] == "invalid_request" and \
        doc["field"] == field, (method, path, body, st, doc)


def test_ops_retry_now():
    """A row backing off for an hour is delivered at once after a retry
    now of its sink, of its hook, of its source; nothing else moves."""
    s = TestSink().start()
    d = Daemon(sources={
        "a": sink_source([{"type": "http", "url": s.url("/a0")},
                          {"type": "http", "url": s.url("/a1")}],
                         retry=HOUR),
        "b": sink_source([{"type": "http", "url": s.url("/b")}],
                         retry=HOUR),
    }, extra={"dispatch": dispatch_conf(breaker_failures=0,
                                        retry=HOUR)}).start()
    s.mode("/a0", fail_first=1, fail_status=503, status=200)
    s.mode("/a1", fail_first=1, fail_status=503, status=200)
    s.mode("/b", fail_first=2, fail_status=503, status=200)
    (aid,) = post_hooks(d, "a", 1)
    b1, b2 = post_hooks(d, "b", 2)
    d.tick(30)      # first attempts failed: the rows wait an hour
    assert (s.received("/a0"), s.received("/a1"), s.received("/b")) == \
        (1, 1, 2), s.stats()
    assert d.status()["pending"] == 4

    # Bad input: 400 naming the field, nothing moved.
    base = "/v1/tenants/default/sources/a/retry-now"
    bad(d, "POST", base + "?sink=2", None, "sink")
    bad(d, "POST", base, {"sink": "x"}, "sink")
    bad(d, "POST", base, {"id": "nope"}, "id")
    bad(d, "POST", base, {"bogus": 1}, "bogus")
    st, _, data = request(d.admin_port, "POST", base, b'{"sink": 1,')
    assert st == 400 and json.loads(data)["error"] == "invalid_request", \
        (st, data)
    st, _, doc = d.api("POST", "/v1/tenants/default/sources/zz/retry-now")
    assert st == 404, (st, doc)
    st, _, doc = d.api("POST", "/v1/tenants/default/sources/a/retry-now",
                       {"id": "0190a8a8-0000-7000-8000-000000000000"})
    assert st == 404, (st, doc)
    d.tick(30)
    assert (s.received("/a0"), s.received("/a1")) == (1, 1), s.stats()

    # One sink of the source.
    st, _, doc = d.api("POST", base, {"sink": 1})
    assert st == 200 and doc["retried"] == 1, (st, doc)
    assert doc["open_breakers"] == [] and "breaker" in doc["note"], doc
    wait_until(lambda: aid in delivered(s, "/a1"), 10, what="a#1")
    d.tick(30)
    assert s.received("/a0") == 1, s.stats()

    # One hook of source b.
    st, _, doc = d.api("POST", "/v1/tenants/default/sources/b/retry-now",
                       {"id": b1})
    assert st == 200 and doc["retried"] == 1, (st, doc)
    wait_until(lambda: b1 in delivered(s, "/b"), 10, what="hook b1")
    d.tick(30)
    assert b2 not in delivered(s, "/b") and s.received("/b") == 3

    # The whole source, then every source with ankusactl flush.
    st, _, doc = d.api("POST", base + "?sink=0")
    assert st == 200 and doc["retried"] == 1, (st, doc)
    wait_until(lambda: aid in delivered(s, "/a0"), 10, what="a#0")
    rc, out, err = d.ctl("flush", json_out=True)
    assert rc == 0, (rc, out, err)
    wait_until(lambda: b2 in delivered(s, "/b"), 10, what="flush")
    d.tick(30)
    st = d.status()
    assert (st["hooks"], st["pending"]) == (0, 0), st


def test_ops_pause_resume_restart():
    """A paused sink gets no attempt while its source's other sink and
    other tenants flow; the pause survives a restart; resume delivers."""
    s = TestSink().start()
    d = Daemon(sources={
        "p": sink_source([{"type": "http", "url": s.url("/p0")},
                          {"type": "http", "url": s.url("/p1")}]),
        "q": sink_source([{"type": "http", "url": s.url("/q")}],
                         tenant="other"),
    }, extra={"dispatch": dispatch_conf(breaker_failures=0)}).start()
    path = "/v1/tenants/default/sources/p/sinks/%s/pause"
    bad(d, "POST", path % "x", None, "sink")
    st, _, doc = d.api("POST", path % "5")
    assert st == 404, (st, doc)
    assert d.api("GET", "/v1/pauses")[2]["paused"] == []

    st, _, doc = d.api("POST", path % "0")
    assert st == 200 and doc["keys"] == [{"source": "p", "sink": 0,
                                          "was_paused": False}], (st, doc)
    ids = post_hooks(d, "p", 3)
    qids = post_hooks(d, "q", 2)
    wait_until(lambda: set(ids) <= delivered(s, "/p1") and
               set(qids) <= delivered(s, "/q"), 10, what="other sinks")
    d.tick(30)      # the paused rows are not due: tick ends
    assert s.received("/p0") == 0, s.stats()
    # Set aside by the pause, a row was not attempted: no line says so.
    assert "attempt 0 failed" not in d.log_text(), d.log_text()[-2000:]
    st = d.status()
    assert st["pending"] == 3 and st["paused"][0]["source"] == "p", st
    # The hook shows its paused row as paused, due at no time.
    st, _, h = d.api("GET", "/v1/hooks/" + ids[0])
    assert st == 200 and [(r["sink"], r["state"], r["due"])
                          for r in h["rows"]] == [(0, "paused", None)], h

    d.stop()
    d.start()
    assert [(k["source"], k["sink"]) for k in
            d.api("GET", "/v1/pauses")[2]["paused"]] == [("p", 0)]
    samples = parse(scrape(d))[0]
    assert samples["ankusa_dispatch_paused_keys"] == 1, samples
    assert samples['ankusa_dispatch_paused{source_id="p",'
                   'sink_index="0"}'] == 1, samples
    ids += post_hooks(d, "p", 1)
    wait_until(lambda: set(ids) <= delivered(s, "/p1"), 10, what="p#1")
    d.tick(30)
    assert s.received("/p0") == 0, s.stats()
    assert d.status()["pending"] == 4

    rc, out, err = d.ctl("resume", "p#0", json_out=True)
    assert rc == 0, (rc, out, err)
    wait_until(lambda: set(ids) <= delivered(s, "/p0"), 10, what="resumed")
    assert s.received("/p0") == 4, s.stats()
    st, _, doc = d.api("POST", "/v1/tenants/default/sources/p/sinks/0/"
                       "resume")
    assert st == 409 and doc["error"] == "not_paused", (st, doc)
    d.stop()
    d.start()
    assert d.api("GET", "/v1/pauses")[2]["paused"] == []
    samples = parse(scrape(d))[0]
    assert samples["ankusa_dispatch_paused_keys"] == 0, samples
    assert not [k for k in samples if k.startswith(
        "ankusa_dispatch_paused{")], samples


def test_ops_rate_limit_override():
    """An override is in force at once (429 at its rate), survives a
    restart, and its DELETE falls back to the config's tenant limit."""
    d = Daemon(sources={
        "r": sink_source([{"type": "log"}], tenant="t1"),
    }, extra={"rate_limits": {"tenants": {"t1": {"rate": 1000,
                                                 "burst": 1000}}}}).start()
    st, _, doc = d.api("GET", "/v1/tenants/t1/rate-limit")
    assert st == 200 and doc["from"] == "tenant" and \
        doc["burst"] == 1000, doc
    rl = "/v1/tenants/t1/rate-limit"
    bad(d, "PUT", rl, {"rate": 0, "burst": 1}, "rate")
    bad(d, "PUT", rl, {"rate": 2e9, "burst": 1}, "rate")
    bad(d, "PUT", rl, {"rate": 1, "burst": 0}, "burst")
    bad(d, "PUT", rl, {"rate": 1}, "burst")
    bad(d, "PUT", rl, {"rate": 1, "burst": 1, "x": 1}, "x")
    assert d.api("GET", rl)[2]["from"] == "tenant"

    st, _, doc = d.api("PUT", rl, {"rate": 0.001, "burst": 2})
    assert st == 200 and doc["from"] == "override" and \
        doc["burst"] == 2, (st, doc)

    def three():
        return [post(d.port, "/webhooks/r", b"{}")[0] for _ in range(3)]
    assert three() == [201, 201, 429]
    doc = d.api("GET", "/v1/rate-limits")[2]
    assert {"tenant": "t1", "rate": 0.001, "burst": 2,
            "from": "override"} in doc["tenants"], doc

    d.stop()
    d.start()
    assert d.api("GET", rl)[2]["from"] == "override"
    assert three() == [201, 201, 429]
    # A reload keeps the override; the config's new limit is under it.
    d.extra["rate_limits"]["tenants"]["t1"] = {"rate": 500, "burst": 500}
    d.write_config()
    d.ctl("reload")
    doc = d.api("GET", rl)[2]
    assert doc["from"] == "override" and doc["burst"] == 2, doc
    st, _, doc = d.api("DELETE", rl)
    assert st == 200 and doc["from"] == "tenant" and doc["burst"] == 500, \
        (st, doc)
    assert three() == [201, 201, 201]
    st, _, doc = d.api("DELETE", rl)
    assert st == 404, (st, doc)
    d.stop()
    d.start()
    assert d.api("GET", rl)[2]["from"] == "tenant"


def test_ops_dead_letter_source():
    """POST .../dead-letter and DELETE ...?deliveries=dead_letter
    dead-letter a source's backlog; DELETE without it is 409 while there
    is one."""
    s = TestSink().start()
    d = Daemon(sources={
        "x": sink_source([{"type": "http", "url": s.url("/x")}],
                         retry=HOUR),
        "y": sink_source([{"type": "http", "url": s.url("/y")}],
                         retry=HOUR),
        "z": sink_source([{"type": "log"}]),
    }, extra={"dispatch": dispatch_conf(breaker_failures=0,
                                        retry=HOUR)}).start()
    s.mode("/x", status=503)
    s.mode("/y", status=503)
    post_hooks(d, "x", 3)
    post_hooks(d, "y", 2)
    d.tick(30)
    st, _, doc = d.api("POST", "/v1/tenants/default/sources/x/dead-letter",
                       {"n": 1})
    assert st == 400 and doc["field"] == "n", (st, doc)
    st, _, doc = d.api("POST", "/v1/tenants/default/sources/x/dead-letter")
    assert st == 200 and doc == {"dead_lettered": 3}, (st, doc)
    assert d.status()["dead"] == 3

    src = "/v1/tenants/default/sources/y"
    bad(d, "DELETE", src + "?deliveries=yes", None, "deliveries")
    st, _, doc = d.api("DELETE", src)
    assert st == 409 and doc["error"] == "source_has_deliveries", (st, doc)
    st, _, doc = d.api("DELETE", src + "?deliveries=dead_letter")
    assert st == 200 and doc == {"dead_lettered": 2}, (st, doc)
    st, _, doc = d.api("DELETE", src)
    assert st == 200 and doc["dead_lettered"] == 0, (st, doc)
    st, _, doc = d.api("DELETE", "/v1/tenants/default/sources/z")
    assert st == 200, (st, doc)
    st, _, doc = d.api("DELETE", "/v1/tenants/default/sources/nosuch")
    assert st == 404, (st, doc)
    st = d.status()
    assert (st["pending"], st["dead"]) == (0, 5), st
    # Counted under the sink's module, as every other dead letter is.
    samples = parse(scrape(d))[0]
    for src, n in (("x", 3), ("y", 2)):
        assert samples['ankusa_dispatch_dead_lettered_total{source_id="%s",'
                       'sink="http"}' % src] == n, samples


def in_force(d, local, ack_timeout_ms, heartbeat_ms):
    """The replication section in force (GET /v1/config): the first
    start's restart-only keys (no peers: null or []), the timeouts
    given."""
    st, _, doc = d.api("GET", "/v1/config")
    assert st == 200, (st, doc)
    repl = dict(doc["replication"])
    assert not repl.pop("peers"), doc["replication"]
    assert repl == {
        "local": local, "priority": 100, "create": True,
        "ack_policy": "quorum", "ack_timeout_ms": ack_timeout_ms,
        "heartbeat_ms": heartbeat_ms, "heartbeat_timeout_ms": 2000,
        "insecure_public": False}, doc["replication"]


def test_reload_replication_restart_only():
    """A SIGHUP that changes replication.priority, ack_policy and peers
    (restart-only) and ack_timeout_ms and heartbeat_ms (reloadable): each
    restart-only key is logged by name and keeps its old value in the
    config in force (GET /v1/config); the timeouts take the new ones."""
    local = "127.0.0.1:%d" % free_port()
    peer = "127.0.0.1:%d" % free_port()
    d = Daemon(extra={"replication": {"local": local, "create": True}})
    d.start()
    try:
        in_force(d, local, 300, 500)
        d.extra["replication"] = {"local": local, "create": True,
                                  "peers": [peer], "priority": 7,
                                  "ack_policy": "all",
                                  "ack_timeout_ms": 900,
                                  "heartbeat_ms": 250}
        d.write_config()
        d.ctl("reload")
        log = d.log_since_start()
        for key in ("replication.peers", "replication.priority",
                    "replication.ack_policy"):
            assert "reload: %s changed; it needs a restart and keeps its " \
                "old value until then" % key in log, \
                "%s not reported:\n%s" % (key, log[-2000:])
        for key in ("replication.ack_timeout_ms", "replication.heartbeat_ms",
                    "replication.local", "replication.create",
                    "reload: replication"):
            assert "%s changed" % key not in log, \
                "%s reported:\n%s" % (key, log[-2000:])
        in_force(d, local, 900, 250)
    finally:
        assert d.stop() == 0

# SPDX-License-Identifier: ISC
"""Each destination's health (issue 37, section 3): the ankusa_sink_*
families of /metrics per sink key, GET /v1/sinks and ankusactl sinks
against a sink that fails then succeeds, a dead letter and a paused key;
the per-key counts again after a restart; a real Prometheus scraping them;
the alert rules of scripts/ through promtool check rules and test rules.
"""

import json
import os
import re
import subprocess

import ankusa
from ankusa import (Daemon, TestSink, dispatch_conf, expect_accepted, post,
                    sink_source, wait_until)
from test_metrics import PROMETHEUS, PROMTOOL, Prometheus, exposed, \
    parse, promtool_ok, scrape

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RULES = os.path.join(ROOT, "scripts", "ankusa-alerts.yml")
RULE_TESTS = os.path.join(ROOT, "scripts", "ankusa-alerts.test.yml")


def sinks(d):
    st, _, doc = d.api("GET", "/v1/sinks")
    assert st == 200, (st, doc)
    return {(k["source_id"], k["sink"]): k for k in doc["sinks"]}


def health_daemon(s):
    retry = dict(ankusa.FAST_RETRY, max_attempts=1000)
    return Daemon(sources={
        "fl": sink_source([{"type": "http", "url": s.url("/flaky")}],
                          tenant="acme", retry=retry),
        "bad": sink_source([{"type": "http", "url": s.url("/bad")}],
                           tenant="acme", retry=retry),
        "two": sink_source([{"type": "http", "url": s.url("/two0")},
                            {"type": "log"}], tenant="acme", retry=retry),
    }, extra={"dispatch": dispatch_conf(breaker_failures=3,
                                        breaker_open_ms=500,
                                        breaker_max_open_ms=1000)}).start()


def post_to(d, source, n=1):
    for i in range(n):
        expect_accepted(*post(d.port, "/webhooks/" + source,
                              b'{"i":%d}' % i))


def test_sinks_fail_then_succeed():
    """A sink answering 500 then 200: while it fails, its key shows the
    consecutive failures, the last error and its time, the open breaker
    and its row pending or claimed; once it answers, the ratio and the
    percentiles of its attempts, the success after the failures, nothing
    pending; a 400 leaves a dead row on its key; a paused key's rows are
    pending there; /metrics agrees (through promtool) and so do ankusactl
    sinks and -j; a restart counts the rows again."""
    s = TestSink().start()
    s.mode("/flaky", status=500)
    s.mode("/bad", status=400)
    d = health_daemon(s)
    keys = sinks(d)
    assert set(keys) == {("fl", 0), ("bad", 0), ("two", 0), ("two", 1)}, \
        keys
    assert keys[("two", 1)]["module"] == "log"
    k = keys[("fl", 0)]
    assert k["5m"] == {"attempts": 0, "success_ratio": None, "p50_ms": None,
                       "p99_ms": None}, k
    assert k["last_error"] is None and k["last_success_at"] is None, k

    post_to(d, "fl")
    wait_until(lambda: sinks(d)[("fl", 0)]["breaker"] == "open",
               timeout=20, what="fl#0's breaker open")
    k = sinks(d)[("fl", 0)]
    assert k["consecutive_failures"] >= 3, k
    assert "500" in k["last_error"] and k["last_error_at"] > 0, k
    assert k["pending"] + k["claimed"] == 1 and k["dead"] == 0, k
    assert k["5m"]["attempts"] == k["consecutive_failures"], k
    assert k["5m"]["success_ratio"] == 0, k
    g = parse(scrape(d))[0]
    lab = '{source_id="fl",sink="0",module="http"}'
    assert g.get("ankusa_sink_breaker_state" + lab) in (1, 2), g
    assert g.get("ankusa_sink_consecutive_failures" + lab) >= 3, g

    s.mode("/flaky", status=200)
    wait_until(lambda: s.received("/flaky") >= 4 and
               sinks(d)[("fl", 0)]["pending"] == 0 and
               sinks(d)[("fl", 0)]["claimed"] == 0, timeout=20,
               what="fl#0 delivered")
    n = s.received("/flaky")
    k = sinks(d)[("fl", 0)]
    assert k["5m"]["attempts"] == n and k["1h"]["attempts"] == n, (n, k)
    assert abs(k["5m"]["success_ratio"] - 1.0 / n) < 1e-9, (n, k)
    assert 0 < k["5m"]["p50_ms"] <= k["5m"]["p99_ms"] < 5000, k
    assert k["consecutive_failures"] == 0 and k["breaker"] == "closed", k
    assert k["last_success_at"] >= k["last_error_at"], k
    assert "500" in k["last_error"] and k["dead"] == 0, k

    # A permanent answer: one dead row on its key.
    post_to(d, "bad")
    wait_until(lambda: sinks(d)[("bad", 0)]["dead"] == 1, timeout=20,
               what="bad#0's dead row")
    k = sinks(d)[("bad", 0)]
    assert k["pending"] == 0 and k["5m"]["attempts"] == 1 and \
        k["5m"]["success_ratio"] == 0 and "400" in k["last_error"], k

    # A paused key: its rows wait, counted on it alone.
    d.ctl("pause", "two#0")
    post_to(d, "two", 2)
    wait_until(lambda: sinks(d)[("two", 1)]["5m"]["attempts"] == 2,
               timeout=20, what="two#1 (log) delivered")
    d.tick(30)
    k = sinks(d)[("two", 0)]
    assert k["paused"] is True and k["pending"] == 2 and \
        k["5m"]["attempts"] == 0, k
    assert sinks(d)[("two", 1)]["pending"] == 0

    text = scrape(d)
    if os.access(PROMTOOL, os.X_OK):
        promtool_ok(text)
    g = parse(text)[0]

    def key(name, src, sink=0, module="http", **more):
        lab = 'source_id="%s",sink="%d",module="%s"' % (src, sink, module)
        for k2, v in more.items():
            lab += ',%s="%s"' % (k2, v)
        return "%s{%s}" % (name, lab)
    want = {
        key("ankusa_sink_attempts_total", "fl", result="error"): n - 1,
        key("ankusa_sink_attempts_total", "fl", result="ok"): 1,
        key("ankusa_sink_attempts_total", "bad", result="permanent"): 1,
        key("ankusa_sink_attempts_total", "two", 1, "log", result="ok"): 2,
        key("ankusa_sink_attempt_duration_seconds_count", "fl"): n,
        key("ankusa_sink_consecutive_failures", "fl"): 0,
        key("ankusa_sink_consecutive_failures", "bad"): 1,
        key("ankusa_sink_breaker_state", "fl"): 0,
        key("ankusa_sink_pending", "fl"): 0,
        key("ankusa_sink_dead", "fl"): 0,
        key("ankusa_sink_dead", "bad"): 1,
        key("ankusa_sink_pending", "two"): 2,
        key("ankusa_sink_pending", "two", 1, "log"): 0,
        key("ankusa_sink_claimed", "two"): 0,
    }
    for k2, v in want.items():
        assert g.get(k2) == v, "%s = %r, want %r" % (k2, g.get(k2), v)
    ts = g.get(key("ankusa_sink_last_success_timestamp_seconds", "fl"))
    assert ts is not None and abs(ts * 1000 -
                                  sinks(d)[("fl", 0)]["last_success_at"]) \
        < 1, ts
    assert key("ankusa_sink_last_success_timestamp_seconds", "bad") \
        not in g, "bad#0 never succeeded"
    # The module's families are as they were.
    assert g.get('ankusa_dispatch_deliveries_total{result="ok",'
                 'sink="http"}') == 1

    # ankusactl sinks: a line a key and its last error; -j the API's JSON.
    _, out, _ = d.ctl("sinks")
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["SOURCE#SINK", "MODULE"], out
    row = [ln for ln in lines if ln.startswith("fl#0 ")]
    assert len(row) == 1 and "http" in row[0] and "closed" in row[0], out
    assert re.search(r"last error \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: "
                     r".*500", out), out
    two = [ln for ln in lines if ln.startswith("two#0 ")][0].split()
    assert two[-1] == "yes" and two[-4] == "2", two
    _, out, _ = d.ctl("sinks", json_out=True)
    j = json.loads(out)
    assert {(k2["source_id"], k2["sink"]) for k2 in j["sinks"]} == \
        set(keys), j

    # After a restart the rows are counted again from the store.
    d.stop()
    d.start()
    wait_until(lambda: sinks(d)[("two", 0)]["pending"] == 2 and
               sinks(d)[("bad", 0)]["dead"] == 1, timeout=20,
               what="the counts after the restart")
    k = sinks(d)[("fl", 0)]
    assert k["pending"] == 0 and k["dead"] == 0 and \
        k["5m"]["attempts"] == 0, k
    d.ctl("resume", "two#0")
    wait_until(lambda: sinks(d)[("two", 0)]["pending"] == 0 and
               s.received("/two0") == 2, timeout=20, what="two#0 resumed")


def test_sinks_replication():
    """In a replication group the master counts its rows by sink key; a
    client keeps no count (its tables change under it): pending and dead
    null in GET /v1/sinks, no series in /metrics.  The client that
    becomes master after a kill -9 counts them from its store."""
    from test_replication import Group
    s = TestSink().start()
    s.mode("/s", status=503)
    g = Group(s.url("/s")).start()
    m = g.master()
    post_to(m, "s", 3)

    def counted(d):
        k = sinks(d)[("s", 0)]
        return k["pending"] is not None and \
            k["pending"] + k["claimed"] == 3 and k["dead"] == 0
    wait_until(lambda: counted(m), timeout=20, what="the master's count")
    for c in g.nodes:
        if c is m:
            continue
        k = sinks(c)[("s", 0)]
        assert k["pending"] is None and k["dead"] is None, k
        g2 = parse(scrape(c))[0]
        assert not [n for n in g2 if n.startswith(("ankusa_sink_pending",
                                                   "ankusa_sink_dead"))], g2
    m.kill9()
    m2 = g.master(timeout=60)
    assert m2 is not m
    wait_until(lambda: counted(m2), timeout=30,
               what="the new master's count")
    s.mode("/s", status=200)
    wait_until(lambda: sinks(m2)[("s", 0)]["pending"] == 0 and
               sinks(m2)[("s", 0)]["claimed"] == 0, timeout=30,
               what="delivered by the new master")


test_sinks_replication.timeout = 240


def test_sinks_scope():
    """GET /v1/sinks wants hooks:read: a token with metrics:read alone is
    refused 403 naming it."""
    tok = "m-" + os.urandom(16).hex()
    d = Daemon(sources={"gh": ankusa.hold_source()})
    d.admin["tokens"] = ankusa.admin_tokens() + [
        {"name": "metrics", "token": tok, "scopes": ["metrics:read"]}]
    d.write_config()
    d.start()
    st, _, data = ankusa.request(d.admin_port, "GET", "/v1/sinks",
                                 headers={"Authorization": "Bearer " + tok})
    doc = json.loads(data)
    assert st == 403 and doc == {"error": "forbidden",
                                 "scope": "hooks:read"}, (st, doc)
    st, _, _ = ankusa.request(d.admin_port, "GET", "/metrics",
                              headers={"Authorization": "Bearer " + tok})
    assert st == 200


def test_sinks_prometheus_scrape():
    """A real Prometheus scrapes the per-key families: the attempts of
    one key by result, and its success ratio as the alert rules compute
    it."""
    if not os.access(PROMETHEUS, os.X_OK):
        raise ankusa.Skip("no %s (Debian package prometheus)" % PROMETHEUS)
    s = TestSink().start()
    s.mode("/flaky", status=200, fail_first=2, fail_status=500)
    d = health_daemon(s)
    post_to(d, "fl")
    wait_until(lambda: s.received("/flaky") == 3 and
               sinks(d)[("fl", 0)]["pending"] == 0, timeout=20,
               what="fl#0 delivered at the third attempt")
    p = Prometheus(d.admin_port).start()
    try:
        def value(q):
            r = p.query(q)
            return float(r[0]["value"][1]) if r and len(r) == 1 else None
        q = ('ankusa_sink_attempts_total{job="ankusa",source_id="fl",'
             'sink="0",module="http",result="error"}')
        wait_until(lambda: value(q) == 2, timeout=60, interval=0.5,
                   what="Prometheus to scrape fl#0's two errors")
        assert value(q.replace('"error"', '"ok"')) == 1
        assert value('ankusa_sink_pending{source_id="fl"}') == 0
        assert value('ankusa_sink_attempt_duration_seconds_count'
                     '{source_id="fl"}') == 3
    finally:
        p.stop()


def test_alert_rules_promtool():
    """scripts/ankusa-alerts.yml passes promtool check rules, and its unit
    tests (scripts/ankusa-alerts.test.yml) pass promtool test rules; every
    metric a rule names is one the daemon exposes."""
    if not os.access(PROMTOOL, os.X_OK):
        raise ankusa.Skip("no %s (Debian package prometheus)" % PROMTOOL)
    for argv in ([PROMTOOL, "check", "rules", RULES],
                 [PROMTOOL, "test", "rules", RULE_TESTS]):
        r = subprocess.run(argv, capture_output=True, timeout=60,
                           cwd=os.path.dirname(RULES))
        assert r.returncode == 0, "%s: exit %d: %s" % (
            " ".join(argv[1:3]), r.returncode,
            (r.stdout + r.stderr).decode()[-3000:])
    with open(RULES) as f:
        used = set(re.findall(r"\bankusa_[a-z0-9_]+", f.read()))
    d = Daemon(sources={"gh": ankusa.hold_source()}).start()
    missing = sorted(used - exposed(d))
    assert not missing, "rules name metrics the daemon does not expose: " \
        "%s" % missing

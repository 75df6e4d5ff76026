# SPDX-License-Identifier: ISC
"""GET /metrics (issue 24, section 2): the Prometheus text of the contracts'
counters, histograms and gauges, checked by promtool, by its values after a
known sequence, by ankusactl stats, and scraped by a real Prometheus server
(Debian's prometheus package) queried through its HTTP API.
"""

import json
import os
import re
import signal
import subprocess
import time
import urllib.parse

import ankusa
from ankusa import (Daemon, TestSink, expect_accepted, free_port, hold_source,
                    post, request, sink_source, tmpdir, wait_until)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROMTOOL = "/usr/bin/promtool"
PROMETHEUS = "/usr/bin/prometheus"

# Every family of shared/ankusa-contracts.md's Metrics section.
CONTRACT = {
    "counter": [
        "ankusa_ingest_requests_total", "ankusa_ingest_refused_total",
        "ankusa_verify_failures_total", "ankusa_rate_limit_rejected_total",
        "ankusa_dispatch_deliveries_total",
        "ankusa_dispatch_breaker_transitions_total",
        "ankusa_dispatch_dead_lettered_total", "ankusa_replay_moved_total"],
    "histogram": [
        "ankusa_ingest_duration_seconds",
        "ankusa_wal_commit_duration_seconds",
        "ankusa_dispatch_attempt_duration_seconds"],
    "gauge": [
        "ankusa_store_hooks", "ankusa_store_deliveries",
        "ankusa_queue_pending", "ankusa_queue_inflight", "ankusa_queue_dead",
        "ankusa_queue_oldest_due_age_seconds", "ankusa_dispatch_running",
        "ankusa_dispatch_claimed", "ankusa_dispatch_claimed_bytes",
        "ankusa_dispatch_breakers_open", "ankusa_dispatch_lanes_blocked",
        "ankusa_tenant_pending", "ankusa_disk_free_bytes"],
}

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$')


def scrape(d):
    st, hdrs, data = request(d.admin_port, "GET", "/metrics")
    assert st == 200, "GET /metrics: %d %r" % (st, data[:200])
    ct = hdrs.get("content-type", "")
    assert ct.startswith("text/plain; version=0.0.4"), \
        "Content-Type %r" % ct
    return data.decode("utf-8")


def parse(text):
    """({series: value}, {family: type}, {family: help})."""
    samples, types, helps = {}, {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, t = line.split(" ", 3)
            types[name] = t
        elif line.startswith("# HELP "):
            _, _, name, h = line.split(" ", 3)
            helps[name] = h
        elif line and not line.startswith("#"):
            m = SAMPLE.match(line)
            assert m, "not a sample line: %r" % line
            samples[(m.group(1) + (m.group(2) or ""))] = float(m.group(3))
    return samples, types, helps


def promtool_ok(text):
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                       capture_output=True, timeout=30)
    assert r.returncode == 0, "promtool check metrics: exit %d: %s" % (
        r.returncode, (r.stdout + r.stderr).decode()[:2000])


def metric(samples, key):
    return samples.get(key, 0)


def test_metrics_promtool_and_families():
    """Every contract family with HELP and TYPE of its type; promtool
    passes a real scrape; N committed posts count as outcome committed;
    histogram series end in +Inf equal to _count."""
    if not os.access(PROMTOOL, os.X_OK):
        raise ankusa.Skip("no %s (Debian package prometheus)" % PROMTOOL)
    d = Daemon(sources={"gh": hold_source(tenant="acme")}).start()
    n = 7
    for i in range(n):
        st, h, data = post(d.port, "/webhooks/gh", b'{"n":%d}' % i)
        expect_accepted(st, h, data, "post %d" % i)
    st, _, _ = post(d.port, "/webhooks/nosuch", b"{}")
    assert st == 404
    # The edge answers the 404 itself and tells the master after: the
    # count may land a moment after the answer.
    key = 'ankusa_ingest_refused_total{reason="unknown_source"}'
    wait_until(lambda: metric(parse(scrape(d))[0], key) == 1, timeout=10,
               what=key)
    text = scrape(d)
    promtool_ok(text)
    samples, types, helps = parse(text)
    for t, names in CONTRACT.items():
        for name in names:
            assert types.get(name) == t, "%s: TYPE %r, want %s" % (
                name, types.get(name), t)
            assert helps.get(name), "%s has no HELP" % name
    assert set(types) == set(helps), "HELP and TYPE name other families"
    key = 'ankusa_ingest_requests_total{source_id="gh",outcome="committed"}'
    assert metric(samples, key) == n, "%s = %r\n%s" % (
        key, samples.get(key), text)
    assert not [k for k in samples if 'outcome="accepted"' in k], \
        "outcome accepted is gone: it is committed"
    key = 'ankusa_ingest_refused_total{reason="unknown_source"}'
    assert metric(samples, key) == 1, "%s = %r" % (key, samples.get(key))
    # The ingest histogram: one observation per answered hook.
    assert samples.get('ankusa_ingest_duration_seconds_count') == n
    assert samples.get('ankusa_ingest_duration_seconds_bucket{le="+Inf"}') \
        == n
    assert samples.get('ankusa_wal_commit_duration_seconds_count', 0) >= 1
    assert metric(samples, "ankusa_store_hooks") == n
    assert metric(samples, "ankusa_store_deliveries") == n
    assert samples.get("ankusa_disk_free_bytes", 0) > 0
    # Buckets never decrease.
    last = {}
    for k, v in samples.items():
        if "_bucket{" in k:
            base = re.sub(r',?le="[^"]*"', "", k)
            assert v >= last.get(base, 0), "bucket %s decreases" % k
            last[base] = v
    # The tenant's pending rows, once the pass has run.
    wait_until(lambda: parse(scrape(d))[0].get(
        'ankusa_tenant_pending{tenant="acme"}') == n, timeout=15,
        what="ankusa_tenant_pending{tenant=\"acme\"} == %d" % n)


def delivery_daemon(sink):
    sources = {
        "ok": sink_source([{"type": "http", "url": sink.url("/ok")}],
                          tenant="acme", retry=dict(ankusa.FAST_RETRY)),
        "bad": sink_source([{"type": "http", "url": sink.url("/bad")}],
                           tenant="globex", retry=dict(ankusa.FAST_RETRY)),
    }
    return Daemon(sources=sources).start()


def test_metrics_values_after_sequence():
    """N posts delivered, M dead-lettered (400 is permanent): the
    counters, the attempt histogram, the gauges, and ankusactl stats give
    the same numbers."""
    sink = TestSink().start()
    sink.mode("/bad", status=400)
    d = delivery_daemon(sink)
    n, m = 6, 3
    for i in range(n):
        expect_accepted(*post(d.port, "/webhooks/ok", b'{"i":%d}' % i))
    for i in range(m):
        expect_accepted(*post(d.port, "/webhooks/bad", b'{"i":%d}' % i))
    wait_until(lambda: sink.received("/ok") >= n and
               parse(scrape(d))[0].get("ankusa_queue_dead") == m,
               timeout=20, what="deliveries and dead letters")
    d.ctl("tick", "10")
    text = scrape(d)
    promtool_ok(text) if os.access(PROMTOOL, os.X_OK) else None
    s, _, _ = parse(text)
    want = {
        'ankusa_ingest_requests_total{source_id="ok",outcome="committed"}':
            n,
        'ankusa_ingest_requests_total{source_id="bad",outcome="committed"}':
            m,
        'ankusa_dispatch_deliveries_total{result="ok",sink="http"}': n,
        'ankusa_dispatch_deliveries_total{result="permanent",sink="http"}':
            m,
        'ankusa_dispatch_dead_lettered_total{source_id="bad",sink="http"}':
            m,
        'ankusa_dispatch_attempt_duration_seconds_count'
        '{sink="http",result="ok"}': n,
        'ankusa_dispatch_attempt_duration_seconds_count'
        '{sink="http",result="permanent"}': m,
        "ankusa_queue_dead": m,
        "ankusa_store_hooks": m,
        "ankusa_store_deliveries": m,
        "ankusa_queue_pending": 0,
        "ankusa_queue_inflight": 0,
        "ankusa_dispatch_running": 0,
        "ankusa_dispatch_claimed": 0,
    }
    for k, v in want.items():
        assert s.get(k) == v, "%s = %r, want %d\n%s" % (k, s.get(k), v, text)
    # ankusactl stats: the same series, the same numbers.
    _, out, _ = d.ctl("stats", json_out=True)
    j = json.loads(out)
    for k, v in want.items():
        if k.startswith("ankusa_dispatch_attempt_duration_seconds_count"):
            hk = k.replace("_count", "")
            assert j["histograms"][hk]["count"] == v, (k, j["histograms"])
        elif k in j["gauges"]:
            assert j["gauges"][k] == v, (k, j["gauges"][k])
        else:
            assert j["counters"].get(k) == v, (k, j["counters"].get(k))
    # Today's keys stay.
    assert j["ankusa_queue_dead"] == m and j["ankusa_store_hooks"] == m
    _, out, _ = d.ctl("stats")
    assert 'ankusa_dispatch_deliveries_total{result="ok",sink="http"} ' \
        '%d' % n in out.splitlines(), out
    assert "ankusa_queue_dead %d" % m in out.splitlines(), out


def test_metrics_lanes_blocked():
    """An ordered lane whose head keeps failing is one blocked lane while
    its members wait; once the head is delivered it is none."""
    sink = TestSink().start()
    sink.mode("/lane", status=503)
    src = sink_source([{"type": "http", "url": sink.url("/lane"),
                        "ordered": True, "order_key": {"header": "x-k"}}],
                      tenant="acme", retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"o": src},
               extra={"dispatch": {"breaker_failures": 0}}).start()
    for i in range(3):
        expect_accepted(*post(d.port, "/webhooks/o", b'{"i":%d}' % i,
                              headers={"x-k": "one"}))

    def gauge(name):
        return parse(scrape(d))[0].get(name)
    wait_until(lambda: gauge("ankusa_dispatch_lanes_blocked") == 1,
               timeout=15, what="one blocked lane")
    # One scrape: a row claimed between two would move from one gauge
    # to the other.
    g = parse(scrape(d))[0]
    assert g.get("ankusa_queue_pending") + g.get("ankusa_queue_inflight") \
        == 3, g
    sink.mode("/lane", status=200)
    wait_until(lambda: sink.received("/lane") >= 3 + 1 and
               gauge("ankusa_store_deliveries") == 0, timeout=20,
               what="the lane delivered")
    assert gauge("ankusa_dispatch_lanes_blocked") == 0


class Prometheus:
    """/usr/bin/prometheus on a free loopback port, scraping one target;
    killed by the harness like the daemons if the test fails."""

    def __init__(self, target_port):
        self.dir = tmpdir("prometheus")
        self.port = free_port()
        self.conf = os.path.join(self.dir, "prometheus.yml")
        self.logpath = os.path.join(self.dir, "prometheus.log")
        with open(self.conf, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n"
                    "  evaluation_interval: 1s\n"
                    "scrape_configs:\n"
                    "  - job_name: ankusa\n"
                    "    scrape_interval: 1s\n"
                    "    authorization:\n"
                    "      credentials: %s\n"
                    "    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % (
                        ankusa.ADMIN_TOKEN, target_port))
        self.proc = None
        self.pid = None
        ctx = ankusa._ctx
        if ctx is not None:
            with ctx.lock:
                ctx.daemons.append(self)

    def start(self):
        log = open(self.logpath, "ab")
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + self.conf,
             "--storage.tsdb.path=" + os.path.join(self.dir, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % self.port],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True)
        log.close()
        self.pid = self.proc.pid
        return self

    def query(self, q):
        st, _, data = request(self.port, "GET", "/api/v1/query?query=" +
                              urllib.parse.quote(q), timeout=5)
        if st != 200:
            return None
        j = json.loads(data)
        return j["data"]["result"] if j.get("status") == "success" else None

    def destroy(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    stop = destroy


def test_metrics_prometheus_scrape():
    """A real Prometheus scrapes the admin port; a PromQL query through
    its HTTP API returns the posts and deliveries the test caused."""
    if not os.access(PROMETHEUS, os.X_OK):
        raise ankusa.Skip("no %s (Debian package prometheus)" % PROMETHEUS)
    sink = TestSink().start()
    d = delivery_daemon(sink)
    n = 5
    for i in range(n):
        expect_accepted(*post(d.port, "/webhooks/ok", b'{"i":%d}' % i))
    wait_until(lambda: sink.received("/ok") >= n, timeout=20,
               what="deliveries")
    p = Prometheus(d.admin_port).start()
    try:
        q = ('sum(ankusa_ingest_requests_total{job="ankusa",'
             'outcome="committed"})')

        def answered():
            r = p.query(q)
            return r is not None and len(r) == 1 and \
                float(r[0]["value"][1]) == n
        wait_until(answered, timeout=60, interval=0.5,
                   what="Prometheus to scrape %d committed posts" % n)
        r = p.query('ankusa_dispatch_deliveries_total{result="ok",'
                    'sink="http"}')
        assert r and float(r[0]["value"][1]) == n, r
        r = p.query('up{job="ankusa"}')
        assert r and r[0]["value"][1] == "1", r
    finally:
        p.stop()


def exposed(d):
    """The names of d's /metrics: every family, a histogram's _bucket,
    _sum and _count."""
    _, types, _ = parse(scrape(d))
    names = set(types)
    for name, t in types.items():
        if t == "histogram":
            names |= {name + "_bucket", name + "_sum", name + "_count"}
    return names


def dashboard_metrics(doc):
    names = set()

    def walk(v):
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str):
            names.update(re.findall(r"\bankusa_[a-z0-9_]+", v))
    walk(doc)
    return names


def test_metrics_grafana_dashboard():
    """scripts/grafana-dashboard.json is JSON Grafana imports (panels with
    targets) and names only metrics the daemon exposes."""
    with open(os.path.join(ROOT, "scripts", "grafana-dashboard.json")) as f:
        doc = json.load(f)
    assert doc.get("title") and isinstance(doc.get("panels"), list) and \
        doc["panels"], "no title or panels"
    used = dashboard_metrics(doc)
    assert used, "the dashboard names no metric"
    d = Daemon(sources={"gh": hold_source()}).start()
    missing = sorted(used - exposed(d))
    assert not missing, "the dashboard uses metrics the daemon does not " \
        "expose: %s" % missing

# SPDX-License-Identifier: ISC
"""Filters and routing by event type (issue 38, section 1).

Stripe-signed hooks of five event types go to a source with two http
sinks filtered by event_types: each sink gets exactly its types, the
type no sink wants is answered 200 filtered, is not stored (GET
/v1/hooks/{id} 404) and is counted (outcome filtered).  jq filters: one
true/false on the body, one that fails and one that loops, the last two
counted as matches (delivered), logged and counted
(ankusa_filter_errors_total); a program that loops or allocates without
bound kills its evaluator process (the CPU and memory budgets), a fresh
one takes over, and the edge (the same process) serves on.  The event
type shows in GET /v1/hooks/{id}, the presets' and a source's own.
"""

import json
import os
import re
import signal
import time

from ankusa import (Daemon, TestSink, _proc_children, check_config,
                    dispatch_conf, expect, expect_accepted, jbody, post,
                    proc_alive, proc_comm, request, sink_source, wait_until)
from test_verify import sign_github, sign_stripe

STRIPE = "whsec_stripe_filters"
GITHUB = "gh-filters-secret"


def metric(d, family, **labels):
    st, _, data = request(d.admin_port, "GET", "/metrics")
    assert st == 200, "GET /metrics: %d" % st
    want = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
    for line in data.decode().splitlines():
        m = re.match(r"^%s\{(.*)\} (\S+)$" % family, line)
        if m and ",".join(sorted(m.group(1).split(","))) == want:
            return float(m.group(2))
    return 0


def stripe_post(d, source, etype, n):
    body = json.dumps({"id": "evt_%s_%d" % (etype, n), "type": etype,
                       "data": {"n": n}}).encode()
    h = sign_stripe(STRIPE, body)
    h["Content-Type"] = "application/json"
    return post(d.port, "/webhooks/" + source, body, h)


def held_stripe(sinks, types):
    """A daemon whose stripe source holds what fails verification, the
    hooks of types posted signed with a secret it learns only after
    (then reloaded with it): (daemon, {type: [ids]})."""
    src = sink_source(sinks)
    src["verify"] = {"type": "stripe", "secret": "current"}
    src["on_verify_failure"] = "quarantine"
    d = Daemon(sources={"pay": src}, extra={
        "dispatch": dispatch_conf(),
        "quarantine": {"burst": 10, "rate": 1, "max_bytes": 1000000}}
    ).start()
    ids = {}
    for n, t in enumerate(types):
        body = json.dumps({"id": "evt_%d" % n, "type": t}).encode()
        st, h, data = post(d.port, "/webhooks/pay", body,
                           sign_stripe("next", body))
        assert st == 202 and jbody(data)["status"] == "quarantined", \
            (st, data)
        ids.setdefault(t, []).append(jbody(data)["id"])
    src["verify"]["secret"] = ["next", "current"]
    d.write_config()
    d.ctl("reload")
    return d, ids


def test_event_types_route_and_filter():
    """Five Stripe types, two sinks: each gets exactly its types; the one
    no sink wants is 200 filtered, not stored, counted."""
    s = TestSink().start()
    src = sink_source([
        {"type": "http", "url": s.url("/a"),
         "filter": {"event_types": ["invoice.*", "customer.created"]}},
        {"type": "http", "url": s.url("/b"),
         "filter": {"event_types": ["charge.succeeded"]}}])
    src["verify"] = {"type": "stripe", "secret": STRIPE}
    d = Daemon(sources={"pay": src},
               extra={"dispatch": dispatch_conf()}).start()
    types = ["invoice.paid", "invoice.created", "customer.created",
             "charge.succeeded", "payout.paid"]
    ids = {}
    for n, t in enumerate(types):
        st, h, data = stripe_post(d, "pay", t, n)
        if t == "payout.paid":
            expect(st, h, data, 200, what=t)
            j = jbody(data)
            assert set(j) == {"status", "id"} and \
                j["status"] == "filtered", j
            ids[t] = j["id"]
        else:
            ids[t] = expect_accepted(st, h, data, what=t)
    wait_until(lambda: s.received() >= 4, timeout=15, what="4 deliveries")
    time.sleep(0.5)
    type_of = {i: t for t, i in ids.items()}
    got_a = sorted(type_of[i] for i in s.ids("/a"))
    got_b = sorted(type_of[i] for i in s.ids("/b"))
    assert got_a == ["customer.created", "invoice.created",
                     "invoice.paid"], got_a
    assert got_b == ["charge.succeeded"], got_b
    st, _, doc = d.api("GET", "/v1/hooks/" + ids["payout.paid"])
    assert st == 404, (st, doc)
    assert metric(d, "ankusa_ingest_requests_total", source_id="pay",
                  outcome="filtered") == 1
    assert metric(d, "ankusa_ingest_requests_total", source_id="pay",
                  outcome="committed") == 4
    # A body that is not JSON has no type: no event_types list wants it.
    st, h, data = post(d.port, "/webhooks/pay", b"not json",
                       sign_stripe(STRIPE, b"not json"))
    expect(st, h, data, 200, what="no type")
    assert jbody(data)["status"] == "filtered"


def test_event_type_shown():
    """The event type is stored with the hook: the stripe preset's, the
    github preset's EVENT.ACTION, a source's own header; none for a
    source without one; GET /v1/hooks lists the hooks of one type."""
    s = TestSink().start()
    s.mode("/hold", status=503)
    held = [{"type": "http", "url": s.url("/hold")}]
    retry = {"base_ms": 60000, "max_ms": 60000, "jitter": False}
    st_src = sink_source(held, retry=retry)
    st_src["verify"] = {"type": "stripe", "secret": STRIPE}
    gh = sink_source(held, retry=retry)
    gh["verify"] = {"type": "github", "secret": GITHUB}
    own = sink_source(held, retry=retry, event_type={"header": "x-kind"})
    none = sink_source(held, retry=retry)
    d = Daemon(sources={"st": st_src, "gh": gh, "own": own, "none": none},
               extra={"dispatch": dispatch_conf()}).start()
    ids = {}
    ids["st"] = expect_accepted(*stripe_post(d, "st", "invoice.paid", 1))
    body = b'{"action":"opened","issue":{"number":1}}'
    h = sign_github(GITHUB, body)
    h["X-GitHub-Event"] = "issues"
    ids["gh"] = expect_accepted(*post(d.port, "/webhooks/gh", body, h))
    body = b'{"zen":"Design for failure."}'
    h = sign_github(GITHUB, body)
    h["X-GitHub-Event"] = "ping"
    ids["ping"] = expect_accepted(*post(d.port, "/webhooks/gh", body, h))
    ids["own"] = expect_accepted(*post(d.port, "/webhooks/own", b"x",
                                       {"X-Kind": "thing.made"}))
    ids["none"] = expect_accepted(*post(d.port, "/webhooks/none",
                                        b'{"type":"a.b"}'))
    want = {"st": "invoice.paid", "gh": "issues.opened", "ping": "ping",
            "own": "thing.made", "none": None}
    for k, t in want.items():
        st, _, doc = d.api("GET", "/v1/hooks/" + ids[k])
        assert st == 200, (k, st, doc)
        assert doc["event_type"] == t, (k, doc)
    # GET /v1/hooks?event_type= finds a type's hooks, exactly that one,
    # each entry with its type.
    st, _, doc = d.api("GET", "/v1/hooks?event_type=issues.opened")
    assert st == 200 and [e["id"] for e in doc["entries"]] == \
        [ids["gh"]], doc
    assert doc["entries"][0]["event_type"] == "issues.opened", doc
    st, _, doc = d.api("GET", "/v1/hooks?event_type=issues")
    assert st == 200 and doc["entries"] == [], doc
    st, _, doc = d.api("GET", "/v1/hooks?source_id=none")
    assert st == 200 and doc["entries"][0]["event_type"] is None, doc


def jq_source(s):
    """A source with two jq sinks: /big, amount over 100; /all, true."""
    return sink_source([
        {"type": "http", "url": s.url("/big"),
         "filter": {"jq": ".amount > 100"}},
        {"type": "http", "url": s.url("/all"),
         "filter": {"jq": "true"}}])


def evaluators(d):
    """{edge pid: [evaluator pids]}: the jq evaluator processes under
    each edge (ankusa-edge > ankusa-jq > ankusa-jqeval)."""
    out = {}
    for e in d.edges():
        out[e] = []
        for z in _proc_children(e):
            if proc_comm(z) != "ankusa-jq":
                continue
            out[e].extend(p for p in _proc_children(z)
                          if proc_comm(p) == "ankusa-jqeval"
                          and proc_alive(p))
    return out


def test_jq_filters_error_and_budget():
    """jq: a boolean decides; a program that fails, one that loops and one
    that allocates without bound count as matches (the hook delivered),
    are logged and counted; the looping and the allocating ones kill
    their evaluator, which is replaced, while the edge (the same process)
    serves on at its normal pace."""
    s = TestSink().start()
    d = Daemon(sources={
        "j": jq_source(s),
        "err": sink_source([
            {"type": "http", "url": s.url("/err"),
             "filter": {"jq": '.a | error("boom")'}},
            {"type": "http", "url": s.url("/num"),
             "filter": {"jq": "1"}}]),
        "loop": sink_source([
            {"type": "http", "url": s.url("/loop"),
             "filter": {"jq": "def f: f; f"}}]),
        "hog": sink_source([
            {"type": "http", "url": s.url("/hog"),
             "filter": {"jq": "[range(1e9)] | length > 0"}}]),
    }, extra={"dispatch": dispatch_conf()}, workers=1)
    d.http["jq_timeout_ms"] = 100
    # Small enough to be reached well inside the CPU budget.
    d.http["jq_max_memory_bytes"] = 4 * 1024 * 1024
    d.write_config()
    d.start()
    big = expect_accepted(*post(d.port, "/webhooks/j", b'{"amount":500}'))
    expect_accepted(*post(d.port, "/webhooks/j", b'{"amount":5}'))
    expect_accepted(*post(d.port, "/webhooks/err", b'{"a":1}'))
    [edge] = d.edges()
    [ev0] = evaluators(d)[edge]
    loop_id = expect_accepted(*post(d.port, "/webhooks/loop", b"{}"))
    wait_until(lambda: s.received("/loop") == 1, timeout=15,
               what="the looping filter's hook delivered")
    assert s.ids("/loop") == [loop_id]
    wait_until(lambda: s.received("/all") == 2 and s.received("/big") == 1
               and s.received("/err") == 1 and s.received("/num") == 1,
               timeout=15, what="the jq sinks' deliveries")
    assert s.ids("/big") == [big]
    assert metric(d, "ankusa_filter_errors_total", source_id="err",
                  reason="error") == 2
    assert metric(d, "ankusa_filter_errors_total", source_id="loop",
                  reason="budget") == 1
    # The looping evaluator was killed; the edge was not replaced.
    assert d.edges() == [edge], (d.edges(), edge)
    assert not proc_alive(ev0), "the looping evaluator still runs"

    hog_id = expect_accepted(*post(d.port, "/webhooks/hog", b"{}"))
    wait_until(lambda: s.received("/hog") == 1, timeout=15,
               what="the allocating filter's hook delivered")
    assert s.ids("/hog") == [hog_id]
    assert metric(d, "ankusa_filter_errors_total", source_id="hog",
                  reason="budget") == 1
    assert d.edges() == [edge], (d.edges(), edge)

    log = d.log_text()
    assert "sources.err.sinks[0].filter.jq: failed" in log, log[-2000:]
    assert ("sources.loop.sinks[0].filter.jq: ran past its CPU budget"
            in log), log[-2000:]
    assert ("sources.hog.sinks[0].filter.jq: ran past its memory budget"
            in log), log[-2000:]
    assert "retiring" not in log, log[-2000:]

    # The same edge serves on, its evaluations at their normal pace, each
    # decided right (a late answer never taken for another).
    t0 = time.monotonic()
    n = 40
    for i in range(n):
        amount = 1000 if i % 2 else 1
        expect_accepted(*post(d.port, "/webhooks/j",
                              b'{"amount":%d}' % amount))
    dt = time.monotonic() - t0
    wait_until(lambda: s.received("/big") == 1 + n // 2
               and s.received("/all") == 2 + n, timeout=20,
               what="hooks after the kills")
    assert dt < 20, "%d hooks took %.1f s after the kills" % (n, dt)
    assert d.edges() == [edge], (d.edges(), edge)
    assert len(evaluators(d)[edge]) == 1
    assert "retiring" not in d.log_text()


def jq_daemon(s, **http):
    """A daemon of one edge whose source j is jq_source and source one has
    a jq sink (/one: true), started: (daemon, the edge's pid)."""
    d = Daemon(sources={
        "j": jq_source(s),
        "one": sink_source([
            {"type": "http", "url": s.url("/one"),
             "filter": {"jq": "true"}}])},
        extra={"dispatch": dispatch_conf()}, workers=1)
    d.http.update(http)
    d.write_config()
    d.start()
    expect_accepted(*post(d.port, "/webhooks/j", b'{"amount":500}'))
    wait_until(lambda: s.received("/big") == 1, timeout=15,
               what="the first hook delivered")
    [edge] = d.edges()
    return d, edge


def supervisor(edge):
    """The pid of an edge's jq supervisor."""
    [z] = [p for p in _proc_children(edge) if proc_comm(p) == "ankusa-jq"
           and proc_alive(p)]
    return z


def proc_status(pid):
    with open("/proc/%d/status" % pid) as f:
        return dict(line.split(":\t", 1) for line in f.read().splitlines()
                    if ":\t" in line)


def test_jq_evaluator_sandboxed():
    """The supervisor and its evaluator hold stdio on /dev/null and their
    socket alone (not the master's channel, not the listeners), run under
    seccomp with no_new_privs (the evaluator under two filters), and the
    evaluator's data is bounded by http.jq_max_memory_bytes."""
    s = TestSink().start()
    d, edge = jq_daemon(s, jq_max_memory_bytes=8 * 1024 * 1024)
    z = supervisor(edge)
    [ev] = evaluators(d)[edge]
    # The supervisor reads its own /proc status at each fork (jqeval.c).
    assert os.readlink("/proc/%d/fd/4" % z) == "/proc/%d/status" % z
    for pid, want in ((z, [0, 1, 2, 3, 4]), (ev, [0, 1, 2, 3])):
        fds = sorted(int(f) for f in os.listdir("/proc/%d/fd" % pid))
        assert fds == want, (pid, fds)
        for fd in (0, 1, 2):
            assert os.readlink("/proc/%d/fd/%d" % (pid, fd)) == \
                "/dev/null", (pid, fd)
        assert os.readlink("/proc/%d/fd/3" % pid).startswith("socket:")
        st = proc_status(pid)
        assert st["NoNewPrivs"].strip() == "1", st
        assert st["Seccomp"].strip() == "2", st
    assert int(proc_status(z)["Seccomp_filters"]) == 1
    assert int(proc_status(ev)["Seccomp_filters"]) == 2
    data = int(proc_status(ev)["VmData"].split()[0]) * 1024
    with open("/proc/%d/limits" % ev) as f:
        line = [x for x in f if x.startswith("Max data size")][0]
    soft = int(line.split()[3])
    assert data < soft <= data + 8 * 1024 * 1024 + 1024 * 1024, \
        (data, soft)


def test_jq_wall_clock_gives_up():
    """An evaluator that gets no CPU (stopped here) is given up by the
    clock (4 x http.jq_timeout_ms + 200 ms): the hook is a match counted
    as a budget's, the next evaluation has a fresh evaluator, the edge
    serves on; the one given up exits once it runs again."""
    s = TestSink().start()
    d, edge = jq_daemon(s, jq_timeout_ms=100)
    [ev] = evaluators(d)[edge]
    os.kill(ev, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        expect_accepted(*post(d.port, "/webhooks/j", b'{"amount":5}'))
        dt = time.monotonic() - t0
    finally:
        os.kill(ev, signal.SIGCONT)
    assert 0.5 < dt < 10, dt
    # /big by its budget, /all by a fresh evaluator's true.
    wait_until(lambda: s.received("/big") == 2 and s.received("/all") == 2,
               timeout=15, what="the hook past the wall clock delivered")
    assert metric(d, "ankusa_filter_errors_total", source_id="j",
                  reason="budget") == 1
    wait_until(lambda: not proc_alive(ev), timeout=10,
               what="the evaluator given up gone")
    expect_accepted(*post(d.port, "/webhooks/j", b'{"amount":5}'))
    expect_accepted(*post(d.port, "/webhooks/j", b'{"amount":500}'))
    wait_until(lambda: s.received("/big") == 3 and s.received("/all") == 4,
               timeout=15, what="hooks after the wall clock")
    assert d.edges() == [edge]
    assert metric(d, "ankusa_filter_errors_total", source_id="j",
                  reason="budget") == 1


def test_jq_supervisor_gone_retires_edge():
    """An edge whose jq supervisor is gone (killed here: nothing a program
    does can end it) counts its jq filters as errors (matches), retires
    at the first such hook (one of a single jq filter, whose evaluator
    died with the supervisor), and the master's new edge has a supervisor
    of its own."""
    s = TestSink().start()
    d, edge = jq_daemon(s)
    [ev] = evaluators(d)[edge]
    os.kill(supervisor(edge), signal.SIGKILL)
    wait_until(lambda: not proc_alive(ev), timeout=10,
               what="the evaluator gone with its supervisor")
    expect_accepted(*post(d.port, "/webhooks/one", b'{}'))
    wait_until(lambda: s.received("/one") == 1, timeout=15,
               what="the hook without an evaluator delivered")
    wait_until(lambda: "retiring: the jq evaluators' supervisor is gone"
               in d.log_text(), timeout=10, what="the retirement logged")
    wait_until(lambda: d.edges() and d.edges() != [edge], timeout=30,
               what="a new edge")
    expect_accepted(*post(d.port, "/webhooks/j", b'{"amount":5}'))
    wait_until(lambda: s.received("/all") == 2, timeout=15,
               what="a hook through the new edge")
    assert s.received("/big") == 1
    supervisor(d.edges()[0])


def test_jq_that_does_not_compile_is_refused():
    """A jq program that does not compile refuses the config, naming its
    key."""
    d = Daemon(sources={"j": sink_source([
        {"type": "log", "filter": {"jq": ".a | | .b"}}])})
    rc, err = check_config(d.conf)
    assert rc != 0, err
    assert "sources.j.sinks[0].filter.jq does not compile" in err, err


def test_filters_at_quarantine_release():
    """A held hook is filtered when it is released, by the edge that
    verifies it again: each sink gets its type; the one no sink wants
    leaves the pen without being stored."""
    s = TestSink().start()
    d, ids = held_stripe([
        {"type": "http", "url": s.url("/a"),
         "filter": {"event_types": ["invoice.*"]}},
        {"type": "http", "url": s.url("/b"),
         "filter": {"event_types": ["charge.succeeded"]}}],
        ["invoice.paid", "charge.succeeded", "payout.paid"])
    ids = {t: v[0] for t, v in ids.items()}
    _, out, _ = d.ctl("quarantine", "release", json_out=True)
    assert json.loads(out) == {"released": 3, "kept": 0, "failed": 0}, out
    wait_until(lambda: s.received() >= 2, timeout=15, what="2 deliveries")
    time.sleep(0.5)
    assert s.ids("/a") == [ids["invoice.paid"]], s.ids("/a")
    assert s.ids("/b") == [ids["charge.succeeded"]], s.ids("/b")
    st, _, doc = d.api("GET", "/v1/hooks/" + ids["payout.paid"])
    assert st == 404, (st, doc)
    _, out, _ = d.ctl("quarantine", "list", json_out=True)
    assert out.strip() == "", out


def test_flagged_hook_filtered():
    """accept_flag: a hook that fails verification and that no sink
    wants is answered filtered too (and counted as a verify failure)."""
    s = TestSink().start()
    src = sink_source([{"type": "http", "url": s.url("/a"),
                        "filter": {"event_types": ["invoice.*"]}}])
    src["verify"] = {"type": "stripe", "secret": STRIPE}
    src["on_verify_failure"] = "accept_flag"
    d = Daemon(sources={"pay": src},
               extra={"dispatch": dispatch_conf()}).start()
    body = b'{"id":"evt_1","type":"payout.paid"}'
    st, h, data = post(d.port, "/webhooks/pay", body,
                       sign_stripe("wrong", body))
    expect(st, h, data, 200, what="flagged, filtered")
    assert jbody(data)["status"] == "filtered"
    body = b'{"id":"evt_2","type":"invoice.paid"}'
    hid = expect_accepted(*post(d.port, "/webhooks/pay", body,
                                sign_stripe("wrong", body)))
    wait_until(lambda: s.ids("/a") == [hid], timeout=15,
               what="the flagged invoice delivered")
    assert metric(d, "ankusa_verify_failures_total", source_id="pay",
                  scheme="stripe") == 2
    assert metric(d, "ankusa_ingest_requests_total", source_id="pay",
                  outcome="filtered") == 1


def test_quarantine_replay_by_event_type():
    """A quarantine replay job with an event_type releases the held hooks
    of that type alone (as the edge read it at ingest); the others stay
    held.  A dlq job refuses an event_type."""
    s = TestSink().start()
    d, ids = held_stripe([{"type": "http", "url": s.url("/q")}],
                         ["invoice.paid", "charge.succeeded",
                          "invoice.paid"])
    st, _, j = d.api("POST", "/v1/replays", {"kind": "dlq",
                                             "event_type": "invoice.paid"})
    assert st == 400 and "event_type" in json.dumps(j), (st, j)
    st, _, j = d.api("POST", "/v1/replays", {
        "kind": "quarantine", "event_type": "invoice.paid", "rate": 100})
    assert st == 202 and j["event_type"] == "invoice.paid", (st, j)
    rid = j["id"]

    def done():
        st, _, j = d.api("GET", "/v1/replays/" + rid)
        return j["done"] and j

    j = wait_until(done, timeout=15, what="the job done")
    assert (j["moved"], j["dropped"]) == (2, 0), j
    wait_until(lambda: sorted(s.ids("/q")) == sorted(ids["invoice.paid"]),
               timeout=15, what="the invoices delivered")
    _, out, _ = d.ctl("quarantine", "list", json_out=True)
    held = [json.loads(l)["id"] for l in out.splitlines() if l.strip()]
    assert held == ids["charge.succeeded"], held
    st, _, doc = d.api("GET", "/v1/quarantine")
    assert [(e["id"], e["event_type"]) for e in doc["entries"]] == \
        [(ids["charge.succeeded"][0], "charge.succeeded")], doc

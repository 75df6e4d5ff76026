# SPDX-License-Identifier: ISC
"""Dispatch end to end: the real ankusad delivering to tests/test_sink.

See shared/ankusa-contracts.md ("Delivery", "http sink") and the dispatch
spec (shared/seed/000_*.txt).  Each test starts its own test_sink (records
one JSON line per request it receives, see tests/test_sink.c) and its own
ankusad with fast retries (base 50 ms, max 200 ms, no jitter), posts hooks,
and checks what reached the sink, what `ankusactl` reports, and when.
"""

import base64
import concurrent.futures
import email.utils
import hashlib
import http.client
import os
import random
import re
import resource
import subprocess
import threading
import time

import ankusa
from ankusa import free_port as ankusa_free_port
from ankusa import (Daemon, FakeSQS, TestSink, dispatch_conf, expect,
                    expect_accepted, hold_source, jbody, note, post,
                    sink_source, wait_until)

SECRET = "whsec_" + base64.b64encode(b"ankusa-e2e-dispatch-secret-0001"
                                     ).decode()
SECRET_OLD = "whsec_" + base64.b64encode(b"ankusa-e2e-dispatch-old-secret"
                                         ).decode()


def now_ms():
    return int(time.time() * 1000)


def post_seq(d, source, bodies, headers=None):
    """Post bodies one after the other on one keep-alive connection;
    return [(id, wall ms of the 201)] in commit order."""
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    out = []
    try:
        for i, b in enumerate(bodies):
            h = headers[i] if isinstance(headers, list) else headers
            st, hd, data = post(d.port, "/webhooks/" + source, b,
                                headers=h, conn=c)
            out.append((expect_accepted(st, hd, data, "post %d to %s" % (
                i, source)), now_ms()))
    finally:
        c.close()
    return out


def post_par(d, source, bodies, threads=8, headers=None):
    """Post bodies from several keep-alive connections at once; return
    {id: body}."""
    chunks = [bodies[i::threads] for i in range(threads)]

    def run(chunk):
        return [(i, b) for (i, _), b in zip(post_seq(d, source, chunk,
                                                     headers), chunk)]

    got = {}
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        for part in ex.map(run, chunks):
            got.update(part)
    return got


def by_id(records):
    out = {}
    for r in records:
        out.setdefault(r["x-ankusa-id"], []).append(r)
    return out


def delivered(sink, path=None):
    """The ids answered 2xx by the sink (each once)."""
    return {r["x-ankusa-id"] for r in sink.records(path)
            if 200 <= r["status"] < 300}


def settle(d, timeout=60):
    """tick until nothing is claimed, running or due."""
    n = d.tick(timeout)
    return n


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * len(xs) + 0.5)) - 1))
    return xs[k]


def wait_delivered(sink, ids, path=None, timeout=20, what="deliveries"):
    ids = set(ids)

    def done():
        return ids <= delivered(sink, path)

    try:
        wait_until(done, timeout, 0.05, what)
    except AssertionError:
        missing = ids - delivered(sink, path)
        raise AssertionError("%d of %d %s not delivered after %.0fs, e.g. %s"
                             % (len(missing), len(ids), what, timeout,
                                sorted(missing)[:3]))


# ------------------------------------------------------------ N delivered

def test_n_hooks_delivered_signed():
    """200 hooks to an http sink (signed, two secrets) plus a log sink:
    every id reaches the sink exactly once with its exact body, signature
    verified, the x-ankusa-* headers set; then nothing is left."""
    s = TestSink(secrets=[SECRET]).start()
    d = Daemon(sources={
        "orders": sink_source([
            {"type": "http", "url": s.url("/in"),
             "secret": [SECRET, SECRET_OLD],
             "headers": {"x-extra": "1"}},
            {"type": "log"}], tenant="acme"),
        "dd": sink_source([{"type": "http", "url": s.url("/dd"),
                            "secret": SECRET}],
                          dedupe={"header": "x-dedupe"}),
    }, extra={"dispatch": dispatch_conf()}).start()
    rng = random.Random(4)
    bodies = [bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 3000)))
              for _ in range(200)]
    hdrs = [{"Content-Type": "application/octet-stream", "x-order": "o%d" % i}
            for i in range(200)]
    acked = post_seq(d, "orders", bodies, hdrs)
    sent = {i: b for (i, _), b in zip(acked, bodies)}
    order_hdr = {i: "o%d" % n for n, (i, _) in enumerate(acked)}
    assert len(sent) == 200, "ids not unique"

    # One hook with a dedupe key: idempotency key tenant:source:key.
    (did, _), = post_seq(d, "dd", [b'{"k":1}'], {"x-dedupe": "evt-77"})

    settle(d)
    wait_delivered(s, sent, "/in", 10, "hooks to /in")
    recs = by_id(s.records("/in"))
    extra = set(recs) - set(sent)
    assert not extra, "sink got ids never acknowledged: %s" % sorted(
        extra)[:3]
    dup = {i: len(v) for i, v in recs.items() if len(v) != 1}
    assert not dup, "ids delivered more than once with no failure: %s" % (
        list(dup.items())[:3])
    for i, b in sent.items():
        r = recs[i][0]
        want = hashlib.sha256(b).hexdigest()
        assert r["sha256"] == want and r["size"] == len(b), \
            "hook %s: sink got %d bytes sha256 %s, posted %d bytes %s" % (
                i, r["size"], r["sha256"], len(b), want)
        assert r["sig"] == "ok", "hook %s: signature %r" % (i, r["sig"])
        assert r["webhook-id"] == i, "webhook-id %r for %s" % (
            r["webhook-id"], i)
        assert r["x-ankusa-idempotency-key"] == i, \
            "idempotency key %r for %s (no dedupe key: the id)" % (
                r["x-ankusa-idempotency-key"], i)
        assert r["x-ankusa-source"] == "orders", r
        assert r["x-ankusa-tenant"] == "acme", r
        assert r["x-ankusa-dedupe-key"] is None, r
        assert r["method"] == "POST", r
        assert r["content-type"] == "application/octet-stream", r
        assert r["x-order"] == order_hdr[i], \
            "forwarded x-order %r, posted %r" % (r["x-order"], order_hdr[i])

    wait_delivered(s, [did], "/dd", 10, "the dedupe hook")
    r = s.records("/dd")[0]
    assert r["x-ankusa-dedupe-key"] == "evt-77", r
    assert r["x-ankusa-idempotency-key"] == "default:dd:evt-77", \
        "idempotency key %r, want default:dd:evt-77" % (
            r["x-ankusa-idempotency-key"])
    assert r["sig"] == "ok", r

    settle(d)
    st = d.status()
    assert (st["hooks"], st["pending"], st["dead"], st["inflight"],
            st["running"]) == (0, 0, 0, 0, 0), \
        "after delivering everything: status %r" % st
    q = d.queue()
    assert q == [], "queue still lists %d hooks" % len(q)



def test_bodies_survive_sigkill():
    """Bodies of every size the store keeps differently (in the hook's
    record below 256 bytes and above 1 MiB, in bodies.db, a heap table,
    between: see docs/DEPARTURES 29) are posted while their sink fails,
    the master is SIGKILLed, and after the restart's recovery each
    reaches the sink with its exact bytes, then nothing is left."""
    s = TestSink().start()
    d = Daemon(sources={
        "b": sink_source([{"type": "http", "url": s.url("/b")}],
                         tenant="tb", retry={"base_ms": 200, "max_ms": 200}),
    }, max_body=3 * 1024 * 1024,
        extra={"dispatch": dispatch_conf(breaker_failures=0)}).start()
    s.mode("/b", status=503)
    rng = random.Random(16)
    sizes = [0, 1, 255, 256, 257, 1024, 4096, 65536, 1024 * 1024,
             1024 * 1024 + 1, 2 * 1024 * 1024]
    sizes += [rng.randint(0, 20000) for _ in range(60)]
    bodies = [bytes(rng.getrandbits(8) for _ in range(n)) if n < 100000
              else os.urandom(n) for n in sizes]
    sent = {i: b for (i, _), b in zip(post_seq(d, "b", bodies), bodies)}
    assert len(sent) == len(bodies), "ids not unique"
    wait_until(lambda: s.received("/b") >= len(bodies), 20, 0.05,
               "a first (failed) attempt of every hook")
    d.kill9()
    s.mode("/b", status=200)
    d.start()
    wait_delivered(s, sent, "/b", 60, "hooks after the restart")
    got = {r["x-ankusa-id"]: r for r in s.records("/b")
           if 200 <= r["status"] < 300}
    for i, b in sent.items():
        r = got[i]
        assert r["size"] == len(b) and \
            r["sha256"] == hashlib.sha256(b).hexdigest(), \
            "hook %s: the sink got %d bytes (sha256 %s), %d were posted" % (
                i, r["size"], r["sha256"], len(b))
    settle(d)
    st = d.status()
    assert (st["hooks"], st["pending"], st["dead"]) == (0, 0, 0), \
        "after delivering everything: status %r" % st
    assert d.stop() == 0, "exit status after SIGTERM"


def test_checkpoint_steps_then_sigkill():
    """The minute's checkpoint writes the buffer pool's dirty pages in
    steps before it checkpoints (daemon/ankusad.c, checkpoint_cb), and the
    cache is kept at least four-fifths clean meanwhile: with
    hooks waiting on a failing sink, the steps run and the checkpoint
    follows; a SIGKILL after it and the restart's recovery lose nothing.
    Waits for the first checkpoint, a minute after the start."""
    s = TestSink().start()
    d = Daemon(sources={
        "c": sink_source([{"type": "http", "url": s.url("/c")}],
                         tenant="tc",
                         retry={"base_ms": 20000, "max_ms": 20000}),
    }, verbose=True,
        extra={"dispatch": dispatch_conf(breaker_failures=0)}).start()
    s.mode("/c", status=503)
    rng = random.Random(61)
    bodies = [bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 600)))
              for _ in range(3000)]
    sent = post_par(d, "c", bodies)
    assert len(sent) == len(bodies), "ids not unique"
    pat = re.compile(r"checkpoint: (\d+) steps wrote dirty pages, "
                     r"(\d+) left")
    wait_until(lambda: pat.search(d.log_since_start()), 90, 0.5,
               "the first checkpoint's steps (a minute after the start)")
    steps, left = map(int, pat.search(d.log_since_start()).groups())
    assert left <= 64, \
        "the steps stop with at most 64 dirty pages left (the cache is " \
        "kept four-fifths clean meanwhile): %d steps, %d left" % (
            steps, left)
    wait_until(lambda: "checkpoint done in" in d.log_since_start(), 10,
               0.1, "the checkpoint, 100 ms after the last step")
    bad = [ln for ln in d.log_since_start().splitlines()
           if "checkpoint:" in ln and not pat.search(ln)]
    assert not bad, "checkpoint warnings: %s" % bad
    d.kill9()
    s.mode("/c", status=200)
    d.start()
    wait_delivered(s, sent, "/c", 60, "hooks after the restart")
    settle(d)
    st = d.status()
    assert (st["hooks"], st["pending"], st["dead"]) == (0, 0, 0), \
        "after delivering everything: status %r" % st
    assert d.stop() == 0, "exit status after SIGTERM"


test_checkpoint_steps_then_sigkill.timeout = 240


# ------------------------------------------------------------ retries

def test_fail_then_recover_and_retry_after():
    s = TestSink().start()
    d = Daemon(sources={
        "a": sink_source([{"type": "http", "url": s.url("/flaky")}]),
        "b": sink_source([{"type": "http", "url": s.url("/limited")}]),
        "c": sink_source([{"type": "http", "url": s.url("/dated")}]),
    }, extra={"dispatch": dispatch_conf(breaker_failures=0)}).start()

    # 3 x 503, then 200: four attempts, spaced by the backoff.
    s.mode("/flaky", fail_first=3, fail_status=503, status=200)
    (hid, _), = post_seq(d, "a", [b'{"flaky":1}'])
    wait_delivered(s, [hid], "/flaky", 10, "the flaky hook")
    recs = s.records("/flaky")
    assert [r["x-ankusa-id"] for r in recs] == [hid] * 4, \
        "attempts of %s: %r" % (hid, [(r["x-ankusa-id"], r["status"])
                                     for r in recs])
    assert [r["status"] for r in recs] == [503, 503, 503, 200], \
        "statuses %r" % [r["status"] for r in recs]
    gaps = [b["t"] - a["t"] for a, b in zip(recs, recs[1:])]
    # base 50, doubling, max 200, no jitter: >= 50, 100, 200.
    for g, want in zip(gaps, (50, 100, 200)):
        assert g >= want - 5, "retry after %d ms, backoff is %d: gaps %r" % (
            g, want, gaps)
    assert max(gaps) < 3000, "retries too slow: gaps %r ms" % gaps

    # 429 with Retry-After: 2 (seconds): the retry no sooner than 2 s.
    s.mode("/limited", fail_first=1, fail_status=429, retry_after=2,
           status=200)
    (lid, _), = post_seq(d, "b", [b'{"limited":1}'])
    wait_delivered(s, [lid], "/limited", 15, "the rate-limited hook")
    recs = s.records("/limited")
    assert [r["status"] for r in recs] == [429, 200], recs
    gap = recs[1]["t"] - recs[0]["t"]
    assert gap >= 1990, "Retry-After: 2 not honoured: retried after %d ms" \
        % gap
    assert gap < 6000, "retry %d ms after a Retry-After: 2" % gap

    # 503 with Retry-After as an HTTP-date 3 s ahead.
    when = int(time.time()) + 3
    s.mode("/dated", fail_first=1, fail_status=503, status=200,
           retry_after=email.utils.formatdate(when, usegmt=True))
    (cid, _), = post_seq(d, "c", [b'{"dated":1}'])
    wait_delivered(s, [cid], "/dated", 15, "the hook told an HTTP-date")
    recs = s.records("/dated")
    assert [r["status"] for r in recs] == [503, 200], recs
    # The date has one-second resolution and the daemon may round to the
    # second: allow that much.
    assert recs[1]["t"] >= when * 1000 - 1000, \
        "Retry-After %s not honoured: retried at %d, %d ms early" % (
            email.utils.formatdate(when, usegmt=True), recs[1]["t"],
            when * 1000 - recs[1]["t"])
    note("backoff gaps %r ms; Retry-After 2 -> %d ms; HTTP-date -> retried "
         "%+d ms from the date" % (gaps, gap, recs[1]["t"] - when * 1000))
    settle(d)
    st = d.status()
    assert (st["hooks"], st["pending"]) == (0, 0), st


# ------------------------------------------------------------ 410

def test_410_dead_lettered_at_once():
    s = TestSink().start()
    d = Daemon(sources={
        "src": sink_source([
            {"type": "http", "url": s.url("/gone"), "disable_on": []},
            {"type": "http", "url": s.url("/ok")},
            {"type": "log"}], tenant="t410"),
    }, extra={"dispatch": dispatch_conf()}).start()
    s.mode("/gone", status=410)
    ids = [i for i, _ in post_seq(d, "src", [b'{"n":%d}' % n
                                             for n in range(5)])]
    settle(d)
    wait_delivered(s, ids, "/ok", 10, "hooks to the healthy sink")
    gone = by_id(s.records("/gone"))
    assert {i: len(v) for i, v in gone.items()} == {i: 1 for i in ids}, \
        "a 410 is permanent: one attempt each, got %r" % {
            i: len(v) for i, v in gone.items()}
    dl = d.dlq(source="src")
    assert len(dl) == 5, "dlq lists %d rows, want 5: %r" % (len(dl), dl)
    assert {e["hook_id"] for e in dl} == set(ids), dl
    for e in dl:
        assert e["reason"] == "permanent:http 410", \
            "reason %r, want permanent:http 410" % e["reason"]
        assert e["attempts"] == 1, "attempts %r, want 1" % e["attempts"]
        assert (e["tenant"], e["source"], e["sink"], e["module"]) == \
            ("t410", "src", 0, "http"), e
        assert abs(e["dead_at"] - now_ms()) < 60000, e
    st = d.status()
    # The hooks live on with their dead rows; nothing pending.
    assert (st["hooks"], st["pending"], st["dead"]) == (5, 0, 5), st
    # Nothing is retried later.
    time.sleep(0.5)
    assert s.received("/gone") == 5, "a permanent failure was retried"


# ------------------------------------------------------------ hung sink

def test_hung_sink_killed_others_flow():
    """8 hooks to a sink that never answers, attempt_timeout_ms 500, 4
    attempts each: their deliver processes are killed at 500 ms, 32 times
    over about 8 s.  Meanwhile another source's hooks are delivered
    promptly, the whole time; then the hung rows are dead with reason
    attempt_timeout:500."""
    s = TestSink().start()
    d = Daemon(sources={
        "hang": sink_source([{"type": "http", "url": s.url("/hang")}],
                            tenant="th", retry={"max_attempts": 4}),
        "flow": sink_source([{"type": "http", "url": s.url("/flow")}],
                            tenant="th"),
    }, extra={"dispatch": dispatch_conf(
        attempt_timeout_ms=500, breaker_failures=0, concurrency=4,
        sink_concurrency=2)}).start()
    s.mode("/hang", hang=True)
    t0 = time.monotonic()
    hung = [i for i, _ in post_seq(d, "hang", [b'{"h":%d}' % n
                                               for n in range(8)])]
    wait_until(lambda: s.received("/hang") >= 2, 5, 0.02,
               "the hung sink to get its first attempts")
    # While it hangs, the other sink's hooks are delivered promptly.
    lat = []
    late = []
    n = 0
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    while len(d.dlq(source="hang")) < 8 and time.monotonic() - t0 < 30:
        st, h, data = post(d.port, "/webhooks/flow", b'{"f":%d}' % n,
                           conn=c)
        fid, t201 = expect_accepted(st, h, data), now_ms()
        n += 1
        try:
            wait_delivered(s, [fid], "/flow", 10, "hook %d to /flow" % n)
        except AssertionError:
            late.append((n, fid, round(time.monotonic() - t0, 1)))
            break
        rec = [r for r in s.records("/flow") if r["x-ankusa-id"] == fid][0]
        lat.append(rec["t"] - t201)
        time.sleep(0.1)
    c.close()
    t_hang = time.monotonic() - t0
    kills = d.log_text().count("killing its deliver process")
    note("/flow during the hang (%.1f s, %d kills): %d hooks, latency max "
         "%s ms, median %s ms" % (t_hang, kills, len(lat),
                                  max(lat) if lat else None,
                                  pct(lat, 50)))
    assert not late, "a hook to /flow not delivered within 10 s while " \
        "/hang hung (post #%d %s at %.1f s, after %d kills at the " \
        "timeout)" % (late[0][0], late[0][1], late[0][2], kills)
    assert len(lat) >= 10, "the hang lasted only %.1f s" % t_hang
    assert max(lat) < 1500, "deliveries to /flow during the hang took " \
        "up to %d ms: %r" % (max(lat), lat)

    # Each hung hook: 4 attempts, each killed at 500 ms, then dead.
    wait_until(lambda: len(d.dlq(source="hang")) == 8, 30, 0.1,
               "the 8 hung hooks to be dead-lettered")
    for e in d.dlq(source="hang"):
        assert e["reason"] == "attempt_timeout:500", \
            "reason %r, want attempt_timeout:500" % e["reason"]
        assert e["attempts"] == 4, "attempts %r, want 4" % e["attempts"]
    recs = by_id(s.records("/hang"))
    assert set(recs) == set(hung), recs.keys()
    for i, rs in recs.items():
        assert len(rs) == 4, "hook %s: %d attempts, want 4" % (i, len(rs))
        gaps = [b["t"] - a["t"] for a, b in zip(rs, rs[1:])]
        assert all(g >= 500 for g in gaps), \
            "attempts of %s %r ms apart: the timeout is 500" % (i, gaps)
    st = d.status()
    assert (st["pending"], st["running"], st["dead"]) == (0, 0, 8), st


def test_deck_deadline_from_its_start():
    """sink_concurrency 1, a sink answering after 1.2 s and
    attempt_timeout_ms 2000: while one attempt runs, the next hook waits
    on deck in the same deliver process (ankusactl status: decked) and
    starts when it ends.  Its deadline runs from its own start, not from
    when it was put on deck: 4 hooks, each delivered on its first
    attempt, none killed, one request at a time."""
    s = TestSink().start()
    d = Daemon(sources={
        "dk": sink_source([{"type": "http", "url": s.url("/slow")}],
                          tenant="tk"),
    }, extra={"dispatch": dispatch_conf(
        attempt_timeout_ms=2000, breaker_failures=0,
        sink_concurrency=1)}).start()
    s.mode("/slow", delay_ms=1200)
    ids = [i for i, _ in post_seq(d, "dk", [b'{"k":%d}' % n
                                            for n in range(4)])]
    decked = 0
    t0 = time.monotonic()
    while len(delivered(s, "/slow")) < 4 and time.monotonic() - t0 < 30:
        decked = max(decked, d.status()["decked"])
        time.sleep(0.05)
    wait_delivered(s, ids, "/slow", 10, "the 4 hooks")
    settle(d)
    recs = s.records("/slow")
    kills = d.log_text().count("killing its deliver process")
    note("decks: up to %d on deck, %d requests, %d kills" % (
        decked, len(recs), kills))
    assert decked == 1, "status never showed the next hook on deck " \
        "(max decked %d)" % decked
    assert kills == 0, "%d attempts killed: a deck's deadline ran from " \
        "before its start" % kills
    assert len(recs) == 4 and all(r["status"] == 200 for r in recs), \
        [(r["x-ankusa-id"], r["status"]) for r in recs]
    # One at a time: each request came after the answer before it.
    ts = [r["t"] for r in recs]
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    assert all(g >= 1100 for g in gaps), "requests %r ms apart: more " \
        "than one attempt ran at once (sink_concurrency 1)" % gaps
    st = d.status()
    assert (st["pending"], st["running"], st["decked"], st["dead"]) == \
        (0, 0, 0, 0), st


# ------------------------------------------------------------ breaker

def test_breaker_opens_parks_and_recovers():
    s = TestSink().start()
    d = Daemon(sources={
        "br": sink_source([{"type": "http", "url": s.url("/down")}],
                          tenant="tb", retry={"max_attempts": 1000}),
        "other": sink_source([{"type": "http", "url": s.url("/up")}],
                             tenant="tb"),
    }, extra={"dispatch": dispatch_conf(
        breaker_failures=3, breaker_open_ms=500,
        breaker_max_open_ms=1000)}).start()
    s.mode("/down", status=503)
    ids = [i for i, _ in post_seq(d, "br", [b'{"b":%d}' % n
                                            for n in range(10)])]

    def open_breaker():
        for b in d.breakers():
            if b.get("source") == "br" and b.get("state") == "open":
                return b
        return None

    b = wait_until(open_breaker, 10, 0.02, "the breaker of br to open")
    assert (b["tenant"], b["sink"], b["module"]) == ("tb", 0, "http"), b
    assert b["opens"] >= 1, b
    assert 0 <= b["reopen_in_ms"] <= 1000, b
    # While open (and probing), rows are parked: the sink sees only the
    # probes -- one per open period, at most 3 in 2.5 s (500 then 1000 ms).
    # Attempts already running when it opened still reach the sink (they
    # were started, and run to their end): let them land first, well
    # within the first 500 ms open period.
    time.sleep(0.2)
    n0 = s.received("/down")
    per_id0 = {i: len(v) for i, v in by_id(s.records("/down")).items()}
    time.sleep(2.5)
    n1 = s.received("/down")
    assert n1 - n0 <= 4, "breaker open: the sink still got %d requests in " \
        "2.5 s (only probes expected)" % (n1 - n0)
    assert n1 - n0 >= 1, "no probe in 2.5 s with breaker_open_ms 500"
    per_id1 = {i: len(v) for i, v in by_id(s.records("/down")).items()}
    grown = sum(per_id1.get(i, 0) - per_id0.get(i, 0) for i in ids)
    assert grown == n1 - n0, (per_id0, per_id1)
    # Another sink key is not affected.
    (oid, _), = post_seq(d, "other", [b'{"o":1}'])
    wait_delivered(s, [oid], "/up", 3, "a hook to another sink")
    assert d.dlq() == [], "parked rows were dead-lettered: %r" % d.dlq()[:3]
    st = d.status()
    assert st["breakers_open"] >= 1, "status breakers_open %r" % st
    # Recovery: the next probe succeeds, the breaker closes, the parked
    # rows come due again and are all delivered.
    s.mode("/down", status=200)
    wait_delivered(s, ids, "/down", 10, "parked hooks after recovery")
    # Parked rows spent no attempts: attempts per id stay small (the 3
    # failures that opened it, the probes, and the success).
    per_id = {i: len(v) for i, v in by_id(s.records("/down")).items()}
    # (up to sink_concurrency 8 attempts were running when it opened.)
    assert sum(per_id.values()) <= 10 + 10 + 6, \
        "%d requests for 10 hooks: parked rows were attempted (%r)" % (
            sum(per_id.values()), per_id)

    def closed():
        bs = [x for x in d.breakers() if x.get("source") == "br"]
        return all(x["state"] == "closed" for x in bs)

    wait_until(closed, 5, 0.05, "the breaker to close")
    settle(d)
    st = d.status()
    assert (st["hooks"], st["pending"], st["breakers_open"]) == (0, 0, 0), st
    note("breaker: %d requests while open for 2.5 s; %d requests for 10 "
         "hooks in all" % (n1 - n0, sum(per_id.values())))


# ------------------------------------------------------------ ordered

def test_ordered_sink_per_key_commit_order():
    s = TestSink().start()
    d = Daemon(sources={
        "ord": sink_source([
            {"type": "http", "url": s.url("/ord"), "ordered": True,
             "order_key": {"header": "x-order"}},
            {"type": "http", "url": s.url("/plain")}], tenant="to",
            retry={"max_attempts": 1000}),
    }, extra={"dispatch": dispatch_conf(breaker_failures=0,
                                        concurrency=8)}).start()
    keys = ["k%d" % i for i in range(4)]
    rng = random.Random(7)
    expected = {k: [] for k in keys}

    want_fails = [0]

    def phase(n, fail_first):
        s.mode("/ord", fail_first=fail_first, fail_status=503, status=200)
        ks = [rng.choice(keys) for _ in range(n)]
        acked = post_seq(d, "ord", [b'{"n":%d}' % i for i in range(n)],
                         [{"x-order": k} for k in ks])
        for (i, _), k in zip(acked, ks):
            expected[k].append(i)
        # Let the mode's failures happen before the next mode replaces it.
        wait_until(lambda: sum(1 for r in s.records("/ord")
                               if r["status"] == 503) >= want_fails[0] +
                   fail_first, 10, 0.02, "%d failures at /ord" % fail_first)
        want_fails[0] += fail_first
        return [i for i, _ in acked]

    ids = phase(40, 6)
    # Failures again in the middle of a backlog, while it is delivering.
    s.mode("/ord", delay_ms=20, status=200)
    ids += phase(40, 5)
    wait_delivered(s, ids, "/ord", 30, "ordered hooks")
    wait_delivered(s, ids, "/plain", 10, "unordered sink's hooks")
    recs = s.records("/ord")
    fails = sum(1 for r in recs if r["status"] != 200)
    assert fails == 11, "%d failures happened, want 11" % fails
    for k in keys:
        kr = [r for r in recs if r["x-order"] == k]
        got = [r["x-ankusa-id"] for r in kr if r["status"] == 200]
        assert got == expected[k], \
            "key %s: delivered in order %r, committed %r" % (
                k, got, expected[k])
        # Strict: no hook of the key is even attempted before the one
        # ahead of it was delivered.
        pos = 0
        for r in kr:
            assert r["x-ankusa-id"] == expected[k][pos], \
                "key %s: %s attempted while %s (ahead of it) was not " \
                "delivered" % (k, r["x-ankusa-id"], expected[k][pos])
            if r["status"] == 200:
                pos += 1
    settle(d)
    st = d.status()
    assert (st["hooks"], st["pending"]) == (0, 0), st
    note("ordered: %d hooks over %d keys, %d failed attempts" % (
        len(ids), len(keys), fails))


# ------------------------------------------------------------ fairness

def test_tenant_fairness_dead_sink_backlog():
    """Tenant A's sink is slow and answers 503 (breaker off), with a backlog
    of 2000 hooks, more than dispatch.max_inflight (1000).  No per-tenant
    window is configured, so each tenant's is a quarter of the global one
    (docs/DEPARTURES 13): A holds at most 250 claimed rows, the global
    window is never full, and tenant B's hooks are delivered promptly
    meanwhile: "a tenant whose sink is slow fills its own window and nobody
    else's"."""
    s = TestSink().start()
    d = Daemon(sources={
        "sa": sink_source([{"type": "http", "url": s.url("/a")}],
                          tenant="ta", retry={"max_attempts": 100000}),
        "sb": sink_source([{"type": "http", "url": s.url("/b")}],
                          tenant="tb"),
    }, workers=2, extra={"dispatch": dispatch_conf(
        breaker_failures=0, max_inflight=1000)}).start()
    s.mode("/a", status=503, delay_ms=1000)
    body = b'{"pad":"' + b"a" * 200 + b'"}'
    a_ids = post_par(d, "sa", [body] * 2000, threads=8)
    assert len(a_ids) == 2000
    wait_until(lambda: s.received("/a") >= 8, 10, 0.05,
               "tenant A's sink to be busy")
    # A's share: a quarter of the global window, reached and never passed.
    wait_until(lambda: d.status()["inflight"] >= 240, 10, 0.05,
               "tenant A's window to fill")
    lat = []
    b_ids = []
    inflight = []
    fulls = []
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    for n in range(100):
        st, h, data = post(d.port, "/webhooks/sb", b'{"b":%d}' % n, conn=c)
        b_ids.append((expect_accepted(st, h, data), now_ms()))
        if n % 10 == 0:
            inflight.append(d.status()["inflight"])
            fulls.append(d.pressure()["window_full"])
        time.sleep(0.02)
    c.close()
    assert max(inflight) <= 250 + 1, "claimed rows %r: tenant A passed its " \
        "share of 250 (B holds at most the one being posted)" % inflight
    assert not any(fulls), "the global window was full: %r (claimed %r)" % (
        fulls, inflight)
    ids = [i for i, _ in b_ids]
    wait_delivered(s, ids, "/b", 30, "tenant B's hooks")
    t_rec = {r["x-ankusa-id"]: r["t"] for r in s.records("/b")}
    lat = [t_rec[i] - t for i, t in b_ids]
    p50, p99 = pct(lat, 50), pct(lat, 99)
    st = d.status()
    pr = d.pressure()
    note("fairness: tenant B latency p50 %d ms p99 %d ms max %d ms with A's "
         "backlog (pending %d, A's sink got %d requests; pressure %r)" % (
             p50, p99, max(lat), st["pending"], s.received("/a"), pr))
    assert st["pending"] >= 1900, "A's backlog drained? status %r" % st
    assert p99 < 2000, "tenant B's p99 delivery latency %d ms (p50 %d) " \
        "behind tenant A's backlog of 2000 dead rows" % (p99, p50)


def test_pressure():
    """pressure: lag_ms is the age of the oldest due row (0 when nothing is
    due) and window_full whether the global in-flight window is: idle, a
    backlog held by one tenant's own window, then the global window full,
    then idle again once everything settled."""
    s = TestSink().start()
    d = Daemon(sources={
        "sa": sink_source([{"type": "http", "url": s.url("/a")}],
                          tenant="ta"),
        "sb": sink_source([{"type": "http", "url": s.url("/b")}],
                          tenant="tb"),
    }, extra={"dispatch": dispatch_conf(
        breaker_failures=0, max_inflight=40,
        tenants={"tb": {"max_inflight": 1000}})}).start()
    assert d.pressure() == {"lag_ms": 0, "window_full": False}, d.pressure()
    s.mode("/a", delay_ms=4000)
    s.mode("/b", delay_ms=4000)
    t0 = now_ms()
    post_seq(d, "sa", [b'{"a":%d}' % n for n in range(30)])
    # Tenant A holds its own share (a quarter of 40), not the global window.
    wait_until(lambda: s.received("/a") >= 10, 10, 0.05, "A's attempts")
    time.sleep(1.0)
    pr, t1 = d.pressure(), now_ms()
    assert d.status()["inflight"] == 10, d.status()
    assert pr["window_full"] is False, pr
    assert 1000 <= pr["lag_ms"] <= t1 - t0 + 50, (pr, t1 - t0)
    # Tenant B may take the rest: the global window fills.
    post_seq(d, "sb", [b'{"b":%d}' % n for n in range(60)])
    wait_until(lambda: d.status()["inflight"] == 40, 10, 0.05,
               "the global window to fill")
    pr, t2 = d.pressure(), now_ms()
    assert pr["window_full"] is True, pr
    assert pr["lag_ms"] >= 1000 and pr["lag_ms"] <= t2 - t0 + 50, (pr, t2 - t0)
    s.mode("/a", delay_ms=0)
    s.mode("/b", delay_ms=0)
    settle(d)
    assert d.pressure() == {"lag_ms": 0, "window_full": False}, d.pressure()


# ------------------------------------------------------------ dead-letter-source

def test_dead_letter_source():
    s = TestSink().start()
    d = Daemon(sources={
        "doomed": sink_source([{"type": "http", "url": s.url("/x")},
                               {"type": "log"}], tenant="tx",
                              retry={"base_ms": 30000, "max_ms": 30000}),
        "keep": sink_source([{"type": "http", "url": s.url("/k")}]),
    }, extra={"dispatch": dispatch_conf(breaker_failures=0)}).start()
    s.mode("/x", status=503)
    ids = [i for i, _ in post_seq(d, "doomed", [b'{"d":%d}' % n
                                                for n in range(7)])]
    settle(d)       # first attempts done; the rows wait 30 s
    assert s.received("/x") == 7, s.stats()
    st = d.status()
    assert st["pending"] == 7, "pending %r, want 7" % st
    rc, out, err = d.ctl("dead-letter-source", "doomed")
    assert out.strip() == "dead_lettered 7", \
        "dead-letter-source printed %r, want 'dead_lettered 7'" % out
    dl = d.dlq(source="doomed")
    assert sorted(e["hook_id"] for e in dl) == sorted(ids), dl
    for e in dl:
        assert e["reason"] == "source_gone:doomed", \
            "reason %r, want source_gone:doomed" % e["reason"]
        assert e["attempts"] == 1, e
    st = d.status()
    assert (st["pending"], st["dead"]) == (0, 7), st
    # Nothing of it is attempted any more; other sources unaffected.
    rc, out, err = d.ctl("dead-letter-source", "doomed")
    assert out.strip() == "dead_lettered 0", out
    (kid, _), = post_seq(d, "keep", [b"{}"])
    wait_delivered(s, [kid], "/k", 5, "a hook of another source")
    assert s.received("/x") == 7
    # A source neither configured nor in the store: refused, named.
    rc, out, err = d.ctl("dead-letter-source", "nosuch", check=False)
    assert rc == 1, "unknown source: exit %d, want 1 (%r %r)" % (rc, out, err)
    assert "nosuch" in err and "unknown source" in err, err
    # A source the store still holds rows of is known, configured or not.
    rc, out, err = d.ctl("dead-letter-source", "doomed")
    assert out.strip() == "dead_lettered 0", out


def test_tick_counts_dead_letter_source():
    """tick's count is the rows settled during the call: a delivery that
    ends in it and the rows dead_letter_source moves while it waits, and
    not the rows that only wait out a backoff."""
    s = TestSink().start()
    d = Daemon(sources={
        "doomed": sink_source([{"type": "http", "url": s.url("/x")}],
                              tenant="tx",
                              retry={"base_ms": 60000, "max_ms": 60000}),
        "keep": sink_source([{"type": "http", "url": s.url("/k")}]),
    }, extra={"dispatch": dispatch_conf(breaker_failures=0)}).start()
    s.mode("/x", status=503)
    post_seq(d, "doomed", [b'{"d":%d}' % n for n in range(9)])
    wait_until(lambda: s.received("/x") == 9, 10, 0.05, "first attempts")
    assert settle(d) == 0, "tick counted rows that only wait a backoff"
    s.mode("/k", delay_ms=1500)
    (kid, _), = post_seq(d, "keep", [b"{}"])
    wait_until(lambda: s.received("/k") == 1, 10, 0.02, "the slow attempt")
    got = {}
    th = threading.Thread(target=lambda: got.update(n=d.tick(30)))
    th.start()
    time.sleep(0.3)     # the tick waits for the running attempt
    rc, out, err = d.ctl("dead-letter-source", "doomed")
    assert out.strip() == "dead_lettered 9", out
    th.join(40)
    assert got.get("n") == 10, "tick settled %r, want 10 (1 delivered, 9 " \
        "dead-lettered by dead-letter-source)" % got.get("n")
    wait_delivered(s, [kid], "/k", 5, "the slow hook")


def dead_lettered_metric(d, source):
    """ankusa_dispatch_dead_lettered_total of source, every sink summed."""
    st, _, data = ankusa.request(d.admin_port, "GET", "/metrics")
    assert st == 200, "GET /metrics: %d" % st
    pat = re.compile(r'^ankusa_dispatch_dead_lettered_total\{source_id="%s",'
                     r'[^}]*\} (\S+)$' % re.escape(source))
    return sum(float(m.group(1)) for m in map(pat.match,
               data.decode().splitlines()) if m)


def test_tick_metrics_orphans_not_dead_lettered():
    """Rows whose hook is gone (orphans: tests/store_plant -o deletes the
    hooks of a stopped daemon's rows) are dropped when dispatch claims
    them: tick, ankusa_dispatch_dead_lettered_total and the dead letters
    count none of them, and the log says dropped; a dead letter settled
    beside them in the same tick counts once."""
    s = TestSink().start()
    d = Daemon(sources={
        "orph": hold_source(),
        "gone": sink_source([{"type": "http", "url": s.url("/gone"),
                              "disable_on": []}]),
    }, extra={"dispatch": dispatch_conf(breaker_failures=0)}).start()
    post_seq(d, "orph", [b'{"o":%d}' % n for n in range(3)])
    assert settle(d) == 0, "tick counted rows that only wait a backoff"
    d.stop()
    r = subprocess.run([ankusa.binary("tests/store_plant"), "-o",
                        d.data_dir, "orph"], capture_output=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == b"3", r
    d.start()
    s.mode("/gone", status=410, delay_ms=1500)
    post_seq(d, "gone", [b"{}"])
    wait_until(lambda: s.received("/gone") == 1, 10, 0.02,
               "the slow attempt")
    got = {}
    th = threading.Thread(target=lambda: got.update(n=d.tick(30)))
    th.start()
    time.sleep(0.3)     # the tick waits for the running attempt
    d.ctl("flush", "orph")      # the orphans due now, while it waits
    th.join(40)
    assert got.get("n") == 1, "tick settled %r, want 1 (the 410; the 3 " \
        "orphans are dropped, not dead-lettered)" % got.get("n")
    st = d.status()
    assert (st["dead"], st["pending"]) == (1, 0), st
    assert dead_lettered_metric(d, "orph") == 0, \
        "ankusa_dispatch_dead_lettered_total counts the orphans"
    assert dead_lettered_metric(d, "gone") == 1
    log = d.log_since_start()
    assert len(re.findall(r"orph#0 \(http\): dropped: its hook is gone",
                          log)) == 3, log[-3000:]
    assert not re.search(r"source=orph .*status=bounced", log), log[-3000:]


def test_dead_letter_source_claimed_queued():
    """Rows claimed but waiting for a slot are pending: dead_letter_source
    moves them too (counted), and only the running attempt is left to
    settle; none of the others reaches the sink."""
    s = TestSink().start()
    d = Daemon(sources={
        "doomed": sink_source([{"type": "http", "url": s.url("/x")}],
                              tenant="tq"),
    }, extra={"dispatch": dispatch_conf(concurrency=1,
                                        sink_concurrency=1)}).start()
    s.mode("/x", delay_ms=2000)
    ids = [i for i, _ in post_seq(d, "doomed", [b'{"q":%d}' % n
                                                for n in range(5)])]
    wait_until(lambda: s.received("/x") == 1, 5, what="the running attempt")
    st = d.status()
    assert st["inflight"] == 5, "claimed %r, want all 5" % st
    rc, out, err = d.ctl("dead-letter-source", "doomed")
    assert out.strip() == "dead_lettered 4", out
    settle(d)
    assert s.received("/x") == 1, "%d requests: a queued row was sent " \
        "after dead_letter_source" % s.received("/x")
    dl = d.dlq(source="doomed")
    assert len(dl) == 4 and all(e["reason"] == "source_gone:doomed" and
                                e["attempts"] == 0 for e in dl), dl
    assert len(delivered(s, "/x")) == 1, "the running attempt settles"
    st = d.status()
    assert (st["pending"], st["dead"]) == (0, 4), st


def test_dead_letter_source_backlog():
    """dead_letter_source over a backlog of 30,000 rows behind a down sink
    works in steps: ingest keeps answering 201 promptly and another
    source's hooks are delivered promptly while it runs (done in one go, it
    held the loop for the whole backlog), and the count it returns is the
    rows it moved.  Past its deadline it answers unavailable, and what it moved by
    then stays moved."""
    n = 30000
    s = TestSink().start()
    d = Daemon(sources={
        "big": hold_source(tenant="tb"),
        "live": sink_source([{"type": "http", "url": s.url("/l")}],
                            tenant="tl"),
    }, workers=2).start()
    body = b'{"pad":"' + b"b" * 100 + b'"}'
    got = post_par(d, "big", [body] * n, threads=8)
    assert len(got) == n
    wait_until(lambda: d.status()["inflight"] == 0, 60, 0.2,
               "the backlog's first attempts")
    assert d.status()["pending"] == n, d.status()
    # A deadline of 0 s: the first step runs, then the call is unavailable.
    rc, out, err = d.ctl("dead-letter-source", "big", "0", check=False)
    assert rc == 1 and "unavailable" in err, (rc, out, err)
    m = re.search(r"(\d+) rows? dead-lettered", err)
    assert m is not None, err
    first = int(m.group(1))
    assert 0 < first < n, err
    assert d.status()["dead"] == first, (d.status(), first)

    lat, ids, stop = [], [], threading.Event()

    def ingest():
        c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
        while not stop.is_set():
            t0 = time.monotonic()
            st, h, data = post(d.port, "/webhooks/live", b"{}", conn=c)
            lat.append((t0, (time.monotonic() - t0) * 1000))
            ids.append((expect_accepted(st, h, data), t0, now_ms()))
            time.sleep(0.005)
        c.close()

    th = threading.Thread(target=ingest)
    th.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    rc, out, err = d.ctl("dead-letter-source", "big", timeout=120)
    t1 = time.monotonic()
    time.sleep(0.3)
    stop.set()
    th.join(30)
    during = [ms for t, ms in lat if t0 <= t <= t1]
    note("dead-letter-source: %d rows in %.2f s; ingest during it: %d posts,"
         " max %.1f ms, p99 %.1f ms" % (n - first, t1 - t0, len(during),
                                        max(during or [0]),
                                        pct(during, 99) or 0))
    assert out.strip() == "dead_lettered %d" % (n - first), (out, first)
    st = d.status()
    assert (st["pending"], st["dead"]) == (0, n), st
    assert len(during) >= 3, "only %d posts answered while " \
        "dead-letter-source ran (%.2f s)" % (len(during), t1 - t0)
    assert max(during) < 100, "ingest stalled %.0f ms while " \
        "dead-letter-source ran (%.2f s)" % (max(during), t1 - t0)
    wait_delivered(s, [i for i, _, _ in ids], "/l", 20,
                   "the live source's hooks")
    t_rec = {r["x-ankusa-id"]: r["t"] for r in s.records("/l")}
    dl = [t_rec[i] - at for i, t, at in ids if t0 <= t <= t1]
    assert max(dl) < 250, "deliveries of hooks posted while " \
        "dead-letter-source ran took up to %d ms" % max(dl)


def test_dead_letter_source_due_backlog():
    """dead_letter_source is atomic in effect: from its start to its end
    nothing of its source is claimed, so every pending row but those of
    the attempts running at its start is dead-lettered and counted, and
    none is attempted or delivered meanwhile ("every pending row ...
    now"; "no claim can race it").  The backlog is due, behind a slow sink
    whose slots are all busy: the rows dispatch claimed between two of the
    call's steps were passed over by the walk as claimed, then delivered
    after the call began and missing from its count."""
    n = 20000
    conc = 4
    s = TestSink().start()
    d = Daemon(sources={
        "big": sink_source([{"type": "http", "url": s.url("/slow")}],
                           tenant="tb"),
    }, workers=2, extra={"dispatch": dispatch_conf(
        concurrency=conc, sink_concurrency=conc,
        breaker_failures=0)}).start()
    s.mode("/slow", delay_ms=50)
    body = b'{"pad":"' + b"d" * 100 + b'"}'
    got = post_par(d, "big", [body] * n, threads=8)
    assert len(got) == n
    wait_until(lambda: s.received("/slow") >= 2 * conc, 10, 0.02,
               "the slow sink's slots busy")
    r0 = s.received("/slow")
    t0 = time.monotonic()
    rc, out, err = d.ctl("dead-letter-source", "big", timeout=120)
    t1 = time.monotonic()
    # At the end of the call only the rows of the attempts that ran at its
    # start may be pending still: as many as the slots, and the decks
    # that started behind them before the call could take them back.
    st = d.status()
    r1 = s.received("/slow")
    m = re.fullmatch(r"dead_lettered (\d+)", out.strip())
    assert m is not None, (out, err)
    moved = int(m.group(1))
    note("dead-letter-source over a due backlog: %d rows in %.2f s; the "
         "sink got %d requests during it; %d pending at its end" % (
             moved, t1 - t0, r1 - r0, st["pending"]))
    assert st["pending"] <= 2 * conc, "%d rows of the source pending " \
        "after dead_letter_source (claimed during it): %r" % (
            st["pending"], st)
    assert r1 - r0 <= 2 * conc, "%d attempts started while " \
        "dead_letter_source ran (%.2f s)" % (r1 - r0, t1 - t0)
    wait_until(lambda: d.status()["pending"] == 0, 20, 0.05,
               "the attempts running at the start to settle")
    assert s.received("/slow") - r0 <= 2 * conc, s.stats()
    ok = set(s.ids("/slow", status=200))
    dl = d.dlq(source="big", limit=n)
    assert len(dl) == moved and all(e["reason"] == "source_gone:big"
                                    for e in dl), (len(dl), moved)
    assert not ok & {e["hook_id"] for e in dl}, "a hook both delivered " \
        "and dead-lettered"
    assert len(ok) + moved == n, (len(ok), moved, n)
    st = d.status()
    assert (st["pending"], st["dead"]) == (0, moved), st


def test_drain_timeout():
    """ankusactl drain TIMEOUT_S exits non-zero while the daemon is still
    running at the timeout (an attempt of 6 s settles first); the drain
    goes on and the daemon stops by itself."""
    s = TestSink().start()
    d = Daemon(sources={
        "dt": sink_source([{"type": "http", "url": s.url("/slow")}]),
    }, extra={"dispatch": dispatch_conf(attempt_timeout_ms=20000)}).start()
    s.mode("/slow", delay_ms=6000)
    post_seq(d, "dt", [b"{}"])
    wait_until(lambda: s.received("/slow") >= 1, 5, what="the attempt")
    t0 = time.monotonic()
    rc, out, err = d.ctl("drain", "1", check=False)
    dt = time.monotonic() - t0
    assert rc == 1, (rc, out, err)
    assert "still running" in err, err
    assert 0.9 <= dt < 5, "drain 1 took %.1f s" % dt
    assert d.running(), "ankusad stopped before its attempt was answered"
    rc = d.proc.wait(30)
    assert rc == 0, rc
    rc, out, err = d.ctl("drain", "x", check=False)
    assert rc == 2, (rc, out, err)


# ------------------------------------------------------------ binding

def test_binding_reorder_remove_reload():
    s = TestSink().start()
    slow = {"base_ms": 1500, "max_ms": 1500, "max_attempts": 1000}
    sources = {
        "re": sink_source([{"type": "http", "url": s.url("/old")},
                           {"type": "log"}], tenant="tr", retry=slow),
        "gone": sink_source([{"type": "http", "url": s.url("/g")}],
                            tenant="tr", retry=slow),
        "shrink": sink_source([{"type": "http", "url": s.url("/s")},
                               {"type": "log"}], tenant="tr", retry=slow),
    }
    d = Daemon(sources=sources, extra={"dispatch": dispatch_conf(
        breaker_failures=0)}).start()
    for p in ("/old", "/g", "/s"):
        s.mode(p, status=503)
    re_ids = [i for i, _ in post_seq(d, "re", [b'{"r":%d}' % n
                                               for n in range(5)])]
    g_ids = [i for i, _ in post_seq(d, "gone", [b'{"g":%d}' % n
                                                for n in range(4)])]
    sh_ids = [i for i, _ in post_seq(d, "shrink", [b'{"s":%d}' % n
                                                   for n in range(3)])]
    settle(d)
    assert d.status()["pending"] == 12, d.status()
    # Reorder re's sinks and move its URL; delete `gone`; drop shrink's
    # http sink.
    d.sources = {
        "re": sink_source([{"type": "log"},
                           {"type": "http", "url": s.url("/new")}],
                          tenant="tr", retry=slow),
        "shrink": sink_source([{"type": "log"}], tenant="tr", retry=slow),
    }
    d.write_config()
    d.ctl("reload")
    s.mode("/new", status=200)
    wait_delivered(s, re_ids, "/new", 10,
                   "re's rows at the http sink's new URL after reorder")
    assert s.received("/old") == 5, "old URL used after the reload: %r" % (
        s.stats())

    def dead(src, n):
        return len(d.dlq(source=src)) == n

    wait_until(lambda: dead("gone", 4), 10, 0.1,
               "gone's rows dead-lettered when claimed")
    for e in d.dlq(source="gone"):
        assert e["reason"] == "source_gone:gone", \
            "reason %r, want source_gone:gone" % e["reason"]
    assert s.received("/g") == 4, "a deleted source's row was attempted"
    wait_until(lambda: dead("shrink", 3), 10, 0.1,
               "shrink's http rows dead-lettered")
    for e in d.dlq(source="shrink"):
        assert e["reason"] == "sink_gone:0:http", \
            "reason %r, want sink_gone:0:http" % e["reason"]
    assert sorted(e["hook_id"] for e in d.dlq(source="shrink")) == \
        sorted(sh_ids)
    settle(d)
    st = d.status()
    assert (st["pending"], st["dead"]) == (0, 7), st
    del g_ids


def test_reload_reorders_sinks_rows_queued():
    """Rows claimed before a reload that reorders their source's sinks and
    started after it: each hook reaches the sink of its module once, none
    goes to the sink that now holds its index.  The http rows wait queued
    behind a slow attempt (concurrency 1); the sqs rows wait in the
    batcher behind a held request (sink_concurrency 1)."""
    s = TestSink().start()
    q = FakeSQS().start()
    s.mode("/h", delay_ms=400)
    q.delay_s = 1.5
    n = 8
    src = {"re": sink_source([{"type": "http", "url": s.url("/h")},
                              q.sink()], tenant="tr")}
    d = Daemon(sources=src, extra={"dispatch": dispatch_conf(
        concurrency=1, sink_concurrency=1, breaker_failures=0)}).start()
    ids = [i for i, _ in post_seq(d, "re", [b'{"r":%d}' % k
                                            for k in range(n)])]
    wait_until(lambda: s.received("/h") >= 1 and q.in_flight >= 1, 10,
               0.02, "an http attempt and an sqs request under way")
    st = d.status()
    assert st["pending"] == 2 * n, st
    d.sources = {"re": sink_source([q.sink(), {"type": "http",
                                                "url": s.url("/h")}],
                                   tenant="tr")}
    d.write_config()
    d.ctl("reload")
    s.mode("/h", delay_ms=0)
    q.delay_s = 0.0
    settle(d)
    http = [r["x-ankusa-id"] for r in s.records()]
    sqs = [e["body"]["id"] for e in q.entries()]
    assert sorted(http) == sorted(ids), \
        "http got %d requests for %d hooks (paths %r)" % (
            len(http), n, sorted({r["path"] for r in s.records()}))
    assert sorted(sqs) == sorted(ids), \
        "sqs got %d messages for %d hooks" % (len(sqs), n)
    st = d.status()
    assert (st["pending"], st["dead"]) == (0, 0), st


def test_reload_restart_only_keys_kept():
    """One SIGHUP changes restart-only keys (http.port, and claim_check
    added) and a reloadable one (a new source): the new source is served,
    the restart-only keys are reported and keep their old values until a
    restart: ingest still on the old port, none on the new one, and no
    claim check (a body above the sink's inline_max_bytes is
    dead-lettered as inline_max_bytes, not sent by claim)."""
    q = FakeSQS().start()
    sink = q.sink(inline_max_bytes=1000)
    d = Daemon(sources={"big": sink_source([sink], tenant="acme")},
               extra={"dispatch": dispatch_conf()}).start()
    old_port, new_port = d.port, ankusa_free_port()
    d.http = dict(d.http, port=new_port)
    d.extra["claim_check"] = {"ip": "127.0.0.1",
                              "port": ankusa_free_port(),
                              "store": {"type": "local",
                                        "root": os.path.join(d.dir,
                                                             "claims")}}
    d.sources["fresh"] = sink_source([q.sink()], tenant="acme")
    d.write_config()
    d.ctl("reload")
    log = d.log_since_start()
    for key in ("http.port", "claim_check"):
        assert "reload: %s changed; it needs a restart" % key in log, \
            "%s not reported:\n%s" % (key, log[-2000:])
    ok = []

    def fresh():
        st, h, data = post(old_port, "/webhooks/fresh", b'{"f":1}')
        if st == 201:
            ok.append(jbody(data)["id"])
        return st == 201
    wait_until(fresh, 10, 0.1, "the new source served on the old port")
    fid = ok[0]
    try:
        post(new_port, "/webhooks/fresh", b"{}", timeout=2)
        raise AssertionError("ingest answered on the new http.port %d "
                             "before a restart" % new_port)
    except OSError:
        pass
    st, h, data = post(old_port, "/webhooks/big", os.urandom(5000))
    bid = expect_accepted(st, h, data, "a body above inline_max_bytes")
    settle(d)
    got = {e["body"]["id"]: e["body"] for e in q.entries()}
    assert fid in got and "body_base64" in got[fid], got.get(fid)
    assert bid not in got, "sent by claim with claim_check not yet in " \
        "force: %r" % sorted(got[bid])
    dead = d.dlq(source="big")
    assert [(e["hook_id"], e["reason"]) for e in dead] == \
        [(bid, "inline_max_bytes")], dead


def test_deliver_pool_room_for_batches():
    """Single http attempts hold all of dispatch.concurrency (a slow sink)
    while an sqs destination still has several batch requests in flight
    at once, up to sink_concurrency: the deliver pool has room for both."""
    s = TestSink().start()
    q = FakeSQS().start()
    s.mode("/slow", delay_ms=3000)
    q.delay_s = 1.0
    d = Daemon(sources={
        "web": sink_source([{"type": "http", "url": s.url("/slow")}],
                           tenant="t"),
        "queue": sink_source([q.sink()], tenant="t")},
        extra={"dispatch": dispatch_conf(
            concurrency=3, sink_concurrency=3, breaker_failures=0,
            tenants={"default": {"concurrency": 3}})}).start()
    post_par(d, "web", [b'{"w":%d}' % k for k in range(6)], threads=6)
    wait_until(lambda: d.status()["running"] == 3, 10, 0.02,
               "every single-attempt slot busy")
    post_par(d, "queue", [b'{"q":%d}' % k for k in range(60)], threads=6)
    wait_until(lambda: len(q.entries()) == 60, 20, 0.05,
               "the 60 sqs messages")
    note("sqs requests %d, at most %d in flight" % (q.requests,
                                                    q.max_in_flight))
    assert q.max_in_flight >= 3, \
        "at most %d batch request(s) in flight beside 3 running single " \
        "attempts; sink_concurrency is 3" % q.max_in_flight
    s.mode("/slow", delay_ms=0)
    settle(d)


def test_concurrency_above_128():
    """dispatch.concurrency 200: the deliver pool has 201 processes (the
    concurrency and one for check-ins), 200 attempts to a slow sink run
    at once (the sink holds them together), and every hook is delivered.
    Started with the soft open-file limit of a shell (1024), the master
    raises it to the hard one and keeps its channels to the children above
    1024 (select(), in Berkeley DB's replication manager, needs the
    descriptors below)."""
    n = 200
    hold_ms = 6000
    s = TestSink().start()
    s.mode("/wide", delay_ms=hold_ms)
    d = Daemon(sources={
        "wide": sink_source([{"type": "http", "url": s.url("/wide"),
                              "timeout_ms": 30000}], tenant="w")},
        extra={"dispatch": dispatch_conf(
            concurrency=n, sink_concurrency=n, breaker_failures=0,
            attempt_timeout_ms=60000,
            tenants={"default": {"concurrency": n}})})
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard < 1024 + 2 * (n + 3):
        raise ankusa.Skip("the hard open-file limit, %d, is below %d" % (
            hard, 1024 + 2 * (n + 3)))
    d.start(timeout=60, preexec_fn=lambda: resource.setrlimit(
        resource.RLIMIT_NOFILE, (1024, hard)))
    wait_until(lambda: d.status()["delivers"] == n + 1, 60, 0.1,
               "%d deliver processes" % (n + 1))
    with open("/proc/%d/limits" % d.pid) as f:
        soft = [int(l.split()[3]) for l in f
                if l.startswith("Max open files")][0]
    assert soft == hard, "the master's open-file limit is %d, not %d" % (
        soft, hard)
    low = [int(fd) for fd in os.listdir("/proc/%d/fd" % d.pid)
           if int(fd) < 1024]
    assert len(low) < n, "%d of the master's descriptors are below 1024 " \
        "with %d children" % (len(low), n + 3)
    ids = post_par(d, "wide", [b'{"w":%d}' % k for k in range(n + 20)],
                   threads=8)
    wait_until(lambda: d.status()["running"] == n, 30, 0.05,
               "%d attempts running at once" % n)
    wait_until(lambda: s.received("/wide") >= n, 30, 0.05,
               "%d requests at the sink" % n)
    first = sorted(r["t"] for r in s.records("/wide"))[:n]
    # Each request is answered hold_ms after it was read: read within
    # less than that of each other, they were all in flight together.
    assert first[-1] - first[0] < hold_ms, \
        "the first %d requests were read over %.0f ms: not at once" % (
            n, first[-1] - first[0])
    settle(d)
    wait_delivered(s, ids, "/wide", 10, "hooks")
    st = d.status()
    assert (st["hooks"], st["pending"]) == (0, 0), st
    note("%d attempts at once; the first %d requests read within %.0f ms"
         % (n, n, first[-1] - first[0]))


# ------------------------------------------------------------ drain

def test_drain_settles_running_attempts():
    s = TestSink().start()
    d = Daemon(sources={
        "dr": sink_source([{"type": "http", "url": s.url("/slow")}],
                          tenant="td"),
    }, extra={"dispatch": dispatch_conf(concurrency=4,
                                        sink_concurrency=4)}).start()
    s.mode("/slow", delay_ms=1500)
    ids = [i for i, _ in post_seq(d, "dr", [b'{"d":%d}' % n
                                            for n in range(12)])]
    wait_until(lambda: s.received("/slow") >= 4, 5, 0.02,
               "4 attempts running")
    t0 = time.monotonic()
    # ankusactl drain 30 returns once the daemon has stopped (exit 0).
    ctl = subprocess.Popen([ankusa.binary("ankusactl"), "-s", d.sock,
                            "drain", "30"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    wait_until(lambda: "stopping: drain requested" in d.log_since_start(),
               5, what="the drain to begin")
    # New hooks are refused while draining.
    try:
        st, h, data = post(d.port, "/webhooks/dr", b"{}", timeout=3)
        assert st == 503, "POST while draining: %d %r" % (st, data)
    except (OSError, http.client.HTTPException):
        pass                    # or the listener is already closed
    # On a loaded machine the POST may outlast the drain itself: then
    # ankusactl has returned, and the daemon must be gone with it.
    if ctl.poll() is not None:
        try:
            d.proc.wait(2)
        except subprocess.TimeoutExpired:
            raise AssertionError("ankusactl drain returned while ankusad "
                                 "still runs: %r" % (ctl.communicate(),))
    out, err = ctl.communicate(timeout=40)
    assert ctl.returncode == 0, (ctl.returncode, out, err)
    assert b"stopped" in out, out
    try:
        rc = d.proc.wait(5)
    except Exception:
        raise AssertionError("ankusactl drain said stopped, but ankusad "
                             "is still running")
    dt = time.monotonic() - t0
    assert rc == 0, "exit status %r after drain" % rc
    assert dt >= 1.0, "exited %.2f s after drain: before its attempts " \
        "(1.5 s each) were answered" % dt
    first = delivered(s, "/slow")
    assert len(first) >= 4, "only %d answered before exit" % len(first)
    n_req = s.received("/slow")
    s.mode("/slow", delay_ms=0)
    d.start()
    settle(d)
    wait_delivered(s, ids, "/slow", 10, "every hook after the restart")
    recs = by_id(s.records("/slow"))
    dup = {i: len(v) for i, v in recs.items() if len(v) > 1}
    assert not dup, "drain did not write the outcomes of its running " \
        "attempts: delivered again after restart: %r" % dup
    st = d.status()
    assert (st["hooks"], st["pending"]) == (0, 0), st
    note("drain: exit after %.2f s; %d attempts answered before it, %d "
         "after the restart" % (dt, n_req, len(ids) - n_req))


def test_dispatch_functions_unavailable_draining():
    """While the daemon drains its pipeline is down: pressure, tick and
    dead_letter_source answer unavailable at once (ankusactl exits 1;
    the admin API's dead-letter is 503 unavailable with Retry-After), and
    a tick that waited when the drain began ends so too, not at its
    timeout; the attempt running goes on and the drain ends with it."""
    s = TestSink().start()
    d = Daemon(sources={
        "du": sink_source([{"type": "http", "url": s.url("/slow")}],
                          tenant="tu"),
    }, extra={"dispatch": dispatch_conf(
        concurrency=1, sink_concurrency=1,
        attempt_timeout_ms=20000)}).start()
    s.mode("/slow", delay_ms=4000)
    post_seq(d, "du", [b'{"u":%d}' % n for n in range(3)])
    wait_until(lambda: s.received("/slow") == 1, 5, 0.02, "the attempt")
    assert d.pressure()["window_full"] is False
    # A tick waits: two rows are claimed behind the running attempt.
    tick = {}

    def run_tick():
        t = time.monotonic()
        tick["r"] = d.ctl("tick", "30", check=False, timeout=60)
        tick["s"] = time.monotonic() - t
    th = threading.Thread(target=run_tick)
    th.start()
    time.sleep(0.3)
    assert th.is_alive(), tick
    ctl = subprocess.Popen([ankusa.binary("ankusactl"), "-s", d.sock,
                            "drain", "30"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    wait_until(lambda: "stopping: drain requested" in d.log_since_start(),
               5, what="the drain to begin")
    th.join(3)
    assert not th.is_alive(), "a tick in progress waited on into the drain"
    rc, out, err = tick["r"]
    assert rc == 1 and "unavailable" in err, tick
    for args in (("pressure",), ("tick", "10"),
                 ("dead-letter-source", "du")):
        t = time.monotonic()
        rc, out, err = d.ctl(*args, check=False, timeout=20)
        assert rc == 1 and "unavailable" in err and "drain" in err, \
            (args, rc, out, err)
        assert time.monotonic() - t < 2, (args, time.monotonic() - t)
    st, hdrs, doc = d.api("POST", "/v1/tenants/tu/sources/du/dead-letter",
                          {})
    assert st == 503 and doc["error"] == "unavailable" and \
        hdrs.get("retry-after") == "1", (st, hdrs, doc)
    assert d.running(), "the drain ended before its attempt"
    out, err = ctl.communicate(timeout=40)
    assert ctl.returncode == 0 and b"stopped" in out, (ctl.returncode, out,
                                                       err)
    assert d.proc.wait(5) == 0
    assert len(delivered(s, "/slow")) == 1, s.stats()

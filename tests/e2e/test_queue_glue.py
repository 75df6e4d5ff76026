# SPDX-License-Identifier: ISC
"""Batched attempts through the master's glue (daemon/pipeline/pipeline.c and
the batcher) against a fake SQS endpoint: tests/test_sink, which answers every
request as its mode says (500, or never) and records when it read each.
No emulator is needed: the deliver process sends real SendMessageBatch
requests, and their answers are what the test sets.  ankusa.FakeSQS
stands in where the test counts the requests in flight at once.
"""

import re
import time

import ankusa
from ankusa import Daemon, TestSink, dispatch_conf, note, wait_until
from test_loss import _delivers
from test_queue_daemon import _post_all


def _sqs_source(sink, tenant, **retry):
    """A source with one SQS sink whose queue (and so its endpoint) is
    the test sink."""
    return ankusa.sink_source([{
        "type": "sqs", "queue_url": sink.url("/000000000000/q"),
        "region": "us-east-1", "access_key_id": "AKIDTEST",
        "secret_access_key": "secret"}], tenant=tenant, retry=retry)


def _breaker(d, source, state):
    for b in d.breakers():
        if b.get("source") == source and b.get("state") == state:
            return b
    return None


def test_sqs_breaker_parks_batched():
    """An SQS endpoint that answers 500 after 300 ms, sink_concurrency 2
    (two requests in flight), 300 hooks: the batcher holds most of them
    when the third failure opens the key's breaker.  Those waiting entries
    are parked with their queued rows (the spec: "the key's queued rows
    and every row of it claimed while it is open are parked"), so the
    endpoint gets no request while the breaker is open (30 s here): none
    in the 3 s after it opened.  Nothing is dead-lettered; every hook is
    still pending."""
    s = TestSink().start()
    s.mode("*", status=500, delay_ms=300)
    d = Daemon(sources={"sq": _sqs_source(s, "tq", max_attempts=1000)},
               extra={"dispatch": dispatch_conf(
                   sink_concurrency=2, breaker_failures=3,
                   breaker_open_ms=30000, breaker_max_open_ms=30000)}
               ).start()
    posted = _post_all(d, "sq", [b'{"n":%d}' % i for i in range(300)])
    assert len(posted) == 300
    b = wait_until(lambda: _breaker(d, "sq", "open"), 15, 0.02,
                   "the breaker of sq to open")
    assert (b["tenant"], b["module"]) == ("tq", "sqs"), b
    # Requests in flight when it opened were read by the sink before: the
    # sink reads a request at once and answers 300 ms later.
    n0 = s.received()
    time.sleep(3)
    n1 = s.received()
    note("sqs breaker: %d requests before it opened, %d in the 3 s after"
         % (n0, n1 - n0))
    assert n1 - n0 <= 1, "breaker open: the endpoint still got %d " \
        "requests in 3 s (the batcher's waiting entries were sent)" % (
            n1 - n0)
    assert _breaker(d, "sq", "open") is not None, d.breakers()
    assert d.dlq() == [], "dead-lettered: %r" % d.dlq()[:3]
    st = d.status()
    assert (st["hooks"], st["pending"]) == (300, 300), st
    assert st["running"] == 0, st


def test_sqs_entry_timeout():
    """A batch request that hangs past dispatch.attempt_timeout_ms: each
    entry's attempt is timed out on its own through the glue, recorded as
    a failed attempt {attempt_timeout, 500} and retried; the request's
    deliver process is killed (every entry of it timed out) and a new one
    takes its place.  max_attempts 2: each hook is dead-lettered as
    attempt_timeout:500 after its second."""
    s = TestSink().start()
    s.mode("*", hang=True)
    d = Daemon(sources={"sq": _sqs_source(s, "tq", max_attempts=2,
                                          base_ms=50, jitter=False)},
               extra={"dispatch": dispatch_conf(
                   attempt_timeout_ms=500, breaker_failures=0,
                   sink_concurrency=2)}).start()
    size = int(re.search(r"(\d+) deliver processes",
                         d.log_text()).group(1))
    wait_until(lambda: len(_delivers(d.pid)) == size, 10, 0.05,
               "the %d deliver processes to start" % size)
    pool0 = _delivers(d.pid)
    posted = _post_all(d, "sq", [b'{"t":%d}' % i for i in range(5)],
                       workers=1)
    wait_until(lambda: len(d.dlq(source="sq")) == 5, 20, 0.1,
               "the 5 hooks to be dead-lettered")
    dead = d.dlq(source="sq")
    assert sorted(e["hook_id"] for e in dead) == sorted(posted), dead
    for e in dead:
        assert e["reason"] == "attempt_timeout:500", e
        assert e["last_error"] == "attempt_timeout:500", e
        assert e["attempts"] == 2, e
        # Two attempts, each a request that hung until its timeout.
        took = e["dead_at"] - ankusa.uuid7_ms(e["hook_id"])
        assert took >= 1000, "dead-lettered %d ms after it was " \
            "received: two attempts of 500 ms each cannot be" % took
    assert s.received() >= 2, "the sink got %d requests: no retry" % \
        s.received()
    kills = d.log_text().count("every entry timed out; killing its "
                               "deliver process")
    assert kills >= 2, "%d request processes killed" % kills

    # The killed processes are replaced: the pool is whole again, the
    # first killed (from the pool as it started) gone.  (A replacement may
    # be killed in its turn: kills can outnumber the pool's new pids.)
    def respawned():
        pool = _delivers(d.pid)
        return len(pool) == size and set(pool) != set(pool0)

    wait_until(respawned, 10, 0.1, "the deliver pool whole again, with "
               "new processes for the killed")
    note("sqs timeout: %d requests, %d kills" % (s.received(), kills))
    st = d.status()
    assert (st["hooks"], st["pending"], st["running"], st["dead"]) == \
        (5, 0, 0, 5), st


def test_sqs_sink_concurrency_caps_requests():
    """dispatch.sink_concurrency bounds an SQS destination's requests in
    flight from above, though idle deliver processes could carry more
    (concurrency 16, no single attempts): 4 at most and 4 reached while
    the endpoint holds each request 0.4 s; after a reload to 1, one at a
    time."""
    q = ankusa.FakeSQS().start()
    q.delay_s = 0.4
    d = Daemon(sources={"sq": ankusa.sink_source([q.sink()], tenant="tq")},
               extra={"dispatch": dispatch_conf(
                   concurrency=16, sink_concurrency=4,
                   breaker_failures=0)}).start()
    _post_all(d, "sq", [b'{"a":%d}' % i for i in range(120)], workers=8)
    d.tick(60)
    assert len(q.entries()) == 120, len(q.entries())
    first = (q.requests, q.max_in_flight)
    assert q.max_in_flight == 4, "sink_concurrency 4: at most %d " \
        "requests in flight at once" % q.max_in_flight
    d.extra["dispatch"]["sink_concurrency"] = 1
    d.write_config()
    d.ctl("reload")
    wait_until(lambda: "reload: config" in d.log_since_start(), 10, 0.05,
               "the new config in force")
    with q._lock:
        q.max_in_flight = q.in_flight
    _post_all(d, "sq", [b'{"b":%d}' % i for i in range(40)], workers=8)
    d.tick(60)
    assert len(q.entries()) == 160, len(q.entries())
    assert q.max_in_flight == 1, "sink_concurrency 1 after a reload: %d " \
        "requests in flight at once" % q.max_in_flight
    note("sqs: %d requests, at most %d in flight (cap 4); then %d, at most "
         "1 (cap 1)" % (first[0], first[1], q.requests - first[0]))

# SPDX-License-Identifier: ISC
"""Ingest limits (issue 25, section 3): the head's deadline in total
(http.header_timeout_ms), the body's minimum rate after its grace
(http.min_body_rate), connections per client address
(http.max_conns_per_ip), body bytes held by an edge
(http.max_buffered_bytes), bounded chunk extensions and trailers, and
dedupe followers counted in the commit queue's bounds.

Every test is named test_limits_* (scripts/chaos runs them by that
prefix), talks to 127.0.0.0/8 only and ends by itself.
"""

import concurrent.futures
import socket
import threading
import time

from ankusa import Daemon, expect, expect_accepted, hold_source, jbody, \
    note, post


def limits_daemon(workers=1, batcher=None, sources=None, **http):
    """A daemon with one edge (per-edge limits are then the node's) and
    the given http.* keys."""
    d = Daemon(workers=workers, batcher=batcher, sources=sources)
    d.http.update(http)
    d.write_config()
    return d.start()


def stored_ids(d):
    return {h["id"] for h in d.queue()}


def test_limits_dedupe_followers_bounded():
    """Hooks that follow a queued hook's dedupe key count against
    batcher.max_queue like any hook: with max_queue 4 and a batch held
    3 s, a flood of 21 posts of one key gets as many 201s (the leader and
    3 duplicates, all with its id) as a flood of 21 distinct keys, and the
    rest 503 overload; one hook stored for the key."""
    d = limits_daemon(workers=2, sources={
        "gh": hold_source(dedupe="github")},
        batcher={"max_queue": 4, "max_delay_ms": 3000})
    n = 20

    def flood(keys):
        conns = []
        for _ in keys:
            c = socket.create_connection(("127.0.0.1", d.port), 10)
            conns.append(c)
        barrier = threading.Barrier(len(keys))

        def one(i):
            barrier.wait()
            return post(d.port, "/webhooks/gh", b'{"n":%d}' % i,
                        {"X-GitHub-Delivery": keys[i]}, 20)
        try:
            with concurrent.futures.ThreadPoolExecutor(len(keys)) as ex:
                return list(ex.map(one, range(len(keys))))
        finally:
            for c in conns:
                c.close()

    def leader_and_flood(keys, lead_key):
        with concurrent.futures.ThreadPoolExecutor(1) as ex:
            fl = ex.submit(post, d.port, "/webhooks/gh", b'{"lead":1}',
                           {"X-GitHub-Delivery": lead_key}, 20)
            time.sleep(0.3)
            answers = flood(keys)
            return fl.result(timeout=20), answers

    results = {}
    for kind, keys, lead in (
            ("distinct", ["k-%d" % i for i in range(n)], "lead-a"),
            ("one key", ["lead-b"] * n, "lead-b")):
        (st, h, data), answers = leader_and_flood(keys, lead)
        lid = expect_accepted(st, h, data, "%s: leader" % kind)
        ok = [a for a in answers if a[0] == 201]
        for st, h, data in answers:
            if st != 201:
                expect(st, h, data, 503, {"error": "overload"},
                       "%s: past the queue" % kind)
                assert h.get("retry-after") == "1", h
        if kind == "one key":
            for st, h, data in ok:
                j = jbody(data)
                assert j == {"status": "accepted", "id": lid,
                             "duplicate": True}, j
        results[kind] = len(ok)
        note("%s: leader + %d x 201, %d x 503" % (kind, len(ok),
                                                  n - len(ok)))
    assert results["distinct"] == 3, results
    assert results["one key"] == results["distinct"], \
        "followers of one key not bounded like hooks: %r" % results
    q = d.queue()
    assert len(q) == 2 + results["distinct"], \
        "stored %d hooks: the 2 leaders and %d distinct" % (
            len(q), results["distinct"])


test_limits_dedupe_followers_bounded.timeout = 60

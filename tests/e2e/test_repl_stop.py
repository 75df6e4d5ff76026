# SPDX-License-Identifier: ISC
"""A site of a replication group stops on SIGTERM or SIGINT within its
drain's bound, whatever the group is doing (ankusad(8) REPLICATION), each
scenario in a private network namespace (repl.py), the sink one that takes
the hooks and never answers, so that attempts are in flight at every stop:

- the master stopped first, then the client, then the new master alone
  (no quorum left to acknowledge its settles): each exits 0 within
  dispatch.attempt_timeout_ms and a few seconds, and every hook answered
  201 is in the store after a restart of the group.
"""

import signal
import time

import ankusa
from ankusa import TestSink, dispatch_conf, note, post, sink_source, wait_until

ATTEMPT_MS = 3000
# A stop's bound past the attempts' timeout: the drain's own steps, the
# store's checkpoint and close (each a few hundred ms on this machine).
SLACK_S = 5.0
BOUND_S = ATTEMPT_MS / 1000.0 + SLACK_S


def _group(sink, **kw):
    import repl
    return repl.Group(sources={
        "s": sink_source([{"type": "http", "url": sink.url("/s")}])},
        extra={"dispatch": dispatch_conf(attempt_timeout_ms=ATTEMPT_MS)},
        **kw)


def _hanging_sink():
    sink = TestSink().start()
    sink.mode("/s", hang=True)
    return sink


def _post(n, count, tag):
    ids = []
    for i in range(count):
        st, _, data = post(n.port, "/webhooks/s", b'{"%s":%d}' % (
            tag.encode(), i), host=n.host, timeout=5.0)
        assert st == 201, (n, st, data)
        ids.append(ankusa.jbody(data)["id"])
    return ids


def _stop(n, sig=signal.SIGTERM, bound=BOUND_S):
    """Signal n and wait for its exit: (status, seconds)."""
    t0 = time.monotonic()
    n.proc.send_signal(sig)
    try:
        rc = n.proc.wait(bound)
    except Exception:                   # noqa: BLE001 - say what it did
        raise AssertionError("%r did not exit %.1f s after %s; its log "
                             "since the start:\n%s" % (
                                 n, bound, signal.Signals(sig).name,
                                 ankusa.tail(n.logpath, 20)))
    return rc, time.monotonic() - t0


def _stops_in_order():
    import repl
    sink = _hanging_sink()
    g = _group(sink)
    g.start()
    m = g.wait_master(30)
    acked = _post(m, 20, "a")
    wait_until(lambda: sink.received("/s") >= 1, 10, what="an attempt in "
               "flight")
    rc, dt = _stop(m)
    note("master stopped first: exit %s in %.2f s" % (rc, dt))
    assert rc == 0, rc
    new, secs = g.wait_new_master(m, timeout=30)
    acked += _post(new, 10, "b")
    wait_until(lambda: sink.received("/s") >= 2, 10, what="an attempt in "
               "flight on the new master")
    for c in [x for x in g.running() if x is not new]:
        rc, dt = _stop(c)
        note("client stopped: exit %s in %.2f s" % (rc, dt))
        assert rc == 0, rc
    # Alone: its settles get no quorum's acknowledgement (in doubt).
    rc, dt = _stop(new)
    note("the new master stopped alone: exit %s in %.2f s (bound %.1f "
         "s)" % (rc, dt, BOUND_S))
    assert rc == 0, rc
    assert "stopped, but the store was not closed cleanly" not in \
        new.log_text()
    # Nothing answered 201 went: the group back (all three at once: one
    # alone cannot be elected), its master holds all.
    for n in g.nodes:
        n.spawn()
    for n in g.nodes:
        n.wait_ready(60)
    last = g.wait_master(30)
    repl.check(acked, [last]).report("repl_stop_in_order", 1)
    for n in g.running():
        assert _stop(n)[0] == 0


def test_repl_stop_master_first():
    """The master stopped, then the client, then the new master alone,
    each with attempts in flight to a sink that never answers: each exits
    0 within the attempts' timeout and a few seconds; every 201 is kept."""
    import repl
    repl.in_netns(_stops_in_order, timeout=150)


test_repl_stop_master_first.timeout = 160


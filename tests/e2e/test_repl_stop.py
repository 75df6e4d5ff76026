# SPDX-License-Identifier: ISC
"""A site of a replication group stops on SIGTERM or SIGINT within its
drain's bound, whatever the group is doing (ankusad(8) REPLICATION), each
scenario in a private network namespace (repl.py), the sink one that takes
the hooks and never answers, so that attempts are in flight at every stop:

- the master stopped first, then the client, then the new master alone
  (no quorum left to acknowledge its settles): each exits 0 within
  dispatch.attempt_timeout_ms and a few seconds, and every hook answered
  201 is in the store after a restart of the group;
- a stop that arrives while a client, just elected, closes its store to
  execute itself again (docs/DEPARTURES 38): it is not lost, the node
  exits 0 instead of serving as the new master;
- a client already draining when it is elected: it does not execute
  itself again, it ends its stop;
- a node waiting to join its group (started alone without create, or a
  client whose peers are gone): SIGTERM and SIGINT stop it at once, exit
  0, the log says why; a SIGHUP meanwhile neither kills it nor is lost.
"""

import shutil
import signal
import time

import ankusa
from ankusa import (TestSink, dispatch_conf, get, note, post, sink_source,
                    wait_until)

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


def _post(n, count, tag, patience=0.0):
    """count hooks posted to n, each answered 201: their ids.  For
    patience seconds a 503 store_unavailable is tried again, as a provider
    does after its Retry-After: a master just elected answers so until its
    client has synchronised with it and acknowledges its commits."""
    ids = []
    deadline = time.monotonic() + patience
    for i in range(count):
        body = b'{"%s":%d}' % (tag.encode(), i)
        while True:
            st, h, data = post(n.port, "/webhooks/s", body, host=n.host,
                               timeout=5.0)
            if st != 503 or time.monotonic() >= deadline or \
                    ankusa.jbody(data).get("error") != "store_unavailable":
                break
            time.sleep(float(h.get("retry-after", "1")) / 5)
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
    acked += _post(new, 10, "b", patience=20)
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


def _how_stopped(log):
    """Which of the stop's paths a node's log shows."""
    if "while joining the replication group" in log:
        return "after its exec, while joining as master"
    if "with no new exec" in log:
        return "instead of its exec"
    if "executing ankusad again" in log:
        return "drained as the new master"
    return "drained as a client"


def _stop_while_elected():
    sink = _hanging_sink()
    # Rounds at several delays after the kill: the stop lands before the
    # election, while the elected client closes its store to execute
    # itself again, or just after.
    for delay in (0.0, 0.1, 0.25):
        g = _group(sink)
        g.start()
        m = g.wait_master(30)
        _post(m, 5, "e")
        g.kill9(m)
        time.sleep(delay)
        for c in g.running():
            c.proc.send_signal(signal.SIGTERM)
        for c in [x for x in g.nodes if x is not m]:
            rc, dt = _stop(c, bound=BOUND_S)
            note("kill -9 of the master, SIGTERM %.2f s later: %r exit %s "
                 "in %.2f s" % (delay, c, rc, dt))
            assert rc == 0, (c, rc)
            log = c.log_text()
            assert log.count("stopping: SIGTERM") == 1, log[-3000:]
            note("  %r: %s" % (c, _how_stopped(log)))
        for n in g.nodes:
            n.destroy()
            shutil.rmtree(n.dir, ignore_errors=True)


def test_repl_stop_while_elected():
    """kill -9 of the master, SIGTERM to both clients at once or a little
    later: the one elected does not lose the signal in its execution of
    itself; both exit 0 within the bound."""
    import repl
    repl.in_netns(_stop_while_elected, timeout=150)


test_repl_stop_while_elected.timeout = 160


def _elected_while_draining():
    sink = _hanging_sink()
    g = _group(sink, priorities=(100, 90, 10))
    g.start()
    m = g.wait_master(30)
    c = g.nodes[1]
    # /ready polled: the client's drain waits for the balancer (about 2.5
    # s at this polling), long enough for the election to land in it.
    for _ in range(3):
        c.api("GET", "/ready")
        time.sleep(0.2)
    t0 = time.monotonic()
    c.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: "stopping: SIGTERM" in c.log_since_start(), 5,
               0.02, "the client to start its stop")
    g.kill9(m)
    try:
        rc = c.proc.wait(BOUND_S + 3)
    except Exception:                   # noqa: BLE001
        raise AssertionError("the client elected while draining did not "
                             "exit; log:\n%s" % ankusa.tail(c.logpath, 20))
    dt = time.monotonic() - t0
    log = c.log_since_start()
    note("a client elected while draining: exit %s %.2f s after its "
         "SIGTERM; %s" % (rc, dt, "elected" if "now the group's master"
                          in log else "not elected"))
    assert rc == 0, rc
    assert "executing ankusad again" not in log, log[-3000:]
    assert _stop(g.nodes[2])[0] == 0


def test_repl_elected_while_draining():
    """A client draining (a balancer polls /ready) is elected master when
    the master dies: it ends its stop instead of executing itself again
    as master."""
    import repl
    repl.in_netns(_elected_while_draining, timeout=100)


test_repl_elected_while_draining.timeout = 110


def _joining():
    sink = _hanging_sink()
    g = _group(sink)
    # A node started alone without create: it waits for a group.
    n = g.nodes[1]
    for sig in (signal.SIGTERM, signal.SIGINT):
        n.spawn()
        wait_until(lambda: "joining its group" in n.log_since_start(), 10,
                   0.05, "the node to try to join")
        time.sleep(1.5)
        assert n.running(), ankusa.tail(n.logpath, 10)
        if sig == signal.SIGTERM:
            # A SIGHUP meanwhile: not the end of it.
            n.proc.send_signal(signal.SIGHUP)
            time.sleep(0.5)
            assert n.running(), ankusa.tail(n.logpath, 10)
        rc, dt = _stop(n, sig, bound=3.0)
        name = signal.Signals(sig).name
        note("a node waiting to join, %s: exit %s in %.2f s" % (name, rc,
                                                                 dt))
        assert rc == 0, (rc, ankusa.tail(n.logpath, 10))
        log = n.log_since_start()
        assert "stopping: %s while joining the replication group" % name \
            in log, log
        assert "stopped" in log, log
    # A client whose peers are gone: its restart waits for them.
    g.start()
    g.wait_master(30)
    for x in (g.nodes[0], g.nodes[2], g.nodes[1]):
        assert _stop(x)[0] == 0
    n.spawn()
    wait_until(lambda: "joining its group" in n.log_since_start(), 10,
               0.05, "the client to try to join")
    time.sleep(2.0)
    assert n.running(), ankusa.tail(n.logpath, 10)
    st = None
    try:
        st, _, _ = get(n.port, "/health", timeout=0.5, host=n.host)
    except OSError:
        pass
    assert st is None, "a node with no group answered /health %s" % st
    rc, dt = _stop(n, bound=3.0)
    note("a client whose peers are gone, waiting for them: exit %s in "
         "%.2f s" % (rc, dt))
    assert rc == 0, rc
    assert "stopping: SIGTERM while joining" in n.log_since_start()


def test_repl_stop_while_joining():
    """A node waiting to join its group (alone, without create; a client
    whose peers are gone) stops at once on SIGTERM or SIGINT, exit 0, and
    says why; SIGHUP does not kill it."""
    import repl
    repl.in_netns(_joining, timeout=100)


test_repl_stop_while_joining.timeout = 110

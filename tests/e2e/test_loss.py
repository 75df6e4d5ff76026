# SPDX-License-Identifier: ISC
"""The loss test: SIGKILL the master under load, restart, and find every
hook that was answered 201.  Zero tolerance.

Each round: start ankusad on the same data dir (the store accumulates), run
CLIENTS threads posting 1 KiB bodies over keep-alive connections as fast as
they can, recording every id answered 201; after a random 0.2-1.5 s SIGKILL
the master; the clients stop on their first error; check the edges left by
themselves; restart; `ankusactl -j queue` must list every recorded id.

ANKUSA_LOSS_ROUNDS (default 5) and ANKUSA_LOSS_CLIENTS (default 32) tune it.

test_loss_delivery_sigkill_master does the same with an http sink (the test
sink) and checks the other end: after the last restart, tick until
everything is settled; every id ever answered 201 must be in the sink's
record, answered 200, at least once.  Duplicates (an id delivered more than
once: at-least-once allows them, e.g. an attempt whose outcome the killed
master never wrote) are counted and printed, not failed.
"""

import os
import random
import re
import threading
import time

from ankusa import (Daemon, TestSink, _proc_children, dispatch_conf,
                    edge_alive, note, proc_alive, proc_comm, sink_source,
                    wait_until)
from faults import client as _client
from faults import report

ROUNDS = int(os.environ.get("ANKUSA_LOSS_ROUNDS", "5"))
CLIENTS = int(os.environ.get("ANKUSA_LOSS_CLIENTS", "32"))

# Lines that must not appear in the log of a start after a crash.
BAD_LOG = re.compile(r"panic|runrecovery|fatal|corrupt|damage|checksum|"
                     r"refus|cannot|error", re.I)
# The line every start logs to say which log checksum is in use.
CHECKSUM_LOG = re.compile(r"store: log checksums by logsum$")
# A failed attempt of the holding sink (its port refuses): the sink's
# trouble, not the recovery's (ankusad(8), DELIVERY LOG LINES).
ATTEMPT_LOG = re.compile(r": warning: hook=\S+ source=\S+ sink=\d+\(\w+\) "
                         r"attempt=\d+ status=(deferred|bounced|expired) ")


def test_loss_sigkill_master():
    d = Daemon(workers=2)
    rng = random.Random()
    all_acked = []
    summary = []
    d.start()
    for rnd in range(1, ROUNDS + 1):
        edges = d.edges()
        assert len(edges) == 2, "round %d: edges %r" % (rnd, edges)

        stop, lock = threading.Event(), threading.Lock()
        acked, other = [], []
        ths = [threading.Thread(target=_client,
                                args=(d.port, stop, acked, other, lock))
               for _ in range(CLIENTS)]
        for t in ths:
            t.start()
        delay = rng.uniform(0.2, 1.5)
        time.sleep(delay)
        d.kill9()
        t_kill = time.monotonic()
        for t in ths:
            t.join(40)
        stop.set()
        assert not any(t.is_alive() for t in ths), \
            "round %d: clients still running 40 s after the kill" % rnd

        # The edges of the killed master exit by themselves.
        wait_until(lambda: not any(edge_alive(e) for e in edges), 3, 0.05,
                   "round %d: edges %r to exit after the master's SIGKILL"
                   % (rnd, edges))
        t_edges = time.monotonic() - t_kill

        bad = [o for o in other if o[:2] != (503, "overload")]
        assert not bad, "round %d: answers other than 201: %r" % (rnd,
                                                                  bad[:5])
        assert len(set(acked)) == len(acked), "round %d: an id was " \
            "answered twice" % rnd
        assert acked, "round %d: no hook acknowledged in %.2fs" % (rnd,
                                                                   delay)

        d.start()
        text = d.log_since_start()
        bad = [l for l in text.splitlines()
               if BAD_LOG.search(l) and not CHECKSUM_LOG.search(l) and
               not ATTEMPT_LOG.search(l)]
        assert not bad, "round %d: recovery after SIGKILL logged:\n%s" % (
            rnd, "\n".join(bad[:10]))
        q = d.queue()
        ids = {h["id"] for h in q}
        seqs = [h["seq"] for h in q]
        assert len(ids) == len(q), "round %d: duplicate ids in queue" % rnd
        assert len(set(seqs)) == len(seqs), "round %d: a seq was reused" % (
            rnd)
        all_acked.extend(acked)
        missing = [i for i in all_acked if i not in ids]
        st = d.status()
        line = ("round %d: killed after %.2fs, %d acked (%d 503), %d stored "
                "in total, %d missing; edges gone in %.2fs" % (
                    rnd, delay, len(acked), len(other), len(ids),
                    len(missing), t_edges))
        summary.append(line)
        print("     " + line, flush=True)
        assert st["hooks"] == len(q), "round %d: status hooks %d but queue " \
            "lists %d" % (rnd, st["hooks"], len(q))
        assert len(missing) == 0, "round %d: %d acknowledged ids missing " \
            "after restart, e.g. %s" % (rnd, len(missing), missing[:3])
    # The daemon started after the last kill also stops cleanly.
    assert d.stop() == 0, "exit status after SIGTERM"
    note("loss: %d rounds, %d acknowledged, 0 missing" % (ROUNDS,
                                                         len(all_acked)))
    report("kill9_stored", ROUNDS, all_acked, missing)


test_loss_sigkill_master.timeout = 600


def _delivers(pid):
    return [p for p in _proc_children(pid)
            if proc_alive(p) and proc_comm(p) == "ankusa-deliver"]


def test_loss_delivery_sigkill_master():
    sink = TestSink().start()
    d = Daemon(workers=2, sources={
        "hot": sink_source([{"type": "http", "url": sink.url("/loss")}],
                           tenant="tl"),
    }, extra={"dispatch": dispatch_conf(breaker_failures=0)})
    rng = random.Random()
    all_acked = []
    d.start()
    for rnd in range(1, ROUNDS + 1):
        delivers = _delivers(d.pid)
        assert delivers, "round %d: no deliver process" % rnd
        stop, lock = threading.Event(), threading.Lock()
        acked, other = [], []
        ths = [threading.Thread(target=_client,
                                args=(d.port, stop, acked, other, lock,
                                      "/webhooks/hot"))
               for _ in range(CLIENTS)]
        for t in ths:
            t.start()
        delay = rng.uniform(0.3, 2.0)
        time.sleep(delay)
        got_before = sink.received("/loss")
        d.kill9()
        for t in ths:
            t.join(40)
        stop.set()
        assert not any(t.is_alive() for t in ths), \
            "round %d: clients still running 40 s after the kill" % rnd
        # The deliver processes leave by themselves too.
        wait_until(lambda: not any(proc_alive(p) and
                                   proc_comm(p) == "ankusa-deliver"
                                   for p in delivers), 5, 0.05,
                   "round %d: deliver processes to exit after the master's "
                   "SIGKILL" % rnd)
        bad = [o for o in other if o[:2] != (503, "overload")]
        assert not bad, "round %d: answers other than 201: %r" % (rnd,
                                                                  bad[:5])
        assert acked, "round %d: no hook acknowledged in %.2fs" % (rnd,
                                                                   delay)
        all_acked.extend(acked)
        d.start()
        line = ("round %d: killed after %.2fs, %d acked, %d deliveries "
                "seen before the kill" % (rnd, delay, len(acked),
                                          got_before))
        print("     " + line, flush=True)
    # Settle everything, then look at the sink's record.
    st = d.settle_all(300, "settled after the last restart")
    assert st["dead"] == 0, "dead-lettered rows: %r" % d.dlq()[:3]
    counts = {}
    for r in sink.records("/loss"):
        if r["status"] == 200:
            counts[r["x-ankusa-id"]] = counts.get(r["x-ankusa-id"], 0) + 1
    acked_set = set(all_acked)
    missing = [i for i in all_acked if i not in counts]
    unknown = [i for i in counts if i not in acked_set]
    dups = {i: n for i, n in counts.items() if n > 1}
    extra = sum(n - 1 for n in dups.values())
    msg = ("delivery loss: %d rounds, %d acknowledged, %d delivered ids, "
           "%d missing, %d ids delivered more than once (%d extra "
           "deliveries, max %d), %d delivered ids never acknowledged" % (
               ROUNDS, len(acked_set), len(counts), len(missing),
               len(dups), extra, max(dups.values()) if dups else 1,
               len(unknown)))
    print("     " + msg, flush=True)
    note(msg)
    report("kill9_delivered", ROUNDS, all_acked, missing, extra)
    assert len(acked_set) == len(all_acked), "an id was answered twice"
    assert not missing, "%d acknowledged ids never delivered, e.g. %s" % (
        len(missing), missing[:3])
    assert d.stop() == 0, "exit status after SIGTERM"


test_loss_delivery_sigkill_master.timeout = 900

# SPDX-License-Identifier: ISC
"""A failed sync of a table file is as fatal as a failed log flush
(docs/DEPARTURES 12): the first fdatasync of rows.db or hooks.db fails
with EIO (strace's fault injection, the master alone, after the start), at
the minute's checkpoint (here every 4 s: ANKUSA_CHECKPOINT_MS) or at the
close of a drain.  The daemon must exit 1, answer nothing 201 after the
failure, keep every log file, and after a restart hold and deliver every
hook it answered 201.  Linux may drop the pages whose write-back failed
and reports that once, so the next sync "succeeds"; under strace the
pages did reach the disk, so what the restart finds is only what the
daemon kept.

Skipped only when strace is missing or cannot attach (ptrace not
permitted); scripts/test installs strace.
"""

import glob
import http.client
import os
import subprocess
import threading
import time

from ankusa import (Daemon, TestSink, dispatch_conf, expect_accepted,
                    jbody, note, post, sink_source, tail, tmpdir,
                    wait_until)
from faults import data_path, inject_eio, report, stop_tracer
from faults import injected as _injected

BIG = b"b" * 700000             # in bodies.db (up to 1 MiB), 60 fill a log file
HELD_RETRY = {"base_ms": 1000, "max_ms": 1000}


def _sources(sink):
    return {
        "held": sink_source([{"type": "http", "url": sink.url("/held")}],
                            tenant="th", retry=HELD_RETRY),
        "gone": sink_source([{"type": "http", "url": sink.url("/gone")}],
                            tenant="tg"),
    }


def _daemon(sink, **kw):
    return Daemon(sources=_sources(sink), max_body=1000000,
                  extra={"dispatch": dispatch_conf(breaker_failures=0)},
                  **kw).start()


def _inject(d, trace):
    """strace on the master: the first fsync and the first fdatasync of
    rows.db or hooks.db fail with EIO.  Skip if strace cannot attach."""
    return inject_eio(d.pid, ["fsync", "fdatasync"],
                      [data_path(d, "rows.db"), data_path(d, "hooks.db")],
                      trace)


def _logs(d):
    return sorted(os.path.basename(p)
                  for p in glob.glob(os.path.join(d.data_dir, "log.*")))


class _Poster(threading.Thread):
    """Posts small hooks to "held" until stopped or the daemon is gone:
    the 201s, and every other answer."""

    def __init__(self, d):
        super().__init__(daemon=True)
        self.d, self.stop, self.acked, self.other = d, threading.Event(), \
            [], []

    def run(self):
        i = 0
        while not self.stop.is_set():
            i += 1
            try:
                st, h, data = post(self.d.port, "/webhooks/held",
                                   b'{"p":%d}' % i, timeout=10)
            except (OSError, http.client.HTTPException):
                self.other.append("closed")
                return
            if st == 201:
                self.acked.append(expect_accepted(st, h, data))
            else:
                self.other.append((st, jbody(data).get("error")))
            time.sleep(0.01)


def _after_restart(d, sink, acked, what):
    """Every id answered 201 is stored after the restart, and delivered."""
    d.start()
    q = {h["id"] for h in d.queue()}
    missing = [i for i in acked if i not in q]
    assert not missing, "%s: %d of %d acknowledged hooks missing after " \
        "the restart, e.g. %s" % (what, len(missing), len(acked),
                                  missing[:3])
    sink.mode("/held", status=200)
    want = set(acked)
    wait_until(lambda: want <= set(sink.ids("/held", status=200)), 20,
               0.1, "%s: the %d acknowledged hooks delivered after the "
               "restart" % (what, len(want)))
    assert d.stop() == 0, "exit status of the restarted daemon"


def test_checkpoint_fsync_eio_fatal():
    """The checkpoint's sync of a table fails (EIO): ankusad answers what
    waits 503 and exits 1 without a checkpoint or log removal after it
    (before the fix it logged "failed to flush the buffer cache", went
    on, and its next checkpoint removed log files)."""
    sink = TestSink().start()
    sink.mode("/held", status=503)
    d = _daemon(sink, checkpoint_ms=4000)
    # A log file full of bodies that nothing needs once delivered: a
    # checkpoint after the failure could remove it.
    gone = [expect_accepted(*post(d.port, "/webhooks/gone", BIG,
                                  timeout=30)) for _ in range(60)]
    acked = [expect_accepted(*post(d.port, "/webhooks/held",
                                   b'{"n":%d}' % i)) for i in range(100)]
    want = set(gone)
    wait_until(lambda: want <= set(sink.ids("/gone", status=200)), 20,
               0.1, "the big hooks delivered")
    trace = os.path.join(tmpdir(), "strace.out")
    s = _inject(d, trace)
    logs = _logs(d)
    poster = _Poster(d)
    poster.start()
    try:
        try:
            rc = d.proc.wait(15)
        except subprocess.TimeoutExpired:
            rc = None
    finally:
        poster.stop.set()
        poster.join(15)
        stop_tracer(s)
    injected = _injected(trace)
    assert injected, "no fsync/fdatasync of rows.db or hooks.db was made " \
        "(none injected) in 15 s of checkpoints every 4 s"
    kept = _logs(d)
    assert set(logs) <= set(kept), "log files removed after the failed " \
        "checkpoint: %s before, %s after (%s)" % (logs, kept, injected)
    assert rc == 1, "ankusad exit %r after the checkpoint's table sync " \
        "failed (%s), not 1; log:\n%s" % (rc, injected,
                                           tail(d.logpath, 15))
    bad = [o for o in poster.other
           if o not in ("closed", (503, "store_unavailable"))]
    assert not bad, "answers other than 201, 503 store_unavailable or a " \
        "closed connection: %r" % bad[:5]
    line = [ln for ln in tail(d.logpath, 200).splitlines()
            if "stopping: the store must be recovered" in ln]
    assert line and "checkpoint" in line[0] and "fdatasync" in line[0], \
        tail(d.logpath, 20)
    acked += poster.acked
    _after_restart(d, sink, acked, "checkpoint")
    report("eio_table_fsync_checkpoint", 1, acked, [])
    note("checkpoint sync EIO (%s): exit 1, %d log files kept, %d "
         "acknowledged hooks delivered after the restart; the poster's "
         "other answers %r" % (injected[0].split("(")[0], len(kept),
                               len(acked), sorted(set(map(str, poster.other)))))


test_checkpoint_fsync_eio_fatal.timeout = 90


def test_close_fsync_eio_exit_nonzero():
    """The sync of a table at the close of a drain fails (EIO): ankusad
    exits 1, not 0, keeping every log file (before the fix it logged the
    checkpoint's failure, closed the tables, whose second sync
    "succeeded", and exited 0)."""
    sink = TestSink().start()
    sink.mode("/held", status=503)
    d = _daemon(sink)
    acked = [expect_accepted(*post(d.port, "/webhooks/held",
                                   b'{"n":%d}' % i)) for i in range(200)]
    trace = os.path.join(tmpdir(), "strace.out")
    s = _inject(d, trace)
    logs = _logs(d)
    try:
        d.ctl("drain", check=False)
        try:
            rc = d.proc.wait(30)
        except subprocess.TimeoutExpired:
            rc = None
    finally:
        stop_tracer(s)
    injected = _injected(trace)
    assert injected, "no fsync/fdatasync of rows.db or hooks.db at the " \
        "close (none injected)"
    assert rc == 1, "ankusad exit %r after a drain whose close failed to " \
        "sync a table (%s), not 1; log:\n%s" % (rc, injected,
                                                 tail(d.logpath, 15))
    kept = _logs(d)
    assert set(logs) <= set(kept), "log files removed at the failed " \
        "close: %s before, %s after" % (logs, kept)
    _after_restart(d, sink, acked, "close")
    report("eio_table_fsync_close", 1, acked, [])
    note("close sync EIO (%s): exit 1, log files kept, %d acknowledged "
         "hooks delivered after the restart" % (
             injected[0].split("(")[0], len(acked)))


test_close_fsync_eio_exit_nonzero.timeout = 90

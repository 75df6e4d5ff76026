# SPDX-License-Identifier: ISC
"""Online backup (ankusactl backup DIR, daemon/admin/admin_backup.c,
store_backup.c).

A backup taken while a loopback client posts hooks is copied and started
as the node.data_dir of a second daemon, whose sink is a loopback test
sink: every hook answered 201 before the backup began reaches it with its
body, and nothing it delivers was never posted.  The refusals: a directory
that is not empty (nothing written), a second backup while one runs.  A
backup interrupted by SIGKILL of the master leaves its marker, and ankusad
refuses to start on a copy of what it left; a drain or SIGTERM during a
backup, or its caller going away, cancels it and removes what it wrote.

ANKUSA_BACKUP_PACE_MS (the daemon's test seam) makes a backup pause after
each megabyte it writes, so that the cases that act during one find it
running.
"""

import hashlib
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import threading
import time

from ankusa import (HOLD_SINK, Daemon, TestSink, binary, dispatch_conf,
                    expect_accepted, note, post, sink_source, tmpdir,
                    wait_until)

MARKER = "ankusa-backup-incomplete"
# Rows of the first daemon stay pending (their sink refuses the
# connection) but come due soon, so that a daemon started on the copy
# delivers them at once.
HOLD_RETRY = {"base_ms": 200, "max_ms": 500, "jitter": False,
              "max_attempts": 1000000}
FAST_RETRY = {"base_ms": 50, "max_ms": 200, "jitter": False}


class PacedDaemon(Daemon):
    def __init__(self, pace_ms=0, **kw):
        self.pace_ms = pace_ms
        super().__init__(**kw)

    def env(self):
        e = super().env()
        if self.pace_ms:
            e["ANKUSA_BACKUP_PACE_MS"] = str(self.pace_ms)
        return e


def holding(pace_ms=0, name="d"):
    # A breaker that opens for a second only: the rows it parks are due
    # again soon, in the copy too.
    return PacedDaemon(pace_ms=pace_ms, name=name, workers=2, sources={
        "github": sink_source([dict(HOLD_SINK)], retry=dict(HOLD_RETRY))},
        extra={"dispatch": dispatch_conf(breaker_open_ms=1000,
                                         breaker_max_open_ms=1000)})


def body_of(rng):
    n = rng.choice([0, 40, 300, 2000, 5000, 20000, 200000])
    return bytes(rng.getrandbits(8) for _ in range(min(n, 2000))) * \
        max(1, n // 2000)


def post_many(d, bodies):
    """{id: body} of bodies posted one after another."""
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    got = {}
    try:
        for b in bodies:
            st, h, data = post(d.port, "/webhooks/github", b, conn=c,
                               headers={"Content-Type":
                                        "application/octet-stream"})
            got[expect_accepted(st, h, data)] = b
    finally:
        c.close()
    return got


class Load(threading.Thread):
    """Posts hooks until stopped; keeps (id, body, monotonic time of the
    201) for each."""

    def __init__(self, d, seed):
        super().__init__(daemon=True)
        self.d, self.rng = d, random.Random(seed)
        self.stop_ev = threading.Event()
        self.acked, self.errors = [], []
        self.took = []          # (time of the 201, seconds it took)

    def run(self):
        c = http.client.HTTPConnection("127.0.0.1", self.d.port, timeout=30)
        try:
            while not self.stop_ev.is_set():
                b = body_of(self.rng)
                t = time.monotonic()
                st, h, data = post(self.d.port, "/webhooks/github", b,
                                   conn=c, headers={
                                       "Content-Type":
                                       "application/octet-stream"})
                now = time.monotonic()
                if st == 201:
                    self.acked.append((expect_accepted(st, h, data), b,
                                       now))
                    self.took.append((now, now - t))
                else:
                    self.errors.append((st, data[:200]))
        except Exception as e:          # noqa: BLE001
            self.errors.append(repr(e))
        finally:
            c.close()

    def stop(self):
        self.stop_ev.set()
        self.join(30)


class Backup:
    """ankusactl -j backup DIR, running; its lines as they come."""

    def __init__(self, d, dest):
        self.proc = subprocess.Popen(
            [binary("ankusactl"), "-s", d.sock, "-j", "backup", dest],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        self.lines = []

    def first(self):
        """The first progress object: the backup runs."""
        line = self.proc.stdout.readline()
        assert line, "ankusactl backup ended before any progress: %s" % (
            self.proc.stderr.read().decode("utf-8", "replace"))
        o = json.loads(line)
        self.lines.append(o)
        return o

    def wait(self, timeout=120):
        out, err = self.proc.communicate(timeout=timeout)
        self.lines += [json.loads(l) for l in out.decode().splitlines()
                       if l.strip()]
        return self.proc.returncode, err.decode("utf-8", "replace")


def delivered(sink):
    """id -> the sink's record of its first 2xx."""
    out = {}
    for r in sink.records("/in"):
        if 200 <= r["status"] < 300:
            out.setdefault(r["x-ankusa-id"], r)
    return out


def restored(data_dir, sink, name="r"):
    return Daemon(name=name, data_dir=data_dir, workers=1, sources={
        "github": sink_source([{"type": "http", "url": sink.url("/in")}],
                              retry=dict(FAST_RETRY))},
        extra={"dispatch": dispatch_conf()}).start()


def test_backup_under_load_restores():
    """A backup taken while a client posts: restored as the data dir of a
    second daemon, every hook answered 201 before it began is delivered
    from it with its body; no delivered hook is one never posted."""
    rng = random.Random(23)
    d = holding(pace_ms=20).start()
    before = post_many(d, [body_of(rng) for _ in range(300)])
    load = Load(d, 5)
    load.start()
    wait_until(lambda: len(load.acked) >= 300, 20, 0.02, "the load to run")
    n_before = len(load.acked)
    for i, b, _ in load.acked[:n_before]:
        before[i] = b
    dest = os.path.join(tmpdir(), "backup")
    t0 = time.monotonic()
    bk = Backup(d, dest)
    rc, err = bk.wait()
    t1 = time.monotonic()
    load.stop()
    assert rc == 0, "backup: exit %d: %s" % (rc, err)
    assert not load.errors, "the load got %r" % load.errors[:3]
    end = bk.lines[-1]
    assert end.get("result") == "backed_up" and end["bytes"] > 0 and \
        end["files"] >= 13, "backup's last line %r" % end
    # Progress comes in phase order (the loop may see a phase's steps
    # together, or not at all).
    order = ["start", "tables", "logs", "recovery", "sync"]
    phases = [o.get("phase") for o in bk.lines[:-1]]
    assert phases and all(p in order for p in phases) and \
        phases == sorted(phases, key=order.index), \
        "progress phases %r" % phases
    # Answered 201 after the backup's start: may be in the copy or not.
    during = {i: b for i, b, t in load.acked[n_before:]}
    for i, b, t in load.acked[n_before:]:
        if t < t0:
            before[i] = b
    n_during = sum(1 for _, _, t in load.acked if t0 <= t <= t1)
    assert n_during > 0, "no hook was answered while the backup ran"
    assert MARKER not in os.listdir(dest)
    assert d.stop() == 0
    # The lock file in the data directory is no table: nothing to say.
    assert "unexpected file type" not in d.log_text(), \
        [x for x in d.log_text().splitlines() if "unexpected" in x][:2]

    copy = os.path.join(tmpdir(), "copy")
    shutil.copytree(dest, copy)
    s = TestSink().start()
    r = restored(copy, s)
    r.tick(60)
    wait_until(lambda: set(before) <= set(delivered(s)), 60, 0.1,
               "every hook answered before the backup to be delivered")
    got = delivered(s)
    posted = dict(before)
    posted.update(during)
    unknown = set(got) - set(posted)
    assert not unknown, "delivered ids never posted: %s" % sorted(
        unknown)[:3]
    for i, rec in got.items():
        b = posted[i]
        assert rec["size"] == len(b) and \
            rec["sha256"] == hashlib.sha256(b).hexdigest(), \
            "hook %s: delivered %d bytes %s, posted %d bytes" % (
                i, rec["size"], rec["sha256"], len(b))
    lat = sorted(x for t, x in load.took if t0 <= t <= t1)
    lat0 = sorted(x for t, x in load.took if t < t0)
    note("%d hooks before, %d answered during the backup (%d of them "
         "in the copy), %.1f MiB in %.2f s; 201s during it: median "
         "%.1f ms, max %.1f ms (before it: %.1f, %.1f)" % (
             len(before), n_during, len(set(got) - set(before)),
             end["bytes"] / 1048576.0, t1 - t0,
             lat[len(lat) // 2] * 1000, lat[-1] * 1000,
             lat0[len(lat0) // 2] * 1000, lat0[-1] * 1000))


def test_backup_refuses_nonempty_dir():
    """A directory that is not empty is refused, and nothing is written
    into it."""
    d = holding().start()
    post_many(d, [b'{"n":%d}' % i for i in range(5)])
    dest = os.path.join(tmpdir(), "full")
    os.makedirs(dest)
    with open(os.path.join(dest, "keep"), "w") as f:
        f.write("mine\n")
    rc, out, err = d.ctl("backup", dest, check=False)
    assert rc == 1 and "not empty" in err, (rc, out, err)
    assert os.listdir(dest) == ["keep"], os.listdir(dest)
    rc, out, err = d.ctl("backup", os.path.join(dest, "keep"), check=False)
    assert rc == 1, (rc, out, err)
    assert os.listdir(dest) == ["keep"], os.listdir(dest)


def test_backup_sigkill_leaves_marker():
    """SIGKILL of the master during a backup leaves the marker in what was
    written; ankusad refuses to start on a copy of it and says why, and the
    store itself starts and holds its hooks."""
    d = holding(pace_ms=100).start()
    ids = post_many(d, [b'{"n":%d}' % i for i in range(20)])
    dest = os.path.join(tmpdir(), "killed")
    bk = Backup(d, dest)
    bk.first()
    d.kill9()
    bk.wait()
    assert MARKER in os.listdir(dest), os.listdir(dest)
    copy = os.path.join(tmpdir(), "copy")
    shutil.copytree(dest, copy)
    r = Daemon(name="r", data_dir=copy, workers=1)
    p = r.spawn()
    rc = p.wait(30)
    log = r.log_text()
    assert rc != 0, "ankusad started on an unfinished backup"
    assert MARKER in log and "did not finish" in log, log[-1000:]
    d.start()
    held = {h["id"] for h in d.queue()}
    assert set(ids) <= held, "hooks lost by the killed backup"


def test_backup_one_at_a_time():
    """A second backup while one runs is refused and writes nothing; the
    first completes."""
    d = holding(pace_ms=50).start()
    post_many(d, [b'{"n":%d}' % i for i in range(20)])
    one = os.path.join(tmpdir(), "one")
    two = os.path.join(tmpdir(), "two")
    bk = Backup(d, one)
    bk.first()
    rc, out, err = d.ctl("backup", two, check=False)
    assert rc == 1 and "already" in err, (rc, out, err)
    assert not os.path.exists(two)
    rc, err = bk.wait()
    assert rc == 0, "first backup: exit %d: %s" % (rc, err)
    assert MARKER not in os.listdir(one)


def cancelled_by_stop(stop):
    """stop(d) during a backup cancels it: the backup's caller is told,
    what it wrote is gone, the daemon stops cleanly, and its store starts
    again with its hooks."""
    d = holding(pace_ms=100).start()
    ids = post_many(d, [b'{"n":%d}' % i for i in range(20)])
    dest = os.path.join(tmpdir(), "stopped")
    bk = Backup(d, dest)
    bk.first()
    stop(d)
    rc, err = bk.wait()
    assert rc == 1 and "cancelled" in err and "stopping" in err, (rc, err)
    assert not os.path.exists(dest), os.listdir(dest)
    assert d.proc.wait(30) == 0
    d.start()
    assert set(ids) <= {h["id"] for h in d.queue()}


def test_backup_cancelled_by_drain():
    """A drain during a backup cancels it (cancelled_by_stop)."""
    def drain(d):
        rc, out, err = d.ctl("drain", "60", check=False, timeout=90)
        assert rc == 0, (rc, out, err)
    cancelled_by_stop(drain)


def test_backup_cancelled_by_sigterm():
    """SIGTERM during a backup cancels it (cancelled_by_stop)."""
    cancelled_by_stop(lambda d: d.signal(signal.SIGTERM))


def test_backup_cancelled_when_caller_leaves():
    """ankusactl backup interrupted (its connection closed) cancels the
    backup: what it wrote is removed, the daemon goes on, and the next
    backup completes."""
    d = holding(pace_ms=100).start()
    post_many(d, [b'{"n":%d}' % i for i in range(20)])
    dest = os.path.join(tmpdir(), "left")
    bk = Backup(d, dest)
    bk.first()
    bk.proc.kill()
    bk.proc.wait(10)
    wait_until(lambda: "its caller went away" in d.log_since_start(), 30,
               0.05, "the backup to be cancelled")
    assert not os.path.exists(dest), os.listdir(dest)
    rc, out, err = d.ctl("backup", dest, check=False, timeout=120)
    assert rc == 0 and "backed up" in out, (rc, out, err)


def test_backup_second_request_on_its_connection_ignored():
    """A request sent on a connection whose backup is still answering is
    ignored: the connection carries the backup's answer to its end (before,
    the second answer ended it and freed the connection the backup would
    answer on)."""
    import socket
    d = holding(pace_ms=50).start()
    post_many(d, [b'{"n":%d}' % i for i in range(5)])
    dest = os.path.join(tmpdir(), "two-requests")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(d.sock)
    f = s.makefile("rwb")
    f.write(json.dumps({"cmd": "backup", "dir": dest}).encode() + b"\n")
    f.flush()
    first = json.loads(f.readline())
    assert "phase" in first, first
    f.write(b'{"cmd":"status"}\n')
    f.flush()
    last = first
    for line in f:
        last = json.loads(line)
        if last.get("end"):
            break
    s.close()
    assert last.get("result") == "backed_up", last
    assert d.running()
    d.status()

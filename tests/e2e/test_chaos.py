# SPDX-License-Identifier: ISC
"""Faults survived, nothing acknowledged lost (issue 25, section 5): the
short versions that scripts/test runs; scripts/chaos runs them again with
more rounds (ANKUSA_CHAOS_ROUNDS, default 1) and reads the line each case
ends with (faults.report): rounds, hooks acknowledged, lost, duplicated.

Each case ends with the check that every hook answered 201 is delivered
or still stored.  The kill -9 case is test_loss (ANKUSA_LOSS_ROUNDS), the
tables' fsync EIO test_fsync; the slow and abusive clients test_limits.

- disk full: the data directory on a small tmpfs, filled by a filler file
  under load: ingest answers 503 store_unavailable with Retry-After: 1,
  the daemon keeps running and accepts again within seconds of the file's
  removal; a restart on the full disk recovers or refuses with a message.
- EIO on the log's fsync under load, on a body read and on a page read
  (strace's fault injection into the master).
- a clock step of +-1 h (libfaketime) while rows back off.
- sinks that answer 10 MB, invalid UTF-8, a 3xx loop, or never close.

Needs root for the tmpfs, strace for EIO, libfaketime for the clock
(scripts/test installs strace and faketime): each skips without.
"""

import errno
import http.client
import os
import select
import subprocess
import threading
import time

import ankusa
from ankusa import (Daemon, Skip, TestSink, dispatch_conf, expect_accepted,
                    get, note, post, register, sink_source, tail, tmpdir,
                    wait_until)
from faults import (Load, data_path, duplicated, inject_eio, lost_ids, report,
                    rss_kib, stop_tracer)
from faults import injected as _injected

ROUNDS = int(os.environ.get("ANKUSA_CHAOS_ROUNDS", "1"))
HELD_RETRY = {"base_ms": 1000, "max_ms": 1000, "jitter": False}


# ---------------------------------------------------------------- disk full

def _mount_tmpfs(size):
    if os.geteuid() != 0:
        raise Skip("not root: cannot mount a tmpfs for the data directory")
    mnt = tmpdir("mnt")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" %
                        size, "tmpfs", mnt], capture_output=True)
    if r.returncode != 0:
        raise Skip("mount -t tmpfs failed: %s" % r.stderr.decode().strip())
    # The mount's root is root's: the daemon, run as its node.user, makes
    # its data directory in it.
    ankusa.give_to_daemon_user(mnt)
    return mnt


def _umount(mnt, *procs):
    for p in procs:
        p.destroy()
    subprocess.run(["umount", "-l", mnt], capture_output=True)


def _fill(path):
    """Write a filler file until the file system is full; its size."""
    chunk = b"\0" * (1 << 20)
    n = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while True:
            try:
                n += os.write(fd, chunk)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                chunk = chunk[:len(chunk) // 2]
                if len(chunk) < 512:
                    break
    finally:
        os.close(fd)
    return n


def _log_files(d):
    return sum(1 for f in os.listdir(os.path.realpath(d.data_dir))
               if f.startswith("log."))


def _refusals(loads):
    """Every answer of the loads other than 201."""
    out = []
    for ld in loads:
        with ld.lock:
            out.extend(ld.other)
    return out


def _disk_full_round(d, sink, mnt, rnd):
    live = Load(d.port, "/webhooks/live", clients=3, pause=0.005).start()
    held = Load(d.port, "/webhooks/held", clients=3, pause=0.005).start()
    loads = (live, held)
    try:
        wait_until(lambda: live.count() > 50 and held.count() > 50, 15,
                   0.05, "round %d: hooks acknowledged before the fill" %
                   rnd)
        filler = os.path.join(mnt, "filler")
        _fill(filler)
        wait_until(lambda: any(o[:2] == (503, "store_unavailable")
                               for o in _refusals(loads)), 30, 0.05,
                   "round %d: 503 store_unavailable on the full disk" % rnd)
        # Two seconds of refusals: the settles fail too, and no row may be
        # attempted more often than its backoff (1 s) allows.
        t_full = time.time() * 1000
        lines0 = d.log_text().count("\n")
        time.sleep(2.0)
        flood = d.log_text().count("\n") - lines0
        assert flood < 200, "round %d: %d log lines in 2 s on the full " \
            "disk" % (rnd, flood)
        tries = {}
        for r in sink.records("/held"):
            if r["t"] >= t_full:
                i = r["x-ankusa-id"]
                tries[i] = tries.get(i, 0) + 1
        storm = max(tries.values()) if tries else 0
        assert storm <= 4, "round %d: a held row attempted %d times in 2 s " \
            "on the full disk (backoff 1 s)" % (rnd, storm)
        assert d.running(), "round %d: ankusad exited on the full disk; " \
            "log:\n%s" % (rnd, tail(d.logpath, 15))
        st, _, _ = get(d.port, "/health", timeout=5)
        assert st == 200, "round %d: /health %d on the full disk" % (rnd,
                                                                      st)
        d.status()
        bad = [o for o in _refusals(loads)
               if o != (503, "store_unavailable", "1") and
               o[:2] != (503, "overload")]
        assert not bad, "round %d: answers on the full disk other than 201 " \
            "and 503 store_unavailable with Retry-After: 1: %r" % (rnd,
                                                                   bad[:5])
        n_before = live.count() + held.count()
        os.unlink(filler)
        t0 = time.monotonic()
        wait_until(lambda: live.count() + held.count() > n_before + 20, 10,
                   0.02, "round %d: 201s again within 10 s of the space "
                   "returning" % rnd)
        back = time.monotonic() - t0
        # The log files the full disk kept (no checkpoint could write its
        # pages) go at the next checkpoint once there is room: the next
        # fill starts without them, or rounds of them fill the mount.
        wait_until(lambda: _log_files(d) <= 2, 30, 0.2,
                   "round %d: the log files before the last checkpoint "
                   "removed once the space returned" % rnd)
        # Full again, then a restart on the full disk.
        _fill(filler)
        wait_until(lambda: len(_refusals(loads)) > 0 and
                   _refusals(loads)[-1][:2] == (503, "store_unavailable"),
                   30, 0.05, "round %d: 503 on the second fill" % rnd)
    finally:
        for ld in loads:
            ld.finish()
    d.kill9()
    d.spawn()
    try:
        d.wait_ready(20)
        restart = "recovered on the full disk"
    except AssertionError:
        rc = d.proc.wait(10)
        text = d.log_since_start()
        assert rc != 0 and "No space left on device" in text, \
            "round %d: a start on the full disk neither recovered nor " \
            "refused with a message (exit %r):\n%s" % (rnd, rc,
                                                       text[-1500:])
        restart = "refused on the full disk (exit %d)" % rc
        os.unlink(filler)
        d.start()
    else:
        os.unlink(filler)
    acked = live.acked + held.acked
    return acked, live.acked, back, restart


def test_chaos_disk_full():
    """The data directory on a 64 MiB tmpfs that a filler file fills
    under load (a delivering source and one whose sink answers 503)."""
    mnt = _mount_tmpfs("160m")
    sink = TestSink().start()
    sink.mode("/held", status=503)
    d = Daemon(data_dir=os.path.join(mnt, "data"), sources={
        "live": sink_source([{"type": "http", "url": sink.url("/live")}],
                            tenant="tl"),
        "held": sink_source([{"type": "http", "url": sink.url("/held")}],
                            tenant="th", retry=HELD_RETRY),
    }, extra={"dispatch": dispatch_conf(breaker_failures=0)},
        checkpoint_ms=2000)
    acked, live_acked, notes = [], [], []
    try:
        d.start()
        for rnd in range(1, ROUNDS + 1):
            a, la, back, restart = _disk_full_round(d, sink, mnt, rnd)
            acked += a
            live_acked += la
            notes.append("round %d: accepting again %.2f s after the space "
                         "returned, %s" % (rnd, back, restart))
            lost = lost_ids(d, acked, sink, "/live")
            assert not lost, "round %d: %d of %d acknowledged hooks lost, " \
                "e.g. %s" % (rnd, len(lost), len(acked), lost[:3])
        want = set(live_acked)
        wait_until(lambda: want <= set(sink.ids("/live", status=200)), 60,
                   0.2, "every acknowledged hook of the live source "
                   "delivered")
        lost = lost_ids(d, acked, sink, "/live")
        assert d.stop() == 0, "exit status after SIGTERM"
    finally:
        _umount(mnt, d)
    for n in notes:
        note(n)
    report("disk_full", ROUNDS, acked, lost, duplicated(sink, "/live"))
    assert not lost


test_chaos_disk_full.timeout = 120 + 60 * ROUNDS


# ---------------------------------------------------------------- EIO

def test_chaos_eio_log_fsync():
    """The log's fdatasync fails (EIO) under load: the daemon answers
    what waits 503 and exits 1 (docs/DEPARTURES 12); the restart keeps
    every hook answered 201."""
    d = Daemon(workers=2).start()
    acked = []
    for rnd in range(1, ROUNDS + 1):
        load = Load(d.port, clients=8).start()
        wait_until(lambda: load.count() > 200, 15, 0.02,
                   "round %d: hooks acknowledged before the fault" % rnd)
        data = os.path.realpath(d.data_dir)
        first = min(int(f[4:]) for f in os.listdir(data)
                    if f.startswith("log."))
        logs = [os.path.join(data, "log.%010d" % n)
                for n in range(first, first + 4)]
        trace = os.path.join(tmpdir(), "strace-%d.out" % rnd)
        s = inject_eio(d.pid, ["fdatasync", "fsync"], logs, trace)
        try:
            try:
                rc = d.proc.wait(15)
            except subprocess.TimeoutExpired:
                rc = None
        finally:
            load.finish()
            stop_tracer(s)
        assert _injected(trace), "round %d: no sync of the log made " \
            "(none injected)" % rnd
        assert rc == 1, "round %d: exit %r after the log's sync failed; " \
            "log:\n%s" % (rnd, rc, tail(d.logpath, 15))
        bad = [o for o in load.other
               if o != (503, "store_unavailable", "1")]
        assert not bad, "round %d: answers other than 201 and 503 " \
            "store_unavailable: %r" % (rnd, bad[:5])
        acked += load.acked
        d.start()
        lost = lost_ids(d, acked)
        assert not lost, "round %d: %d of %d acknowledged hooks lost after " \
            "the restart, e.g. %s" % (rnd, len(lost), len(acked), lost[:3])
    assert d.stop() == 0, "exit status after SIGTERM"
    report("eio_log_fsync", ROUNDS, acked, lost)


test_chaos_eio_log_fsync.timeout = 60 + 40 * ROUNDS


# In bodies.db (DEPARTURES 29), one to its 32 KiB page.
BODY20K = b'{"pad":"' + b"r" * 20470 + b'"}'


def _eio_read(table, case, body, n):
    """n hooks of a source with two sinks, both paused, the daemon
    restarted (a cold cache), every read of table failing with EIO while
    the first sink is resumed: the attempts whose hook cannot be read
    fail, and no breaker opens (breaker_failures 3: the sink answers 200,
    so only the store's errors fail an attempt); the daemon goes on or
    stops as docs/DEPARTURES says.  The second sink keeps each hook alive,
    so no delivery deletes a body (a delete whose page cannot be read
    aborts, and the abort's undo panics the store).  Once the reads
    succeed again (or after a restart) the first sink is resumed, and
    every hook is delivered to both."""
    sink = TestSink().start()
    d = Daemon(sources={
        "b": sink_source([{"type": "http", "url": sink.url("/b")},
                          {"type": "http", "url": sink.url("/c")}],
                         tenant="tb", retry=HELD_RETRY),
    }, extra={"dispatch": dispatch_conf(breaker_failures=3)}).start()
    d.ctl("pause", "b#0")
    d.ctl("pause", "b#1")
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    acked = [expect_accepted(*post(d.port, "/webhooks/b", body, conn=c))
             for _ in range(n)]
    c.close()
    assert d.stop() == 0
    d.start()
    trace = os.path.join(tmpdir(), "strace.out")
    s = inject_eio(d.pid, ["pread64", "read"], [data_path(d, table)], trace,
                   when="1+")
    try:
        d.ctl("resume", "b#0")
        wait_until(lambda: _injected(trace) or not d.running(), 10, 0.05,
                   "a read of %s (none injected)" % table)
        time.sleep(3.0)                 # three backoffs of 1 s
        running = d.running()
        opened = [b for b in (d.breakers() if running else [])
                  if b.get("state") != "closed"]
    finally:
        stop_tracer(s)
    n_inj = len(_injected(trace))
    log = d.log_text()
    assert "breaker open" not in log and not opened, \
        "%s: a breaker opened on unreadable %s: %r\n%s" % (
            case, table, opened, tail(d.logpath, 20))
    if running:
        what = "went on"
    else:
        what = "exited %r" % d.proc.returncode
        d.start()
    d.ctl("resume", "b#1")
    want = set(acked)
    for path in ("/b", "/c"):
        wait_until(lambda: want <= set(sink.ids(path, status=200)), 30,
                   0.1, "%s: every hook delivered to %s once %s reads "
                   "again" % (case, path, table))
    lost = lost_ids(d, acked, sink, "/c")
    assert d.stop() == 0, "exit status after SIGTERM"
    note("%s: %d reads of %s failed; the daemon %s" % (case, n_inj, table,
                                                       what))
    report(case, 1, acked, lost, duplicated(sink, "/b") +
           duplicated(sink, "/c"))
    assert not lost


def test_chaos_eio_body_read():
    _eio_read("bodies.db", "eio_body_read", BODY20K, 40)


test_chaos_eio_body_read.timeout = 90


def test_chaos_eio_page_read():
    _eio_read("hooks.db", "eio_page_read", b"{}", 3000)


test_chaos_eio_page_read.timeout = 90


# ---------------------------------------------------------------- clock

FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
CLOCK_RETRY = {"base_ms": 2000, "max_ms": 2000, "jitter": False}


def _attempts_since(sink, path, t_ms):
    """id -> attempts the sink saw since t_ms (its own wall clock)."""
    tries = {}
    for r in sink.records(path):
        if r["t"] >= t_ms:
            tries[r["x-ankusa-id"]] = tries.get(r["x-ankusa-id"], 0) + 1
    return tries


def test_chaos_clock_step():
    """The master's wall clock steps back an hour, then forward an hour
    (twice) while its rows back off 2 s from a sink that answers 503
    (libfaketime in the master, its offset read from a file; the
    monotonic clock is left alone, as a real step leaves it): after the
    step back every row is attempted again within its backoff (no row
    waits an hour), and no row is attempted more than once a backoff,
    plus one, after a step forward (no storm)."""
    if not os.path.exists(FAKETIME_LIB):
        raise Skip("libfaketime not installed (Debian's faketime; "
                   "scripts/test installs it)")
    sink = TestSink().start()
    sink.mode("/s", status=503)
    offset = os.path.join(tmpdir(), "faketime")
    with open(offset, "w") as f:
        f.write("+0\n")
    d = Daemon(sources={
        "s": sink_source([{"type": "http", "url": sink.url("/s")}],
                         tenant="ts", retry=CLOCK_RETRY),
    }, extra={"dispatch": dispatch_conf(breaker_failures=0)})
    d.env_extra.update({"LD_PRELOAD": FAKETIME_LIB,
                        "FAKETIME_TIMESTAMP_FILE": offset,
                        "FAKETIME_NO_CACHE": "1",
                        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                        # The master's clock only: the children's sandboxes
                        # need not let libfaketime read its file.
                        "FAKETIME_ONLY_CMDS": "ankusad"})
    before = _faketime_shm()
    try:
        d.start()
        _clock_steps(d, sink)
    finally:
        d.destroy()
        _faketime_shm_sweep(before)


def _faketime_shm():
    try:
        return {f for f in os.listdir("/dev/shm")
                if f.startswith(("faketime_shm_", "sem.faketime_sem_"))}
    except OSError:
        return set()


def _faketime_shm_sweep(before):
    """libfaketime makes a shared-memory segment and a semaphore per
    process it starts in, and removes them only at a clean exit; a
    daemon's children killed at its stop leave theirs.  Remove those this
    test made whose process is gone."""
    for f in _faketime_shm() - before:
        pid = f.rsplit("_", 1)[-1]
        if pid.isdigit() and os.path.exists("/proc/" + pid):
            continue
        try:
            os.unlink(os.path.join("/dev/shm", f))
        except OSError:
            pass


def _clock_steps(d, sink):
    offset = d.env_extra["FAKETIME_TIMESTAMP_FILE"]
    acked = [expect_accepted(*post(d.port, "/webhooks/s", b'{"n":%d}' % i))
             for i in range(20)]
    want = set(acked)
    wait_until(lambda: want <= set(sink.ids("/s")), 10, 0.05,
               "a first attempt of every hook")
    notes = []
    for step in ("-1h", "+0", "+1h") * ROUNDS:
        with open(offset + ".tmp", "w") as f:
            f.write(step + "\n")
        os.rename(offset + ".tmp", offset)
        t = time.time() * 1000
        time.sleep(5.0)
        tries = _attempts_since(sink, "/s", t)
        stuck = want - set(tries)
        most = max(tries.values()) if tries else 0
        notes.append("clock at %s: attempts per row in 5 s %d-%d" % (
            step, min(tries.values()) if tries else 0, most))
        assert not stuck, "clock stepped to %s: %d rows not attempted in " \
            "5 s (backoff 2 s)" % (step, len(stuck))
        assert most <= 4, "clock stepped to %s: a row attempted %d times " \
            "in 5 s (backoff 2 s)" % (step, most)
    sink.mode("/s", status=200)
    wait_until(lambda: want <= set(sink.ids("/s", status=200)), 10, 0.05,
               "every hook delivered")
    lost = lost_ids(d, acked, sink, "/s")
    assert d.stop() == 0, "exit status after SIGTERM"
    for n in notes:
        note(n)
    report("clock_step", ROUNDS, acked, lost, duplicated(sink, "/s"))
    assert not lost


test_chaos_clock_step.timeout = 60 + 20 * ROUNDS


# ---------------------------------------------------------------- sinks

class AbusiveSink:
    """A loopback HTTP server whose answers are the attacks, by path:
    /big 200 with a 10 MB body, /utf8 500 with invalid UTF-8 in the
    reason, a header and the body, /loop 302 to itself, /hang the request
    read and then nothing, the connection never closed, /drip a 200 head
    and then a byte every 100 ms for ever.  Records each connection's
    path, x-ankusa-id, start and end (monotonic s), and answer."""

    __test__ = False
    logpath = os.devnull

    def __init__(self):
        import socketserver
        self.lock = threading.Lock()
        self.conns = []
        self.stopping = threading.Event()
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                owner._serve(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()
        register(self)

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def _read_request(self, s, buf):
        while b"\r\n\r\n" not in buf:
            d = s.recv(65536)
            if not d:
                return None, buf
            buf += d
        head, buf = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        n = int(hdrs.get("content-length", "0"))
        while len(buf) < n:
            d = s.recv(65536)
            if not d:
                return None, buf
            buf += d
        return (lines[0].split(" ")[1], hdrs), buf[n:]

    def _serve(self, s):
        buf = b""
        s.settimeout(120)
        while not self.stopping.is_set():
            try:
                req, buf = self._read_request(s, buf)
            except OSError:
                return
            if req is None:
                return
            path, hdrs = req
            rec = {"path": path, "id": hdrs.get("x-ankusa-id"),
                   "t0": time.monotonic(), "t1": None}
            with self.lock:
                self.conns.append(rec)
            try:
                keep = self._answer(s, path)
            except OSError:
                keep = False
            rec["t1"] = time.monotonic()
            if not keep:
                return

    def _answer(self, s, path):
        if path == "/big":
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" %
                      (10 << 20))
            chunk = b"x" * 65536
            for _ in range(160):
                s.sendall(chunk)
            return True
        if path == "/utf8":
            body = b"\xff\xfe\xc3\x28\xed\xa0\x80 not utf-8 \x00\x1b[31m"
            s.sendall(b"HTTP/1.1 500 \xff\xfe\xc3\x28 bad\r\n"
                      b"X-Bad: \xc3\x28\xa0\xa1\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body)
            return True
        if path == "/loop":
            s.sendall(b"HTTP/1.1 302 Found\r\nLocation: /loop\r\n"
                      b"Content-Length: 0\r\n\r\n")
            return True
        if path == "/hang":
            self._wait_close(s)
            return False
        if path == "/drip":
            s.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                      b"\r\n")
            while not self.stopping.is_set():
                s.sendall(b"1\r\nx\r\n")
                time.sleep(0.1)
            return False
        s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        return True

    def _wait_close(self, s):
        """Hold the connection until the client closes it."""
        while not self.stopping.is_set():
            r, _, _ = select.select([s], [], [], 0.2)
            if r:
                try:
                    if not s.recv(65536):
                        return
                except OSError:
                    return

    def records(self, path=None):
        with self.lock:
            return [dict(r) for r in self.conns
                    if path is None or r["path"] == path]

    def destroy(self):
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


ABUSE_PATHS = ("/big", "/utf8", "/loop", "/hang", "/drip")


def test_chaos_abusive_sinks():
    """Sinks that answer 10 MB, invalid UTF-8, a 3xx loop, never answer
    or never end (dispatch.attempt_timeout_ms 2000): each attempt ends
    within the timeout (the deliver process killed at its deadline), the
    master goes on answering ingest, /health and ankusactl, its RSS stays
    within 16 MiB of where it started, and the invalid text reaches the
    listings as valid JSON; every hook is delivered, listed or
    dead-lettered."""
    srv = AbusiveSink()
    sources = {p.strip("/"): sink_source(
        [{"type": "http", "url": srv.url(p)}], tenant="t" + p.strip("/"),
        retry={"base_ms": 300, "max_ms": 600, "jitter": False})
        for p in ABUSE_PATHS}
    d = Daemon(sources=sources, extra={"dispatch": dispatch_conf(
        breaker_failures=0, attempt_timeout_ms=2000)}).start()
    rss0 = rss_kib(d.pid)
    acked = {}
    for p in ABUSE_PATHS:
        acked[p] = [expect_accepted(*post(d.port, "/webhooks" + p,
                                          b'{"n":%d}' % i))
                    for i in range(3)]
    rounds = 0
    rss_max = rss0
    deadline = time.monotonic() + 8 * ROUNDS
    while time.monotonic() < deadline:
        rounds += 1
        t0 = time.monotonic()
        st, _, _ = get(d.port, "/health", timeout=5)
        assert st == 200, "/health %d while the sinks abuse" % st
        expect_accepted(*post(d.port, "/webhooks/loop", b"{}", timeout=5))
        assert time.monotonic() - t0 < 2.0, "the master took %.1f s to " \
            "answer /health and a hook" % (time.monotonic() - t0)
        rss_max = max(rss_max, rss_kib(d.pid) or 0)
        time.sleep(0.25)
    # The attempts, as the server saw them.
    slow = []
    for r in srv.records():
        if r["t1"] is not None and r["t1"] - r["t0"] > 3.0:
            slow.append(r)
    assert not slow, "attempts that ran past the 2 s timeout: %r" % slow[:3]
    open_now = [r for r in srv.records() if r["t1"] is None and
                time.monotonic() - r["t0"] > 4.0]
    assert not open_now, "connections held past the timeout: %r" % (
        open_now[:3])
    for p in ABUSE_PATHS:
        assert srv.records(p), "no attempt reached %s" % p
    # Invalid UTF-8 from a sink: the listings stay valid JSON.
    q = d.queue("utf8")
    errs = [h for h in q if h.get("id") in acked["/utf8"]]
    st, _, doc = d.api("GET", "/v1/hooks/%s" % acked["/utf8"][0])
    assert st == 200 and doc is not None, "GET /v1/hooks of the utf8 " \
        "hook: %d %r" % (st, doc)
    all_acked = [i for p in ABUSE_PATHS for i in acked[p]]
    have = {h["id"] for h in d.queue()}
    have |= {r["id"] for r in srv.records("/big")}      # answered 200
    have |= {x.get("id") for x in d.dlq()}
    lost = [i for i in all_acked if i not in have]
    assert d.running(), "ankusad exited"
    assert d.stop() == 0, "exit status after SIGTERM"
    note("abusive sinks: %d attempts seen (%s), master RSS %d -> max %d "
         "KiB, %d utf8 hooks listed" % (
             len(srv.records()), ", ".join("%s %d" % (
                 p, len(srv.records(p))) for p in ABUSE_PATHS),
             rss0, rss_max, len(errs)))
    assert rss_max - rss0 < 16 * 1024, "master RSS grew from %d to %d KiB" \
        % (rss0, rss_max)
    report("abusive_sinks", ROUNDS, all_acked, lost)
    assert not lost


test_chaos_abusive_sinks.timeout = 60 + 10 * ROUNDS

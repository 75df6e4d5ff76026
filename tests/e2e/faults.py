# SPDX-License-Identifier: ISC
"""What the fault tests share (test_loss, test_fsync, test_chaos): load
that records every hook answered 201, the check that each of them is
delivered or still stored, EIO injected with strace into the master, and
the one line per case that scripts/chaos reads.

    load = Load(d.port, "/webhooks/github", clients=8).start()
    ...                               # the fault
    load.finish()                     # load.acked: the ids answered 201
    lost = lost_ids(d, load.acked, sink, "/hook")
    report("disk_full", 1, load.acked, lost, duplicated(sink, "/hook"))
"""

import http.client
import os
import shutil
import signal
import subprocess
import threading
import time

from ankusa import Skip, expect_accepted, jbody, note, post

BODY = (b'{"pad":"' + b"p" * 1014 + b'"}')     # 1 KiB


def client(port, stop, acked, other, lock, path="/webhooks/github",
           body=BODY, pause=0.0):
    """Post body over one keep-alive connection until stop is set or the
    connection fails: each id answered 201 is appended to acked at once,
    every other answer to other as (status, error, Retry-After); a 503
    waits 10 ms, any other answer ends it."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        while not stop.is_set():
            try:
                st, h, data = post(port, path, body, conn=c,
                                   headers={"x-order": "k"})
            except (OSError, http.client.HTTPException):
                break               # the master is gone: stop on errors
            if st == 201:
                i = expect_accepted(st, h, data)
                with lock:
                    acked.append(i)
                if pause:
                    time.sleep(pause)
                continue
            try:
                err = jbody(data).get("error")
            except AssertionError:
                err = data[:200]
            with lock:
                other.append((st, err, h.get("retry-after")))
            if st != 503:
                break
            time.sleep(0.01)
    finally:
        c.close()


class Load:
    """clients threads of client() on one path; finish() stops and joins
    them.  acked: every id answered 201; other: (status, error,
    Retry-After) of every other answer."""

    def __init__(self, port, path="/webhooks/github", clients=8, body=BODY,
                 pause=0.0):
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.acked, self.other = [], []
        self.threads = [threading.Thread(
            target=client, args=(port, self.stop, self.acked, self.other,
                                 self.lock, path, body, pause), daemon=True)
            for _ in range(clients)]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def join(self, timeout=40):
        """Wait for the clients to stop by themselves (the master is
        gone): False if one still runs after timeout."""
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        self.stop.set()
        return not any(t.is_alive() for t in self.threads)

    def finish(self, timeout=40):
        self.stop.set()
        return self.join(timeout)

    def count(self):
        with self.lock:
            return len(self.acked)


def delivered(sink, path=None):
    """id -> how many times the sink answered it 200."""
    counts = {}
    for r in sink.records(path):
        if r.get("status") == 200:
            i = r["x-ankusa-id"]
            counts[i] = counts.get(i, 0) + 1
    return counts


def duplicated(sink, path=None):
    """Deliveries past the first of an id (at-least-once allows them)."""
    return sum(n - 1 for n in delivered(sink, path).values() if n > 1)


def lost_ids(d, acked, sink=None, path=None):
    """The ids of acked that are neither delivered (a 200 at sink) nor
    listed by ankusactl queue of the running daemon d."""
    have = {h["id"] for h in d.queue()}
    if sink is not None:
        have |= set(delivered(sink, path))
    return [i for i in acked if i not in have]


def report(case, rounds, acked, lost, dups=0):
    """The case's line, printed and noted, in the form scripts/chaos reads:
    chaos CASE: rounds N, acknowledged N, lost N, duplicated N."""
    line = "chaos %s: rounds %d, acknowledged %d, lost %d, duplicated %d" % (
        case, rounds, len(set(acked)), len(lost), dups)
    print("     " + line, flush=True)
    note(line)
    return line


# ---------------------------------------------------------------- strace

def tracer_of(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def inject_eio(pid, syscalls, paths, trace, when="1"):
    """strace attached to pid (the master alone): the syscalls (a list)
    on the files paths fail with EIO at their when-th call (strace's
    when= syntax: "1", "3+", "2..4").  Skip if strace is missing or
    cannot attach.  Stop it with stop_tracer."""
    return strace_attach(pid, syscalls, trace, error="EIO", paths=paths,
                         when=when)


def strace_attach(pid, syscalls, trace, error=None, paths=(), when="1"):
    """strace attached to pid (that thread alone), the syscalls (a list)
    written to trace; with error (an errno name), those on the files paths
    (all of them without paths) fail with it at their when-th call.  Skip
    if strace is missing or cannot attach.  Stop it with stop_tracer."""
    if shutil.which("strace") is None:
        raise Skip("strace not installed (needed to %s; scripts/test "
                   "installs it)" % ("inject " + error if error else
                                     "trace system calls"))
    sc = ",".join(syscalls)
    argv = ["strace", "-qq", "-o", trace, "-e", "trace=" + sc]
    if error is not None:
        argv += ["-e", "inject=%s:error=%s:when=%s" % (sc, error, when)]
    for p in paths:
        argv += ["-P", p]
    argv += ["-p", str(pid)]
    s = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 5
    while tracer_of(pid) != s.pid:
        if s.poll() is not None:
            if injected(trace):
                return s    # attached, injected, and the tracee is gone
            raise Skip("strace cannot attach to pid %d: %s" % (
                pid, s.stderr.read().decode("utf-8", "replace").strip()))
        if time.monotonic() > deadline:
            s.kill()
            raise Skip("strace did not attach within 5 s")
        time.sleep(0.02)
    return s


def stop_tracer(s):
    if s.poll() is None:
        s.send_signal(signal.SIGINT)
    try:
        s.wait(10)
    except subprocess.TimeoutExpired:
        s.kill()
        s.wait(5)


def injected(trace):
    """The lines of strace's output whose call was made to fail."""
    try:
        with open(trace) as f:
            return [ln.strip() for ln in f if "INJECTED" in ln]
    except OSError:
        return []


def rss_kib(pid):
    """The resident set of pid in KiB (VmRSS), or None if it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def data_path(d, name):
    return os.path.join(os.path.realpath(d.data_dir), name)

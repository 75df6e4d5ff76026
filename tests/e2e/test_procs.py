# SPDX-License-Identifier: ISC
"""Processes: edges are disposable, the master supervises them, and nothing
outlives the master."""

import http.client
import os
import signal
import socket
import threading
import time

from ankusa import (Daemon, Raw, edge_alive, expect_accepted, head_bytes,
                    note, post, socket_owner, wait_until)


def _poster(port, stop, results, lock):
    """Post on a fresh connection each time; record (t_start, outcome)."""
    while not stop.is_set():
        t = time.monotonic()
        try:
            st, h, data = post(port, "/webhooks/github", b'{"p":1}',
                               timeout=10)
            out = ("http", st, data) if st != 201 else \
                ("ok", expect_accepted(st, h, data))
        except (OSError, http.client.HTTPException) as e:
            out = ("conn", repr(e))
        with lock:
            results.append((t, time.monotonic(), out))
        time.sleep(0.005)


def test_edge_sigkill_respawn():
    workers = 3
    d = Daemon(workers=workers).start()
    gen = d.edges()
    assert len(gen) == workers, "edges %r, want %d" % (gen, workers)
    # Every edge has said hello (ready) a moment after its process runs.
    wait_until(lambda: d.status()["edges"] == workers, 10, 0.05,
               "%d edges ready" % workers)

    # Connections held mid-body (headers and half of the body sent).
    held = []
    for i in range(3 * workers):
        r = Raw(d.port)
        r.send(head_bytes("POST", "/webhooks/github",
                          [("Content-Type", "application/json"),
                           ("Content-Length", "1000")], b"h" * 500))
        held.append(r)
    time.sleep(0.5)
    owner = {}
    for r in held:
        owner[r] = socket_owner(d.port, r.s.getsockname()[1], gen)
    counts = {e: sum(1 for o in owner.values() if o == e) for e in gen}
    assert None not in owner.values(), "a held connection has no edge: " \
        "%r" % counts
    # The victim: an edge that holds some, if possible not all, of them.
    victim = max(gen, key=lambda e: (0 < counts[e] < len(held),
                                     counts[e]))

    stop, lock, results = threading.Event(), threading.Lock(), []
    ths = [threading.Thread(target=_poster, args=(d.port, stop, results,
                                                  lock))
           for _ in range(4)]
    for t in ths:
        t.start()
    time.sleep(0.5)
    os.kill(victim, signal.SIGKILL)
    # "After the kill" starts once the victim is really dead (a zombie
    # holds no sockets), so no fresh connection can land on it.
    wait_until(lambda: not edge_alive(victim), 5, 0.005,
               "the killed edge %d to die" % victim)
    kill_at = time.monotonic()

    # (a) respawned: a new edge pid, back to the configured number.
    def respawned():
        e = d.edges()
        return len(e) == workers and victim not in e and \
            len(set(e) - set(gen)) == 1
    wait_until(respawned, 10, 0.05, "a new edge to replace %d" % victim)
    t_respawn = time.monotonic() - kill_at
    wait_until(lambda: d.status()["edges"] == workers, 5, 0.1,
               "ankusactl status edges == %d" % workers)
    time.sleep(1.5)
    stop.set()
    for t in ths:
        t.join(20)

    # (b) the held requests: those on surviving edges finish with 201,
    # those the killed edge held are cut (a connection error, never an
    # answer).
    held_ok, problems = [], []
    for r in held:
        try:
            r.send(b"h" * 500)
            resp = r.read_response(timeout=10)
        except (OSError, EOFError) as e:
            resp = e
        finally:
            r.close()
        if owner[r] == victim:
            if not isinstance(resp, Exception):
                problems.append("held by the killed edge, answered %r" %
                                resp)
        elif isinstance(resp, Exception):
            problems.append("held by live edge %d, cut: %r" % (owner[r],
                                                               resp))
        else:
            held_ok.append(expect_accepted(resp.status, resp.headers,
                                           resp.body, "held request on a "
                                           "surviving edge"))
    after = [out for t0, t1, out in results if t0 > kill_at]
    ok_after = [o for o in after if o[0] == "ok"]
    conn_after = [o for o in after if o[0] == "conn"]
    conn_before = [o for t0, t1, o in results
                   if t0 <= kill_at and o[0] == "conn"]
    http_bad = [o for _, _, o in results if o[0] == "http"]
    note("edge kill: respawned in %.2fs; posts after the kill: %d ok, %d "
         "connection errors (%d before); held: %d on the victim, %d "
         "finished 201" % (t_respawn, len(ok_after), len(conn_after),
                           len(conn_before), counts[victim], len(held_ok)))
    assert not problems, "; ".join(problems)
    assert not http_bad, "non-201 answers around the edge kill: %r" % (
        http_bad[:5])
    assert not conn_after, "fresh connections after the kill failed: %r" % (
        conn_after[:5])
    assert len(conn_before) <= 4, "more connection errors than posters " \
        "in flight: %r" % conn_before
    assert len(ok_after) >= 20, "only %d posts succeeded after the kill" % (
        len(ok_after))
    q = {h["id"] for h in d.queue()}
    acked = [o[1] for _, _, o in results if o[0] == "ok"] + held_ok
    missing = [i for i in acked if i not in q]
    assert not missing, "%d acknowledged ids not stored" % len(missing)
    assert d.running()


def test_edge_crash_loop_throttled():
    """Killing every edge repeatedly: the master stays up and comes back
    to the configured number of edges."""
    d = Daemon(workers=2).start()
    for _ in range(5):
        for e in d.edges():
            os.kill(e, signal.SIGKILL)
        time.sleep(0.1)
    assert d.running(), "ankusad died while its edges were killed"
    wait_until(lambda: len(d.edges()) == 2, 20, 0.1, "2 edges again")
    wait_until(lambda: post(d.port, "/webhooks/github", b"{}")[0] == 201,
               20, 0.2, "a 201 after the edges came back")


def test_sigterm_exit_0_edges_gone():
    d = Daemon(workers=2).start()
    expect_accepted(*post(d.port, "/webhooks/github", b"{}"))
    edges = d.edges()
    assert len(edges) == 2
    t0 = time.monotonic()
    rc = d.stop(timeout=15)
    assert rc == 0, "exit %r after SIGTERM, want 0" % rc
    wait_until(lambda: not any(edge_alive(e) for e in edges), 3, 0.05,
               "edges %r to exit after SIGTERM" % edges)
    note("sigterm: exit 0 after %.2fs" % (time.monotonic() - t0))
    s = socket.socket()
    try:
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", d.port))
            raise AssertionError("ingest port still accepts after exit")
        except ConnectionRefusedError:
            pass
    finally:
        s.close()


def test_master_sigkill_edges_exit():
    d = Daemon(workers=3).start()
    edges = d.edges()
    assert len(edges) == 3
    # One edge busy with a held request, so an edge waiting on the master
    # notices too.
    r = Raw(d.port)
    r.send(head_bytes("POST", "/webhooks/github",
                      [("Content-Length", "10")], b"12345"))
    d.kill9()
    t0 = time.monotonic()
    wait_until(lambda: not any(edge_alive(e) for e in edges), 2.5, 0.05,
               "edges %r to exit after the master's SIGKILL (alive: %r)" % (
                   edges, [e for e in edges if edge_alive(e)]))
    note("master kill: edges gone after %.2fs" % (time.monotonic() - t0))
    # Nobody holds the listener any more.
    try:
        r.send(b"67890")
        resp = r.read_response(timeout=3)
        raise AssertionError("held request answered %r after the master "
                             "died" % resp)
    except (OSError, EOFError):
        pass
    r.close()
    s = socket.socket()
    try:
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", d.port))
            raise AssertionError("ingest port still accepts with no master")
        except ConnectionRefusedError:
            pass
    finally:
        s.close()


def test_port_in_use_at_start():
    """The ingest port held by another socket at start-up: ankusad says
    so and retries for 2 s (a crashed instance's edges may still hold
    it), starts if the port frees meanwhile, and exits 1 naming the port
    if it does not."""
    d = Daemon()
    held = socket.socket()
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    held.bind(("127.0.0.1", d.port))
    held.listen(1)
    said = "port %d in use; retrying for 2000 ms" % d.port
    freed = []

    def release():
        # Free the port once ankusad has said it waits for it.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if said in d.log_text():
                    break
            except OSError:
                pass
            time.sleep(0.02)
        held.close()
        freed.append(time.monotonic())

    th = threading.Thread(target=release)
    th.start()
    try:
        d.start()
    finally:
        th.join()
    assert said in d.log_text(), d.log_text()
    note("started %.2f s after the port was freed" % (
        time.monotonic() - freed[0]))
    d.stop()

    held = socket.socket()
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    held.bind(("127.0.0.1", d.port))
    held.listen(1)
    try:
        t0 = time.monotonic()
        try:
            d.start(timeout=15)
            raise AssertionError("ankusad started on a port in use")
        except AssertionError as e:
            if "exited 1 during start-up" not in str(e):
                raise
        dt = time.monotonic() - t0
    finally:
        held.close()
    log = d.log_text()
    assert "http listener: bind 127.0.0.1 port %d: Address already in " \
        "use" % d.port in log, log[-2000:]
    assert dt >= 1.9, "gave up after %.2f s, not 2" % dt
    note("gave up after %.2f s" % dt)


def test_reload_finishes_requests_in_hand():
    """SIGHUP replaces the edges; an old edge finishes the requests it
    holds (201, stored), then exits."""
    d = Daemon(workers=2).start()
    gen1 = d.edges()
    held = []
    for i in range(6):
        r = Raw(d.port)
        r.send(head_bytes("POST", "/webhooks/github",
                          [("Content-Length", "100")], b"r" * 60))
        held.append(r)
    time.sleep(0.3)
    d.sources["later"] = d.sources["github"]
    d.write_config()
    d.signal(signal.SIGHUP)
    wait_until(lambda: post(d.port, "/webhooks/later", b"{}")[0] == 201, 10,
               0.1, "the reloaded config to accept /webhooks/later")
    wait_until(lambda: len(set(d.edges()) - set(gen1)) == 2, 10, 0.1,
               "2 edges of the new generation")
    ids = []
    for r in held:
        r.send(b"r" * 40)
        resp = r.read_response(timeout=10)
        ids.append(expect_accepted(resp.status, resp.headers, resp.body,
                                   "request held across the reload"))
        r.close()
    q = {h["id"] for h in d.queue()}
    assert set(ids) <= q, "held requests answered 201 but not stored"
    wait_until(lambda: not any(edge_alive(e) for e in gen1), 5, 0.1,
               "the old edges %r to exit once their requests are done"
               % gen1)
    assert d.status()["edges"] == 2

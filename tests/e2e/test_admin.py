# SPDX-License-Identifier: ISC
"""The admin API's listener (daemon/admin/admin_api.c): /health, /ready, the
plumbing every route shares (404, 405 with Allow, unknown query
arguments, oversized bodies)."""

import json
import os
import signal

from ankusa import (Daemon, TestSink, dispatch_conf, post, request,
                    sink_source, wait_until)


def test_admin_health():
    d = Daemon().start()
    st, hdrs, doc = d.api("GET", "/health")
    assert st == 200, (st, doc)
    assert hdrs["content-type"] == "application/json"
    assert doc["status"] == "ok" and doc["draining"] is False, doc
    assert doc["version"] and doc["instance"], doc
    assert set(doc["roles"]) == {"ingest", "dispatch", "admin",
                                 "claim_gateway"}, doc


def test_admin_ready():
    d = Daemon().start()
    st, hdrs, doc = d.api("GET", "/ready")
    assert st == 200 and doc == {"status": "ready"}, (st, doc)
    # Probed at most once a second: a burst of 20 is answered alike.
    for _ in range(20):
        st, _, _ = d.api("GET", "/ready")
        assert st == 200


def test_admin_not_found_and_method():
    d = Daemon().start()
    st, _, doc = d.api("GET", "/nope")
    assert st == 404 and doc == {"error": "not_found"}, (st, doc)
    st, hdrs, doc = d.api("POST", "/health", {})
    assert st == 405 and doc["error"] == "method_not_allowed", (st, doc)
    assert hdrs["allow"] == "GET", hdrs
    st, _, doc = d.api("GET", "/health?x=1")
    assert st == 400 and doc["error"] == "invalid_request" and \
        doc["field"] == "x", (st, doc)


def test_admin_body_cap():
    """A body over 64 KiB is refused before any handler runs."""
    d = Daemon().start()
    st, _, _ = request(d.admin_port, "POST", "/health", b"x" * 70000)
    assert st == 413, st
    st, _, doc = d.api("GET", "/health")
    assert st == 200, st


def test_admin_api_over_control_socket():
    """ankusactl api METHOD PATH: the same routes over the control
    socket; an error answer exits 1 naming the code and field."""
    d = Daemon().start()
    rc, out, _ = d.ctl("api", "GET", "/health", json_out=True)
    assert rc == 0 and json.loads(out)["status"] == "ok", out
    rc, out, err = d.ctl("api", "GET", "/health?bogus=1", check=False)
    assert rc == 1 and "invalid_request: bogus" in err, (rc, out, err)
    rc, out, err = d.ctl("api", "GET", "/nope", check=False)
    assert rc == 1 and "not_found" in err, (rc, out, err)


def test_admin_ready_draining():
    """While a drain waits for a running attempt, /ready is 503 draining
    with Retry-After, and /health still says ok (draining true)."""
    sink = TestSink().start()
    sink.mode("/h", hang=True)
    d = Daemon(sources={"s": sink_source([
        {"type": "http", "url": sink.url("/h"), "timeout_ms": 4000}])},
        extra={"dispatch": dispatch_conf()}).start()
    st, _, _ = post(d.port, "/webhooks/s", b"{}")
    assert st == 201, st
    wait_until(lambda: sink.received("/h") >= 1, timeout=10, what="attempt started")
    os.kill(d.pid, signal.SIGTERM)
    wait_until(lambda: d.api("GET", "/ready")[0] == 503, timeout=10,
               what="/ready 503")
    st, hdrs, doc = d.api("GET", "/ready")
    assert st == 503 and doc["reason"] == "draining", (st, doc)
    assert hdrs["retry-after"] == "1", hdrs
    st, _, doc = d.api("GET", "/health")
    assert st == 200 and doc["draining"] is True, (st, doc)
    d.proc.wait(30)

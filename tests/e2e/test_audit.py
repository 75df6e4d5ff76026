# SPDX-License-Identifier: ISC
"""The audit trail (issue 36, section 1; daemon/admin/admin_audit.c,
daemon/store/store_audit.c): every change made through the admin API or the
control socket is recorded with its time, actor, action, target, tenant and
outcome, listed newest first by GET /v1/audit and ankusactl audit, logged
one line each, kept across a restart, pruned after admin.audit.max_age_s,
and replicated: a client of a group lists the master's entries."""

import json
import os
import time

from ankusa import (Daemon, dispatch_conf, expect_accepted, hold_source,
                    post, request, tmpdir, wait_until)

# The name of the harness's admin token (ankusa.py's admin.tokens): the
# actor of every API change these tests make.
API_ACTOR = "e2e"


def _sources():
    return {"github": hold_source(),
            "orders": hold_source(tenant="acme")}


def _trail(d, query=""):
    """Every entry GET /v1/audit gives, following next_cursor."""
    out, cur = [], None
    for _ in range(100):
        q = query + ("&" if query else "") + ("cursor=" + cur if cur else "")
        st, _, doc = d.api("GET", "/v1/audit" + ("?" + q if q else ""))
        assert st == 200, (st, doc)
        out += doc["entries"]
        cur = doc["next_cursor"]
        if cur is None:
            return out
    raise AssertionError("more than 100 pages")


def _entries_since(d, t0):
    """The entries at or after t0 (wall ms), oldest first."""
    return list(reversed(_trail(d, "since=%d" % t0)))


def _post_hooks(d, source, n):
    ids = []
    for i in range(n):
        st, hd, data = post(d.port, "/webhooks/" + source, b'{"n":%d}' % i)
        ids.append(expect_accepted(st, hd, data, "post to " + source))
    return ids


def _ok(d, method, path, body=None, want=(200, 201, 202)):
    st, _, doc = d.api(method, path, body)
    assert st in want, (method, path, st, doc)
    return doc


def test_audit_actions():
    """Each kind of change, through the API (actor the token's name) and the
    socket (actor uid:0, ankusactl run as root): one entry each, in order,
    with its action, target, tenant and outcome (an error's code too), one
    log line each; a GET adds none; the trail, drain's entry with it, is
    there after a restart."""
    d = Daemon(sources=_sources(),
               extra={"dispatch": dispatch_conf()}).start()
    t0 = int(time.time() * 1000)
    ids = _post_hooks(d, "github", 4)
    _post_hooks(d, "orders", 1)
    _ok(d, "GET", "/v1/dlq")
    assert _entries_since(d, t0) == [], "a GET is no change"

    want = []   # (actor, action, target, tenant, outcome start)

    def api(method, path, body, action, target, tenant, outcome="ok",
            status=(200, 201, 202)):
        doc = _ok(d, method, path, body, status)
        want.append((API_ACTOR, action, target, tenant, outcome))
        return doc

    api("POST", "/v1/tenants/default/sources/github/sinks/0/pause", None,
        "sink.pause", "default/github/0", "default")
    api("POST", "/v1/tenants/default/sources/github/sinks/0/resume", None,
        "sink.resume", "default/github/0", "default")
    api("POST", "/v1/tenants/acme/sources/orders/pause", None,
        "source.pause", "acme/orders", "acme")
    api("POST", "/v1/tenants/acme/sources/orders/resume", None,
        "source.resume", "acme/orders", "acme")
    api("POST", "/v1/tenants/default/sources/github/retry-now", {"sink": 0},
        "retry_now", 'default/github {"sink":0}', "default")
    api("POST", "/v1/retry-now", {"source": "orders"}, "retry_now",
        '{"source":"orders"}', "acme")
    api("PUT", "/v1/tenants/acme/rate-limit", {"rate": 5, "burst": 10},
        "rate_limit.set", 'acme {"burst":10,"rate":5}', "acme")
    api("DELETE", "/v1/tenants/acme/rate-limit", None, "rate_limit.delete",
        "acme", "acme")
    d.tick(10)      # no attempt in flight: the hook's delete is not 409
    api("DELETE", "/v1/hooks/" + ids[0], None, "hook.delete", ids[0], "")
    api("POST", "/v1/tenants/default/sources/github/dead-letter", None,
        "source.dead_letter", "default/github", "default")
    wait_until(lambda: d.status()["dead"] == 3, 10, what="3 dead letters")
    job = api("POST", "/v1/replays", {"kind": "dlq", "source_id": "github",
                                      "rate": 1},
              "replay.create", None, "", status=(202,))
    rid = job["id"]
    want[-1] = (API_ACTOR, "replay.create",
                '%s {"kind":"dlq","rate":1,"source_id":"github"}' % rid,
                "", "ok")
    api("PATCH", "/v1/replays/" + rid, {"state": "paused"}, "replay.pause",
        rid + ' {"state":"paused"}', "")
    api("PATCH", "/v1/replays/" + rid, {"state": "running"},
        "replay.resume", rid + ' {"state":"running"}', "")
    api("PATCH", "/v1/replays/" + rid, {"state": "cancelled"},
        "replay.cancel", rid + ' {"state":"cancelled"}', "")
    api("DELETE", "/v1/dlq?source_id=github", None, "dlq.purge",
        "?source_id=github", "")
    api("DELETE", "/v1/quarantine?all=true", None, "quarantine.purge",
        "?all=true", "")
    # Refusals are recorded with their error.
    api("POST", "/v1/tenants/default/sources/nope/pause", None,
        "source.pause", "default/nope", "default", "not_found",
        status=(404,))
    # A control character from the request: as it is in the entry, \xNN
    # in the log line.
    api("POST", "/v1/tenants/default/sources/no%0Ape/pause", None,
        "source.pause", "default/no\npe", "default",
        "invalid_request: source", status=(400,))
    api("PUT", "/v1/tenants/acme/rate-limit", {"rate": "x"},
        "rate_limit.set", 'acme {"rate":"x"}', "acme",
        "invalid_request: rate", status=(400,))

    # The control socket: the peer's uid.
    bdir = os.path.join(tmpdir("bk"), "copy")
    d.ctl("reload")
    want.append(("uid:0", "reload", d.conf, "", "ok"))
    d.ctl("backup", bdir, timeout=60)
    want.append(("uid:0", "backup", bdir, "", "ok"))
    d.ctl("quarantine", "purge", "-S", "orders")
    want.append(("uid:0", "quarantine.purge", "source_id=orders", "acme",
                 "ok"))
    d.ctl("dead-letter-source", "orders", "30")
    want.append(("uid:0", "source.dead_letter", "orders", "acme", "ok"))
    d.ctl("quarantine", "release", "-S", "orders")
    want.append(("uid:0", "quarantine.release", "source_id=orders", "acme",
                 "ok"))
    api("DELETE", "/v1/tenants/acme/sources/orders", None, "source.delete",
        "acme/orders", "acme")
    rc, _, _ = d.ctl("backup", bdir, check=False)
    assert rc == 1
    want.append(("uid:0", "backup", bdir, "", ""))
    d.ctl("pause", "github#0")
    want.append(("uid:0", "sink.pause", "default/github/0", "default", "ok"))
    t1 = int(time.time() * 1000)

    def check(got):
        assert len(got) == len(want), (len(got), len(want),
                                       [g["action"] for g in got])
        for g, w in zip(got, want):
            assert set(g) == {"at", "actor", "action", "target", "tenant",
                              "outcome"}, g
            assert t0 <= g["at"] <= t1 + 2000, (g, t0, t1)
            assert (g["actor"], g["action"], g["tenant"]) == w[0:2] + \
                (w[3],), (g, w)
            if w[2] is not None:
                assert g["target"] == w[2], (g, w)
            assert g["outcome"].startswith(w[4]), (g, w)
            if w[4] == "":
                assert g["outcome"] != "ok", g
        ats = [g["at"] for g in got]
        assert ats == sorted(ats), ats
    check(_entries_since(d, t0))
    log = d.log_since_start()
    assert 'audit: actor=%s action=sink.pause target="default/github/0" ' \
        'tenant=default outcome="ok"' % API_ACTOR in log, log[-2000:]
    assert 'audit: actor=uid:0 action=reload' in log
    assert 'outcome="not_found' in log
    assert 'target="default/no\\x0ape"' in log, log[-2000:]

    # drain's entry, and the whole trail, after a restart.
    d.ctl("drain", "30", timeout=60)
    wait_until(lambda: not d.running(), 30, what="drained")
    want.append(("uid:0", "drain", "", "", "ok"))
    t1 = int(time.time() * 1000)
    d.start()
    check(_entries_since(d, t0))
    _, out, _ = d.ctl("audit", "--since", str(t0))
    lines = out.strip().splitlines()
    assert lines[0].split()[:3] == ["AT", "(UTC)", "ACTOR"], out
    assert " drain " in lines[1] and "uid:0" in lines[1], out
    assert lines[-1] == "-- %d entries" % len(want), out


test_audit_actions.timeout = 180


def test_audit_filters_paging():
    """The filters (actor, action, tenant, since, until) and the pages:
    newest first, each at most limit, none twice, none missed; ankusactl
    audit's filters and cursor; bad arguments 400."""
    d = Daemon(sources=_sources()).start()
    t0 = int(time.time() * 1000)
    # Refused ones (409 not_paused, already paused) are entries too.
    for i in range(12):
        _ok(d, "POST", "/v1/tenants/acme/sources/orders/sinks/0/pause",
            want=(200, 409))
        _ok(d, "POST", "/v1/tenants/default/sources/github/sinks/0/resume",
            want=(409,))
    tmid = int(time.time() * 1000)
    time.sleep(0.01)
    for i in range(3):
        d.ctl("pause", "github#0", check=False)
    all_ = _trail(d, "since=%d" % t0)
    assert len(all_) == 27, len(all_)
    ats = [e["at"] for e in all_]
    assert ats == sorted(ats, reverse=True), ats

    assert len(_trail(d, "action=sink.pause")) == 15
    assert len(_trail(d, "actor=uid:0")) == 3
    assert len(_trail(d, "tenant=acme")) == 12
    assert len(_trail(d, "tenant=acme&action=sink.resume")) == 0
    assert len(_trail(d, "actor=%s&action=sink.resume" % API_ACTOR)) == 12
    assert len(_trail(d, "until=%d&since=%d" % (tmid, t0))) == 24
    assert all(e["actor"] == "uid:0" for e in
               _trail(d, "since=%d" % (tmid + 1)))

    # Pages of 5: 27 entries in 6 pages, the same order as one listing.
    seen, cur, pages = [], None, 0
    while True:
        q = "/v1/audit?limit=5&since=%d" % t0 + \
            ("&cursor=" + cur if cur else "")
        st, _, doc = d.api("GET", q)
        assert st == 200 and len(doc["entries"]) <= 5, (st, doc)
        seen += doc["entries"]
        pages += 1
        cur = doc["next_cursor"]
        if cur is None:
            break
    assert seen == all_ and pages == 6, (pages, len(seen))

    for q, field in (("limit=0", "limit"), ("cursor=zz", "cursor"),
                     ("since=yesterday", "since"), ("bogus=1", "bogus"),
                     ("tenant=a%20b", "tenant"),
                     ("since=10&until=5", "until")):
        st, _, doc = d.api("GET", "/v1/audit?" + q)
        assert st == 400 and doc["field"] == field, (q, st, doc)
    st, _, doc = d.api("POST", "/v1/audit")
    assert st == 405, (st, doc)

    _, out, _ = d.ctl("audit", "--actor", "uid:0", "-n", "2")
    lines = out.strip().splitlines()
    assert len(lines) == 4 and "more with --cursor" in lines[-1], out
    cur = lines[-1].split()[-1]
    _, out, _ = d.ctl("audit", "--actor", "uid:0", "--cursor", cur)
    assert out.strip().splitlines()[-1] == "-- 1 entries", out
    _, out, _ = d.ctl("audit", "--tenant", "acme", "--action", "sink.pause",
                      "-n", "3", json_out=True)
    doc = json.loads(out)
    assert len(doc["entries"]) == 3 and doc["next_cursor"] and \
        all(e["tenant"] == "acme" for e in doc["entries"]), doc
    rc, _, err = d.ctl("audit", "stray", check=False)
    assert rc == 2, (rc, err)


test_audit_filters_paging.timeout = 120


def test_audit_caller_gone():
    """A change whose caller goes away before the answer (a retry now of
    2000 held rows asked over the control socket, answered once its steps
    are done) is an entry still, its outcome the answer it got or that
    the caller was gone."""
    import socket
    d = Daemon(sources=_sources()).start()
    _post_hooks(d, "github", 2000)
    t0 = int(time.time() * 1000)
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(d.sock)
    c.sendall(json.dumps({"cmd": "api", "method": "POST", "path":
                          "/v1/tenants/default/sources/github/retry-now"}
                         ).encode() + b"\n")
    c.close()
    wait_until(lambda: len(_entries_since(d, t0)) == 1, 10, 0.1,
               "the retry now's entry")
    e = _entries_since(d, t0)[0]
    assert (e["actor"], e["action"], e["target"]) == \
        ("uid:0", "retry_now", "default/github"), e
    assert e["outcome"] in ("ok", "gone: the client went away before the "
                            "answer"), e
    assert d.running()


test_audit_caller_gone.timeout = 120


def test_audit_prune():
    """Entries older than admin.audit.max_age_s go after a checkpoint;
    newer ones stay."""
    d = Daemon(sources=_sources(), checkpoint_ms=300)
    d.admin["audit"] = {"max_age_s": 3}
    d.write_config()
    d.start()
    for i in range(5):
        _ok(d, "POST", "/v1/tenants/default/sources/github/sinks/0/pause")
    assert len(_trail(d)) == 5
    time.sleep(1.5)
    _ok(d, "POST", "/v1/tenants/default/sources/github/sinks/0/resume")
    wait_until(lambda: len(_trail(d)) == 1, 10, 0.2,
               "the five older entries pruned")
    assert _trail(d)[0]["action"] == "sink.resume"
    wait_until(lambda: len(_trail(d)) == 0, 10, 0.2, "the last pruned")


test_audit_prune.timeout = 60


def test_audit_repl_client():
    """A change on the master of a group is listed on its clients (the
    table is replicated like every other); a change a client makes
    itself (a reload: its store is read-only) is logged, not stored, and
    counted."""
    from test_replication import Group
    from ankusa import TestSink
    sink = TestSink().start()
    g = Group(sink.url("/s")).start()
    m = g.master()
    _ok(m, "POST", "/v1/tenants/default/sources/s/sinks/0/pause")
    m.ctl("reload")
    got = [(e["actor"], e["action"]) for e in _trail(m)]
    assert got == [("uid:0", "reload"), (API_ACTOR, "sink.pause")], got
    for c in g.nodes[1:]:
        wait_until(lambda: [(e["actor"], e["action"]) for e in _trail(c)]
                   == got, 15, 0.2, "the trail on a client")
    c = g.nodes[1]
    c.ctl("reload")
    wait_until(lambda: "audit: 1 entry not stored" in c.log_since_start(),
               5, what="the client's refusal logged")
    _, out, _ = c.ctl("stats", json_out=True)
    assert json.loads(out)["counters"].get(
        "ankusa_audit_write_errors_total") == 1, out
    assert len(_trail(c)) == 2


test_audit_repl_client.timeout = 180

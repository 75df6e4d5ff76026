# SPDX-License-Identifier: ISC
"""Delivered hooks kept, searched, replayed and erased (issue 37, section 2;
daemon/store/store_archive.c, daemon/admin/admin_archive.c): with
retention.delivered_s a delivered hook stays, with its body and each row's
delivered_at, found by GET /v1/hooks and GET /v1/hooks/{id} (?body=1 under
hooks:read_body), sent again by a replay of kind archive with the job's
replay id, pruned by age and by retention.max_bytes (across a restart too),
and a tenant's hooks are erased by DELETE /v1/tenants/{t}/hooks while
others' traffic goes on; with the default retention 0 a delivered hook goes
as before."""

import base64
import json
import os
import threading
import time

from ankusa import (Daemon, TestSink, dispatch_conf, expect_accepted, post,
                    request, sink_source, wait_until)


def _to(s, path, tenant, **kw):
    """A source whose one sink is the test sink's path."""
    return sink_source([{"type": "http", "url": s.url(path)}],
                       tenant=tenant, **kw)


def _daemon(s, retention=None, sources=None, tokens=None, dconf=None,
            **kw):
    extra = {"dispatch": dispatch_conf(**(dconf or {}))}
    if retention is not None:
        extra["retention"] = retention
    if sources is None:
        sources = {"src": _to(s, "/r", "acme")}
    d = Daemon(sources=sources, extra=extra, **kw)
    if tokens is not None:
        d.admin["tokens"] = d.admin["tokens"] + tokens
        d.write_config()
    return d.start()


def _post(d, source, body, headers=None):
    st, hd, data = post(d.port, "/webhooks/" + source, body,
                        headers=headers)
    return expect_accepted(st, hd, data, "post to " + source)


def _ok(d, method, path, body=None, want=(200, 202)):
    st, _, doc = d.api(method, path, body)
    assert st in want, (method, path, st, doc)
    return doc


def _search(d, query=""):
    """Every entry of GET /v1/hooks?query, following next_cursor, and the
    pages it took."""
    out, cur, pages = [], None, 0
    for _ in range(1000):
        q = query + ("&" if query else "") + ("cursor=" + cur if cur else "")
        doc = _ok(d, "GET", "/v1/hooks" + ("?" + q if q else ""))
        pages += 1
        out += doc["entries"]
        cur = doc["next_cursor"]
        if cur is None:
            return out, pages
    raise AssertionError("more than 1000 pages")


def _delivered(s, path="/r"):
    return [r for r in s.records(path) if r["status"] == 200]


def test_archive_kept_search_show_replay():
    """A delivered hook is kept: counted in neither hooks nor pending, found
    by id with each row's delivered_at, listed by state=delivered (and not
    by pending, dead or quarantined), newest first; a pending and a dead
    hook are listed in theirs; a replay of kind archive sends the kept hook
    again with the job's replay id, and it is kept again after."""
    s = TestSink().start()
    d = _daemon(s, retention={"delivered_s": 3600},
                sources={"src": _to(s, "/r", "acme"),
                         "slow": _to(s, "/slow", "acme"),
                         "bad": _to(s, "/bad", "zeta"),
                         "pen": {"verify": {"type": "github",
                                            "secret": "s3cret"},
                                 "on_verify_failure": "quarantine",
                                 "sinks": [{"type": "log"}]}})
    s.mode("/slow", status=503)
    s.mode("/bad", status=422)   # permanent (410 would disable)
    ids = [_post(d, "src", b'{"n":%d}' % i) for i in range(3)]
    wait_until(lambda: len(_delivered(s)) == 3, 20, 0.05, "3 delivered")
    slow = _post(d, "slow", b'{"slow":1}')
    bad = _post(d, "bad", b'{"bad":1}')
    wait_until(lambda: d.status()["dead"] == 1, 20, 0.05, "a dead letter")
    st, _, data = post(d.port, "/webhooks/pen", b"z" * 10,
                       headers={"x-hub-signature-256": "sha256=00"})
    assert st == 202, (st, data)
    held = json.loads(data)["id"]
    st = d.status()
    assert st["pending"] == 1, st      # the slow one only
    # The queue is what waits: not the kept hooks.
    assert {q["id"] for q in d.queue() if "id" in q} == {slow, bad}

    h = _ok(d, "GET", "/v1/hooks/" + ids[0])
    assert h["kept"] is True, h
    assert [r["state"] for r in h["rows"]] == ["delivered"], h
    assert h["rows"][0]["delivered_at"] >= h["received_at"], h
    assert "body" not in h, h

    dl, _ = _search(d, "state=delivered")
    assert [e["id"] for e in dl] == list(reversed(ids)), dl
    assert all(e["state"] == "delivered" for e in dl), dl
    pend, _ = _search(d, "state=pending")
    assert [e["id"] for e in pend] == [slow], pend
    dead, _ = _search(d, "state=dead")
    assert [e["id"] for e in dead] == [bad], dead
    q, _ = _search(d, "state=quarantined")
    assert [e["id"] for e in q] == [held], q
    every, _ = _search(d)
    assert [e["id"] for e in every] == \
        [held, bad, slow] + list(reversed(ids)), every
    by_tenant, _ = _search(d, "tenant_id=zeta")
    assert [e["id"] for e in by_tenant] == [bad], by_tenant
    by_src, _ = _search(d, "source_id=src&limit=2")
    assert [e["id"] for e in by_src] == list(reversed(ids)), by_src

    # Replay from the archive: the kept hooks again, with the job's id.
    t0 = int(time.time() * 1000)
    j = _ok(d, "POST", "/v1/replays", {"kind": "archive", "source_id": "src",
                                       "until": t0})
    rid = j["id"]
    assert j["kind"] == "archive", j
    wait_until(lambda: {r["x-ankusa-id"] for r in _delivered(s)
                        if r.get("x-ankusa-replay-id") == rid} == set(ids),
               20, 0.05, "the archive replayed")
    wait_until(lambda: _ok(d, "GET", "/v1/replays/" + rid)["state"] ==
               "done", 10, 0.1, "the job done")
    assert _ok(d, "GET", "/v1/replays/" + rid)["moved"] == 3
    # Kept again, its row delivered by the replay.
    wait_until(lambda: _ok(d, "GET", "/v1/hooks/" + ids[0])["kept"], 10,
               0.05, "kept again")
    h = _ok(d, "GET", "/v1/hooks/" + ids[0])
    assert h["rows"][0]["replay_id"] == rid, h
    # Never delivered again but by a replay: nothing more arrives.
    n = len(_delivered(s))
    time.sleep(1.0)
    assert len(_delivered(s)) == n
    st = d.status()
    assert st["pending"] == 1 and st["dead"] == 1, st

    # ankusactl: the search, and a replay of the archive by its command.
    _, out, _ = d.ctl("hooks", "--state", "delivered", "-S", "src")
    assert ids[0] in out and "delivered" in out and "-- 3 hooks" in out, \
        out
    _, out, _ = d.ctl("hooks", "--tenant", "zeta", json_out=True)
    assert [e["id"] for e in json.loads(out)["entries"]] == [bad], \
        out
    _, out, _ = d.ctl("replay", "archive", "-S", "src", "--sink", "0",
                      "--rate", "50", json_out=True)
    rid2 = json.loads(out)["id"]
    wait_until(lambda: {r["x-ankusa-id"] for r in _delivered(s)
                        if r.get("x-ankusa-replay-id") == rid2} == set(ids),
               20, 0.05, "the archive replayed by ankusactl")


def test_archive_default_off():
    """retention.delivered_s 0 (the default): a delivered hook goes with
    its last row, as before: not found by id, not listed, nothing kept."""
    s = TestSink().start()
    d = _daemon(s)
    hid = _post(d, "src", b'{"a":1}')
    wait_until(lambda: len(_delivered(s)) == 1, 20, 0.05, "delivered")
    wait_until(lambda: d.status()["hooks"] == 0, 10, 0.05, "hook gone")
    st, _, doc = d.api("GET", "/v1/hooks/" + hid)
    assert st == 404, (st, doc)
    assert _search(d)[0] == [], "a delivered hook listed"
    st = d.status()
    assert (st["kept"], st["kept_bytes"], st["pending"]) == (0, 0, 0), st
    st, _, text = request(d.admin_port, "GET", "/metrics")
    assert b"ankusa_archive_hooks 0\n" in text, text


def test_archive_body():
    """?body=1: a UTF-8 body as it is, a binary one in base64, a large one
    cut at 64 KiB and said so, and the headers stored with the hook;
    refused 403 naming hooks:read_body for a token that has hooks:read
    alone, which still reads the hook (without body or headers)."""
    s = TestSink().start()
    reader = "reader-" + os.urandom(8).hex()
    d = _daemon(s, retention={"delivered_s": 3600},
                tokens=[{"name": "reader", "token": reader,
                         "scopes": ["hooks:read"]}])
    text = "{\"name\":\"Zoë ☃ 東京\"}".encode()
    binary = bytes(range(256)) * 4
    big = b'"' + b"x" * 70000 + b'\xc3\xa9"'
    note = "<b onclick=\"x()\">'a'</b>"
    ids = [_post(d, "src", text, headers={
        "X-Shop-Topic": "orders/paid", "X-Note": note}),
           _post(d, "src", binary), _post(d, "src", big)]
    wait_until(lambda: len(_delivered(s)) == 3, 20, 0.05, "delivered")
    wait_until(lambda: d.status()["kept"] == 3, 10, 0.05, "kept")

    h = _ok(d, "GET", "/v1/hooks/%s?body=1" % ids[0])
    assert (h["body"], h["body_encoding"], h["body_truncated"]) == \
        (text.decode(), "utf8", False), h
    got = {x["name"]: x["value"] for x in h["headers"]}
    assert got.get("x-shop-topic") == "orders/paid", h["headers"]
    assert got.get("x-note") == note, h["headers"]
    h = _ok(d, "GET", "/v1/hooks/%s?body=1" % ids[1])
    assert h["body_encoding"] == "base64" and not h["body_truncated"], h
    assert base64.b64decode(h["body"]) == binary
    h = _ok(d, "GET", "/v1/hooks/%s?body=1" % ids[2])
    assert h["body_encoding"] == "utf8" and h["body_truncated"], h
    assert h["body"] == big[:65536].decode(), len(h["body"])

    auth = {"Authorization": "Bearer " + reader}
    st, _, data = request(d.admin_port, "GET",
                          "/v1/hooks/%s?body=1" % ids[0], headers=auth)
    assert st == 403, (st, data)
    assert json.loads(data) == {"error": "forbidden",
                                "scope": "hooks:read_body"}, data
    st, _, data = request(d.admin_port, "GET", "/v1/hooks/" + ids[0],
                          headers=auth)
    assert st == 200 and "body" not in json.loads(data) and \
        "headers" not in json.loads(data), (st, data)
    st, _, data = request(d.admin_port, "GET", "/v1/hooks/%s?body=2" %
                          ids[0])
    assert st == 400, (st, data)


def test_archive_prune_age_bytes_restart():
    """Kept hooks go once older than retention.delivered_s, across a
    restart too; retention.max_bytes keeps the newest within the cap."""
    s = TestSink().start()
    d = _daemon(s, retention={"delivered_s": 4})
    ids = [_post(d, "src", b'{"n":%d}' % i) for i in range(5)]
    wait_until(lambda: d.status()["kept"] == 5, 20, 0.05, "5 kept")
    per = d.status()["kept_bytes"] // 5
    d.stop()
    time.sleep(1.0)
    d.start()
    assert d.status()["kept"] == 5, d.status()
    assert _ok(d, "GET", "/v1/hooks/" + ids[0])["kept"] is True
    # Pruned about 4 s after their delivery, by the restarted daemon.
    wait_until(lambda: d.status()["kept"] == 0, 15, 0.1, "pruned by age")
    st, _, doc = d.api("GET", "/v1/hooks/" + ids[0])
    assert st == 404, (st, doc)
    assert d.status()["kept_bytes"] == 0
    d.stop()

    # The byte cap: room for 3 of them; the oldest go first.
    d.extra["retention"] = {"delivered_s": 3600, "max_bytes": per * 3 + 10}
    d.write_config()
    d.start()
    ids = []
    for i in range(6):
        ids.append(_post(d, "src", b'{"n":%d}' % i))
        wait_until(lambda: len(_delivered(s)) == 6 + i, 20, 0.02,
                   "delivered in turn")
    wait_until(lambda: d.status()["kept"] <= 3, 10, 0.1, "pruned by bytes")
    st = d.status()
    assert st["kept"] == 3 and st["kept_bytes"] <= per * 3 + 10, st
    kept = [e["id"] for e in _search(d, "state=delivered")[0]]
    assert kept == list(reversed(ids[3:])), (kept, ids)
    d.stop()
    d.start()
    assert d.status()["kept"] == 3, d.status()


def test_archive_search_bounded():
    """A page reads a bounded stretch of seqs: with 2,500 hooks of which
    few match, pages come back with fewer than limit and a next_cursor,
    and following it finds every match, newest first."""
    s = TestSink().start()
    d = _daemon(s, retention={"delivered_s": 3600},
                sources={"src": _to(s, "/r", "acme"),
                         "rare": _to(s, "/rare", "rare")})
    rare = []
    for i in range(2500):
        if i % 1000 == 10:
            rare.append(_post(d, "rare", b'{"r":%d}' % i))
        else:
            _post(d, "src", b'{"n":%d}' % i)
    wait_until(lambda: d.status()["kept"] == 2500, 60, 0.2, "all kept")
    doc = _ok(d, "GET", "/v1/hooks?source_id=rare&limit=10")
    assert len(doc["entries"]) < 3 and doc["next_cursor"] is not None, doc
    found, pages = _search(d, "source_id=rare&limit=10")
    assert [e["id"] for e in found] == list(reversed(rare)), found
    assert pages >= 3, pages
    # A full page ends at its limit, the cursor after its last.
    page = _ok(d, "GET", "/v1/hooks?limit=7")
    assert len(page["entries"]) == 7 and page["next_cursor"], page
    nxt = _ok(d, "GET", "/v1/hooks?limit=7&cursor=" + page["next_cursor"])
    assert nxt["entries"][0]["seq"] == page["entries"][-1]["seq"] - 1, \
        (page, nxt)
    st, _, doc = d.api("GET", "/v1/hooks?state=bogus")
    assert st == 400 and doc["field"] == "state", doc
    st, _, doc = d.api("GET", "/v1/hooks?event_type=")
    assert st == 400 and doc["field"] == "event_type", doc


def test_archive_erase_under_load():
    """DELETE /v1/tenants/{t}/hooks while both tenants' hooks are ingested
    and delivered (some retried): answered with the count; afterwards
    nothing of the tenant received in the range is delivered, listed or
    kept, its dedupe entries are gone, the erase is audited, and the
    other tenant's hooks are all delivered."""
    s = TestSink().start()
    d = _daemon(s, retention={"delivered_s": 3600},
                sources={"a": _to(s, "/a", "ta",
                                  dedupe={"header": "x-key"}),
                         "b": _to(s, "/b", "tb",
                                  dedupe={"header": "x-key"})},
                dconf={"breaker_failures": 0})
    # Each delivery of a's takes a while: some are in flight (claimed)
    # when the erase deletes their hooks.
    s.mode("/a", status=200, delay_ms=40)
    stop = threading.Event()
    sent = {"a": [], "b": []}

    def load():
        i = 0
        while not stop.is_set():
            for src in ("a", "b"):
                st, hd, data = post(d.port, "/webhooks/" + src,
                                    b'{"i":%d}' % i,
                                    headers={"X-Key": "%s-%d" % (src, i)})
                if st in (200, 201, 202):
                    sent[src].append((time.time(), json.loads(data)["id"]))
            i += 1
            time.sleep(0.002)

    t = threading.Thread(target=load)
    t.start()
    try:
        time.sleep(2.0)
        assert _delivered(s, "/a"), "nothing of a delivered before"
        st, _, doc = d.api("DELETE", "/v1/tenants/ta/hooks", timeout=60)
        t_end = time.time()
        assert st == 200, (st, doc)
        assert doc["deleted"] > 0 and doc["bytes"] > 0, doc
        time.sleep(1.0)
    finally:
        stop.set()
        t.join()
    # What was received before the erase's answer (its until is its
    # request's time): nothing of it delivered after the grace above.
    cut = time.time()
    erased = {i for at, i in sent["a"] if at < t_end - 0.5}
    time.sleep(2.0)
    late = [r for r in s.records("/a") if r["t"] / 1000.0 > cut and
            r["x-ankusa-id"] in erased]
    assert late == [], late[:3]
    for hid in list(erased)[:50]:
        st, _, doc = d.api("GET", "/v1/hooks/" + hid)
        assert st == 404, (hid, st, doc)
    # Nor their attempts: those in flight during the erase too, whose
    # records their settles wrote after it had begun.
    flown = [r["x-ankusa-id"] for r in s.records("/a")
             if r["x-ankusa-id"] in erased and r["t"] / 1000.0 > t_end - 2]
    for hid in set(flown) | set(list(erased)[:50]):
        st, _, doc = d.api("GET", "/v1/hooks/%s/attempts" % hid)
        assert st == 404, (hid, st, doc)
    left = [e for e in _search(d, "tenant_id=ta")[0]
            if e["id"] in erased]
    assert left == [], left[:3]
    # Its dedupe entries went: the same key is a new hook now.
    first_key = "a-0"
    st, hd, data = post(d.port, "/webhooks/a", b'{"again":1}',
                        headers={"X-Key": first_key})
    assert st in (200, 201, 202) and json.loads(data)["id"] not in erased, \
        (st, data)
    # The other tenant: every hook delivered.
    ids_b = {i for _, i in sent["b"]}
    wait_until(lambda: ids_b <= {r["x-ankusa-id"] for r in _delivered(
        s, "/b")}, 30, 0.2, "b delivered")
    entries = _ok(d, "GET", "/v1/audit?action=tenant.erase")["entries"]
    assert len(entries) == 1 and entries[0]["tenant"] == "ta" and \
        entries[0]["outcome"] == "ok", entries


def test_archive_repl_client():
    """On a replication group: the master's kept hooks are found on a
    client (by id, by the search, in its status), across the client's
    restart, and the master's prune removes them there too."""
    from test_replication import Group
    s = TestSink().start()
    g = Group(s.url("/s"))
    for d in g.nodes:
        d.extra["retention"] = {"delivered_s": 8}
        d.write_config()
    g.start()
    m = g.master()
    ids = [_post(m, "s", b'{"n":%d}' % i) for i in range(3)]
    wait_until(lambda: m.status()["kept"] == 3, 20, 0.1, "kept on the master")
    c = [d for d in g.nodes if d is not m][0]
    wait_until(lambda: c.status()["kept"] == 3, 20, 0.1, "kept on a client")
    assert _ok(c, "GET", "/v1/hooks/" + ids[0])["kept"] is True
    got = [e["id"] for e in _search(c, "state=delivered")[0]]
    assert got == list(reversed(ids)), got
    c.stop()
    c.start(timeout=60)
    wait_until(lambda: c.status()["kept"] == 3, 20, 0.1,
               "kept on the client after its restart")
    # The master prunes; the client follows.
    wait_until(lambda: m.status()["kept"] == 0, 20, 0.2, "pruned")
    wait_until(lambda: c.status()["kept"] == 0, 20, 0.2,
               "pruned on the client")
    st, _, doc = c.api("GET", "/v1/hooks/" + ids[0])
    assert st == 404, (st, doc)


test_archive_repl_client.timeout = 180

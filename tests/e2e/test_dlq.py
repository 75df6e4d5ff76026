# SPDX-License-Identifier: ISC
"""Dead letters, single hooks and the quarantine pen on the admin API
(daemon/admin/admin_api_dlq.c, daemon/admin/admin_dlq.c): GET|DELETE /v1/dlq,
GET|DELETE /v1/hooks/{id}, GET|DELETE /v1/quarantine, queue.dlq.max_age_s and
queue.dlq.warn_rows, and ankusactl's show, delete and dlq show|purge."""

import json
import time

import ankusa
from ankusa import (HOLD_RETRY, Daemon, TestSink, expect_accepted,
                    hold_source, post, wait_until)
from test_metrics import parse, scrape

SRC_KEYS = {"id", "source_id", "tenant_id", "sink", "module", "seq",
            "received_at", "dead_lettered_at", "reason", "attempts",
            "last_error", "size", "content_type"}


def post_n(d, source, n, body=b'{"n":1}'):
    ids = []
    for i in range(n):
        st, hd, data = post(d.port, "/webhooks/" + source, body)
        ids.append(expect_accepted(st, hd, data, "post %d to %s" % (i,
                                                                    source)))
    return ids


def kill_all(d, source, ids):
    """Dead-letter the source's held hooks (their first attempt failed and
    they wait an hour): every one is dead once the call answers."""
    d.tick(30)
    d.ctl("dead-letter-source", source)
    wait_until(lambda: len(d.dlq(source=source)) >= len(ids), 10, 0.05,
               "dead letters of %s" % source)


def dlq(d, query=""):
    st, _, doc = d.api("GET", "/v1/dlq" + query)
    assert st == 200, (st, doc)
    return doc


def dead_daemon(**extra):
    return Daemon(sources={"a": hold_source(tenant="ta"),
                           "b": hold_source(tenant="tb")},
                  extra=extra or None).start()


def test_dlq_list_paging_and_filters():
    d = dead_daemon()
    a1 = post_n(d, "a", 5)
    kill_all(d, "a", a1)
    time.sleep(0.05)
    cut = int(time.time() * 1000)
    time.sleep(0.05)
    b1 = post_n(d, "b", 4)
    kill_all(d, "b", b1)
    a2 = post_n(d, "a", 3)
    kill_all(d, "a", a1 + a2)

    doc = dlq(d)
    assert doc["total"] == 12 and len(doc["entries"]) == 12, doc
    assert doc["next_cursor"] is None, doc
    e = doc["entries"][0]
    assert set(e) == SRC_KEYS, sorted(e)
    assert e["id"] == a1[0] and e["source_id"] == "a" and \
        e["tenant_id"] == "ta" and e["sink"] == 0 and \
        e["module"] == "http", e
    assert e["reason"] == "source_gone:a" and e["attempts"] == 1, e
    assert e["received_at"] <= e["dead_lettered_at"], e
    assert "body" not in json.dumps(doc), "a body was listed"
    times = [x["dead_lettered_at"] for x in doc["entries"]]
    assert times == sorted(times), "not oldest first: %r" % times

    # Pages of 5 with the cursor: every entry once, in order, total kept.
    seen, cur, pages = [], None, 0
    while True:
        q = "?limit=5" + ("&cursor=" + cur if cur else "")
        page = dlq(d, q)
        assert page["total"] == 12, page
        assert len(page["entries"]) <= 5, page
        seen += [x["id"] for x in page["entries"]]
        pages += 1
        cur = page["next_cursor"]
        if cur is None:
            break
    assert pages == 3 and seen == [x["id"] for x in doc["entries"]], \
        (pages, seen)

    # A source, with paging: its total, not the table's.
    page = dlq(d, "?source_id=a&limit=2")
    assert page["total"] == 8 and len(page["entries"]) == 2, page
    assert page["next_cursor"] is not None
    page = dlq(d, "?source_id=b")
    assert page["total"] == 4 and {x["id"] for x in page["entries"]} == \
        set(b1), page

    # since / until bound the dead time.
    page = dlq(d, "?until=%d" % cut)
    assert page["total"] == 5 and {x["id"] for x in page["entries"]} == \
        set(a1), page
    page = dlq(d, "?since=%d&source_id=a" % cut)
    assert page["total"] == 3 and {x["id"] for x in page["entries"]} == \
        set(a2), page
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(cut // 1000 + 3600))
    page = dlq(d, "?since=" + iso + "Z")
    assert page["total"] == 0 and page["entries"] == [], page

    # Bad input: 400 naming the field.
    for q, field in (("?limit=0", "limit"), ("?limit=1001", "limit"),
                     ("?limit=x", "limit"), ("?since=yesterday", "since"),
                     ("?since=20&until=10", "until"),
                     ("?cursor=zz", "cursor"), ("?source_id=a%20b",
                                                 "source_id"),
                     ("?bogus=1", "bogus")):
        st, _, err = d.api("GET", "/v1/dlq" + q)
        assert st == 400 and err["error"] == "invalid_request" and \
            err["field"] == field, (q, st, err)

    # ankusactl dlq show: the same list, for people.
    _, out, _ = d.ctl("dlq", "show", "-S", "b")
    assert "4 of 4 dead letters" in out, out
    for i in b1:
        assert i in out, out

    # A purge by dead time: what was dead before the cut.
    st, _, doc = d.api("DELETE", "/v1/dlq?until=%d" % cut)
    assert st == 200 and doc["deleted"] == 5, (st, doc)
    left = dlq(d)
    assert left["total"] == 7 and not {x["id"] for x in left["entries"]} & \
        set(a1), left


def test_dlq_purge():
    d = dead_daemon()
    a = post_n(d, "a", 4, body=b"x" * 300)
    kill_all(d, "a", a)
    b = post_n(d, "b", 3, body=b"y" * 500)
    kill_all(d, "b", b)
    before = dlq(d)

    # No filter: refused unless all=true, and nothing changed.
    st, _, err = d.api("DELETE", "/v1/dlq")
    assert st == 400 and err["field"] == "all", (st, err)
    for q, field in (("?id=nope", "id"), ("?all=maybe", "all"),
                     ("?all=true&source_id=a", "all"),
                     ("?since=5&until=1", "until"), ("?limit=3", "limit")):
        st, _, err = d.api("DELETE", "/v1/dlq" + q)
        assert st == 400 and err["field"] == field, (q, st, err)
    assert dlq(d) == before, "a refused purge changed the dead letters"

    # One hook by id.
    st, _, doc = d.api("DELETE", "/v1/dlq?id=" + a[0])
    assert st == 200 and doc == {"deleted": 1, "bytes": 300}, (st, doc)
    st, _, _ = d.api("GET", "/v1/hooks/" + a[0])
    assert st == 404, st

    # A source.
    st, _, doc = d.api("DELETE", "/v1/dlq?source_id=a")
    assert st == 200 and doc == {"deleted": 3, "bytes": 900}, (st, doc)
    left = dlq(d)
    assert left["total"] == 3 and {x["id"] for x in left["entries"]} == \
        set(b), left

    # ankusactl dlq purge: a filter is needed, then --all.
    rc, _, err = d.ctl("dlq", "purge", check=False)
    assert rc != 0, err
    _, out, _ = d.ctl("dlq", "purge", "--all")
    assert "deleted 3" in out and "1500 bytes" in out, out
    assert dlq(d)["total"] == 0
    st = d.status()
    assert st["hooks"] == 0, st


def test_dlq_purge_in_steps():
    """More dead letters than one step deletes: every one goes, the
    answer counts them all."""
    d = dead_daemon()
    ids = post_n(d, "a", 700)
    kill_all(d, "a", ids)
    st, _, doc = d.api("DELETE", "/v1/dlq?source_id=a", timeout=60)
    assert st == 200 and doc["deleted"] == 700, (st, doc)
    assert dlq(d)["total"] == 0
    assert d.status()["hooks"] == 0


def test_hook_show_and_delete():
    """A hook with a row due (backing off), a lane's head, a member behind
    it and a dead row; show, then delete: everything goes, the member's
    next hook heads the lane."""
    s = TestSink().start()
    s.mode("/gone", status=410)
    # The refused rows back off for an hour: with the default retry (from
    # 100 ms) an attempt came due again and held its row while the test
    # read or deleted the hook (attempts 2; 409 hook_claimed).
    src = hold_source(tenant="tx", retry=dict(HOLD_RETRY), sinks=[
        {"type": "http", "url": "http://127.0.0.1:9/hold"},
        {"type": "http", "url": "http://127.0.0.1:9/hold", "ordered": True,
         "order_key": {"header": "x-k"}},
        {"type": "http", "url": s.url("/gone"), "disable_on": []},
    ])
    d = Daemon(sources={"x": src}).start()
    ids = []
    for i in range(2):
        st, hd, data = post(d.port, "/webhooks/x", b'{"i":%d}' % i,
                            headers={"x-k": "one", "content-type":
                                     "application/json"})
        ids.append(expect_accepted(st, hd, data))
    d.tick(30)
    st, _, h = d.api("GET", "/v1/hooks/" + ids[0])
    assert st == 200, (st, h)
    assert h["id"] == ids[0] and h["source_id"] == "x" and \
        h["tenant_id"] == "tx" and h["size"] == 7 and \
        h["content_type"] == "application/json" and h["claim_ref"] is None, h
    assert "body" not in h, h
    rows = {r["sink"]: r for r in h["rows"]}
    assert rows[0]["state"] == "due" and rows[0]["attempts"] == 1 and \
        rows[0]["due"] > h["received_at"] and rows[0]["last_error"], rows
    assert rows[1]["state"] == "head", rows
    assert rows[2]["state"] == "dead" and \
        rows[2]["dead_reason"] == "permanent:http 410" and \
        rows[2]["dead_lettered_at"] >= h["received_at"], rows
    _, _, h2 = d.api("GET", "/v1/hooks/" + ids[1])
    assert {r["sink"]: r["state"] for r in h2["rows"]}[1] == "member", h2

    # ankusactl show: the same, for people.
    _, out, _ = d.ctl("show", ids[0])
    assert ids[0] in out and "permanent:http 410" in out and \
        "head" in out, out

    st, _, doc = d.api("DELETE", "/v1/hooks/" + ids[0])
    assert st == 200 and doc == {"deleted": 1, "bytes": 7}, (st, doc)
    st, _, doc = d.api("GET", "/v1/hooks/" + ids[0])
    assert st == 404 and doc["error"] == "not_found", (st, doc)
    st, _, doc = d.api("DELETE", "/v1/hooks/" + ids[0])
    assert st == 404, (st, doc)
    assert dlq(d)["total"] == 1, "the hook's dead row stayed or ids[1]'s "
    d.tick(30)
    _, _, h2 = d.api("GET", "/v1/hooks/" + ids[1])
    assert {r["sink"]: r["state"] for r in h2["rows"]}[1] == "head", h2
    assert d.status()["hooks"] == 1

    # ankusactl delete.
    _, out, _ = d.ctl("delete", ids[1])
    assert "deleted" in out, out
    assert d.status()["hooks"] == 0 and dlq(d)["total"] == 0

    # Bad ids.
    st, _, err = d.api("GET", "/v1/hooks/not-a-uuid")
    assert st == 400 and err["field"] == "id", (st, err)
    st, _, err = d.api("GET", "/v1/hooks/%s?x=1" % ids[0])
    assert st == 400 and err["field"] == "x", (st, err)


def test_hook_delete_claimed():
    """A hook whose row an attempt holds is refused 409 hook_claimed, and
    kept."""
    s = TestSink().start()
    s.mode("/slow", hang=True)
    d = Daemon(sources={"s": hold_source(sinks=[
        {"type": "http", "url": s.url("/slow")}])}).start()
    hid, = post_n(d, "s", 1)
    wait_until(lambda: len(s.records("/slow")) > 0, 10, 0.02,
               "the attempt to start")
    st, _, doc = d.api("DELETE", "/v1/hooks/" + hid)
    assert st == 409 and doc["error"] == "hook_claimed", (st, doc)
    st, _, _ = d.api("GET", "/v1/hooks/" + hid)
    assert st == 200


def test_quarantine_list_and_purge():
    src = {"verify": {"type": "github", "secret": "s3cret"},
           "on_verify_failure": "quarantine",
           "sinks": [{"type": "log"}]}
    d = Daemon(sources={"q": src, "r": dict(src)}).start()
    for s, n in (("q", 3), ("r", 2)):
        for i in range(n):
            st, _, _ = post(d.port, "/webhooks/" + s, b"z" * 10,
                            headers={"x-hub-signature-256": "sha256=00"})
            assert st == 202, st
    st, _, doc = d.api("GET", "/v1/quarantine?limit=2")
    assert st == 200 and len(doc["entries"]) == 2 and doc["held"] == 5 and \
        doc["next_cursor"] is not None, (st, doc)
    _, _, doc2 = d.api("GET", "/v1/quarantine?limit=2&cursor=" +
                       doc["next_cursor"])
    assert len(doc2["entries"]) == 2, doc2
    assert not {e["id"] for e in doc["entries"]} & \
        {e["id"] for e in doc2["entries"]}
    _, _, doc = d.api("GET", "/v1/quarantine?source_id=r")
    assert len(doc["entries"]) == 2 and doc["next_cursor"] is None and \
        {e["source_id"] for e in doc["entries"]} == {"r"}, doc
    e = doc["entries"][0]
    assert set(e) == {"id", "seq", "tenant_id", "source_id", "received_at",
                      "size", "reason", "event_type"}, e

    st, _, err = d.api("DELETE", "/v1/quarantine")
    assert st == 400 and err["field"] == "all", (st, err)
    st, _, err = d.api("GET", "/v1/quarantine?limit=5000")
    assert st == 400 and err["field"] == "limit", (st, err)
    st, _, doc = d.api("DELETE", "/v1/quarantine?id=" + e["id"])
    assert st == 200 and doc == {"deleted": 1, "bytes": 10}, (st, doc)
    st, _, doc = d.api("DELETE", "/v1/quarantine?source_id=q")
    assert st == 200 and doc == {"deleted": 3, "bytes": 30}, (st, doc)
    st, _, doc = d.api("DELETE", "/v1/quarantine?all=true")
    assert st == 200 and doc == {"deleted": 1, "bytes": 10}, (st, doc)
    _, _, doc = d.api("GET", "/v1/quarantine")
    assert doc["entries"] == [] and doc["held"] == 0, doc


def test_dlq_max_age_and_warn():
    """queue.dlq.warn_rows: one warning line per crossing; max_age_s: dead
    letters older than that are purged with their hooks."""
    d = dead_daemon(queue={"dlq": {"warn_rows": 3}})
    ids = post_n(d, "a", 5)
    kill_all(d, "a", ids)
    wait_until(lambda: "over queue.dlq.warn_rows (3)" in d.log_text(), 10,
               0.1, "the warning")
    time.sleep(2.5)
    assert d.log_text().count("over queue.dlq.warn_rows") == 1, \
        "the warning came more than once"
    assert dlq(d)["total"] == 5, "purged without max_age_s"
    assert parse(scrape(d))[0]["ankusa_queue_dead_over_warn"] == 1

    d.extra = {"queue": {"dlq": {"warn_rows": 3, "max_age_s": 1}}}
    d.write_config()
    d.ctl("reload")
    wait_until(lambda: dlq(d)["total"] == 0, 15, 0.2, "the old dead letters "
               "to be purged")
    assert d.status()["hooks"] == 0
    wait_until(lambda: "no longer over queue.dlq.warn_rows" in d.log_text(),
               10, 0.1, "the line back under")
    assert "dead letters older than queue.dlq.max_age_s purged" in \
        d.log_text()
    assert parse(scrape(d))[0]["ankusa_queue_dead_over_warn"] == 0


def test_dlq_caller_gone():
    """A purge whose client goes away at once stops after a step; the
    daemon goes on, and its dead letters and counters agree."""
    import socket
    d = dead_daemon()
    ids = post_n(d, "a", 700)
    kill_all(d, "a", ids)
    for q in ("DELETE /v1/dlq?source_id=a", "GET /v1/dlq?source_id=a"):
        c = socket.create_connection(("127.0.0.1", d.admin_port))
        c.sendall(("%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                   "Authorization: Bearer %s\r\n\r\n" % (
                       q, d.admin_port, ankusa.ADMIN_TOKEN)).encode())
        c.close()
    time.sleep(0.5)
    assert d.running()
    doc = dlq(d)
    assert doc["total"] == d.status()["dead"] == \
        dlq(d, "?source_id=a")["total"], doc["total"]
    st, _, doc = d.api("DELETE", "/v1/dlq?all=true", timeout=60)
    assert st == 200 and d.status()["hooks"] == 0, (st, doc)

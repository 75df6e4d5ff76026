# SPDX-License-Identifier: ISC
"""The delivery log lines (ankusad(8), DELIVERY LOG LINES) and log.format.

The real ankusad delivers to tests/test_sink, and the test reads the
daemon's stderr (the harness writes it to d.logpath) as an operator's
parser would: in text, each line's key=value and key="quoted" fields after
the level; in json, json.loads of each line.  One hook delivered at once
(to an http sink and a log sink: two sent lines, one delivered line), one
retried then delivered (deferred, sent), one dead-lettered by a 410
(bounced), one whose retries run out (deferred, expired); each field is
checked.  In json every line of every process must parse, the children's
included.  log.deliveries: failures leaves the successes out.  A queue
service's own words, which may be anything, never reach a line.  A burst
of failures is limited, its successes are not.
"""

import json
import re
import time

from ankusa import (Daemon, FakeSQS, TestSink, dispatch_conf,
                    expect_accepted, post, sink_source, wait_until)
from test_dispatch import post_par

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                  r"[0-9a-f]{12}$")
TRACE = re.compile(r"^[0-9a-f]{32}$")
# A text line's head: date, time, process[pid], level.
HEAD = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "
                  r"(ankusad|ankusa-edge|ankusa-deliver|ankusa-gateway)"
                  r"\[(\d+)\]: (error|warning|info|debug): (.*)$")
# One field of a text delivery line.
FIELD = re.compile(r'([a-z]+)=("(?:[^"\\]|\\.)*"|\S*)(?: |$)')
DELIVERY_KEYS = ["hook", "source", "sink", "attempt", "status", "delay",
                 "code", "trace", "reason"]
HOOK_KEYS = ["hook", "source", "status", "delay", "trace"]


def text_fields(msg):
    """A text delivery line's fields as the json form has them, or None
    for a line that is not one."""
    if not msg.startswith("hook="):
        return None
    out, pos, keys = {}, 0, []
    while pos < len(msg):
        m = FIELD.match(msg, pos)
        assert m, "not key=value at %d: %r" % (pos, msg)
        k, v = m.group(1), m.group(2)
        if v.startswith('"'):
            # \" and \\, and a byte as \xNN (taken as Latin-1).
            v = re.sub(r"\\(x[0-9a-f]{2}|.)", lambda m: chr(int(
                m.group(1)[1:], 16)) if len(m.group(1)) == 3 else
                m.group(1), v[1:-1])
        keys.append(k)
        out[k] = v
        pos = m.end()
    want = DELIVERY_KEYS if "sink" in out else HOOK_KEYS
    assert keys == [k for k in want if k in keys], \
        "keys %r out of order: %r" % (keys, msg)
    if "sink" in out:
        m = re.match(r"^(\d+)\((\w+)\)$", out["sink"])
        assert m, out["sink"]
        out["sink"], out["module"] = int(m.group(1)), m.group(2)
        out["attempt"] = int(out["attempt"])
        out["code"] = None if out["code"] == "-" else int(out["code"])
    out["delay"] = float(out["delay"])
    return out


def delivery_lines(d, fmt):
    """[(level, fields)] of the delivery lines of d's log since its start;
    in json, every line must be one JSON object."""
    out = []
    for line in d.log_since_start().splitlines():
        if line.startswith("==== start"):
            continue                    # the harness's own
        if fmt == "json":
            o = json.loads(line)
            assert isinstance(o, dict), line
            assert {"time", "level", "process", "pid"} <= set(o), o
            assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$",
                            o["time"]), o
            if "hook" in o:
                f = dict(o)
                for k in ("time", "level", "process", "pid"):
                    del f[k]
                out.append((o["level"], f))
            else:
                assert isinstance(o.get("msg"), str), o
            continue
        m = HEAD.match(line)
        assert m, "a line without date, process and level: %r" % line
        f = text_fields(m.group(4))
        if f is not None:
            assert m.group(1) == "ankusad", line
            out.append((m.group(3), f))
    return out


def post_one(d, source, body):
    st, h, data = post(d.port, "/webhooks/" + source, body)
    return expect_accepted(st, h, data, "post to " + source), time.time()


def of(lines, hook):
    return [(lv, f) for lv, f in lines if f["hook"] == hook]


def check_common(f, hook, source, t_post):
    assert f["hook"] == hook and UUID.match(hook), f
    assert f["source"] == source, f
    # delay: from the hook's receipt to the outcome, in seconds.
    assert isinstance(f["delay"], float), f
    assert 0 <= f["delay"] <= time.time() - t_post + 1.0, f
    if "trace" in f:
        assert TRACE.match(f["trace"]), f


def run_formats(fmt):
    s = TestSink().start()
    s.mode("/ok", status=200)
    s.mode("/flaky", fail_first=1, fail_status=503, status=200)
    s.mode("/gone", status=410)
    s.mode("/down", status=503)
    d = Daemon(name="ll" + fmt, sources={
        "okay": sink_source([{"type": "http", "url": s.url("/ok")},
                             {"type": "log"}], tenant="t1"),
        "flaky": sink_source([{"type": "http", "url": s.url("/flaky")}],
                             tenant="t1"),
        "gone": sink_source([{"type": "http", "url": s.url("/gone"),
                              "disable_on": []}],
                            tenant="t1"),
        "down": sink_source([{"type": "http", "url": s.url("/down")}],
                            tenant="t1", retry={"max_attempts": 2}),
    }, extra={"dispatch": dispatch_conf(breaker_failures=0),
              "log": {"format": fmt}}).start()

    ok, t_ok = post_one(d, "okay", b'{"n":1}')
    fl, t_fl = post_one(d, "flaky", b'{"n":2}')
    gn, t_gn = post_one(d, "gone", b'{"n":3}')
    dn, t_dn = post_one(d, "down", b'{"n":4}')

    def all_in():
        ls = delivery_lines(d, fmt)
        return len(of(ls, ok)) == 3 and len(of(ls, fl)) == 3 and \
            len(of(ls, gn)) == 1 and len(of(ls, dn)) == 2
    wait_until(all_in, 20, 0.1, "the delivery lines of the four hooks")
    lines = delivery_lines(d, fmt)

    # Delivered at once: one sent line per sink, then the hook's line.
    got = of(lines, ok)
    sent = sorted((f for lv, f in got if f["status"] == "sent"),
                  key=lambda f: f["sink"])
    assert [lv for lv, _ in got] == ["info"] * 3, got
    assert [(f["sink"], f["module"], f["attempt"], f["code"], f["reason"])
            for f in sent] == [(0, "http", 1, 200, "http 200"),
                               (1, "log", 1, None, "logged")], sent
    hook_line = got[-1][1]
    assert hook_line["status"] == "delivered", got
    assert set(hook_line) <= set(HOOK_KEYS) | {"trace"}, hook_line
    assert hook_line["delay"] >= max(f["delay"] for f in sent), got
    for _, f in got:
        check_common(f, ok, "okay", t_ok)

    # Retried then delivered.
    got = of(lines, fl)
    assert [(lv, f["status"]) for lv, f in got] == [
        ("warning", "deferred"), ("info", "sent"), ("info", "delivered")], got
    dfr, snt = got[0][1], got[1][1]
    assert (dfr["sink"], dfr["module"], dfr["attempt"], dfr["code"],
            dfr["reason"]) == (0, "http", 1, 503, "http 503"), dfr
    assert (snt["attempt"], snt["code"], snt["reason"]) == \
        (2, 200, "http 200"), snt
    assert snt["delay"] >= dfr["delay"], got
    for _, f in got:
        check_common(f, fl, "flaky", t_fl)

    # A 410: permanent, dead-lettered at once.
    (lv, f), = of(lines, gn)
    assert (lv, f["status"], f["sink"], f["module"], f["attempt"],
            f["code"], f["reason"]) == \
        ("warning", "bounced", 0, "http", 1, 410, "http 410"), f
    check_common(f, gn, "gone", t_gn)

    # Retries run out at max_attempts 2.
    got = of(lines, dn)
    assert [(lv, f["status"], f["attempt"], f["code"], f["reason"])
            for lv, f in got] == [
        ("warning", "deferred", 1, 503, "http 503"),
        ("warning", "expired", 2, 503, "http 503")], got
    for _, f in got:
        check_common(f, dn, "down", t_dn)
    assert {e["hook_id"] for e in d.dlq()} == {gn, dn}, d.dlq()

    # One trace id a hook, on each of its lines, or none at all.
    for h in (ok, fl, gn, dn):
        assert len({f.get("trace") for _, f in of(lines, h)}) == 1, \
            of(lines, h)

    # log.deliveries: failures (a reload): no more successes.
    d.extra["log"] = {"format": fmt, "deliveries": "failures"}
    d.write_config()
    d.ctl("reload")
    ok2, _ = post_one(d, "okay", b'{"n":5}')
    gn2, _ = post_one(d, "gone", b'{"n":6}')
    wait_until(lambda: of(delivery_lines(d, fmt), gn2), 20, 0.1,
               "the bounced line after the reload")
    wait_until(lambda: len([r for r in s.records("/ok")
                            if r["x-ankusa-id"] == ok2]) == 1, 20, 0.1,
               "the hook delivered after the reload")
    d.tick(10)
    assert of(delivery_lines(d, fmt), ok2) == [], \
        "log.deliveries: failures logged a success"

    d.stop()
    if fmt == "json":
        # Every line parsed above; the children's were among them.
        procs = {json.loads(l)["process"] for l in
                 d.log_since_start().splitlines()
                 if not l.startswith("==== start")}
        assert "ankusad" in procs and procs & {"ankusa-edge",
                                               "ankusa-deliver"}, procs
    delivery_lines(d, fmt)              # still parses after the stop


def test_loglines_text():
    run_formats("text")


def test_loglines_json():
    run_formats("json")


# What a queue service may say of an entry it refuses: a line break, a
# forged line, quotes, a backslash, a control byte.
HOSTILE = 'no\n2026-01-01T00:00:00.000Z ankusad[1]: info: hook=forged ' \
    'status=sent "quoted" \\ \x01 \u00e9'


def run_hostile(fmt):
    q = FakeSQS().start()
    q.fail = {"Code": "InvalidParameterValue", "SenderFault": True,
              "Message": HOSTILE}
    d = Daemon(name="hostile" + fmt, sources={
        "q": sink_source([q.sink()], tenant="t1")},
        extra={"dispatch": dispatch_conf(breaker_failures=0),
               "log": {"format": fmt}}).start()
    hid, t_post = post_one(d, "q", b'{"n":1}')
    wait_until(lambda: of(delivery_lines(d, fmt), hid), 20, 0.1,
               "the bounced line")
    (lv, f), = of(delivery_lines(d, fmt), hid)
    # The deliver process's words only: the code it read, not the text.
    assert (lv, f["status"], f["module"], f["attempt"], f["code"],
            f["reason"]) == ("warning", "bounced", "sqs", 1, 200,
                             "sqs InvalidParameterValue (sender)"), f
    check_common(f, hid, "q", t_post)
    log = d.log_since_start()
    assert "forged" not in log and "quoted" not in log, log[-2000:]


def test_loglines_hostile_text():
    run_hostile("text")


def test_loglines_hostile_json():
    run_hostile("json")


def test_loglines_failures_limited():
    """A sink refusing a whole burst: at most 20 bounced lines a second,
    then one line saying how many were left out, which add up; the
    successes of a burst are each logged."""
    s = TestSink().start()
    s.mode("/gone", status=410)
    s.mode("/ok", status=200)
    d = Daemon(name="limited", sources={
        "gone": sink_source([{"type": "http", "url": s.url("/gone"),
                              "disable_on": []}],
                            tenant="t1"),
        "okay": sink_source([{"type": "http", "url": s.url("/ok")}],
                            tenant="t2"),
    }, extra={"dispatch": dispatch_conf(breaker_failures=0)}).start()
    n = 300
    gone = set(post_par(d, "gone", [b'{"g":%d}' % i for i in range(n)]))
    okay = set(post_par(d, "okay", [b'{"o":%d}' % i for i in range(n)]))
    wait_until(lambda: len(d.dlq(source="gone")) == n, 30, 0.1,
               "the burst dead-lettered")
    d.tick(30)
    # A later second: one more brings the summary before its own line.
    time.sleep(1.1)
    last, _ = post_one(d, "gone", b'{"g":"last"}')
    wait_until(lambda: of(delivery_lines(d, "text"), last), 20, 0.1,
               "the last hook's line")
    lines = delivery_lines(d, "text")
    bounced = [f for _, f in lines if f["status"] == "bounced"]
    assert {f["hook"] for f in bounced} <= gone | {last}, bounced[:3]
    summed = sum(int(m.group(1)) for m in re.finditer(
        r"pipeline: bounced or expired deliveries: (\d+) more such lines "
        r"suppressed \(at most 20 a second\)", d.log_since_start()))
    assert len(bounced) + summed == n + 1, (len(bounced), summed)
    assert len(bounced) < n, "%d refusals, %d lines: not limited" % (
        n, len(bounced))
    sent = {f["hook"] for _, f in lines if f["status"] == "sent"}
    assert sent == okay, "%d of %d successes logged" % (len(sent), n)

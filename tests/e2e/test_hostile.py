# SPDX-License-Identifier: ISC
"""The master never dies on text it did not write (issue 22, section 1).

Text from outside the master (a control argument, a sink's error text)
may be any bytes and may arrive cut in the middle of a character; the
master stores and echoes it as well-formed UTF-8, and its control answers
never fail to encode.  Each test reproduces an attack that killed the
master before the fix.
"""

import hashlib
import json
import os
import random
import re
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import ankusa
import frames
from ankusa import Daemon, post, expect_accepted, wait_until

# 1,015 'a' then eight 'é': a 1,024-byte buffer cut the last 'é' in half.
LONG_MB = "a" * 1015 + "\u00e9" * 8


def _valid_utf8(s):
    try:
        s.encode("utf-8", "strict")
    except UnicodeEncodeError:
        return False
    return "\ufffd" not in s


def test_control_multibyte_arguments():
    """Every control command that echoes an argument answers a long
    multi-byte one with an error, and the master lives on."""
    d = Daemon().start()
    cmds = [
        ("dead-letter-source", LONG_MB),
        ("queue", "-S", LONG_MB),
        ("dlq", "list", "-S", LONG_MB),
        ("quarantine", "list", "-S", LONG_MB),
        ("quarantine", "purge", "-S", LONG_MB),
        ("quarantine", "release", "-S", LONG_MB),
        ("quarantine", "list", "--id", LONG_MB),
        ("quarantine", LONG_MB),
        ("dlq", LONG_MB),
        (LONG_MB,),
    ]
    for args in cmds:
        rc, out, err = d.ctl(*args, check=False)
        assert d.running(), "ankusad died on ankusactl %s ...: %s" % (
            args[0], ankusa.tail(d.logpath))
        assert rc in (1, 2), "ankusactl %s: exit %d, want 1 (refused) " \
            "or 2 (usage): %r" % (args[0], rc, (out, err))
        assert _valid_utf8(out + err), (out, err)
    st = d.status()
    assert st["pid"] > 0


class _FailingSqs(BaseHTTPRequestHandler):
    """SendMessageBatch answered 200 with every entry Failed, its Message
    300 characters of multi-byte UTF-8 (so any byte-counted cut of it
    lands inside a character)."""
    protocol_version = "HTTP/1.1"
    seen = 0
    lock = threading.Lock()

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(n))
        with _FailingSqs.lock:
            _FailingSqs.seen += len(req.get("Entries", []))
        failed = [{"Id": e["Id"], "Code": "InvalidParameterValue",
                   "SenderFault": True,
                   "Message": "\u00e9\u20ac" * 150}
                  for e in req.get("Entries", [])]
        body = json.dumps({"Successful": [], "Failed": failed},
                          ensure_ascii=False).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def test_sink_error_text_multibyte():
    """An SQS endpoint whose error text is cut mid-character by the
    outcome's buffer: the rows are dead-lettered with well-formed text,
    and `dlq list` works, before and after a restart."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _FailingSqs)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        ep = "http://127.0.0.1:%d" % srv.server_address[1]
        src = ankusa.sink_source([{
            "type": "sqs", "queue_url": ep + "/123456789012/q",
            "region": "us-east-1", "endpoint": ep,
            "access_key_id": "AKIDEXAMPLE",
            "secret_access_key": "secret"}],
            tenant="acme", retry=dict(ankusa.FAST_RETRY))
        d = Daemon(sources={"q": src}).start()
        ids = set()
        for i in range(3):
            st, h, data = post(d.port, "/webhooks/q", b'{"n":%d}' % i)
            ids.add(expect_accepted(st, h, data, "post %d" % i))
        d.tick(30)
        for round_ in ("live", "restarted"):
            dl = d.dlq(source="q")
            assert d.running(), "ankusad died on dlq list (%s): %s" % (
                round_, ankusa.tail(d.logpath))
            assert {e["hook_id"] for e in dl} == ids, (round_, dl)
            for e in dl:
                assert _valid_utf8(e["last_error"]), e["last_error"]
                assert "InvalidParameterValue" in e["last_error"], e
                assert "\u00e9\u20ac" in e["last_error"], e
            if round_ == "live":
                d.stop()
                d.start()
    finally:
        srv.shutdown()


def test_stored_broken_text_lists():
    """Records stored with text that is not UTF-8 (as older builds could
    store a sink's cut error text) list escaped, and the master lives."""
    s = ankusa.TestSink().start()
    s.mode("/x", status=503)
    src = ankusa.sink_source([{"type": "http", "url": s.url("/x")}],
                             tenant="t1",
                             retry={"base_ms": 60000, "max_ms": 60000})
    d = Daemon(sources={"b": src}).start()
    ids = set()
    for i in range(3):
        st, h, data = post(d.port, "/webhooks/b", b'{"n":%d}' % i)
        ids.add(expect_accepted(st, h, data, "post %d" % i))
    wait_until(lambda: s.received("/x") >= 3, 10, what="first attempts")
    d.tick(30)
    d.stop()
    r = subprocess.run([ankusa.binary("tests/store_plant"), d.data_dir],
                       capture_output=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == b"3", r
    d.start()
    for args in (("dlq", "list"), ("dlq", "list", "-S", "b"),
                 ("queue",)):
        for j in (True, False):
            rc, out, err = d.ctl(*args, json_out=j, check=False)
            assert d.running(), "ankusad died on %s: %s" % (
                args, ankusa.tail(d.logpath))
            assert rc == 0, (args, rc, out, err)
    dl = d.dlq(source="b")
    assert {e["hook_id"] for e in dl} == ids, dl
    for e in dl:
        assert e["last_error"] == \
            "sqs InvalidParameterValue: \u00e9\\xc3", e["last_error"]
        assert e["reason"] == "permanent:\\x80\\xff\\xe2\\x82", e["reason"]


# ------------------------------------------------- a fake edge's frames

class FakeEdges(Daemon):
    """A daemon whose edge slot 1 runs tests/e2e/fake_edge.py while frame
    files are queued (one file a start, in name order), the real edge
    otherwise; slot 0 is always the real one."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.fake = os.path.join(self.dir, "fake")
        self.libexec = os.path.join(self.dir, "libexec")
        os.makedirs(os.path.join(self.fake, "queue"))
        os.makedirs(self.libexec)
        self.child_paths.append(self.fake)      # the fake moves, writes
        for b in ("ankusa-deliver", "ankusa-gateway"):
            os.symlink(ankusa.program(b), os.path.join(self.libexec, b))
        script = os.path.join(self.libexec, "ankusa-edge")
        with open(script, "w") as f:
            f.write("""#!/bin/sh
q=%(fake)s/queue
case " $* " in
*" -i 1 "*)
	f=$(ls "$q" | sort | head -n 1)
	if [ -n "$f" ] && mv "$q/$f" %(fake)s/sent.$f; then
		exec python3 %(py)s %(fake)s/sent.$f %(fake)s/answers.$f
	fi;;
esac
exec %(edge)s "$@"
""" % {"fake": self.fake,
       "py": ankusa.program("tests/e2e/fake_edge.py"),
       "edge": ankusa.program("ankusa-edge")})
        os.chmod(script, 0o755)

    def env(self):
        e = super().env()
        e["ANKUSA_LIBEXECDIR"] = self.libexec
        return e

    def queue_frames(self, name, frames_):
        tmp = os.path.join(self.fake, "tmp." + name)
        with open(tmp, "wb") as f:
            f.write(hello_frame() + b"".join(frames_))
        os.rename(tmp, os.path.join(self.fake, "queue", name))

    def answers(self, name, ids=False):
        """The master's MSG_HOOK_RESULT frames to the fake: {frame id:
        result}, or {frame id: (result, hook id)} with ids."""
        try:
            with open(os.path.join(self.fake, "answers." + name), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return {}
        out = {}
        while len(data) >= frames.HDR.size:
            t, _, n, mid = frames.HDR.unpack(data[:frames.HDR.size])
            payload = data[frames.HDR.size:frames.HDR.size + n]
            data = data[frames.HDR.size + n:]
            if t == frames.MSG["MSG_HOOK_RESULT"]:
                r = frames.Reader(payload)
                res = r.u8()
                out[mid] = (res, r.str()) if ids else res
        return out


HOOK_ACCEPTED, HOOK_STORE_UNAVAILABLE = 0, 3
PROTO = int(re.search(r"#define MSG_PROTO_VERSION\s+(\d+)", open(
    os.path.join(ankusa.SRCDIR, "common", "msg.h")).read()).group(1))


def hello_frame():
    w = frames.Writer().u32(PROTO).str("edge").u32(1).u32(os.getpid()).u32(0)
    return frames.frame(frames.MSG["MSG_CHILD_HELLO"], 0, bytes(w.b))


def submit_frame(req, source, body, dedupe="", verdict=0, reason="",
                 tenant=None):
    w = frames.Writer()
    w.str(tenant or source).str(source).str("POST")
    w.str("/webhooks/" + source).str("application/json")
    w.u64(int(time.time() * 1000)).u8(verdict).str(reason)
    # verification (failed with a verdict), trace context, tracestate
    w.u8(1 if verdict else 0).data(bytes(range(1, 26))).str("")
    w.str(dedupe).u32(1).str("content-type").str("application/json")
    w.u32(0)
    # event type, the sinks it goes to (all), their jq failures (none)
    w.str("").u64((1 << 64) - 1).u64(0).u64(0)
    w.data(hashlib.sha256(body).digest()).u64(len(body)).data(body)
    return frames.frame(frames.MSG["MSG_HOOK_SUBMIT"], req, bytes(w.b))


def test_bad_frame_fails_alone():
    """A hook the store cannot take (a dedupe key too long for its expiry
    index, a quarantine reason over 63 bytes or not UTF-8) is refused
    alone: the good hooks beside it in the same write, so in the same
    batch, are committed, the fake edge is recycled, and the real edge
    goes on."""
    d = FakeEdges(sources={
        "s": ankusa.hold_source(),
        "pen": ankusa.hold_source(on_verify_failure="quarantine")})
    # Queued before the start: the fake runs at the first start of slot 1.
    d.queue_frames("1-dedupe", [
        submit_frame(1, "s", b'{"good":1}', dedupe="k1"),
        submit_frame(2, "s", b'{"good":22}', dedupe="k2"),
        submit_frame(3, "s", b'{"bad":1}', dedupe="x" * 1015)])
    d.queue_frames("2-reason", [
        submit_frame(4, "s", b'{"good":333}'),
        submit_frame(5, "pen", b'{"bad":2}', verdict=2, reason="r" * 100)])
    d.queue_frames("3-utf8", [
        submit_frame(6, "s", b'{"good":4444}'),
        submit_frame(7, "pen", b'{"bad":3}', verdict=2,
                     reason=b"sig\xff\xfe")])
    d.start()
    for name, n, refusal in (("1-dedupe", 3, "dedupe key of 1015 bytes"),
                             ("2-reason", 2, "reason of 100 bytes"),
                             ("3-utf8", 2, "a reason that is not UTF-8")):
        wait_until(lambda: refusal in d.log_text() or
                   len(d.answers(name)) == n, 15,
                   what="%s: a refusal or every answer" % name)
        bad = [mid for mid, r in d.answers(name).items()
               if r == HOOK_STORE_UNAVAILABLE]
        assert not bad, "%s: hooks %r answered 503" % (name, bad)
        assert refusal in d.log_text(), ankusa.tail(d.logpath)
    sizes = sorted(h["size"] for h in d.queue(source="s"))
    assert sizes == [10, 11, 12, 13], "stored: %r" % d.queue()
    assert d.queue(source="pen") == [], d.queue(source="pen")
    # The real edges (slot 0, and slot 1 once the queue is empty) commit.
    st, h, data = post(d.port, "/webhooks/s", b'{"after":1}')
    expect_accepted(st, h, data, "a hook after the fake edges")


def _mutations(rng, good):
    """Frames a broken or hostile edge might write, from good ones: bytes
    flipped in the payload, the payload cut (its length told true or
    false), a string's length made huge, types the edge never sends,
    payloads for frames that take none."""
    out = []
    for _ in range(12):
        f = bytearray(rng.choice(good))
        kind = rng.randrange(6)
        if kind == 0:
            for _ in range(rng.randrange(1, 6)):
                i = rng.randrange(frames.HDR.size, len(f))
                f[i] ^= 1 << rng.randrange(8)
        elif kind == 1:
            cut = rng.randrange(frames.HDR.size, len(f))
            f = f[:cut]
            f[4:8] = (cut - frames.HDR.size).to_bytes(4, "big")
        elif kind == 2:
            i = frames.HDR.size
            f[i:i + 4] = rng.choice([0xffffffff, 0x7fffffff,
                                     len(f)]).to_bytes(4, "big")
        elif kind == 3:
            t = rng.choice(["MSG_DELIVER_OUTCOME", "MSG_BATCH_OUTCOME",
                            "MSG_CHILD_HELLO", "MSG_HOOK_RESULT",
                            "MSG_CLAIM_OUTCOME"])
            f[0:2] = frames.MSG[t].to_bytes(2, "big")
        elif kind == 4:
            t = rng.choice(["MSG_READY_QUERY", "MSG_INGEST_EVENT",
                            "MSG_QUARANTINE_VERDICT"])
            payload = bytes(rng.randrange(256)
                            for _ in range(rng.randrange(0, 40)))
            f = bytearray(frames.frame(frames.MSG[t], 9, payload))
        else:
            f += bytes(rng.randrange(256) for _ in range(3))
            f[4:8] = (len(f) - frames.HDR.size).to_bytes(4, "big")
        out.append(bytes(f))
    return out


def test_fake_edge_random_frames():
    """A fake edge writes mutated frames of every kind an edge sends, four
    starts in a row: the master recycles it each time, keeps every hook it
    acknowledged, and its real edge and control socket go on working."""
    rng = random.Random(22)
    d = FakeEdges(sources={"s": ankusa.hold_source(),
                           "pen": ankusa.hold_source(
                               on_verify_failure="quarantine")})
    good = [submit_frame(100 + i, "s", b'{"n":%d}' % i,
                         dedupe="d%d" % i) for i in range(4)]
    good.append(submit_frame(200, "pen", b'{"q":1}', verdict=2,
                             reason="signature_mismatch"))
    for r in range(4):
        d.queue_frames("%d-random" % r, _mutations(rng, good))
    # Not d.start(): that waits for every edge's hello, and slot 1's
    # fakes come and go.
    d.spawn()
    wait_until(lambda: ankusa.get(d.port, "/health", timeout=1.0)[0] ==
               200, 15, what="GET /health")
    wait_until(lambda: not os.listdir(os.path.join(d.fake, "queue")), 30,
               what="four fake edge starts")
    wait_until(lambda: d.log_text().count("recycling it") >= 4, 15,
               what="four recycled fakes")
    assert d.running(), ankusa.tail(d.logpath)
    st, h, data = post(d.port, "/webhooks/s", b'{"after":1}')
    hid = expect_accepted(st, h, data, "a hook after the fake edges")
    assert hid in {x["id"] for x in d.queue(source="s")}
    # No good frame was failed by a bad one beside it, and every hook
    # the fakes were told was accepted is stored.
    stored = {x["id"] for x in d.queue(source="s")}
    for name in ("%d-random" % r for r in range(4)):
        for mid, (res, hid) in d.answers(name, ids=True).items():
            assert res != HOOK_STORE_UNAVAILABLE, (name, mid, res)
            if res == HOOK_ACCEPTED:
                assert hid in stored, (name, mid, hid)
    d.status()
    d.stop()
    assert d.proc.returncode == 0, d.proc.returncode

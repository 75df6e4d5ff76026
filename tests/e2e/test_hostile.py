"""The master never dies on text it did not write (issue 22, section 1).

Text from outside the master (a control argument, a sink's error text)
may be any bytes and may arrive cut in the middle of a character; the
master stores and echoes it as well-formed UTF-8, and its control answers
never fail to encode.  Each test reproduces an attack that killed the
master before the fix.
"""

import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import ankusa
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

# SPDX-License-Identifier: ISC
"""Frames of the master<->child protocol (common/msg.h), for tests that
drive a child process directly over its socketpair.

A frame: a 16-byte header (type u16, flags u16, payload length u32, id
u64, all big-endian) and the payload; u8/u16/u32/u64 big-endian, a str is
u32 length + bytes + NUL, data is u32 length + bytes.  A descriptor rides
with the frame's first byte (SCM_RIGHTS) and sets flag MSG_F_FD.  Message
type numbers are read from common/msg.h, so appending types there does
not break this file.

    d = Deliver()                      # a real ankusa-deliver
    out = d.batch(1, sqs_sink(...), [entry(...), ...])
    d.close()
"""

import fcntl
import hashlib
import json
import os
import re
import socket
import struct
import subprocess

import ankusa

HDR = struct.Struct(">HHIQ")
F_FD = 0x0001
INLINE_MAX = 4 * 1024
# A hook's trace context as jobs carry it (common/trace.h: trace id,
# parent id, flags): the specification's example ids, sampled.
TRACE = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736"
                      "00f067aa0ba902b7" "01")

SINK_HTTP, SINK_SQS, SINK_PUBSUB, SINK_LOG = 1, 2, 3, 4
KEY_NONE = 0
JOB_OK, JOB_ERROR, JOB_PERMANENT, JOB_PROXY_ERROR = 0, 1, 2, 3
RESULTS = {JOB_OK: "ok", JOB_ERROR: "error", JOB_PERMANENT: "permanent",
           JOB_PROXY_ERROR: "proxy_error"}
# A sink's proxy (common/conf.h, enum sink_proxy_mode).
PROXY_INHERIT, PROXY_NONE, PROXY_URL = 0, 1, 2


def _msg_types():
    path = os.path.join(ankusa.SRCDIR, "common", "msg.h")
    with open(path) as f:
        text = f.read()
    body = text[text.index("enum msg_type {"):]
    body = body[:body.index("};")]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = re.findall(r"\b(MSG_[A-Z0-9_]+)\s*(?:=\s*(\d+))?\s*,?", body)
    types, n = {}, 0
    for name, val in names:
        if val:
            n = int(val)
        types[name] = n
        n += 1
    return types


MSG = _msg_types()


class Writer:
    def __init__(self):
        self.b = bytearray()

    def u8(self, v):
        self.b += struct.pack(">B", v)
        return self

    def u16(self, v):
        self.b += struct.pack(">H", v)
        return self

    def u32(self, v):
        self.b += struct.pack(">I", v)
        return self

    def u64(self, v):
        self.b += struct.pack(">Q", v)
        return self

    def str(self, s):
        if s is None:
            s = ""
        if isinstance(s, str):
            s = s.encode()
        self.b += struct.pack(">I", len(s)) + s + b"\0"
        return self

    def data(self, d):
        self.b += struct.pack(">I", len(d)) + bytes(d)
        return self


class Reader:
    def __init__(self, payload):
        self.p = payload
        self.i = 0

    def _take(self, n):
        if self.i + n > len(self.p):
            raise ValueError("frame too short")
        v = self.p[self.i:self.i + n]
        self.i += n
        return v

    def u8(self):
        return self._take(1)[0]

    def u32(self):
        return struct.unpack(">I", self._take(4))[0]

    def u64(self):
        return struct.unpack(">Q", self._take(8))[0]

    def str(self):
        n = self.u32()
        s = self._take(n + 1)
        if s[-1] != 0:
            raise ValueError("str without NUL")
        return s[:-1].decode()

    def end(self):
        if self.i != len(self.p):
            raise ValueError("%d bytes left over" % (len(self.p) - self.i))


def frame(mtype, mid, payload, fd=False):
    return HDR.pack(mtype, F_FD if fd else 0, len(payload), mid) + payload


# ------------------------------------------------------------ sinks, entries

def sqs_sink(queue_url, region="us-east-1", endpoint=None, group=None,
             key=None, secret=None, token=None, inline_max=65536,
             max_message=1048576, timeout_ms=10000, proxy=None):
    return {"type": SINK_SQS, "timeout_ms": timeout_ms,
            "inline_max": inline_max, "max_message": max_message,
            "proxy": proxy,
            "opts": [queue_url, region, endpoint, group, key, secret, token]}


def pubsub_sink(project, topic, endpoint, ordering_key=None, auth="none",
                token=None, inline_max=65536, max_message=10000000,
                timeout_ms=20000, proxy=None):
    return {"type": SINK_PUBSUB, "timeout_ms": timeout_ms,
            "inline_max": inline_max, "max_message": max_message,
            "proxy": proxy,
            "opts": [project, topic, endpoint, ordering_key, auth, token]}


def entry(eid, hook_id, body, tenant="acme", source="github",
          received_at=1700000000123, content_type="application/json",
          headers=(), dedupe_key="", replay_id="", attempt=1, claim_ref="",
          order_key=""):
    return dict(id=eid, hook_id=hook_id, body=bytes(body), tenant=tenant,
                source=source, received_at=received_at,
                content_type=content_type, headers=list(headers),
                dedupe_key=dedupe_key, replay_id=replay_id, attempt=attempt,
                claim_ref=claim_ref, order_key=order_key)


def _add_sink(w, sink):
    w.u8(sink["type"]).u8(0).u8(KEY_NONE).str("")
    w.u64(sink["timeout_ms"]).u64(sink["inline_max"]).u64(
        sink["max_message"])
    # The sink's proxy: its own URL, or egress.proxy's choice.
    w.u8(PROXY_URL if sink.get("proxy") else PROXY_INHERIT).str(
        sink.get("proxy") or "")
    for o in sink["opts"]:
        w.str(o)


def batch_frame(bid, sink, entries, claim=None):
    """(frame bytes, bodies) of an MSG_BATCH_JOB; bodies go by memfd when
    they total more than INLINE_MAX.  claim: a claim store (the dicts of
    test_claims.py) for the attempt's own check-in, or None."""
    w = Writer()
    _add_sink(w, sink)
    w.u32(len(entries))
    off = 0
    for e in entries:
        w.u64(e["id"]).str(e["hook_id"]).str(e["tenant"]).str(e["source"])
        w.u64(e["received_at"]).str(e["content_type"])
        w.u32(len(e["headers"]))
        for n, v in e["headers"]:
            w.str(n).str(v)
        w.str(e["dedupe_key"]).str(e["replay_id"]).u32(e["attempt"])
        w.str(e["claim_ref"])
        w.u8(e.get("verification", 0)).data(e.get("trace", TRACE)).str(
            e.get("tracestate", ""))
        w.str(e["order_key"])
        w.u64(off).u64(len(e["body"]))
        off += len(e["body"])
    if claim is None:
        w.u8(0)                 # no claim store: no check-in by the attempt
    else:
        w.u8(1)
        for f in ("type", "root", "bucket", "region", "endpoint", "key",
                  "secret", "token"):
            w.str(claim[f])
        w.u64(16777216).u32(claim["retention_days"])
    w.u64(off)
    bodies = b"".join(e["body"] for e in entries)
    if off <= INLINE_MAX:
        w.data(bodies)
        return frame(MSG["MSG_BATCH_JOB"], bid, bytes(w.b)), None
    return frame(MSG["MSG_BATCH_JOB"], bid, bytes(w.b), fd=True), bodies


def job_frame(jid, sink, e, sink_index=0):
    """An MSG_DELIVER_JOB of one entry (common/job.c's layout)."""
    w = Writer()
    w.str(e["hook_id"]).str(e["tenant"]).str(e["source"])
    w.u64(e["received_at"]).str(e["content_type"])
    w.u32(len(e["headers"]))
    for n, v in e["headers"]:
        w.str(n).str(v)
    w.str(e["dedupe_key"]).str(e["replay_id"]).u32(e["attempt"])
    w.str(e["claim_ref"])
    w.u8(e.get("verification", 0)).data(e.get("trace", TRACE)).str(
        e.get("tracestate", ""))
    w.data(hashlib.sha256(e["body"]).digest())
    w.u32(sink_index)
    _add_sink(w, sink)
    w.u64(len(e["body"]))
    if len(e["body"]) <= INLINE_MAX:
        w.data(e["body"])
        return frame(MSG["MSG_DELIVER_JOB"], jid, bytes(w.b)), None
    return frame(MSG["MSG_DELIVER_JOB"], jid, bytes(w.b), fd=True), \
        e["body"]


def parse_batch_outcome(payload):
    r = Reader(payload)
    n = r.u32()
    out = []
    for _ in range(n):
        out.append({"id": r.u64(), "result": RESULTS[r.u8()],
                    "retry_after_ms": r.u64(), "detail": r.str()})
    status = r.u32()
    duration = r.u64()
    r.end()
    return {"entries": out, "http_status": status, "duration_ms": duration}


def parse_job_outcome(payload):
    r = Reader(payload)
    res = {"result": RESULTS[r.u8()], "retry_after_ms": r.u64(),
           "http_status": r.u32(), "duration_ms": r.u64(),
           "detail": r.str(), "response": r.str()}
    r.end()
    return res


# ------------------------------------------------------------ the process

# The config a Deliver gets on fd 5, as the master passes it: the egress
# guard lets it reach the loopback servers of these tests.
DELIVER_CONF = ('egress: {allow: ["127.0.0.0/8", "[::1]/128"]}\n'
                'sources: {x: {sinks: [{type: log}]}}\n')


class Deliver:
    """A real ankusa-deliver on a socketpair; env adds to os.environ;
    conf is the config text on fd 5 (None: none passed), to which a
    claim_check section with ankusa.CLAIM_KEY is added.  claims_root: the
    local claim store its jobs write to, added to conf as the master's
    config would have it, since its sandbox lets it write there only."""

    def __init__(self, env=None, verbose=True, conf=DELIVER_CONF,
                 claims_root=None):
        # A deliver process signs the claim references it makes with
        # the key of its config: with a config, it gets one (and a local
        # store, the given one or a directory of the test's; a job names
        # the store it writes to).
        if conf is not None:
            if claims_root is None:
                claims_root = ankusa.tmpdir("deliver-claims")
            conf += ("claim_check: {signing_key: %s, store: {type: local, "
                     "root: %s}}\n" % (json.dumps(ankusa.CLAIM_KEY),
                                        json.dumps(claims_root)))
        self.sock, child = socket.socketpair(socket.AF_UNIX,
                                             socket.SOCK_STREAM)
        cfd = child.fileno()
        e = dict(os.environ)
        e.update(env or {})
        self.log = open(os.path.join(ankusa.tmpdir(), "deliver.log"), "ab")
        args = [ankusa.binary("ankusa-deliver"), "-d", "-g", "1", "-i", "0"]
        if verbose:
            args.append("-v")
        ffd = -1
        if conf is not None:
            ffd = os.memfd_create("ankusa-conf", 0)
            os.write(ffd, conf.encode())
            os.lseek(ffd, 0, os.SEEK_SET)

        def fds():
            # Both copied above 5 first: neither dup2 can undo the other.
            c = fcntl.fcntl(cfd, fcntl.F_DUPFD, 10)
            f = fcntl.fcntl(ffd, fcntl.F_DUPFD, 10) if ffd != -1 else -1
            os.dup2(c, 3)
            if f != -1:
                os.dup2(f, 5)

        self.proc = subprocess.Popen(
            args, pass_fds=(3, 5) if conf is not None else (3,), env=e,
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            preexec_fn=fds)
        child.close()
        if ffd != -1:
            os.close(ffd)
        self.buf = b""
        t, _, mid, payload = self.recv(10)
        if t != MSG["MSG_CHILD_HELLO"]:
            raise AssertionError("first frame %d, not a hello" % t)

    def send(self, data, body=None):
        if body is None:
            self.sock.sendall(data)
            return
        fd = os.memfd_create("body")
        try:
            os.write(fd, body)
            n = socket.send_fds(self.sock, [data[:1]], [fd])
            assert n == 1
            self.sock.sendall(data[1:])
        finally:
            os.close(fd)

    def recv(self, timeout=60):
        self.sock.settimeout(timeout)
        while True:
            if len(self.buf) >= HDR.size:
                t, fl, n, mid = HDR.unpack(self.buf[:HDR.size])
                if len(self.buf) >= HDR.size + n:
                    payload = self.buf[HDR.size:HDR.size + n]
                    self.buf = self.buf[HDR.size + n:]
                    return t, fl, mid, payload
            d = self.sock.recv(1 << 20)
            if not d:
                raise AssertionError("ankusa-deliver closed the channel; "
                                     "log:\n" + ankusa.tail(self.log.name))
            self.buf += d

    def batch(self, bid, sink, entries, timeout=120, claim=None):
        data, bodies = batch_frame(bid, sink, entries, claim=claim)
        self.send(data, bodies)
        t, _, mid, payload = self.recv(timeout)
        assert t == MSG["MSG_BATCH_OUTCOME"], "type %d" % t
        assert mid == bid, (mid, bid)
        out = parse_batch_outcome(payload)
        assert [r["id"] for r in out["entries"]] == \
            [e["id"] for e in entries]
        return out

    def job(self, jid, sink, e, timeout=60):
        data, body = job_frame(jid, sink, e)
        self.send(data, body)
        t, _, mid, payload = self.recv(timeout)
        assert t == MSG["MSG_DELIVER_OUTCOME"], "type %d" % t
        assert mid == jid
        return parse_job_outcome(payload)

    def close(self):
        try:
            self.sock.close()
        finally:
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.log.close()

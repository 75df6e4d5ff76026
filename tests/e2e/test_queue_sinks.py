# SPDX-License-Identifier: ISC
"""The queue sinks (sqs, google_pubsub) against real emulators, driving a
real ankusa-deliver over its socketpair with MSG_BATCH_JOB frames.

SQS: moto_server on a free loopback port, with SigV4 checking on (moto
checks signatures once INITIAL_NO_AUTH_ACTION_COUNT requests have gone:
the setup makes an IAM user, its key and the queues, then POSTs 0 to
/moto-api/reset-auth).  Pub/Sub: Google's emulator
(gcloud beta emulators pubsub start).  Each is started once per run, at
the first test that needs it, and stopped when the harness exits; a
missing one skips its tests with a line saying so.

Every message read back is decoded by the consumer-side helper
(qmsg.py) and compared byte for byte with the v1 JSON this file builds
on its own (expected_v1), and its body's sha256 with what was posted.
"""

import atexit
import base64
import hashlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import ankusa
import claimref
import frames
import qmsg
from ankusa import Skip

_servers = {}


def _stop_all():
    for name, (proc, _) in list(_servers.items()):
        if proc is None:
            continue
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except OSError:
            pass
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass


atexit.register(_stop_all)


def _http(method, url, body=None, headers=None, timeout=10):
    data = None
    headers = dict(headers or {})
    if body is not None:
        if isinstance(body, bytes):
            data = body
            headers.setdefault("Content-Type", "text/plain")
        else:
            data = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(url, data=data, method=method,
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _logfile(name):
    d = os.path.join(os.environ.get("TMPDIR", "/tmp"), "ankusa-emulators")
    os.makedirs(d, exist_ok=True)
    return open(os.path.join(d, "%s-%d.log" % (name, os.getpid())), "wb")


# ------------------------------------------------------------------ moto

MOTO_ACCOUNT = "123456789012"
REGION = "us-east-1"


def moto():
    """(endpoint, boto3 session factory, key, secret); Skip if missing."""
    if "moto" in _servers:
        if _servers["moto"][1] is None:
            raise Skip("moto_server unavailable (see the first skip)")
        return _servers["moto"][1]
    _servers["moto"] = (None, None)
    exe = shutil.which("moto_server")
    if exe is None:
        raise Skip("moto_server not on PATH: SQS emulator tests skipped")
    try:
        import boto3                      # noqa: F401
    except ImportError:
        raise Skip("boto3 not importable: SQS emulator tests skipped")
    port = ankusa.free_port()
    env = dict(os.environ)
    env.pop("INITIAL_NO_AUTH_ACTION_COUNT", None)
    log = _logfile("moto")
    proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=log, env=env,
                            start_new_session=True)
    _servers["moto"] = (proc, None)
    ep = "http://127.0.0.1:%d" % port

    def up():
        try:
            return _http("GET", ep + "/moto-api/data.json", timeout=1)[0] \
                == 200
        except OSError:
            return False
    ankusa.wait_until(up, timeout=30, what="moto_server up")

    import boto3
    admin = boto3.session.Session(aws_access_key_id="AKIAADMIN0000000000",
                                  aws_secret_access_key="admin",
                                  region_name=REGION)
    iam = admin.client("iam", endpoint_url=ep)
    iam.create_user(UserName="ankusa")
    iam.put_user_policy(UserName="ankusa", PolicyName="all",
                        PolicyDocument=json.dumps({
                            "Version": "2012-10-17",
                            "Statement": [{"Effect": "Allow",
                                           "Action": "*",
                                           "Resource": "*"}]}))
    k = iam.create_access_key(UserName="ankusa")["AccessKey"]
    key, secret = k["AccessKeyId"], k["SecretAccessKey"]
    # From here on every request must be signed with that key.
    st, _ = _http("POST", ep + "/moto-api/reset-auth", b"0")
    assert st == 200, st

    def session():
        return boto3.session.Session(aws_access_key_id=key,
                                     aws_secret_access_key=secret,
                                     region_name=REGION)
    val = (ep, session, key, secret)
    _servers["moto"] = (proc, val)
    return val


_qn = [0]


def make_queue(fifo=False, attrs=None):
    ep, session, _, _ = moto()
    _qn[0] += 1
    name = "q%d%s" % (_qn[0], ".fifo" if fifo else "")
    a = dict(attrs or {})
    if fifo:
        a["FifoQueue"] = "true"
    sqs = session().client("sqs", endpoint_url=ep)
    url = sqs.create_queue(QueueName=name, Attributes=a)["QueueUrl"]
    return url, sqs


def receive_all(sqs, url, n, timeout=20):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        r = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                MessageAttributeNames=["All"],
                                MessageSystemAttributeNames=["All"],
                                WaitTimeSeconds=1)
        for m in r.get("Messages", []):
            got.append(m)
            sqs.delete_message(QueueUrl=url,
                               ReceiptHandle=m["ReceiptHandle"])
    return got


# ------------------------------------------------------------ the message

def expected_v1(e, inline_max=65536, claim=None):
    """Queue message v1 of an entry, built here independently of the C
    code (compact JSON, keys in the contract's order, ASCII only)."""
    body = e["body"]
    idem = ("%s:%s:%s" % (e["tenant"], e["source"], e["dedupe_key"])
            if e["dedupe_key"] else e["hook_id"])
    hdrs = {}
    for n, v in e["headers"]:
        n = n.lower()
        hdrs[n] = hdrs[n] + ", " + v if n in hdrs else v
    m = {"v": 1, "id": e["hook_id"], "source_id": e["source"],
         "tenant_id": e["tenant"], "received_at": e["received_at"],
         "content_type": e["content_type"] or "application/octet-stream",
         "size": len(body), "sha256": hashlib.sha256(body).hexdigest(),
         "dedupe_key": e["dedupe_key"] or None,
         "replay_id": e["replay_id"] or None, "idempotency_key": idem,
         "headers": hdrs}
    if len(body) > inline_max:
        m["claim"] = claim if claim is not None else e["claim_ref"]
    else:
        m["body_base64"] = base64.b64encode(body).decode()
    return json.dumps(m, separators=(",", ":"), ensure_ascii=True)


def sample_entries(n, prefix="h", base=0, **kw):
    out = []
    for i in range(n):
        body = json.dumps({"n": i, "prefix": prefix, "pad": "x" * (i * 37),
                           "bin": "caf\u00e9 \u20ac \U0001F600"}).encode()
        if i % 5 == 4:
            body = bytes(range(256)) * (i + 1)      # not UTF-8 at all
        e = frames.entry(
            base + i, "%s-%04d-0189-7a5d-ac96" % (prefix, i), body,
            tenant="acme" if i % 2 else "globex", source="github",
            received_at=1700000000000 + i,
            content_type="" if i % 7 == 3 else "application/json",
            headers=[("X-GitHub-Event", "push"), ("User-Agent", "GH/1"),
                     ("x-github-event", "e%d" % i)][:1 + i % 3],
            dedupe_key="d-%d" % i if i % 3 == 0 else "",
            replay_id="r-%d" % i if i % 4 == 1 else "", attempt=1 + i % 3)
        e.update(kw)
        out.append(e)
    return out


def _stored(e):
    """(tenant, claim id) of the entry's stored reference (v1 or v2)."""
    parts = e["claim_ref"].split(":")
    return parts[4], parts[5]


def _renewed(v, e):
    """The reference a message carries: the entry's stored one renewed
    for the delivery (claim_upload_renew): v2, signed with the tests' key,
    to the same tenant and claim id.  None for a body sent inline."""
    if "claim" not in v:
        return None
    tenant, cid, _ = claimref.parse(v["claim"])
    assert (tenant, cid) == _stored(e), (v["claim"], e["claim_ref"])
    return v["claim"]


def _claims(e):
    """Until the claim gateway is wired in here: a claim fetched is the
    body the test checked in under that reference."""
    def fetch(urn):
        assert claimref.parse(urn)[:2] == _stored(e), (urn, e["claim_ref"])
        return e["body"]
    return fetch


def check_sqs_message(m, entries_by_hook, want_fifo=False, group=None):
    v = qmsg.decode(m["Body"])
    e = entries_by_hook[v["id"]]
    want = expected_v1(e, claim=_renewed(v, e))
    assert m["Body"] == want, (m["Body"][:200], want[:200])
    assert m["MD5OfBody"] == hashlib.md5(m["Body"].encode()).hexdigest()
    qmsg.assert_matches(v, e["body"], fetch_claim=_claims(e))
    attrs = {k: a["StringValue"] for k, a in
             m.get("MessageAttributes", {}).items()}
    for a in attrs.values():
        assert a
    qmsg.check_attributes(attrs, v)
    if want_fifo:
        sa = m["Attributes"]
        assert sa["MessageGroupId"] == (group or "%s/%s" % (e["tenant"],
                                                           e["source"]))
        want = e["hook_id"] + (":replay:" + e["replay_id"]
                               if e["replay_id"] else "")
        assert sa["MessageDeduplicationId"] == want, sa
    return e


# ------------------------------------------------------------- SQS tests

def test_sqs_batches():
    """A batch of 10, then one of 25 that the sink splits 10+10+5; every
    message read back equals its v1 JSON, attributes present."""
    ep, session, key, secret = moto()
    url, sqs = make_queue()
    d = frames.Deliver()
    try:
        ents = sample_entries(10, prefix="a")
        out = d.batch(1, frames.sqs_sink(url, key=key, secret=secret),
                      ents)
        assert [r["result"] for r in out["entries"]] == ["ok"] * 10, out
        assert out["http_status"] == 200
        got = receive_all(sqs, url, 10)
        assert len(got) == 10, len(got)
        byhook = {e["hook_id"]: e for e in ents}
        seen = {check_sqs_message(m, byhook)["hook_id"] for m in got}
        assert seen == set(byhook)

        ents = sample_entries(25, prefix="b", base=100)
        out = d.batch(2, frames.sqs_sink(url, key=key, secret=secret),
                      ents)
        assert [r["result"] for r in out["entries"]] == ["ok"] * 25, out
        got = receive_all(sqs, url, 25)
        assert len(got) == 25
        byhook = {e["hook_id"]: e for e in ents}
        for m in got:
            check_sqs_message(m, byhook)
    finally:
        d.close()


def test_sqs_mixed_failures():
    """Per-entry outcomes: one message over max_message_bytes is
    permanent before sending; one over the queue's MaximumMessageSize is
    refused by SQS (a 400 InvalidParameterValue for the whole request, so
    the sink resends one per request) and is permanent; one by claim
    without a reference is transient; the rest are ok and only they
    arrive."""
    ep, session, key, secret = moto()
    url, sqs = make_queue(attrs={"MaximumMessageSize": "4096"})
    d = frames.Deliver()
    try:
        ents = sample_entries(8, prefix="m")
        for e in ents:
            e["body"] = b"small %d" % e["id"]
        ents[2]["body"] = b"z" * 60000          # v1 over 65536 bytes
        ents[5]["body"] = b"y" * 5000           # fine here, too big there
        ents[6]["body"] = b"w" * 70000          # above inline_max
        sink = frames.sqs_sink(url, key=key, secret=secret,
                               max_message=65536)
        out = d.batch(3, sink, ents)
        res = [r["result"] for r in out["entries"]]
        assert res == ["ok", "ok", "permanent", "ok", "ok", "permanent",
                       "error", "ok"], out
        det = [r["detail"] for r in out["entries"]]
        assert det[2].startswith("message too large"), det[2]
        assert "InvalidParameterValue" in det[5], det[5]
        assert det[6] == "claim check-in missing", det[6]
        got = receive_all(sqs, url, 5)
        byhook = {e["hook_id"]: e for e in ents}
        assert sorted(check_sqs_message(m, byhook)["id"] for m in got) == \
            [0, 1, 3, 4, 7]
        # The same entry with a claim reference goes by claim.
        ents[6]["claim_ref"] = "urn:ankusa:claim:v1:globex:" + "0" * 26
        out = d.batch(4, sink, [ents[6]])
        assert out["entries"][0]["result"] == "ok", out
        m = receive_all(sqs, url, 1)[0]
        v = check_sqs_message(m, byhook)
        assert "claim" in qmsg.decode(m["Body"]), m["Body"]
        assert v is ents[6]
    finally:
        d.close()


def test_sqs_wrong_secret():
    """A wrong secret: moto answers 403 SignatureDoesNotMatch; every
    entry is transient (error), not dead-lettered, and says why.  No
    credentials at all: transient too, naming the options."""
    ep, session, key, secret = moto()
    url, sqs = make_queue()
    d = frames.Deliver(env={"AWS_ACCESS_KEY_ID": "",
                            "AWS_SECRET_ACCESS_KEY": ""})
    try:
        ents = sample_entries(3, prefix="w")
        out = d.batch(5, frames.sqs_sink(url, key=key,
                                         secret=secret + "x"), ents)
        for r in out["entries"]:
            assert r["result"] == "error", out
            assert "403" in r["detail"] and \
                "SignatureDoesNotMatch" in r["detail"], r["detail"]
        assert out["http_status"] == 403
        ankusa.note("wrong secret -> error: %s"
                    % out["entries"][0]["detail"])
        assert receive_all(sqs, url, 1, timeout=2) == []
        out = d.batch(6, frames.sqs_sink(url), ents)
        for r in out["entries"]:
            assert r["result"] == "error" and "no credentials" in \
                r["detail"], r
    finally:
        d.close()
    # The AWS_* environment stands in for the options.
    d = frames.Deliver(env={"AWS_ACCESS_KEY_ID": key,
                            "AWS_SECRET_ACCESS_KEY": secret})
    try:
        out = d.batch(7, frames.sqs_sink(url), ents)
        assert [r["result"] for r in out["entries"]] == ["ok"] * 3, out
        assert len(receive_all(sqs, url, 3)) == 3
    finally:
        d.close()


def test_sqs_fifo():
    """FIFO: MessageGroupId tenant/source (or the option),
    MessageDeduplicationId the hook id or <id>:replay:<rid>; the single
    job path (MSG_DELIVER_JOB) runs as a batch of one."""
    ep, session, key, secret = moto()
    url, sqs = make_queue(fifo=True)
    d = frames.Deliver()
    try:
        ents = sample_entries(10, prefix="f")
        out = d.batch(8, frames.sqs_sink(url, key=key, secret=secret),
                      ents)
        assert [r["result"] for r in out["entries"]] == ["ok"] * 10, out
        got = receive_all(sqs, url, 10)
        assert len(got) == 10
        byhook = {e["hook_id"]: e for e in ents}
        for m in got:
            check_sqs_message(m, byhook, want_fifo=True)
        # Order within a group is the batch's order.
        for g in ("acme/github", "globex/github"):
            ids = [qmsg.decode(m["Body"])["id"] for m in got
                   if m["Attributes"]["MessageGroupId"] == g]
            assert ids == sorted(ids), ids

        ents = sample_entries(3, prefix="g", base=50)
        out = d.batch(9, frames.sqs_sink(url, key=key, secret=secret,
                                         group="fixed"), ents)
        assert [r["result"] for r in out["entries"]] == ["ok"] * 3, out
        byhook = {e["hook_id"]: e for e in ents}
        for m in receive_all(sqs, url, 3):
            check_sqs_message(m, byhook, want_fifo=True, group="fixed")

        e = sample_entries(1, prefix="j", base=70)[0]
        o = d.job(70, frames.sqs_sink(url, key=key, secret=secret), e)
        assert o["result"] == "ok" and o["http_status"] == 200, o
        m = receive_all(sqs, url, 1)
        check_sqs_message(m[0], {e["hook_id"]: e}, want_fifo=True)
    finally:
        d.close()


def test_sqs_missing_queue():
    """A queue that does not exist is never created: transient."""
    ep, session, key, secret = moto()
    d = frames.Deliver()
    try:
        url = "%s/%s/nope" % (ep, MOTO_ACCOUNT)
        out = d.batch(10, frames.sqs_sink(url, key=key, secret=secret),
                      sample_entries(2, prefix="n"))
        for r in out["entries"]:
            assert r["result"] == "error", out
        ankusa.note("missing queue -> error: %s"
                    % out["entries"][0]["detail"])
        sqs = session().client("sqs", endpoint_url=ep)
        assert "nope" not in json.dumps(sqs.list_queues())
    finally:
        d.close()


# --------------------------------------------------------------- Pub/Sub

PROJECT = "test"


def pubsub():
    """The emulator's http://host:port; Skip if it cannot run here."""
    if "pubsub" in _servers:
        if _servers["pubsub"][1] is None:
            raise Skip("Pub/Sub emulator unavailable (see the first skip)")
        return _servers["pubsub"][1]
    _servers["pubsub"] = (None, None)
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        raise Skip("gcloud not on PATH: Pub/Sub emulator tests skipped")
    if shutil.which("java") is None:
        raise Skip("java not on PATH: Pub/Sub emulator tests skipped")
    port = ankusa.free_port()
    log = _logfile("pubsub")
    proc = subprocess.Popen(
        [gcloud, "beta", "emulators", "pubsub", "start",
         "--host-port=127.0.0.1:%d" % port, "--project=" + PROJECT,
         "--quiet"], stdout=log, stderr=log, stdin=subprocess.DEVNULL,
        start_new_session=True)
    _servers["pubsub"] = (proc, None)
    ep = "http://127.0.0.1:%d" % port

    def up():
        if proc.poll() is not None:
            raise Skip("the Pub/Sub emulator exited (%d); see %s"
                       % (proc.returncode, log.name))
        try:
            return _http("GET", ep + "/v1/projects/%s/topics" % PROJECT,
                         timeout=1)[0] == 200
        except OSError:
            return False
    try:
        ankusa.wait_until(up, timeout=60, interval=0.25,
                          what="the Pub/Sub emulator")
    except AssertionError:
        raise Skip("the Pub/Sub emulator did not start in 60 s; see %s"
                   % log.name)
    _servers["pubsub"] = (proc, ep)
    return ep


_tn = [0]


def make_topic(ordering=True):
    ep = pubsub()
    _tn[0] += 1
    t, s = "topic-%d" % _tn[0], "sub-%d" % _tn[0]
    st, b = _http("PUT", "%s/v1/projects/%s/topics/%s" % (ep, PROJECT, t),
                  {})
    assert st == 200, (st, b)
    st, b = _http("PUT", "%s/v1/projects/%s/subscriptions/%s"
                  % (ep, PROJECT, s),
                  {"topic": "projects/%s/topics/%s" % (PROJECT, t),
                   "enableMessageOrdering": ordering,
                   "ackDeadlineSeconds": 60})
    assert st == 200, (st, b)
    return t, s


def pull_all(s, n, timeout=30):
    ep = pubsub()
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        st, b = _http("POST", "%s/v1/projects/%s/subscriptions/%s:pull"
                      % (ep, PROJECT, s),
                      {"maxMessages": 1000, "returnImmediately": False},
                      timeout=20)
        assert st == 200, (st, b)
        msgs = json.loads(b).get("receivedMessages", [])
        if msgs:
            _http("POST", "%s/v1/projects/%s/subscriptions/%s:acknowledge"
                  % (ep, PROJECT, s),
                  {"ackIds": [m["ackId"] for m in msgs]})
        got.extend(m["message"] for m in msgs)
    return got


def check_pubsub_message(m, byhook, want_key=None):
    data = base64.b64decode(m["data"])
    v = qmsg.decode(data)
    e = byhook[v["id"]]
    assert data.decode() == expected_v1(e, claim=_renewed(v, e))
    qmsg.assert_matches(v, e["body"], fetch_claim=_claims(e))
    qmsg.check_attributes(m.get("attributes", {}), v)
    if want_key is not None:
        assert m.get("orderingKey", "") == want_key(e), (m, e["order_key"])
    return e


def test_pubsub_1000_split_by_key():
    """1000 messages in one frame, four ordering keys mixed (three lane
    keys and none): all ok, pulled back whole, each key's messages in
    the batch's order."""
    ep = pubsub()
    t, s = make_topic()
    d = frames.Deliver()
    try:
        ents = sample_entries(1000, prefix="p")
        keys = ["", "k-a", "k-b", "k-c"]
        for i, e in enumerate(ents):
            e["order_key"] = keys[(i * 7 + i // 3) % 4]
            if i % 5 == 4:
                e["body"] = e["body"][:3000]
        t0 = time.monotonic()
        out = d.batch(11, frames.pubsub_sink(PROJECT, t, ep), ents)
        dt = time.monotonic() - t0
        bad = [r for r in out["entries"] if r["result"] != "ok"]
        assert not bad, bad[:3]
        assert out["http_status"] == 200
        ankusa.note("1000 messages, 4 keys: %.2f s" % dt)
        got = pull_all(s, 1000)
        assert len(got) == 1000, len(got)
        byhook = {e["hook_id"]: e for e in ents}
        seen = {}
        for m in got:
            e = check_pubsub_message(m, byhook,
                                     want_key=lambda e: e["order_key"])
            seen.setdefault(e["order_key"], []).append(e["id"])
        assert sorted(sum(seen.values(), [])) == list(range(1000))
        for k in keys[1:]:
            assert seen[k] == sorted(seen[k]), k
    finally:
        d.close()


def test_pubsub_static_key_and_limits():
    """The ordering_key option on every message; a message over
    max_message_bytes is permanent, the rest go; the single-job path."""
    ep = pubsub()
    t, s = make_topic()
    d = frames.Deliver()
    try:
        ents = sample_entries(6, prefix="q")
        ents[3]["body"] = b"B" * 5000
        out = d.batch(12, frames.pubsub_sink(PROJECT, t, ep,
                                             ordering_key="static",
                                             max_message=4000), ents)
        res = [r["result"] for r in out["entries"]]
        assert res == ["ok", "ok", "ok", "permanent", "ok", "ok"], out
        assert out["entries"][3]["detail"].startswith("message too large")
        got = pull_all(s, 5)
        byhook = {e["hook_id"]: e for e in ents}
        assert len(got) == 5
        for m in got:
            check_pubsub_message(m, byhook, want_key=lambda e: "static")
        e = sample_entries(1, prefix="r", base=40)[0]
        o = d.job(40, frames.pubsub_sink(PROJECT, t, ep), e)
        assert o["result"] == "ok", o
        m = pull_all(s, 1)
        check_pubsub_message(m[0], {e["hook_id"]: e},
                             want_key=lambda e: "")
    finally:
        d.close()


def test_pubsub_missing_topic():
    """A topic that does not exist is never created: transient (404)."""
    ep = pubsub()
    d = frames.Deliver()
    try:
        out = d.batch(13, frames.pubsub_sink(PROJECT, "no-such-topic", ep),
                      sample_entries(2, prefix="x"))
        for r in out["entries"]:
            assert r["result"] == "error" and "404" in r["detail"], out
        st, _ = _http("GET", "%s/v1/projects/%s/topics/no-such-topic"
                      % (ep, PROJECT))
        assert st == 404
    finally:
        d.close()


class _Meta(BaseHTTPRequestHandler):
    hits = []

    def do_GET(self):
        _Meta.hits.append((self.path, self.headers.get("Metadata-Flavor")))
        if self.headers.get("Metadata-Flavor") != "Google":
            self.send_response(403)
            self.end_headers()
            return
        b = json.dumps({"access_token": "ya29.test", "expires_in": 3599,
                        "token_type": "Bearer"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *a):
        pass


class _Sink(BaseHTTPRequestHandler):
    auth = []

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(n))
        _Sink.auth.append(self.headers.get("Authorization"))
        b = json.dumps({"messageIds": [str(i) for i in
                                       range(len(req["messages"]))]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b.encode())

    def log_message(self, *a):
        pass


def test_pubsub_auth():
    """auth metadata: a token fetched once (Metadata-Flavor: Google) and
    kept across batches; an unreachable metadata server fails every
    entry transiently, saying so; auth token sends the bearer."""
    meta = ThreadingHTTPServer(("127.0.0.1", 0), _Meta)
    api = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    for srv in (meta, api):
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    ep = "http://127.0.0.1:%d" % api.server_address[1]
    d = frames.Deliver(env={"GCE_METADATA_HOST":
                            "127.0.0.1:%d" % meta.server_address[1]})
    try:
        ents = sample_entries(3, prefix="z")
        for bid in (14, 15):
            out = d.batch(bid, frames.pubsub_sink(PROJECT, "topic-x", ep,
                                                  auth="metadata"), ents)
            assert [r["result"] for r in out["entries"]] == ["ok"] * 3, out
        assert len(_Meta.hits) == 1, _Meta.hits
        assert _Meta.hits[0] == ("/computeMetadata/v1/instance/"
                                 "service-accounts/default/token",
                                 "Google")
        assert _Sink.auth == ["Bearer ya29.test"] * 2, _Sink.auth
        out = d.batch(16, frames.pubsub_sink(PROJECT, "topic-x", ep,
                                             auth="token", token="tok-1"),
                      ents)
        assert [r["result"] for r in out["entries"]] == ["ok"] * 3
        assert _Sink.auth[-1] == "Bearer tok-1"
        # No auth option: metadata, the default.
        out = d.batch(17, frames.pubsub_sink(PROJECT, "topic-x", ep, auth=None),
                      ents)
        assert _Sink.auth[-1] == "Bearer ya29.test"
    finally:
        d.close()
        meta.shutdown()
    d = frames.Deliver(env={"GCE_METADATA_HOST":
                            "127.0.0.1:%d" % ankusa.free_port()})
    try:
        out = d.batch(18, frames.pubsub_sink(PROJECT, "topic-x", ep,
                                             auth="metadata"), ents)
        for r in out["entries"]:
            assert r["result"] == "error" and "metadata server" in \
                r["detail"] and "unreachable" in r["detail"], r
        ankusa.note("metadata down -> error: %s"
                    % out["entries"][0]["detail"])
    finally:
        d.close()
        api.shutdown()


test_pubsub_1000_split_by_key.timeout = 240
test_sqs_batches.timeout = 180


def test_sqs_claim_fallback_checkin():
    """The spec's claim check fallback: an entry above inline_max_bytes
    whose hook has no claim reference (its pack failed) is checked in by
    the attempt itself when the batch carries the claim store; the message
    then goes by claim, and the body read back from the pack is the one
    posted.  Without the store it is answered 'claim check-in missing'."""
    import test_claims
    ep, session, key, secret = moto()
    url, sqs = make_queue()
    root = os.path.join(ankusa.tmpdir("fallback"), "claims")
    store = test_claims.local_store(root)
    big = os.urandom(3000)
    ents = [frames.entry(1, "fb-0001-0189-7a5d-ac96", big, tenant="acme",
                         source="github"),
            frames.entry(2, "fb-0002-0189-7a5d-ac96", b'{"small":1}',
                         tenant="acme", source="github")]
    sink = frames.sqs_sink(url, key=key, secret=secret, inline_max=1000)
    d = frames.Deliver(claims_root=root)
    try:
        out = d.batch(1, sink, ents)
        r = {x["id"]: x for x in out["entries"]}
        assert r[1]["result"] == "error" and \
            "claim check-in missing" in r[1]["detail"], r[1]
        assert r[2]["result"] == "ok", r[2]
        ents[0]["id"], ents[1]["id"] = 3, 4
        out = d.batch(2, sink, ents, claim=store)
        assert [x["result"] for x in out["entries"]] == ["ok", "ok"], out
    finally:
        d.close()
    got = receive_all(sqs, url, 3)
    bycl = [qmsg.decode(m["Body"]) for m in got]
    claimed = [v for v in bycl if "claim" in v]
    assert len(claimed) == 1, bycl
    v = claimed[0]
    # Read the body back from the pack the attempt wrote.
    g = test_claims.Gateway({"ip": "127.0.0.1", "store": {
        "type": "local", "root": root}})
    try:
        st, _, body = g.ref(v["claim"])
        assert st == 200, st
        assert body == big
        qmsg.assert_matches(v, big, fetch_claim=lambda urn: body)
    finally:
        g.destroy()

# SPDX-License-Identifier: ISC
"""The kafka sink through the real daemon, against librdkafka's mock
cluster held by build/tests/kafka_mock (Debian ships no Kafka broker):
hooks posted to ankusad, batched, produced by the deliver processes,
consumed back by kafka_mock and checked byte for byte against the v1
message; large bodies by claim check through the claim gateway; a topic
the cluster does not have dead-lettered at once, naming it; the brokers
down under load and up again, every hook delivered at least once.
"""

import base64
import collections
import concurrent.futures
import hashlib
import json
import os
import subprocess
import threading
import time
import urllib.request

import ankusa
import claimref
import qmsg
from ankusa import Daemon, binary, expect_accepted, post


class KafkaMock:
    """build/tests/kafka_mock: a mock cluster with the given topics; its
    records as dicts (key, value and header values decoded), in
    self.records.  Stopped by end_test() (EOF on its stdin)."""

    def __init__(self, topics, name="kafka"):
        self.topics = list(topics)
        self.logpath = os.path.join(ankusa.tmpdir(name), "kafka_mock.log")
        self.records = []
        self.bench = []
        self.lock = threading.Lock()
        self.done = threading.Condition(self.lock)
        self.acks = []
        self.proc = None
        self.bootstraps = None
        ankusa.register(self)

    def start(self):
        log = open(self.logpath, "ab")
        self.proc = subprocess.Popen(
            [binary("tests/kafka_mock")] + self.topics,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
            start_new_session=True)
        log.close()
        self.bootstraps = self.proc.stdout.readline().decode().strip()
        assert self.bootstraps, "kafka_mock printed no bootstrap servers"
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def _read(self):
        for line in self.proc.stdout:
            line = line.decode()
            if line.startswith("done "):
                with self.lock:
                    self.acks.append(line[5:].strip())
                    self.done.notify_all()
                continue
            if line.startswith("bench "):
                with self.lock:
                    self.bench.append([int(x) for x in line.split()[1:]])
                continue
            r = json.loads(line)
            r["key"] = base64.b64decode(r["key"])
            r["value"] = base64.b64decode(r["value"])
            r["headers"] = [(n, base64.b64decode(v).decode())
                            for n, v in r["headers"]]
            with self.lock:
                self.records.append(r)

    def command(self, line):
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def set_brokers(self, state):
        """"down" or "up", returning once the mock has done it (before,
        the command was only written: hooks posted right after "down"
        could reach a broker not yet down, and the test that needs
        attempts to fail while the brokers are down failed now and
        then)."""
        with self.lock:
            n = len(self.acks)
        self.command(state)
        with self.lock:
            ok = self.done.wait_for(lambda: state in self.acks[n:], 30)
        assert ok, "kafka_mock did not say it set its brokers %s" % state

    def got(self):
        with self.lock:
            return list(self.records)

    def destroy(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self.proc.stdin.close()
            self.proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def _post_all(d, source, bodies, workers=8):
    def one(ib):
        i, b = ib
        st, h, data = post(d.port, "/webhooks/" + source, b, headers={
            "Content-Type": "application/json", "X-Event": "e%d" % i})
        return expect_accepted(st, h, data, "POST %s" % source), b
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        return dict(ex.map(one, enumerate(bodies)))


def _ids(records):
    return [v["id"] for v in (json.loads(r["value"]) for r in records)]


def _expected(v, body, tenant, source):
    """The v1 message of a hook, built here from what was posted and the
    fields the daemon chose (id, received_at, forwarded headers, claim):
    the bytes a record's value must be."""
    o = collections.OrderedDict()
    o["v"] = 1
    o["id"] = v["id"]
    o["source_id"] = source
    o["tenant_id"] = tenant
    o["received_at"] = v["received_at"]
    o["content_type"] = "application/json"
    o["size"] = len(body)
    o["sha256"] = hashlib.sha256(body).hexdigest()
    o["dedupe_key"] = None
    o["replay_id"] = None
    o["idempotency_key"] = v["id"]
    o["headers"] = v["headers"]
    if "claim" in v:
        o["claim"] = v["claim"]
    else:
        o["body_base64"] = base64.b64encode(body).decode()
    return json.dumps(o, separators=(",", ":")).encode()


def test_kafka_500():
    """500 hooks to a kafka sink: every record's value byte for byte the
    v1 message, its key tenant/source, its headers the attributes, its
    timestamp received_at; the ten large bodies by claim, fetched from the
    claim gateway."""
    k = KafkaMock(["hooks"]).start()
    gw = ankusa.free_port()
    src = ankusa.sink_source([{
        "type": "kafka", "brokers": k.bootstraps, "topic": "hooks",
        "inline_max_bytes": 4096}], tenant="acme",
        retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"orders": src}, extra={"claim_check": {
        "ip": "127.0.0.1", "port": gw,
        "store": {"type": "local", "root": os.path.join(ankusa.tmpdir(),
                                                         "claims")}}})
    d.start()
    bodies = [os.urandom(6000 + i) if i % 50 == 0 else
              b'{"n":%d,"pad":"%s"}' % (i, b"x" * (i % 97)) for i in
              range(500)]
    posted = _post_all(d, "orders", bodies)
    ankusa.wait_until(lambda: set(_ids(k.got())) >= set(posted), 120,
                      interval=0.2, what="500 records consumed")

    def fetch(urn):
        claimref.parse(urn)
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (
                gw, claimref.path(urn)), timeout=10) as r:
            assert r.status == 200
            return r.read()

    recs = k.got()
    claims = 0
    for r in recs:
        v = qmsg.decode(r["value"])
        body = posted[v["id"]]
        assert r["value"] == _expected(v, body, "acme", "orders"), \
            (r["value"][:300], _expected(v, body, "acme", "orders")[:300])
        assert ("claim" in v) == (len(body) > 4096), (len(body), v)
        claims += "claim" in v
        qmsg.assert_matches(v, body, fetch_claim=fetch)
        assert r["key"] == b"acme/orders", r["key"]
        assert r["ts"] == v["received_at"], (r["ts"], v["received_at"])
        qmsg.check_attributes(dict(r["headers"]), v)
        assert v["headers"]["x-event"].startswith("e"), v["headers"]
    dups = len(recs) - len(set(_ids(recs)))
    assert claims - dups <= 10 and len(set(
        v for v in _ids(recs) if len(posted[v]) > 4096)) == 10
    ankusa.note("kafka: 500 hooks, %d records (%d duplicates), 10 by "
                "claim" % (len(recs), dups))


def test_kafka_missing_topic():
    """A topic the cluster does not have: never created, the hook
    dead-lettered at its first attempt, the reason naming the topic."""
    k = KafkaMock(["hooks"]).start()
    src = ankusa.sink_source([{
        "type": "kafka", "brokers": k.bootstraps, "topic": "nope"}],
        tenant="acme", retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"orders": src}).start()
    posted = _post_all(d, "orders", [b'{"a":1}'])
    ankusa.wait_until(lambda: len(d.dlq("orders")) == 1, 30,
                      interval=0.3, what="the dead letter")
    dl = d.dlq("orders")[0]
    text = json.dumps(dl)
    assert "topic nope does not exist" in text, dl
    assert list(posted)[0] in text, dl
    assert k.got() == []


def test_kafka_brokers_down_under_load():
    """The brokers go down while hooks flow and come back: every hook
    accepted is delivered at least once (duplicates counted)."""
    k = KafkaMock(["hooks"]).start()
    src = ankusa.sink_source([{
        "type": "kafka", "brokers": k.bootstraps, "topic": "hooks",
        "timeout_ms": 1500}], tenant="acme",
        retry=dict(ankusa.FAST_RETRY))
    d = Daemon(sources={"orders": src}, extra={
        "dispatch": ankusa.dispatch_conf(breaker_open_ms=500,
                                         breaker_max_open_ms=1000)})
    d.start()
    posted = {}
    posted.update(_post_all(d, "orders", [b'{"n":%d}' % i
                                          for i in range(100)]))
    ankusa.wait_until(lambda: len(k.got()) >= 20, 60, interval=0.1,
                      what="the first records")
    k.set_brokers("down")
    posted.update(_post_all(d, "orders", [b'{"m":%d}' % i
                                          for i in range(100)]))
    time.sleep(3)
    k.set_brokers("up")
    ankusa.wait_until(lambda: set(_ids(k.got())) >= set(posted), 120,
                      interval=0.3, what="every hook after the brokers "
                      "came back")
    recs = k.got()
    for r in recs:
        v = qmsg.decode(r["value"])
        qmsg.assert_matches(v, posted[v["id"]])
    # The brokers were down under load: attempts failed meanwhile.
    _, out, _ = d.ctl("stats", json_out=True)
    failed = sum(n for c, n in json.loads(out)["counters"].items()
                 if c.startswith("ankusa_dispatch_deliveries_total{") and
                 'sink="kafka"' in c and 'result="ok"' not in c)
    assert failed > 0, "no attempt failed while the brokers were down"
    assert d.dlq("orders") == []
    ankusa.note("kafka down under load: %d hooks, %d records (%d "
                "duplicates), %d attempts failed meanwhile" % (
                    len(posted), len(recs),
                    len(recs) - len(set(_ids(recs))), failed))

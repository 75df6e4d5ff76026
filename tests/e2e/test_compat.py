# SPDX-License-Identifier: ISC
"""What an Elixir Ankusa operator brings: configuration files and the
ANKUSA_* environment (ankusa.yml(5), THE ELIXIR ANKUSA'S FILES and
ENVIRONMENT), and the log lines (ankusad(8), LOGGING).

The files under tests/conf/elixir-*.yml are ours, written in the shape of
the Elixir Ankusa's own examples (its config-examples and image file).
"""

import base64
import glob
import http.client
import json
import os
import re
import subprocess
import time

from ankusa import (SRCDIR, Daemon, TestSink, base_env, binary,
                    check_config, expect_accepted, free_port, get, post,
                    tmpdir, wait_until)

# What the examples' ${VAR}s name.
EXAMPLE_ENV = {
    "STRIPE_WHSEC": "whsec_c3RyaXBlLXRlc3Qtc2VjcmV0",
    "GITHUB_WEBHOOK_SECRET": "gh-secret",
    "STANDARD_WEBHOOKS_SECRET": "whsec_c3RhbmRhcmQtd2ViaG9va3M=",
    "SHOPIFY_SECRET": "shopify-secret",
    "SLACK_SIGNING_SECRET": "slack-secret",
    "CUSTOM_WEBHOOK_SECRET": "custom-new",
    "CUSTOM_WEBHOOK_SECRET_OLD": "custom-old",
    "SINK_URL": "http://sink.test:9/hooks",
    "SINK_WHSEC": "whsec_c2luay1zZWNyZXQ=",
    "SQS_QUEUE_URL": "http://sqs.test:9/000000000000/hooks",
    "S3_BUCKET": "claims",
    "S3_REGION": "us-east-1",
    "S3_ENDPOINT": "http://s3.test:9000",
    "CLAIM_SIGNING_KEY": "claim-signing-key-of-the-examples-0123",
    "NATS_TOKEN": "nats-token-of-the-examples",
    "RABBITMQ_URL": "amqps://ankusa:mq-secret@mq.test/hooks",
    "KAFKA_BROKERS": "kafka1.test:9092,kafka2.test:9092",
    "KAFKA_USERNAME": "ankusa",
    "KAFKA_SASL_PASSWORD": "kafka-secret",
}


def examples():
    return sorted(glob.glob(os.path.join(SRCDIR, "tests", "conf",
                                         "elixir-*.yml")))


def test_elixir_examples_load():
    files = examples()
    assert len(files) >= 8, "tests/conf has %d elixir-*.yml files" % \
        len(files)
    for f in files:
        rc, out = check_config(f, EXAMPLE_ENV)
        assert rc == 0, "%s: ankusad -n exit %d: %s" % (
            os.path.basename(f), rc, out)
        assert "config OK:" in out, "%s: %s" % (os.path.basename(f), out)


def write(name, text):
    path = os.path.join(tmpdir(), name)
    with open(path, "w") as f:
        f.write(text)
    return path


SRC = "sources:\n  demo:\n    sinks: [{type: log}]\n"


def test_elixir_features_refused_by_name():
    cases = [
        ("storage:\n  type: s3\n  s3: {bucket: b}\n",
         "storage is not supported by this build: it keeps no segment "
         "archive; claims go to claim_check.store, line 1"),
        ("node:\n  roles: [edge]\n",
         "node.roles: a node without dispatch, storage is not supported "
         "by this build: it runs every role (edge, dispatch, storage) in "
         "one node, line 2"),
        ("wal:\n  type: none\n",
         "wal.type: none is not supported by this build"),
        ("routes:\n  enabled: true\n",
         "routes.enabled: true is not supported by this build"),
        ("lifecycle:\n  sinks: [{type: log}]\n",
         "lifecycle is not supported by this build"),
    ]
    for i, (text, msg) in enumerate(cases):
        rc, out = check_config(write("refused-%d.yml" % i, text + SRC))
        assert rc == 78, "%r: exit %d: %s" % (text, rc, out)
        assert msg in out, "%r: want %r in: %s" % (text, msg, out)
        assert "not a known key" not in out, out


def test_env_overrides_the_file():
    # The file says one port, ANKUSA_HTTP_PORT another: the daemon listens
    # on the variable's; PORT loses to it.
    d = Daemon(name="env")
    want = d.port
    d.http["port"] = free_port()
    d.write_config()
    d.env_extra = {"ANKUSA_HTTP_PORT": str(want), "PORT": "1",
                   "ANKUSA_LOG_LEVEL": "debug"}
    d.start()
    st, _, _ = get(want, "/health")
    assert st == 200, "GET /health on ANKUSA_HTTP_PORT: %d" % st
    d.stop()

    # A bad value is a config error naming the variable, at -n and at a
    # start.
    rc, out = check_config(d.conf, {"ANKUSA_ADMIN_PORT": "http"})
    assert rc == 78, "ANKUSA_ADMIN_PORT=http: exit %d: %s" % (rc, out)
    assert "admin.port (ANKUSA_ADMIN_PORT) must be an integer in " \
        "0..65535, got http" in out, out
    rc, out = check_config(d.conf, {"ANKUSA_STORAGE_TYPE": "s3"})
    assert rc == 78 and "storage.type (ANKUSA_STORAGE_TYPE) is not " \
        "supported by this build" in out, out


# ------------------------------------------------------------ /v1/config

def test_v1_config_redacted():
    # A distinct planted secret in every key and URL part that can hold
    # one; GET /v1/config must show none of them, in any form.
    wh_verify = "whsec_" + base64.b64encode(b"PLANT-wh-verify").decode()
    wh_sink = "whsec_" + base64.b64encode(b"PLANT-wh-sink").decode()
    sources = {
        "stripe": {
            "verify": {"type": "stripe",
                       "secret": ["PLANT-stripe-new", "PLANT-stripe-old"]},
            "sinks": [{
                "type": "http",
                "url": "http://PLANT-url-user:PLANT-url-pass@127.0.0.1:9"
                       "/in?api_key=PLANT-url-query#PLANT-frag",
                "headers": {"authorization": "Bearer PLANT-hdr-auth",
                            "x-api-key": "PLANT-hdr-key"},
                "secret": wh_sink,
            }],
        },
        "std": {
            "verify": {"type": "standard_webhooks", "secret": wh_verify},
            "sinks": [{
                "type": "sqs",
                "queue_url": "http://PLANT-q-user@127.0.0.1:9/1/q"
                             "?sig=PLANT-q-query",
                "region": "us-east-1",
                "access_key_id": "PLANT-sqs-akid",
                "secret_access_key": "PLANT-sqs-secret",
                "session_token": "PLANT-sqs-session",
            }],
        },
        "gh": {
            "verify": {"type": "github", "secret": "PLANT-gh"},
            "sinks": [{
                "type": "google_pubsub", "project": "p", "topic": "t",
                "endpoint": "http://PLANT-ps-user:PLANT-ps-pass@127.0.0.1:9",
                "auth": "token", "token": "PLANT-pubsub-token",
            }],
        },
    }
    extra = {"claim_check": {
        "port": free_port(),
        "store": {"type": "s3", "s3": {
            "bucket": "claims-bucket", "region": "us-east-1",
            "endpoint": "http://PLANT-s3-user:PLANT-s3-pass@127.0.0.1:9"
                        "/?X-Amz-Security-Token=PLANT-s3-query",
            "access_key_id": "PLANT-s3-akid",
            "secret_access_key": "PLANT-s3-secret",
            "session_token": "PLANT-s3-session"}},
        "signing_key": "PLANT-claim-signing-key-0123456789abcdef"}}
    d = Daemon(name="config", sources=sources, extra=extra).start()
    st, hdrs, doc = d.api("GET", "/v1/config")
    assert st == 200, "GET /v1/config: %d %r" % (st, doc)
    raw = json.dumps(doc)
    for needle in ("PLANT", "UExBTlQ", "whsec_"):
        assert needle not in raw, "%s shown by GET /v1/config: %s" % (
            needle, raw)
    assert doc["http"]["port"] == d.port, doc["http"]
    sk = doc["sources"]["stripe"]["sinks"][0]
    assert sk["url"] == "http://<redacted>@127.0.0.1:9/in?<redacted>", sk
    assert sk["headers"] == {"authorization": "<redacted>",
                             "x-api-key": "<redacted>"}, sk
    assert doc["claim_check"]["store"]["s3"]["bucket"] == "claims-bucket"
    # A query is not allowed.
    st, _, doc = d.api("GET", "/v1/config?reveal=1")
    assert st == 400, "GET /v1/config?reveal=1: %d %r" % (st, doc)


# ------------------------------------------------------------------ logs

LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "
                  r"ankusa(d|-edge|-deliver|-gateway)\[\d+\]: "
                  r"(error|warning|info|debug): ")


def log_lines(d):
    return [l for l in d.log_text().splitlines()
            if not l.startswith("==== start")]


def test_log_failed_attempt_and_dead_letter():
    s = TestSink().start()
    s.mode("/fail", status=503)
    d = Daemon(name="logs", sources={"acme": {
        "tenant": "acme", "verify": {"type": "none"},
        "retry": {"base_ms": 10, "max_ms": 10, "max_attempts": 2,
                  "jitter": False},
        "sinks": [{"type": "http", "url": s.url("/fail")}]}}).start()
    st, h, data = post(d.port, "/webhooks/acme", b'{"n":1}')
    hid = expect_accepted(st, h, data)
    wait_until(lambda: len(d.dlq()) == 1, 20, 0.05, "the hook dead-lettered")
    d.stop()
    lines = log_lines(d)
    # Every line has its date, time and level.
    bad = [l for l in lines if not LINE.match(l)]
    assert not bad, "lines without date, time and level:\n%s" % \
        "\n".join(bad[:10])
    # The delivery lines (ankusad(8), DELIVERY LOG LINES; each field is
    # checked by test_loglines).
    failed = [l for l in lines if "status=deferred" in l]
    assert len(failed) == 1 and ": warning: " in failed[0] and \
        ("hook=%s source=acme sink=0(http) attempt=1 status=deferred "
         % hid) in failed[0] and CODE_REASON.search(failed[0]), "no warning line for the failed attempt:\n%s" % \
        "\n".join(lines[-20:])
    dead = [l for l in lines if "status=expired" in l]
    assert len(dead) == 1, "dead-letter lines: %r" % dead
    assert ": warning: " in dead[0] and (
        "hook=%s source=acme sink=0(http) attempt=2 status=expired " % hid
        ) in dead[0] and CODE_REASON.search(dead[0]), dead[0]


# code, the trace id when known, the reason (ankusad(8)).
CODE_REASON = re.compile(r'code=503 (trace=[0-9a-f]{32} )?reason="http 503"')


def test_log_verify_failures_rate_limited():
    # One edge, so that one limiter counts every forgery: at most 10
    # lines a second, and the next line after says how many were dropped.
    d = Daemon(name="forged", workers=1, sources={"gh": {
        "verify": {"type": "github", "secret": "s3cret"},
        "sinks": [{"type": "log"}]}}).start()
    n = 300
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=10)
    for i in range(n):
        st, _, data = post(d.port, "/webhooks/gh", b'{"n":%d}' % i,
                           headers={"x-hub-signature-256": "sha256=00"},
                           conn=c)
        assert st == 401, (st, data)
    c.close()
    # A later second: one more forgery brings the summary.
    time.sleep(1.1)
    st, _, _ = post(d.port, "/webhooks/gh", b"{}",
                    headers={"x-hub-signature-256": "sha256=00"})
    assert st == 401
    wait_until(lambda: "more such lines suppressed" in d.log_text(), 5,
               0.05, "the summary line")
    lines = log_lines(d)
    shown = [l for l in lines if "verification failed" in l]
    assert shown and all(": info: " in l and "source gh" in l and
                         "no_match" in l and "rejected" in l
                         for l in shown), shown[:3]
    summed = sum(int(m.group(1)) for m in (
        re.search(r"verify: failures: (\d+) more such lines suppressed", l)
        for l in lines) if m)
    assert len(shown) < n, "%d forgeries, %d lines: not limited" % (
        n, len(shown))
    assert len(shown) + summed == n + 1, \
        "%d lines + %d suppressed != %d forgeries" % (len(shown), summed,
                                                      n + 1)


def test_ankusa_config_names_the_file():
    # Without -c, ANKUSA_CONFIG names the file; -c wins over it.
    ref = os.path.join(SRCDIR, "tests", "conf", "elixir-reference.yml")
    env = base_env(dict(EXAMPLE_ENV, ANKUSA_CONFIG=ref))
    r = subprocess.run([binary("ankusad"), "-n"], stdin=subprocess.DEVNULL,
                       capture_output=True, env=env, timeout=20)
    out = (r.stdout + r.stderr).decode()
    assert r.returncode == 0 and "config OK: sources=4 sinks=5" in out, \
        "ANKUSA_CONFIG=%s: exit %d: %s" % (ref, r.returncode, out)
    other = write("other.yml", SRC)
    r = subprocess.run([binary("ankusad"), "-n", "-c", other],
                       stdin=subprocess.DEVNULL, capture_output=True,
                       env=env, timeout=20)
    out = (r.stdout + r.stderr).decode()
    assert r.returncode == 0 and "config OK: sources=1 sinks=1" in out, out


# --------------------------------------------------------------- licence

def test_licence_in_dist():
    # make dist ships LICENSE, the ISC licence.
    import ankusa
    if not os.path.exists(os.path.join(ankusa.BUILD, "Makefile")):
        raise ankusa.Skip("no Makefile in the build directory")
    dest = os.path.join(tmpdir(), "dist")
    r = subprocess.run(["make", "-s", "distdir", "distdir=" + dest],
                       cwd=ankusa.BUILD, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=120)
    assert r.returncode == 0, "make distdir: %s" % r.stderr[-2000:]
    with open(os.path.join(dest, "LICENSE")) as f:
        text = f.read()
    assert "Copyright (c) 2026 The Ankusa authors" in text, text[:200]
    assert "Permission to use, copy, modify, and distribute this software " \
        "for any\npurpose with or without fee is hereby granted" in text, \
        text[:400]


def test_log_config_errors_with_level():
    # ankusad -d on a bad file: its errors are log lines like any other
    # (-n prints them bare).
    path = write("bad.yml", "http:\n  port: x\n" + SRC)
    r = subprocess.run([binary("ankusad"), "-d", "-c", path],
                       stdin=subprocess.DEVNULL, capture_output=True,
                       env=base_env(), timeout=20)
    err = r.stderr.decode()
    assert r.returncode == 78, "exit %d: %s" % (r.returncode, err)
    lines = err.splitlines()
    assert lines and all(LINE.match(l) for l in lines), err
    assert any(": warning: http.port must be an integer in 0..65535, got "
               "x, line 2" in l for l in lines), err


def test_licence_line_in_every_source_file():
    # Every source file carries the licence line in its first two lines
    # (the second after a #! line): C, headers, Python, shell, Makefile.am,
    # configure.ac.
    missing = []
    paths = [os.path.join(SRCDIR, "Makefile.am"),
             os.path.join(SRCDIR, "configure.ac")]
    for top in ("common", "ctl", "daemon", "workers", "tests", "scripts",
                ".ci"):
        for dirpath, dirs, files in os.walk(os.path.join(SRCDIR, top)):
            dirs[:] = [d for d in dirs if not d.startswith("fuzz-corpus")]
            paths += [os.path.join(dirpath, f) for f in files]
    for p in paths:
        with open(p, "rb") as f:
            head = f.read(300)
        first = head.split(b"\n", 1)[0]
        script = first.startswith(b"#!") and (b"python" in first or
                                               b"sh" in first)
        if not (p.endswith((".c", ".h", ".py", ".lua", "Makefile.am",
                            "configure.ac")) or script):
            continue
        if b"SPDX-License-Identifier: ISC" not in b"\n".join(
                head.split(b"\n")[:2]):
            missing.append(os.path.relpath(p, SRCDIR))
    assert not missing, "no licence line in: %s" % " ".join(sorted(missing))

"""What an Elixir Ankusa operator brings: configuration files and the
ANKUSA_* environment (ankusa.yml(5), THE ELIXIR ANKUSA'S FILES and
ENVIRONMENT), and the log lines (ankusad(8), LOGGING).

The files under tests/conf/elixir-*.yml are ours, written in the shape of
the Elixir Ankusa's own examples (its config-examples and image file).
"""

import base64
import glob
import json
import os

from ankusa import (SRCDIR, Daemon, check_config, free_port, get,
                    tmpdir)

# What the examples' ${VAR}s name.
EXAMPLE_ENV = {
    "STRIPE_WHSEC": "whsec_c3RyaXBlLXRlc3Qtc2VjcmV0",
    "GITHUB_WEBHOOK_SECRET": "gh-secret",
    "STANDARD_WEBHOOKS_SECRET": "whsec_c3RhbmRhcmQtd2ViaG9va3M=",
    "SHOPIFY_SECRET": "shopify-secret",
    "SLACK_SIGNING_SECRET": "slack-secret",
    "CUSTOM_WEBHOOK_SECRET": "custom-new",
    "CUSTOM_WEBHOOK_SECRET_OLD": "custom-old",
    "SINK_URL": "http://127.0.0.1:9/hooks",
    "SINK_WHSEC": "whsec_c2luay1zZWNyZXQ=",
    "SQS_QUEUE_URL": "http://127.0.0.1:9/000000000000/hooks",
    "S3_BUCKET": "claims",
    "S3_REGION": "us-east-1",
    "S3_ENDPOINT": "http://127.0.0.1:9000",
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
        ("sources:\n  k:\n    sinks:\n      - type: kafka\n"
         "        topic: t\n",
         "sources.k.sinks[0].type: kafka is not supported by this build"),
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
            "session_token": "PLANT-s3-session"}}}}
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

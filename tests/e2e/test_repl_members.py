# SPDX-License-Identifier: ISC
"""Replication on a network nobody else reaches (issue 36, section 5).

Berkeley DB 5.3's replication manager neither encrypts nor authenticates,
so:

- ankusad refuses a replication.local that is (or resolves to) a public
  address, exit 78 with a line saying why, unless
  replication.insecure_public: true; loopback, RFC 1918, fc00::/7,
  100.64/10 and link-local are private (ankusad -n, and a real start);
- replication.peers is the membership: a fourth node, not listed by the
  three of a group, joins through one of them and the master removes it
  at once, logs an error, counts it (status, /metrics); the group goes on
  taking hooks.

Everything on loopback (127.0.0.1 ports; the config checks bind nothing),
every daemon stopped by the harness.
"""

import json
import os
import re
import subprocess

import ankusa
from ankusa import (Daemon, TestSink, binary, base_env, check_config,
                    dispatch_conf, jbody, listen_port, post, request,
                    sink_source, tail, wait_until)
from test_replication import REPL, Group

SRC = "sources:\n  demo:\n    sinks: [{type: log}]\n"


def _conf(local, extra=""):
    text = ("replication:\n  local: \"%s\"\n  peers: [\"127.0.0.1:7001\"]\n"
            "%s" % (local, extra)) + SRC
    path = os.path.join(ankusa.tmpdir(), "repl-%d.yml" % abs(hash(local +
                                                                  extra)))
    with open(path, "w") as f:
        f.write(text)
    return path


def test_repl_public_local_refused():
    """A public replication.local is refused (exit 78, the reason named);
    insecure_public lets it through; the private kinds pass."""
    for local in ("8.8.8.8:7000", "[2a00:1450::1]:7000", "0.0.0.0:7000",
                  "[::]:7000"):
        rc, out = check_config(_conf(local))
        assert rc == 78, (local, rc, out)
        assert "replication.local %s is" % local in out and \
            "neither encrypted nor authenticated" in out and \
            "replication.insecure_public: true" in out, (local, out)
        rc, out = check_config(_conf(local, "  insecure_public: true\n"))
        assert rc == 0 and "config OK" in out, (local, rc, out)
    for local in ("127.0.0.1:7000", "10.1.2.3:7000", "172.16.0.9:7000",
                  "192.168.1.1:7000", "100.64.0.7:7000", "169.254.3.3:7000",
                  "[fd00::1]:7000", "[fe80::1]:7000", "[::1]:7000",
                  "localhost:7000"):
        rc, out = check_config(_conf(local))
        assert rc == 0 and "config OK" in out, (local, rc, out)
    # A real start: the same refusal, before anything is opened.
    path = _conf("8.8.8.8:7000")
    r = subprocess.run([binary("ankusad"), "-d", "-c", path],
                       stdin=subprocess.DEVNULL, capture_output=True,
                       env=base_env(), timeout=20)
    out = (r.stdout + r.stderr).decode("utf-8", "replace")
    assert r.returncode == 78, (r.returncode, out)
    assert "replication.local 8.8.8.8:7000 is 8.8.8.8" in out, out


def _status(d):
    _, out, _ = d.ctl("status", json_out=True)
    return json.loads(out.strip().splitlines()[-1])


def _metric(d, name):
    st, _, data = request(d.admin_port, "GET", "/metrics")
    assert st == 200, st
    m = re.search(r"^%s(?:\{\})? (\S+)$" % re.escape(name),
                  data.decode(), re.M)
    return float(m.group(1)) if m else None


def test_repl_unknown_site_removed():
    """A fourth node that only lists the group's nodes as its peers (they
    do not list it) joins and is removed by the master at once: an error
    line naming it, ankusactl status's replication.unknown_sites_removed
    and unknown_sites, ankusa_replication_unknown_sites_total; while it
    asks again (it does, about once, a second later) the error line is
    not repeated within a minute; it is not among the master's sites afterwards, and the group
    still answers 201 and delivers."""
    sink = TestSink().start()
    g = Group(sink.url("/s")).start()
    m = g.master()
    assert _metric(m, "ankusa_replication_unknown_sites_total") == 0
    port = listen_port()
    addr = "127.0.0.1:%d" % port
    r = dict(REPL)
    r["local"] = addr
    r["peers"] = [g.addr(0), g.addr(1), g.addr(2)]
    stranger = Daemon(name="n3", sources={
        "s": sink_source([{"type": "http", "url": sink.url("/s")}]),
    }, extra={"replication": r, "dispatch": dispatch_conf()})
    stranger.spawn()
    line = "replication: site %s joined the group but is not in " \
        "replication.peers: removed" % addr
    wait_until(lambda: line in tail(m.logpath, 400), 40, 0.1,
               "the master to remove %s" % addr)
    logged = [x for x in tail(m.logpath, 400).splitlines() if line in x]
    assert "error:" in logged[0], logged[0]
    st = _status(m)["replication"]
    assert st["unknown_sites_removed"] >= 1, st
    assert addr in st["unknown_sites"], st
    assert _metric(m, "ankusa_replication_unknown_sites_total") >= 1
    # It asks again and is removed again, logged once.
    try:
        wait_until(lambda: _status(m)["replication"]
                   ["unknown_sites_removed"] >= 2, 10, 0.2, "")
    except AssertionError:
        pass
    logged = [x for x in tail(m.logpath, 2000).splitlines() if line in x]
    assert len(logged) == 1, logged
    # Removed for good once it stops asking.
    stranger.destroy()
    wait_until(lambda: addr not in [s["address"] for s in
                                    _status(m)["replication"]["sites"]],
               20, 0.1, "%s gone from the master's sites" % addr)
    sites = sorted(s["address"] for s in _status(m)["replication"]["sites"])
    assert sites == sorted(g.addr(i) for i in range(3)
                           if g.nodes[i] is not m), sites
    # The group goes on: a hook answered 201 and delivered.
    st, _, data = post(m.port, "/webhooks/s", b'{"after":1}')
    assert st == 201, (st, data)
    hid = jbody(data)["id"]
    wait_until(lambda: hid in sink.ids("/s"), 15, 0.05, "delivered")


test_repl_unknown_site_removed.timeout = 150

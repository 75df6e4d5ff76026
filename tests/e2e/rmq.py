# SPDX-License-Identifier: ISC
"""A RabbitMQ node of Debian's rabbitmq-server for the rabbitmq sink's
tests, and tests/amqp_tool, the plain client that reads it.

broker() starts one node per run (the first test that asks), on free
loopback ports (RABBITMQ_NODE_PORT, RABBITMQ_DIST_PORT, and a TLS
listener with a self-signed certificate), with a node name,
mnesia, logs, config and Erlang cookie (HOME) of its own under a temp
dir, and no plugins; epmd is the machine's, shared.  The harness stops it
when it exits (atexit), also after a failure.  A machine without
rabbitmq-server skips the tests that need it, with a line saying so.
"""

import atexit
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import ankusa
from ankusa import Skip

SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"
CTL = "/usr/lib/rabbitmq/bin/rabbitmqctl"

_node = {}


class Broker:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ankusa-rmq-")
        self.port = ankusa.free_port()
        self.dist = ankusa.free_port()
        self.tls_port = ankusa.free_port()
        self.name = "ankusa-%d@localhost" % os.getpid()
        with open(os.path.join(self.dir, "enabled_plugins"), "w") as f:
            f.write("[].\n")
        # A TLS listener too, with a self-signed certificate for
        # localhost that no system store trusts.
        self.cert = os.path.join(self.dir, "cert.pem")
        key = os.path.join(self.dir, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                        "-nodes", "-subj", "/CN=localhost", "-addext",
                        "subjectAltName=DNS:localhost", "-days", "2",
                        "-keyout", key, "-out", self.cert],
                       check=True, capture_output=True)
        with open(os.path.join(self.dir, "rabbitmq.conf"), "w") as f:
            f.write("listeners.tcp.1 = 127.0.0.1:%d\n" % self.port)
            f.write("listeners.ssl.1 = 127.0.0.1:%d\n" % self.tls_port)
            f.write("ssl_options.certfile = %s\n" % self.cert)
            f.write("ssl_options.keyfile = %s\n" % key)
            f.write("ssl_options.cacertfile = %s\n" % self.cert)
            f.write("ssl_options.verify = verify_none\n")
            f.write("ssl_options.fail_if_no_peer_cert = false\n")
        self.env = dict(os.environ)
        self.env.update({
            "HOME": self.dir,
            "RABBITMQ_NODENAME": self.name,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self.dist),
            "RABBITMQ_MNESIA_BASE": os.path.join(self.dir, "mnesia"),
            "RABBITMQ_LOG_BASE": os.path.join(self.dir, "log"),
            "RABBITMQ_CONFIG_FILE": os.path.join(self.dir, "rabbitmq.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": os.path.join(
                self.dir, "enabled_plugins"),
            "RABBITMQ_PID_FILE": os.path.join(self.dir, "pid"),
            "RABBITMQ_CONF_ENV_FILE": os.path.join(self.dir, "env.conf"),
        })
        self.url = "amqp://guest:guest@127.0.0.1:%d/" % self.port
        self.logpath = os.path.join(self.dir, "server.log")
        log = open(self.logpath, "ab")
        self.proc = subprocess.Popen([SERVER], stdout=log, stderr=log,
                                     env=self.env, start_new_session=True)
        log.close()
        self.wait_up()

    def ctl(self, *args, timeout=60):
        r = subprocess.run([CTL, "-n", self.name] + list(args),
                           env=self.env, capture_output=True, text=True,
                           timeout=timeout)
        if r.returncode != 0:
            raise AssertionError("rabbitmqctl %s: %s" % (
                " ".join(args), (r.stderr or r.stdout)[-500:]))
        return r.stdout

    def wait_up(self, timeout=90):
        def up():
            if self.proc.poll() is not None:
                raise AssertionError("rabbitmq-server exited %s: %s" % (
                    self.proc.returncode, ankusa.tail(self.logpath)))
            r = subprocess.run([tool(), "ping", "127.0.0.1",
                                str(self.port)], capture_output=True)
            return r.returncode == 0
        ankusa.wait_until(up, timeout=timeout, interval=0.3,
                          what="rabbitmq-server up")

    def stop_app(self):
        """The broker stops: every connection closed, the port shut; the
        node (and its durable queues) stays."""
        self.ctl("stop_app")

    def start_app(self):
        self.ctl("start_app")
        self.wait_up()

    def setup(self, exchange, etype, queue, key="#", max_length=None):
        """max_length: the queue takes that many messages and nacks the
        publishes past it (x-overflow reject-publish)."""
        run_tool("setup", "127.0.0.1", str(self.port), exchange, etype, queue,
                 key, *([] if max_length is None else [str(max_length)]))

    def consume(self, queue, count, idle_ms=3000):
        """The messages of queue (acked), each a dict (amqp_tool's line)."""
        out = run_tool("consume", "127.0.0.1", str(self.port), queue,
                       str(count), str(idle_ms), timeout=600)
        return [json.loads(l) for l in out.splitlines() if l.strip()]

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self.ctl("stop", timeout=30)
        except (AssertionError, subprocess.TimeoutExpired):
            pass
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)


def tool():
    return ankusa.binary("tests/amqp_tool")


def run_tool(*args, timeout=120):
    r = subprocess.run([tool()] + list(args), capture_output=True,
                       text=True, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError("amqp_tool %s: %s" % (args[0], r.stderr[-500:]))
    return r.stdout


def broker():
    """The run's node, started at the first call; Skip without one."""
    if "b" in _node:
        if _node["b"] is None:
            raise Skip("rabbitmq-server unavailable (see the first skip)")
        return _node["b"]
    _node["b"] = None
    if not os.path.exists(SERVER) or not os.path.exists(tool()):
        raise Skip("rabbitmq-server or build/tests/amqp_tool missing: "
                   "apt-get install rabbitmq-server, make check")
    b = Broker.__new__(Broker)
    try:
        b.__init__()
    except BaseException:
        if getattr(b, "proc", None) is not None:
            b.stop()
        raise
    _node["b"] = b
    return b


def _stop_all():
    b = _node.get("b")
    if b is not None:
        b.stop()


atexit.register(_stop_all)

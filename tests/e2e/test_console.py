# SPDX-License-Identifier: ISC
"""The console (issue 40; daemon/admin/admin_console.c, daemon/admin/ui/,
daemon/series.c): /ui/ served from the admin listener with its headers,
GET /v1/whoami and GET /v1/stats/series, and the pages driven in Debian's
chromium (chromium-driver, python3-selenium, headless) against the real
daemon: sign in; the overview's figures are the API's; a hook searched and
its attempts read; a sink paused and resumed; a dead letter replayed and
delivered; a read-only token offered no action; hostile bytes from a hook
and a sink shown as text (no alert, no element added, the CSP report
counter unchanged, and moved by a real violation); a wrong token refused.
Each page's screenshot goes to BUILD/console-screenshots/.

One browser at a time, each test its own, stopped when the test ends."""

import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import ankusa
from ankusa import Daemon, expect_accepted, post, request, wait_until

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"
# Where Debian's python3-selenium lives (the Browser class).
DEBIAN_DIST = "/usr/lib/python3/dist-packages"
READER = "reader-" + ankusa.ADMIN_TOKEN[-12:]
READ_SCOPES = ["config:read", "hooks:read", "hooks:read_body", "dlq:read",
               "replays:read", "metrics:read", "audit:read"]
HOSTILE = ['<script>window.__pwned=1</script>',
           '"><img src=x onerror="window.__pwned=2">',
           'javascript:window.__pwned=3']
HEADERS = {"content-security-policy", "x-frame-options", "referrer-policy",
           "etag", "cache-control", "content-type"}


class _Sink(BaseHTTPRequestHandler):
    """Answers every POST with the server's answer now: (status, body);
    records the bodies it received."""

    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(n)
        srv = self.server
        with srv.lock:
            status, answer = srv.answer
            srv.got.append(body)
        self.send_response(status)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


class Sink:
    def __init__(self):
        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
        self.srv.daemon_threads = True
        self.srv.answer = (200, b"thanks")
        self.srv.got = []
        self.srv.lock = threading.Lock()
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def answer(self, status, body):
        with self.srv.lock:
            self.srv.answer = (status, body)

    def got(self):
        with self.srv.lock:
            return list(self.srv.got)

    def url(self):
        return "http://127.0.0.1:%d/hook" % self.srv.server_address[1]

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def console_daemon(sink):
    d = Daemon(sources={"shop": {
        "verify": {"type": "none"},
        "event_type": {"header": "x-event"},
        "sinks": [{"type": "http", "url": sink.url()}],
    }}, extra={"dispatch": ankusa.dispatch_conf(breaker_failures=0),
               "retention": {"delivered_s": 3600}})
    d.admin["tokens"] = ankusa.admin_tokens() + [
        {"name": "reader", "token": READER, "scopes": READ_SCOPES}]
    d.write_config()
    return d.start()


def api(d, method, path, body=None):
    st, _, doc = d.api(method, path, body)
    assert 200 <= st < 300, (method, path, st, doc)
    return doc


def metric(d, name):
    """The sum of a family's series in /metrics (0 when it has none)."""
    st, _, data = request(d.admin_port, "GET", "/metrics")
    assert st == 200, st
    total = 0.0
    for line in data.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def post_hook(d, body, event="order.paid"):
    st, hd, data = post(d.port, "/webhooks/shop", body,
                        headers={"x-event": event})
    return expect_accepted(st, hd, data, "post to shop")


# ---------------------------------------------------------------- the browser

class Browser:
    """Headless chromium through chromium-driver, with a profile of its own
    in a temp dir; quit() when done (the test's finally)."""

    def __init__(self):
        try:
            from selenium import webdriver
            from selenium.webdriver.chrome.service import Service
        except ImportError:
            # A python3 of its own (pyenv, a venv) does not see Debian's
            # python3-selenium, which scripts/test installs: look there,
            # after everything else.
            if DEBIAN_DIST not in sys.path and os.path.isdir(DEBIAN_DIST):
                sys.path.append(DEBIAN_DIST)
            try:
                from selenium import webdriver
                from selenium.webdriver.chrome.service import Service
            except ImportError:
                raise ankusa.Skip("python3-selenium is not installed")
        for p in (CHROMIUM, DRIVER):
            if not os.access(p, os.X_OK):
                raise ankusa.Skip("%s is not installed" % p)
        self.profile = tempfile.mkdtemp(prefix="ankusa-chromium-")
        o = webdriver.ChromeOptions()
        o.binary_location = CHROMIUM
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu",
                  "--disable-dev-shm-usage", "--no-first-run",
                  "--disable-extensions", "--window-size=1280,900",
                  "--user-data-dir=" + self.profile):
            o.add_argument(a)
        self.shots = os.path.join(ankusa.BUILD, "console-screenshots")
        os.makedirs(self.shots, exist_ok=True)
        self.drv = webdriver.Chrome(service=Service(DRIVER), options=o)
        self.drv.set_page_load_timeout(30)

    def quit(self):
        try:
            self.drv.quit()
        finally:
            shutil.rmtree(self.profile, True)

    def js(self, script, *args):
        return self.drv.execute_script(script, *args)

    def css(self, sel):
        from selenium.webdriver.common.by import By
        return self.drv.find_elements(By.CSS_SELECTOR, sel)

    def wait(self, pred, what, timeout=15):
        deadline = time.monotonic() + timeout
        while True:
            self.no_alert()
            try:
                v = pred()
            except Exception:           # noqa: BLE001 - stale elements
                v = None
            if v:
                return v
            if time.monotonic() > deadline:
                self.shot("timeout")
                raise AssertionError("console: no %s in %d s (at %s)" % (
                    what, timeout, self.drv.current_url))
            time.sleep(0.1)

    def no_alert(self):
        from selenium.common.exceptions import NoAlertPresentException
        try:
            a = self.drv.switch_to.alert
        except NoAlertPresentException:
            return
        text = a.text
        a.dismiss()
        raise AssertionError("an alert opened: %r" % text)

    def shot(self, name):
        self.drv.save_screenshot(os.path.join(self.shots, name + ".png"))

    def page(self, d, hash_, page, after=None):
        """Go to #/hash_ and wait for #page-<page> drawn after `after`
        (a time in ms) when given."""
        self.drv.get("http://127.0.0.1:%d/ui/#/%s" % (d.admin_port, hash_))
        return self.drawn(page, after)

    def drawn(self, page, after=None):
        def ok():
            e = self.css("#page-" + page)
            if not e:
                return None
            t = int(e[0].get_attribute("data-drawn") or 0)
            return e[0] if after is None or t > after else None
        return self.wait(ok, "page " + page)

    def sign_in(self, d, token):
        self.drv.get("http://127.0.0.1:%d/ui/" % d.admin_port)
        box = self.wait(lambda: self.css("#token"), "sign-in form")[0]
        box.send_keys(token)
        self.css("#signin-go")[0].click()

    def text(self, sel):
        e = self.css(sel)
        return e[0].text if e else None

    def now_ms(self):
        return int(self.js("return Date.now()"))


def browser_test(fn):
    """Run fn(browser, daemon, sink), each stopped however it ends."""
    def run():
        sink = Sink()
        b = None
        try:
            d = console_daemon(sink)
            b = Browser()
            fn(b, d, sink)
        finally:
            if b is not None:
                b.quit()
            sink.close()
    run.__name__ = fn.__name__
    run.timeout = 240
    return run


# ---------------------------------------------------------------- no browser

def test_console_served_with_its_headers():
    """/ui/ and every file: no token, the CSP and the other headers, an
    ETag of the build's version and a 304 on it; /ui goes to /ui/; a
    name not built in is 404; the CSP report counts."""
    sink = Sink()
    try:
        d = console_daemon(sink)
        st, hd, _ = request(d.admin_port, "GET", "/ui", headers={
            "Authorization": None})
        assert st == 301 and hd["location"] == "/ui/", (st, hd)
        st, hd, html = request(d.admin_port, "GET", "/ui/", headers={
            "Authorization": None})
        assert st == 200 and hd["content-type"].startswith("text/html"), \
            (st, hd)
        csp = hd["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp \
            and "unsafe" not in csp and "report-uri /ui/csp-report" in csp, \
            csp
        assert hd["x-frame-options"] == "DENY", hd
        assert hd["referrer-policy"] == "no-referrer", hd
        assert hd["x-content-type-options"] == "nosniff", hd
        version = api(d, "GET", "/health")["version"]
        assert re.match(r'^"%s-[0-9a-f]{8}"$' % re.escape(version),
                        hd["etag"]), hd["etag"]
        # No inline script or style in the page: every script has a src.
        assert b"<style" not in html and b" style=" not in html, html
        assert all(b"src=" in s for s in re.findall(rb"<script[^>]*>", html))
        files = re.findall(rb'(?:src|href)="([a-z]+\.(?:js|css))"', html)
        assert b"app.js" in files and b"console.css" in files, files
        total = len(html)
        for name in ("app.js", "api.js", "dom.js", "chart.js",
                     "overview.js", "sinks.js", "hooks.js", "dlq.js",
                     "replays.js", "audit.js", "console.css"):
            st, hd, data = request(d.admin_port, "GET", "/ui/" + name,
                                   headers={"Authorization": None})
            assert st == 200, (name, st)
            want = "text/css" if name.endswith(".css") else \
                "text/javascript"
            assert hd["content-type"].startswith(want), (name, hd)
            assert hd["content-security-policy"] == csp, name
            assert hd["cache-control"] == "no-cache", (name, hd)
            with open(os.path.join(ankusa.SRCDIR, "daemon", "admin", "ui",
                                   name), "rb") as f:
                assert f.read() == data, "%s is not the source's" % name
            total += len(data)
            st, hd2, data = request(d.admin_port, "GET", "/ui/" + name,
                                    headers={"Authorization": None,
                                             "If-None-Match": hd["etag"]})
            assert st == 304 and data == b"", (name, st)
        ankusa.note("page weight: %d bytes of assets" % total)
        st, hd, _ = request(d.admin_port, "GET", "/ui/secret.js",
                            headers={"Authorization": None})
        assert st == 404 and "content-security-policy" in hd, st
        st, _, _ = request(d.admin_port, "GET", "/ui/../v1/config",
                           headers={"Authorization": None})
        assert st in (401, 404), st
        before = metric(d, "ankusa_console_csp_reports_total")
        st, _, _ = request(d.admin_port, "POST", "/ui/csp-report",
                           b'{"csp-report":{}}', headers={
                               "Authorization": None,
                               "Content-Type": "application/csp-report"})
        assert st == 204, st
        assert metric(d, "ankusa_console_csp_reports_total") == before + 1
        # Another site's page cannot post one (the Origin check).
        st, _, _ = request(d.admin_port, "POST", "/ui/csp-report", b"{}",
                           headers={"Authorization": None,
                                    "Origin": "http://evil.example"})
        assert st == 403, st
    finally:
        sink.close()


def test_console_whoami():
    sink = Sink()
    try:
        d = console_daemon(sink)
        assert api(d, "GET", "/v1/whoami") == {
            "name": "e2e", "scopes": ["*"], "tokens": True}
        st, hd, doc = request(d.admin_port, "GET", "/v1/whoami",
                              headers={"Authorization": "Bearer " + READER})
        doc = json.loads(doc)
        assert st == 200 and doc["name"] == "reader" and \
            sorted(doc["scopes"]) == sorted(READ_SCOPES), (st, doc)
        for auth in (None, "Bearer nope", "Basic " + READER):
            st, hd, doc = request(d.admin_port, "GET", "/v1/whoami",
                                  headers={"Authorization": auth})
            assert st == 401 and hd["www-authenticate"] == "Bearer", \
                (auth, st, doc)
    finally:
        sink.close()


def test_stats_series_counts():
    """GET /v1/stats/series: hooks committed, attempts delivered and
    failed by the class of their answer, rows dead, in the last seconds."""
    sink = Sink()
    try:
        d = console_daemon(sink)
        for i in range(3):
            post_hook(d, b'{"n":%d}' % i)
        wait_until(lambda: len(sink.got()) >= 3, 15, what="3 deliveries")
        sink.answer(422, b"no")
        post_hook(d, b'{"n":"dead"}')
        wait_until(lambda: api(d, "GET", "/v1/dlq")["total"] == 1, 15,
                   what="a dead letter")

        def sums():
            s = api(d, "GET", "/v1/stats/series?seconds=120&step=30")
            assert s["step"] == 30 and len(s["series"]["ingest"]) == 4, s
            return {k: sum(v) for k, v in s["series"].items()}
        wait_until(lambda: sums()["dead"] == 1, 10, what="dead counted")
        got = sums()
        assert got == {"ingest": 4, "delivered": 3, "failed": 1, "dead": 1,
                       "2xx": 3, "3xx": 0, "4xx": 1, "5xx": 0,
                       "no_answer": 0}, got
        st, _, doc = d.api("GET", "/v1/stats/series?seconds=10&step=20")
        assert st == 400 and doc["field"] == "step", (st, doc)
        st, _, doc = request(d.admin_port, "GET", "/v1/stats/series",
                             headers={"Authorization": "Bearer nope"})
        assert st == 401, st
    finally:
        sink.close()


def test_stats_summary():
    """GET /v1/stats/summary: the node's figures as /metrics has them, a
    sink key disabled by a 410 counted as disabled and paused."""
    sink = Sink()
    try:
        d = console_daemon(sink)
        sink.answer(410, b"gone")
        post_hook(d, b'{"n":1}')
        wait_until(lambda: api(d, "GET", "/v1/stats/summary")[
            "disabled_keys"] == 1, 15, what="the key disabled")
        s = api(d, "GET", "/v1/stats/summary")
        for k, n in (("pending", "ankusa_queue_pending"),
                     ("inflight", "ankusa_queue_inflight"),
                     ("dead", "ankusa_queue_dead"),
                     ("breakers_open", "ankusa_dispatch_breakers_open"),
                     ("paused_keys", "ankusa_dispatch_paused_keys")):
            assert s[k] == metric(d, n), (k, s[k], metric(d, n))
        assert s["paused_keys"] == 1 and s["pending"] == 1, s
        assert s["sink_keys"] == 1, s
        assert s["children"]["edge"] == 2 and \
            sum(s["children"].values()) == metric(d, "ankusa_children"), s
        assert s["restarts"] == {"edge": 0, "deliver": 0, "gateway": 0}, s
        assert s["replication"] == {"role": "single", "sites_connected": 0,
                                    "sites_disconnected": 0, "lag_s": 0}, s
        assert s["disk_free_bytes"] > 0, s
        st, _, _ = request(d.admin_port, "GET", "/v1/stats/summary",
                           headers={"Authorization": "Bearer " + READER})
        assert st == 200, st
        st, _, doc = d.api("GET", "/v1/stats/summary?x=1")
        assert st == 400 and doc["field"] == "x", (st, doc)
    finally:
        sink.close()


# ---------------------------------------------------------------- in chromium

@browser_test
def test_console_pages(b, d, sink):
    """Sign in; the overview's figures are the API's; search a hook and
    read its attempts; pause and resume a sink; replay a dead letter and
    see it delivered; every page drawn and shot."""
    ok = post_hook(d, b'{"order":1}')
    wait_until(lambda: len(sink.got()) >= 1, 15, what="a delivery")
    sink.answer(422, b"unprocessable: order 2")
    dead = post_hook(d, b'{"order":2}', event="order.failed")
    wait_until(lambda: api(d, "GET", "/v1/dlq")["total"] == 1, 15,
               what="a dead letter")

    b.sign_in(d, ankusa.ADMIN_TOKEN)
    b.drawn("overview")
    assert b.text("#who").startswith("e2e"), b.text("#who")
    b.wait(lambda: b.css("#ov-answers-4xx"), "the answers' figures")
    b.shot("overview")
    # The page's figures against the API's, the daemon being still.
    m = {k: metric(d, n) for k, n in (
        ("pending", "ankusa_queue_pending"), ("dead", "ankusa_queue_dead"),
        ("inflight", "ankusa_queue_inflight"),
        ("breakers", "ankusa_dispatch_breakers_open"),
        ("paused", "ankusa_dispatch_paused_keys"))}
    t = b.now_ms()
    page = b.drawn("overview", after=t)     # a refresh after the scrape

    def shown(k):
        return page.find_element("css selector", "#ov-" + k) \
            .get_attribute("data-value")
    for k, v in m.items():
        assert float(shown(k)) == v, (k, shown(k), v)
    assert m["dead"] == 1, m
    sinks = api(d, "GET", "/v1/sinks")["sinks"]
    assert int(shown("sinks")) == len(sinks) == 1, sinks
    assert int(shown("disabled")) == len([k for k in sinks
                                          if k["disabled"]]) == 0
    # Disk free moves with the machine's other writers: within 64 MiB.
    assert abs(float(shown("disk")) - metric(d, "ankusa_disk_free_bytes")) \
        < 1 << 26, "disk free"
    assert shown("role") == api(d, "GET", "/health")["role"]
    s = api(d, "GET", "/v1/stats/series?seconds=3600&step=60")["series"]
    for k in ("2xx", "4xx", "5xx", "no_answer"):
        assert int(shown("answers-" + k)) == sum(s[k]), (k, shown(
            "answers-" + k), sum(s[k]))
    assert int(shown("answers-2xx")) == 1 and \
        int(shown("answers-4xx")) == 1
    # The children and their restarts: an edge killed is one restart.
    assert float(shown("children")) == metric(d, "ankusa_children") > 2
    assert float(shown("restarts")) == 0
    edge = d.edges()[0]
    os.kill(edge, signal.SIGKILL)
    wait_until(lambda: metric(d, "ankusa_child_restarts_total") == 1, 10,
               what="the edge's restart counted")
    t = b.now_ms()
    page = b.drawn("overview", after=t)
    assert float(shown("restarts")) == 1, shown("restarts")

    # Search the hooks of shop whose event type is order.paid.
    b.page(d, "hooks", "hooks")
    b.css("#hook-search input[name=source_id]")[0].send_keys("shop")
    b.css("#hook-search input[name=event_type]")[0].send_keys("order.paid")
    b.css("#hook-search button[type=submit]")[0].click()
    row = b.wait(lambda: [a for a in b.css("#page-hooks td a")
                          if a.text == ok], "hook %s listed" % ok)
    assert len(b.css("#page-hooks tbody tr")) == 1, "more than the one"
    b.shot("hooks")
    row[0].click()
    b.wait(lambda: b.text("#hook-id") == ok and b.css("tr.attempt"),
           "the hook's page with its attempts")
    cells = b.css("tr.attempt")[0].find_elements("css selector", "td")
    assert [c.text for c in cells][4:6] == ["ok", "200"], \
        [c.text for c in cells]
    assert "thanks" in b.text("tr.attempt .attempt-response")
    assert '"order": 1' in b.text("#hook-body"), b.text("#hook-body")
    b.shot("hook")
    # Kept, it can be delivered again (a replay of kind archive).
    sink.answer(200, b"thanks")
    n = len(sink.got())
    b.css(".act-replay-kept")[0].click()
    wait_until(lambda: len(sink.got()) == n + 1, 20,
               what="the kept hook delivered again")
    assert json.loads(sink.got()[-1]) == {"order": 1}
    sink.answer(422, b"unprocessable: order 2")

    # Pause the sink, then resume it, from the destinations' page.
    b.page(d, "sinks", "sinks")
    b.wait(lambda: b.text(".sink-state") == "active", "an active sink")
    b.shot("sinks")
    b.css(".act-pause")[0].click()
    b.wait(lambda: b.text(".sink-state") == "paused", "the sink paused")
    assert api(d, "GET", "/v1/pauses")["paused"][0]["source"] == "shop"
    b.wait(lambda: b.css(".act-resume"), "a resume button")[0].click()
    b.wait(lambda: b.text(".sink-state") == "active", "the sink resumed")
    assert api(d, "GET", "/v1/pauses")["paused"] == []

    # The dead hook's page offers its replay; the dead letters' page
    # replays it, the sink now taking it.
    b.page(d, "hook/" + dead, "hook")
    assert b.css(".act-replay") and b.css(".act-delete"), "no action"
    assert "unprocessable: order 2" in b.text(".attempt-response")
    sink.answer(200, b"thanks")
    b.page(d, "dlq", "dlq")
    assert b.text("#dlq-total") == "1"
    assert dead in [a.text for a in b.css("#page-dlq td a")]
    b.shot("dlq")
    b.css(".act-replay")[0].click()
    wait_until(lambda: api(d, "GET", "/v1/dlq")["total"] == 0, 20,
               what="the dead letter replayed")
    b.page(d, "hook/" + dead, "hook")
    b.wait(lambda: any(r.find_elements("css selector", "td")[4].text == "ok"
                       for r in b.css("tr.attempt")),
           "the replayed hook delivered", timeout=20)
    b.shot("hook-replayed")
    b.page(d, "replays", "replays")
    assert b.css(".replay-state"), "no replay job listed"
    b.shot("replays")
    b.page(d, "audit", "audit")
    actions = b.text("#page-audit tbody")
    for a in ("sink.pause", "sink.resume", "replay.create"):
        assert a in actions, (a, actions)
    b.shot("audit")


@browser_test
def test_console_read_only_and_refused(b, d, sink):
    """A wrong token is refused at sign-in; a read-only token sees every
    page and no action."""
    sink.answer(422, b"no")
    hid = post_hook(d, b'{"n":1}')
    wait_until(lambda: api(d, "GET", "/v1/dlq")["total"] == 1, 15,
               what="a dead letter")
    b.sign_in(d, "not-" + ankusa.ADMIN_TOKEN)
    b.wait(lambda: b.text("#signin-error") == "This token is refused.",
           "the refusal")
    assert b.css("#nav")[0].is_displayed() is False
    assert b.js("return sessionStorage.length") == 0, "a refused token kept"
    b.shot("refused")

    b.sign_in(d, READER)
    b.drawn("overview")
    assert b.text("#who").startswith("reader"), b.text("#who")
    for hash_, page in (("overview", "overview"), ("sinks", "sinks"),
                        ("dlq", "dlq"), ("hook/" + hid, "hook"),
                        ("replays", "replays"), ("audit", "audit")):
        box = b.page(d, hash_, page)
        acts = [e.text for e in box.find_elements("css selector", "button")
                if e.get_attribute("type") != "submit"]
        assert acts == [], (page, acts)
        if page == "overview":
            assert b.css("#ov-pending"), "the reader sees the figures"
        if page == "hook":
            assert '"n": 1' in b.text("#hook-body"), "the reader's body"
    b.shot("read-only")
    # The theme follows the system's: dark when it asks for dark.
    light = b.js("return getComputedStyle(document.body).backgroundColor")
    b.drv.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [
        {"name": "prefers-color-scheme", "value": "dark"}]})
    dark = b.js("return getComputedStyle(document.body).backgroundColor")
    assert light == "rgb(255, 255, 255)" and dark == "rgb(20, 23, 26)", \
        (light, dark)
    b.page(d, "overview", "overview")
    b.shot("overview-dark")


@browser_test
def test_console_hostile_bytes_inert(b, d, sink):
    """A body, an event type (a header, also shown among the headers) and
    a sink's answer holding
    script, an img with onerror and a javascript: URL: shown as text;
    nothing runs, no element is added, no CSP report is sent.  Then a
    real violation (an inline script added by the test) is counted."""
    sink.answer(422, " ".join(HOSTILE).encode())
    body = json.dumps({"h": HOSTILE, "url": HOSTILE[2]}).encode()
    hid = post_hook(d, body, event=HOSTILE[1])
    wait_until(lambda: api(d, "GET", "/v1/dlq")["total"] == 1, 15,
               what="a dead letter")
    reports = metric(d, "ankusa_console_csp_reports_total")
    b.sign_in(d, ankusa.ADMIN_TOKEN)
    b.drawn("overview")

    def inert(page):
        assert b.js("return window.__pwned") is None, page
        assert b.js("return document.querySelectorAll("
                    "'img, iframe, object, embed, [onerror]').length") == 0, \
            page
        assert b.js("return document.scripts.length") == 1, page
        assert b.js("return document.querySelectorAll("
                    "'a[href^=\"javascript:\" i]').length") == 0, page
    for hash_, page in (("sinks", "sinks"), ("dlq", "dlq"),
                        ("hooks", "hooks"), ("hook/" + hid, "hook")):
        b.page(d, hash_, page)
        time.sleep(0.3)
        inert(page)
    text = b.text("#page-hook")
    for h in HOSTILE:
        assert h in text, (h, "not shown as text")
    assert HOSTILE[1] in b.text("#hook-head"), "the event type"
    assert HOSTILE[1] in b.text("#hook-headers"), "the x-event header"
    assert HOSTILE[0] in b.text(".attempt-response"), "the answer"
    b.shot("hostile")
    # The http sink's last error is its status ("http 422"): the answer's
    # words are the attempt's response, above.
    b.page(d, "sinks", "sinks")
    assert "http 422" in b.text(".sink-error"), b.text(".sink-error")
    inert("sinks")
    time.sleep(1)
    assert metric(d, "ankusa_console_csp_reports_total") == reports, \
        "a CSP violation was reported"
    # The counter moves: an inline script is refused and reported.
    b.js("var s = document.createElement('script');"
         "s.textContent = 'window.__pwned = 4';"
         "document.body.appendChild(s);")
    wait_until(lambda: metric(d, "ankusa_console_csp_reports_total") >
               reports, 10, what="the CSP report of an inline script")
    assert b.js("return window.__pwned") is None

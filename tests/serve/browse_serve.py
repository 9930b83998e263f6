#!/usr/bin/env python3
"""Starts `stepscope serve` on the shared fixtures (its history in a temporary folder) and walks it
in headless Chromium over the DevTools protocol: the runs list, one run, two runs compared and a
job's history. Each page must load with no console error, request nothing outside the server,
and show the verdict and the step time that `stepscope analyze --json` gives for the same run.
Standard library only; exits 77 (skipped) when Chromium is not installed.

usage: browse_serve.py STEPSCOPE FIXTURES_DIR [CHROMIUM]
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "html"))
from render_page import Cdp  # noqa: E402  (the HTML report tests' DevTools client)

RUN = "cpu/a_dataloader_w0_slow_transform.pt.trace.json.gz"
OTHER = "cpu/b_dataloader_w2_persistent.pt.trace.json.gz"

PROBE = r"""
(() => JSON.stringify({
  title: document.title,
  text: document.body ? document.body.innerText : '',
  headline: (document.querySelector('.headline') || {}).textContent || '',
  scripts: document.querySelectorAll('script').length,
  charts: document.querySelectorAll('svg.chart').length,
  regressed: document.querySelectorAll('circle.regressed').length,
  rows: [...document.querySelectorAll('#runs tbody tr')].map(tr => ({
    name: (tr.querySelector('td.name') || {}).textContent || '',
    href: tr.querySelector('td.name a') ? tr.querySelector('td.name a').getAttribute('href') : '',
    step: (tr.querySelector('td.step') || {}).textContent || '',
    bound: (tr.querySelector('b.bound') || {}).textContent || '',
  })),
  links: [...document.querySelectorAll('a')].map(a => a.getAttribute('href')),
}))()
"""


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def start_server(stepscope, fixtures, store):
    os.makedirs(os.path.dirname(store), exist_ok=True)
    err = open(os.path.join(os.path.dirname(store), "serve.log"), "w+")
    proc = subprocess.Popen([stepscope, "serve", fixtures, "--port", "0", "--store", store, "--poll", "1"],
                            stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        err.seek(0)
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", err.read())
        if m:
            return proc, int(m.group(1)), err
        if proc.poll() is not None:
            fail("serve exited at start")
        time.sleep(0.1)
    fail("serve did not say where it listens")


def wait_indexed(base):
    deadline = time.time() + 400
    while time.time() < deadline:
        s = json.loads(urllib.request.urlopen(base + "/status", timeout=10).read())
        if not s["scanning"] and s["last_scan"] > 0:
            return s
        time.sleep(0.5)
    fail("the fixtures were not indexed in time")


def cli_json(stepscope, path):
    out = subprocess.run([stepscope, "analyze", path, "--json", "-", "-q"], capture_output=True, check=False)
    return json.loads(out.stdout)


def ms(ns):
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.1f} us"


class Browser:
    def __init__(self, chromium, profile):
        r1, w1 = os.pipe()
        r2, w2 = os.pipe()

        def child_fds():
            a, b = os.dup2(r1, 20), os.dup2(w2, 21)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--metrics-recording-only",
                "--remote-debugging-pipe", f"--user-data-dir={profile}", "--window-size=1280,900", "about:blank"]
        self.proc = subprocess.Popen(args, preexec_fn=child_fds, pass_fds=(3, 4), start_new_session=True,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(r1)
        os.close(w2)
        self.cdp = Cdp(self.proc, w1, r2)
        targets = self.cdp.send("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.cdp.send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
        self.cdp.session = self.session
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.cdp.send(f"{domain}.enable", session=self.session)

    def visit(self, url):
        """Loads `url`; returns the DOM probe, the requests made and the console's errors."""
        self.cdp.events.clear()
        self.cdp.send("Page.navigate", {"url": url}, session=self.session)
        self.cdp.wait_event("Page.loadEventFired", timeout=120)
        self.cdp.send("Runtime.evaluate", {"expression": "new Promise(r => setTimeout(r, 300))", "awaitPromise": True},
                      session=self.session)
        dom = json.loads(self.cdp.send("Runtime.evaluate", {"expression": PROBE, "returnByValue": True},
                                       session=self.session)["result"]["value"])
        requests, errors = [], []
        for m in self.cdp.events:
            method, p = m.get("method"), m.get("params", {})
            if method == "Network.requestWillBeSent":
                requests.append(p["request"]["url"])
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                errors.append(str(p.get("args")))
            elif method == "Runtime.exceptionThrown":
                errors.append(p["exceptionDetails"].get("text", "exception"))
            elif method == "Log.entryAdded" and p["entry"].get("level") in ("error", "warning"):
                errors.append(p["entry"].get("text", ""))
        return dom, requests, errors

    def close(self):
        try:
            self.cdp.send("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def check_page(name, base, dom, requests, errors):
    if errors:
        fail(f"{name}: console errors: {errors}")
    outside = [u for u in requests if not u.startswith(base + "/")]
    if outside:
        fail(f"{name}: requests outside the server: {outside}")
    print(f"ok {name}: {len(requests)} request(s), title {dom['title']!r}")


def main():
    stepscope, fixtures = sys.argv[1], sys.argv[2]
    chromium = sys.argv[3] if len(sys.argv) > 3 else "/usr/bin/chromium"
    if not os.path.exists(chromium):
        print(f"SKIP: {chromium} is missing (scripts/install-deps installs the chromium package)")
        sys.exit(77)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
    tmp = tempfile.mkdtemp(prefix="stepscope-serve-browser-")
    server = browser = None
    try:
        server, port, log = start_server(stepscope, fixtures, os.path.join(tmp, "store", "runs.sqlite"))
        base = f"http://127.0.0.1:{port}"
        wait_indexed(base)
        browser = Browser(chromium, os.path.join(tmp, "profile"))

        dom, req, err = browser.visit(base + "/")
        check_page("runs", base, dom, req, err)
        rows = {r["name"]: r for r in dom["rows"]}
        for name in (RUN, OTHER):
            if name not in rows:
                fail(f"runs: {name} is not listed ({len(rows)} rows)")
        cli = cli_json(stepscope, os.path.join(fixtures, RUN))
        row = rows[RUN]
        if row["bound"] != cli["verdict"]["bound"]:
            fail(f"runs: bound {row['bound']!r}, the CLI says {cli['verdict']['bound']!r}")
        want_step = ms(cli["steady_state_step"]["mean_step_ns"])
        if row["step"] != want_step:
            fail(f"runs: step {row['step']!r}, the CLI says {want_step!r}")

        # Sorted by step time, then filtered by the run's bound: links the server answers, no script.
        dom, req, err = browser.visit(base + "/?sort=step&order=asc&bound=" + urllib.parse.quote(row["bound"]))
        check_page("runs sorted and filtered", base, dom, req, err)
        if not dom["rows"] or any(r["bound"] != row["bound"] for r in dom["rows"]):
            fail("runs: the bound filter let other bounds through")
        if RUN not in {r["name"] for r in dom["rows"]}:
            fail("runs: the bound filter left out the run")

        dom, req, err = browser.visit(base + row["href"])
        check_page("one run", base, dom, req, err)
        if dom["headline"].strip() != cli["verdict"]["headline"].strip():
            fail(f"run: headline {dom['headline']!r}, the CLI says {cli['verdict']['headline']!r}")
        if not any(h and h.startswith("/annotated?") for h in dom["links"]):
            fail("run: no download link for the annotated trace")

        run_id = row["href"].split("=")[1]
        other_id = rows[OTHER]["href"].split("=")[1]
        dom, req, err = browser.visit(f"{base}/diff?base={run_id}&test={other_id}")
        check_page("two runs", base, dom, req, err)
        if RUN not in dom["text"] or "speedup" not in dom["text"].lower():
            fail("diff: the page names neither the base run nor a speedup")

        dom, req, err = browser.visit(base + "/history")
        check_page("history", base, dom, req, err)
        if dom["charts"] < 2:
            fail(f"history: {dom['charts']} charts")
        job_link = next((h for h in dom["links"] if h and h.startswith("/history?job=")), None)
        if job_link:
            dom, req, err = browser.visit(base + job_link)
            check_page("history of one job", base, dom, req, err)
        print("serve browser test passed")
    finally:
        if browser:
            browser.close()
        if server:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

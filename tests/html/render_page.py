#!/usr/bin/env python3
"""Loads an HTML file in headless Chromium over the DevTools protocol and reports, as JSON on
stdout, what a test needs to judge it: console messages and exceptions, every network request,
JavaScript dialogs (a hostile name that ran alert() would open one), facts about the DOM, and a
full-page screenshot. Standard library only; talks to Chromium over --remote-debugging-pipe, so
no port is opened.

usage: render_page.py PAGE.html SCREENSHOT.png [CHROMIUM]
"""
import base64
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# Evaluated in the page once it has loaded. DevTools evaluation is not subject to the page's
# Content-Security-Policy, so it works on a page that forbids scripts.
DOM_PROBE = r"""
(() => {
  const marks = 'rect,circle,polyline,line,path,text';
  const charts = [...document.querySelectorAll('svg.chart')].map(s => {
    const box = s.getBoundingClientRect();
    const shapes = [...s.querySelectorAll('rect,circle,polyline')];
    const drawn = shapes.filter(e => {
      const b = e.getBBox();
      return b.width > 0 || b.height > 0;
    });
    return {id: s.id, cls: s.getAttribute('class'), marks: s.querySelectorAll(marks).length,
            rects: s.querySelectorAll('rect').length, cells: s.querySelectorAll('rect.cell').length,
            highlighted: s.querySelectorAll('rect.cell[stroke]').length,
            spikes: s.querySelectorAll('circle.spike').length, lines: s.querySelectorAll('polyline').length,
            drawn: drawn.length, width: box.width, height: box.height};
  });
  return JSON.stringify({
    title: document.title,
    charts,
    scripts: document.querySelectorAll('script').length,
    iframes: document.querySelectorAll('iframe,object,embed,img').length,
    handlers: [...document.querySelectorAll('*')].filter(e =>
        [...e.attributes].some(a => a.name.toLowerCase().startsWith('on'))).length,
    text: document.body ? document.body.innerText : '',
    textContent: document.body ? document.body.textContent : '',
    names: [...document.querySelectorAll('.name')].map(e => e.textContent),
    headline: (document.querySelector('.headline') || {}).textContent || '',
    ids: [...document.querySelectorAll('[id]')].map(e => e.id),
    pwned: typeof window.__pwned !== 'undefined',
    scrollHeight: document.documentElement.scrollHeight,
  });
})()
"""


class Cdp:
    def __init__(self, proc, to_browser, from_browser):
        self.proc, self.w, self.r = proc, to_browser, from_browser
        self.next_id = 0
        self.buf = b""
        self.events = []
        self.session = None

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.time()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise TimeoutError("no reply from chromium")
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise EOFError("chromium closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, timeout=30):
        deadline = time.time() + timeout
        for m in self.events:
            if m.get("method") == method:
                return m
        while True:
            m = self._read_message(deadline)
            self.events.append(m)
            if m.get("method") == "Page.javascriptDialogOpening":
                # A dialog blocks the page until answered; record it (it stays in events) and go on.
                self.send("Page.handleJavaScriptDialog", {"accept": True}, session=self.session)
            if m.get("method") == method:
                return m


def main():
    page, shot = os.path.abspath(sys.argv[1]), sys.argv[2]
    chromium = sys.argv[3] if len(sys.argv) > 3 else "/usr/bin/chromium"
    # A test runner's timeout sends SIGTERM: unwind through `finally` so the browser and its
    # profile go too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
    profile = tempfile.mkdtemp(prefix="stepscope-chromium-")
    try:
        run(page, shot, chromium, profile)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def run(page, shot, chromium, profile):
    r1, w1 = os.pipe()  # we write, chromium reads on fd 3
    r2, w2 = os.pipe()  # chromium writes on fd 4, we read

    def child_fds():
        # Park both ends above 4 first, so that placing one cannot clobber the other.
        a, b = os.dup2(r1, 20), os.dup2(w2, 21)
        os.dup2(a, 3)
        os.dup2(b, 4)

    args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--metrics-recording-only",
            "--remote-debugging-pipe", f"--user-data-dir={profile}", "--window-size=1280,900",
            "about:blank"]
    # Its own process group, so that the browser and every helper it forked can be ended together.
    proc = subprocess.Popen(args, preexec_fn=child_fds, pass_fds=(3, 4), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(r1)
    os.close(w2)
    cdp = Cdp(proc, w1, r2)
    result = {}
    try:
        targets = cdp.send("Target.getTargets")["targetInfos"]
        page_target = next(t for t in targets if t["type"] == "page")
        session = cdp.send("Target.attachToTarget", {"targetId": page_target["targetId"], "flatten": True})["sessionId"]
        cdp.session = session
        for domain in ("Page", "Runtime", "Network", "Log"):
            cdp.send(f"{domain}.enable", session=session)
        cdp.events.clear()
        url = "file://" + page
        cdp.send("Page.navigate", {"url": url}, session=session)
        cdp.wait_event("Page.loadEventFired", timeout=60)
        # Let anything deferred (a late request, a timer) surface before judging.
        cdp.send("Runtime.evaluate", {"expression": "new Promise(r => setTimeout(r, 300))", "awaitPromise": True},
                 session=session)
        dom = cdp.send("Runtime.evaluate", {"expression": DOM_PROBE, "returnByValue": True}, session=session)
        result["dom"] = json.loads(dom["result"]["value"])
        # A test's interaction (clicks, typing) with the page's own script, evaluated after the
        # probe; it returns a JSON string of what it saw.
        actions = os.environ.get("STEPSCOPE_PAGE_ACTIONS")
        if actions:
            acted = cdp.send("Runtime.evaluate", {"expression": actions, "returnByValue": True, "awaitPromise": True},
                             session=session)
            result["actions"] = json.loads(acted["result"].get("value", "null"))
        metrics = cdp.send("Page.getLayoutMetrics", session=session)
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        height = min(int(size["height"]) + 1, 16000)
        cdp.send("Emulation.setDeviceMetricsOverride",
                 {"width": 1280, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=session)
        png = cdp.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=session,
                       timeout=60)
        with open(shot, "wb") as f:
            f.write(base64.b64decode(png["data"]))
        result["screenshot_bytes"] = os.path.getsize(shot)

        requests, console, dialogs = [], [], []
        for m in cdp.events:
            method, p = m.get("method"), m.get("params", {})
            if method == "Network.requestWillBeSent":
                requests.append(p["request"]["url"])
            elif method == "Runtime.consoleAPICalled":
                console.append({"level": p.get("type"),
                                "text": " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))})
            elif method == "Runtime.exceptionThrown":
                console.append({"level": "error", "text": p["exceptionDetails"].get("text", "exception")})
            elif method == "Log.entryAdded":
                console.append({"level": p["entry"].get("level"), "text": p["entry"].get("text", "")})
            elif method == "Page.javascriptDialogOpening":
                dialogs.append(p.get("message", ""))
        result["page_url"] = url
        result["requests"] = requests
        result["console"] = console
        result["dialogs"] = dialogs
        try:
            cdp.send("Browser.close", timeout=10)
        except Exception:
            pass
    finally:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Drive headless Chromium through the DevTools protocol, for the status
page's browser test (0645-ui-browser.sh).  Python standard library only.

Chromium is started with --remote-debugging-pipe: it reads commands on
its fd 3 and writes replies and events on its fd 4, each a JSON message
ended by a NUL byte.  One page is opened at a 1280x900 viewport; every
console error, uncaught exception and error log entry of the page
(Runtime.consoleAPICalled, Runtime.exceptionThrown, Log.entryAdded) is
collected, so that a test can assert there are none.  Chromium's own
stderr (dbus, GPU noise) is not read as an error: it goes to a file.

usage: browser.py URL [--before JS] [--wait JS] [--eval JS] [--screenshot FILE]
                      [--timeout S] [--width W] [--height H] [--settle MS]
                      [--chrome-log FILE] [--chromium PATH]

--before JS runs in the page before its own scripts (to test the
harness with a deliberate error); --wait JS is polled until it is true
(or the timeout fails the run); --eval JS is evaluated then, and its
value (JSON-serialisable) reported; --settle MS waits that long more for
late errors before the report.  Prints one JSON object:
{"errors": [...], "value": ..., "waited": true|false}.  Exit status 0
when the page loaded and --wait became true, 1 otherwise, 2 on usage
errors.
"""
import argparse
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time


class Chrome:
    def __init__(self, binary, width, height, log_path):
        self.profile = tempfile.mkdtemp(prefix="vnib-chrome-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        args = [
            binary, "--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions",
            "--disable-background-networking", "--disable-sync",
            "--disable-component-update", "--mute-audio",
            "--remote-debugging-pipe", "--user-data-dir=" + self.profile,
            "--window-size=%d,%d" % (width, height), "about:blank",
        ]

        def child_fds():
            # Chromium's pipe ends are its fds 3 (commands) and 4
            # (replies); copied out of the way first, in case either is
            # already 3 or 4.  pass_fds keeps 3 and 4 open past the exec.
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        log = open(log_path, "ab") if log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            pass_fds=(3, 4), preexec_fn=child_fds)
        if log is not subprocess.DEVNULL:
            log.close()
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.to_chrome, self.from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no message from Chromium in time")
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed its DevTools pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None, timeout=30):
        """Send one command; return its result (events are kept)."""
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            n = os.write(self.to_chrome, data)
            data = data[n:]
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == mid:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def pump(self, seconds):
        """Collect events for a while."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self._read_message(deadline))
        except TimeoutError:
            pass


def page_errors(events):
    """The page's console errors, uncaught exceptions and error log entries."""
    out = []
    for m in events:
        p = m.get("params", {})
        if m.get("method") == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            ex = d.get("exception", {})
            out.append("uncaught: " + (ex.get("description") or d.get("text", "")))
        elif m.get("method") == "Runtime.consoleAPICalled" and \
                p.get("type") in ("error", "assert"):
            args = [a.get("value", a.get("description", "")) for a in p.get("args", [])]
            out.append("console.%s: %s" % (p.get("type"), " ".join(map(str, args))))
        elif m.get("method") == "Log.entryAdded":
            e = p.get("entry", {})
            if e.get("level") == "error":
                out.append("log(%s): %s %s" % (e.get("source"), e.get("text"), e.get("url", "")))
    return out


def evaluate(chrome, session, expr):
    r = chrome.send("Runtime.evaluate", {
        "expression": expr, "returnByValue": True, "awaitPromise": True,
    }, session)
    if "exceptionDetails" in r:
        raise RuntimeError("evaluate: " + json.dumps(r["exceptionDetails"])[:500])
    return r.get("result", {}).get("value")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--before")
    ap.add_argument("--wait")
    ap.add_argument("--eval", dest="expr")
    ap.add_argument("--screenshot")
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=900)
    ap.add_argument("--settle", type=int, default=500)
    ap.add_argument("--chrome-log")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    a = ap.parse_args()

    report = {"errors": [], "value": None, "waited": False}
    chrome = Chrome(a.chromium, a.width, a.height, a.chrome_log)
    status = 1
    try:
        targets = chrome.send("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        session = chrome.send("Target.attachToTarget",
                              {"targetId": page["targetId"], "flatten": True})["sessionId"]
        for method in ("Runtime.enable", "Log.enable", "Page.enable"):
            chrome.send(method, session=session)
        chrome.send("Emulation.setDeviceMetricsOverride", {
            "width": a.width, "height": a.height, "deviceScaleFactor": 1, "mobile": False,
        }, session)
        if a.before:
            chrome.send("Page.addScriptToEvaluateOnNewDocument", {"source": a.before}, session)
        nav = chrome.send("Page.navigate", {"url": a.url}, session)
        if nav.get("errorText"):
            raise RuntimeError("navigate: " + nav["errorText"])
        deadline = time.monotonic() + a.timeout
        while a.wait and time.monotonic() < deadline:
            try:
                if evaluate(chrome, session, a.wait):
                    report["waited"] = True
                    break
            except RuntimeError:
                pass  # the page is still loading
            chrome.pump(0.2)
        if not a.wait:
            report["waited"] = True
        chrome.pump(a.settle / 1000.0)
        if a.expr:
            report["value"] = evaluate(chrome, session, a.expr)
        if a.screenshot:
            shot = chrome.send("Page.captureScreenshot", {"format": "png"}, session)
            with open(a.screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        status = 0 if report["waited"] else 1
    except Exception as e:  # reported, and the run fails
        report["errors"].append("harness: %s: %s" % (type(e).__name__, e))
        status = 1
    finally:
        report["errors"] = page_errors(chrome.events) + report["errors"]
        chrome.close()
    json.dump(report, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return status


if __name__ == "__main__":
    sys.exit(main())

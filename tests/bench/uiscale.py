#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The `uiscale` bench scenario's client (tests/bench/run.sh): seeds a
broker's state through its API and measures GET /v1/status, GET
/v1/events and the status page /ui/ in headless Chromium.  Python
standard library only; the browser is driven by
tests/integration/browser.py (imported, the DevTools-pipe driver of the
browser test).

usage:
  uiscale.py seed URL --sched-token FILE --node-key FILE --active N
                      --quarantined N --drained N [--whole] [--threads N]
  uiscale.py measure URL --token FILE --label NAME --round N --out PREFIX
                      [--calls N] [--refreshes N] [--chromium PATH]
                      [--chrome-log FILE]

seed: N active jobs of mixed sizes on nid[000001-011136] (most of 1-8
nodes, a tenth of 32, a hundredth of 128, a thousandth of 1,024 and,
with --whole, job a0 on all 11,136 nodes), N quarantined jobs (reserved,
some of their nodes reporting their CXI services created, then released:
202 quarantined; most wait on 1-3 nodes, every 50th on 48), and N drained
nodes (a "failed" report on job a0, which drains the node).  Every
request is the API's, as slurmctld and the node agents send them, from
--threads connections.  Prints one "#" line: requests and seconds.

measure: one run against one broker.  Appends each measured figure, in
ms, one per line, to PREFIX.NAME.METRIC (the caller takes medians and
ranges over the rounds):
  st_unc      GET /v1/status with history_s varied (3600 + i), so that
              the reply cache (1 s per role and query) never answers
  st_cached   the same query again at once, which the cache answers
  ev_node     GET /v1/events?order=desc&limit=100&node=<a node>
  ev_action   ... &action=<drain, quarantine_end, report, release in turn>
  ev_all      ... without a filter (reference)
  search_job  GET /v1/search?q=a0: the status page's job search, job a0
              (all 11,136 nodes with --whole, 300 of them failed), its
              nodes split by their last report
  search_node GET /v1/search?q=<a node>: the node search
  page_first  the page opened with #token=: navigation start to the first
              frame after the first complete refresh (status line
              "Updated ...")
  page_render one refresh started from the page's own refresh(): the
              page's "rendered in" figure plus the style and layout that
              the refresh's DOM changes cost (forced at once after it)
  page_total  the same refresh from its start to the next frame,
              fetches included (reference)
  page_long   the longest main-thread task of the whole page session
              (PerformanceObserver 'longtask', injected by the bench
              before the page's scripts; 0 when there was none over 50 ms)
Warm-up calls come first and are not measured: the broker's pooled
connections and their prepared statements' plans reach their steady
state, as under a page polling every 5 s.  Prints one "#" line with the
run's medians.  Exit status 1 when a request fails or the page does not
render.
"""
import argparse
import base64
import hashlib
import hmac
import http.client
import json
import os
import shutil
import statistics
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import browser  # noqa: E402  (tests/integration/browser.py)

NODES = 11136


class Client:
    """One keep-alive HTTP connection to the broker."""

    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80
        self.conn = None

    def call(self, method, path, token, body=None):
        """(status, body bytes, seconds from send to the body's end)."""
        headers = {"Authorization": "Bearer " + token}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
            try:
                t0 = time.perf_counter()
                self.conn.request(method, path, body=data, headers=headers)
                r = self.conn.getresponse()
                out = r.read()
                return r.status, out, time.perf_counter() - t0
            except (http.client.HTTPException, ConnectionError):
                # the broker closed an idle keep-alive connection: once more
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        raise AssertionError("not reached")


def node(n):
    return "nid%06d" % n


def hostlist(start, count):
    if count == 1:
        return node(start)
    return "nid[%06d-%06d]" % (start, start + count - 1)


def node_token(key, name):
    mac = hmac.new(key, b"vnib-node:" + name.encode(), hashlib.sha256).digest()
    return "vnibnode.%s.%s" % (name, base64.urlsafe_b64encode(mac).decode().rstrip("="))


def placed(i, size):
    """The first node of job i's contiguous block of size nodes."""
    return min((i * 37) % NODES + 1, NODES - size + 1)


def active_size(i, whole):
    if i == 0:
        return NODES if whole else 100
    if i % 1000 == 500:
        return 1024
    if i % 100 == 50:
        return 128
    if i % 10 == 5:
        return 32
    return 1 + (i * 7) % 8


def seed(a):
    sched = open(a.sched_token).read().strip()
    key = open(a.node_key, "rb").read()
    local = threading.local()
    count = [0]
    lock = threading.Lock()

    def req(method, path, token, body, ok):
        c = getattr(local, "client", None)
        if c is None:
            c = local.client = Client(a.url)
        st, out, _ = c.call(method, path, token, body)
        with lock:
            count[0] += 1
        if st not in ok:
            raise RuntimeError("%s %s: %d %s" % (method, path, st, out[:200]))

    def reserve(job, start, size, vnis):
        req("POST", "/v1/reservations", sched,
            {"job_id": job, "uid": 1000 + start % 500, "user": "user%d" % (start % 500),
             "nodes": hostlist(start, size), "vni_count": vnis}, (200, 201))

    def report(job, name, cxi, message=None):
        body = {"cxi": cxi}
        if cxi == "created":
            body["services"] = [{"device": "cxi0", "svc_id": 100 + len(name)}]
        if message:
            body["message"] = message
        req("PUT", "/v1/reservations/%s/nodes/%s" % (job, name),
            node_token(key, name), body, (200,))

    def active(i):
        size = active_size(i, a.whole)
        reserve("a%d" % i, placed(i, size), size, 2 if i % 10 == 3 else 1)

    def quarantined(k):
        size = 64 if k % 50 == 0 else 4
        start = placed(k * 11 + 5, size)
        job = "q%d" % k
        reserve(job, start, size, 1)
        waiting = 48 if size == 64 else 1 + k % 3
        for n in range(waiting):
            report(job, node(start + n), "created")
        req("DELETE", "/v1/reservations/" + job, sched, None, (202,))

    def drained(k):
        size = active_size(0, a.whole)
        report("a0", node(placed(0, size) + (k * 37) % size), "failed",
               "cxil_alloc_svc: ENOSPC (bench %d)" % k)

    t0 = time.monotonic()
    with ThreadPoolExecutor(a.threads) as ex:
        for fn, n in ((active, a.active), (quarantined, a.quarantined)):
            for f in [ex.submit(fn, i) for i in range(n)]:
                f.result()
        # job a0 exists now: its nodes fail
        for f in [ex.submit(drained, k) for k in range(a.drained)]:
            f.result()
    print("#   seeded %s through the API: %d active, %d quarantined, %d drained;"
          " %d requests in %.1f s" % (a.url, a.active, a.quarantined, a.drained,
                                      count[0], time.monotonic() - t0))
    return 0


# ---- measure -----------------------------------------------------------------

# Injected before the page's scripts (Page.addScriptToEvaluateOnNewDocument):
# long tasks, and the first frame after the first complete refresh.
INJECT = r"""
window.__uiscale = { lt: [], first: null, observer: null };
try {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__uiscale.lt.push(e.duration);
  }).observe({ type: 'longtask', buffered: true });
  window.__uiscale.observer = 'longtask';
} catch (e) { window.__uiscale.observer = String(e); }
document.addEventListener('DOMContentLoaded', () => {
  const line = document.getElementById('status-line');
  const mo = new MutationObserver(() => {
    if (window.__uiscale.first !== null || !/^Updated /.test(line.textContent)) return;
    window.__uiscale.first = -1;
    mo.disconnect();
    requestAnimationFrame(() => setTimeout(() => { window.__uiscale.first = performance.now(); }, 0));
  });
  mo.observe(line, { childList: true, characterData: true, subtree: true });
});
"""

REFRESH = r"""(async () => {
  const p = window.vnibStatusPage;
  const n0 = p.refreshes();
  const t0 = performance.now();
  await p.refresh();
  for (let i = 0; i < 3000 && p.refreshes() <= n0; i++)
    await new Promise((r) => setTimeout(r, 10));
  const t1 = performance.now();
  void document.documentElement.offsetHeight;
  const t2 = performance.now();
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  return { render: p.renderMs(), layout: t2 - t1, total: performance.now() - t0,
           error: p.error(), refreshes: p.refreshes() - n0 };
})()"""

ACTIONS = ("drain", "quarantine_end", "report", "release")


def measure_http(a, token, fig):
    c = Client(a.url)

    def get(path):
        st, out, s = c.call("GET", path, token)
        if st != 200:
            raise RuntimeError("GET %s: %d %s" % (path, st, out[:200]))
        return s * 1000.0

    def events(i, kind):
        q = {"order": "desc", "limit": "100"}
        if kind == "ev_node":
            q["node"] = node((i * 997) % NODES + 1)
        elif kind == "ev_action":
            q["action"] = ACTIONS[i % len(ACTIONS)]
        return "/v1/events?" + urllib.parse.urlencode(q)

    base = 3600 + 1000 * (a.round % 80)
    for i in range(5):
        get("/v1/status?history_s=%d" % (base + 900 + i))
    for i in range(40):
        get(events(i, ("ev_node", "ev_action", "ev_all")[i % 3]))
    for i in range(5):
        get("/v1/search?q=a0")
        get("/v1/search?q=" + node(i * 13 + 1))
    per_action = {x: [] for x in ACTIONS}
    for i in range(a.calls):
        path = "/v1/status?history_s=%d" % (base + i)
        fig["st_unc"].append(get(path))
        fig["st_cached"].append(get(path))
        for kind in ("ev_node", "ev_action", "ev_all"):
            ms = get(events(i, kind))
            fig[kind].append(ms)
            if kind == "ev_action":
                per_action[ACTIONS[i % len(ACTIONS)]].append(ms)
        fig["search_job"].append(get("/v1/search?q=a0"))
        fig["search_node"].append(get("/v1/search?q=" + node((i * 997) % NODES + 1)))
    return per_action


def measure_page(a, token, fig):
    chromium = a.chromium or shutil.which("chromium") or "chromium"
    chrome = browser.Chrome(chromium, 1280, 900, a.chrome_log)
    note = {}
    try:
        page = next(t for t in chrome.send("Target.getTargets")["targetInfos"]
                    if t["type"] == "page")
        session = chrome.send("Target.attachToTarget",
                              {"targetId": page["targetId"], "flatten": True})["sessionId"]
        for method in ("Runtime.enable", "Log.enable", "Page.enable"):
            chrome.send(method, session=session)
        chrome.send("Emulation.setDeviceMetricsOverride", {
            "width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session)
        chrome.send("Page.addScriptToEvaluateOnNewDocument", {"source": INJECT}, session)
        nav = chrome.send("Page.navigate",
                          {"url": a.url + "/ui/#token=" + urllib.parse.quote(token)}, session)
        if nav.get("errorText"):
            raise RuntimeError("navigate: " + nav["errorText"])
        deadline = time.monotonic() + 60
        first = None
        while time.monotonic() < deadline:
            try:
                first = browser.evaluate(chrome, session,
                                         "window.__uiscale && window.__uiscale.first")
            except RuntimeError:
                first = None  # still loading
            if first and first > 0:
                break
            chrome.pump(0.05)
        if not first or first <= 0:
            err = browser.evaluate(chrome, session,
                                   "window.vnibStatusPage && window.vnibStatusPage.error()")
            raise RuntimeError("no complete render within 60 s (%s)" % err)
        fig["page_first"].append(first)
        for _ in range(a.refreshes):
            chrome.pump(1.1)  # past the reply cache: the refresh reads afresh
            r = browser.evaluate(chrome, session, REFRESH)
            if r["error"] or r["refreshes"] < 1:
                raise RuntimeError("refresh: %s" % json.dumps(r))
            fig["page_render"].append(r["render"] + r["layout"])
            fig["page_total"].append(r["total"])
        lt = browser.evaluate(chrome, session, "window.__uiscale.lt")
        note["observer"] = browser.evaluate(chrome, session, "window.__uiscale.observer")
        note["longtasks"] = len(lt)
        fig["page_long"].append(max(lt) if lt else 0.0)
        note["rows"] = browser.evaluate(chrome, session, """[
            document.querySelectorAll('#quarantine-table tbody tr').length,
            document.querySelectorAll('#drained-table tbody tr').length,
            document.querySelectorAll('#events tbody tr').length,
            document.getElementById('drained-nodes').textContent.length]""")
    finally:
        note["errors"] = browser.page_errors(chrome.events)
        chrome.close()
    return note


def measure(a):
    token = open(a.token).read().strip()
    names = ("st_unc", "st_cached", "ev_node", "ev_action", "ev_all",
             "search_job", "search_node", "page_first", "page_render", "page_total", "page_long")
    fig = {k: [] for k in names}
    per_action = measure_http(a, token, fig)
    note = measure_page(a, token, fig)
    for k in names:
        with open("%s.%s.%s" % (a.out, a.label, k), "a") as f:
            for v in fig[k]:
                f.write("%.3f\n" % v)

    def med(v):
        return "%.1f" % statistics.median(v) if v else "?"

    print("#   round %d %s: status %s ms, cached %s; events node %s, action %s (%s),"
          " all %s; search job %s, node %s; page first %s, refresh render %s, longest task %s ms"
          " (%d long tasks%s); rows quarantine/drained/events %s, drained list %d chars"
          % (a.round, a.label, med(fig["st_unc"]), med(fig["st_cached"]),
             med(fig["ev_node"]), med(fig["ev_action"]),
             ", ".join("%s %s" % (k, med(v)) for k, v in per_action.items()),
             med(fig["ev_all"]), med(fig["search_job"]), med(fig["search_node"]),
             med(fig["page_first"]), med(fig["page_render"]),
             med(fig["page_long"]), note["longtasks"],
             "" if note["observer"] == "longtask" else "; no observer: " + note["observer"],
             "/".join(map(str, note["rows"][:3])), note["rows"][3]))
    for e in note["errors"]:
        print("#   page error: %s" % e[:200])
    return 1 if note["errors"] else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("seed")
    s.add_argument("url")
    s.add_argument("--sched-token", required=True)
    s.add_argument("--node-key", required=True)
    s.add_argument("--active", type=int, required=True)
    s.add_argument("--quarantined", type=int, required=True)
    s.add_argument("--drained", type=int, required=True)
    s.add_argument("--whole", action="store_true")
    s.add_argument("--threads", type=int, default=4)
    m = sub.add_parser("measure")
    m.add_argument("url")
    m.add_argument("--token", required=True)
    m.add_argument("--label", required=True)
    m.add_argument("--round", type=int, required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--calls", type=int, default=30)
    m.add_argument("--refreshes", type=int, default=5)
    m.add_argument("--chromium")
    m.add_argument("--chrome-log")
    a = ap.parse_args()
    try:
        return seed(a) if a.cmd == "seed" else measure(a)
    except Exception as e:  # one line for the bench's output, not a trace
        print("#   uiscale.py %s: %s: %s" % (a.cmd, type(e).__name__, e))
        return 1


if __name__ == "__main__":
    sys.exit(main())

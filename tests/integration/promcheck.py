#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks of tests/integration/0655-alerts-prometheus.sh against a real
Prometheus and what its Alertmanager delivered to webhook.py.

Each subcommand prints "ok ..." and exits 0, or prints what it found and
exits 1, so that the test can both poll it (wait_for) and show it:

  shorten RULES OUT SECONDS    a copy of RULES with every `for:` value
                               replaced by SECONDS s, nothing else touched
  same-but-for RULES COPY      the two rule files are the same YAML but for
                               the alerts' `for:` values
  config EXAMPLE OUT RULES TARGET... [--alertmanager HOST:PORT]
                               prometheus.yml from prometheus.example.yml:
                               1 s intervals, RULES, the test's targets
  prom URL NAME LABELS SUMMARY-RE
                               Prometheus (GET /api/v1/alerts) has alert
                               NAME pending or firing with exactly LABELS
                               (JSON, alertname and severity included) and
                               rendered annotations, its summary matching
                               SUMMARY-RE
  prom-quiet URL [NAME...]     Prometheus has no active alert (of NAMEs)
  am FILE STATUS NAME LABELS SUMMARY-RE
                               the webhook received alert NAME with STATUS
                               (firing, resolved), exactly LABELS and
                               rendered annotations
  am-names FILE                the alert names the webhook received
  rules-health URL             every rule of group vnibroker is loaded and
                               its last evaluation had no error
  dashboard DASH URL START JOB INSTANCE-VALUE... [--scrape-interval S]
                               every query of the Grafana dashboard, with
                               its variables as Grafana substitutes them
                               ($job JOB, $instance each INSTANCE-VALUE,
                               the scrape interval S seconds, default 1),
                               returns a series (instant, and range from
                               START, a Unix time, to now)

An admin can run the last two against their own Prometheus (see
deploy/monitoring/README.md); they need python3 and python3-yaml only.
"""
import json
import math
import re
import sys
import time
import urllib.parse
import urllib.request

import yaml


def get(url, params=None):
    if params:
        url += "?" + urllib.parse.urlencode(params, doseq=True)
    with urllib.request.urlopen(url, timeout=20) as r:
        return json.load(r)


def rendered(annotations):
    """Problems of an alert's annotations: missing or not rendered."""
    problems = []
    for key in ("summary", "description"):
        text = annotations.get(key, "")
        if not text.strip():
            problems.append(f"no {key}")
        for bad in ("{{", "}}", "<no value>", "%!"):
            if bad in text:
                problems.append(f"{key} has {bad!r}: {text!r}")
    return problems


def check_alert(alert, labels, summary_re):
    problems = []
    if alert["labels"] != labels:
        problems.append(f"labels {json.dumps(alert['labels'], sort_keys=True)} "
                        f"!= {json.dumps(labels, sort_keys=True)}")
    problems += rendered(alert.get("annotations", {}))
    summary = alert.get("annotations", {}).get("summary", "")
    if not re.search(summary_re, summary):
        problems.append(f"summary {summary!r} does not match {summary_re!r}")
    return problems


def pick(alerts, name, labels):
    """Alerts of NAME whose labels agree with the discriminating ones."""
    keys = ("alertname", "severity", "instance")
    return [a for a in alerts if a["labels"].get("alertname") == name and
            all(a["labels"].get(k) == labels.get(k) for k in keys)]


def cmd_shorten(rules, out, seconds):
    text = open(rules).read()
    short, n = re.subn(r"(?m)^(\s+for: )\S+$", rf"\g<1>{seconds}s", text)
    open(out, "w").write(short)
    print(f"ok {n} for: values set to {seconds}s")
    return 0


def without_for(doc):
    for g in doc["groups"]:
        for r in g["rules"]:
            r.pop("for", None)
    return doc


def cmd_same_but_for(rules, copy):
    a, b = yaml.safe_load(open(rules)), yaml.safe_load(open(copy))
    fors = [(r.get("for"), s.get("for"))
            for g, h in zip(a["groups"], b["groups"])
            for r, s in zip(g["rules"], h["rules"]) if "alert" in r]
    if without_for(a) != without_for(b):
        print("the copy differs from the shipped rules beyond for:")
        return 1
    changed = sum(1 for x, y in fors if x != y)
    print(f"ok identical but for {changed} of {len(fors)} for: values")
    return 0


def cmd_config(example, out, rules, rest):
    am = None
    if "--alertmanager" in rest:
        i = rest.index("--alertmanager")
        am = rest[i + 1]
        rest = rest[:i] + rest[i + 2:]
    cfg = yaml.safe_load(open(example))
    jobs = [s for s in cfg["scrape_configs"] if s["job_name"] == "vnibroker"]
    if len(jobs) != 1 or len(jobs[0]["static_configs"]) != 1:
        print("the example has no single vnibroker job with one static_configs")
        return 1
    cfg["global"]["scrape_interval"] = "1s"
    cfg["global"]["evaluation_interval"] = "1s"
    if len(cfg["rule_files"]) != 1:
        print("the example loads more than one rule file")
        return 1
    cfg["rule_files"] = [rules]
    jobs[0]["static_configs"][0]["targets"] = rest
    if am:
        cfg["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [am]}]}]}
    open(out, "w").write(yaml.safe_dump(cfg, sort_keys=False))
    print("ok")
    return 0


def cmd_prom(url, name, labels, summary_re):
    labels = json.loads(labels)
    alerts = get(url + "/api/v1/alerts")["data"]["alerts"]
    found = pick(alerts, name, labels)
    if not found:
        print(f"no {name} {labels} among {[a['labels'] for a in alerts]}")
        return 1
    a = found[0]
    if a["state"] not in ("pending", "firing"):
        print(f"{name} is {a['state']}")
        return 1
    problems = check_alert(a, labels, summary_re)
    if problems:
        print("; ".join(problems))
        return 1
    print(f"ok {a['state']}")
    return 0


def cmd_prom_quiet(url, names):
    alerts = get(url + "/api/v1/alerts")["data"]["alerts"]
    active = [f"{a['labels']['alertname']}({a['state']})" for a in alerts
              if not names or a["labels"]["alertname"] in names]
    if active:
        print("active: " + " ".join(sorted(active)))
        return 1
    print("ok")
    return 0


def webhook_alerts(path):
    alerts = []
    try:
        lines = open(path).read().splitlines()
    except FileNotFoundError:
        lines = []
    for line in lines:
        alerts += json.loads(line)["alerts"]
    return alerts


def cmd_am(path, status, name, labels, summary_re):
    labels = json.loads(labels)
    alerts = webhook_alerts(path)
    found = [a for a in pick(alerts, name, labels) if a["status"] == status]
    if not found:
        seen = [(a["labels"].get("alertname"), a["status"]) for a in alerts]
        print(f"no {status} {name} {labels} among {seen}")
        return 1
    problems = check_alert(found[0], labels, summary_re)
    if problems:
        print("; ".join(problems))
        return 1
    print("ok")
    return 0


def cmd_am_names(path):
    print(" ".join(sorted({f"{a['labels']['alertname']}:{a['status']}"
                           for a in webhook_alerts(path)})))
    return 0


def substitute(expr, values):
    for var in sorted(values, key=len, reverse=True):
        expr = expr.replace("${" + var + "}", values[var])
        expr = expr.replace("$" + var, values[var])
    return expr


def cmd_rules_health(url):
    groups = get(url + "/api/v1/rules")["data"]["groups"]
    rules = [r for g in groups if g["name"] == "vnibroker" for r in g["rules"]]
    if not rules:
        print("no rule group vnibroker loaded")
        return 1
    bad = [f"{r['name']}: {r.get('health')} {r.get('lastError', '')}"
           for r in rules if r.get("health") != "ok" or r.get("lastError")]
    if bad:
        print("\n".join(bad))
        return 1
    print(f"ok {len(rules)} rules, each evaluated without error")
    return 0


def cmd_dashboard(dash, url, start, job, instances):
    scrape = 1
    if "--scrape-interval" in instances:
        i = instances.index("--scrape-interval")
        scrape = int(instances[i + 1])
        instances = instances[:i] + instances[i + 2:]
    d = json.load(open(dash))
    now = time.time()
    start = float(start)
    span = max(now - start, 10.0)
    # Grafana: $__interval is the range over the panel's points (at least
    # the data source's scrape interval), $__rate_interval
    # max($__interval + scrape interval, 4 * scrape interval).
    step = max(scrape, math.ceil(span / 1000))
    base = {"__interval": f"{step}s", "__interval_ms": str(step * 1000),
            "__rate_interval": f"{max(step + scrape, 4 * scrape)}s",
            "__range": f"{int(span)}s", "__range_s": str(int(span)),
            "__range_ms": str(int(span * 1000)), "job": job}
    queries = []  # (what, expr, kind)
    variables = {v["name"]: v for v in d["templating"]["list"]}
    for v in variables.values():
        if v["type"] != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\((?:(.*),\s*)?(\w+)\)", q)
        if not m:
            print(f"variable {v['name']}: query {q!r} is not label_values()")
            return 1
        queries.append((f"variable {v['name']}", m.group(1) or "up", m.group(2)))
    for p in d["panels"]:
        for t in p.get("targets", []):
            queries.append((f"panel {p['title']!r} {t['refId']}", t["expr"], None))
    problems = []
    count = 0
    for inst in instances:
        values = dict(base, instance=inst)
        for what, expr, label in queries:
            e = substitute(expr, values)
            if "$" in e:
                problems.append(f"{what}: unsubstituted variable in {e}")
                continue
            count += 1
            if label:
                # label_values(SELECTOR, LABEL): the series' values of LABEL.
                r = get(url + "/api/v1/series",
                        {"match[]": e, "start": start, "end": now})
                got = sorted({s.get(label) for s in r["data"] if label in s})
                if not got:
                    problems.append(f"{what} [{inst}]: no value of {label} for {e}")
                continue
            r = get(url + "/api/v1/query", {"query": e, "time": now})
            if r["status"] != "success" or not r["data"]["result"]:
                problems.append(f"{what} [{inst}]: instant {e} -> {r.get('error') or 'no series'}")
            r = get(url + "/api/v1/query_range",
                    {"query": e, "start": start, "end": now, "step": step})
            if r["status"] != "success" or not r["data"]["result"]:
                problems.append(f"{what} [{inst}]: range {e} -> {r.get('error') or 'no series'}")
    if problems:
        print("\n".join(problems))
        return 1
    print(f"ok {count} queries, each with a series")
    return 0


def main(argv):
    cmd, args = argv[1], argv[2:]
    try:
        if cmd == "shorten":
            return cmd_shorten(*args)
        if cmd == "same-but-for":
            return cmd_same_but_for(*args)
        if cmd == "config":
            return cmd_config(args[0], args[1], args[2], args[3:])
        if cmd == "prom":
            return cmd_prom(*args)
        if cmd == "prom-quiet":
            return cmd_prom_quiet(args[0], args[1:])
        if cmd == "am":
            return cmd_am(*args)
        if cmd == "am-names":
            return cmd_am_names(*args)
        if cmd == "dashboard":
            return cmd_dashboard(args[0], args[1], args[2], args[3], args[4:])
        if cmd == "rules-health":
            return cmd_rules_health(*args)
    except (OSError, ValueError, KeyError) as e:
        print(f"{cmd}: {e!r}")
        return 1
    print(f"unknown command {cmd}")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

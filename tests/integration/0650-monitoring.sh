#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# deploy/monitoring/ works as its README says: the Prometheus rules load
# (`promtool check rules`) and pass their unit tests (`promtool test rules`
# on tests/monitoring/*_test.yml), every alert has a severity, a summary, a
# description, a `for:` and both a firing and a quiet test, and a README
# entry; the scrape example is a valid prometheus.yml; the Grafana dashboard
# is JSON with the data source and job/instance variables and PromQL that
# parses; and, against a live broker with hardware collectives on fmsim,
# the exposition passes `promtool check metrics` and has every metric name
# the rules and the dashboard use.  Without promtool it skips, unless
# CI=true, where a missing promtool is a failure.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

MON=$TOP/deploy/monitoring
RULES=$MON/vnibroker-alerts.yml
DASH=$MON/vnibroker-grafana.json

if ! command -v promtool >/dev/null; then
    if [ "${CI:-}" = true ]; then
        not_ok "promtool is installed (package prometheus; CI=true requires it)"
        finish
    fi
    skip_all "promtool is not installed (package prometheus)"
fi

# run_ok NAME CMD...: ok when CMD succeeds, else not ok with its output.
run_ok () {
    name=$1
    shift
    if "$@" >"$T/run.out" 2>&1; then
        ok "$name"
    else
        not_ok "$name"
        sed 's/^/#   /' "$T/run.out"
    fi
}

# py_ok NAME ARGS...: run the python3 script on stdin with ARGS; ok when it
# exits 0 (NAME gets its last line), else not ok with what it printed.
py_ok () {
    name=$1
    shift
    python3 - "$@" >"$T/py.out" 2>&1
    rc=$?
    expect_eq "$name: $(tail -n 1 "$T/py.out")" "$rc" 0
    [ "$rc" = 0 ] || sed 's/^/#   /' "$T/py.out"
}

# ---- the rules and their tests -----------------------------------------------
run_ok "promtool check rules accepts the rules" promtool check rules "$RULES"
n=0
for t in "$TOP"/tests/monitoring/*_test.yml; do
    [ -e "$t" ] || continue
    n=$((n + 1))
    # promtool resolves rule_files from the test file's folder.
    run_ok "promtool test rules $(basename "$t")" promtool test rules "$t"
done
expect_match "there are promtool unit tests ($n files)" "$n" '^[1-9]'

# Every alert: severity label, summary and description annotations, a for:,
# a README entry, and unit tests where it fires and where it stays quiet.
py_ok "every alert has severity, summary, description, for:, tests and a README entry" \
    "$RULES" "$MON/README.md" "$TOP"/tests/monitoring/*_test.yml <<'EOF'
import sys, yaml
rules_file, readme, tests = sys.argv[1], sys.argv[2], sys.argv[3:]
problems = []
alerts = set()
for g in yaml.safe_load(open(rules_file))["groups"]:
    for r in g["rules"]:
        if "alert" not in r:
            if r["record"].count(":") != 2:
                problems.append(f"recording rule {r['record']} is not level:metric:operations")
            continue
        name = r["alert"]
        alerts.add(name)
        if r.get("labels", {}).get("severity") not in ("warning", "critical"):
            problems.append(f"{name}: no severity warning|critical")
        for a in ("summary", "description"):
            if not r.get("annotations", {}).get(a):
                problems.append(f"{name}: no {a} annotation")
        if "for" not in r:
            problems.append(f"{name}: no for:")
fires, quiet = set(), set()
for t in tests:
    for case in yaml.safe_load(open(t))["tests"]:
        for a in case.get("alert_rule_test", []):
            (fires if a.get("exp_alerts") else quiet).add(a["alertname"])
text = open(readme).read()
for name in sorted(alerts):
    if name not in fires:
        problems.append(f"{name}: no test where it fires")
    if name not in quiet:
        problems.append(f"{name}: no test where it stays quiet")
    if name not in text:
        problems.append(f"{name}: not in deploy/monitoring/README.md")
print("\n".join(problems) if problems else f"{len(alerts)} alerts")
sys.exit(1 if problems else 0)
EOF

# The scrape example, with its rule_files pointed at this tree's rules.
sed "s|/etc/prometheus/rules/vnibroker-alerts.yml|$RULES|" \
    "$MON/prometheus.example.yml" >"$T/prometheus.yml"
run_ok "promtool check config accepts prometheus.example.yml" \
    promtool check config "$T/prometheus.yml"

# ---- the dashboard -----------------------------------------------------------
run_ok "the dashboard is JSON (python3 -m json.tool)" python3 -m json.tool "$DASH"
# Its shape, and its PromQL written out as recording rules for promtool to
# parse (Grafana's variables replaced by values).
py_ok "the dashboard has schemaVersion 36+, the datasource, job and instance variables" \
    "$DASH" "$T/dash-rules.yml" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
problems = []
if d.get("schemaVersion", 0) < 36:
    problems.append(f"schemaVersion {d.get('schemaVersion')} < 36")
var = {v["name"]: v for v in d["templating"]["list"]}
if var.get("datasource", {}).get("type") != "datasource" or \
        var["datasource"].get("query") != "prometheus":
    problems.append("no datasource variable of type prometheus")
for v in ("job", "instance"):
    if v not in var:
        problems.append(f"no {v} variable")
exprs = [v["query"]["query"] for v in var.values() if v["type"] == "query"]
for p in d["panels"]:
    if p["type"] == "row":
        continue
    if p.get("datasource", {}).get("uid") != "${datasource}":
        problems.append(f"panel {p['title']!r} does not use ${{datasource}}")
    if not p.get("targets"):
        problems.append(f"panel {p['title']!r} has no query")
    for t in p.get("targets", []):
        if t.get("datasource", {}).get("uid") != "${datasource}":
            problems.append(f"panel {p['title']!r} query {t['refId']} does not use ${{datasource}}")
        exprs.append(t["expr"])
with open(sys.argv[2], "w") as out:
    out.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, e in enumerate(exprs):
        m = re.fullmatch(r"label_values\((?:(.*), )?(\w+)\)", e)
        if m:
            e = m.group(1) or "up"
        e = e.replace("$__rate_interval", "1m").replace("$job", "vnibroker")
        e = e.replace("$instance", ".*")
        out.write(f"      - record: dashboard:expr_{i}:check\n        expr: {json.dumps(e)}\n")
print("\n".join(problems) if problems else f"{len(exprs)} queries")
sys.exit(1 if problems else 0)
EOF
run_ok "... and every query of it parses (promtool check rules)" \
    promtool check rules "$T/dash-rules.yml"

# The metric names the rules and the dashboard use: vnib_ names not part of
# a recording rule's name (level:metric:operations), and the recording
# rules they use.
unshown=""
python3 - "$RULES" "$DASH" >"$T/used.txt" <<'EOF'
import re, sys
names = set()
for f in sys.argv[1:]:
    names |= set(re.findall(r"(?<![\w:])vnib_[a-z0-9_]+(?![\w:])", open(f).read()))
    names |= set(re.findall(r"\b[a-z_]+:vnib_[a-z0-9_]+:[a-z0-9_]+\b", open(f).read()))
print("\n".join(sorted(names)))
EOF
for m in vnib_vni_pool_vnis vnib_vni_pool_size vnib_quarantine_reservations \
    vnib_quarantine_oldest_seconds vnib_nodes_drained vnib_fm_up vnib_fm_leader \
    vnib_fm_queue_depth vnib_fm_queue_oldest_seconds vnib_http_requests_total \
    vnib_http_request_duration_seconds_bucket vnib_db_pool_connections vnib_build_info; do
    grep -qxF "$m" "$T/used.txt" || unshown="$unshown $m"
done
expect_eq "the dashboard and rules show what issue 16 lists" "$unshown" ""
recorded=$(grep -o 'record: [a-z_:0-9]*' "$RULES" | sed 's/record: //')
missing=""
for r in $(grep ':' "$T/used.txt"); do
    printf '%s\n' "$recorded" | grep -qxF "$r" || missing="$missing $r"
done
expect_eq "the recording rules used are defined in the rules file" "$missing" ""

# ---- a live broker -------------------------------------------------------------
pg_start || exit 1
fm_start || { not_ok "fmsim starts"; finish; }
hwcoll_config "$T/b.toml" tux '
[vni]
pool = "3000-3009"'
broker_migrate_start "$T/b.toml"
# A job with hardware collectives: the broker calls the FM, so vnib_fm_up
# exists; the requests fill the HTTP histogram.
TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d '{"job_id":"mon1","uid":1001,"user":"alice","nodes":"n[1-2]","hwcoll":"on"}'
expect_status "a reservation with hardware collectives" 201
expect_json "... which the FM granted" .hwcoll.state reserved
TOKEN=$MONITOR_TOKEN http GET /v1/pool
expect_status "GET /v1/pool" 200
# The database figures are read every 5 s: wait for a reading.
wait_for 20 bash -c "curl -sS '$BROKER_URL/metrics' | grep -q '^vnib_fm_queue_depth '"
http GET /metrics
expect_status "GET /metrics" 200
printf '%s\n' "$HTTP_BODY" >"$T/metrics.txt"
run_ok "promtool check metrics finds nothing to lint in the broker's exposition" \
    promtool check metrics <"$T/metrics.txt"
if [ -s "$T/run.out" ]; then
    echo "# promtool check metrics said:"
    sed 's/^/#   /' "$T/run.out"
fi

# Every name used is exposed: a sample's name, or the family of a
# histogram's or summary's _bucket, _sum or _count.
absent=$(python3 - "$T/metrics.txt" "$T/used.txt" <<'EOF'
import re, sys
samples, families = set(), {}
for line in open(sys.argv[1]):
    m = re.match(r"# TYPE (\S+) (\S+)", line)
    if m:
        families[m.group(1)] = m.group(2)
    elif line.strip() and not line.startswith("#"):
        samples.add(re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0))
for name in open(sys.argv[2]).read().split():
    if ":" in name:
        continue
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    if name not in samples and families.get(base) not in ("histogram", "summary"):
        print(name)
EOF
)
expect_eq "every metric the rules and the dashboard use is in the scrape" "$(echo $absent)" ""

broker_stop
expect_eq "the broker stops cleanly" "$?" 0
finish

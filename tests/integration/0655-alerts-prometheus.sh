#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# deploy/monitoring/ against a real Prometheus and Alertmanager watching
# two broker replicas (one database, hardware collectives on fmsim).
#
# Two Prometheus servers scrape both replicas every second under the job
# `vnibroker`, each with a prometheus.yml made from prometheus.example.yml
# (promcheck.py config: intervals, targets, rule file).  The first loads
# deploy/monitoring/vnibroker-alerts.yml as shipped; the second a copy in
# which only the `for:` values are 5 s (checked as YAML), and sends to an
# Alertmanager whose only receiver is webhook.py.  Each alert below is
# driven by its real condition: the shipped rule must go pending (or
# firing) with the expected labels and rendered annotations, and the
# shortened one must reach the webhook firing, then resolved, with the
# same labels and annotations:
#
#   VnibFabricManagerDown   fmsim killed, then started again on its port
#   VnibVniPoolLow (both)   the pool reserved until exhausted, then released
#   VnibQuarantineOld       a quarantine aged past 1 h in the database,
#                           then its node reports destroyed
#   VnibNodesDrained        a node reports failed, then is undrained
#   VnibBrokerDown          a replica killed with SIGKILL, then restarted
#   VnibDatabaseDown        PostgreSQL stopped, then started
#
# Before that, on the healthy cluster after some traffic, no shipped alert
# is active and every query of the Grafana dashboard (panels and template
# variables, with $job, $instance as "All" and as both replicas selected,
# $__rate_interval and the like substituted as Grafana does) returns a
# series, as an instant and as a range query, every rule evaluates without
# error, and the check deploy/monitoring/README.md gives admins for their
# own Prometheus, run as printed there, passes.
#
# Knobs: VNIB_BUILD, KEEP_TEST_DIR (lib.sh).  Without prometheus,
# prometheus-alertmanager or python3-yaml it skips, unless CI=true, where
# that is a failure.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

MON=$TOP/deploy/monitoring
RULES=$MON/vnibroker-alerts.yml
DASH=$MON/vnibroker-grafana.json
CHECK=$TOP/tests/integration/promcheck.py
WEBHOOK=$TOP/tests/integration/webhook.py
T0=$(date +%s)

missing=""
for tool in prometheus prometheus-alertmanager python3; do
    command -v "$tool" >/dev/null || missing="$missing $tool"
done
python3 -c 'import yaml' 2>/dev/null || missing="$missing python3-yaml"
if [ -n "$missing" ]; then
    if [ "${CI:-}" = true ]; then
        not_ok "installed:$missing (CI=true requires them)"
        finish
    fi
    skip_all "not installed:$missing"
fi

pc () {
    python3 "$CHECK" "$@"
}

# pc_ok NAME ARGS...: ok when promcheck.py ARGS says ok, else not ok with
# what it printed.
pc_ok () {
    name=$1
    shift
    out=$(pc "$@" 2>&1)
    case "$out" in
    ok*) ok "$name (${out#ok })" ;;
    *)
        not_ok "$name"
        printf '%s\n' "$out" | sed 's/^/#   /' | head -n 30
        ;;
    esac
}

# since START: seconds from START (date +%s%N) to now, with a decimal.
since () {
    awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'
}

# ---- the cluster: PostgreSQL, fmsim, two replicas ------------------------------
pg_start || exit 1
# fmsim on a fixed port: it comes back there after being killed.
FM_PORT=$(pick_port)
fm_start_as --listen "127.0.0.1:$FM_PORT" --admin-listen 127.0.0.1:0 ||
    { not_ok "fmsim starts"; finish; }
# A pool of 40 VNIs: 3 free is below 10 %, none below 2 %.  The leader
# calls the FM at every reconciliation, hwcoll.reconcile_interval_s (5 s,
# the least allowed; hwcoll_config sets it), so vnib_fm_up follows the FM.
hwcoll_config "$T/A.toml" tux '
[vni]
pool = "3000-3039"'
sed -i 's/^\[server\]$/[server]\nreport_rate = 0/' "$T/A.toml"
cp "$T/A.toml" "$T/B.toml"
replicas_ab_start
PORT_A=${URL_A##*:}
PORT_B=${URL_B##*:}
echo "# replicas A $URL_A, B $URL_B; fmsim $FM_URL"

# ---- Alertmanager, its webhook receiver, two Prometheus servers ----------------
WH_PORT=$(pick_port)
WH_OUT=$T/webhook.jsonl
python3 "$WEBHOOK" "$WH_PORT" "$WH_OUT" >"$T/webhook.out" 2>"$T/webhook.log" &
track $!
wait_for 10 grep -q listening "$T/webhook.out" || { not_ok "webhook.py starts"; finish; }

AM_PORT=$(pick_port)
cat >"$T/alertmanager.yml" <<EOF
route:
  receiver: webhook
  group_by: ['...']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: webhook
    webhook_configs:
      - url: http://127.0.0.1:$WH_PORT/
        send_resolved: true
EOF
prometheus-alertmanager --config.file="$T/alertmanager.yml" \
    --storage.path="$T/alertmanager" --web.listen-address="127.0.0.1:$AM_PORT" \
    --cluster.listen-address= >"$T/alertmanager.log" 2>&1 &
track $!
wait_for 20 curl -sf "http://127.0.0.1:$AM_PORT/-/ready" ||
    { not_ok "Alertmanager starts"; sed 's/^/#   /' "$T/alertmanager.log" | tail; finish; }
ok "Alertmanager runs on 127.0.0.1:$AM_PORT, sending to webhook.py"

# The shortened rules: only the for: values differ.
pc_ok "a copy of the rules with every for: at 5 s" shorten "$RULES" "$T/rules-5s.yml" 5
pc_ok "... is the shipped rules as YAML but for the for: values" \
    same-but-for "$RULES" "$T/rules-5s.yml"

# prom_start NAME RULES [--alertmanager HOST:PORT]: a Prometheus with the
# example configuration turned to this test; sets PROM_<NAME>.
prom_start () {
    pp_port=$(pick_port)
    pc_ok "prometheus.yml for $1 from prometheus.example.yml" \
        config "$MON/prometheus.example.yml" "$T/prom-$1.yml" "$2" \
        "127.0.0.1:$PORT_A" "127.0.0.1:$PORT_B" ${3:+"$3" "$4"}
    prometheus --config.file="$T/prom-$1.yml" --storage.tsdb.path="$T/prom-$1" \
        --web.listen-address="127.0.0.1:$pp_port" >"$T/prom-$1.log" 2>&1 &
    track $!
    eval "PROM_$1=http://127.0.0.1:$pp_port"
    wait_for 30 curl -sf "http://127.0.0.1:$pp_port/-/ready" ||
        { not_ok "Prometheus $1 starts"; sed 's/^/#   /' "$T/prom-$1.log" | tail; finish; }
}
prom_start shipped "$RULES"
prom_start short "$T/rules-5s.yml" --alertmanager "127.0.0.1:$AM_PORT"
echo "# Prometheus with the shipped rules $PROM_shipped, with 5 s for: $PROM_short"

# targets_up URL: both replicas scraped and up.
targets_up () {
    [ "$(curl -sf "$1/api/v1/query?query=sum(up%7Bjob%3D%22vnibroker%22%7D)" |
        jq -r '.data.result[0].value[1]')" = 2 ]
}
for p in "$PROM_shipped" "$PROM_short"; do
    wait_for 30 targets_up "$p"
    expect_eq "$p scrapes both replicas under job vnibroker (sum of up)" \
        "$(curl -sf "$p/api/v1/query?query=sum(up%7Bjob%3D%22vnibroker%22%7D)" |
            jq -r '.data.result[0].value[1]')" 2
done

# ---- traffic on the healthy cluster, then the dashboard --------------------------
# report URL JOB NODE STATE: the node's report, to the replica at URL.
report () {
    BROKER_URL=$1 TOKEN=$(node_token "$3") http PUT "/v1/reservations/$2/nodes/$3" \
        -d "{\"cxi\":\"$4\"}"
}
for u in "$URL_A" "$URL_B"; do
    tag=${u##*:}
    BROKER_URL=$u http_reserve "t$tag" "n[1-2]"
    report "$u" "t$tag" n1 creating
    report "$u" "t$tag" n1 created
    BROKER_URL=$u TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/t$tag"
    expect_status "release t$tag (quarantined: n1 holds a service)" 202
    report "$u" "t$tag" n1 destroyed
    expect_status "n1 reports destroyed for t$tag" 200
    # A reservation with hardware collectives on each replica: both call
    # the FM, as in a cluster whose load balancer spreads the jobs.
    BROKER_URL=$u http_reserve "h$tag" "n[3-4]" on
    expect_json "... granted by the FM" .hwcoll.state reserved
    BROKER_URL=$u TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/h$tag"
    BROKER_URL=$u TOKEN=$MONITOR_TOKEN http GET /v1/pool
    BROKER_URL=$u TOKEN=$MONITOR_TOKEN http GET /v1/status
done
# Let Prometheus take a few scrapes of it (rates need two points in
# $__rate_interval) and a reading of the database figures.
sleep 6
# Both replicas called the FM: the follower's vnib_fm_up stays 1 while
# the FM is down below, until it calls again (VnibFabricManagerDown must
# not depend on it).
expect_eq "both replicas report vnib_fm_up 1 (each called the FM)" \
    "$(curl -sf "$PROM_short/api/v1/query?query=count(vnib_fm_up%3D%3D1)" |
        jq -r '.data.result[0].value[1]')" 2
pc_ok "no shipped alert is active on the healthy cluster" prom-quiet "$PROM_shipped"
inst_all='.*'
inst_both="(127\\\\.0\\\\.0\\\\.1:$PORT_A|127\\\\.0\\\\.0\\\\.1:$PORT_B)"
pc_ok "every dashboard query returns series, for \$instance All and both replicas" \
    dashboard "$DASH" "$PROM_shipped" "$T0" vnibroker "$inst_all" "$inst_both"
# ... and the same check finds no series for a job nobody scrapes.
out=$(pc dashboard "$DASH" "$PROM_shipped" "$T0" nosuchjob "$inst_all" 2>&1)
expect_match "... a control: for a job with no series it reports the panels with no data" \
    "$out" "^panel 'Free VNIs' A \[\.\*\]: instant .* -> no series"
# The check deploy/monitoring/README.md gives admins for their own
# Prometheus, as printed there, against the shipped one.
awk '/^\*\*The same check on your own Prometheus/ { f = 1 }
     f && /^```sh$/ { c = 1; next } c && /^```$/ { exit } c' "$MON/README.md" |
    sed "s|^PROM=.*|PROM=$PROM_shipped|" >"$T/readme-check.sh"
readme_out=$(cd "$TOP" && bash "$T/readme-check.sh" 2>&1)
# Its two commands, each printing one "ok" line and nothing else.
expect_eq "the README's check for an admin's own Prometheus passes here (commands, ok lines, other lines)" \
    "$(grep -c promcheck.py "$T/readme-check.sh") $(printf '%s\n' "$readme_out" | grep -c '^ok ') $(printf '%s\n' "$readme_out" | grep -vc '^ok ')" \
    "2 2 0"
printf '%s\n' "$readme_out" | sed 's/^/#   /'
for p in shipped short; do
    eval "url=\$PROM_$p"
    pc_ok "every rule of the $p rules evaluates without error (GET /api/v1/rules)" \
        rules-health "$url"
done

# ---- the alerts --------------------------------------------------------------
CL='"job":"vnibroker"'
# expect_fired NAME LABELS SUMMARY-RE STARTED: the shipped rule is pending
# or firing, and the 5 s rule reached the webhook firing, with LABELS
# (besides alertname) and rendered annotations; prints the delay from
# STARTED (date +%s%N) to when the test saw it there (an upper bound: the
# alerts are looked at one after the other).
expect_fired () {
    lab="{\"alertname\":\"$1\",$2}"
    wait_for 60 pc am "$WH_OUT" firing "$1" "$lab" "$3"
    echo "# $1 $2 seen firing at the webhook $(since "$4") s after its condition began"
    pc_ok "$1 $2: delivered firing by Alertmanager" am "$WH_OUT" firing "$1" "$lab" "$3"
    wait_for 10 pc prom "$PROM_shipped" "$1" "$lab" "$3"
    pc_ok "$1 $2: the shipped rule (for: as shipped) is active" \
        prom "$PROM_shipped" "$1" "$lab" "$3"
}
# expect_resolved NAME LABELS SUMMARY-RE STARTED: the webhook received it
# resolved, and the shipped rule is no longer active.
expect_resolved () {
    lab="{\"alertname\":\"$1\",$2}"
    wait_for 60 pc am "$WH_OUT" resolved "$1" "$lab" "$3"
    echo "# $1 $2 seen resolved at the webhook $(since "$4") s after its condition ended"
    pc_ok "$1 $2: delivered resolved by Alertmanager" am "$WH_OUT" resolved "$1" "$lab" "$3"
}

# Phase 1: the FM stopped, the pool exhausted, an old quarantine and a
# drained node, all at once (none of them changes another's figure).
# The quarantine: a job whose node n5 holds a service when it is
# released; its release time is moved back two hours in the database, the
# only way to have a quarantine over an hour old in a test.
BROKER_URL=$URL_A http_reserve pq n5
report "$URL_A" pq n5 creating
report "$URL_A" pq n5 created
BROKER_URL=$URL_A TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/pq
expect_status "pq released with n5 holding a service: quarantined" 202
psql_q "UPDATE reservations SET release_requested_at = release_requested_at - interval '2 hours'
         WHERE job_id = 'pq'" >/dev/null
expect_eq "pq's release moved two hours back" \
    "$(psql_q "SELECT now() - release_requested_at > interval '2 hours' FROM reservations WHERE job_id = 'pq'")" t
START_Q=$(date +%s%N)
# The drain: n6 reports failed for its job.
BROKER_URL=$URL_B http_reserve pd n6
report "$URL_B" pd n6 creating
BROKER_URL=$URL_B TOKEN=$(node_token n6) http PUT /v1/reservations/pd/nodes/n6 \
    -d '{"cxi":"failed","message":"cxil_alloc_svc: EIO"}'
expect_status "n6 reports failed (drained)" 200
START_D=$(date +%s%N)
# The pool: reserve until it is exhausted.
fill=0
while [ "$fill" -lt 50 ]; do
    BROKER_URL=$URL_A TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"f$fill\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"n[10-11]\"}"
    [ "$HTTP_STATUS" = 201 ] || break
    fill=$((fill + 1))
done
expect_eq "the pool is exhausted after $fill reserves (503 vni_pool_exhausted)" \
    "$HTTP_STATUS $(jq -r .error.code "$T/http.body")" "503 vni_pool_exhausted"
START_P=$(date +%s%N)
# The FM: killed.
{ fm_stop KILL; } 2>/dev/null
START_F=$(date +%s%N)

expect_fired VnibFabricManagerDown "$CL,\"severity\":\"critical\"" \
    '^The leading replica of vnibroker cannot reach the Fabric Manager$' "$START_F"
expect_fired VnibVniPoolLow "$CL,\"severity\":\"warning\"" \
    '^VNI pool of vnibroker below 10% free \(0%\)$' "$START_P"
expect_fired VnibVniPoolLow "$CL,\"severity\":\"critical\"" \
    '^VNI pool of vnibroker nearly exhausted \(0% free\)$' "$START_P"
expect_fired VnibQuarantineOld "$CL,\"severity\":\"warning\"" \
    '^A quarantine of vnibroker is older than 1 h \(2h [0-9]+m [0-9]+s\)$' "$START_Q"
expect_fired VnibNodesDrained "$CL,\"severity\":\"warning\"" \
    '^1 node\(s\) of vnibroker drained by vnibroker$' "$START_D"

# Undo all four; meanwhile replica B is killed (it changes no figure the
# others read, and its replica A reads the same database).
fm_start_as --listen "127.0.0.1:$FM_PORT" --admin-listen 127.0.0.1:0 ||
    not_ok "fmsim starts again on port $FM_PORT"
END_F=$(date +%s%N)
for i in $(seq 0 $((fill - 1))); do
    BROKER_URL=$URL_A TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/f$i"
done
expect_status "the last of the $fill pool-filling reservations released" 200
END_P=$(date +%s%N)
report "$URL_A" pq n5 destroyed
expect_json "n5 reports destroyed: pq's quarantine ends" .state released
END_Q=$(date +%s%N)
BROKER_URL=$URL_A TOKEN=$ADMIN_TOKEN http DELETE /v1/nodes/n6/drain
expect_status "n6 undrained (DELETE /v1/nodes/n6/drain)" 200
END_D=$(date +%s%N)
kill -KILL "$PID_B"
{ wait "$PID_B"; } 2>/dev/null
START_B=$(date +%s%N)

expect_resolved VnibFabricManagerDown "$CL,\"severity\":\"critical\"" \
    '^The leading replica of vnibroker cannot reach the Fabric Manager$' "$END_F"
expect_resolved VnibVniPoolLow "$CL,\"severity\":\"warning\"" '^VNI pool of vnibroker' "$END_P"
expect_resolved VnibVniPoolLow "$CL,\"severity\":\"critical\"" '^VNI pool of vnibroker' "$END_P"
expect_resolved VnibQuarantineOld "$CL,\"severity\":\"warning\"" '^A quarantine of vnibroker' "$END_Q"
expect_resolved VnibNodesDrained "$CL,\"severity\":\"warning\"" 'drained by vnibroker$' "$END_D"

BLAB="$CL,\"instance\":\"127.0.0.1:$PORT_B\",\"severity\":\"warning\""
expect_fired VnibBrokerDown "$BLAB" "^vnibroker replica 127\\.0\\.0\\.1:$PORT_B is down\$" "$START_B"
replica_start B || not_ok "replica B starts again on its port"
END_B=$(date +%s%N)
expect_resolved VnibBrokerDown "$BLAB" "^vnibroker replica 127\\.0\\.0\\.1:$PORT_B is down\$" "$END_B"

# Phase 2: the database stopped: each replica's alert.
wait_for 30 targets_up "$PROM_short"
pg_stop || not_ok "PostgreSQL stops"
START_DB=$(date +%s%N)
for port in "$PORT_A" "$PORT_B"; do
    expect_fired VnibDatabaseDown "$CL,\"instance\":\"127.0.0.1:$port\",\"severity\":\"critical\"" \
        "^127\\.0\\.0\\.1:$port cannot read the database\$" "$START_DB"
done
pg_resume_start || not_ok "PostgreSQL starts again"
END_DB=$(date +%s%N)
for port in "$PORT_A" "$PORT_B"; do
    expect_resolved VnibDatabaseDown "$CL,\"instance\":\"127.0.0.1:$port\",\"severity\":\"critical\"" \
        "^127\\.0\\.0\\.1:$port cannot read the database\$" "$END_DB"
done

# Every driven alert is over in the shipped rules too.
wait_for 30 pc prom-quiet "$PROM_shipped" VnibFabricManagerDown VnibVniPoolLow \
    VnibQuarantineOld VnibNodesDrained VnibBrokerDown VnibDatabaseDown
pc_ok "the shipped rules have no driven alert left active" prom-quiet "$PROM_shipped" \
    VnibFabricManagerDown VnibVniPoolLow VnibQuarantineOld VnibNodesDrained \
    VnibBrokerDown VnibDatabaseDown
echo "# the webhook received: $(pc am-names "$WH_OUT")"
echo "# wall time $(($(date +%s) - T0)) s"
finish

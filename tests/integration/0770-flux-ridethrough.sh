#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A Flux job stream rides through its broker's faults (issue 45, part 4):
# no job fails, none runs unisolated, when the broker's PostgreSQL is
# switched over, killed or frozen under Patroni, or the broker itself is
# killed with kill -9 and started again.
#
# Set-up: a Patroni cluster of three members (patroni.sh, generated from
# deploy/patroni/patroni.example.yml), one broker whose conninfo lists
# the three (TCP, TLS, target_session_attrs=read-write), with leases (ttl
# 10 s, so that a released VNI cools down 11 s and the pool of 32 VNIs is
# reused across the stream), and a three-broker Flux instance (flux.sh)
# with vnibroker's jobtap plugin, node side and shell plugin, at the
# plugin's default reserve-timeout-ms (60 s).
#
# A stream of short jobs is submitted continuously (three of one node,
# then two of two nodes, every RIDE_GAP seconds), each task printing its
# node, SLINGSHOT_VNIS and SLINGSHOT_SVC_IDS to a file of its own, while
# one fault after another (RIDE_MODES, default "switchover kill freeze
# broker") hits, each followed by its recovery (patroni_fault_end: one
# leader, two replicas streaming, one synchronous; for the broker, its
# restart RIDE_BROKER_DOWN seconds later on the same port) and a calm
# RIDE_CALM seconds.  A probe (a reserve and its release, every 0.1 s from
# the fault) measures the fault's window: from the fault to the first
# acknowledged reserve after the last failed one, bounded by a liveness
# limit (60 s).  The stream goes on until RIDE_JOBS jobs (100) were
# submitted and every fault is over (it is stuck, and the test fails,
# when no job was submitted for RIDE_STALL (90) seconds).
#
# Checks, from Flux's eventlogs and the tasks' files against what the
# database holds (a history check of the jobs' view):
#  - every job completed (its finish status 0, no exception), as `flux
#    jobs -a` says too; the plugin counts no failed reserve;
#  - every task of every job that ran saw VNIs and a CXI service, the
#    same VNIs on every node, exactly those of the one reservation the
#    database holds for the job (and of its cray-slingshot event);
#  - no two jobs that ran at the same time (start to finish in their
#    eventlogs) saw a VNI in common, and no two reservations in the
#    database held one VNI at once (created to released);
#  - at the end nothing is active or releasing (after the agents flushed
#    the reports they spooled), the plugin's spool is empty, no node is
#    drained, the database is consistent, the cluster is healthy and the
#    broker ready.
# Per fault one line, `# ridethrough: sched=flux fault=MODE window_ms=N
# longest_extra_ms=N jobs=N` (make bench's ridethrough scenario collects
# them): the fault's window, and the longest start delay (submit to start)
# of the jobs that waited across it beyond the median of the jobs that
# waited across no fault.  No timing is asserted but the liveness bounds.
#
# Knobs: RIDE_MODES, RIDE_JOBS (100), RIDE_STALL (90), RIDE_GAP (1.5),
# RIDE_CALM (4), RIDE_BROKER_DOWN (3), RIDE_BASE (6, seconds of stream
# before the first fault), FLUX_RESERVE_TIMEOUT_MS (60000, the plugin's
# default; 500 shows jobs failing in a fault, and this test failing).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/flux.sh"
. "$(dirname "$0")/patroni.sh"

RIDE_MODES=${RIDE_MODES:-switchover kill freeze broker}
RIDE_JOBS=${RIDE_JOBS:-100}
RIDE_GAP=${RIDE_GAP:-1.5}
RIDE_CALM=${RIDE_CALM:-4}
RIDE_BROKER_DOWN=${RIDE_BROKER_DOWN:-3}
RIDE_BASE=${RIDE_BASE:-6}
LIVE_MS=60000
POOL=3000-3031

flux_require
if ! patroni_tools; then
    if [ "${CI:-}" = true ]; then
        not_ok "$PATRONI_MISSING is installed (CI=true requires it)"
        finish
    fi
    skip_flux "$PATRONI_MISSING is not installed"
fi
trap 'flux_stop; patroni_cluster_stop; cleanup' EXIT
T_BEGIN=$(now_ms)
auth_setup
lease_keys

secs () {
    awk "BEGIN { printf \"%.1f\", $1 / 1000 }"
}

patroni_cluster_start ride || { not_ok "the Patroni cluster starts"; finish; }
ok "Patroni cluster up: leader $PATRONI_LEADER, three members from the example"

# The broker: lib.sh's config, the cluster's conninfo, the pool, leases.
broker_config "$T/rb.toml"
sed -i -e "s|^conninfo = .*|conninfo = \"$(patroni_conninfo)\"|" \
    -e 's/^level = .*/level = "notice"/' "$T/rb.toml"
printf '\n[vni]\npool = "%s"\n\n[lease]\nkey_file = "%s"\nttl_s = 10\nmax_skew_s = 1\n' \
    "$POOL" "$T/lease.key" >>"$T/rb.toml"
replica_first rb || { not_ok "the broker starts"; finish; }
BROKER_URL=$URL_rb
for n in fx0 fx1 fx2; do
    agent_setup "$n" 4 "[lease]
public_keys = [\"$T/lease.pub\"]"
done
FLUX_TIMEOUT_MS=5000 FLUX_RESERVE_TIMEOUT_MS=${FLUX_RESERVE_TIMEOUT_MS:-60000} \
    flux_setup "vnis-per-job = 1
hwcoll = \"off\""
flux_start || { not_ok "flux starts"; flux_dump_logs; finish; }
ok "Flux is up with the plugin loaded, $(grep "^reserve-timeout-ms" "$T/flux.d/vnibroker.toml")"
echo "# set-up took $(secs $(($(now_ms) - T_BEGIN))) s"

# ---- the job stream ---------------------------------------------------------
mkdir -p "$T/out"
: >"$T/submitted"
# Each task's line, in a file of its own (a script: --cc would take the
# braces of a command line for its {cc}).
cat >"$T/task.sh" <<EOF
echo "\$(flux getattr hostname) vnis=\${SLINGSHOT_VNIS:-none} svc=\${SLINGSHOT_SVC_IDS:-none}" >"$T/out/\$FLUX_JOB_ID.\$FLUX_TASK_RANK"
sleep 0.5
EOF
stream () {
    s_i=0
    while [ ! -e "$T/stream.stop" ]; do
        s_i=$((s_i + 1))
        if [ $((s_i % 2)) = 1 ]; then s_shape="--cc=1-3 -N1 -n1"; else s_shape="--cc=1-2 -N2 -n2"; fi
        # shellcheck disable=SC2086
        timeout 60 "$FLUX" submit $s_shape sh "$T/task.sh" >>"$T/submitted" 2>>"$T/submit.err"
        sleep "$RIDE_GAP"
    done
}
stream &
STREAM_PID=$!
track "$STREAM_PID"
submitted () { grep -c . "$T/submitted"; }

# probe_window MODE [DOWN]: reserve and release a probe job every 0.1 s
# from the fault ($t0) (DOWN 1: the broker was down from $t0 until now,
# counted as a failed probe) until reserves were acknowledged for 2 s after the last
# failed one (or, if none failed, until 15 s after the fault and the
# fault's own process ended), at most LIVE_MS; sets WIN_END (the first
# acknowledged reserve after the last failure; $t0 if none failed),
# PROBE_FAILS and PROBE_OK (it served at the end).
probe_window () {
    pw_n=0
    PROBE_FAILS=${2:-0}
    PROBE_OK=""
    pw_since=""
    while [ "$(now_ms)" -lt $((t0 + LIVE_MS)) ]; do
        pw_n=$((pw_n + 1))
        if probe_reserve "$BROKER_URL" "$1-$pw_n"; then
            TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/probe-$1-$pw_n" --max-time 3
            [ -n "$pw_since" ] || pw_since=$(now_ms)
        else
            PROBE_FAILS=$((PROBE_FAILS + 1))
            pw_since=""
        fi
        pw_now=$(now_ms)
        if [ -n "$pw_since" ]; then
            if [ "$PROBE_FAILS" -gt 0 ] && [ $((pw_now - pw_since)) -ge 2000 ]; then
                PROBE_OK=yes
                break
            fi
            if [ "$PROBE_FAILS" -eq 0 ] && [ $((pw_now - t0)) -ge 15000 ] &&
                { [ -z "${FAULT_PID:-}" ] || pid_gone "$FAULT_PID"; }; then
                PROBE_OK=yes
                break
            fi
        fi
        sleep 0.1
    done
    WIN_END=$t0
    [ "$PROBE_FAILS" -gt 0 ] && WIN_END=${pw_since:-$(now_ms)}
}

: >"$T/faults"
sleep "$RIDE_BASE"
for mode in $RIDE_MODES; do
    echo "# $mode: at $(secs $(($(now_ms) - T_BEGIN))) s, $(submitted) jobs submitted so far"
    FAULT_PID=""
    case "$mode" in
    broker)
        t0=$(now_ms)
        kill -KILL "$PID_rb" 2>/dev/null
        { wait "$PID_rb"; } 2>/dev/null
        sleep "$RIDE_BROKER_DOWN"
        # Started again as its unit's Restart=on-failure would: a start
        # whose first queries find the database too slow exits, and is
        # made again (every 2 s here, RestartSec in the unit).
        rb_up=""
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            replica_start rb && { rb_up=yes; break; }
            sleep 2
        done
        expect_eq "broker: the killed broker starts again on its port" "$rb_up" yes
        ;;
    *)
        patroni_fault "$mode" || { not_ok "$mode: a fault of that name"; continue; }
        t0=$FAULT_T0
        ;;
    esac
    if [ "$mode" = broker ]; then probe_window "$mode" 1; else probe_window "$mode"; fi
    win=$((WIN_END - t0))
    echo "# $mode: reserves failed for $(secs "$win") s after the fault ($PROBE_FAILS probes failed)"
    expect_eq "$mode: the broker serves reserves again within $((LIVE_MS / 1000)) s of the fault" \
        "$PROBE_OK" yes
    if [ "$mode" != broker ]; then
        if patroni_fault_end "$mode"; then
            ok "$mode: the cluster recovers: one leader, two replicas streaming, one synchronous"
        else
            not_ok "$mode: the cluster recovers: one leader, two replicas streaming, one synchronous"
        fi
        patroni_use_leader
    fi
    t_rec=$(now_ms)
    echo "# $mode: over at $(secs $((t_rec - T_BEGIN))) s"
    echo "$mode $t0 $WIN_END $t_rec" >>"$T/faults"
    sleep "$RIDE_CALM"
done

# The stream runs until RIDE_JOBS were submitted, then every job ends;
# it is stuck when no job was submitted for RIDE_STALL (90) s.
wait_lines "$T/submitted" "$RIDE_JOBS" "${RIDE_STALL:-90}"
touch "$T/stream.stop"
wait "$STREAM_PID"
NJOBS=$(submitted)
expect_match "the stream submitted $RIDE_JOBS jobs or more ($NJOBS)" \
    "$([ "$NJOBS" -ge "$RIDE_JOBS" ] && echo yes)" '^yes$'
[ -s "$T/submit.err" ] && sed 's/^/# submit: /' "$T/submit.err" | head -n 5
timeout 180 "$FLUX" queue drain
expect_eq "every job ended (flux queue drain)" "$?" 0
T_STREAM_END=$(now_ms)

# ---- what Flux says -----------------------------------------------------------
results=$(fluxc jobs -a -no '{result}' | sort | uniq -c | awk '{print $2 "=" $1}' | tr '\n' ' ')
expect_eq "flux jobs -a: every job completed, none failed" "$results" "COMPLETED=$NJOBS "
q=$(flux_query)
expect_eq "the plugin counted no failed reserve (reserve-failed)" "$(jq -r '.counts["reserve-failed"]' <<<"$q")" 0
echo "# plugin counts: $(jq -c .counts <<<"$q")"
[ "$(jq -r '.["last-error"] // empty' <<<"$q")" = "" ] ||
    echo "# plugin's last error: $(jq -r '.["last-error"]' <<<"$q")"

# ---- the end state --------------------------------------------------------------
wait_for 30 sh -c "[ \"\$($FLUX jobtap query vnib-jobtap.so | jq .spool.count)\" = 0 ]"
expect_eq "the plugin's spooled releases were all sent" "$(flux_query | jq -r .spool.count)" 0
for n in fx0 fx1 fx2; do
    spooled=$(ls "$T/$n/spool" 2>/dev/null | grep -c json)
    [ "$spooled" = 0 ] || echo "# $n: $spooled node reports spooled in the faults, flushed now"
    agent "$n" flush
    expect_eq "$n: the agent's spooled reports flushed" "$AGENT_RC" 0
done
patroni_use_leader
# Probes whose answer was lost in a fault may have been committed.
for j in $(psql_q "SELECT job_id FROM reservations WHERE job_id LIKE 'probe-%' AND state <> 'released'"); do
    echo "# releasing $j, a probe whose reserve's answer was lost"
    TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/$j"
done
no_live () { [ "$(psql_q "SELECT count(*) FROM reservations WHERE state <> 'released'")" = 0 ]; }
wait_for 30 no_live
expect_eq "every reservation is released at the end (none active or releasing)" \
    "$(psql_q "SELECT state || '=' || count(*) FROM reservations WHERE state <> 'released' GROUP BY state" | tr '\n' ' ')" ""
expect_eq "no node is drained" "$(fluxc resource drain -no '{ranks}' | grep -c .)" 0
expect_db_consistent "end"
if patroni_healthy; then ok "the cluster is healthy at the end"; else not_ok "the cluster is healthy at the end"; fi
expect_eq "the broker is ready at the end (/readyz)" \
    "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$BROKER_URL/readyz")" 200

# ---- the history check: what each job saw against the database ------------------
psql_q "SELECT coalesce(json_agg(json_build_object('job_id', job_id, 'vnis', vnis, 'state', state,
            'created', extract(epoch FROM created_at) * 1000,
            'released', extract(epoch FROM released_at) * 1000)), '[]')
          FROM reservations" >"$T/db.json"
"$FLUX" python - "$T/submitted" "$T/out" "$T/db.json" "$T/faults" >"$T/summary.json" 2>"$T/analysis.err" <<'EOF'
import glob, json, os, statistics, sys
import flux, flux.job
from flux.job import JobID

sub_file, out_dir, db_file, faults_file = sys.argv[1:5]
h = flux.Flux()
db = {}
for r in json.load(open(db_file)):
    db.setdefault(r["job_id"], []).append(r)
seen = {}
for path in glob.glob(os.path.join(out_dir, "*")):
    jid, rank = os.path.basename(path).rsplit(".", 1)
    line = open(path).read().strip()
    seen.setdefault(int(JobID(jid)), {})[int(rank)] = dict(
        kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)


def idset_count(s):
    n = 0
    for part in str(s).split(","):
        a, _, b = part.partition("-")
        n += (int(b) - int(a) + 1) if b else 1
    return n


jobs, problems = [], []
for f58 in (l.split()[0] for l in open(sub_file) if l.strip()):
    jid = JobID(f58)
    d = flux.job.job_kvs_lookup(h, jid, keys=["eventlog", "R"], decode=True)
    ev, exc = {}, []
    for line in d["eventlog"].splitlines():
        e = json.loads(line)
        ev.setdefault(e["name"], e)
        if e["name"] == "exception":
            exc.append(e["context"])
    ranks = sum(idset_count(x["rank"]) for x in (d.get("R") or {}).get("execution", {}).get("R_lite", []))
    ok = "finish" in ev and ev["finish"]["context"].get("status") == 0 and not exc
    j = dict(id=f58, dec=str(int(jid)), ok=ok,
             submit=ev["submit"]["timestamp"] * 1000,
             start=ev["start"]["timestamp"] * 1000 if "start" in ev else None,
             finish=ev["finish"]["timestamp"] * 1000 if "finish" in ev else None)
    if not ok:
        problems.append("%s failed: %s" % (f58, [x.get("note") for x in exc]))
    tasks = seen.get(int(jid), {})
    vsets = {r: t.get("vnis", "none") for r, t in tasks.items()}
    rows = db.get(j["dec"], [])
    dbv = ",".join(str(v) for v in sorted(rows[0]["vnis"])) if len(rows) == 1 else None
    cs = ev.get("cray-slingshot", {}).get("context", {}).get("vnis")
    why = []
    if len(tasks) != ranks:
        why.append("%d of %d tasks reported" % (len(tasks), ranks))
    if any(v == "none" for v in vsets.values()):
        why.append("a task without VNIs")
    if any(t.get("svc", "none") == "none" for t in tasks.values()):
        why.append("a task without a CXI service")
    if len(set(vsets.values())) > 1:
        why.append("tasks saw different VNIs %s" % sorted(set(vsets.values())))
    if len(rows) != 1:
        why.append("%d reservations in the database" % len(rows))
    elif not dbv or set(vsets.values()) != {dbv}:
        why.append("saw %s, the database holds %s" % (sorted(set(vsets.values())), dbv))
    elif cs is None or ",".join(str(v) for v in sorted(cs)) != dbv:
        why.append("cray-slingshot event %s, the database holds %s" % (cs, dbv))
    j["vnis"] = set(dbv.split(",")) if dbv else set()
    j["seen"] = set(",".join(vsets.values()).split(",")) - {"none", ""}
    # A job that never started ran nowhere: it failed, and is counted so.
    if "start" not in ev:
        why = []
    if why:
        problems.append("%s unisolated: %s" % (f58, "; ".join(why)))
    j["unisolated"] = bool(why)
    jobs.append(j)

# Jobs that ran at the same time saw no VNI in common.
ran = sorted((j for j in jobs if j["start"] and j["finish"]), key=lambda j: j["start"])
shared = []
for i, a in enumerate(ran):
    for b in ran[i + 1:]:
        if b["start"] >= a["finish"]:
            break
        common = a["seen"] & b["seen"]
        if common:
            shared.append("%s and %s both saw %s" % (a["id"], b["id"], sorted(common)))
most = now = 0
for _, step in sorted([(j["start"], 1) for j in ran] + [(j["finish"], -1) for j in ran]):
    now += step
    most = max(most, now)
# No VNI in two reservations at once (the database's own history).
spans = sorted((v, r["created"], r["released"] or float("inf"), r["job_id"])
               for rs in db.values() for r in rs for v in r["vnis"])
db_overlaps = ["VNI %d: %s and %s" % (a[0], a[3], b[3])
               for a, b in zip(spans, spans[1:]) if a[0] == b[0] and b[1] < a[2]]

faults = [l.split() for l in open(faults_file) if l.strip()]
faults = [(m, int(t0), int(te), int(tr)) for m, t0, te, tr in faults]


def across(j, lo, hi):
    return j["start"] is not None and j["submit"] <= hi and j["start"] >= lo


base = [j["start"] - j["submit"] for j in jobs
        if j["start"] is not None and not any(across(j, t0, tr) for _, t0, _, tr in faults)]
median = statistics.median(base) if base else 0
lines = []
for m, t0, te, tr in faults:
    hit = [j for j in jobs if across(j, t0, te)]
    extra = max([j["start"] - j["submit"] - median for j in hit] + [0])
    lines.append("# ridethrough: sched=flux fault=%s window_ms=%d longest_extra_ms=%d jobs=%d"
                 % (m, te - t0, extra, len(hit)))
json.dump(dict(jobs=len(jobs), completed=sum(j["ok"] for j in jobs),
               failed=sum(not j["ok"] for j in jobs),
               unisolated=sum(j["unisolated"] for j in jobs),
               problems=problems[:10], shared=shared[:10], db_overlaps=db_overlaps[:10],
               most_at_once=most, baseline_jobs=len(base), median_ms=int(median),
               vnis_used=len(set().union(*(j["vnis"] for j in jobs))) if jobs else 0,
               reused=sum(1 for j in jobs for _ in j["vnis"]) - len(set().union(*(j["vnis"] for j in jobs))) if jobs else 0,
               lines=lines), sys.stdout)
EOF
arc=$?
expect_eq "the history check ran over every job" "$arc:$(jq -r .jobs "$T/summary.json" 2>/dev/null)" "0:$NJOBS"
[ "$arc" = 0 ] || sed 's/^/# analysis: /' "$T/analysis.err" | tail -n 10
S=$(cat "$T/summary.json" 2>/dev/null || echo '{}')
jq -r '.problems[]?, .shared[]?, .db_overlaps[]?' <<<"$S" | sed 's/^/# /'
expect_eq "0 jobs failed (their eventlogs: finish status 0, no exception)" "$(jq -r .failed <<<"$S")" 0
expect_eq "0 jobs unisolated: every task of every job that ran saw a CXI service and the VNIs the database holds for its job" \
    "$(jq -r .unisolated <<<"$S")" 0
expect_eq "no two jobs that ran at the same time saw a VNI in common" "$(jq -r '.shared | length' <<<"$S")" 0
expect_eq "no VNI was in two reservations at once in the database" "$(jq -r '.db_overlaps | length' <<<"$S")" 0
echo "# $(jq -r .jobs <<<"$S") jobs, at most $(jq -r .most_at_once <<<"$S") running at once; $(jq -r .vnis_used <<<"$S") VNIs used, reused $(jq -r .reused <<<"$S") times; median start delay outside the faults $(jq -r .median_ms <<<"$S") ms ($(jq -r .baseline_jobs <<<"$S") jobs)"
expect_match "several jobs ran at a time ($(jq -r .most_at_once <<<"$S") at most)" \
    "$(jq -r .most_at_once <<<"$S")" '^([2-9]|[1-9][0-9])$'
expect_match "VNIs were reused across jobs ($(jq -r .reused <<<"$S") times)" "$(jq -r .reused <<<"$S")" '^[1-9]'
jq -r '.lines[]?' <<<"$S"
expect_eq "one ridethrough line per fault" "$(jq -r '.lines | length' <<<"$S")" "$(grep -c . "$T/faults")"
echo "# the stream and its faults took $(secs $((T_STREAM_END - T_BEGIN))) s from the start"

flux_stop
kill -TERM "$PID_rb" 2>/dev/null
finish

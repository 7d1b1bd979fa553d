#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A site's job mix on a pool smaller than the jobs want, started on a
# fresh slurmctld (issue 45, part 0).  A pool of six VNIs, leases of 10 s
# (a released VNI cools down until its lease ends), nodes of 3 CPUs, and
# batch jobs, held, then released at once after slurmctld restarts:
# one-VNI jobs, jobs that need no VNI (vnis=0, no_vni), two-VNI jobs of
# two steps, jobs with per-step VNIs (step_vnis=1, three steps), stepmgr
# jobs (--stepmgr, two steps), three-node jobs, job_vni jobs; one job
# canceled while it waits, one canceled while it runs, one requeued while
# it runs.  Every step prints what it was given and when.
# Slurm 25.11 and later (slurmctld asks switch/vnib whether a job may
# start): 40 jobs, about 200 s.
#  - every job completes (COMPLETED; the canceled ones CANCELLED, the
#    requeued one COMPLETED after its second start), every step of every
#    job ran and printed its VNIs, and no output names an interconnect
#    error or an exhausted pool;
#  - a job that needs no VNI never waits for VNIs (slurmctld's log);
#  - every task of a job with VNIs saw VNIs of the pool, no two jobs that
#    ran at once had a VNI in common (the broker's events), and at the
#    end no reservation is left active and all six VNIs are free.
#  Printed, not asserted: how many times a job was told to wait for VNIs
#  while the broker's free count (sampled every 0.5 s) had enough for it
#  from 2 s before to 4 s after (target 0).
# Slurm 24.05-25.05 (24.11 here; slurmctld starts a job whatever the
# pool, its first step's reserve is refused and srun retries it every
# 60-70 s): 14 jobs, the pool short for a few, about 200 s (the
# requeued job starts again no sooner than 120 s after its requeue, when
# its credential expires).  The job canceled while it waits is canceled
# while srun retries its step.
#  - every job and every step completes as above, and no output names an
#    interconnect error other than srun's retry ("Switch resources
#    currently not available");
#  - a job that needs no VNI never has a step refused (slurmctld's log);
#  - each stepmgr job completes with its stepmgr (its steps reserved with
#    its job token) or, its reservation at its start refused for want of
#    VNIs, without it (slurmctld's log says which, as the guide says);
#  - no VNI in two live reservations, nothing left, as above.
#  Printed, not asserted: how long each job's first step waited, and how
#  much of that the broker had enough VNIs free (srun's retry interval).
# 22.05-23.11 has no stepmgr: skipped (0575-slurm-step-fallback covers
# its steps).
# It failed before switch/vnib let a later step's own VNIs come only from
# VNIs free and not promised to jobs it admitted: a per-step-VNI job's
# second step took the VNI a job admitted in the same pass was counted
# on, and that job's steps failed (503 vni_pool_exhausted).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/slurm.sh"

[ "$VNIB_SLURM_RELEASE" -ge 2405 ] ||
    skip_all "Slurm $VNIB_SLURM_VERSION has no enable_stepmgr (24.05 and later do); 0575-slurm-step-fallback covers its steps on a short pool"
# ADMIT: slurmctld asks switch/vnib before it starts a job (25.11 on).
ADMIT=""
[ "$VNIB_SLURM_RELEASE" -ge 2511 ] && ADMIT=1

pg_start || exit 1
SLURM_LEASE_TTL=10
broker_up "$T/b.toml" "$(vni_pool 3000-3005)$(slurm_lease_toml)"
broker_pin_port "$T/b.toml"
# Nodes of 3 CPUs: a NIC holds 3 services that reserve TLEs
# (plugins/slurm/README.md, "How many steps a node holds at once"; more
# steps than that on a node is 0577-slurm-nic-limits), so at most three
# jobs share a node.  Contain, which --stepmgr needs.
slurm_switch_setup vnib_free_poll_ms=200 || { not_ok "switch plugin set-up"; finish; }
mkdir -p "$T/out"
chown nobody "$T/out"
slurm_start switch=vnib switch_params="$VNIB_SWITCH_PARAMS" plugin_dir="$VNIB_PLUGIN_DIR" \
    cpus=3 prolog_flags=Contain || { not_ok "slurm starts"; slurm_dump_logs 30; finish; }
ok "slurmctld and slurmd n1-n3 (3 CPUs each) are up with switch/vnib, a pool of six VNIs"
log=$VNIB_SLURM_LOGS/slurmctld.log

# job.sh STEPS NODES [GATE]: prints "BEGIN EPOCH_MS", waits for the file
# GATE if given, then runs STEPS steps, one after the other, each on NODES
# nodes; each task prints its step, node, VNIs and EPOCH_MS.  A failed
# step makes the job fail.
cat >"$T/out/job.sh" <<'EOS'
#!/bin/sh
echo "BEGIN $(date +%s%3N)"
[ -z "$3" ] || while [ ! -e "$3" ]; do sleep 0.2; done
rc=0
i=0
while [ "$i" -lt "$1" ]; do
    srun -N"$2" -n"$2" sh -c 'echo "STEP '"$i"' $SLURMD_NODENAME VNIS=$SLINGSHOT_VNIS FALLBACK=$VNIB_STEP_FALLBACK T=$(date +%s%3N)"; sleep 1' ||
        { echo "STEP $i FAILED"; rc=1; }
    i=$((i + 1))
done
exit $rc
EOS
chmod 755 "$T/out/job.sh"

# [GATE=FILE] submit NAME STEPS NODES NETWORK [SBATCH ARGS...]: a held
# job; prints its id and records "ID NAME STEPS NODES NETWORK" in $T/jobs.
submit () {
    local name=$1 steps=$2 nodes=$3 net=$4 id
    shift 4
    id=$(runuser -u nobody -- timeout 10 sbatch --parsable --hold -N"$nodes" -n"$nodes" \
        -o "$T/out/$name.out" --network="$net" "$@" "$T/out/job.sh" "$steps" "$nodes" \
        ${GATE:+"$GATE"}) ||
        return 1
    echo "$id $name $steps $nodes $net" >>"$T/jobs"
    echo "$id"
}
: >"$T/jobs"
if [ -n "$ADMIT" ]; then
    for i in 1 2 3 4 5 6 7 8; do submit one$i 1 1 vnis=1 >/dev/null; done
    for i in 1 2 3; do submit zero$i 1 1 vnis=0 >/dev/null; done
    for i in 1 2 3; do submit novni$i 1 1 no_vni >/dev/null; done
    for i in 1 2 3 4 5 6; do submit two$i 2 2 vnis=2 >/dev/null; done
    for i in 1 2 3 4 5 6; do submit stepv$i 3 1 vnis=1,step_vnis=1 >/dev/null; done
    for i in 1 2 3 4; do submit mgr$i 2 2 vnis=1 --stepmgr >/dev/null; done
    for i in 1 2 3 4; do submit wide$i 1 3 vnis=1 >/dev/null; done
    for i in 1 2 3; do submit jvni$i 2 2 job_vni >/dev/null; done
    cancel_wait=$(submit cancelw 1 1 vnis=2)
    njobs=40
else
    # Fewer (the pool goes round about twice), so that few jobs wait for
    # srun's retry (60-70 s) more than once: a VNI released cools down
    # 10 s, and a job that starts meanwhile waits a whole retry.  Slurm
    # starts them in this order (sched/builtin), those that need no VNI
    # first.
    submit zero1 1 1 vnis=0 >/dev/null
    submit novni1 1 1 no_vni >/dev/null
    for i in 1 2 3; do submit one$i 1 1 vnis=1 >/dev/null; done
    submit two1 2 2 vnis=2 >/dev/null
    submit stepv1 3 1 vnis=1,step_vnis=1 >/dev/null
    for i in 1 2; do submit mgr$i 2 2 vnis=1 --stepmgr >/dev/null; done
    submit wide1 1 3 vnis=1 >/dev/null
    submit jvni1 2 2 job_vni >/dev/null
    # Started at once, its step held until the pool is exhausted.
    cancel_wait=$(GATE=$T/out/go_cancelw submit cancelw 1 1 vnis=2)
    njobs=14
fi
cancel_run=$(submit cancelr 1 1 vnis=1)
requeue=$(submit requeue 1 1 vnis=1 --requeue)
ids=$(awk '{ print $1 }' "$T/jobs" | tr '\n' ' ')
expect_eq "$njobs jobs submitted, held" "$(wc -l <"$T/jobs")" "$njobs"

slurm_ctld_stop
slurm_ctld_start || { not_ok "slurmctld restarts"; slurm_dump_logs 30; finish; }
ok "slurmctld restarted: a fresh free count"

# The broker's free count, every 0.5 s, as "EPOCH_MS FREE", until the end.
(
    while :; do
        f=$(curl -s --max-time 2 -H "Authorization: Bearer $SCHED_TOKEN" \
            "$BROKER_URL/v1/pool" | jq -r '.free // empty' 2>/dev/null)
        [ -n "$f" ] && echo "$(now_ms) $f"
        sleep 0.5
    done
) >"$T/free.log" 2>/dev/null &
sampler=$!
track "$sampler"

# The two to cancel and the one to requeue are released first, so that
# the one to cancel while it runs and the one to requeue start at once
# (before 25.11 the one to cancel while it waits too, held at its gate).
first="$cancel_run,$requeue"
[ -n "$ADMIT" ] || first="$first,$cancel_wait"
timeout 10 scontrol release "$first"
# _started ID NAME: running, its first step's tasks under way (a job
# requeued while its first step is still being launched can leave 24.11's
# extern step unkillable, which drains the node).
_started () {
    [ "$(slurm_job_state "$1")" = RUNNING ] && grep -q '^STEP ' "$T/out/$2.out" 2>/dev/null
}
_begun () {
    [ "$(slurm_job_state "$1")" = RUNNING ] && grep -q '^BEGIN ' "$T/out/$2.out" 2>/dev/null
}
wait_for 30 _started "$cancel_run" cancelr &&
    ok "the job to cancel while it runs runs" || not_ok "the job to cancel while it runs runs"
wait_for 30 _started "$requeue" requeue &&
    ok "the job to requeue runs" || not_ok "the job to requeue runs"
[ -n "$ADMIT" ] || wait_for 30 _begun "$cancel_wait" cancelw
timeout 10 scontrol release "$(echo "$ids" | tr ' ' '\n' | grep -vxF "$(echo "$first" | tr , '\n')" | paste -sd,)"
t_release=$(now_ms)
timeout 10 scancel "$cancel_run"
timeout 10 scontrol requeue "$requeue"
if [ -n "$ADMIT" ]; then
    # The one to cancel while it waits: two VNIs, behind the whole mix.
    [ "$(slurm_job_state "$cancel_wait")" = PENDING ] &&
        ok "the job to cancel while it waits is pending" ||
        not_ok "the job to cancel while it waits is pending ($(slurm_job_state "$cancel_wait"))"
else
    # Its step asks two VNIs once the pool has none free; it waits in
    # srun's retry.
    _pool_empty () { [ "$(tail -n 1 "$T/free.log" | awk '{ print $2 }')" = 0 ]; }
    wait_for 60 _pool_empty || not_ok "the pool runs out of VNIs"
    touch "$T/out/go_cancelw"
    _refused () {
        grep -q "error: switch/vnib: JobId=$cancel_wait StepId=0: .*vni_pool_exhausted.*; srun retries the step until VNIs are free" "$log"
    }
    wait_for 30 _refused &&
        ok "the job to cancel while it waits runs, its step refused for want of VNIs (srun retries it)" ||
        not_ok "the job to cancel while it waits runs, its step refused for want of VNIs ($(slurm_job_state "$cancel_wait"))"
fi
timeout 10 scancel "$cancel_wait"

_all_ended () {
    local j
    for j in $ids; do _slurm_job_ended "$j" || return 1; done
}
wait_for 400 _all_ended || {
    not_ok "every job ends within 400 s"
    timeout 5 squeue -h -t all -o '%i %j %T %r' | sed 's/^/# /'
}
echo "# the mix ran $(( ($(now_ms) - t_release) / 1000 )) s"

# ---- every job and every step ------------------------------------------------
bad=""
while read -r id name steps nodes net; do
    st=$(slurm_job_state "$id")
    case "$id" in
    "$cancel_wait" | "$cancel_run") want=CANCELLED ;;
    *) want=COMPLETED ;;
    esac
    [ "$st" = "$want" ] || bad="$bad $name=$st"
done <"$T/jobs"
expect_eq "every job completes (the two canceled: CANCELLED); those that did not:" "$bad" ""
expect_match "the requeued job was started again" \
    "$(timeout 5 scontrol show job "$requeue" | grep -o 'Restarts=[0-9]*')" '^Restarts=[1-9]'

missing=""
unisolated=""
while read -r id name steps nodes net; do
    case "$id" in "$cancel_wait" | "$cancel_run") continue ;; esac
    i=0
    while [ "$i" -lt "$steps" ]; do
        n=$(grep -c "^STEP $i n[0-9] " "$T/out/$name.out")
        [ "$n" -eq "$nodes" ] || missing="$missing $name.$i($n/$nodes)"
        case "$net" in
        vnis=0 | no_vni) ;;
        *)
            grep "^STEP $i n[0-9] " "$T/out/$name.out" | grep -qv 'VNIS=300[0-5]' &&
                unisolated="$unisolated $name.$i"
            ;;
        esac
        i=$((i + 1))
    done
done <"$T/jobs"
expect_eq "every step of every job ran on all its nodes (step: tasks/nodes)" "$missing" ""
expect_eq "every task of a job with VNIs had VNIs of the pool" "$unisolated" ""
if [ -n "$ADMIT" ]; then
    expect_eq "no output names an interconnect error or an exhausted pool" \
        "$(grep -l 'Error configuring interconnect\|vni_pool_exhausted\|FAILED' "$T"/out/*.out |
            sed 's|.*/||' | tr '\n' ' ')" ""
else
    # srun's own retry: "srun: Job N step creation temporarily disabled,
    # retrying (Switch resources currently not available)", then "still
    # disabled".
    retry='^srun: Job [0-9]* step creation \(temporarily\|still\) disabled, retrying (Switch resources currently not available)$'
    errs=""
    for f in "$T"/out/*.out; do
        grep -v "$retry" "$f" | grep -qi 'interconnect\|switch resources\|vni_pool_exhausted\|FAILED' &&
            errs="$errs ${f##*/}"
    done
    expect_eq "no output names an interconnect error other than srun's retry, nor an exhausted pool" "$errs" ""
    echo "# $(grep -l "$retry" "$T"/out/*.out | wc -l) jobs had a step retried by srun"
fi
expect_eq "no step of a job with no VNI had any" \
    "$(grep -h '^STEP' "$T"/out/zero*.out "$T"/out/novni*.out | grep -cv 'VNIS= ')" 0
fallbacks=$(grep -l 'FALLBACK=job' "$T"/out/stepv*.out 2>/dev/null | wc -l)
echo "# $fallbacks of $(grep -c ' stepv' "$T/jobs") per-step-VNI jobs ran a step on their job's VNIs (vnib_step_fallback=job)"

# ---- no job that needs no VNI waited ----------------------------------------
waited=""
while read -r id name steps nodes net; do
    case "$net" in vnis=0 | no_vni) ;; *) continue ;; esac
    if [ -n "$ADMIT" ]; then
        grep -q "JobId=$id waits for VNIs" "$log" && waited="$waited $name"
    else
        grep -q "error: switch/vnib: JobId=$id StepId=" "$log" && waited="$waited $name"
    fi
done <"$T/jobs"
if [ -n "$ADMIT" ]; then
    expect_eq "no job that needs no VNI ever waited for VNIs" "$waited" ""
else
    expect_eq "no job that needs no VNI ever had a step refused (slurmctld's log)" "$waited" ""
fi

# ---- before 25.11: each stepmgr job with its stepmgr, or without it ----------
if [ -z "$ADMIT" ]; then
    mgr_bad=""
    with=0
    while read -r id name steps nodes net; do
        case "$name" in mgr*) ;; *) continue ;; esac
        TOKEN=$SCHED_TOKEN http GET "/v1/events?job_id=$id&action=reserve"
        actors=$(jq -r '.events[] | select(.step_id != null) | .actor' <<<"$HTTP_BODY" | sort -u | tr '\n' ' ')
        if grep -q "switch/vnib: JobId=$id: reservation [0-9]* for its stepmgr" "$log"; then
            # Its steps reserved at the stepmgr with the job's token.
            [ "$actors" = "job:$id " ] || mgr_bad="$mgr_bad $name(stepmgr:$actors)"
            with=$((with + 1))
        elif grep -q "error: switch/vnib: JobId=$id: the job's reservation at its start was refused (.*vni_pool_exhausted.*); it runs without a stepmgr" "$log"; then
            # Its steps reserved by slurmctld.
            case "$actors" in "" | *job:*) mgr_bad="$mgr_bad $name(no stepmgr:$actors)" ;; esac
        else
            mgr_bad="$mgr_bad $name(no log line)"
        fi
    done <"$T/jobs"
    expect_eq "each stepmgr job ran with its stepmgr (steps reserved with the job's token) or, refused at its start, without (slurmctld's log)" "$mgr_bad" ""
    echo "# $with of 2 stepmgr jobs ran with their stepmgr"
fi

# ---- the broker: no VNI in two live reservations, nothing left ---------------
kill "$sampler" 2>/dev/null
_drained () {
    [ "$(psql_q "SELECT count(*) FROM reservations WHERE state = 'active'")" = 0 ]
}
wait_for 60 _drained && ok "no reservation is left active" ||
    not_ok "no reservation is left active ($(psql_q "SELECT count(*) FROM reservations WHERE state = 'active'"))"
_all_free () {
    [ "$(curl -s -H "Authorization: Bearer $(cat "$T/sched.token")" "$BROKER_URL/v1/pool" |
        jq -r '.free')" = 6 ]
}
wait_for 90 _all_free && ok "all six VNIs are free again" ||
    not_ok "all six VNIs are free again ($(curl -s -H "Authorization: Bearer $(cat "$T/sched.token")" "$BROKER_URL/v1/pool"))"
expect_db_consistent "mix"
# Each VNI's holders, in the broker's own order of commits (events, as
# tests/stress/hcheck.c replays them): a reservation holds its VNIs from
# its reserve to the first event that frees them (force, quarantine_end,
# or a release that quarantined nothing); no reserve may name a VNI that
# another reservation holds then.
overlap=$(psql_q "
    WITH r AS (
        SELECT e.id, e.reservation_id, v::int AS vni
        FROM events e, jsonb_array_elements_text(e.detail->'vnis') v
        WHERE e.action = 'reserve'),
    f AS (
        SELECT reservation_id, min(id) AS fid FROM events
        WHERE action IN ('force', 'quarantine_end')
           OR (action = 'release' AND detail->>'quarantined' = 'false')
        GROUP BY reservation_id),
    iv AS (
        SELECT r.vni, r.id AS start, coalesce(f.fid, 9223372036854775807) AS stop,
               r.reservation_id
        FROM r LEFT JOIN f USING (reservation_id))
    SELECT count(*) FROM iv a JOIN iv b
        ON a.vni = b.vni AND a.reservation_id <> b.reservation_id
       AND a.start < b.start AND b.start < a.stop" 2>&1)
holders=$(psql_q "SELECT count(DISTINCT reservation_id) FROM events WHERE action = 'reserve' AND jsonb_array_length(detail->'vnis') > 0")
echo "# $holders reservations held VNIs"
expect_eq "no VNI was reserved again while its holder was live (broker's events)" "$overlap" 0

# ---- printed: waits while VNIs were free ----------------------------------------
if [ -n "$ADMIT" ]; then
    # Each "waits for VNIs: it needs N and M for its first step" line, and
    # whether the broker had N + M free
    # from 2 s before it to 4 s after: VNIs promised to jobs just started
    # (the plugin's claims) show in the broker's count only once those jobs
    # reserve at their first step, a second or two later, so only a count
    # that stays high across that is a job waiting for nothing.  An upper
    # bound: VNIs that come back meanwhile can keep the count up too.
    grep 'waits for VNIs' "$log" |
        sed -n 's/^\[\([^]]*\)\].*JobId=\([0-9]*\) waits for VNIs: it needs \([0-9]*\) and \([0-9]*\) for its first step.*/\1 \2 \3 \4/p' |
        while read -r ts id need step_need; do
            echo "$(date -d "${ts%.*}" +%s)${ts##*.} $id $((need + step_need))"
        done >"$T/waits.log"
    awk 'NR == FNR { t[NR] = $1; f[NR] = $2; n = NR; next }
        {
            ok = 1; seen = 0
            for (i = 1; i <= n; i++)
                if (t[i] >= $1 - 2000 && t[i] <= $1 + 4000) { seen = 1; if (f[i] < $3) ok = 0 }
            total++
            if (seen && ok) { needless++; ids = ids " " $2 }
        }
        END { printf "# %d refusals \"waits for VNIs\", %d of them while the broker had enough free from 2 s before to 4 s after (target 0)%s\n", total, needless + 0, (ids != "" ? ": jobs" ids : "") }' \
        "$T/free.log" "$T/waits.log"
else
    # Each job's wait: from its start (BEGIN, the last one for the job
    # requeued) to its first step's tasks, and how much of it the broker
    # had the VNIs its first step got free (samples 0.5 s apart).
    while read -r id name steps nodes net; do
        case "$id" in "$cancel_wait" | "$cancel_run") continue ;; esac
        awk -v name="$name" '
            $1 == "BEGIN" { b = $2; t = "" }
            $1 == "STEP" && $2 == 0 && $NF ~ /^T=[0-9]+$/ && t == "" {
                t = substr($NF, 3); v = $4; sub(/^VNIS=/, "", v)
                n = (v == "") ? 0 : split(v, x, ",")
                if ($5 == "FALLBACK=" && name ~ /^stepv/) n--
            }
            END { if (b != "" && t != "") print name, b, t, n }' "$T/out/$name.out"
    done <"$T/jobs" >"$T/firsts.log"
    awk 'NR == FNR { t[NR] = $1; f[NR] = $2; n = NR; next }
        {
            w = ($3 - $2) / 1000; free = 0
            for (i = 1; i <= n; i++)
                if (t[i] >= $2 && t[i] < $3 && f[i] >= $4) free += 0.5
            total += w; totfree += free
            if (w >= 2) { waited++; line = line sprintf(" %s %.0f/%.0f", $1, w, free) }
        }
        END {
            printf "# %d jobs waited 2 s or more for their first step, %.0f s in all, %.0f s of it while the broker had its VNIs free (srun retries every 60-70 s)%s\n", waited, total, totfree, (line != "" ? ": name waited/free s" line : "")
        }' "$T/free.log" "$T/firsts.log"
fi
finish

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Flux end to end: a real three-broker Flux instance (fx0-fx2, four
# simulated NICs each) with vnibroker's jobtap plugin, node side and shell
# plugin, against a real vnibrokerd (PostgreSQL, fmsim).
#
# flux run -N3: every task has its node's SLINGSHOT_* (and nothing from the
# submitting shell); the cray-slingshot event holds the broker's VNIs and
# the vnibroker event the reservation and its lease; services are created
# on every node from the lease, with no request of the nodes to the broker
# at job start, and destroyed by housekeeping; the reservation is
# released, quarantined until the last node's housekeeping reports, then
# free.  Six concurrent
# single-core jobs get distinct VNIs; a flux batch job's inner jobs share
# its VNIs; hardware collectives give FI_CXI_COLL_* (fetched by the nodes:
# the session token is neither in the job's eventlog nor in its lease) and
# release the FM job;
# -o cray-slingshot=off and vnicount=0 reserve nothing; bad options fail
# the job with the reason.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/fm.sh"
. "$(dirname "$0")/flux.sh"

flux_require
fm_start || { not_ok "fmsim starts"; finish; }
fm_jobs () { curl -s "$FM_ADMIN/fmsim/state" | jq -r '[.jobs[].jobID] | sort | join(",")'; }
(umask 077 && openssl rand 32 >"$T/fm.key")
flux_cluster "
[cluster]
name = \"fluxtest\"

$(hwcoll_table 3)
token_key_file = \"$T/fm.key\""
FLUX_HOUSEKEEPING_RETRY_BUSY=10s flux_setup
flux_start || { not_ok "flux starts"; flux_dump_logs; finish; }
ok "a three-broker Flux instance is up with the plugin loaded"

q=$(flux_query)
expect_eq "flux jobtap query shows the broker's URL" "$(jq -r .url <<<"$q")" "$BROKER_URL"
expect_eq "... and an empty spool" "$(jq -r .spool.count <<<"$q")" 0
expect_no_match "... and never the token" "$q" "$SCHED_TOKEN"

TASK_ENV='echo "$(flux getattr hostname) $(env | grep -E "^(SLINGSHOT_|FI_CXI_)" | LC_ALL=C sort | tr "\n" " ")"'
field () {
    printf '%s\n' "$1" | grep "^$2 " | tr ' ' '\n' | sed -n "s/^$3=//p" | head -n 1
}
resv () { TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$1"; }
# node_requests: the requests the nodes' side of a job start makes to the
# broker (a reservation's GET, a node's report), answered so far.
node_requests () {
    curl -sS --max-time 10 "$BROKER_URL/metrics" | awk '
        /^vnib_http_requests_total\{/ &&
        (/method="GET",route="\/v1\/reservations\/\{job_id\}"/ ||
         /method="PUT",route="\/v1\/reservations\/\{job_id\}\/nodes\/\{node\}"/) { n += $NF }
        END { print n + 0 }'
}

# ---- flux run -N3 ---------------------------------------------------------
id=$(SLINGSHOT_VNIS=999 FI_CXI_COLL_MCAST_TOKEN=leaked fluxc submit -N3 \
    -o vnibroker.hwcoll=off sh -c "$TASK_ENV")
fluxc job attach "$id" >"$T/run1.out" 2>"$T/run1.err"
expect_eq "flux run -N3 succeeds" "$?" 0
out=$(cat "$T/run1.out")
dec=$(fluxc job id --to=dec "$id")
resv "$dec"
VNIS=$(jq -r '.vnis | join(",")' <<<"$HTTP_BODY")
RES_ID=$(jq -r .id <<<"$HTTP_BODY")
expect_match "the broker reserved a VNI for job $dec (its decimal id)" "$VNIS" '^30[0-9][0-9]$'
expect_eq "the reservation lists fx[0-2]" "$(jq -r .nodes <<<"$HTTP_BODY")" "fx[0-2]"
expect_eq "cray-slingshot event: the broker's VNIs, as flux-coral2 reads them" \
    "$(flux_event "$id" cray-slingshot)" "{\"vnis\":[$VNIS]}"
ev=$(flux_event "$id" vnibroker)
expect_eq "vnibroker event: the reservation id" "$(jq -r .reservation <<<"$ev")" "$RES_ID"
expect_eq "vnibroker event: hwcoll off, as asked" "$(jq -r .hwcoll.mode <<<"$ev")" off
LEASE=$(jq -r '.lease // empty' <<<"$ev")
expect_match "vnibroker event: the broker's lease" "$LEASE" '^vnib1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$'
lp=$(lease_payload "$LEASE")
expect_eq "... for this job, its nodes, its owner, its reservation and VNIs" \
    "$(jq -c '[.job_id, .nodes, .uid, .id, (.vnis | map(tostring) | join(","))]' <<<"$lp")" \
    "[\"$dec\",\"fx[0-2]\",0,$RES_ID,\"$VNIS\"]"
expect_no_match "no event carries a session token" \
    "$(fluxc job eventlog "$id")" 'session_token|sessionToken'
for n in fx0 fx1 fx2; do
    expect_eq "$n: SLINGSHOT_VNIS is the reservation's" "$(field "$out" $n SLINGSHOT_VNIS)" "$VNIS"
    expect_eq "$n: SLINGSHOT_DEVICES lists its four NICs" "$(field "$out" $n SLINGSHOT_DEVICES)" cxi0,cxi1,cxi2,cxi3
    expect_match "$n: SLINGSHOT_SVC_IDS has a service per NIC" "$(field "$out" $n SLINGSHOT_SVC_IDS)" '^[0-9]+,[0-9]+,[0-9]+,[0-9]+$'
    expect_eq "$n: SLINGSHOT_TCS" "$(field "$out" $n SLINGSHOT_TCS)" 0xa
done
expect_no_match "no task kept the submitting shell's values" "$out" 'leaked|=999'
expect_eq "hwcoll off: no FI_CXI_COLL_* in any task" "$(grep -c FI_CXI_COLL <<<"$out")" 0

# Housekeeping destroyed the services and reported: released.
wait_for 20 sh -c "curl -s -H 'Authorization: Bearer $SCHED_TOKEN' $BROKER_URL/v1/reservations/$dec | jq -e '.state == \"released\"' >/dev/null"
resv "$dec"
expect_eq "after housekeeping the reservation is released" "$(jq -r .state <<<"$HTTP_BODY")" released
for n in fx0 fx1 fx2; do
    expect_eq "$n: no job service left on cxi0" "$(sim_count $n cxi0)" 0
done

# ---- the start from the lease: the nodes ask the broker nothing ------------
before=$(node_requests)
id=$(fluxc submit -N3 -o vnibroker.hwcoll=off sleep 30)
fluxc job wait-event -t 30s "$id" start >/dev/null
after=$(node_requests)
dec=$(fluxc job id --to=dec "$id")
expect_eq "a job starts on three nodes with no request of theirs to the broker" "$((after - before))" 0
for n in fx0 fx1 fx2; do
    expect_eq "$n: its record names the lease's reservation, presumed, with four services" \
        "$(jq -c '[.presumed, (.services | length)]' "$T/$n/state/jobs/$dec.json" 2>&1)" "[true,4]"
done
fluxc cancel "$id"
fluxc job attach "$id" >/dev/null 2>&1
wait_for 20 sh -c "curl -s -H 'Authorization: Bearer $SCHED_TOKEN' $BROKER_URL/v1/reservations/$dec | jq -e '.state == \"released\"' >/dev/null"
resv "$dec"
expect_eq "its end: every node reported, released" "$(jq -c '[.state, .cleanup.destroyed]' <<<"$HTTP_BODY")" '["released",3]'

# ---- quarantine: the VNIs stay held until the last node reports -----------
# fx2's NIC refuses the first destroys (EBUSY), so its housekeeping
# reports seconds after the others'.
sim_jq fx2 cxi0 '.faults.destroy_ebusy = 3'
id=$(fluxc submit -N3 -o vnibroker.hwcoll=off true)
dec=$(fluxc job id --to=dec "$id")
fluxc job attach "$id" >/dev/null 2>&1
wait_for 20 sh -c "curl -s -H 'Authorization: Bearer $SCHED_TOKEN' $BROKER_URL/v1/reservations/$dec | jq -e '.cleanup.destroyed == 2' >/dev/null"
resv "$dec"
expect_eq "two nodes reported destroyed, fx2 not yet: releasing" "$(jq -r .state <<<"$HTTP_BODY")" releasing
expect_eq "... and its VNIs are quarantined" "$(jq -r .quarantined <<<"$HTTP_BODY")" true
wait_for 30 sh -c "curl -s -H 'Authorization: Bearer $SCHED_TOKEN' $BROKER_URL/v1/reservations/$dec | jq -e '.state == \"released\"' >/dev/null"
resv "$dec"
expect_eq "fx2's housekeeping reported: released" "$(jq -r .state <<<"$HTTP_BODY")" released
expect_eq "fx2's service is gone" "$(sim_count fx2 cxi0)" 0

# ---- six concurrent single-core jobs: distinct VNIs ------------------------
# (They run until canceled: on a loaded machine, counting them takes
# seconds.)
ids=$(fluxc submit --cc=1-6 -n1 -o vnibroker.hwcoll=off sleep 120)
for j in $ids; do wait_for 30 sh -c "[ \"\$($FLUX jobs -no {state} $j)\" = RUN ]"; done
# shellcheck disable=SC2086
running=$(fluxc jobs -no {state} $ids | grep -c '^RUN$')
expect_eq "all six jobs run at once" "$running" 6
all=""
for j in $ids; do all="$all $(flux_event "$j" cray-slingshot | jq -r '.vnis[0]')"; done
expect_eq "six jobs, six VNIs ($all)" "$(printf '%s\n' $all | grep -c '^3')" 6
expect_eq "... none shared" "$(printf '%s\n' $all | sort -u | wc -l)" 6
# shellcheck disable=SC2086
fluxc cancel $ids
for j in $ids; do fluxc job attach "$j" >/dev/null 2>&1; done

# ---- flux batch: the inner jobs share the batch job's VNIs -----------------
cat >"$T/batch.sh" <<EOF
#!/bin/sh
flux run -N2 sh -c '$TASK_ENV'
flux run -N1 sh -c '$TASK_ENV'
EOF
chmod 755 "$T/batch.sh"
id=$(fluxc batch -N2 -o vnibroker.hwcoll=off --output="$T/batch.out" "$T/batch.sh")
fluxc job attach "$id" >/dev/null 2>&1
expect_eq "the batch job succeeds" "$(fluxc jobs -no {result} "$id")" COMPLETED
BV=$(flux_event "$id" cray-slingshot | jq -r '.vnis | join(",")')
out=$(grep 'SLINGSHOT_' "$T/batch.out")
expect_eq "three inner tasks ran" "$(grep -c . <<<"$out")" 3
expect_eq "every inner task has the batch job's VNIs ($BV)" \
    "$(grep -c "SLINGSHOT_VNIS=$BV " <<<"$out")" 3
TOKEN=$SCHED_TOKEN http GET "/v1/reservations?state=active"
expect_eq "the inner jobs reserved nothing of their own" \
    "$(jq '[.reservations[] | select(.job_id != "'"$(fluxc job id --to=dec "$id")"'")] | length' <<<"$HTTP_BODY")" 0

# ---- hardware collectives ---------------------------------------------------
id=$(fluxc submit -N3 -o vnibroker.hwcoll=on sh -c "$TASK_ENV; sleep 2")
dec=$(fluxc job id --to=dec "$id")
ev=$(flux_event "$id" vnibroker)
expect_eq "vnibroker event: hwcoll reserved" "$(jq -r .hwcoll.state <<<"$ev")" reserved
FMJ=$(jq -r .hwcoll.fm_job_id <<<"$ev")
expect_match "fmsim holds the job's FM job ($FMJ) while it runs" "$(fm_jobs)" "$FMJ"
fluxc job attach "$id" >"$T/hw.out" 2>/dev/null
out=$(cat "$T/hw.out")
for n in fx0 fx1 fx2; do
    expect_eq "$n: FI_CXI_COLL_JOB_ID is the FM job" "$(field "$out" $n FI_CXI_COLL_JOB_ID)" "$FMJ"
    expect_match "$n: FI_CXI_COLL_MCAST_TOKEN is set" "$(field "$out" $n FI_CXI_COLL_MCAST_TOKEN)" '^.{8,}$'
    expect_eq "$n: FI_CXI_COLL_FABRIC_MGR_URL" "$(field "$out" $n FI_CXI_COLL_FABRIC_MGR_URL)" "$FM_URL/fabric/collectives/multicasts"
    expect_eq "$n: FI_CXI_COLL_JOB_STEP_ID is the job" "$(field "$out" $n FI_CXI_COLL_JOB_STEP_ID)" "$dec"
done
tok=$(field "$out" fx0 FI_CXI_COLL_MCAST_TOKEN)
log=$(fluxc job eventlog "$id")
LEASE=$(flux_event "$id" vnibroker | jq -r '.lease // empty')
lp=$(lease_payload "$LEASE")
expect_eq "its lease says the nodes fetch the hardware collectives' variables" \
    "$(jq -c '[.hwcoll_fetch, ([.environment // {} | keys[] | select(startswith("FI_CXI_COLL_"))] | length)]' <<<"$lp")" '[true,0]'
expect_no_match "flux job eventlog holds no FI_CXI_COLL_MCAST_TOKEN" "$log" 'FI_CXI_COLL_MCAST_TOKEN|session_?[tT]oken'
expect_no_match "... nor does the lease in it, decoded" "$lp" 'FI_CXI_COLL_MCAST_TOKEN|session_?[tT]oken'
if [ -n "$tok" ]; then
    expect_no_match "the session token is in no job event" "$log" "$tok"
    expect_no_match "... nor in the lease" "$lp" "$tok"
    expect_no_match "... and not in the instance's log" "$(cat "$T/flux.log")" "$tok"
    # What else the job's owner reads through Flux: flux job info's keys
    # (guest.output is the tasks' own output, where they printed it: the
    # check that sees it there proves it would see it elsewhere).
    info=""
    for k in eventlog guest.exec.eventlog jobspec R J; do
        info="$info $(fluxc job info "$id" "$k" 2>&1 | tr '\n' ' ')"
    done
    expect_match "flux job info read the job's eventlog, exec eventlog, jobspec, R" \
        "$info" '"name":"vnibroker".*"name":"shell.init".*"version": ?1.*"execution"'
    expect_eq "... and none holds the session token" \
        "$(printf '%s\n' "$info" | grep -cF -- "$tok")" 0
    expect_eq "... which flux job info guest.output shows where the tasks printed it" \
        "$(fluxc job info "$id" guest.output 2>&1 | grep -cF -- "$tok" | sed 's/^[1-9][0-9]*$/yes/')" yes
fi
wait_for 20 sh -c "! curl -s $FM_ADMIN/fmsim/state | grep -q '$FMJ'"
expect_no_match "the FM job is released after the job" "$(fm_jobs)" "$FMJ"

# ---- what a job asks for ----------------------------------------------------
id=$(SLINGSHOT_VNIS=999 fluxc submit -N1 -o cray-slingshot=off sh -c "$TASK_ENV")
fluxc job attach "$id" >"$T/off.out" 2>/dev/null
expect_eq "-o cray-slingshot=off: an empty reservation saying why" \
    "$(flux_event "$id" cray-slingshot)" '{"vnis":[],"empty-reason":"disabled by user request"}'
expect_eq "... no SLINGSHOT_* in its task, not even the shell's" "$(grep -c SLINGSHOT "$T/off.out")" 0
resv "$(fluxc job id --to=dec "$id")"
expect_eq "... and nothing reserved" "$HTTP_STATUS" 404
id=$(fluxc submit -N1 -o cray-slingshot.vnicount=0 true)
fluxc job attach "$id" >/dev/null 2>&1
expect_eq "vnicount=0: none requested" "$(flux_event "$id" cray-slingshot)" '{"vnis":[],"empty-reason":"none requested"}'
id=$(fluxc submit -N2 -o cray-slingshot.vnicount=2 -o vnibroker.hwcoll=off sh -c "$TASK_ENV")
fluxc job attach "$id" >"$T/two.out" 2>/dev/null
two=$(flux_event "$id" cray-slingshot | jq -r '.vnis | join(",")')
expect_match "vnicount=2: two VNIs" "$two" '^30[0-9][0-9],30[0-9][0-9]$'
expect_eq "... in both tasks" "$(grep -c "SLINGSHOT_VNIS=$two " "$T/two.out")" 2
id=$(fluxc submit -N1 -o cray-slingshot.vnicount=42 true)
fluxc job attach "$id" >/dev/null 2>"$T/bad.err"
expect_eq "vnicount=42 fails the job" "$(fluxc jobs -no {result} "$id")" FAILED
expect_match "... with the reason" "$(cat "$T/bad.err")" 'vnicount must be within 0-4'
id=$(fluxc submit -N1 -o vnibroker.hwcoll=bogus true)
fluxc job attach "$id" >/dev/null 2>"$T/bad.err"
expect_match "hwcoll=bogus fails the job with the reason" "$(cat "$T/bad.err")" 'hwcoll must be on, off or auto'

wait_for 20 sh -c "[ \"\$(curl -s -H 'Authorization: Bearer $SCHED_TOKEN' '$BROKER_URL/v1/reservations?state=active' | jq '.reservations | length')\" = 0 ]"
TOKEN=$SCHED_TOKEN http GET "/v1/reservations?state=active"
expect_eq "no reservation is left active" "$(jq '.reservations | length' <<<"$HTTP_BODY")" 0
q=$(flux_query)
expect_eq "the plugin's counts: nothing failed, nothing spooled" \
    "$(jq -c '[.counts["release-failed"], .counts["release-spooled"], .spool.count]' <<<"$q")" '[0,0,0]'

flux_stop
finish

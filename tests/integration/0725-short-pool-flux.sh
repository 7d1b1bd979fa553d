#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Flux on a pool too short for its jobs (issue 45 part 0): a job whose
# reserve is answered 503 vni_pool_exhausted waits, held in its prolog,
# and starts when VNIs come back; it never fails for want of VNIs while
# pool-wait-ms lasts.  A pool of two VNIs (leases of 10 s: a released
# VNI cools down until its lease expires, as on a real machine).
#
#  - pool-wait-ms = 0 (flux config reload): the old refusal, at once, with
#    the broker's message (so this test can fail).
#  - the pool filled by another scheduler (two reservations made with the
#    broker's API): a job waits, logged once and told in its eventlog
#    (vnibroker-wait, with the broker's message), still waits seconds
#    later; canceled while it waits: it ends with only the cancel
#    exception, nothing is reserved for it, no node is drained.
#  - the same, and one of the other scheduler's reservations released: the
#    waiting job gets the VNI and completes.
#  - six jobs at once, of one VNI each, some on two nodes: every one
#    completes, none fails; no two running jobs share a VNI; the number
#    that waited is printed; nothing is left active.
#  - a mix: four jobs that ask no VNI start at once while the pool is
#    short (never a vnibroker-wait), five of one VNI and two of two VNIs
#    all complete with the VNIs they asked for, none overlapping another's,
#    and one canceled (waiting or running) ends canceled; the time jobs
#    waited for VNIs is printed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/flux.sh"

flux_require
FLUX_VNI_POOL=3000-3001 FLUX_LEASE_TOML="ttl_s = 10
max_skew_s = 1" flux_cluster
flux_setup "vnis-per-job = 1
hwcoll = \"off\""
flux_start || { not_ok "flux starts"; flux_dump_logs; finish; }
ok "Flux is up with the plugin loaded, the broker's pool 3000-3001"

resv () { TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$1"; }
drained () { fluxc resource drain -no '{ranks}' | grep -c .; }
active () {
    TOKEN=$SCHED_TOKEN http GET "/v1/reservations?state=active"
    jq '.reservations | length' <<<"$HTTP_BODY"
}
# fill JOB: another scheduler takes one VNI (no lease: released at once).
fill () { http_reserve "$1" "slurm[0-1]"; }
unfill () {
    TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/$1"
    expect_match "the other scheduler releases $1" "$HTTP_STATUS" '^20[02]$'
}
# refusals: the reserves the broker answered 503 so far.
refusals () {
    curl -sS --max-time 10 "$BROKER_URL/metrics" | awk '
        /^vnib_http_requests_total\{/ && /method="POST",route="\/v1\/reservations",code="503"/ { n += $NF }
        END { print n + 0 }'
}
waits () { fluxc job eventlog "$1" 2>/dev/null | grep -c ' vnibroker-wait '; }
conf_line () {
    sed -i '/^pool-wait-ms = /d' "$T/flux.d/vnibroker.toml"
    [ -n "$1" ] && echo "pool-wait-ms = $1" >>"$T/flux.d/vnibroker.toml"
    fluxc config reload || not_ok "flux config reload"
}

q=$(flux_query)
expect_eq "pool-wait-ms defaults to 25 minutes" "$(jq -r '.["pool-wait-ms"]' <<<"$q")" 1500000

# ---- pool-wait-ms = 0: the old refusal ---------------------------------------
fill fill1
fill fill2
conf_line 0
expect_eq "flux config reload takes pool-wait-ms = 0" "$(flux_query | jq -r '.["pool-wait-ms"]')" 0
id=$(fluxc submit -N1 true)
fluxc job attach "$id" >/dev/null 2>"$T/a.err"
expect_eq "with pool-wait-ms = 0 a job on a full pool fails" "$(fluxc jobs -no {result} "$id")" FAILED
ex=$(fluxc job wait-event -f json -t 5s "$id" exception | jq -c .context)
expect_match "... at once, with the broker's refusal" "$(jq -r .note <<<"$ex")" \
    'the broker refused the reservation: vni_pool_exhausted: .*1 VNIs requested, 0 free'
expect_eq "... and no wait" "$(waits "$id")" 0

# ---- a job waits, and is canceled while it waits --------------------------------
conf_line ""
expect_eq "pool-wait-ms back to its default" "$(flux_query | jq -r '.["pool-wait-ms"]')" 1500000
r0=$(refusals)
id=$(fluxc submit -N1 true)
dec=$(fluxc job id --to=dec "$id")
ev=$(flux_event "$id" vnibroker-wait)
expect_match "a job on a full pool waits: its vnibroker-wait event gives the broker's message" \
    "$(jq -r .reason <<<"$ev")" '^vni_pool_exhausted: .*1 VNIs requested, 0 free'
expect_eq "... and how long it may wait" "$(jq -r '.["pool-wait-ms"]' <<<"$ev")" 1500000
sleep 4
expect_eq "four seconds later it is still held (RUN, not started), not failed" \
    "$(fluxc jobs -no {state} "$id"):$(fluxc job eventlog "$id" | grep -c -e ' start' -e ' exception')" RUN:0
r1=$(refusals)
echo "# its reserve was refused $((r1 - r0)) times in about 4 s"
expect_match "... its reserve is made again and again ($((r1 - r0)) refusals)" "$((r1 - r0))" '^([3-9]|[1-9][0-9])$'
q=$(flux_query)
expect_eq "the plugin counts it waiting" "$(jq -c '[.calls.waiting, .counts["pool-waited"]]' <<<"$q")" '[1,1]'
expect_eq "... its wait is logged once" "$(grep -c "job $dec waits for VNIs" "$T/flux.log")" 1
expect_match "... with the broker's message" "$(grep "job $dec waits for VNIs" "$T/flux.log")" \
    'held in its prolog for up to 1500 s \(pool-wait-ms\): vni_pool_exhausted: '
fluxc cancel "$id"
fluxc job wait-event -t 30s "$id" clean >/dev/null
expect_eq "canceled while it waited, the job ends" "$(fluxc jobs -no {result} "$id")" CANCELED
exs=$(fluxc job eventlog "$id" | grep ' exception ')
echo "# its exceptions: $(printf '%s\n' "$exs" | grep -c .)"
expect_eq "... with the cancel exception, and none of vnibroker's" \
    "$(grep -c 'type="cancel"' <<<"$exs"):$(grep -c 'type="vnibroker"' <<<"$exs")" 1:0
expect_eq "... its wait is over" "$(flux_query | jq -r .calls.waiting)" 0
sleep 0.5
r2=$(refusals)
sleep 3
expect_eq "... no reserve of it is made after it ended" "$(refusals)" "$r2"
resv "$dec"
expect_eq "... and nothing is reserved for it" "$HTTP_STATUS" 404
expect_eq "... no node is drained" "$(drained)" 0

# ---- a job waits, and another scheduler's release lets it run -------------------
id=$(fluxc submit -N2 true)
dec=$(fluxc job id --to=dec "$id")
flux_event "$id" vnibroker-wait >/dev/null
expect_eq "a two-node job waits" "$(waits "$id")" 1
unfill fill1
fluxc job attach "$id" >/dev/null 2>&1
expect_eq "a VNI free again, it runs and completes" "$(fluxc jobs -no {result} "$id")" COMPLETED
expect_eq "... with the freed VNI" "$(flux_event "$id" cray-slingshot)" '{"vnis":[3000]}'
expect_match "... logged" "$(cat "$T/flux.log")" "job $dec got its VNIs \\(after [0-9]+ ms waiting for VNIs, [0-9]+ attempts\\)"
unfill fill2

# ---- six jobs at once on two VNIs ----------------------------------------------
# Each holds its VNI 2 s, and the VNI cools down until its lease expires
# (10 s after the reserve): three rounds.
t0=$(date +%s%N)
ids=""
for shape in "-n1" "-N2" "-n1" "-n1" "-N2" "-n1"; do
    # shellcheck disable=SC2086
    ids="$ids $(fluxc submit $shape sh -c 'sleep 2')"
done
for j in $ids; do fluxc job attach "$j" >/dev/null 2>&1; done
t1=$(date +%s%N)
# shellcheck disable=SC2086
results=$(fluxc jobs -no {result} $ids | sort | uniq -c | awk '{print $2 "=" $1}' | tr '\n' ' ')
expect_eq "all six jobs complete, none fails" "$results" "COMPLETED=6 "
nwaited=0
vnis=""
for j in $ids; do
    [ "$(waits "$j")" = 1 ] && nwaited=$((nwaited + 1))
    vnis="$vnis $(flux_event "$j" cray-slingshot | jq -r '.vnis | join(",")')"
done
echo "# $nwaited of 6 jobs waited for VNIs; all done in $(((t1 - t0) / 1000000)) ms"
expect_match "more jobs ran than the pool holds: some waited ($nwaited)" "$nwaited" '^[1-6]$'
expect_eq "every job had one VNI of the pool ($vnis)" "$(printf '%s\n' $vnis | grep -c '^300[01]$')" 6
# No two jobs held one VNI at once: each job's reservation, from its
# creation to its release (once the nodes reported), overlaps no other's
# of the same VNI.
for j in $ids; do
    wait_for 30 sh -c "curl -s -H 'Authorization: Bearer $SCHED_TOKEN' $BROKER_URL/v1/reservations/$(fluxc job id --to=dec "$j") | jq -e '.state == \"released\"' >/dev/null"
done
: >"$T/spans"
for j in $ids; do
    resv "$(fluxc job id --to=dec "$j")"
    jq -r '[.vnis[0], .created_at, (.released_at // "z")] | map(tostring) | join(" ")' <<<"$HTTP_BODY" >>"$T/spans"
done
overlap=$(sort -k1,1 -k2,2 "$T/spans" | awk '$1 == v && $2 < end { print "overlap: " $0 } { v = $1; end = $3 }')
expect_eq "no two jobs held one VNI at once (6 spans)" "$(grep -c . "$T/spans"):$overlap" "6:"
# ---- a mix: jobs of 0, 1 and 2 VNIs, one canceled while it waits -----------------
# Four jobs that ask no VNI (cray-slingshot.vnicount=0, cray-slingshot=off)
# start at once while the pool is short; five of one VNI (some on two
# nodes) and two of two VNIs wait their turn; one of one VNI is canceled
# while it waits.
t0=$(date +%s%N)
mix=""
add_mix () {
    mix="$mix $1:$(fluxc submit "${@:2}" sh -c 'sleep 2')"
}
add_mix 2 -o cray-slingshot.vnicount=2 -N2
# One to cancel once it has reached the plugin (waiting for VNIs or
# running: the pool decides which).
victim=$(fluxc submit -n1 sh -c 'sleep 60')
add_mix 1 -n1
add_mix 1 -N2
add_mix 2 -o cray-slingshot.vnicount=2 -n1
add_mix 0 -o cray-slingshot.vnicount=0 -n1
add_mix 0 -o cray-slingshot=off -N2
add_mix 1 -n1
add_mix 0 -o cray-slingshot.vnicount=0 -N2
add_mix 1 -N2
add_mix 0 -o cray-slingshot=off -n1
add_mix 1 -n1
_victim_held () { fluxc job eventlog "$victim" 2>/dev/null | grep -q ' prolog-start .*vnibroker'; }
wait_for 30 _victim_held && ok "the job to cancel reached the plugin" ||
    not_ok "the job to cancel reached the plugin"
victim_waited=$(waits "$victim")
echo "# the job canceled was $([ "$victim_waited" = 1 ] && echo waiting for VNIs || echo running)"
fluxc cancel "$victim"
nozero=""
for e in $mix; do
    n=${e%%:*} j=${e#*:}
    fluxc job attach "$j" >/dev/null 2>&1
    [ "$n" = 0 ] && [ "$(waits "$j")" != 0 ] && nozero="$nozero $j"
done
fluxc job attach "$victim" >/dev/null 2>&1
t1=$(date +%s%N)
results=$(for e in $mix; do fluxc jobs -no {result} "${e#*:}"; done | sort | uniq -c |
    awk '{print $2 "=" $1}' | tr '\n' ' ')
expect_eq "every job of the mix completes, none fails" "$results" "COMPLETED=11 "
expect_eq "the job canceled ends canceled" "$(fluxc jobs -no {result} "$victim")" CANCELED
expect_eq "no job that asks no VNI waited for VNIs" "$nozero" ""
bad=""
mixwaited=0
: >"$T/mixspans"
for e in $mix; do
    n=${e%%:*} j=${e#*:}
    [ "$(waits "$j")" = 1 ] && mixwaited=$((mixwaited + 1))
    got=$(flux_event "$j" cray-slingshot | jq -r '.vnis | length')
    [ "$got" = "$n" ] || bad="$bad $j:$got/$n"
    [ "$n" = 0 ] && continue
    dec=$(fluxc job id --to=dec "$j")
    wait_for 30 sh -c "curl -s -H 'Authorization: Bearer $SCHED_TOKEN' $BROKER_URL/v1/reservations/$dec | jq -e '.state == \"released\"' >/dev/null"
    resv "$dec"
    jq -r '.vnis[] as $v | [$v, .created_at, (.released_at // "z")] | map(tostring) | join(" ")' \
        <<<"$HTTP_BODY" >>"$T/mixspans"
done
expect_eq "every job of the mix had the VNIs it asked for (job:got/asked)" "$bad" ""
overlap=$(sort -k1,1 -k2,2 "$T/mixspans" | awk '$1 == v && $2 < end { print "overlap: " $0 } { v = $1; end = $3 }')
expect_eq "no two jobs of the mix held one VNI at once (9 spans)" "$(grep -c . "$T/mixspans"):$overlap" "9:"
waited_ms=$(grep -o 'got its VNIs (after [0-9]* ms waiting' "$T/flux.log" | awk '{ s += $5 } END { print s + 0 }')
echo "# mix: $mixwaited of 7 jobs with VNIs waited; all done in $(((t1 - t0) / 1000000)) ms; jobs waited $waited_ms ms for VNIs in all, this test's every wait"
nwaited=$((nwaited + mixwaited + victim_waited))

q=$(flux_query)
expect_eq "the plugin counted each wait once" "$(jq -r '.counts["pool-waited"]' <<<"$q")" $((nwaited + 2))
expect_eq "... and no job waits now" "$(jq -r .calls.waiting <<<"$q")" 0
expect_eq "nothing is left active at the broker" "$(active)" 0
expect_eq "no node is drained" "$(drained)" 0
expect_eq "the plugin's counts: one reserve failed (pool-wait-ms = 0), nothing spooled" \
    "$(jq -c '[.counts["reserve-failed"], .counts["release-failed"], .spool.count]' <<<"$q")" '[1,0,0]'

flux_stop
finish

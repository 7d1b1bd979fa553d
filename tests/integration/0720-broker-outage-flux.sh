#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Flux and a broker that is down (killed with SIGKILL, then started again
# on the same port).
#
# At job start, with reserve-fatal (the default): the job fails with a
# vnibroker exception naming the cause, and when the broker returns
# nothing is left of it (the release its cleanup spooled is sent and
# finds nothing).  With reserve-fatal = false (flux config reload): the job
# runs without isolation, its cray-slingshot event empty with the reason,
# no SLINGSHOT_* in its tasks.  At job end: the plugin spools the release
# and the agents their reports; no node is drained; when the broker
# returns the plugin sends the release by itself within retry-ms and, once
# the agents have flushed, the reservation is released.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/flux.sh"

flux_require
flux_cluster
broker_pin_port "$T/b.toml"
flux_setup
flux_start || { not_ok "flux starts"; flux_dump_logs; finish; }
ok "Flux is up with the plugin loaded"

TASK_ENV='env | grep -E "^(SLINGSHOT_|FI_CXI_)" | LC_ALL=C sort'
resv () { TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$1"; }
broker_kill () {
    kill -9 "$BROKER_PID" 2>/dev/null
    wait "$BROKER_PID" 2>/dev/null
}
drained () { fluxc resource drain -no '{ranks}' | grep -c .; }
spooled () { flux_query | jq -r .spool.count; }

# ---- down at job start, reserve-fatal = true --------------------------------
broker_kill
t0=$(date +%s%N)
id=$(fluxc submit -N1 true)
fluxc job attach "$id" >/dev/null 2>"$T/a.err"
t1=$(date +%s%N)
expect_eq "the broker down at start fails the job" "$(fluxc jobs -no {result} "$id")" FAILED
ex=$(fluxc job wait-event -f json -t 5s "$id" exception | jq -c .context)
expect_eq "... with a fatal exception of type vnibroker" "$(jq -r '[.type, .severity] | join(",")' <<<"$ex")" vnibroker,0
expect_match "... naming the cause" "$(jq -r .note <<<"$ex")" 'broker is unreachable'
expect_match "... which the user sees" "$(cat "$T/a.err")" 'broker is unreachable'
echo "# the job failed $(((t1 - t0) / 1000000)) ms after submission (reserve-timeout-ms 3000)"
dec=$(fluxc job id --to=dec "$id")
wait_for 10 sh -c "[ \"\$($FLUX jobtap query vnib-jobtap.so | jq .spool.count)\" = 1 ]"
expect_eq "its release is spooled while the broker is down" "$(spooled)" 1
expect_eq "no node is drained" "$(drained)" 0
broker_start "$T/b.toml" || { not_ok "the broker restarts"; finish; }
wait_for 10 sh -c "[ \"\$($FLUX jobtap query vnib-jobtap.so | jq .spool.count)\" = 0 ]"
expect_eq "the broker back, the plugin empties its spool by itself" "$(spooled)" 0
resv "$dec"
expect_eq "... and nothing of the failed job is left at the broker" "$HTTP_STATUS" 404

# ---- down at job start, reserve-fatal = false -------------------------------
printf 'reserve-fatal = false\n' >>"$T/flux.d/vnibroker.toml"
fluxc config reload || not_ok "flux config reload"
expect_eq "flux config reload takes reserve-fatal" "$(flux_query | jq -r '.["reserve-fatal"]')" false
broker_kill
id=$(SLINGSHOT_VNIS=999 fluxc submit -N2 sh -c "$TASK_ENV")
fluxc job attach "$id" >"$T/b.out" 2>"$T/b.err"
expect_eq "with reserve-fatal = false the job runs" "$(fluxc jobs -no {result} "$id")" COMPLETED
ev=$(flux_event "$id" cray-slingshot)
expect_eq "... with an empty reservation" "$(jq -c .vnis <<<"$ev")" '[]'
expect_match "... saying why" "$(jq -r '.["empty-reason"]' <<<"$ev")" 'broker is unreachable'
expect_eq "... and no SLINGSHOT_* in its tasks (not even the shell's)" "$(grep -c SLINGSHOT "$T/b.out")" 0
broker_start "$T/b.toml" || { not_ok "the broker restarts"; finish; }
wait_for 10 sh -c "[ \"\$($FLUX jobtap query vnib-jobtap.so | jq .spool.count)\" = 0 ]"
resv "$(fluxc job id --to=dec "$id")"
expect_eq "nothing of the unisolated job is left at the broker" "$HTTP_STATUS" 404
sed -i '/^reserve-fatal = false$/d' "$T/flux.d/vnibroker.toml"
fluxc config reload || not_ok "flux config reload"

# ---- down at job end ---------------------------------------------------------
id=$(fluxc submit -N3 sh -c 'sleep 3')
fluxc job wait-event -t 30s "$id" start >/dev/null
dec=$(fluxc job id --to=dec "$id")
resv "$dec"
expect_eq "a running job's reservation is active" "$(jq -r .state <<<"$HTTP_BODY")" active
broker_kill
fluxc job attach "$id" >/dev/null 2>&1
expect_eq "the job ends normally with the broker down" "$(fluxc jobs -no {result} "$id")" COMPLETED
wait_for 20 sh -c "[ \"\$($FLUX jobtap query vnib-jobtap.so | jq .spool.count)\" = 1 ]"
expect_eq "its release is spooled on disk" "$(spooled)" 1
expect_eq "... as one file, named by the job" "$(ls "$T/flux-spool")" "$dec"
wait_for 20 sh -c "ls $T/fx0/spool $T/fx1/spool $T/fx2/spool 2>/dev/null | grep -c json | grep -qx 3"
for n in fx0 fx1 fx2; do
    expect_eq "$n: the agent spooled its destroyed report" "$(ls "$T/$n/spool" | grep -c json)" 1
    expect_eq "$n: its services are gone all the same" "$(sim_count $n cxi0)" 0
done
sleep 2
expect_eq "no node is drained" "$(drained)" 0
expect_match "the plugin's log says the release is spooled" "$(cat "$T/flux.log")" "job $dec: release spooled in $T/flux-spool"
broker_start "$T/b.toml" || { not_ok "the broker restarts"; finish; }
wait_for 10 sh -c "[ \"\$($FLUX jobtap query vnib-jobtap.so | jq .spool.count)\" = 0 ]"
expect_eq "the broker back, the plugin sends the release by itself" "$(spooled)" 0
resv "$dec"
expect_eq "... the reservation is releasing: quarantined until the nodes report" "$(jq -r .state <<<"$HTTP_BODY")" releasing
for n in fx0 fx1 fx2; do agent "$n" flush; done
resv "$dec"
expect_eq "the agents flushed: released" "$(jq -r .state <<<"$HTTP_BODY")" released
q=$(flux_query)
expect_eq "the plugin counted one release spooled per outage job" "$(jq -r '.counts["release-spooled"]' <<<"$q")" 3

flux_stop
finish

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# flux-coral2 on the nodes: a site keeps flux-coral2's `flux slingshot`
# prolog and shell plugin, and vnibroker replaces only the VNI pool.
#
# Fixtures stand in for flux-coral2's node side (no libcxi here): its
# prolog reads the cray-slingshot event as `flux slingshot prolog` does
# (wait for it, at most four VNIs, none 1 or 10, all <= 65535) and makes
# one service per NIC for the job's owner with exactly those VNIs; its
# "shell plugin" (a task) reads the event the same way and finds each
# NIC's service by its exact VNI list, as flux-coral2's shell plugin does.
# vnibroker's node side runs `vnib-flux-node hold` before that prolog
# (the job's event carries a lease, so its reservation is presumed: every
# node counts as holding services until it reports, and hold has nothing
# to tell the broker) and its housekeeping after the job (finds them by
# owner and VNIs, destroys them, reports), so the VNIs stay quarantined
# until the last node confirmed.  The shell plugin of vnibroker is not
# loaded.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/flux.sh"

flux_require
flux_cluster

# flux-coral2's prolog, as far as this test needs it.
cat >"$T/coral2-prolog" <<EOF
#!/bin/sh
node=\$($FLUX getattr hostname)
ev=\$($FLUX job wait-event -f json -t 30s "\$FLUX_JOB_ID" cray-slingshot) || exit 1
vnis=\$(printf '%s' "\$ev" | jq -c '.context.vnis')
printf '%s' "\$vnis" | jq -e 'type == "array" and length <= 4 and all(.[]; type == "number" and . != 1 and . != 10 and . <= 65535)' >/dev/null || exit 1
printf '%s\n' "\$vnis" >"$T/coral2-\$node.vnis"
[ "\$vnis" = "[]" ] && exit 0
for f in $T/\$node/sim/cxi*.json; do
    jq --argjson v "\$vnis" --argjson u "\$FLUX_JOB_USERID" '
        .services += [{svc_id: .next_svc_id, restricted_members: true, uid: \$u,
                       restricted_vnis: true, vnis: \$v, restricted_tcs: true, tcs: 10}]
        | .next_svc_id += 1' "\$f" >"\$f.new" && mv "\$f.new" "\$f"
done
EOF
cat >"$T/prolog" <<EOF
#!/bin/sh
$FLUX_NODE_CMD hold && exec $T/coral2-prolog
EOF
chmod 755 "$T/coral2-prolog" "$T/prolog"

# flux-coral2's shell plugin, as a task: the event's VNIs, and on each NIC
# the first enabled, non-system service listing exactly them.
cat >"$T/coral2-task" <<EOF
#!/bin/sh
node=\$(flux getattr hostname)
vnis=\$(flux job wait-event -f json "\$FLUX_JOB_ID" cray-slingshot | jq -c '.context.vnis')
ids=""
for f in $T/\$node/sim/cxi*.json; do
    id=\$(jq --argjson v "\$vnis" '[.services[] | select(.enabled != false and .system != true and .vnis == \$v)][0].svc_id // -1' "\$f")
    ids="\$ids\${ids:+,}\$id"
done
echo "\$node SLINGSHOT_VNIS=\$(printf '%s' "\$vnis" | jq -r 'join(",")') SLINGSHOT_SVC_IDS=\$ids"
EOF
chmod 755 "$T/coral2-task"

FLUX_PROLOG_COMMAND=$T/prolog FLUX_SHELL_PLUGIN=0 FLUX_HOUSEKEEPING_RETRY_BUSY=10s flux_setup
flux_start || { not_ok "flux starts"; flux_dump_logs; finish; }
ok "Flux is up: vnibroker's pool, flux-coral2's node side (fixtures)"

field () {
    printf '%s\n' "$1" | grep "^$2 " | tr ' ' '\n' | sed -n "s/^$3=//p" | head -n 1
}
resv () { TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$1"; }

sim_jq fx1 cxi0 '.faults.destroy_ebusy = 3'
id=$(fluxc submit -N3 -o vnibroker.hwcoll=off "$T/coral2-task")
fluxc job attach "$id" >"$T/run.out" 2>"$T/run.err"
expect_eq "the job runs" "$?" 0
dec=$(fluxc job id --to=dec "$id")
resv "$dec"
V=$(jq -r '.vnis | join(",")' <<<"$HTTP_BODY")
expect_match "the broker reserved the job's VNI" "$V" '^30[0-9][0-9]$'
out=$(cat "$T/run.out")
for n in fx0 fx1 fx2; do
    expect_eq "$n: flux-coral2's prolog read the broker's VNIs from the event" "$(jq -r 'join(",")' "$T/coral2-$n.vnis")" "$V"
    expect_eq "$n: flux-coral2's shell plugin reads them too" "$(field "$out" $n SLINGSHOT_VNIS)" "$V"
    expect_match "$n: ... and finds the service on every NIC" "$(field "$out" $n SLINGSHOT_SVC_IDS)" '^[0-9]+,[0-9]+,[0-9]+,[0-9]+$'
done

# fx1's NIC holds its service a few seconds (EBUSY): the VNI must stay
# quarantined until fx1's housekeeping reports.
wait_for 20 sh -c "curl -s -H 'Authorization: Bearer $SCHED_TOKEN' $BROKER_URL/v1/reservations/$dec | jq -e '.cleanup.destroyed == 2' >/dev/null"
resv "$dec"
expect_eq "after the job, fx0 and fx2 reported destroyed: still releasing" "$(jq -r .state <<<"$HTTP_BODY")" releasing
expect_eq "... quarantined: fx1 holds services (presumed, from the reserve on) and has not reported" "$(jq -r .quarantined <<<"$HTTP_BODY")" true
wait_for 30 sh -c "curl -s -H 'Authorization: Bearer $SCHED_TOKEN' $BROKER_URL/v1/reservations/$dec | jq -e '.state == \"released\"' >/dev/null"
resv "$dec"
expect_eq "fx1's housekeeping found flux-coral2's services and reported: released" "$(jq -r .state <<<"$HTTP_BODY")" released
for n in fx0 fx1 fx2; do
    expect_eq "$n: flux-coral2's services are gone from every NIC" \
        "$(for c in 0 1 2 3; do sim_count $n cxi$c; done | sort -u)" 0
done

# An opted-out job: an empty event, which flux-coral2's side takes as
# "nothing to do".
id=$(fluxc submit -N1 -o cray-slingshot=off "$T/coral2-task")
fluxc job attach "$id" >/dev/null 2>&1
expect_eq "-o cray-slingshot=off: the job runs" "$(fluxc jobs -no {result} "$id")" COMPLETED
expect_eq "... flux-coral2's prolog read an empty reservation" "$(cat "$T/coral2-fx0.vnis")" '[]'

flux_stop
finish

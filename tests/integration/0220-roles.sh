#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Authentication and roles: every endpoint with every kind of caller,
# allowed and refused, and the checks on the credential files.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_up "$T/b.toml"

N1_TOKEN=$(node_token n1)
N9_TOKEN=$(node_token n9)
BAD_TOKEN=$(new_token)
FORGED_TOKEN="vnibnode.n1.$(printf %s "$N9_TOKEN" | sed 's/.*\.//')"

TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"r1","uid":1,"user":"u","nodes":"n[1-2]"}'
expect_status "setup: r1 reserved" 201

# check ROLE-NAME TOKEN METHOD PATH WANT [BODY]
check () {
    if [ -n "${6:-}" ]; then
        TOKEN=$2 http "$3" "$4" -d "$6"
    else
        TOKEN=$2 http "$3" "$4"
    fi
    case "$HTTP_STATUS" in
        $5) ok "$3 $4 as $1: $HTTP_STATUS" ;;
        *)  not_ok "$3 $4 as $1: got $HTTP_STATUS, want $5"
            echo "#   $(head -c 300 "$T/http.body")" ;;
    esac
}

for who in none bad forged; do
    case $who in none) tok="" ;; bad) tok=$BAD_TOKEN ;; forged) tok=$FORGED_TOKEN ;; esac
    check $who "$tok" GET /v1/reservations/r1 401
    check $who "$tok" POST /v1/reservations 401 '{"job_id":"x","uid":1,"user":"u","nodes":"n1"}'
    check $who "$tok" GET /v1/pool 401
    check $who "$tok" GET /v1/nodes/n1 401
done
TOKEN="" http GET /v1/pool
expect_json "401 has a stable code" .error.code unauthorized
http GET /v1/pool -H "Authorization: Basic $(printf 'a:b' | base64)"
expect_status "Basic auth is not a bearer token: 401" 401
http GET /v1/pool -H "Authorization: Bearer $(head -c 600 /dev/zero | tr '\0' a)"
expect_status "an oversized token is 401" 401

# GET /v1/whoami: every token, its own name and role only.
for who in none bad forged; do
    case $who in none) tok="" ;; bad) tok=$BAD_TOKEN ;; forged) tok=$FORGED_TOKEN ;; esac
    check $who "$tok" GET /v1/whoami 401
done
TOKEN=$SCHED_TOKEN http POST /v1/reservations -d '{"job_id":"rw","uid":1,"user":"u","nodes":"n1"}'
JOB_TOKEN=$(jq -r '.job_token // empty' <<<"$HTTP_BODY")
for pair in "admin $ADMIN_TOKEN ops-admin" "scheduler $SCHED_TOKEN slurmctld" \
    "monitor $MONITOR_TOKEN prometheus" "node $N1_TOKEN node:n1"; do
    set -- $pair
    TOKEN=$2 http GET /v1/whoami
    expect_eq "GET /v1/whoami as $1: its name and role" \
        "$HTTP_STATUS $(jq -c . <<<"$HTTP_BODY")" "200 {\"name\":\"$3\",\"role\":\"$1\"}"
done
[ -n "$JOB_TOKEN" ] || not_ok "the reserve gave a job token"
check job "$JOB_TOKEN" GET /v1/whoami 403

# POST /v1/reservations: admin, scheduler.
check admin "$ADMIN_TOKEN" POST /v1/reservations 201 '{"job_id":"ra","uid":1,"user":"u","nodes":"n[1-2]"}'
check scheduler "$SCHED_TOKEN" POST /v1/reservations 201 '{"job_id":"rs","uid":1,"user":"u","nodes":"n[1-2]"}'
check monitor "$MONITOR_TOKEN" POST /v1/reservations 403 '{"job_id":"rm","uid":1,"user":"u","nodes":"n1"}'
check node "$N1_TOKEN" POST /v1/reservations 403 '{"job_id":"rn","uid":1,"user":"u","nodes":"n1"}'
expect_json "403 has a stable code" .error.code forbidden
# GET /v1/reservations: readers, not nodes.
check admin "$ADMIN_TOKEN" GET /v1/reservations 200
check scheduler "$SCHED_TOKEN" GET /v1/reservations 200
check monitor "$MONITOR_TOKEN" GET /v1/reservations 200
check node "$N1_TOKEN" GET /v1/reservations 403
# GET /v1/reservations/{job}: readers, and nodes of the job.
check admin "$ADMIN_TOKEN" GET /v1/reservations/r1 200
check scheduler "$SCHED_TOKEN" GET /v1/reservations/r1 200
check monitor "$MONITOR_TOKEN" GET /v1/reservations/r1 200
check node-in-job "$N1_TOKEN" GET /v1/reservations/r1 200
check node-outside-job "$N9_TOKEN" GET /v1/reservations/r1 403
# PUT report: the node itself, admin.
check node-itself "$N1_TOKEN" PUT /v1/reservations/r1/nodes/n1 200 '{"cxi":"creating"}'
check other-node "$N9_TOKEN" PUT /v1/reservations/r1/nodes/n1 403 '{"cxi":"creating"}'
check admin "$ADMIN_TOKEN" PUT /v1/reservations/r1/nodes/n2 200 '{"cxi":"creating"}'
check scheduler "$SCHED_TOKEN" PUT /v1/reservations/r1/nodes/n2 403 '{"cxi":"created"}'
check monitor "$MONITOR_TOKEN" PUT /v1/reservations/r1/nodes/n2 403 '{"cxi":"created"}'
# GET /v1/reservations/{job}/nodes: readers (the status page's job
# search), not nodes, even of the job.
check admin "$ADMIN_TOKEN" GET /v1/reservations/r1/nodes 200
check scheduler "$SCHED_TOKEN" GET /v1/reservations/r1/nodes 200
check monitor "$MONITOR_TOKEN" GET /v1/reservations/r1/nodes 200
check node-in-job "$N1_TOKEN" GET /v1/reservations/r1/nodes 403
# GET /v1/nodes/{node}: the node itself and readers (the status page's
# node search), not another node.
check node-itself "$N1_TOKEN" GET /v1/nodes/n1 200
check other-node "$N9_TOKEN" GET /v1/nodes/n1 403
check admin "$ADMIN_TOKEN" GET /v1/nodes/n1 200
check scheduler "$SCHED_TOKEN" GET /v1/nodes/n1 200
check monitor "$MONITOR_TOKEN" GET /v1/nodes/n1 200
# DELETE /v1/nodes/{node}/drain: admin.
check admin "$ADMIN_TOKEN" DELETE /v1/nodes/n1/drain 200
check node-itself "$N1_TOKEN" DELETE /v1/nodes/n1/drain 403
check scheduler "$SCHED_TOKEN" DELETE /v1/nodes/n1/drain 403
# GET /v1/pool: readers, and nodes (`vnib-agent clean --all` needs the ranges).
check admin "$ADMIN_TOKEN" GET /v1/pool 200
check scheduler "$SCHED_TOKEN" GET /v1/pool 200
check monitor "$MONITOR_TOKEN" GET /v1/pool 200
check node "$N1_TOKEN" GET /v1/pool 200
# GET /v1/vnis/{vni}: admin.
check admin "$ADMIN_TOKEN" GET /v1/vnis/1024 200
check scheduler "$SCHED_TOKEN" GET /v1/vnis/1024 403
check monitor "$MONITOR_TOKEN" GET /v1/vnis/1024 403
check node "$N1_TOKEN" GET /v1/vnis/1024 403
# GET /v1/events, GET /v1/status: readers (the status page needs monitor).
for path in /v1/events /v1/status; do
    check admin "$ADMIN_TOKEN" GET $path 200
    check scheduler "$SCHED_TOKEN" GET $path 200
    check monitor "$MONITOR_TOKEN" GET $path 200
    check node "$N1_TOKEN" GET $path 403
    check none "" GET $path 401
done
# DELETE /v1/reservations/{job}: admin, scheduler.
check monitor "$MONITOR_TOKEN" DELETE /v1/reservations/ra 403
check node "$N1_TOKEN" DELETE /v1/reservations/ra 403
check admin "$ADMIN_TOKEN" DELETE /v1/reservations/ra 200
check scheduler "$SCHED_TOKEN" DELETE /v1/reservations/rs 200
# The probes are public.
for path in /healthz /readyz /metrics; do
    check none "" GET $path 200
done
expect_no_match "no token reaches the log" "$(cat "$BROKER_LOG")" \
    "$(printf '%s|%s|%s|%s' "$ADMIN_TOKEN" "$SCHED_TOKEN" "$N1_TOKEN" "$BAD_TOKEN" | sed 's/\./\\./g')"
broker_stop

# ---- credential files ----------------------------------------------------------------
chmod 644 "$T/tokens"
out=$(timeout 20 "$VNIBROKERD" -c "$T/b.toml" 2>&1)
expect_eq "a tokens file readable by others stops the start (exit 1)" "$?" 1
expect_match "... naming the file and its mode" "$out" "$T/tokens: mode 0644 is unsafe"
chmod 600 "$T/tokens"
chmod 640 "$T/node.key"
out=$(timeout 20 "$VNIBROKERD" -c "$T/b.toml" 2>&1)
expect_eq "a group-readable node key stops the start (exit 1)" "$?" 1
expect_match "... naming it" "$out" "node.key: mode 0640 is unsafe"
chmod 600 "$T/node.key"

cp "$T/tokens" "$T/tokens.good"
printf 'admin root 0123\n' >>"$T/tokens"
out=$(timeout 20 "$VNIBROKERD" -c "$T/b.toml" 2>&1)
expect_eq "a malformed tokens line is a configuration error (exit 2)" "$?" 2
expect_match "... with file:line" "$out" "$T/tokens:5: .*is not a SHA-256"
cp "$T/tokens.good" "$T/tokens"
printf 'node n1 %s\n' "$(printf x | sha256sum | cut -d' ' -f1)" >>"$T/tokens"
out=$(timeout 20 "$VNIBROKERD" -c "$T/b.toml" 2>&1)
expect_match "a node role in the tokens file is refused" "$out" "tokens:5: role 'node'"
cp "$T/tokens.good" "$T/tokens"
head -c 16 /dev/urandom >"$T/short.key"
chmod 600 "$T/short.key"
sed "s|$T/node.key|$T/short.key|" "$T/b.toml" >"$T/short.toml"
out=$(timeout 20 "$VNIBROKERD" -c "$T/short.toml" 2>&1)
expect_match "a node key shorter than 32 bytes is refused" "$out" 'at least 32 are needed'

# Without a node key, node tokens are not accepted.
sed "s|node_key_file = .*|node_key_file = \"\"|" "$T/b.toml" >"$T/nokey.toml"
broker_start "$T/nokey.toml" || not_ok "broker without node key starts"
TOKEN=$N1_TOKEN http GET /v1/reservations/r1
expect_status "node tokens are refused when node tokens are disabled" 401
TOKEN=$SCHED_TOKEN http GET /v1/reservations/r1
expect_status "named tokens still work" 200
broker_stop
finish

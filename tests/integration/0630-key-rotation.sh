#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Rotating the node key and the session-token sealing key under load, as
# deploy/README.md (section 5.5) tells: two replicas on one database and
# fmsim, a client reserving eligible jobs (hardware collectives) as the
# scheduler, fetching and reporting them as a node and releasing them,
# while both keys are replaced and the replicas restarted one at a time:
# first with the new sealing key staged (it opens but does not seal), then
# with both new keys current and the old ones previous.  No node request
# may be refused and every node fetch must carry its session token, a
# session token sealed before the rotation must stay readable, and once
# the overlap has ended a token of the old node key gets 401 (and one
# warning in the log).  Without the staging roll the load fails: a replica
# still on the old key alone cannot open what a restarted one sealed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

VNIBCTL=$BUILD/vnibctl

pg_start || exit 1
fm_start || { not_ok "fmsim starts"; finish; }
# The old keys: what the replicas run with before the rotation.
(umask 077 && openssl rand 32 >"$T/token.key")
hwcoll_config "$T/a.toml" rot
cp "$T/a.toml" "$T/b.toml"
broker_migrate "$T/a.toml" || { not_ok "migrate"; finish; }
replica_first a || { not_ok "replica a starts"; finish; }
replica_first b || { not_ok "replica b starts"; finish; }
ok "two replicas: $URL_a and $URL_b"

OLD_N1=$(node_token n1)
printf '%s\n' "$OLD_N1" >"$T/n1.token"

# req URL-FIRST URL-OTHER TOKEN METHOD PATH [CURL-ARGS]: as a load balancer
# does, send to the first replica and, when it does not answer (it is
# restarting), to the other one; print the HTTP status (body in $T/load.body).
req () {
    r_urls="$1 $2"
    r_tok=$3
    r_method=$4
    r_path=$5
    shift 5
    for _ in $(seq 1 40); do
        for u in $r_urls; do
            s=$(curl -sS -o "$T/load.body" -w '%{http_code}' --max-time 20 \
                -X "$r_method" -H "Authorization: Bearer $r_tok" \
                -H 'Content-Type: application/json' "$@" "$u$r_path" 2>/dev/null)
            case "$s" in 000 | "") ;; *) echo "$s"; return 0 ;; esac
        done
        sleep 0.25
    done
    echo unreachable
}

# The load: until $T/load.stop exists, one job after another, each
# reserved (eligible: min_nodes 1) by the scheduler, fetched and reported
# by node n1 with the token in $T/n1.token (re-read every job, as a node
# agent reads its token file each run), and released.  One line per
# request: "PHASE WHAT STATUS [token|notoken]".
load () {
    i=0
    while [ ! -f "$T/load.stop" ]; do
        i=$((i + 1))
        if [ $((i % 2)) = 0 ]; then first=$URL_a other=$URL_b; else first=$URL_b other=$URL_a; fi
        phase=$(cat "$T/phase")
        ntok=$(cat "$T/n1.token")
        s=$(req "$first" "$other" "$SCHED_TOKEN" POST /v1/reservations \
            -d "{\"job_id\":\"L$i\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"n[1-2]\"}")
        echo "$phase reserve $s"
        s=$(req "$other" "$first" "$ntok" GET "/v1/reservations/L$i")
        if jq -e '.environment.FI_CXI_COLL_MCAST_TOKEN | length > 0' "$T/load.body" >/dev/null 2>&1; then
            echo "$phase node-get $s token"
        else
            echo "$phase node-get $s notoken"
        fi
        # what a refused fetch was told, for the failure report below
        [ "$s" = 200 ] || echo "# $phase node-get L$i: $(head -c 300 "$T/load.body")"
        s=$(req "$first" "$other" "$ntok" PUT "/v1/reservations/L$i/nodes/n1" -d '{"cxi":"created"}')
        echo "$phase node-report $s"
        s=$(req "$other" "$first" "$SCHED_TOKEN" DELETE "/v1/reservations/L$i")
        echo "$phase release $s"
    done
}

# restart NAME: SIGTERM the replica, wait for it, start it on its port.
restart () {
    eval "r_pid=\$PID_$1"
    kill -TERM "$r_pid"
    wait "$r_pid" 2>/dev/null
    for _ in 1 2 3 4 5; do
        replica_start "$1" && return 0
        sleep 0.5
    done
    return 1
}

# utc_in SECONDS: an RFC 3339 UTC time SECONDS from now.
utc_in () {
    date -u -d "@$(($(date +%s) + $1))" +%Y-%m-%dT%H:%M:%SZ
}

# loaded PHASE N: true once the load has made N node fetches in PHASE.
loaded () {
    [ "$(grep -c "^$1 node-get " "$T/load.log")" -ge "$2" ]
}

# get_token URL JOB TOKEN: the session token a GET of JOB shows.
get_token () {
    curl -sS --max-time 20 -H "Authorization: Bearer $3" "$1/v1/reservations/$2" |
        jq -r '.hwcoll.session_token // "none"'
}

# ---- before the rotation ------------------------------------------------------------
BROKER_URL=$URL_a
TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d '{"job_id":"pre","uid":1001,"user":"alice","nodes":"n[1-4]"}'
expect_status "a job reserved before the rotation" 201
expect_json "... holds hardware collectives" .hwcoll.state reserved
PRE_TOKEN=$(jq -r .hwcoll.session_token "$T/http.body")
expect_match "... with a session token" "$PRE_TOKEN" '^.{8,}$'

echo before >"$T/phase"
load >"$T/load.log" 2>&1 &
LOAD_PID=$!
track "$LOAD_PID"
wait_for 30 loaded before 3
expect_eq "the load runs" "$(loaded before 3 && echo yes)" yes

# ---- 1. new keys ---------------------------------------------------------------------
"$VNIBCTL" token key --out "$T/node.key.new" >/dev/null
expect_eq "vnibctl token key makes a new node key (mode 0600)" "$(stat -c %a "$T/node.key.new")" 600
"$VNIBCTL" token key --out "$T/token.key.new" >/dev/null
expect_eq "... and a new sealing key of 32 bytes" "$(stat -c %s "$T/token.key.new")" 32
out=$("$VNIBCTL" token key --out "$T/node.key" 2>&1)
expect_match "... and never overwrites a key" "$out" 'refusing to overwrite'
NEW_N1=$("$VNIBCTL" token node n1 --key-file "$T/node.key.new")
expect_match "the node's new token" "$NEW_N1" '^vnibnode\.n1\.'

# ---- 2. stage the new sealing key: it opens, it does not seal yet -------------------
# Without this roll, a replica not yet restarted in step 3 (the old key
# alone) could not open what a restarted one seals with the new key.
for r in a b; do
    sed -i "/^token_key_file = /a token_key_previous_file = \"$T/token.key.new\"" "$T/$r.toml"
done
echo stage >"$T/phase"
restart a || { not_ok "replica a restarts with the staged key"; finish; }
wait_for 30 loaded stage 2
restart b || { not_ok "replica b restarts with the staged key"; finish; }
n0=$(grep -c '^stage node-get ' "$T/load.log")
wait_for 30 loaded stage $((n0 + 2))

# ---- 3. new keys current, old ones previous; roll the replicas ---------------------
# The overlap's end is far off here; step 5 below ends it.
UNTIL=$(utc_in 3600)
for r in a b; do
    set_key "$T/$r.toml" node_key_file "\"$T/node.key.new\""
    sed -i "/^node_key_file = /a node_key_previous_file = \"$T/node.key\"\nnode_key_previous_until = \"$UNTIL\"" "$T/$r.toml"
    set_key "$T/$r.toml" token_key_file "\"$T/token.key.new\""
    set_key "$T/$r.toml" token_key_previous_file "\"$T/token.key\""
done
"$VNIBROKERD" --check-config "$T/a.toml" >"$T/check.out" 2>&1
expect_eq "the rotated configuration checks" "$?" 0
echo overlap >"$T/phase"
restart a || { not_ok "replica a restarts"; finish; }
wait_for 30 loaded overlap 2
restart b || { not_ok "replica b restarts"; finish; }
ok "both replicas restarted with the new keys, one at a time, under load"
expect_match "the notice of the overlap" "$(cat "$T"/broker-b.*.log)" \
    "node tokens of the previous key .* are accepted until $UNTIL"
n0=$(grep -c '^overlap node-get ' "$T/load.log")
wait_for 30 loaded overlap $((n0 + 3))
ok "the load ran on with the old node token across the rolling restart"

for r in a b; do
    eval "u=\$URL_$r"
    expect_eq "replica $r opens a token sealed with the old key" \
        "$(get_token "$u" pre "$SCHED_TOKEN")" "$PRE_TOKEN"
    expect_eq "... shows it to a node with the old token" \
        "$(get_token "$u" pre "$OLD_N1")" "$PRE_TOKEN"
    expect_eq "... and with the new token" \
        "$(get_token "$u" pre "$NEW_N1")" "$PRE_TOKEN"
done

# ---- 4. re-issue the node tokens -----------------------------------------------------
printf '%s\n' "$NEW_N1" >"$T/n1.token"
echo reissued >"$T/phase"
wait_for 30 loaded reissued 3
BROKER_URL=$URL_b
TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d '{"job_id":"post","uid":1001,"user":"alice","nodes":"n[1-4]"}'
expect_status "a job reserved during the overlap" 201
POST_TOKEN=$(jq -r .hwcoll.session_token "$T/http.body")
expect_match "... has a session token" "$POST_TOKEN" '^.{8,}$'
# New values are sealed with the new key alone: a broker with only the
# old key cannot open them (its GET shows no token).

# ---- 5. the overlap ends ---------------------------------------------------------------
# A real rotation sets the end once; here the replicas are rolled again with
# an end a few seconds off, and the test waits for it to pass.
UNTIL=$(utc_in 5)
for r in a b; do
    set_key "$T/$r.toml" node_key_previous_until "\"$UNTIL\""
done
echo ending >"$T/phase"
restart a || { not_ok "replica a restarts again"; finish; }
restart b || { not_ok "replica b restarts again"; finish; }
wait_for 20 sh -c "[ \"\$(date -u +%Y-%m-%dT%H:%M:%SZ)\" \\> '$UNTIL' ]"
echo after >"$T/phase"
for r in a b; do
    eval "u=\$URL_$r"
    BROKER_URL=$u
    TOKEN=$OLD_N1 http GET /v1/reservations/pre
    expect_status "after the overlap, replica $r refuses the old node token" 401
    expect_json "... as any bad token" .error.message "invalid token"
    TOKEN=$OLD_N1 http GET /v1/reservations/pre
    expect_status "... every time" 401
    TOKEN=$NEW_N1 http GET /v1/reservations/pre
    expect_status "... and takes the new one" 200
    expect_json "... the old sealing key still opens the old token" .hwcoll.session_token "$PRE_TOKEN"
    log=$(ls -t "$T"/broker-$r.*.log | head -n 1)
    # Once: at the first such token, or at start if the end had passed.
    expect_eq "... and logs the overlap's end once" \
        "$(grep -cE 'presented a token of the previous node key|are refused now' "$log")" 1
done
wait_for 30 loaded after 3

touch "$T/load.stop"
wait "$LOAD_PID"

# ---- the load's record -----------------------------------------------------------------
for p in before stage overlap reissued; do
    expect_match "the load fetched jobs as a node in phase $p" \
        "$(grep -c "^$p node-get 200 token" "$T/load.log")" '^[1-9][0-9]*$'
done
expect_eq "no request of the load was refused (401)" \
    "$(awk '$3 == 401' "$T/load.log" | wc -l)" 0
bad=$(awk '$2 == "node-get" && ($3 != 200 || $4 != "token")' "$T/load.log" | head -n 3)
expect_eq "every node fetch answered 200 with a session token" "$bad" ""
if [ -n "$bad" ]; then
    grep '^# .* node-get ' "$T/load.log" | head -n 3
    grep -h -i 'error\|warn\| 5[0-9][0-9] ' "$T"/broker-*.log | tail -n 15 | sed 's/^/#   /'
fi
expect_eq "every node report answered 200" \
    "$(awk '$2 == "node-report" && $3 != 200' "$T/load.log" | head -n 3)" ""
expect_eq "every reserve answered 201 (or 200 for a retry)" \
    "$(awk '$2 == "reserve" && $3 != 201 && $3 != 200' "$T/load.log" | head -n 3)" ""
echo "# load: $(grep -c ' node-get ' "$T/load.log") jobs, $(awk '{print $1}' "$T/load.log" | sort | uniq -c | tr '\n' ' ')"

# ---- 6. remove the previous keys once the old jobs are gone ---------------------------
BROKER_URL=$URL_a
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/pre
expect_status "the job from before the rotation is released" 200
for r in a b; do
    sed -i '/^node_key_previous_file = /d; /^node_key_previous_until = /d; /^token_key_previous_file = /d' "$T/$r.toml"
done
restart a || { not_ok "replica a restarts without the previous keys"; finish; }
restart b || { not_ok "replica b restarts without the previous keys"; finish; }
expect_eq "without the previous keys, the job of the overlap's token opens" \
    "$(get_token "$URL_a" post "$NEW_N1")" "$POST_TOKEN"
BROKER_URL=$URL_b
TOKEN=$OLD_N1 http GET /v1/reservations/post
expect_status "... and the old node token is refused" 401
finish

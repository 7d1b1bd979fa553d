#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# vnibctl status against a live broker: for a seeded state (a job active,
# two jobs quarantined on nodes that reported created or failed, a drained
# node) the summary shows the figures of GET /v1/status (its own --json),
# the lists are limited as asked, a monitor may run it and a node may not.
# vnibctl events --action, --node and --newest pass the API's filters, and
# the API's parameter errors are shown as for other commands.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 2000-2009)"
export VNIB_URL=$BROKER_URL
# ctl TOKEN ARGS...: vnibctl with that token in $VNIB_TOKEN, as a cron
# script would run it.
ctl () {
    VNIB_TOKEN=$1 "$BUILD/vnibctl" "${@:2}"
}
mon () {
    ctl "$MONITOR_TOKEN" "$@"
}

# ---- seed, with vnibctl itself: j1 active; j2 waits for n3 (created) and
# n4 (failed, so drained); j3, released later, waits for n5 (created).
for job in "j1 n[1-2] 1" "j2 n[3-4] 2" "j3 n5 1"; do
    set -- $job
    ctl "$SCHED_TOKEN" reserve "$1" --uid 1001 --user alice --nodes "$2" --vnis "$3" >/dev/null
    expect_eq "reserve $1 on $2" "$?" 0
done
while read -r job node state msg; do
    ctl "$(node_token "$node")" report "$job" "$node" --cxi "$state" ${msg:+--message "$msg"} >/dev/null
    expect_eq "$node reports $state for $job" "$?" 0
done <<'EOF_REPORTS'
j2 n3 creating
j2 n3 created
j2 n4 creating
j2 n4 failed cxil_destroy_svc: EBUSY
j3 n5 creating
j3 n5 created
EOF_REPORTS
for job in j2 j3; do
    ctl "$SCHED_TOKEN" --json release "$job" >"$T/rel.json"
    expect_eq "$job releases into quarantine" "$(jq -r .state "$T/rel.json")" releasing
done

# ---- status --json is the API's reply ------------------------------------
out=$(mon --json status)
expect_eq "status --json exits 0 with a monitor token" "$?" 0
printf '%s' "$out" >"$T/status.json"
J () { jq -r "$1" "$T/status.json"; }
TOKEN=$MONITOR_TOKEN http GET '/v1/status?quarantine_limit=10&drained_limit=10'
expect_eq "... the API's reply (pool, quarantine, drained)" \
    "$(jq -cS '[.pool, .quarantine, .drained]' "$T/status.json")" \
    "$(jq -cS '[.pool, .quarantine, .drained]' "$T/http.body")"
expect_eq "... the seed: 1 active, 3 quarantined, 2 reservations, 1 drained" \
    "$(J '[.pool.active, .pool.quarantined, .quarantine.reservations, .drained.count] | @csv')" '1,3,2,1'

# ---- the summary shows the same figures ----------------------------------
out=$(mon status)
expect_eq "status exits 0 with a monitor token" "$?" 0
printf '%s\n' "$out" >"$T/status.txt"
printf '%s\n' "$out" | sed 's/^/# /'
line () { sed -n "s/^$1: *//p" "$T/status.txt" | head -1; }
free=$(J .pool.free) total=$(J .pool.total)
pct=$(((( total - free) * 100 + total / 2) / total))
expect_eq "pool: free, active, quarantined, outside, total and % in use" "$(line pool)" \
    "$free free, $(J .pool.active) active, $(J .pool.quarantined) quarantined, $(J .pool.outside_pool) outside, $total total: $pct% in use"
expect_eq "... 4 of 10 in use: 40%" "$pct" 40
expect_match "quarantine: reservations, VNIs, the oldest's age" "$(line quarantine)" \
    "^$(J .quarantine.reservations) reservations, $(J .quarantine.vnis) VNIs, oldest [0-9]+s\$"
expect_eq "drained: count and hostlist" "$(line drained)" \
    "$(J .drained.count) node: $(J .drained.nodes)"
expect_match "fm: the connection" "$(line fm)" "^$(J .fabric_manager.connection)"
expect_eq "fm queue: depth and oldest" "$(line 'fm queue')" \
    "$(J .fabric_manager.queue.depth) operations, oldest $(J '.fabric_manager.queue.oldest_s | floor')s"
expect_eq "fm last error: none yet" "$(line 'fm last error')" -
expect_match "leader: none without hardware collectives, and this replica" "$(line leader)" \
    "^none; this replica (leads|follows)\$"
expect_match "database: up, with the figures' age" "$(line database)" '^up, figures read [0-9]+s ago$'
expect_match "broker: the replica and the version" "$(line broker)" \
    "^$(J .replica) \\(vnibrokerd $(J .version)\\) at 20[0-9-]+T"

# The quarantine table: the API's items, oldest first.
table_rows () { # TITLE-PREFIX: the rows under that title, header left out
    awk -v t="$1" 'index($0, t) == 1 { on = 1; getline; next } /^$/ { on = 0 } on' "$T/status.txt"
}
expect_eq "quarantine table: job, VNIs, waiting count and nodes, oldest first" \
    "$(table_rows 'quarantined reservations' | awk '{ print $1, $3, $5, $6 }')" \
    "$(J '.quarantine.items[] | "\(.job_id) \(.vnis | map(tostring) | join(",")) \(.waiting.count) \(.waiting.nodes)"')"
expect_eq "... j2 waits for n[3-4], j3 for n5" \
    "$(table_rows 'quarantined reservations' | awk '{ print $1, $6 }' | tr '\n' ' ')" 'j2 n[3-4] j3 n5 '
expect_match "... with each one's age" "$(table_rows 'quarantined reservations' | awk '{ print $4 }' | tr '\n' ' ')" \
    '^[0-9]+s [0-9]+s $'
expect_eq "drained table: node, since, reason" \
    "$(table_rows 'drained nodes' | awk '{ $2 = ""; print }')" \
    "$(J '.drained.items[] | "\(.node)  \(.since) \(.reason)"')"
expect_eq "... n4, for its failure" "$(table_rows 'drained nodes' | awk '{ print $1 }')" n4

# Limits: fewer rows, and the title says how many were left out.
out=$(mon status --quarantine-limit 1 --drained-limit 1)
expect_eq "--quarantine-limit 1 exits 0" "$?" 0
printf '%s\n' "$out" >"$T/status.txt"
expect_eq "... lists the oldest only" "$(table_rows 'quarantined reservations' | awk '{ print $1 }')" j2
expect_match "... and says so" "$out" 'quarantined reservations, oldest first \(the oldest 1 of 2: --quarantine-limit N lists more\):'
out=$(mon --json status --quarantine-limit 1)
expect_eq "... --json passes the limit to the API" "$(printf '%s' "$out" | jq -c '[(.quarantine.items | length), .quarantine.reservations]')" '[1,2]'
mon status --quarantine-limit 0 >/dev/null 2>&1
expect_eq "--quarantine-limit 0 is a usage error (2)" "$?" 2
mon status --drained-limit 1001 >/dev/null 2>&1
expect_eq "--drained-limit 1001 is a usage error (2)" "$?" 2

# Roles: the scheduler may, a node may not, nor no token at all.
ctl "$SCHED_TOKEN" status >/dev/null
expect_eq "a scheduler token works" "$?" 0
out=$(ctl "$(node_token n1)" status 2>&1)
expect_eq "a node token is refused (1)" "$?" 1
expect_match "... forbidden, as other commands say it" "$out" '^vnibctl: forbidden: '
out=$(ctl "$(node_token n1)" --json status 2>/dev/null)
expect_eq "... --json prints the error object" "$(printf '%s' "$out" | jq -r .error.code)" forbidden

# ---- events: --newest, --node, --action ------------------------------------
asc=$(mon --json events --limit 1000 | jq -c '[.events[].id]')
expect_eq "a monitor reads events" "$?" 0
desc=$(mon --json events --newest --limit 1000 | jq -c '[.events[].id]')
expect_eq "--newest lists every event newest first" "$desc" "$(printf '%s' "$asc" | jq -c reverse)"
expect_eq "... more than a few" "$(printf '%s' "$asc" | jq 'length > 5')" true
out=$(mon events --newest --limit 2 2>"$T/err")
expect_eq "... as a table, the newest first" "$(printf '%s\n' "$out" | awk 'NR == 2 { print $1 }')" \
    "$(printf '%s' "$asc" | jq '.[-1]')"
next=$(sed -n 's/.*--after \([0-9]*\) --newest$/\1/p' "$T/err")
expect_match "... the hint to the next page keeps --newest" "$(cat "$T/err")" 'more events follow: --after [0-9]+ --newest$'
out=$(mon --json events --newest --limit 2 --after "$next")
expect_eq "... and that page goes on backwards" "$(printf '%s' "$out" | jq -c '[.events[].id]')" \
    "$(printf '%s' "$asc" | jq -c 'reverse | .[2:4]')"
out=$(mon --json events --node n4)
expect_eq "--node n4: its reports and its drain, nothing else" \
    "$(printf '%s' "$out" | jq -c '[.events[] | [.action, .node]]')" \
    '[["report","n4"],["report","n4"],["drain","n4"]]'
out=$(mon --json events --action release)
expect_eq "--action release: j2's and j3's" \
    "$(printf '%s' "$out" | jq -c '[.events[] | [.action, .job_id]]')" '[["release","j2"],["release","j3"]]'
out=$(mon --json events --action report --node n3 --job j2 --newest)
expect_eq "the filters combine: n3's reports for j2, newest first" \
    "$(printf '%s' "$out" | jq -c '[.events[] | [.job_id, .node, .detail.cxi]]')" \
    '[["j2","n3","created"],["j2","n3","creating"]]'
out=$(mon events --action explode 2>&1)
expect_eq "--action explode: the API refuses it (1)" "$?" 1
expect_match "... shown as CODE: MESSAGE naming the parameter" "$out" '^vnibctl: invalid_field: .*action'
mon events --node 'bad/name' >/dev/null 2>&1
expect_eq "--node bad/name is a usage error (2)" "$?" 2
finish

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Logs under systemd and refusals in the log.
#
# Without JOURNAL_STREAM a line is "<UTC stamp> vnibrokerd[pid]: level:
# ...".  With JOURNAL_STREAM set (as systemd sets it for the journal) every
# line starts with the sd-daemon priority "<N>" and carries no stamp of
# its own.  A 401 is logged at notice with the client's address, a 403
# also with the token's name and role; the token itself never appears.
# The same refusal repeated is written once, then summarised with its
# count (here at shutdown, the window being 10 s) under the last
# repeat's request id.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_config "$T/b.toml"
broker_migrate "$T/b.toml" || { not_ok "migrate"; finish; }

# Outside systemd: the format is unchanged.
broker_start "$T/b.toml" || { not_ok "broker starts"; finish; }
TOKEN="" http GET /v1/pool
expect_status "no token: 401" 401
broker_stop
plain=$(cat "$BROKER_LOG")
expect_match "without JOURNAL_STREAM lines carry a UTC stamp and ident[pid]" \
    "$(head -n 1 "$BROKER_LOG")" \
    '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z vnibrokerd\[[0-9]+\]: [a-z]+: '
expect_no_match "without JOURNAL_STREAM no line has a priority prefix" \
    "$plain" '^<[0-7]>'
expect_match "a 401 is logged at notice with the client's address" \
    "$plain" 'notice: req=[0-9a-f]+: refused 401 GET /v1/pool from 127\.0\.0\.1: '

# Under systemd.
JOURNAL_STREAM=8:4242 broker_start "$T/b.toml" || {
    not_ok "broker starts with JOURNAL_STREAM"
    finish
}
BAD_TOKEN=$(new_token)
for i in 1 2 3 4 5; do
    TOKEN=$BAD_TOKEN http GET /v1/pool
done
expect_status "an unknown token: 401" 401
last_rid=$(header X-Request-Id)
TOKEN=$MONITOR_TOKEN http POST /v1/reservations \
    -d '{"job_id":"x1","uid":1,"user":"u","nodes":"n1"}'
expect_status "a monitor token may not reserve: 403" 403
TOKEN=$SCHED_TOKEN http GET /v1/pool
expect_status "a scheduler token reads the pool" 200
broker_stop
journal=$(cat "$BROKER_LOG")

bad=$(printf '%s\n' "$journal" | grep -Ev '^<[0-7]>(error|warning|notice|info|debug): ' || true)
expect_eq "with JOURNAL_STREAM every line starts <N>level:" "$bad" ""
expect_no_match "with JOURNAL_STREAM no line carries its own stamp" \
    "$journal" '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z'
expect_match "the listening line is notice, <5>" "$journal" '^<5>notice: .*listening on'
expect_match "a 401 is <5>notice with the address" \
    "$journal" '^<5>notice: req=[0-9a-f]+: refused 401 GET /v1/pool from 127\.0\.0\.1: invalid token$'
n401=$(printf '%s\n' "$journal" | grep -Ec '^<5>notice: req=[0-9a-f]+: refused 401 GET /v1/pool from 127.0.0.1: invalid token$')
expect_eq "five identical 401s make one line" "$n401" 1
expect_match "and a summary with the count" \
    "$journal" "^<5>notice: req=$last_rid: message repeated 4 more times in 10 s: refused 401 GET /v1/pool from 127\\.0\\.0\\.1: invalid token\$"
expect_match "a 403 is <5>notice with the address and the token's name" \
    "$journal" "^<5>notice: req=[0-9a-f]+: refused 403 POST /v1/reservations from 127\.0\.0\.1 token 'prometheus' \(monitor\): "
# The tokens themselves are secrets: no form of them is in the log.
for tok in "$BAD_TOKEN" "$MONITOR_TOKEN" "$SCHED_TOKEN"; do
    case "$journal$plain" in
        *"${tok#vnib1.}"*) not_ok "a token appears in the log" ;;
        *) ok "the token ${tok:0:8}... is not in the log" ;;
    esac
done
finish

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# vnibctl against a live broker: the commands scripts use, their output,
# and the exit codes they rely on (0 ok, 1 refused, 2 usage, 3 unreachable).
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 1024-1025)"
CTL=$BUILD/vnibctl
export VNIB_URL=$BROKER_URL
umask 077
printf '%s\n' "$SCHED_TOKEN" >"$T/sched.token"
printf '%s\n' "$ADMIN_TOKEN" >"$T/admin.token"
printf '%s\n' "$MONITOR_TOKEN" >"$T/monitor.token"
umask 022

out=$("$CTL" --token-file "$T/sched.token" --json reserve 7 --uid 1001 --user alice --nodes 'n[1-2]')
expect_eq "reserve exits 0" "$?" 0
expect_eq "... printing the reservation as JSON" "$(printf '%s' "$out" | jq -c .vnis)" "[1024]"
"$CTL" --token-file "$T/sched.token" reserve 7 --uid 1001 --user alice --nodes 'n[1-2]' >/dev/null
expect_eq "an identical retry exits 0" "$?" 0
out=$("$CTL" --token-file "$T/sched.token" reserve 7 --uid 1001 --user alice --nodes 'n[1-3]' 2>&1)
expect_eq "a conflicting reserve exits 1" "$?" 1
expect_match "... saying why, with the stable code" "$out" 'reservation_conflict'
out=$(VNIB_TOKEN=$SCHED_TOKEN "$CTL" show 7)
expect_match "show prints key: value lines" "$out" 'vnis: +1024'
"$CTL" --token-file "$T/sched.token" reserve 8 --uid 1 --user bob --nodes n1 --vnis 1 >/dev/null
out=$("$CTL" --token-file "$T/sched.token" reserve 9 --uid 1 --user bob --nodes n1 2>&1)
expect_eq "an exhausted pool exits 1" "$?" 1
expect_match "... with the numbers" "$out" 'vni_pool_exhausted.*1 VNIs requested, 0 free'
out=$("$CTL" --token-file "$T/monitor.token" list)
expect_match "list prints a table" "$out" '^JOB_ID +STATE'
expect_eq "... one row per reservation" "$(printf '%s\n' "$out" | grep -c active)" 2
out=$("$CTL" --token-file "$T/monitor.token" reserve 10 --uid 1 --user x --nodes n1 2>&1)
expect_eq "a monitor reserving exits 1" "$?" 1
expect_match "... forbidden" "$out" forbidden
"$CTL" --token-file "$T/sched.token" release 7 >/dev/null
expect_eq "release exits 0" "$?" 0
"$CTL" --token-file "$T/sched.token" release 7 >/dev/null
expect_eq "a repeated release exits 0" "$?" 0
"$CTL" --token-file "$T/sched.token" release nosuch >/dev/null 2>&1
expect_eq "releasing an unknown job exits 1" "$?" 1
"$CTL" --token-file "$T/sched.token" reserve 11 --uid 1 --user x --nodes n1 --vnis 9 >/dev/null 2>&1
expect_eq "--vnis 9 is a usage error (2)" "$?" 2
"$CTL" --token-file "$T/sched.token" bogus >/dev/null 2>&1
expect_eq "an unknown command is a usage error (2)" "$?" 2
out=$("$CTL" --token-file "$T/admin.token" --json pool)
expect_eq "pool as JSON" "$(printf '%s' "$out" | jq .total)" 2
out=$("$CTL" --token-file "$T/admin.token" --json events --job 7)
expect_eq "events for a job" "$(printf '%s' "$out" | jq -r '[.events[].action] | join(",")')" reserve,release
out=$("$CTL" --token-file "$T/admin.token" --json vni 1024)
expect_eq "vni shows who held it" "$(printf '%s' "$out" | jq -r .reservation.job_id)" 7
"$CTL" --token-file "$T/admin.token" --url http://127.0.0.1:1 pool >/dev/null 2>&1
expect_eq "an unreachable broker exits 3" "$?" 3
broker_stop
"$CTL" --token-file "$T/admin.token" pool >/dev/null 2>&1
expect_eq "a stopped broker exits 3" "$?" 3
finish

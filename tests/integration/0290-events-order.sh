#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# D7: the audit trail is in order.  Under concurrent reserves and releases
# on two replicas, GET /v1/events, paged with after/next, returns every
# event once, in id order, and their times never go backwards.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1
broker_config "$T/b.toml"
sed -i 's/level = "debug"/level = "info"/' "$T/b.toml"
brokers_ab "$T/b.toml"

# loop ID URL SECONDS: reserve and release jobs until the time is up.
loop () {
    end=$(($(date +%s) + $3))
    i=0
    while [ "$(date +%s)" -lt "$end" ]; do
        i=$((i + 1))
        curl -s -m 10 -o /dev/null -H "Authorization: Bearer $SCHED_TOKEN" \
            -H "Content-Type: application/json" -d "{\"job_id\":\"e$1-$i\",\"uid\":1,\"user\":\"u\",\"nodes\":\"n[1-4]\"}" \
            "$2/v1/reservations"
        curl -s -m 10 -o /dev/null -X DELETE -H "Authorization: Bearer $SCHED_TOKEN" \
            "$2/v1/reservations/e$1-$i"
    done
}

clients_ab 8 loop 10
total=$(psql_q 'SELECT count(*) FROM events')
expect_match "the load made events ($total)" "$total" '^[0-9]{3,}$'

# Every page of the trail, as "id time" lines.
events_pages "$ADMIN_TOKEN" limit=1000 "$T/events"
expect_eq "paging returns every event once" "$(wc -l <"$T/events")" "$total"
expect_eq "ids ascend" \
    "$(awk 'NR > 1 && $1 + 0 <= prev { n++ } { prev = $1 + 0 } END { print n + 0 }' "$T/events")" 0
back=$(awk 'NR > 1 && $2 < prev { n++; if (n <= 3) print "#   " pid " " prev " > " $1 " " $2 > "/dev/stderr" }
            { prev = $2; pid = $1 } END { print n + 0 }' "$T/events" 2>"$T/back")
cat "$T/back"
expect_eq "D7 events in id order have non-decreasing times (of $total, backwards)" "$back" 0
TOKEN=$ADMIN_TOKEN http GET '/v1/events?limit=5'
expect_match "... times are ISO 8601 UTC" "$(jq -r '.events[0].time' "$T/http.body")" \
    '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$'
finish

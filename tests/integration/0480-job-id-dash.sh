#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Job ids that start with '-': the broker refuses them (400 invalid_field,
# saying why) on every route that takes one, since an id reaches the argv
# of hooks (on_reservation_lost) and tools, where it would read as an
# option; vnibctl refuses them before asking the broker.
. "$(dirname "$0")/lib.sh"

VNIBCTL=$BUILD/vnibctl
unset VNIB_URL VNIB_TOKEN VNIB_TOKEN_FILE VNIB_CACERT

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3009)"

reserve () { # JOB
    TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"$1\",\"uid\":1000,\"user\":\"alice\",\"nodes\":\"n1\"}"
}

for id in -x --help -1; do
    reserve "$id"
    expect_status "reserve job_id '$id' is refused" 400
    expect_json "... as invalid_field" .error.code invalid_field
    expect_match "... saying why" "$HTTP_BODY" "must not start with '-'"
    TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$id"
    expect_status "GET /v1/reservations/$id is refused" 400
    TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/$id"
    expect_status "DELETE /v1/reservations/$id is refused" 400
done
reserve "j-1"
expect_status "a '-' inside an id is still fine" 201
reserve "1-"
expect_status "... and at its end" 201

# vnibctl refuses them itself (exit 2), before any request.
for cmd in show release; do
    out=$(VNIB_URL=$BROKER_URL VNIB_TOKEN=$SCHED_TOKEN "$VNIBCTL" "$cmd" -- -x 2>&1)
    expect_eq "vnibctl $cmd -- -x is a usage error" "$?" 2
    expect_match "... saying why" "$out" "must not start with '-'"
done
out=$(VNIB_URL=$BROKER_URL VNIB_TOKEN=$SCHED_TOKEN "$VNIBCTL" reserve --uid 1000 --user alice --nodes n1 -- -x 2>&1)
expect_eq "vnibctl reserve -- -x is a usage error" "$?" 2
out=$(VNIB_URL=$BROKER_URL VNIB_TOKEN=$SCHED_TOKEN "$VNIBCTL" events --job=-x 2>&1)
expect_eq "vnibctl events --job=-x is a usage error" "$?" 2
finish

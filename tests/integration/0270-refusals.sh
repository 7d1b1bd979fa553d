#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# D3: a refused reserve changes nothing, and VNIs are handed out least
# recently released first.
#
# A reserve refused for pool exhaustion (503 vni_pool_exhausted) leaves the
# pool as GET /v1/pool shows it (cursor, free, active, quarantined), the
# VNI holds, the audit trail and the reservations exactly as they were.
# In a fresh pool, VNIs never used come first (ascending), then released
# ones in the order they were released; /v1/pool's cursor is the last VNI
# handed out by the newest reservation.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 2000-2002)"

reserve () { # JOB VNI_COUNT
    TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"$1\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"n[1-2]\",\"vni_count\":$2}"
}
release () {
    TOKEN=$SCHED_TOKEN http DELETE "/v1/reservations/$1"
}

# snapshot NAME: everything a refusal must leave as it was, into $T/NAME.*
snapshot () {
    TOKEN=$SCHED_TOKEN http GET /v1/pool
    jq -c '{cursor, free, active, quarantined}' "$T/http.body" >"$T/$1.pool"
    psql_q 'SELECT vni, reservation_id FROM vni_holds ORDER BY vni' >"$T/$1.holds"
    psql_q 'SELECT count(*) FROM events' >"$T/$1.events"
    psql_q 'SELECT r::text FROM reservations r ORDER BY id' >"$T/$1.res"
}

# unchanged WHAT BEFORE AFTER: one check per thing a refusal must not touch.
unchanged () {
    expect_eq "D3 refusal changes nothing ($1): /v1/pool cursor, free, active, quarantined" \
        "$(cat "$T/$3.pool")" "$(cat "$T/$2.pool")"
    expect_eq "D3 refusal changes nothing ($1): vni_holds rows" \
        "$(cat "$T/$3.holds")" "$(cat "$T/$2.holds")"
    expect_eq "D3 refusal changes nothing ($1): number of events" \
        "$(cat "$T/$3.events")" "$(cat "$T/$2.events")"
    expect_eq "D3 refusal changes nothing ($1): reservations table" \
        "$(cat "$T/$3.res")" "$(cat "$T/$2.res")"
}

# ---- a full pool refuses one more -------------------------------------------------
reserve a 3
expect_status "job a takes the whole pool of three" 201
expect_json "... 2000-2002" '.vnis | join(",")' 2000,2001,2002
snapshot full
expect_json "D3 the cursor is the last VNI job a got" '.cursor' 2002 # from snapshot's GET
reserve b 1
expect_status "job b is refused with 503" 503
expect_json "... vni_pool_exhausted" .error.code vni_pool_exhausted
expect_match "... with Retry-After" "$(header Retry-After)" '^[0-9]+$'
snapshot refused1
unchanged "1 VNI from a full pool" full refused1
expect_eq "D3 the cursor stayed at 2002 (today it moves past the pool)" \
    "$(jq -r .cursor "$T/refused1.pool")" 2002

# ---- more than the pool holds ---------------------------------------------------------
release a
expect_status "job a released at once (no node reported)" 200
snapshot empty
reserve c 4
expect_status "4 VNIs from a pool of 3 are refused with 503" 503
expect_json "... vni_pool_exhausted" .error.code vni_pool_exhausted
expect_match "... saying 4 asked, 3 free" "$(jq -r .error.message "$T/http.body")" '4 VNIs requested, 3 free'
snapshot refused2
unchanged "4 VNIs from a pool of 3" empty refused2
TOKEN=$SCHED_TOKEN http GET /v1/reservations/c
expect_status "job c has no reservation" 404

# ---- least recently released first, in a fresh pool ---------------------------------------
broker_stop
pg_createdb vnib2 || { not_ok "second database"; finish; }
broker_config "$T/lru.toml" '
[vni]
pool = "2000-2003"'
sed -i 's/dbname=vnibroker/dbname=vnib2/' "$T/lru.toml"
broker_migrate "$T/lru.toml" || { not_ok "migrate vnib2"; finish; }
broker_start "$T/lru.toml" || { not_ok "broker on vnib2 starts"; finish; }

reserve x 1
expect_json "fresh pool: x gets 2000" '.vnis | join(",")' 2000
reserve y 1
expect_json "y gets 2001" '.vnis | join(",")' 2001
release x
expect_status "x released" 200
release y
expect_status "y released" 200
reserve z 2
expect_json "D3 z gets the never-used 2002,2003 before released ones" '.vnis | join(",")' 2002,2003
reserve w 2
expect_json "D3 w gets 2000,2001: x's VNI (released first) before y's" '.vnis | join(",")' 2000,2001
TOKEN=$SCHED_TOKEN http GET /v1/pool
expect_json "D3 /v1/pool cursor is the last VNI of the newest reservation (w)" .cursor 2001

# Released in the other order than they were handed out: w (2000, 2001)
# before z (2002, 2003).  Round robin would go on at 2002.
release w
expect_status "w released" 200
release z
expect_status "z released" 200
reserve v 2
expect_status "v reserved" 201
expect_eq "D3 least recently released first: v gets w's 2000,2001 (released before z's)" \
    "$(jq -r '.vnis | sort | join(",")' "$T/http.body")" 2000,2001
last=$(jq -r '.vnis | last' "$T/http.body")
TOKEN=$SCHED_TOKEN http GET /v1/pool
expect_json "D3 /v1/pool cursor is the last VNI v got" .cursor "$last"
reserve u 1
expect_json "D3 then z's VNIs: u gets 2002" '.vnis | join(",")' 2002
broker_stop
finish

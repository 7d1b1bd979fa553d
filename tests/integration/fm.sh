# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for tests of the broker against fmsim, sourced after lib.sh.
#
# fm_start starts an fmsim (no auth unless told otherwise) and records it
# for lib.sh's cleanup; hwcoll_config writes a broker configuration with
# hardware collectives on that fmsim.  A second database on the test's
# private PostgreSQL server is made with pg_createdb, and read with psql_db.

FMSIM=$BUILD/fmsim
FM_PID=""
FM_URL=""
FM_ADMIN=""
FM_N=0
FM_LOGS=""

# fm_start [FMSIM-ARGS...]: start fmsim on free ports of 127.0.0.1; sets
# FM_PID, FM_URL, FM_ADMIN and what fm_start_as sets.
fm_start () {
    fm_start_as --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 "$@"
}

# fm_start_as FMSIM-ARGS...: start fmsim with just these arguments; sets
# FM_PID, FM_URL, FM_ADMIN, FM_LINE (its start line), FM_OUT and FM_ERR
# (its stdout and stderr, $T/fmsim.N.out and .log for the Nth start), and
# adds FM_ERR to FM_LOGS.
fm_start_as () {
    FM_N=$((FM_N + 1))
    FM_OUT=$T/fmsim.$FM_N.out
    FM_ERR=$T/fmsim.$FM_N.log
    FM_LOGS="$FM_LOGS $FM_ERR"
    "$FMSIM" "$@" >"$FM_OUT" 2>"$FM_ERR" &
    FM_PID=$!
    track "$FM_PID"
    wait_for 30 grep -q '^fmsim listening on' "$FM_OUT" || {
        echo "# fmsim did not start:"
        sed 's/^/#   /' "$FM_ERR"
        return 1
    }
    FM_LINE=$(head -n 1 "$FM_OUT")
    FM_URL=$(printf '%s\n' "$FM_LINE" | sed -E 's|^fmsim listening on (https?://[^ ]+) admin .*|\1|')
    FM_ADMIN=$(printf '%s\n' "$FM_LINE" | sed -E 's|.* admin (http://[^ ]+)$|\1|')
}

# fm_stop [SIGNAL]: stop the last fmsim and wait; returns its exit status.
fm_stop () {
    kill "-${1:-TERM}" "$FM_PID" 2>/dev/null
    wait "$FM_PID"
}

# fm_fault JSON: POST /fmsim/faults on the admin port.
fm_fault () {
    curl -sS -o /dev/null --max-time 10 -X POST -d "$1" "$FM_ADMIN/fmsim/faults"
}

# fm_ids: the FM's job ids, one per line, sorted.
fm_ids () {
    curl -sS --max-time 20 "$FM_ADMIN/fmsim/state" | jq -r '.jobs[].jobID' | sort
}

# fm_has ID: true when the FM holds job ID.
fm_has () {
    fm_ids | grep -qxF -- "$1"
}

# fm_lacks ID: true when it does not.
fm_lacks () {
    ! fm_has "$1"
}

# hwcoll_table MIN_NODES: the start of an [hwcoll] table for $FM_URL with
# no FM auth, 4 addresses a job.
hwcoll_table () {
    printf '[hwcoll]\nenabled = true\nfm_url = "%s"\nauth = "none"\nmin_nodes = %s\naddrs_per_job = 4\n' \
        "$FM_URL" "$1"
}

# hwcoll_config FILE CLUSTER [EXTRA-TOML]: broker_config with hardware
# collectives on $FM_URL (no FM auth), every job eligible (min_nodes 1),
# reconciliation as often as the broker allows, short retries.
hwcoll_config () {
    [ -f "$T/token.key" ] || (umask 077 && openssl rand 32 >"$T/token.key")
    broker_config "$1" "
[cluster]
name = \"$2\"

$(hwcoll_table 1)
reserve_timeout_ms = 2000
reconcile_interval_s = 5
retry_max_s = 1
token_key_file = \"$T/token.key\"
${3:-}"
    sed -i 's/level = "debug"/level = "info"/' "$1"
}

# set_key FILE KEY VALUE: replace "KEY = ..." (the first one) in a config.
set_key () {
    sed -i "0,/^$2 = .*/s||$2 = $3|" "$1"
}

# pg_createdb NAME: a second database on this test's server.
pg_createdb () {
    as_pg_user "$PG_BIN/createdb" -h "$PGSOCK" -U vnib "$1"
}

# psql_db DB SQL: psql_q on another database.
psql_db () {
    as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -U vnib -d "$1" -XAtq -v ON_ERROR_STOP=1 -c "$2"
}

# metric URL NAME: the value of an unlabelled metric of the broker at URL.
metric () {
    curl -sS --max-time 10 "$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'
}

# fm_status URL TOKEN: GET /v1/fabric-manager into $T/fmstatus.json.
fm_status () {
    curl -sS --max-time 10 -H "Authorization: Bearer $2" "$1/v1/fabric-manager" \
        >"$T/fmstatus.json"
}

# reconciles_at_least URL N: true once the broker at URL has reconciled N
# times.
reconciles_at_least () {
    [ "$(metric "$1" vnib_fm_reconciles_total)" -ge "$2" ] 2>/dev/null
}

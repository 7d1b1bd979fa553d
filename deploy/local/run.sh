#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# `make run`: vnibroker on an embedded default, for trying it out.
#
# Starts a private PostgreSQL cluster under .run/ (created with initdb on
# first use; Unix socket only, no TCP), applies the migrations, starts
# fmsim (the Fabric Manager simulator) on 127.0.0.1:8090 with its admin
# API on 8091, writes a development configuration, and runs vnibrokerd in
# the foreground on 127.0.0.1:8080 (VNIB_PORT and VNIB_FMSIM_PORT
# override).  Ctrl-C stops the broker, fmsim and the database it started;
# the data stays in .run/ for next time (`rm -rf .run` starts afresh).
#
# PostgreSQL refuses to run as root, so as root the cluster runs as the
# `postgres` user; otherwise as you.  VNIB_RUN_DIR puts everything in
# another directory than .run/ (an absolute path).
#
# deploy/local/demo.sh (`make demo`) sources this file with RUN_SOURCED=1
# to share its setup: the script then starts the broker in the
# background (its output in the log folder) and returns, and the demo
# takes over.  Only the demo sets these shell variables, before sourcing:
# RUN_FRESH_DB=1 drops the database and fmsim's jobs first, RUN_HWCOLL_MIN_NODES replaces
# hwcoll.min_nodes, RUN_CONF_EXTRA is appended to the configuration,
# RUN_LAUNCH prefixes fmsim and the broker (setsid: out of the terminal's
# Ctrl-C), RUN_FALLBACK replaces the run folder root falls back to, and
# RUN_STOP_HOOK names a command run first when everything stops.
set -eu

BUILD=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
case "$BUILD" in /*) ;; *) BUILD=$TOP/$BUILD ;; esac
PORT=${VNIB_PORT:-8080}
FMSIM_PORT=${VNIB_FMSIM_PORT:-8090}
RUN=${VNIB_RUN_DIR:-$TOP/.run}
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$PG_BIN" ] || { echo "run: PostgreSQL server not found; run 'make deps'" >&2; exit 1; }

as_pg () {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

mkdir -p "$RUN"
# The postgres user must reach the cluster: a private checkout (under
# /root, say) is not reachable, so fall back to a directory it can use.
if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$RUN" 2>/dev/null; then
    RUN=${RUN_FALLBACK:-/var/tmp/vnibroker-run}
    mkdir -p "$RUN"
    chmod 755 "$RUN"
fi
PGDIR=$RUN/pg
SOCK=$RUN/sock
# Unix socket paths are limited to 107 bytes.
if [ ${#SOCK} -gt 80 ]; then
    SOCK=/tmp/vnibroker-sock-$(id -u)
fi
mkdir -p "$SOCK" "$RUN/log"
if [ "$(id -u)" -eq 0 ]; then
    chown postgres "$SOCK" "$RUN/log"
fi

if [ ! -f "$PGDIR/PG_VERSION" ]; then
    echo "run: creating a PostgreSQL cluster in $PGDIR"
    mkdir -p "$PGDIR"
    [ "$(id -u)" -eq 0 ] && chown postgres "$PGDIR"
    as_pg "$PG_BIN/initdb" -D "$PGDIR" -U vnib --auth=trust -E UTF8 \
        --locale=C.UTF-8 >"$RUN/log/initdb.log" 2>&1 || {
        cat "$RUN/log/initdb.log" >&2
        exit 1
    }
fi

started_pg=0
if ! as_pg "$PG_BIN/pg_ctl" -D "$PGDIR" status >/dev/null 2>&1; then
    as_pg "$PG_BIN/pg_ctl" -D "$PGDIR" -l "$RUN/log/postgresql.log" -w -t 60 \
        -o "-c listen_addresses='' -c unix_socket_directories='$SOCK' -c autovacuum_naptime=10s" start >/dev/null || {
        echo "run: PostgreSQL did not start; see $RUN/log/postgresql.log" >&2
        tail -n 20 "$RUN/log/postgresql.log" >&2
        exit 1
    }
    started_pg=1
fi

broker_pid=""
fmsim_pid=""
stop_all () {
    trap - INT TERM EXIT
    [ -z "${RUN_STOP_HOOK:-}" ] || $RUN_STOP_HOOK
    if [ -n "$fmsim_pid" ]; then
        kill -TERM "$fmsim_pid" 2>/dev/null || true
        wait "$fmsim_pid" 2>/dev/null || true
    fi
    if [ -n "$broker_pid" ]; then
        kill -TERM "$broker_pid" 2>/dev/null || true
        wait "$broker_pid" 2>/dev/null || true
    fi
    if [ "$started_pg" -eq 1 ]; then
        as_pg "$PG_BIN/pg_ctl" -D "$PGDIR" -m fast -w stop >/dev/null 2>&1 || true
        echo "run: stopped vnibrokerd, fmsim and PostgreSQL"
    fi
}
trap stop_all EXIT
trap 'exit 130' INT TERM

if [ "${RUN_FRESH_DB:-0}" = 1 ]; then
    as_pg "$PG_BIN/dropdb" -h "$SOCK" -U vnib --if-exists vnibroker
    rm -f "$RUN/fmsim-state.json"
fi
if ! as_pg "$PG_BIN/psql" -h "$SOCK" -U vnib -d postgres -XAtq \
        -c "SELECT 1 FROM pg_database WHERE datname = 'vnibroker'" | grep -q 1; then
    as_pg "$PG_BIN/createdb" -h "$SOCK" -U vnib vnibroker
fi

# Development credentials, made once and kept in .run/ (mode 0600): one
# token per role, and a node key from which node tokens are derived.
CTL=$BUILD/vnibctl
umask 077
if [ ! -f "$RUN/tokens" ]; then
    : >"$RUN/tokens"
    for role in admin scheduler monitor; do
        "$CTL" token new "$role" "dev-$role" >"$RUN/new"
        head -n 1 "$RUN/new" >"$RUN/$role.token"
        sed -n 2p "$RUN/new" >>"$RUN/tokens"
    done
    rm -f "$RUN/new"
fi
[ -f "$RUN/node.key" ] || "$CTL" token key --out "$RUN/node.key" >/dev/null
[ -f "$RUN/fm-token.key" ] || "$CTL" token key --out "$RUN/fm-token.key" >/dev/null
[ -f "$RUN/fm.password" ] || openssl rand -hex 16 >"$RUN/fm.password"
"$CTL" token node node1 --key-file "$RUN/node.key" >"$RUN/node1.token"
umask 022

# The Fabric Manager simulator, with Basic auth and its jobs kept in .run/.
${RUN_LAUNCH:-} "$BUILD/fmsim" --listen "127.0.0.1:$FMSIM_PORT" \
    --admin-listen "127.0.0.1:$((FMSIM_PORT + 1))" --auth basic \
    --password-file "$RUN/fm.password" --state "$RUN/fmsim-state.json" \
    >"$RUN/log/fmsim.out" 2>"$RUN/log/fmsim.log" &
fmsim_pid=$!
i=0
while ! grep -q 'fmsim listening' "$RUN/log/fmsim.out" 2>/dev/null; do
    i=$((i + 1))
    if [ "$i" -gt 100 ] || ! kill -0 "$fmsim_pid" 2>/dev/null; then
        echo "run: fmsim did not start; see $RUN/log/fmsim.log" >&2
        exit 1
    fi
    sleep 0.1
done

CONF=$RUN/vnibroker.toml
cat >"$CONF" <<EOT
# Generated by deploy/local/run.sh for development: do not use in production.
[server]
address = "127.0.0.1"
port = $PORT

[database]
conninfo = "host=$SOCK dbname=vnibroker user=vnib"

[auth]
tokens_file = "$RUN/tokens"
node_key_file = "$RUN/node.key"

[cluster]
name = "dev"

[hwcoll]
enabled = true
fm_url = "http://127.0.0.1:$FMSIM_PORT"
auth = "basic"
password_file = "$RUN/fm.password"
# fmsim on loopback speaks plain http: allowed here, warned at start.
allow_insecure_http = true
min_nodes = ${RUN_HWCOLL_MIN_NODES:-2}
addrs_per_job = 8
token_key_file = "$RUN/fm-token.key"

[log]
level = "info"
${RUN_CONF_EXTRA:-}
EOT

"$BUILD/vnibrokerd" -c "$CONF" --migrate

if [ "${RUN_SOURCED:-0}" = 1 ]; then
    ${RUN_LAUNCH:-} "$BUILD/vnibrokerd" -c "$CONF" >"$RUN/log/vnibrokerd.log" 2>&1 &
    broker_pid=$!
    return 0
fi

cat <<EOT

vnibroker is starting on http://127.0.0.1:$PORT (Ctrl-C stops it and its database)

  status page: http://127.0.0.1:$PORT/ui/#token=$(cat "$RUN/monitor.token")
  (the monitor token rides in the fragment, which never reaches the server;
  the page keeps it for this browser tab only)

  curl -s http://127.0.0.1:$PORT/healthz
  curl -s http://127.0.0.1:$PORT/readyz
  curl -s http://127.0.0.1:$PORT/metrics

  # reserve a VNI for job 42 on nodes node[1-4], as the scheduler:
  curl -s -H "Authorization: Bearer \$(cat $RUN/scheduler.token)" \\
       -H 'Content-Type: application/json' \\
       -d '{"job_id":"42","uid":1000,"user":"alice","nodes":"node[1-4]"}' \\
       http://127.0.0.1:$PORT/v1/reservations
  # what node1's agent sees:
  curl -s -H "Authorization: Bearer \$(cat $RUN/node1.token)" http://127.0.0.1:$PORT/v1/reservations/42
  # the same with vnibctl:
  VNIB_URL=http://127.0.0.1:$PORT $CTL --token-file $RUN/admin.token pool
  VNIB_URL=http://127.0.0.1:$PORT $CTL --token-file $RUN/scheduler.token release 42

  # the Fabric Manager connection, and fmsim's view of it:
  curl -s -H "Authorization: Bearer \$(cat $RUN/monitor.token)" http://127.0.0.1:$PORT/v1/fabric-manager
  curl -s http://127.0.0.1:$((FMSIM_PORT + 1))/fmsim/state

  tokens:        $RUN/{admin,scheduler,monitor,node1}.token (development only)

  configuration: $CONF
  database:      psql -h $SOCK -U vnib vnibroker
                 (log: $RUN/log/postgresql.log)

EOT

"$BUILD/vnibrokerd" -c "$CONF" &
broker_pid=$!
wait "$broker_pid" || true
broker_pid=""

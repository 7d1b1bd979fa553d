# SPDX-License-Identifier: GPL-2.0-or-later
# Patroni harness, sourced after lib.sh by the *-patroni.sh tests and by
# tests/bench/run.sh (scenario patroni).
#
# A Patroni cluster of three PostgreSQL members and one etcd, all on
# loopback under $T, all run as the PostgreSQL user (postgres when the
# tests run as root): etcd on two picked ports with its data in $T, and
# each member with its own data directory, socket directory, picked
# PostgreSQL and REST API ports, and log.  The members' configurations are
# generated from the shipped deploy/patroni/patroni.example.yml: names,
# addresses, ports, paths and passwords substituted, the watchdog off (a
# test must not reset its machine) and the timings shortened
# (PATRONI_TTL, PATRONI_LOOP_WAIT, PATRONI_RETRY_TIMEOUT: 8, 1, 3 here;
# the example's are 30, 10, 10).  Each generated file passes
# `patroni --validate-config` before it is used, and a key the generation
# expects but the example lacks fails the generation: the example is what
# is tested.  The example's TLS-only pg_hba is kept; the members get a
# throwaway certificate (lib.sh's test_ca/test_cert).
#
# Bootstrap: once a leader is up, the role vnibroker (with a password in
# $T/pgpass, the brokers' passfile) and its database are made on it, as
# deploy/README.md 2.2 says, and the broker's migrations run
# (broker_migrate with a config whose conninfo lists the three members).
#
# Functions: patroni_tools (are the programs here), patroni_cluster_start
# PREFIX, patroni_leader, patroni_leader_pid, patroni_port NAME,
# patroni_healthy, patroni_wait_new_leader OLD SECONDS, patroni_conninfo,
# patroni_fault MODE, patroni_fault_end MODE, patroni_cluster_stop.  PATRONI_MEMBERS names the members of the current
# cluster; PATRONI_CFG is the first member's config (for patronictl).

PATRONI_TTL=${PATRONI_TTL:-8}
PATRONI_LOOP_WAIT=${PATRONI_LOOP_WAIT:-1}
PATRONI_RETRY_TIMEOUT=${PATRONI_RETRY_TIMEOUT:-3}
# The members' address: on loopback, but not 127.0.0.1, which 3.0.2's
# --validate-config refuses in connect_address (it is not reachable from
# another host).
PATRONI_ADDR=127.0.0.2
PATRONI_EXAMPLE=$TOP/deploy/patroni/patroni.example.yml
PATRONI_MEMBERS=""
PATRONI_CFG=""
PATRONI_PIDS=""

# patroni_tools: true when every program the harness runs is installed;
# PATRONI_MISSING names the first one missing.
patroni_tools () {
    for p in patroni patronictl etcd python3 curl jq; do
        command -v "$p" >/dev/null 2>&1 || { PATRONI_MISSING=$p; return 1; }
    done
    python3 -c 'import yaml' 2>/dev/null || { PATRONI_MISSING=python3-yaml; return 1; }
}

# as_pg_exec CMD... &: CMD as the PostgreSQL user, exec'd in place of
# the background subshell (no runuser or shell parent in between), so
# that $! is CMD's own PID and a signal reaches it.  Only ever run in the
# background or in a subshell: it execs.
as_pg_exec () {
    export HOME=$T/patroni
    if [ "$(id -u)" -eq 0 ]; then
        exec setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"
    fi
    exec "$@"
}

# patroni_gen_config NAME PGPORT APIPORT OUT: OUT from the example.
patroni_gen_config () {
    PG_NAME=$1 PG_PORT=$2 API_PORT=$3 PG_DIR=$T/patroni/$1 PG_BINDIR=$PG_BIN \
        ETCD_HOSTS=127.0.0.1:$ETCD_CLIENT_PORT SCOPE=$PATRONI_SCOPE \
        TLS_DIR=$T/patroni SUPER_PW=$PATRONI_SUPER_PW REPL_PW=$PATRONI_REPL_PW \
        REWIND_PW=$PATRONI_REWIND_PW API_PW=$PATRONI_API_PW TTL=$PATRONI_TTL LOOP_WAIT=$PATRONI_LOOP_WAIT \
        RETRY_TIMEOUT=$PATRONI_RETRY_TIMEOUT ADDR=$PATRONI_ADDR \
        python3 - "$PATRONI_EXAMPLE" "$4" <<'EOF'
import os, sys, yaml

e = os.environ
with open(sys.argv[1]) as f:
    c = yaml.safe_load(f)

def must(d, *path):
    """The dict at path in d; a missing key is an error (the example changed)."""
    for k in path:
        if not isinstance(d, dict) or k not in d:
            sys.exit("patroni.example.yml has no %s" % ".".join(path))
        d = d[k]
    return d

def put(path, value):
    d = must(c, *path[:-1])
    must(d, path[-1])
    d[path[-1]] = value

put(["scope"], e["SCOPE"])
put(["name"], e["PG_NAME"])
put(["restapi", "listen"], e["ADDR"] + ":" + e["API_PORT"])
put(["restapi", "connect_address"], e["ADDR"] + ":" + e["API_PORT"])
put(["etcd3", "hosts"], e["ETCD_HOSTS"])
for k in ("ttl", "loop_wait", "retry_timeout"):
    put(["bootstrap", "dcs", k], int(e[k.upper()]))
for k in ("synchronous_mode", "synchronous_mode_strict"):
    if must(c, "bootstrap", "dcs", k) is not True:
        sys.exit("patroni.example.yml: bootstrap.dcs.%s is not true" % k)
# The example's networks (PostgreSQL hosts, broker hosts) are loopback here.
def hba(lines):
    return [l.replace("10.0.0.0/24", "127.0.0.0/8").replace("10.0.1.0/24", "127.0.0.0/8")
            for l in lines]
put(["bootstrap", "pg_hba"], hba(must(c, "bootstrap", "pg_hba")))
put(["postgresql", "pg_hba"], hba(must(c, "postgresql", "pg_hba")))
put(["postgresql", "listen"], e["ADDR"] + ":" + e["PG_PORT"])
put(["postgresql", "connect_address"], e["ADDR"] + ":" + e["PG_PORT"])
put(["postgresql", "data_dir"], e["PG_DIR"] + "/data")
put(["postgresql", "bin_dir"], e["PG_BINDIR"])
put(["postgresql", "pgpass"], e["PG_DIR"] + "/pgpass")
put(["postgresql", "authentication", "superuser", "password"], e["SUPER_PW"])
put(["postgresql", "authentication", "replication", "password"], e["REPL_PW"])
put(["postgresql", "authentication", "rewind", "password"], e["REWIND_PW"])
put(["restapi", "authentication", "password"], e["API_PW"])
put(["postgresql", "parameters", "unix_socket_directories"], e["PG_DIR"] + "/sock")
put(["postgresql", "parameters", "ssl_cert_file"], e["TLS_DIR"] + "/pg-tls.pem")
put(["postgresql", "parameters", "ssl_key_file"], e["TLS_DIR"] + "/pg-tls.key")
# A test must not arm a watchdog that resets the machine it runs on.
put(["watchdog", "mode"], "off")
c["log"] = {"level": "INFO", "format": "%(asctime)s %(levelname)s: %(message)s"}
with open(sys.argv[2], "w") as f:
    yaml.safe_dump(c, f, default_flow_style=False, sort_keys=False)
EOF
}

# etcd_start: one etcd member on loopback (picked client and peer ports,
# data in $T/patroni/etcd.N), as the PostgreSQL user; waits until healthy.
# Sets ETCD_CLIENT_PORT and ETCD_PID.
PATRONI_ETCDS=0
etcd_start () {
    PATRONI_ETCDS=$((PATRONI_ETCDS + 1))
    ETCD_CLIENT_PORT=$(pick_port) || return 1
    etcd_peer=$(pick_port) || return 1
    edir=$T/patroni/etcd.$PATRONI_ETCDS
    mkdir -p "$edir"
    [ "$(id -u)" -ne 0 ] || chown postgres "$edir"
    chmod 700 "$edir"
    as_pg_exec etcd --name e1 --data-dir "$edir/data" \
        --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
        --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
        --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
        --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
        --initial-cluster "e1=http://127.0.0.1:$etcd_peer" \
        --listen-metrics-urls "" >"$T/patroni/etcd.$PATRONI_ETCDS.log" 2>&1 &
    ETCD_PID=$!
    track "$ETCD_PID"
    wait_for 20 sh -c "curl -fsS --max-time 1 http://127.0.0.1:$ETCD_CLIENT_PORT/health | grep -q true" || {
        echo "# etcd did not become healthy:"
        tail -n 5 "$T/patroni/etcd.$PATRONI_ETCDS.log" | sed 's/^/#   /'
        return 1
    }
}

# patroni_setup_once: the TLS certificate and passwords every cluster of
# this test shares.
patroni_setup_once () {
    [ -f "$T/patroni/pg-tls.key" ] && return 0
    mkdir -p "$T/patroni"
    test_ca "vnib test PostgreSQL CA" && test_cert pg-tls "$PATRONI_ADDR" "IP:$PATRONI_ADDR" || return 1
    mv "$T/pg-tls.pem" "$T/pg-tls.key" "$T/patroni/"
    if [ "$(id -u)" -eq 0 ]; then
        chown postgres "$T/patroni" "$T/patroni/pg-tls.key"
    fi
    chmod 600 "$T/patroni/pg-tls.key"
    PATRONI_SUPER_PW=$(openssl rand -hex 12)
    PATRONI_REPL_PW=$(openssl rand -hex 12)
    PATRONI_REWIND_PW=$(openssl rand -hex 12)
    PATRONI_API_PW=$(openssl rand -hex 12)
    PATRONI_BROKER_PW=$(openssl rand -hex 12)
    # The brokers' passfile (deploy/README.md 2.2): mode 0600, its owner.
    umask 077
    printf '%s:*:vnibroker:vnibroker:%s\n' "$PATRONI_ADDR" "$PATRONI_BROKER_PW" >"$T/pgpass"
    umask 022
}

# patroni_member_start NAME: start the member whose config is
# $T/patroni/NAME.yml (as the PostgreSQL user, logging to
# $T/patroni/NAME.log); sets PATRONI_PID_<NAME>.
patroni_member_start () {
    as_pg_exec patroni "$T/patroni/$1.yml" >>"$T/patroni/$1.log" 2>&1 &
    eval "PATRONI_PID_$1=$!"
    track "$!"
    PATRONI_PIDS="$PATRONI_PIDS $!"
}

# patroni_cluster_start PREFIX: a fresh etcd and members PREFIX1..3, their
# configs validated; waits for a leader with two streaming replicas, one
# synchronous (patroni_healthy), then makes the role and database and
# runs the broker's migrations.  Sets PATRONI_MEMBERS, PATRONI_CFG and
# PGSOCK/PGPORT (the leader's) for psql_q.
patroni_cluster_start () {
    patroni_setup_once || { echo "# the TLS certificate could not be made"; return 1; }
    etcd_start || return 1
    PATRONI_SCOPE=vnib-$1
    PATRONI_MEMBERS=""
    for i in 1 2 3; do
        n=$1$i
        mkdir -p "$T/patroni/$n/sock"
        [ "$(id -u)" -ne 0 ] || chown -R postgres "$T/patroni/$n"
        chmod 700 "$T/patroni/$n"
        chmod 755 "$T/patroni/$n/sock"
        pp=$(pick_port) && ap=$(pick_port) || return 1
        patroni_gen_config "$n" "$pp" "$ap" "$T/patroni/$n.yml" || return 1
        chmod 644 "$T/patroni/$n.yml"
        eval "PATRONI_PORT_$n=$pp PATRONI_API_$n=$ap"
        if ! (as_pg_exec patroni --validate-config "$T/patroni/$n.yml") >"$T/patroni/$n.validate" 2>&1; then
            echo "# patroni --validate-config $n.yml:"
            sed 's/^/#   /' "$T/patroni/$n.validate"
            return 1
        fi
        PATRONI_MEMBERS="$PATRONI_MEMBERS $n"
        PG_CLUSTERS="$PG_CLUSTERS $T/patroni/$n/data"
    done
    PATRONI_CFG=$T/patroni/${1}1.yml
    # The first member bootstraps alone; the others then clone it.
    patroni_member_start "${1}1"
    wait_for 60 patroni_leader_is "${1}1" || {
        echo "# ${1}1 did not become the leader:"
        tail -n 8 "$T/patroni/${1}1.log" | sed 's/^/#   /'
        return 1
    }
    patroni_member_start "${1}2"
    patroni_member_start "${1}3"
    wait_for 90 patroni_healthy || {
        echo "# the cluster did not become healthy:"
        patroni_cluster_json | sed 's/^/#   /'
        return 1
    }
    patroni_use_leader
    patroni_psql_super "CREATE ROLE vnibroker LOGIN PASSWORD '$PATRONI_BROKER_PW'" &&
        patroni_psql_super "CREATE DATABASE vnibroker OWNER vnibroker" || return 1
    broker_config "$T/patroni/migrate.toml"
    sed -i "s|^conninfo = .*|conninfo = \"$(patroni_conninfo)\"|" "$T/patroni/migrate.toml"
    broker_migrate "$T/patroni/migrate.toml" || {
        echo "# broker --migrate failed:"
        tail -n 5 "$T/migrate.log" | sed 's/^/#   /'
        return 1
    }
}

# patroni_conninfo: the brokers' conninfo for the current cluster: the
# three members over TCP, TLS, the passfile, the writable one.
patroni_conninfo () {
    pc_hosts=""
    pc_ports=""
    for n in $PATRONI_MEMBERS; do
        pc_hosts="$pc_hosts${pc_hosts:+,}$PATRONI_ADDR"
        pc_ports="$pc_ports${pc_ports:+,}$(patroni_port "$n")"
    done
    echo "host=$pc_hosts port=$pc_ports dbname=vnibroker user=vnibroker passfile=$T/pgpass sslmode=require target_session_attrs=read-write"
}

patroni_port () {
    eval "echo \$PATRONI_PORT_$1"
}

patroni_api () {
    eval "echo \$PATRONI_API_$1"
}

# patroni_cluster_json [NAME]: GET /cluster from member NAME's REST API
# (else from the first that answers within 2 s).
patroni_cluster_json () {
    for n in ${1:-$PATRONI_MEMBERS}; do
        curl -fsS --max-time 2 "http://$PATRONI_ADDR:$(patroni_api "$n")/cluster" 2>/dev/null && return 0
    done
    return 1
}

# patroni_leader [NAME]: the leader's name, as /cluster says.
patroni_leader () {
    patroni_cluster_json ${1:+"$1"} | jq -r '.members[] | select(.role == "leader") | .name'
}

patroni_leader_is () {
    [ "$(patroni_leader)" = "$1" ] &&
        [ "$(curl -s --max-time 2 -o /dev/null -w '%{http_code}' \
            "http://$PATRONI_ADDR:$(patroni_api "$1")/primary")" = 200 ]
}

# patroni_healthy: one leader running, the other two streaming (or
# running, as replicas), one of them synchronous, and the leader's
# pg_stat_replication agreeing (two streaming, one sync).
patroni_healthy () {
    ph_json=$(patroni_cluster_json) || return 1
    [ "$(printf '%s' "$ph_json" | jq '[.members[] | select(.role == "leader" and .state == "running")] | length')" = 1 ] &&
        [ "$(printf '%s' "$ph_json" | jq '[.members[] | select(.role == "sync_standby" and (.state == "streaming" or .state == "running"))] | length')" = 1 ] &&
        [ "$(printf '%s' "$ph_json" | jq '[.members[] | select(.role == "replica" and (.state == "streaming" or .state == "running"))] | length')" = 1 ] || return 1
    ph_leader=$(printf '%s' "$ph_json" | jq -r '.members[] | select(.role == "leader") | .name')
    [ "$(patroni_psql_on "$ph_leader" "SELECT count(*) FILTER (WHERE state = 'streaming') || ' ' || count(*) FILTER (WHERE sync_state = 'sync') FROM pg_stat_replication")" = "2 1" ]
}

# patroni_leader_pid: the leader's postmaster PID.
patroni_leader_pid () {
    head -n 1 "$T/patroni/$(patroni_leader)/data/postmaster.pid"
}

# patroni_wait_new_leader OLD SECONDS: wait until a member other than OLD
# leads and accepts writes; prints its name.
patroni_wait_new_leader () {
    wnl_deadline=$(($(date +%s) + $2))
    while [ "$(date +%s)" -lt "$wnl_deadline" ]; do
        for n in $PATRONI_MEMBERS; do
            [ "$n" = "$1" ] && continue
            if patroni_leader_is "$n" && [ "$(patroni_psql_on "$n" "SELECT pg_is_in_recovery()")" = f ]; then
                echo "$n"
                return 0
            fi
        done
        sleep 0.2
    done
    return 1
}

# patroni_fault MODE: a fault of the current leader, as an admin or the
# machine makes one (deploy/README.md, "Running PostgreSQL under
# Patroni"); sets FAULT_OLD (the leader), FAULT_SYNC (its synchronous
# standby), FAULT_T0 (now_ms at the fault) and FAULT_PID (a background
# process to wait for, or empty).
#   kill        kill -9 of the leader's postmaster only.  Patroni either
#               restarts it where it is or fails over.
#   freeze      SIGSTOP of the leader's postmaster and every backend (a hung
#               host).  The example's watchdog (mode required) would reset
#               the host ttl - safety_margin seconds after the last pet; a
#               test cannot reset its machine, so at that moment the
#               member's Patroni and its PostgreSQL processes get SIGKILL
#               (FAULT_PID; $T/reset-$FAULT_OLD holds when, in ms).
#   freeze-nowatchdog  the freeze without the emulated reset.
#   switchover  `patronictl switchover --force` to the synchronous standby
#               (FAULT_PID; its output in $T/switchover.out).
patroni_fault () {
    FAULT_OLD=$(patroni_leader)
    FAULT_SYNC=$(patroni_cluster_json | jq -r '.members[] | select(.role == "sync_standby") | .name')
    FAULT_PID=""
    pf_dir=$T/patroni/$FAULT_OLD/data
    FAULT_T0=$(now_ms)
    case "$1" in
    kill)
        kill -KILL "$(head -n 1 "$pf_dir/postmaster.pid")"
        ;;
    freeze*)
        pf_frozen=$(pg_pids "$pf_dir")
        pg_freeze "$pf_dir"
        if [ "$1" = freeze ]; then
            eval "pf_patroni=\$PATRONI_PID_$FAULT_OLD"
            (sleep "$(patroni_reset_after)"
                kill -KILL "$pf_patroni" $pf_frozen 2>/dev/null
                now_ms >"$T/reset-$FAULT_OLD") &
            FAULT_PID=$!
            track "$FAULT_PID"
        fi
        ;;
    switchover)
        patronictl -c "$PATRONI_CFG" switchover --leader "$FAULT_OLD" \
            --candidate "$FAULT_SYNC" --force >"$T/switchover.out" 2>&1 &
        FAULT_PID=$!
        track "$FAULT_PID"
        ;;
    *) echo "# patroni_fault: no fault $1"; return 1 ;;
    esac
}

# patroni_reset_after: seconds from a freeze to the watchdog's reset of
# its host: the example's ttl - safety_margin (at least loop_wait + 1).
patroni_reset_after () {
    pra_margin=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["watchdog"]["safety_margin"])' \
        "$PATRONI_EXAMPLE")
    pra=$((PATRONI_TTL - pra_margin))
    [ "$pra" -gt "$PATRONI_LOOP_WAIT" ] || pra=$((PATRONI_LOOP_WAIT + 1))
    echo "$pra"
}

# patroni_fault_end MODE: after patroni_fault MODE, the machine is whole
# again: the reset host back (its Patroni started again), the frozen one
# (freeze-nowatchdog) resumed; waits up to 120 s for one leader and two
# replicas streaming, one synchronous.  Fails, showing the cluster and the
# old leader's log, when they do not come.
patroni_fault_end () {
    [ -z "$FAULT_PID" ] || { wait "$FAULT_PID"; } 2>/dev/null
    case "$1" in
    freeze) patroni_member_start "$FAULT_OLD" ;;
    freeze-nowatchdog) pg_resume "$T/patroni/$FAULT_OLD/data" ;;
    esac
    wait_for 120 patroni_healthy && return 0
    patroni_cluster_json | sed 's/^/#   /'
    tail -n 40 "$T/patroni/$FAULT_OLD.log" | sed "s/^/#   $FAULT_OLD: /"
    return 1
}

# patroni_psql_on NAME SQL: SQL on member NAME as the PostgreSQL superuser
# (its socket, peer authentication), 5 s at most.
patroni_psql_on () {
    pq_as=""
    [ "$(id -u)" -ne 0 ] || pq_as="runuser -u postgres --"
    PGCONNECT_TIMEOUT=3 timeout 5 $pq_as "$PG_BIN/psql" -h "$T/patroni/$1/sock" \
        -p "$(patroni_port "$1")" -U postgres -d "${PSQL_DB:-postgres}" -XAtq -v ON_ERROR_STOP=1 -c "$2" 2>/dev/null
}

patroni_psql_super () {
    patroni_psql_on "$PATRONI_LEADER" "$1"
}

# patroni_use_leader: PATRONI_LEADER, and PGSOCK/PGPORT for psql_q.
patroni_use_leader () {
    PATRONI_LEADER=$(patroni_leader)
    PGSOCK=$T/patroni/$PATRONI_LEADER/sock
    PGPORT=$(patroni_port "$PATRONI_LEADER")
    export PGPORT
}

# psql_q SQL (replaces lib.sh's): on the leader chosen by
# patroni_use_leader, database vnibroker, as the superuser.
psql_q () {
    as_pg_user "$PG_BIN/psql" -h "$PGSOCK" -p "$PGPORT" -U postgres -d vnibroker \
        -XAtq -v ON_ERROR_STOP=1 -c "$1"
}

# patroni_cluster_stop: stop every member (SIGTERM: Patroni stops its
# PostgreSQL) and etcd, waiting for each; frozen processes are resumed.
patroni_cluster_stop () {
    for n in $PATRONI_MEMBERS; do
        pg_resume "$T/patroni/$n/data"
    done
    for pid in $PATRONI_PIDS; do
        kill -CONT "$pid" 2>/dev/null
        kill -TERM "$pid" 2>/dev/null
    done
    for pid in $PATRONI_PIDS; do
        wait_for 30 pid_gone "$pid" || kill -KILL "$pid" 2>/dev/null
        { wait "$pid"; } 2>/dev/null
    done
    for n in $PATRONI_MEMBERS; do
        [ -f "$T/patroni/$n/data/postmaster.pid" ] &&
            as_pg_user "$PG_BIN/pg_ctl" -D "$T/patroni/$n/data" -m immediate -w stop >/dev/null 2>&1
    done
    kill -TERM "$ETCD_PID" 2>/dev/null
    wait_for 10 pid_gone "$ETCD_PID" || kill -KILL "$ETCD_PID" 2>/dev/null
    { wait "$ETCD_PID"; } 2>/dev/null
    PATRONI_PIDS=""
}

# pid_gone PID: PID has exited (a zombie not yet reaped counts as gone).
pid_gone () {
    [ ! -e "/proc/$1" ] || grep -q '^[0-9]* (.*) Z ' "/proc/$1/stat" 2>/dev/null
}

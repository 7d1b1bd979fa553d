# SPDX-License-Identifier: GPL-2.0-or-later
# Flux harness, sourced by tests/integration/*-flux.sh after lib.sh (and
# agent.sh, fm.sh).
#
# A real Flux: flux-core as `make deps-flux` built it (the prefix make
# recorded in $BUILD/flux/prefix), started as a three-broker test instance
# on this host (`flux start --test-size=3 --test-hosts=fx[0-2]`: ranks 0-2
# are nodes fx0-fx2, two cores each (this host's), each with its own simulated NICs and vnib-agent
# configuration under $T/fxN/), with vnibroker's jobtap plugin loaded by
# the job-manager, the per-rank prolog and housekeeping running
# vnib-flux-node (plugins/flux/node/, $BUILD/flux/vnib-flux-node), and the
# shell plugin in every job's shell.  Jobs run as root, the instance's
# owner.  The broker signs leases ($T/lease.key) and the agents verify them
# ($T/lease.pub), unless FLUX_LEASES=0: then a reserve asking for a lease
# is answered 400 lease_disabled.
#
#   flux_cluster [TOML]   PostgreSQL, the broker and the three nodes' agents
#   flux_require          skip the script (VNIB_REQUIRE_FLUX=1: fail) unless
#                         flux-core and both plugins are built and we are
#                         root
#   flux_setup [TOML]     write the instance's config ($T/flux.d) and the
#                         node side's settings; TOML is added to the
#                         [vnibroker] table
#   flux_start [DIR [RC]] start the instance in the background; sets
#                         FLUX_URI (exported: every `flux` command below
#                         talks to it) and FLUX_PID
#   flux_stop             end it (its jobs are killed)
#   fluxc ARGS...         `flux ARGS` with a 60 s limit
#   flux_event ID NAME    the context of the job's event NAME (JSON), once
#                         posted (waits 30 s at most)
#   flux_query            `flux jobtap query vnib-jobtap.so` (JSON)
#   flux_dump_logs        the instance's log, on failure
set -u

FLUX_PREFIX=$(cat "$BUILD/flux/prefix" 2>/dev/null || true)
FLUX=${FLUX_PREFIX:+$FLUX_PREFIX/bin/flux}
VNIB_FLUX_JOBTAP=$BUILD/flux/vnib-jobtap.so
VNIB_FLUX_SHELL=$BUILD/flux/vnib-shell.so
VNIB_FLUX_NODE=$BUILD/flux/vnib-flux-node
# The node side as the prolog and housekeeping run it, with the test's
# settings file (flux_setup writes it): append the mode.
FLUX_NODE_CMD="$VNIB_FLUX_NODE --config $T/flux-node.conf"
FLUX_PID=""
FLUX_SIZE=${FLUX_SIZE:-3} # brokers (nodes fx0...) of flux_start

# skip_flux REASON: as skip_slurm, for VNIB_REQUIRE_FLUX.
skip_flux () {
    if [ "${VNIB_REQUIRE_FLUX:-0}" = 1 ]; then
        not_ok "VNIB_REQUIRE_FLUX=1 but the Flux test cannot run: $*"
        finish
    fi
    skip_all "$@"
}

flux_require () {
    [ -n "$FLUX" ] && [ -x "$FLUX" ] ||
        skip_flux "no flux-core built: \`make deps-flux FLUX_SRC=DIR\` builds v0.88.0 (flux-core is not packaged by Debian)"
    [ -f "$VNIB_FLUX_JOBTAP" ] && [ -f "$VNIB_FLUX_SHELL" ] && [ -x "$VNIB_FLUX_NODE" ] ||
        skip_flux "the Flux plugins and vnib-flux-node are not built ($BUILD/flux/): make tests"
    [ "$(id -u)" -eq 0 ] || skip_flux "the Flux tests run as root (the node side's agent is root's)"
    command -v jq >/dev/null || skip_flux "jq is missing: make deps"
}

# flux_cluster [TOML]: PostgreSQL, a broker (pool FLUX_VNI_POOL, default
# 3000-3099; the lease key unless FLUX_LEASES=0, FLUX_LEASE_TOML added to
# its [lease] table; TOML added to its configuration) and the agents of
# fx0-fx2, four simulated NICs each, with the lease's public key.
flux_cluster () {
    pg_start || exit 1
    lease_keys
    fc_lease=""
    [ "${FLUX_LEASES:-1}" = 1 ] &&
        fc_lease=$(printf '\n[lease]\nkey_file = "%s"\n%s' "$T/lease.key" "${FLUX_LEASE_TOML:-}")
    broker_up "$T/b.toml" "$(vni_pool "${FLUX_VNI_POOL:-3000-3099}")$fc_lease
${1:-}"
    for n in fx0 fx1 fx2; do
        agent_setup "$n" 4 "[lease]
public_keys = [\"$T/lease.pub\"]"
    done
}

fluxc () {
    timeout 60 "$FLUX" "$@"
}

# flux_setup [TOML]: the instance's config (FLUX_TIMEOUT_MS and
# FLUX_RESERVE_TIMEOUT_MS set the plugin's timeouts, 2000 and 3000;
# FLUX_PROLOG_COMMAND the per-rank prolog, default "vnib-flux-node prolog";
# FLUX_SHELL_PLUGIN=0 leaves the shell plugin out), the node side's settings
# ($T/flux-node.conf; FLUX_NODE_CONF adds lines), the shell's initrc.
# Needs BROKER_URL and SCHED_TOKEN (broker_up) and the agents (agent_setup
# fx0 ...).
flux_setup () {
    mkdir -p "$T/flux.d" "$T/flux-state"
    (umask 077 && printf '%s\n' "$SCHED_TOKEN" >"$T/flux.token")
    cat >"$T/flux-node.conf" <<EOF
# vnib-flux-node's settings for this test (sh syntax, read without a shell)
AGENT_CONFIG=$T/%n/agent.toml
HOUSEKEEPING_RETRY_BUSY=${FLUX_HOUSEKEEPING_RETRY_BUSY:-2s}
LOGGER=
${FLUX_NODE_CONF:-}
EOF
    chmod 644 "$T/flux-node.conf"
    prolog_cmd=${FLUX_PROLOG_COMMAND:-$FLUX_NODE_CMD prolog}
    cat >"$T/flux.d/vnibroker.toml" <<EOF
[resource]
noverify = true

[[resource.config]]
hosts = "fx[0-2]"
cores = "0-1"

[job-manager]
plugins = [ { load = "perilog.so" }, { load = "$VNIB_FLUX_JOBTAP" } ]

[job-manager.prolog]
per-rank = true
command = [ $(printf '"%s", ' $prolog_cmd | sed 's/, $//') ]

[job-manager.housekeeping]
command = [ $(printf '"%s", ' $FLUX_NODE_CMD housekeeping | sed 's/, $//') ]
release-after = "0s"

[vnibroker]
url = "$BROKER_URL"
token-file = "$T/flux.token"
spool-dir = "$T/flux-spool"
timeout-ms = ${FLUX_TIMEOUT_MS:-2000}
reserve-timeout-ms = ${FLUX_RESERVE_TIMEOUT_MS:-3000}
retry-ms = 1000
${1:-}
EOF
    cat >"$T/initrc.lua" <<EOF
plugin.load { file = "*.so", conf = {} }
shell.source_rcpath ("*.lua")
shell.source_rcpath_option ("mpi")
EOF
    [ "${FLUX_SHELL_PLUGIN:-1}" = 1 ] &&
        echo "plugin.load { file = \"$VNIB_FLUX_SHELL\", conf = { state_dir = \"$T/%n/state\" } }" >>"$T/initrc.lua"
}

# flux_start [CONFIG-DIR [INITRC [NAME]]]: the instance of FLUX_SIZE
# brokers, in the background, until flux_stop (by default with
# flux_setup's $T/flux.d and $T/initrc.lua).  Its environment is the
# caller's.  NAME (default flux) names its files: $T/NAME.uri, .log,
# -state/, -start.out; sets FLUX_NAME too, for flux_stop.
#
# Our plugins cannot run under AddressSanitizer (flux-broker loads its
# modules with RTLD_DEEPBIND, which the sanitizer runtime refuses), so the
# instance runs with glibc's per-thread cache off and freed memory filled
# with 0x5a: memory of ours used after its free then reads as large
# counts and wild ids at once, and the test fails, where with the cache
# on it read a random key half the time (a use after free in the jobtap
# plugin hung the job-manager in one CI run of 0725 and passed in others).
# FLUX_POISON=0 runs it with glibc's defaults, as `make bench` does: its
# start times are Flux's own, not the checking allocator's.
flux_start () {
    poison="GLIBC_TUNABLES=glibc.malloc.tcache_count=0 MALLOC_PERTURB_=90"
    [ "${FLUX_POISON:-1}" = 1 ] || poison=""
    FLUX_NAME=${3:-flux}
    rm -f "$T/$FLUX_NAME.uri"
    mkdir -p "$T/$FLUX_NAME-state" "${1:-$T/flux.d}"
    # shellcheck disable=SC2086
    env $poison "$FLUX" start --test-size="$FLUX_SIZE" --test-hosts="fx[0-$((FLUX_SIZE - 1))]" \
        --config-path="${1:-$T/flux.d}" -Sstatedir="$T/$FLUX_NAME-state" \
        -Sconf.shell_initrc="${2:-$T/initrc.lua}" -Slog-filename="$T/$FLUX_NAME.log" \
        -Slog-level=7 \
        sh -c 'echo $$ >"$0.pid" && echo "$FLUX_URI" >"$0.tmp" &&
               mv "$0.tmp" "$0" && exec sleep 100000' \
        "$T/$FLUX_NAME.uri" >>"$T/$FLUX_NAME-start.out" 2>&1 &
    FLUX_PID=$!
    track "$FLUX_PID"
    wait_for 60 test -s "$T/$FLUX_NAME.uri" || {
        echo "# flux did not start:"
        sed 's/^/#   /' "$T/$FLUX_NAME-start.out" | tail -n 30
        return 1
    }
    FLUX_URI=$(cat "$T/$FLUX_NAME.uri")
    export FLUX_URI
    # Every rank up, its resources online.
    wait_for 60 sh -c '[ "$("$0" resource list -no {nnodes} -s free 2>/dev/null)" = "$1" ]' \
        "$FLUX" "$FLUX_SIZE" || {
        echo "# flux resources never came up"
        return 1
    }
}

# flux_stop: the instance's initial program ends; the brokers follow (the
# instance of FLUX_PID, named FLUX_NAME).
flux_stop () {
    [ -n "$FLUX_PID" ] || return 0
    kill "$(cat "$T/${FLUX_NAME:-flux}.uri.pid" 2>/dev/null)" 2>/dev/null
    for _ in $(seq 1 300); do
        kill -0 "$FLUX_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -9 "$FLUX_PID" 2>/dev/null
    wait "$FLUX_PID" 2>/dev/null
    FLUX_PID=""
}

# flux_event ID NAME: the context of the job's event NAME.
flux_event () {
    fluxc job wait-event -f json -t 30s "$1" "$2" 2>/dev/null | jq -c '.context'
}

flux_query () {
    fluxc jobtap query vnib-jobtap.so 2>/dev/null
}

trap 'flux_stop; cleanup' EXIT

flux_dump_logs () {
    echo "# flux log (last ${1:-40} lines):"
    tail -n "${1:-40}" "$T/flux.log" 2>/dev/null | sed 's/^/#   /'
}

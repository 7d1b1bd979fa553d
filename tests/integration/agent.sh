# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for tests of the node agent, sourced after lib.sh.
#
# Each simulated node NODE lives in $T/NODE: its agent.toml (sim backend,
# NIC files in $T/NODE/sim, state in $T/NODE/state, the report spool in
# $T/NODE/spool), and its node token
# (mode 0600).  The broker must be started first (BROKER_URL is written
# into the config).

VNIB_AGENT=$BUILD/vnib-agent

# agent_setup NODE NICS [EXTRA-TOML]: a node with NICS simulated NICs.
agent_setup () {
    mkdir -p "$T/$1"
    (umask 077; node_token "$1" >"$T/$1/token")
    cat >"$T/$1/agent.toml" <<EOF
[broker]
url = "$BROKER_URL"
token_file = "$T/$1/token"
fetch_timeout_ms = 2000
request_timeout_ms = 1000
spool_after_ms = 500

[node]
state_dir = "$T/$1/state"
spool_dir = "$T/$1/spool"

[nic]
backend = "sim"
sim_dir = "$T/$1/sim"
libcxi = "libcxi.so.1"
${3:-}
EOF
    "$VNIB_AGENT" --config "$T/$1/agent.toml" sim-init --nics "$2" >/dev/null
}

# agent NODE ARGS...: run the agent of NODE; sets AGENT_RC, AGENT_OUT and
# AGENT_ERR (stdout and stderr).
agent () {
    node=$1
    shift
    "$VNIB_AGENT" --config "$T/$node/agent.toml" "$@" >"$T/agent.out" 2>"$T/agent.err"
    AGENT_RC=$?
    AGENT_OUT=$(cat "$T/agent.out")
    AGENT_ERR=$(cat "$T/agent.err")
}

# sim_jq NODE NIC FILTER: edit a simulated NIC file with jq.
sim_jq () {
    f=$T/$1/sim/$2.json
    jq "$3" "$f" >"$f.new" && mv "$f.new" "$f"
}

# sim_svc NODE NIC VNIS: the service holding exactly VNIS ("3000,3001").
sim_svc () {
    jq -c --arg v "$3" '.services[] | select((.vnis | map(tostring) | join(",")) == $v)' \
        "$T/$1/sim/$2.json"
}

# sim_count NODE NIC: how many user (non-system, non-default) services.
sim_count () {
    jq '[.services[] | select(.system != true and .svc_id != 1)] | length' \
        "$T/$1/sim/$2.json"
}

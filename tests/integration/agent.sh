# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for tests of the node agent, sourced after lib.sh.
#
# Each simulated node NODE lives in $T/NODE: its agent.toml (sim backend,
# NIC files in $T/NODE/sim, state in $T/NODE/state, the report spool in
# $T/NODE/spool), and its node token
# (mode 0600).  The broker must be started first (BROKER_URL is written
# into the config).  With AGENT_RUN_ROOT set, the state and the NIC files
# are in AGENT_RUN_ROOT/NODE/ instead (the Flux bench puts them on a tmpfs,
# as a node's /run/vnibroker is).

VNIB_AGENT=$BUILD/vnib-agent

# agent_setup NODE NICS [EXTRA-TOML]: a node with NICS simulated NICs.
agent_setup () {
    mkdir -p "$T/$1" "${AGENT_RUN_ROOT:-$T}/$1"
    (umask 077; node_token "$1" >"$T/$1/token")
    cat >"$T/$1/agent.toml" <<EOF
[broker]
url = "$BROKER_URL"
token_file = "$T/$1/token"
fetch_timeout_ms = 2000
request_timeout_ms = 1000
spool_after_ms = 500

[node]
state_dir = "${AGENT_RUN_ROOT:-$T}/$1/state"
spool_dir = "$T/$1/spool"

[nic]
backend = "sim"
sim_dir = "${AGENT_RUN_ROOT:-$T}/$1/sim"
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

# lease_keys: the broker's lease key, $T/lease.key (0600), and its public
# half, $T/lease.pub, as the guide has them made.
lease_keys () {
    (umask 077 && openssl genpkey -algorithm ed25519 -out "$T/lease.key" 2>/dev/null)
    openssl pkey -in "$T/lease.key" -pubout -out "$T/lease.pub"
}

# lease_sign PAYLOAD [TTL] [IAT]: a lease of the JSON object PAYLOAD signed
# with $LEASE_KEY (default $T/lease.key), issued at IAT (default now) for
# TTL seconds (default 120), made with openssl and basenc as
# include/vnib/lease.h describes the format, independently of lib/lease.c.
lease_sign () {
    ls_key=${LEASE_KEY:-$T/lease.key}
    ls_kid=$(openssl pkey -in "$ls_key" -pubout -outform DER | tail -c 32 |
        sha256sum | cut -c1-16)
    ls_iat=${3:-$(date +%s)}
    ls_body=$(jq -c --arg kid "$ls_kid" --argjson iat "$ls_iat" \
        --argjson exp "$((ls_iat + ${2:-120}))" \
        '. + {v: 1, kid: $kid, iat: $iat, exp: $exp}' <<<"$1")
    ls_b64=$(printf %s "$ls_body" | basenc --base64url -w0 | tr -d '=')
    printf 'vnib1.%s' "$ls_b64" >"$T/lease.signed"
    ls_sig=$(openssl pkeyutl -sign -inkey "$ls_key" -rawin \
        -in "$T/lease.signed" | basenc --base64url -w0 | tr -d '=')
    printf 'vnib1.%s.%s' "$ls_b64" "$ls_sig"
}

# lease_payload LEASE: its payload, decoded.
lease_payload () {
    lp_b64=$(printf %s "$1" | cut -d. -f2 | tr -- '-_' '+/')
    while [ $((${#lp_b64} % 4)) -ne 0 ]; do lp_b64="$lp_b64="; done
    printf %s "$lp_b64" | base64 -d
}

# broker_requests: the requests the broker has answered, /metrics's own
# scrapes left out.
broker_requests () {
    curl -sS --max-time 10 "$BROKER_URL/metrics" |
        awk '/^vnib_http_requests_total\{/ && !/route="\/metrics"/ { n += $NF } END { print n + 0 }'
}

# stopped PID: the process is stopped (a SIGSTOP it sent itself).
stopped () {
    [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = T ]
}

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The broker's credential files under root: vnibrokerd run as root refuses
# each of its credential files (tokens file, node key, previous node key,
# TLS key, FM password, FM OAuth client secret, FM mTLS key, FM token key
# and its previous one) when another user (nobody) owns it, and says
# which file and owner; the same files owned by root start it.  vnibctl
# as root still reads a node key of another owner (deploy/README.md 2.3).
# Needs root (to run the broker as root and to chown).
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || skip_all "needs root: the broker run as root, files chowned to nobody"
OTHER=65534 # nobody

pg_start || exit 1
auth_setup
umask 077
openssl rand 32 >"$T/node.key.prev"
openssl rand 32 >"$T/token.key"
openssl rand 32 >"$T/token.key.prev"
printf 'fm-password\n' >"$T/fm.pass"
printf 'fm-client-secret' >"$T/fm.secret"
umask 022
test_ca "broker test CA"
test_cert tls 127.0.0.1 IP:127.0.0.1
test_cert fmclient vnibroker DNS:vnibroker
chown root:root "$T"/tokens "$T"/node.key* "$T"/token.key* "$T"/fm.* "$T"/*.key

# The FM is never reached: the files are read at start, and the broker
# starts while the FM is down.
FM="fm_url = \"http://127.0.0.1:1\"
allow_insecure_http = true
addrs_per_job = 4
token_key_file = \"$T/token.key\"
token_key_previous_file = \"$T/token.key.prev\""
broker_config "$T/basic.toml" "tls_cert = \"$T/tls.pem\"
tls_key = \"$T/tls.key\"

[hwcoll]
enabled = true
auth = \"basic\"
password_file = \"$T/fm.pass\"
$FM"
sed -i "/^node_key_file = /a node_key_previous_file = \"$T/node.key.prev\"\nnode_key_previous_until = \"2099-01-01T00:00:00Z\"" \
    "$T/basic.toml"
broker_config "$T/oauth.toml" "
[hwcoll]
enabled = true
auth = \"oauth\"
token_url = \"http://127.0.0.1:1/oauth/token\"
client_id = \"vnib\"
client_secret_file = \"$T/fm.secret\"
cert_file = \"$T/fmclient.pem\"
key_file = \"$T/fmclient.key\"
$FM"
broker_migrate "$T/basic.toml" || { not_ok "migrate"; finish; }

# starts CONFIG: vnibrokerd (as root) starts on CONFIG: it listens, and
# stops cleanly on SIGTERM.  Its output is in $T/start.log.
starts () {
    "$VNIBROKERD" -c "$1" >"$T/start.log" 2>&1 &
    s_pid=$!
    track "$s_pid"
    wait_for 15 sh -c "grep -q 'listening on' '$T/start.log' || ! kill -0 $s_pid"
    s_ok=1
    grep -q 'listening on' "$T/start.log" || s_ok=0
    kill -TERM "$s_pid" 2>/dev/null
    wait "$s_pid"
    [ "$s_ok" = 1 ]
}

# refused LABEL CONFIG FILE: with FILE owned by nobody (mode 0600 kept),
# vnibrokerd on CONFIG exits 1 and names FILE and uid 65534; with FILE
# owned by root again it starts.
refused () {
    chown "$OTHER:$OTHER" "$3"
    out=$(timeout 15 "$VNIBROKERD" -c "$2" 2>&1)
    rc=$?
    chown root:root "$3"
    expect_eq "$1 owned by nobody: the broker (root) does not start" "$rc" 1
    expect_match "... and names the file and its owner" "$out" \
        "$3: owned by uid $OTHER: a credential file must belong to this user \\(uid 0\\) or root"
}

if starts "$T/basic.toml"; then
    ok "every credential file owned by root: the broker starts (TLS, FM basic)"
else
    not_ok "every credential file owned by root: the broker starts (TLS, FM basic)"
    sed 's/^/#   /' "$T/start.log"
fi
if starts "$T/oauth.toml"; then
    ok "... and with FM OAuth and mTLS"
else
    not_ok "... and with FM OAuth and mTLS"
    sed 's/^/#   /' "$T/start.log"
fi

refused "the tokens file" "$T/basic.toml" "$T/tokens"
refused "the node key" "$T/basic.toml" "$T/node.key"
refused "the previous node key" "$T/basic.toml" "$T/node.key.prev"
refused "the TLS key" "$T/basic.toml" "$T/tls.key"
refused "the FM password file" "$T/basic.toml" "$T/fm.pass"
refused "the FM token key" "$T/basic.toml" "$T/token.key"
refused "the previous FM token key" "$T/basic.toml" "$T/token.key.prev"
refused "the FM OAuth client secret file" "$T/oauth.toml" "$T/fm.secret"
refused "the FM mTLS key" "$T/oauth.toml" "$T/fmclient.key"

# Public files keep no owner rule; the mode rule holds for root too.
chown "$OTHER:$OTHER" "$T/tls.pem"
starts "$T/basic.toml"
expect_eq "a certificate owned by nobody is fine" "$?" 0
chown root:root "$T/tls.pem"
chmod 640 "$T/tokens"
out=$(timeout 15 "$VNIBROKERD" -c "$T/basic.toml" 2>&1)
expect_eq "a tokens file of mode 0640 owned by root: no start" "$?" 1
expect_match "... naming it" "$out" "$T/tokens: mode 0640 is unsafe"
chmod 600 "$T/tokens"
if starts "$T/basic.toml"; then
    ok "every file back to root: the broker starts again"
else
    not_ok "every file back to root: the broker starts again"
    sed 's/^/#   /' "$T/start.log"
fi

# vnibctl as root keeps its documented exemption: a node key of the
# broker's user (here nobody), mode 0600, mints node tokens.
chown "$OTHER:$OTHER" "$T/node.key"
out=$("$BUILD/vnibctl" token node n1 --key-file "$T/node.key" 2>&1)
expect_eq "vnibctl (root) mints a node token from a key owned by nobody" "$?" 0
expect_eq "... the right one" "$out" "$(node_token n1)"
chown root:root "$T/node.key"
finish

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# vnibctl without a broker: usage errors exit 2 and name the problem;
# minted tokens have the formats the broker verifies (checked here against
# sha256sum and openssl, not against our own code); node keys are created
# private and never overwritten; unsafe credential files are refused (a
# foreign owner only when not root); an unreachable broker exits 3 without
# leaking the token.
. "$(dirname "$0")/lib.sh"

VNIBCTL=$BUILD/vnibctl
unset VNIB_URL VNIB_TOKEN VNIB_TOKEN_FILE VNIB_CACERT

vnibctl () {
    "$VNIBCTL" "$@"
}

# usage DESCRIPTION PATTERN ARGS...: exit 2, stderr matching PATTERN.
usage () {
    desc=$1
    pattern=$2
    shift 2
    out=$(vnibctl "$@" 2>&1 >/dev/null)
    rc=$?
    expect_eq "$desc: exit status 2" "$rc" 2
    expect_match "$desc: says so" "$out" "$pattern"
}

# ---- usage errors -----------------------------------------------------------

usage "no command" "^vnibctl: no command given"
usage "unknown command" "unknown command 'frob'" frob
usage "unknown global option" "^vnibctl: unknown option '--bogus'" --bogus pool
usage "unknown command option" "^vnibctl list: unknown option '--colour'" \
    list --colour
usage "option without its argument" "list: option '--uid' needs an argument" \
    list --uid
usage "missing job id" "reserve: missing JOB_ID" \
    reserve --uid 1 --user a --nodes n1
usage "missing --uid" "reserve: --uid N is required" \
    reserve 42 --user a --nodes n1
usage "missing --nodes" "reserve: --nodes HOSTLIST is required" \
    reserve 42 --uid 1 --user a
usage "negative uid" "--uid: '-1' is not a number in 0-4294967294" \
    reserve 42 --uid -1 --user a --nodes n1
usage "uid out of range" "--uid: '4294967295' is not a number in 0-4294967294" \
    reserve 42 --uid 4294967295 --user a --nodes n1
usage "uid with junk" "--uid: '12x' is not a number" \
    reserve 42 --uid 12x --user a --nodes n1
usage "too many vnis" "--vnis: '5' is not a number in 0-4" \
    reserve 42 --uid 1 --user a --nodes n1 --vnis 5
usage "bad hostlist" "--nodes 'n\[1-': " \
    reserve 42 --uid 1 --user a --nodes 'n[1-'
usage "bad job id" "'a/b' is not a valid job id" show a/b
usage "extra argument" "release: unexpected argument 'x'" release 42 x
usage "limit 0" "--limit: '0' is not a number in 1-1000" list --limit 0
usage "limit 1001" "--limit: '1001' is not a number in 1-1000" events --limit 1001
usage "limit not a number" "--limit: 'ten' is not a number in 1-1000" \
    list --limit ten
usage "unknown state" "--state 'gone' is not active, releasing or released" \
    list --state gone
usage "vni out of range" "VNI: '65536' is not a number in 0-65535" vni 65536
usage "vni missing" "vni: missing N" vni
usage "bad cxi state" "--cxi 'gone' is not creating, created, destroyed or failed" \
    report 42 n1 --cxi gone
usage "cxi missing" "report: --cxi STATE is required" report 42 n1
usage "bad service" "--service 'cxi0' is not DEV:SVCID" \
    report 42 n1 --cxi created --service cxi0
usage "bad node name" "'-n1' is not a valid node name" node -- -n1
usage "bad timeout" "--timeout: '0' is not a number of seconds" --timeout 0 pool
usage "bad URL scheme" "'ftp://x': unsupported scheme 'ftp'" --url ftp://x pool
usage "token without subcommand" "token: missing subcommand" token
usage "unknown token subcommand" "token: unknown subcommand 'old'" token old
usage "node role for a named token" "role 'node' is not admin, scheduler or monitor" \
    token new node n1
usage "token name with a space" "name 'a b' must be 1-63 characters" \
    token new admin 'a b'
usage "token new without a name" "token new: expected ROLE and NAME, got 1 argument" \
    token new admin
usage "token node without key" "token node: --key-file FILE is required" \
    token node n1
usage "token key without --out" "token key: --out FILE is required" token key

out=$(vnibctl --help)
expect_eq "--help exits 0" "$?" 0
expect_match "--help documents exit status 3" "$out" "3  broker unreachable"
out=$(vnibctl reserve --help)
expect_eq "reserve --help exits 0" "$?" 0
expect_match "reserve --help describes --vnis" "$out" "--vnis N"
expect_match "--version" "$(vnibctl --version)" '^vnibctl [0-9]+\.[0-9]+'

# ---- token new ----------------------------------------------------------------

out=$(vnibctl token new scheduler slurm)
expect_eq "token new exits 0" "$?" 0
expect_eq "token new prints two lines" "$(printf '%s\n' "$out" | wc -l)" 2
tok=$(printf '%s\n' "$out" | sed -n 1p)
line=$(printf '%s\n' "$out" | sed -n 2p)
expect_match "line 1 is a vnib1. token" "$tok" '^vnib1\.[A-Za-z0-9_-]{43}$'
hash=$(printf %s "$tok" | sha256sum | cut -d' ' -f1)
expect_eq "line 2 is 'ROLE NAME SHA256(token)'" "$line" "scheduler slurm $hash"
tok2=$(vnibctl token new scheduler slurm | sed -n 1p)
if [ "$tok" != "$tok2" ]; then
    ok "every token new is a new token"
else
    not_ok "every token new is a new token"
fi

out=$(vnibctl --json token new monitor grafana)
expect_eq "token new --json exits 0" "$?" 0
jtok=$(printf '%s' "$out" | jq -r .token)
expect_match "--json token" "$jtok" '^vnib1\.[A-Za-z0-9_-]{43}$'
expect_eq "--json role and name" "$(printf '%s' "$out" | jq -r '.role + " " + .name')" \
    "monitor grafana"
expect_eq "--json line" "$(printf '%s' "$out" | jq -r .line)" \
    "monitor grafana $(printf %s "$jtok" | sha256sum | cut -d' ' -f1)"
out=$(vnibctl token new admin root --json | jq -r .role)
expect_eq "--json after the subcommand" "$out" admin

# ---- token key ----------------------------------------------------------------

out=$(vnibctl token key --out "$T/node.key")
expect_eq "token key exits 0" "$?" 0
expect_eq "the key file has mode 0600" "$(stat -c %a "$T/node.key")" 600
expect_eq "the key file holds 32 bytes" "$(stat -c %s "$T/node.key")" 32
cp "$T/node.key" "$T/node.key.orig"
out=$(vnibctl token key --out "$T/node.key" 2>&1)
expect_eq "an existing key is not overwritten: exit 1" "$?" 1
expect_match "... naming the file" "$out" "$T/node.key: file exists; refusing to overwrite"
cmp -s "$T/node.key" "$T/node.key.orig"
expect_eq "... and the key is unchanged" "$?" 0
(umask 000 && vnibctl token key --out "$T/umask.key" >/dev/null)
expect_eq "mode 0600 whatever the umask" "$(stat -c %a "$T/umask.key")" 600
ln -s "$T/elsewhere" "$T/link.key"
vnibctl token key --out "$T/link.key" >/dev/null 2>&1
expect_eq "a symlink is not followed: exit 1" "$?" 1
if [ ! -e "$T/elsewhere" ]; then
    ok "... and nothing is created behind it"
else
    not_ok "... and nothing is created behind it"
fi
out=$(vnibctl token key --out "$T/nodir/k" 2>&1)
expect_eq "an unwritable path exits 1" "$?" 1
expect_match "... naming it" "$out" "$T/nodir/k: No such file or directory"

# ---- token node ---------------------------------------------------------------

# The expected token, computed with openssl: HMAC-SHA256 of "vnib-node:NAME"
# under the key, base64url without padding.
node_token () {
    mac=$(printf 'vnib-node:%s' "$2" |
        openssl dgst -sha256 -mac HMAC \
            -macopt "hexkey:$(od -An -tx1 -v "$1" | tr -d ' \n')" -binary |
        base64 | tr '+/' '-_' | tr -d '=\n')
    echo "vnibnode.$2.$mac"
}

t1=$(vnibctl token node n1 --key-file "$T/node.key")
expect_eq "token node exits 0" "$?" 0
expect_match "a node token has the node form" "$t1" '^vnibnode\.n1\.[A-Za-z0-9_-]{43}$'
if command -v openssl >/dev/null; then
    expect_eq "... and the MAC openssl computes" "$t1" "$(node_token "$T/node.key" n1)"
fi
expect_eq "token node is deterministic" \
    "$(vnibctl token node n1 --key-file "$T/node.key")" "$t1"
t2=$(vnibctl token node n2 --key-file "$T/node.key")
if [ -n "$t2" ] && [ "$t2" != "$t1" ]; then
    ok "another node gets another token"
else
    not_ok "another node gets another token"
fi
t3=$(vnibctl token node n1 --key-file "$T/umask.key")
if [ -n "$t3" ] && [ "$t3" != "$t1" ]; then
    ok "another key gives another token"
else
    not_ok "another key gives another token"
fi
t4=$(vnibctl token node nid001.hsn --key-file "$T/node.key")
expect_match "node names may hold dots" "$t4" '^vnibnode\.nid001\.hsn\.[A-Za-z0-9_-]{43}$'
out=$(vnibctl --json token node n1 --key-file "$T/node.key" | jq -r '.node + " " + .token')
expect_eq "token node --json" "$out" "n1 $t1"

cp "$T/node.key" "$T/open.key"
chmod 644 "$T/open.key"
out=$(vnibctl token node n1 --key-file "$T/open.key" 2>&1)
expect_eq "a key file readable by others is refused: exit 2" "$?" 2
expect_match "... naming the file and its mode" "$out" "$T/open.key: mode 0644 is unsafe"
head -c 16 "$T/node.key" >"$T/short.key"
chmod 600 "$T/short.key"
out=$(vnibctl token node n1 --key-file "$T/short.key" 2>&1)
expect_eq "a short key is refused: exit 2" "$?" 2
expect_match "... saying why" "$out" "$T/short.key: node key is 16 bytes; at least 32"
out=$(vnibctl token node n1 --key-file "$T/missing.key" 2>&1)
expect_eq "a missing key file: exit 2" "$?" 2
expect_match "... naming it" "$out" "$T/missing.key: No such file"

# The guide gives node.key to the broker's user; root still mints tokens
# with it (root reads any file), but the mode rule holds for root too.
if [ "$(id -u)" -eq 0 ]; then
    cp "$T/node.key" "$T/other.key"
    chmod 600 "$T/other.key"
    chown nobody "$T/other.key"
    out=$(vnibctl token node n1 --key-file "$T/other.key" 2>&1)
    expect_eq "root: a 0600 key owned by another user: exit 0" "$?" 0
    expect_eq "... and the same token" "$out" "$t1"
    chmod 640 "$T/other.key"
    out=$(vnibctl token node n1 --key-file "$T/other.key" 2>&1)
    expect_eq "root: a 0640 key owned by another user is refused: exit 2" "$?" 2
    expect_match "... naming its mode" "$out" "$T/other.key: mode 0640 is unsafe"
else
    skip "root minting with another user's key (not root)"
fi

# ---- token files ------------------------------------------------------------

printf 'vnib1.secret-token-value\n' >"$T/token"
chmod 644 "$T/token"
out=$(vnibctl --url http://127.0.0.1:1 --token-file "$T/token" pool 2>&1)
expect_eq "a token file readable by others is refused: exit 2" "$?" 2
expect_match "... naming the file" "$out" "$T/token: mode 0644 is unsafe"
out=$(VNIB_TOKEN_FILE=$T/token vnibctl --url http://127.0.0.1:1 pool 2>&1)
expect_eq "... also through VNIB_TOKEN_FILE" "$?" 2
expect_match "... naming it too" "$out" "$T/token: mode 0644 is unsafe"
out=$(vnibctl --url http://127.0.0.1:1 --token-file "$T/none" pool 2>&1)
expect_eq "a missing token file: exit 2" "$?" 2
expect_match "... naming it" "$out" "$T/none: No such file"
printf 'two words\n' >"$T/bad-token"
chmod 600 "$T/bad-token"
out=$(vnibctl --url http://127.0.0.1:1 --token-file "$T/bad-token" pool 2>&1)
expect_eq "a token file with two words: exit 2" "$?" 2
expect_match "... saying so" "$out" "$T/bad-token: must hold one token on one line"
out=$(vnibctl --cacert "$T/no-ca.pem" --url https://127.0.0.1:1 pool 2>&1)
expect_eq "a missing CA file: exit 2" "$?" 2
expect_match "... naming it" "$out" "CA file $T/no-ca.pem: No such file"

# ---- unreachable broker -----------------------------------------------------

chmod 600 "$T/token"
out=$(vnibctl --url http://127.0.0.1:1 --token-file "$T/token" pool 2>&1)
expect_eq "an unreachable broker exits 3" "$?" 3
expect_match "... naming its URL" "$out" "^vnibctl: cannot reach the broker at http://127.0.0.1:1: "
expect_no_match "... without the token" "$out" "secret-token-value"
for cmd in "show 42" "release 42" "list --all" "events" "vni 1024" "node n1" \
    "reserve 42 --uid 1 --user a --nodes n[1-4]" "report 42 n1 --cxi destroyed"; do
    # shellcheck disable=SC2086
    VNIB_URL=http://127.0.0.1:1 VNIB_TOKEN=vnib1.secret-token-value \
        vnibctl $cmd >"$T/out" 2>"$T/err"
    expect_eq "$cmd: unreachable broker exits 3" "$?" 3
    expect_no_match "$cmd: the token is not printed" "$(cat "$T/out" "$T/err")" \
        "secret-token-value"
done
out=$(vnibctl --url http://no-such-host.invalid:8080 --timeout 5 pool 2>&1)
expect_eq "an unresolvable host exits 3" "$?" 3
expect_match "... naming it" "$out" "broker at http://no-such-host.invalid:8080"

finish

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Configuration: every error names the file and line and exits 2; the
# example file is valid and documents every key; secrets are masked.
. "$(dirname "$0")/lib.sh"

# bad_config NAME CONTENT PATTERN: --check-config must exit 2 and print
# "FILE:LINE: ..." matching PATTERN.
bad_config () {
    printf '%s\n' "$2" >"$T/$1.toml"
    out=$(vnibrokerd --check-config "$T/$1.toml" 2>&1)
    rc=$?
    expect_eq "$1: exit status 2" "$rc" 2
    expect_match "$1: message names file and line" "$out" "$T/$1.toml:$3"
}

bad_config unknown-key '[server]
port = 8080
prot = 8081' '3: server.prot: unknown key'
bad_config unknown-table '[srever]
port = 1' '1: srever: unknown table'
bad_config wrong-type '[server]
port = "8080"' '2: server.port: expected an integer'
bad_config out-of-range '

[server]
port = 70000' '4: server.port: 70000 is out of range 0-65535'
bad_config bad-address '[server]
address = "localhost"' "2: server.address: 'localhost' is not a numeric"
bad_config tls-half '[server]
tls_cert = "/etc/ssl/cert.pem"' '2: server.tls_cert and server.tls_key must be set together'
bad_config bad-level '[log]
level = "loud"' "2: log.level: 'loud' is not one of"
bad_config syntax '[server]
port = = 1' '2: '
bad_config duplicate '[server]
port = 1
port = 2' '3: .*duplicate'
bad_config top-level-key 'port = 1' '1: port: unknown key'
bad_config bad-priority '[server]
priority_addresses = ["10.0.0.1", "slurmctld"]' "2: server.priority_addresses: 'slurmctld' is not a numeric address"
bad_config lease-ttl '[lease]
ttl_s = 5' '2: lease.ttl_s: 5 is out of range 10-86400'
bad_config lease-skew '[lease]
key_file = ""
max_skew_s = 3601' '3: lease.max_skew_s: 3601 is out of range 0-3600'
bad_config priority-host-bits '[server]
priority_addresses = ["10.1.2.3/16"]' "2: server.priority_addresses: '10.1.2.3/16' has bits set past its /16 prefix"

# Credentials over plain http:// are refused unless explicitly allowed.
bad_config http-basic '[hwcoll]
enabled = true
fm_url = "http://fm.example:8000"
auth = "basic"
password_file = "/etc/vnibroker/fm.pass"
addrs_per_job = 8
token_key_file = "/etc/vnibroker/token.key"' \
    '3: hwcoll.fm_url is plain http:// and hwcoll.auth is basic: the credentials would cross the network in clear'
bad_config http-oauth-token-url '[hwcoll]
enabled = true
fm_url = "https://fm.example"
auth = "oauth"
token_url = "http://keycloak.example/token"
client_id = "vnib"
client_secret_file = "/etc/vnibroker/fm.secret"
addrs_per_job = 8
token_key_file = "/etc/vnibroker/token.key"' \
    '5: hwcoll.token_url is plain http:// and hwcoll.auth is oauth'
printf '%s\n' '[hwcoll]
enabled = true
fm_url = "http://fm.example:8000"
auth = "basic"
password_file = "/etc/vnibroker/fm.pass"
addrs_per_job = 8
token_key_file = "/etc/vnibroker/token.key"
allow_insecure_http = true' >"$T/http-allowed.toml"
vnibrokerd --check-config "$T/http-allowed.toml" >/dev/null 2>&1
expect_eq "plain http with credentials and allow_insecure_http = true is valid" "$?" 0
printf '%s\n' '[hwcoll]
enabled = true
fm_url = "http://fm.example:8000"
auth = "none"
addrs_per_job = 8
token_key_file = "/etc/vnibroker/token.key"' >"$T/http-none.toml"
vnibrokerd --check-config "$T/http-none.toml" >/dev/null 2>&1
expect_eq "plain http without credentials is valid" "$?" 0

out=$(vnibrokerd --check-config "$T/missing.toml" 2>&1)
expect_eq "a missing file exits 2" "$?" 2
expect_match "... naming the file" "$out" "$T/missing.toml: No such file"

# The broker itself refuses a bad file the same way, before doing anything.
out=$(vnibrokerd -c "$T/unknown-key.toml" 2>&1)
expect_eq "vnibrokerd -c with a bad file exits 2" "$?" 2
expect_match "... with file:line" "$out" "unknown-key.toml:3: server.prot"

# The example documents every key, with its default, and is valid.
out=$(vnibrokerd --check-config "$TOP/config.example.toml" 2>&1)
expect_eq "config.example.toml is valid" "$?" 0
printf '' >"$T/empty.toml"
defaults=$(vnibrokerd --check-config "$T/empty.toml" | grep -v '^# vnibrokerd effective')
example=$(vnibrokerd --check-config "$TOP/config.example.toml" | grep -v '^# vnibrokerd effective')
expect_eq "config.example.toml sets every key to its default" "$example" "$defaults"
missing=""
for key in $(printf '%s\n' "$defaults" | sed -n 's/^\([a-z_]*\) = .*/\1/p'); do
    grep -Eq "^$key = " "$TOP/config.example.toml" || missing="$missing $key"
done
expect_eq "every key is set in config.example.toml" "$missing" ""

# Secrets are masked in the printout.
# check_conninfo NAME CONNINFO: --check-config of a file NAME.toml that sets
# database.conninfo (TOML escapes and all); sets out.
check_conninfo () {
    printf '[database]\nconninfo = "%s"\n' "$2" >"$T/$1.toml"
    out=$(vnibrokerd --check-config "$T/$1.toml")
}
check_conninfo secret "host=db1 user=vnib password='hunter2 x' dbname=vnibroker"
expect_no_match "passwords in conninfo are masked" "$out" 'hunter2'
expect_match "... and the rest is shown" "$out" "user=vnib password=\*\*\* dbname=vnibroker host=db1"
check_conninfo secret-uri 'postgresql://vnib:hunter2@db1/vnibroker?password=hunter3&sslmode=verify-full'
expect_no_match "URI passwords are masked" "$out" 'hunter[23]'
expect_match "... and the URI stays readable" "$out" 'postgresql://vnib:\*\*\*@db1/vnibroker\?sslmode=verify-full'
# Every form libpq accepts: tab and newline separators, an escaped space,
# sslpassword, a percent-encoded key; the raw string is never printed.
check_conninfo secret-forms 'host=db1\tpassword=hunter4\nsslpassword=hunter5 user=a\\ b password=hunter6\\ x'
expect_no_match "tab, newline and escaped-space passwords are masked" "$out" 'hunter'
expect_match "... sslpassword too" "$out" 'sslpassword=\*\*\*'
check_conninfo secret-uri2 'postgresql://db1/vnibroker?pass%77ord=hunter7&sslpassword=hunter8'
expect_no_match "percent-encoded URI keys are masked" "$out" 'hunter'

out=$(vnibrokerd --bogus 2>&1)
expect_eq "an unknown option exits 2" "$?" 2
vnibrokerd --version | grep -q '^vnibrokerd '
expect_eq "--version prints the version" "$?" 0

# A database that cannot be reached at start: exit 1 with a clear line.
broker_config "$T/nodb.toml"
sed -i "s|host=[^ ]*|host=$T/nowhere|" "$T/nodb.toml"
out=$(timeout 20 "$VNIBROKERD" -c "$T/nodb.toml" 2>&1)
expect_eq "an unreachable database at start exits 1" "$?" 1
expect_match "... saying so" "$out" 'cannot start: database unavailable'
finish

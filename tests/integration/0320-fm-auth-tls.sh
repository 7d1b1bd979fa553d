#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Fabric Manager client against fmsim, through the broker: Basic and
# OAuth (token expiry and refresh), a wrong password, 403, 5xx (JSON and
# an HTML error page), and TLS with a test CA (verification failures are
# errors; the explicit off switch works and is logged).  Every failure
# leaves the VNIs reserved, with a reason that names the failure's class
# and the HTTP status, and never the FM's body.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

pg_start || exit 1
umask 077
printf 'fm-password-%s\n' "$(openssl rand -hex 6)" >"$T/fm.pass"
printf 'wrong\n' >"$T/wrong.pass"
printf 'oauth-secret-%s' "$(openssl rand -hex 6)" >"$T/fm.secret"
openssl rand 32 >"$T/token.key"
umask 022

# A CA and a certificate for 127.0.0.1, and one for another name.
test_ca "fm test CA"
test_cert good good IP:127.0.0.1
test_cert wrongname wrongname DNS:fm.example

# start_broker EXTRA-HWCOLL-TOML: a broker for $FM_URL.
start_broker () {
    broker_config "$T/b.toml" "
[hwcoll]
enabled = true
fm_url = \"$FM_URL\"
addrs_per_job = 8
reserve_timeout_ms = 3000
token_key_file = \"$T/token.key\"
${ALLOW_HTTP-allow_insecure_http = true}
$1"
    broker_migrate "$T/b.toml" && broker_start "$T/b.toml"
}

hw_state () { # reserve a new on-request job; echo "state|reason"
    job=j$(date +%s%N)
    TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"$job\",\"uid\":1,\"user\":\"u\",\"nodes\":\"n1\",\"hwcoll\":\"on\"}"
    [ "$HTTP_STATUS" = 201 ] || echo "status $HTTP_STATUS"
    jq -r '[.hwcoll.state, (.hwcoll.reason // "")] | join("|")' "$T/http.body"
}

# secret_forms_absent LABEL FORM...: with fmsim quoting the Authorization
# header in 403s, a reservation fails with a fixed reason, the FM's text
# is only in the log and in the admin's view of /v1/fabric-manager, and
# no form of the secret is in any reply to a monitor, node or scheduler
# nor in the log.
secret_forms_absent () {
    label=$1
    shift
    hw_state >"$T/hw_state" # not in a subshell: it sets $job
    st=$(cat "$T/hw_state")
    expect_eq "$label, echoed Authorization: unavailable, credentials refused" "$st" \
        'unavailable|Fabric Manager refused our credentials (HTTP 403)'
    replies=$(cat "$T/http.body")
    TOKEN=$MONITOR_TOKEN http GET "/v1/reservations/$job"
    replies="$replies $(cat "$T/http.body")"
    TOKEN=$(node_token n1) http GET "/v1/reservations/$job"
    replies="$replies $(cat "$T/http.body")"
    TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$job"
    replies="$replies $(cat "$T/http.body")"
    for who in MONITOR SCHED; do
        eval "TOKEN=\$${who}_TOKEN" http GET /v1/fabric-manager
        expect_eq "$label: /v1/fabric-manager gives $who a fixed phrase" \
            "$(jq -r .last_error.message "$T/http.body")" 'Fabric Manager refused our credentials (HTTP 403)'
        replies="$replies $(cat "$T/http.body")"
    done
    TOKEN=$ADMIN_TOKEN http GET /v1/fabric-manager
    expect_match "$label: ... and the admin the FM's text, scrubbed" \
        "$(jq -r .last_error.message "$T/http.body")" 'HTTP 403: forbidden .fault injected.: Authorization: (Basic|Bearer) \*\*\*$'
    expect_eq "$label: ... and the phrase as last_error.reason" \
        "$(jq -r .last_error.reason "$T/http.body")" 'Fabric Manager refused our credentials (HTTP 403)'
    replies="$replies $(cat "$T/http.body")"
    expect_match "$label: the log has the FM's text, scrubbed" "$(cat "$BROKER_LOG")" \
        "reservation [0-9]*: .*Fabric Manager refused our credentials \(HTTP 403\): .*Authorization: [A-Za-z]* \*\*\*"
    for form in "$@"; do
        [ -n "$form" ] || continue
        if printf '%s' "$replies" | grep -qF -- "$form"; then
            not_ok "$label: a secret form is in a reply"
        else
            ok "$label: a secret form is in no reply"
        fi
        if grep -qF -- "$form" "$BROKER_LOG"; then
            not_ok "$label: a secret form is in the log"
        else
            ok "$label: ... nor in the log"
        fi
    done
}

# ---- FM down at start ----------------------------------------------------------------
FM_URL=http://127.0.0.1:1
start_broker "auth = \"none\"" || { not_ok "the broker starts while the FM is unreachable"; finish; }
ok "the broker starts while the FM is unreachable"
expect_eq "VNIs are reserved; hwcoll unavailable, unreachable (connection refused)" \
    "$(hw_state)" 'unavailable|Fabric Manager unreachable (connection refused)'
broker_stop

# ---- Basic ------------------------------------------------------------------------
fm_start --auth basic --user cxi --password-file "$T/fm.pass" || { not_ok "fmsim starts"; finish; }
start_broker "auth = \"basic\"
password_file = \"$T/fm.pass\"" || { not_ok "broker starts"; finish; }
expect_eq "Basic auth reserves" "$(hw_state)" "reserved|"
expect_match "plain http with credentials, allowed: warned at start" "$(cat "$BROKER_LOG")" \
    'warning: hwcoll: hwcoll.fm_url is plain http:// .*allow_insecure_http = true.*in clear'
curl -s -o /dev/null -X POST -d '{"echo_auth":true}' "$FM_ADMIN/fmsim/faults"
secret_forms_absent basic "$(head -n 1 "$T/fm.pass")" \
    "$(printf 'cxi:%s' "$(head -n 1 "$T/fm.pass")" | base64 -w0)"
curl -s -o /dev/null -X POST -d '{"echo_auth":false}' "$FM_ADMIN/fmsim/faults"
# An HTML error page (a proxy before a down FM), quoting the request's
# Authorization header beside fmsim's marker: the reason says 503, never
# the page; the admin's message has no page either (only a JSON detail is
# ever quoted), and neither has the log.
fm_fault '{"html_status":503}'
hw_state >"$T/hw_state"
expect_eq "an HTML 503 page: unavailable (HTTP 503)" "$(cat "$T/hw_state")" \
    'unavailable|Fabric Manager unavailable (HTTP 503)'
replies=$(cat "$T/http.body")
TOKEN=$SCHED_TOKEN http GET "/v1/reservations/$job"
expect_json "... the reservation keeps the reason" .hwcoll.reason 'Fabric Manager unavailable (HTTP 503)'
replies="$replies $(cat "$T/http.body")"
TOKEN=$MONITOR_TOKEN http GET /v1/fabric-manager
expect_json "... /v1/fabric-manager gives a monitor the same reason" .last_error.message \
    'Fabric Manager unavailable (HTTP 503)'
replies="$replies $(cat "$T/http.body")"
TOKEN=$ADMIN_TOKEN http GET /v1/fabric-manager
expect_json "... and the admin too, as last_error.reason" .last_error.reason \
    'Fabric Manager unavailable (HTTP 503)'
expect_match "... beside the FM's status in the message" "$(jq -r .last_error.message "$T/http.body")" \
    '^[a-z_]+: FM [A-Z]+ /fabric/collectives/jobs/?: HTTP 503$'
replies="$replies $(cat "$T/http.body")"
expect_no_match "... the page is in no reply" "$replies" 'fmsim-html-error-page|<html|<h1>'
expect_no_match "... nor in the log" "$(cat "$BROKER_LOG")" 'fmsim-html-error-page|<html'
expect_no_match "... nor is the password it quoted" "$replies $(cat "$BROKER_LOG")" \
    "$(printf 'cxi:%s' "$(head -n 1 "$T/fm.pass")" | base64 -w0)"
expect_eq "... nor is it in the audit trail" \
    "$(psql_q "SELECT count(*) FROM events WHERE detail::text LIKE '%fmsim-html-error-page%'")" 0
fm_fault '{"html_status":0}'
expect_eq "the FM back: reserved" "$(hw_state)" "reserved|"
broker_stop
start_broker "auth = \"basic\"
password_file = \"$T/wrong.pass\""
expect_eq "a wrong password: the VNIs are reserved, hwcoll unavailable, credentials refused (401)" \
    "$(hw_state)" 'unavailable|Fabric Manager refused our credentials (HTTP 401)'
expect_match "... and the log has the FM's 401 with the reservation id" "$(cat "$BROKER_LOG")" \
    'hwcoll: reservation [0-9]*: .*: Fabric Manager refused our credentials \(HTTP 401\): .*401'
expect_no_match "the password is not in the log" "$(cat "$BROKER_LOG")" "$(head -n 1 "$T/fm.pass")"
broker_stop
chmod 644 "$T/wrong.pass"
out=$(timeout 20 "$VNIBROKERD" -c "$T/b.toml" 2>&1)
expect_eq "a password file readable by others stops the start" "$?" 1
expect_match "... naming it" "$out" 'wrong.pass: mode 0644 is unsafe'
chmod 600 "$T/wrong.pass"
grep -v '^allow_insecure_http' "$T/b.toml" >"$T/b-http.toml"
out=$(timeout 20 "$VNIBROKERD" -c "$T/b-http.toml" 2>&1)
expect_eq "basic auth to a plain http:// FM without allow_insecure_http: no start" "$?" 2
expect_match "... saying why" "$out" 'hwcoll.fm_url is plain http:// and hwcoll.auth is basic'
kill -TERM "$FM_PID"

# ---- OAuth -------------------------------------------------------------------------
fm_start --auth oauth --client-id vnib --client-secret-file "$T/fm.secret" --token-ttl 300 \
    || { not_ok "fmsim (oauth) starts"; finish; }
start_broker "auth = \"oauth\"
token_url = \"$FM_URL/oauth/token\"
client_id = \"vnib\"
client_secret_file = \"$T/fm.secret\"" || { not_ok "broker starts"; finish; }
expect_eq "OAuth client credentials reserve" "$(hw_state)" "reserved|"
curl -s -o /dev/null -X POST -d '{"expire_tokens":true}' "$FM_ADMIN/fmsim/faults"
expect_eq "after the FM expired every token, the client refreshes and goes on" "$(hw_state)" "reserved|"
curl -s -o /dev/null -X POST -d '{"forbid":true}' "$FM_ADMIN/fmsim/faults"
expect_eq "403: unavailable, credentials refused (403)" "$(hw_state)" \
    'unavailable|Fabric Manager refused our credentials (HTTP 403)'
expect_match "... and the log says 403" "$(tail -n 3 "$BROKER_LOG")" \
    'Fabric Manager refused our credentials \(HTTP 403\): .*403'
curl -s -o /dev/null -X POST -d '{"forbid":false,"error_rate":1.0}' "$FM_ADMIN/fmsim/faults"
hw_state >"$T/hw_state"
expect_match "5xx: unavailable, with the status" "$(cat "$T/hw_state")" \
    '^unavailable\|Fabric Manager unavailable \(HTTP 50[03]\)$'
expect_no_match "... not the FM's JSON detail" "$(cat "$T/hw_state")" 'injected'
expect_match "... which is in the log" "$(cat "$BROKER_LOG")" \
    'Fabric Manager unavailable \(HTTP 50[03]\): .*HTTP 50[03]: injected fault'
curl -s -o /dev/null -X POST -d '{"error_rate":0,"outage":"drop"}' "$FM_ADMIN/fmsim/faults"
expect_eq "a dropped connection: unavailable, unreachable (connection dropped)" "$(hw_state)" \
    'unavailable|Fabric Manager unreachable (connection dropped)'
curl -s -o /dev/null -X POST -d '{"outage":"none"}' "$FM_ADMIN/fmsim/faults"
expect_eq "and back when the FM recovers" "$(hw_state)" "reserved|"
curl -s -o /dev/null -X POST -d '{"echo_auth":true}' "$FM_ADMIN/fmsim/faults"
secret_forms_absent oauth "$(cat "$T/fm.secret")" \
    "$(printf 'vnib:%s' "$(cat "$T/fm.secret")" | base64 -w0)"
curl -s -o /dev/null -X POST -d '{"echo_auth":false}' "$FM_ADMIN/fmsim/faults"
expect_no_match "the client secret is not in the log" "$(cat "$BROKER_LOG")" "$(cat "$T/fm.secret")"
broker_stop
grep -v '^allow_insecure_http' "$T/b.toml" >"$T/b-http.toml"
out=$(timeout 20 "$VNIBROKERD" -c "$T/b-http.toml" 2>&1)
expect_eq "oauth to a plain http:// FM without allow_insecure_http: no start" "$?" 2
expect_match "... saying why" "$out" 'hwcoll.fm_url is plain http:// and hwcoll.auth is oauth'
kill -TERM "$FM_PID"

# ---- TLS ---------------------------------------------------------------------------
fm_start --tls-cert "$T/good.pem" --tls-key "$T/good.key" || { not_ok "fmsim (TLS) starts"; finish; }
expect_match "fmsim speaks https" "$FM_URL" '^https://'
start_broker "auth = \"none\"
ca_file = \"$T/ca.pem\"" || { not_ok "broker starts"; finish; }
expect_eq "TLS verified against the test CA reserves" "$(hw_state)" "reserved|"
broker_stop
start_broker "auth = \"none\""
expect_eq "without the CA, verification fails: unavailable, not trusted" \
    "$(hw_state)" 'unavailable|Fabric Manager not trusted (its TLS certificate did not verify)'
expect_match "... and the log names the certificate" "$(tail -n 3 "$BROKER_LOG")" \
    'Fabric Manager not trusted .*: .*(certificate|SSL|TLS)'
broker_stop
start_broker "auth = \"none\"
tls_verify = false"
expect_eq "tls_verify = false reserves" "$(hw_state)" "reserved|"
expect_match "... and the broker warns at start" "$(cat "$BROKER_LOG")" 'TLS verification of the Fabric Manager is OFF'
broker_stop
kill -TERM "$FM_PID"
fm_start --tls-cert "$T/wrongname.pem" --tls-key "$T/wrongname.key" || { not_ok "fmsim starts"; finish; }
start_broker "auth = \"none\"
ca_file = \"$T/ca.pem\""
expect_eq "a certificate for another host name is refused" "$(hw_state)" \
    'unavailable|Fabric Manager not trusted (its TLS certificate did not verify)'
broker_stop
finish

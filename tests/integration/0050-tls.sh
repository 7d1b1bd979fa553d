#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# HTTPS: with a certificate and key the listener speaks TLS only; clients
# verify it against the test CA; unsafe key permissions stop the start.
. "$(dirname "$0")/lib.sh"

pg_start || exit 1

# A throwaway CA and a server certificate for 127.0.0.1.
test_ca "vnib test CA"
test_cert server 127.0.0.1 IP:127.0.0.1
expect_eq "test CA and certificate generated" "$(test -s "$T/server.pem" && echo yes)" yes

broker_config "$T/b.toml" "tls_cert = \"$T/server.pem\"
tls_key = \"$T/server.key\""
broker_migrate "$T/b.toml" || { not_ok "migrate"; finish; }
broker_start "$T/b.toml" || { not_ok "TLS broker starts"; finish; }
expect_match "the broker announces https" "$BROKER_URL" '^https://127\.0\.0\.1:[0-9]+$'

http GET /healthz --cacert "$T/ca.pem"
expect_status "GET /healthz over verified TLS" 200

http GET /healthz
expect_match "without the CA the client refuses the certificate" "$HTTP_STATUS" \
    'curl-failed:.*(certificate|SSL)'

# Protocol versions and ciphers: TLS 1.2+ with forward secrecy only.
# tls_try prints openssl's "New, PROTOCOL, Cipher is CIPHER" line;
# a refused handshake gives "New, (NONE), Cipher is (NONE)".
hostport=${BROKER_URL#https://}
tls_try () {
    echo | timeout 10 openssl s_client -connect "$hostport" -CAfile "$T/ca.pem" "$@" 2>&1 |
        grep -m1 '^New, '
}
expect_eq "TLS 1.2 with ECDHE is accepted" \
    "$(tls_try -tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256)" \
    "New, TLSv1.2, Cipher is ECDHE-RSA-AES128-GCM-SHA256"
expect_match "TLS 1.3 is accepted" "$(tls_try -tls1_3)" '^New, TLSv1\.3, Cipher is TLS_'
expect_match "TLS 1.1 is refused" "$(tls_try -tls1_1 -cipher 'DEFAULT@SECLEVEL=0')" 'Cipher is \(NONE\)'
expect_match "TLS 1.0 is refused" "$(tls_try -tls1 -cipher 'DEFAULT@SECLEVEL=0')" 'Cipher is \(NONE\)'
expect_match "AES128-SHA (static RSA, CBC) is refused" \
    "$(tls_try -tls1_2 -cipher AES128-SHA)" 'Cipher is \(NONE\)'
expect_match "static RSA key exchange is refused" \
    "$(tls_try -tls1_2 -cipher AES128-GCM-SHA256)" 'Cipher is \(NONE\)'
expect_match "CBC ciphers are refused, also with ECDHE" \
    "$(tls_try -tls1_2 -cipher ECDHE-RSA-AES128-SHA)" 'Cipher is \(NONE\)'

plain=$(printf '%s' "$BROKER_URL" | sed 's/^https/http/')
out=$(curl -sS --max-time 5 "$plain/healthz" 2>&1)
expect_no_match "plain HTTP is not served on the TLS port" "$out" '"status":"ok"'
broker_stop

# server.tls_priorities overrides the default; a bad string stops the start.
broker_config "$T/old.toml" "tls_cert = \"$T/server.pem\"
tls_key = \"$T/server.key\"
tls_priorities = \"NORMAL:-VERS-ALL:+VERS-TLS1.2\""
broker_start "$T/old.toml" || not_ok "broker with tls_priorities starts"
hostport=${BROKER_URL#https://}
expect_eq "server.tls_priorities is used (static RSA allowed when asked)" \
    "$(tls_try -tls1_2 -cipher AES128-GCM-SHA256)" "New, TLSv1.2, Cipher is AES128-GCM-SHA256"
expect_match "... and TLS 1.3 left out when asked" "$(tls_try -tls1_3)" 'Cipher is \(NONE\)'
broker_stop
broker_config "$T/badprio.toml" "tls_cert = \"$T/server.pem\"
tls_key = \"$T/server.key\"
tls_priorities = \"NO-SUCH-PRIORITY\""
out=$(timeout 20 "$VNIBROKERD" -c "$T/badprio.toml" 2>&1)
expect_eq "an invalid server.tls_priorities stops the start (exit 1)" "$?" 1
expect_match "... naming the setting" "$out" 'tls_priorities'

# A key readable by others is refused at start, with the reason.
chmod 644 "$T/server.key"
out=$(timeout 20 "$VNIBROKERD" -c "$T/b.toml" 2>&1)
expect_eq "a world-readable key stops the start (exit 1)" "$?" 1
expect_match "... naming the file and the mode" "$out" "server.key: mode 0644 is unsafe"
chmod 640 "$T/server.key"
out=$(timeout 20 "$VNIBROKERD" -c "$T/b.toml" 2>&1)
expect_eq "a group-readable key is refused too" "$?" 1
chmod 600 "$T/server.key"

# A certificate that does not parse.
echo "not a certificate" >"$T/bad.pem"
broker_config "$T/bad.toml" "tls_cert = \"$T/bad.pem\"
tls_key = \"$T/server.key\""
out=$(timeout 20 "$VNIBROKERD" -c "$T/bad.toml" 2>&1)
expect_eq "a broken certificate stops the start (exit 1)" "$?" 1

# Plain HTTP on a non-loopback address warns at start.
broker_config "$T/any.toml"
sed -i 's/address = "127.0.0.1"/address = "0.0.0.0"/' "$T/any.toml"
broker_start "$T/any.toml" || not_ok "broker on 0.0.0.0 starts"
expect_match "plain HTTP off loopback logs a warning" "$(cat "$BROKER_LOG")" \
    'warning: server: plain HTTP on non-loopback address 0.0.0.0'
broker_stop
finish

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The broker's handlers called in-process, with no HTTP in between
# (tests/inproc/: build/tests/inproc/test_handlers), against this test's
# own PostgreSQL: reserve, idempotent retries, release and quarantine,
# roles, invalid JSON, unknown jobs, pool counts, events, and an agent's
# report that ends a quarantine.  Each cmocka test becomes one TAP line.
. "$(dirname "$0")/lib.sh"

BIN=$BUILD/tests/inproc/test_handlers
[ -x "$BIN" ] || { not_ok "$BIN is built (make tests)"; finish; }
pg_start || { not_ok "PostgreSQL starts"; finish; }

VNIB_TEST_CONNINFO="host=$PGSOCK dbname=vnibroker user=vnib" \
    CMOCKA_MESSAGE_OUTPUT=TAP "$BIN" >"$T/inproc.out" 2>&1
rc=$?
while IFS= read -r line; do
    case "$line" in
        "ok "*) ok "${line#ok * - }" ;;
        "not ok "*) not_ok "${line#not ok * - }" ;;
        *) echo "# $line" ;;
    esac
done <"$T/inproc.out"
expect_eq "test_handlers exits 0 (no failure, crash or sanitizer report)" "$rc" 0
plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$T/inproc.out")
expect_eq "every planned test ran (${plan:-no} plan)" \
    "$(grep -Ec '^(not )?ok ' "$T/inproc.out")" "${plan:-none}"

finish

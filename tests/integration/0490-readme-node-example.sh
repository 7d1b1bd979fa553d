#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# README's `vnibctl --json node` example works as written: GET
# /v1/nodes/NODE is for an admin token or NODE's own node token, so the
# scheduler's token (the one the README exports above it) is refused with
# 403, and the example must name another token.
. "$(dirname "$0")/lib.sh"

VNIBCTL=$BUILD/vnibctl
unset VNIB_URL VNIB_TOKEN VNIB_TOKEN_FILE VNIB_CACERT

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3009)"

TOKEN=$SCHED_TOKEN http GET /v1/nodes/tux3
expect_status "the scheduler's token may not read a node" 403
TOKEN=$ADMIN_TOKEN http GET /v1/nodes/tux3
expect_status "an admin token may" 200
TOKEN=$(node_token tux3) http GET /v1/nodes/tux3
expect_status "... and so may tux3's own node token" 200
VNIB_URL=$BROKER_URL VNIB_TOKEN=$ADMIN_TOKEN "$VNIBCTL" --json node tux3 >/dev/null
expect_eq "vnibctl --json node tux3 with an admin token exits 0" "$?" 0

# The README: the node example sets its own token, not the scheduler's.
line=$(grep -E '^[^#]*vnibctl --json node ' "$TOP/README.md")
expect_match "README has the node example" "$line" 'vnibctl --json node'
expect_match "... with a token of its own" "$line" 'VNIB_TOKEN_FILE=|--token-file'
expect_no_match "... that is not the scheduler's" "$line" 'slurm\.token'
finish

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# README's `vnibctl --json node` example works as written: GET
# /v1/nodes/NODE is for the readers' tokens (admin, scheduler, monitor)
# and NODE's own node token, so the scheduler's token that the README
# exports above it reads the node; another node's token is refused, and
# clearing a drain (`--undrain`) takes an admin token, as the comment
# above the example says.
. "$(dirname "$0")/lib.sh"

VNIBCTL=$BUILD/vnibctl
unset VNIB_URL VNIB_TOKEN VNIB_TOKEN_FILE VNIB_CACERT

pg_start || exit 1
broker_up "$T/b.toml" "$(vni_pool 3000-3009)"

for who in SCHED MONITOR ADMIN; do
    eval "tok=\$${who}_TOKEN"
    TOKEN=$tok http GET /v1/nodes/tux3
    expect_status "the $who token reads a node" 200
done
TOKEN=$(node_token tux3) http GET /v1/nodes/tux3
expect_status "... and so does tux3's own node token" 200
TOKEN=$(node_token tux4) http GET /v1/nodes/tux3
expect_status "another node's token may not" 403
TOKEN=$SCHED_TOKEN http DELETE /v1/nodes/tux3/drain
expect_status "the scheduler's token may not undrain" 403
umask 077
printf '%s\n' "$SCHED_TOKEN" >"$T/slurm.token"
umask 022
VNIB_URL=$BROKER_URL VNIB_TOKEN_FILE=$T/slurm.token "$VNIBCTL" --json node tux3 >"$T/node.json"
expect_eq "vnibctl --json node tux3 with the scheduler's token file exits 0" "$?" 0
expect_eq "... and prints the node" "$(jq -r .node "$T/node.json")" tux3

# The README: the node example follows the scheduler's exported token,
# and says what undrain needs.
line=$(grep -E '^[^#]*vnibctl --json node ' "$TOP/README.md")
expect_match "README has the node example" "$line" 'vnibctl --json node tux3'
expect_match "... under the scheduler's exported token file" \
    "$(grep -B12 -E '^[^#]*vnibctl --json node ' "$TOP/README.md")" 'export .*VNIB_TOKEN_FILE=[^ ]*slurm\.token'
expect_match "... and says undrain takes an admin token" \
    "$(grep -B3 -E '^[^#]*vnibctl --json node ' "$TOP/README.md")" 'undrain.*admin token'
finish

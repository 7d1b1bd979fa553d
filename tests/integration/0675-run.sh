#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `make run` (deploy/local/run.sh) does what README.md's first command
# promises: it installs and builds only what it runs (no Slurm package,
# source tree or plugin); in a private run folder and port it creates its
# tokens, starts fmsim and vnibrokerd, prints the status page's address
# with the monitor token, serves /ui/ as text/html (and / redirects
# there), the printed scheduler example reserves, and TERM stops the
# broker, fmsim and the database it started.
. "$(dirname "$0")/lib.sh"

# What `make run` would do into an empty BUILD: deps.sh run, then only
# the three programs run.sh starts.
plan=$(make --no-print-directory -n -C "$TOP" BUILD="$T/plan" run 2>&1)
expect_match "make run installs only the broker's packages" "$plan" \
    '^sh deploy/tools/deps.sh run$'
expect_eq "make run links vnibrokerd, vnibctl and fmsim, nothing else" \
    "$(printf '%s\n' "$plan" | grep -oE -- "-o $T/plan/[^ ]+" | grep -v '\.o$' |
        sed "s|.*/||" | sort | tr '\n' ' ')" "fmsim vnibctl vnibrokerd "
expect_no_match "make run fetches nothing of Slurm and builds no plugin" "$plan" \
    'slurm-src|spank|switch_vnib|/pic/'

RUN=$T/run
PORT=$(pick_port) || skip_all "no free port"
FMPORT=$(pick_port) || skip_all "no free port"
BROKER_URL=http://127.0.0.1:$PORT

run_folder "$RUN" || { not_ok "a PostgreSQL cluster"; finish; }

RUN_PID=""
trap 'stop_script "$RUN_PID"; cleanup' EXIT

# setsid: run.sh's own process group, as a terminal's Ctrl-C would have.
VNIB_RUN_DIR=$RUN VNIB_PORT=$PORT VNIB_FMSIM_PORT=$FMPORT \
    setsid sh "$TOP/deploy/local/run.sh" "$BUILD" >"$T/run.out" 2>&1 &
RUN_PID=$!

ready () { curl -sf "$BROKER_URL/readyz" >/dev/null; }
if wait_for 90 ready; then
    ok "make run's broker gets ready"
else
    not_ok "make run's broker gets ready"
    sed 's/^/#   /' "$T/run.out" | tail -n 30
    finish
fi

expect_eq "it prints the status page's address with the monitor token" \
    "$(sed -n 's/^ *status page: *//p' "$T/run.out")" \
    "$BROKER_URL/ui/#token=$(cat "$RUN/monitor.token")"

TOKEN=""
http GET /ui/
expect_status "GET /ui/" 200
expect_match "... as text/html" "$(header Content-Type)" '^text/html'
expect_match "... the page" "$HTTP_BODY" '<title>[^<]*vnibroker'
http GET /
expect_status "GET / redirects" 302
expect_eq "... to /ui/" "$(header Location)" /ui/

TOKEN=$(cat "$RUN/monitor.token") http GET /v1/status
expect_status "the monitor token reads /v1/status" 200
expect_json "... with the pool" .pool.ranges 1024-65535

# The scheduler example run.sh prints.
TOKEN=$(cat "$RUN/scheduler.token") http POST /v1/reservations -d \
    '{"job_id":"42","uid":1000,"user":"alice","nodes":"node[1-4]"}'
expect_status "the printed reserve example" 201
TOKEN=$(cat "$RUN/node1.token") http GET /v1/reservations/42
expect_status "... and node1's view of it" 200

kill -TERM "$RUN_PID"
if wait_for 60 sh -c "! kill -0 $RUN_PID"; then
    ok "TERM stops make run"
else
    not_ok "TERM stops make run"
fi
left=$(pgrep -f "$RUN/" 2>/dev/null | tr '\n' ' ')
expect_eq "nothing it started is left running" "$left" ""
finish

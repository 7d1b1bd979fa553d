#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The job-manager's reactor never waits on the broker.  A proxy in front of
# the broker holds every request 2 s; while one job's reserve is in flight,
# the job-manager answers a jobtap query, a second job's submission and
# `flux jobs` (job-list) within 100 ms each, timed around the RPC alone
# (flux python, so that no command's start-up is counted).  Then ten jobs
# submitted at once are reserved in parallel: the plugin's four threads
# are seen busy at once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"
. "$(dirname "$0")/flux.sh"

flux_require
flux_cluster

# The proxy: every chunk a client sends waits DELAY seconds.
cat >"$T/delay.py" <<'EOF'
import socket, sys, threading, time
up_host, up_port, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(64)
print(ls.getsockname()[1], flush=True)
def pipe(src, dst, wait):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if wait:
                time.sleep(delay)
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
def serve(c):
    u = socket.create_connection((up_host, up_port))
    threading.Thread(target=pipe, args=(c, u, True), daemon=True).start()
    pipe(u, c, False)
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF
port=${BROKER_URL##*:}
/usr/bin/python3 "$T/delay.py" 127.0.0.1 "$port" 2 >"$T/proxy.port" 2>"$T/proxy.err" &
track $!
wait_for 10 test -s "$T/proxy.port" || { not_ok "the proxy starts"; finish; }
DIRECT_URL=$BROKER_URL
BROKER_URL=http://127.0.0.1:$(cat "$T/proxy.port")
FLUX_TIMEOUT_MS=10000 FLUX_RESERVE_TIMEOUT_MS=20000 flux_setup
BROKER_URL=$DIRECT_URL
flux_start || { not_ok "flux starts"; flux_dump_logs; finish; }
ok "Flux is up, the plugin talking to the broker through a 2 s delay"

cat >"$T/probe.py" <<'EOF'
import json, sys, time
import flux
from flux.job import JobspecV1, JobList
h = flux.Flux()
def ms(f):
    t = time.monotonic()
    f()
    return round((time.monotonic() - t) * 1000, 1)
out = {
    "query": ms(lambda: h.rpc("job-manager.jobtap-query", {"name": "vnib-jobtap.so"}).get()),
    "submit": ms(lambda: flux.job.submit(h, JobspecV1.from_command(["true"], num_nodes=1))),
    "list": ms(lambda: JobList(h, max_entries=100).jobs()),
}
print(json.dumps(out))
EOF
probe () { fluxc python "$T/probe.py"; }
probe >/dev/null # warm the bindings' caches

base=$(probe)
echo "# idle:               $base"
t0=$(date +%s%N)
id=$(fluxc submit -N1 true)
wait_for 5 sh -c "$FLUX job eventlog $id | grep -q 'prolog-start.*vnibroker'"
during=$(probe)
held=$(fluxc job eventlog "$id" | grep -c cray-slingshot)
echo "# one reserve in flight: $during"
expect_eq "the probe ran while the job's reserve was in flight" "$held" 0
for k in query submit list; do
    v=$(jq -r ".$k" <<<"$during")
    expect_eq "job-manager $k answers within 100 ms with a reserve in flight (${v} ms)" \
        "$(awk -v v="$v" 'BEGIN { print (v < 100) ? "yes" : "no" }')" yes
done
fluxc job attach "$id" >/dev/null 2>&1
t1=$(date +%s%N)
expect_eq "the held job then runs" "$(fluxc jobs -no {result} "$id")" COMPLETED
ms=$(((t1 - t0) / 1000000))
expect_eq "... after at least the proxy's 2 s (${ms} ms)" "$([ "$ms" -ge 2000 ] && echo yes)" yes

# ---- ten at once: reserved in parallel --------------------------------------
t0=$(date +%s%N)
ids=$(fluxc submit --cc=1-10 -n1 true)
most=0
for _ in $(seq 1 40); do
    r=$(flux_query | jq -r .calls.running)
    [ "$r" -gt "$most" ] && most=$r
    [ "$most" -ge 4 ] && break
    sleep 0.1
done
for j in $ids; do fluxc job attach "$j" >/dev/null 2>&1; done
t1=$(date +%s%N)
echo "# ten one-core jobs, each reserve held 2 s: all done in $(((t1 - t0) / 1000000)) ms"
expect_eq "ten jobs completed" "$(for j in $ids; do fluxc jobs -no {result} "$j"; done | grep -c COMPLETED)" 10
expect_eq "their reserves ran in parallel: all four threads busy at once (seen: $most)" "$most" 4

flux_stop
finish

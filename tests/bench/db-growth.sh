#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# db-growth.sh [JOBS [BIG]]: the database's growth per job, for the
# figures of deploy/README.md, section 3.4 (capacity planning).  Not part
# of `make check` or `make bench`; run by hand after `make`:
#   bash tests/bench/db-growth.sh 1000 3
# It starts a private PostgreSQL and a broker (tests/integration/lib.sh),
# then runs JOBS jobs of 4 nodes (default 1000) and BIG jobs of 1,000
# nodes (default 3) through the whole cycle: reserve, each node reports
# creating and created, release, each node reports destroyed.  Before and
# after each batch it prints every table's pg_total_relation_size (with
# indexes, after VACUUM) and row estimate.  Node reports are not rate
# limited here (server.report_rate = 0).
TOP=$(cd "$(dirname "$0")/../.." && pwd)
. "$TOP/tests/integration/lib.sh"
JOBS=${1:-1000}
BIG=${2:-3}

# drive URL SCHED-TOKEN JOBS NODES PREFIX: the cycle above, JOBS jobs of
# NODES nodes each, named PREFIX<n> on nodes PREFIXn<n>, over one
# kept-alive connection; node tokens are derived from $T/node.key.
drive () {
    python3 - "$@" "$(od -An -v -tx1 "$T/node.key" | tr -d ' \n')" <<'EOF'
import base64, hashlib, hmac, http.client, json, sys, urllib.parse
url, sched, jobs, nodes, prefix, keyhex = sys.argv[1:7]
jobs, nodes, key = int(jobs), int(nodes), bytes.fromhex(keyhex)
u = urllib.parse.urlparse(url)
conn = http.client.HTTPConnection(u.hostname, u.port)

def call(method, path, token, body=None):
    headers = {"Authorization": "Bearer " + token}
    if body is not None:
        headers["Content-Type"] = "application/json"
        body = json.dumps(body)
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    data = r.read()
    if r.status >= 300:
        sys.exit(f"{method} {path}: {r.status} {data[:200]!r}")
    return json.loads(data) if data else None

def node_token(name):
    mac = hmac.new(key, b"vnib-node:" + name.encode(), hashlib.sha256).digest()
    return "vnibnode.%s.%s" % (name, base64.urlsafe_b64encode(mac).decode().rstrip("="))

for j in range(jobs):
    job, first = f"{prefix}{j}", j * nodes
    names = [f"{prefix}n{first + i}" for i in range(nodes)]
    tokens = [node_token(n) for n in names]
    rid = call("POST", "/v1/reservations", sched,
               {"job_id": job, "uid": 1000, "user": "alice",
                "nodes": f"{prefix}n[{first}-{first + nodes - 1}]"})["id"]
    for cxi in ("creating", "created"):
        for n, t in zip(names, tokens):
            body = {"cxi": cxi, "reservation_id": rid}
            if cxi == "created":
                body["services"] = [{"device": "cxi0", "svc_id": 5},
                                    {"device": "cxi1", "svc_id": 5}]
            call("PUT", f"/v1/reservations/{job}/nodes/{n}", t, body)
    call("DELETE", f"/v1/reservations/{job}", sched)
    for n, t in zip(names, tokens):
        call("PUT", f"/v1/reservations/{job}/nodes/{n}", t,
             {"cxi": "destroyed", "reservation_id": rid})
EOF
}

# sizes FILE: "table|bytes|rows" for every table of the schema.
sizes () {
    psql_q "VACUUM ANALYZE" && psql_q "
        SELECT c.relname, pg_total_relation_size(c.oid), c.reltuples::bigint
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 1" >"$1"
}

pg_start || exit 1
broker_config "$T/b.toml" "report_rate = 0"
sed -i 's/^level = "debug"/level = "info"/' "$T/b.toml"
broker_migrate "$T/b.toml" || { cat "$T/migrate.log"; exit 1; }
broker_start "$T/b.toml" || exit 1
sizes "$T/s0" || exit 1
drive "$BROKER_URL" "$SCHED_TOKEN" "$JOBS" 4 j || exit 1
sizes "$T/s1" || exit 1
drive "$BROKER_URL" "$SCHED_TOKEN" "$BIG" 1000 b || exit 1
sizes "$T/s2" || exit 1
echo "table                   bytes: empty, after ${JOBS}x4 (rows), after ${BIG}x1000 (rows); per job"
paste -d'|' "$T/s0" "$T/s1" "$T/s2" | awk -F'|' -v a="$JOBS" -v b="$BIG" '{
    printf "%-22s %9d %10d (%6d) %10d (%6d)   %8.0f %10.0f\n",
        $1, $2, $5, $6, $8, $9, ($5 - $2) / a, (b ? ($8 - $5) / b : 0) }'

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A fragmented job: a node list of more than 64 ranges (issue 31 item 4).
# Its nodes, and only they, read it (200 with the job, else 403
# forbidden), report on it, and are judged so for its steps, whether the
# node-fetch cache answers (broker A, node_cache_ms = 60 s, filled first;
# the job's release through B, which A does not see, shows that A's
# answers were the cache's) or the database (broker B, node_cache_ms = 0).
# Names next to a member's are judged as the names they are: node1 in,
# node10 out; pad01 in, pad1 out; ten10 in, ten1 out; n100 (unpadded, in
# "n[098-100]") in, n0100 out; another suffix or none.  Then, with the
# job requeued over and over on two alternating fragmented node lists
# through both brokers, every 200 a node gets shows a reservation whose
# node list holds that node.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || skip_all "python3 is not installed"
pg_start || exit 1
broker_config "$T/a.toml" 'node_cache_ms = 60000
report_rate = 0'
broker_config "$T/b.toml" 'node_cache_ms = 0
report_rate = 0'
broker_migrate "$T/a.toml" || { not_ok "migrate"; finish; }
broker_start_as A "$T/a.toml"
broker_start_as B "$T/b.toml"

# 100 single-node ranges node1, node3, ..., node199, and 8 more (n098-n099
# and n100 are two: widths 3 and 0).
ODD=$(seq -s, 1 2 199)
NODES="node[$ODD],pad[01,03],ten[10,20],n[098-100],gpu7-ib,login"
IN="node1 node3 node199 pad01 pad03 ten10 ten20 n098 n099 n100 gpu7-ib login"
OUT="node10 node2 node01 node200 node1990 node pad1 pad3 pad001 ten1 ten100
     n0100 n98 n101 gpu7 gpu7-ib0 gpu07-ib login1"

BROKER_URL=$URL_A TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d "{\"job_id\":\"frag\",\"uid\":1,\"user\":\"u\",\"nodes\":\"$NODES\"}"
expect_status "a job of 108 ranges is reserved" 201
RID=$(jq .id "$T/http.body")
expect_eq "... its ranges as the database keeps them" \
    "$(psql_q "SELECT count(*) FROM reservation_ranges WHERE reservation_id = $RID")" 108

# get_as URL NODE: "STATUS JOB-OR-ERROR-CODE" of NODE's GET of the job.
get_as () {
    body=$(curl -s -w '\n%{http_code}' -H "Authorization: Bearer $(node_token "$2")" \
        "$1/v1/reservations/frag")
    code=$(printf '%s' "$body" | tail -n 1)
    printf '%s %s\n' "$code" \
        "$(printf '%s' "$body" | sed '$d' | jq -r '.job_id // .error.code')"
}

get_as "$URL_A" node1 >/dev/null # fills A's cache
for via in A B; do
    eval "url=\$URL_$via"
    for n in $IN; do
        expect_eq "$via: member $n reads the job" "$(get_as "$url" "$n")" "200 frag"
    done
    for n in $OUT; do
        expect_eq "$via: $n, not in the job, is refused" "$(get_as "$url" "$n")" \
            "403 forbidden"
    done
done

# report_as URL NODE: the status of NODE's report "creating" on the job.
report_as () {
    curl -s -o "$T/report.body" -w '%{http_code}' -X PUT \
        -H "Authorization: Bearer $(node_token "$2")" \
        -H 'Content-Type: application/json' \
        -d "{\"cxi\":\"creating\",\"reservation_id\":$RID}" \
        "$1/v1/reservations/frag/nodes/$2"
}
for n in $IN; do
    expect_eq "member $n's report is accepted" "$(report_as "$URL_B" "$n")" 200
done
for n in $OUT; do
    expect_eq "$n's report is refused (403 forbidden)" \
        "$(report_as "$URL_A" "$n") $(jq -r .error.code "$T/report.body")" "403 forbidden"
done
expect_eq "only the members' reports were recorded" \
    "$(psql_q "SELECT string_agg(node, ' ' ORDER BY node) FROM node_reports WHERE reservation_id = $RID")" \
    "$(printf '%s\n' $IN | LC_ALL=C sort | paste -sd' ')"

# A step on some of the job's nodes; its nodes and only they read it and
# report on it.
BROKER_URL=$URL_A TOKEN=$SCHED_TOKEN http PUT /v1/reservations/frag/steps/1 \
    -d '{"nodes":"node[1,199],ten10,n100"}'
expect_status "a step on four of the job's nodes is reserved" 201
for nodes in 'node[1,10]' pad1 'n[0100]'; do
    BROKER_URL=$URL_B TOKEN=$SCHED_TOKEN http PUT /v1/reservations/frag/steps/2 \
        -d "{\"nodes\":\"$nodes\"}"
    expect_eq "a step on $nodes, not all in the job, is refused" \
        "$HTTP_STATUS $(jq -r .error.code "$T/http.body")" "400 invalid_field"
done
step_get () {
    curl -s -o /dev/null -w '%{http_code}' \
        -H "Authorization: Bearer $(node_token "$2")" "$1/v1/reservations/frag/steps/1"
}
step_report () {
    curl -s -o /dev/null -w '%{http_code}' -X PUT \
        -H "Authorization: Bearer $(node_token "$2")" \
        -H 'Content-Type: application/json' -d '{"cxi":"creating"}' \
        "$1/v1/reservations/frag/steps/1/nodes/$2"
}
for n in node1 node199 ten10 n100; do
    expect_eq "step member $n reads the step and reports on it" \
        "$(step_get "$URL_A" "$n") $(step_report "$URL_B" "$n")" "200 200"
done
for n in node3 node10 ten1 n0100; do
    expect_eq "$n, not in the step, is refused both" \
        "$(step_get "$URL_B" "$n") $(step_report "$URL_A" "$n")" "403 403"
done

# Released through B: A, which did not see it, still answers from its
# cache, which is where its answers above came from.
BROKER_URL=$URL_B TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/frag
expect_eq "A answered from its cache (it still says active)" \
    "$(curl -s -H "Authorization: Bearer $(node_token node3)" "$URL_A/v1/reservations/frag" | jq -r .state)" \
    active
expect_eq "... and still refuses node10 from it" "$(get_as "$URL_A" node10)" "403 forbidden"

# Requeues under load: job rq released and reserved again and again on two
# alternating node lists, through A and B in turn (A forgets its own
# changes, and may answer B's late), while nodes of either list and
# nodes of neither fetch it from both.  Every 200 must be a reservation
# whose node list holds the node; a node of neither list only ever gets
# 403.
ODD2=$(seq -s, 101 2 299)
EVEN=$(seq -s, 2 2 200)
{
    printf '{"sched": "%s", "lists": ["node[%s]", "node[%s],node[%s]"], "tokens": {' \
        "$SCHED_TOKEN" "$ODD" "$EVEN" "$ODD2"
    sep=""
    for n in node1 node2 node10 node11 node101 node102 node199 node200 node201 node299 node300 node01; do
        printf '%s"%s": "%s"' "$sep" "$n" "$(node_token "$n")"
        sep=", "
    done
    printf '}}\n'
} >"$T/load.json"
cat >"$T/load.py" <<'EOF'
import json, re, sys, threading, time, urllib.error, urllib.request

cfg = json.load(open(sys.argv[1]))
urls = sys.argv[2:4]
stop = time.time() + 6
bad, counts, lock = [], {"200": 0, "403": 0, "requeues": 0}, threading.Lock()

def call(url, method, path, token, body=None):
    req = urllib.request.Request(url + path, method=method,
                                 data=body and json.dumps(body).encode())
    req.add_header("Authorization", "Bearer " + token)
    if body:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)

def names(expr):
    out = set()
    for m in re.finditer(r"([a-z]+)\[([^\]]*)\]|([a-z]+[0-9]+)", expr):
        if m.group(3):
            out.add(m.group(3))
            continue
        for part in m.group(2).split(","):
            lo, _, hi = part.partition("-")
            for v in range(int(lo), int(hi or lo) + 1):
                out.add("%s%0*d" % (m.group(1), len(lo) if lo[0] == "0" else 0, v))
    return out

def requeue(k):
    i = k
    while time.time() < stop:
        url = urls[i % 2]
        lst = cfg["lists"][i % 2]
        call(url, "DELETE", "/v1/reservations/rq", cfg["sched"])
        s, _ = call(url, "POST", "/v1/reservations", cfg["sched"],
                    {"job_id": "rq", "uid": 1, "user": "u", "nodes": lst})
        with lock:
            counts["requeues"] += 1
            if s not in (200, 201):
                bad.append("reserve answered %d" % s)
        i += 1

def fetch(k):
    nodes = sorted(cfg["tokens"])
    i = k
    while time.time() < stop:
        node = nodes[i % len(nodes)]
        s, b = call(urls[i % 2], "GET", "/v1/reservations/rq", cfg["tokens"][node])
        with lock:
            if s == 200:
                counts["200"] += 1
                if node not in names(b["nodes"]):
                    bad.append("%s got reservation %s on %.40s..." % (node, b["id"], b["nodes"]))
            elif s == 403 and b["error"]["code"] == "forbidden":
                counts["403"] += 1
            elif s != 404:
                bad.append("%s: %d %s" % (node, s, b))
        i += 1

threads = [threading.Thread(target=requeue, args=(0,))]
threads += [threading.Thread(target=fetch, args=(k,)) for k in range(6)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("%d requeues, %d answers 200, %d answers 403" %
      (counts["requeues"], counts["200"], counts["403"]))
for b in bad[:10]:
    print("BAD " + b)
sys.exit(1 if bad or not counts["200"] or not counts["403"] else 0)
EOF
out=$(python3 "$T/load.py" "$T/load.json" "$URL_A" "$URL_B")
rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
expect_eq "under requeues through both brokers, every 200 was a job holding the node ($(printf '%s' "$out" | head -n 1))" "$rc" 0
finish

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Per-step VNIs (schema/0017) under load, with replicas killed.  Two
# replicas on one database; six clients each run jobs one after another
# for STEPS_SECONDS, while one replica or the other is killed with SIGKILL
# every STEPS_KILL_EVERY seconds and restarted on its port.  A client
# retries a request that got no answer (or 503 unavailable) on the other
# replica, as the Slurm plugin would.  Each job: reserve it, reserve three
# steps at once (threads), repeat one step's reserve on the other replica
# (200, the same reservation), nodes report services of the job and of a
# step, release one step, release the job (its steps go with it), then
# the nodes report destroyed, checking at each point what the broker says:
# a step's VNIs are its own (none of its job's or another step's), its
# environment lists them before the job's, and the job's quarantine lasts
# while one of its steps is still held, though its own nodes hold nothing.
# Then the history: every answer a client was given is in the database
# unchanged (nothing acknowledged was lost), and the database holds no VNI
# twice, no live step of a released job, no quarantine ended while a node
# held something (but forced), no job released before its steps, and
# PostgreSQL saw no deadlock.
#
# Knobs: STEPS_SECONDS (default 24), STEPS_CLIENTS (6), STEPS_KILL_EVERY (5).
. "$(dirname "$0")/lib.sh"

SECONDS_RUN=${STEPS_SECONDS:-24}
CLIENTS=${STEPS_CLIENTS:-6}
KILL_EVERY=${STEPS_KILL_EVERY:-5}
POOL=3000-3099

command -v python3 >/dev/null || { skip_all "python3 is not installed"; }
pg_start || exit 1
auth_setup

replicas_ab_config "pool = \"$POOL\"" \
    -e 's/^acquire_timeout_ms = .*/acquire_timeout_ms = 2000/' \
    -e 's/^query_timeout_ms = .*/query_timeout_ms = 5000/'
replicas_ab_start
ok "two replicas on fixed ports: $URL_A $URL_B"

{
    printf '{"scheduler": "%s", "admin": "%s"' "$SCHED_TOKEN" "$ADMIN_TOKEN"
    for n in sn1 sn2 sn3 sn4; do printf ', "%s": "%s"' "$n" "$(node_token "$n")"; done
    printf '}\n'
} >"$T/tokens.json"
chmod 600 "$T/tokens.json"

cat >"$T/steps.py" <<'EOF'
# The clients (mode "run") and the history check (mode "check").
import json, sys, threading, time, urllib.error, urllib.request

def run(urls, tokens, clients, seconds, log_path):
    lock = threading.Lock()
    log = open(log_path, "w")
    failures = []
    deadline = time.time() + seconds

    def record(**kw):
        with lock:
            log.write(json.dumps(kw) + "\n")
            log.flush()

    def fail(msg):
        with lock:
            failures.append(msg)

    def call(method, path, body, who, first=0, retry=True):
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(200):
            url = urls[(first + attempt) % len(urls)]
            req = urllib.request.Request(url + path, data=data, method=method)
            req.add_header("Authorization", "Bearer " + tokens[who])
            if data is not None:
                req.add_header("Content-Type", "application/json")
            try:
                with urllib.request.urlopen(req, timeout=15) as r:
                    return r.status, json.loads(r.read())
            except urllib.error.HTTPError as e:
                reply = json.loads(e.read() or b"{}")
                code = reply.get("error", {}).get("code")
                if e.code == 503 and code in ("unavailable", "database_unavailable") and retry:
                    time.sleep(0.2)
                    continue
                return e.code, reply
            except (urllib.error.URLError, ConnectionError, OSError):
                if not retry:
                    raise
                time.sleep(0.2)
        raise RuntimeError("no answer from any replica: %s %s" % (method, path))

    def expect(what, status, reply, want):
        if status not in want:
            fail("%s: status %s, want %s: %s" % (what, status, want, json.dumps(reply)))
            return False
        return True

    def one_job(c, r):
        job = "c%d-r%d" % (c, r)
        s, res = call("POST", "/v1/reservations",
                      {"job_id": job, "uid": 1000 + c, "user": "u%d" % c,
                       "nodes": "sn[1-4]", "vni_count": 1}, "scheduler", c)
        if not expect(job + " reserve", s, res, (200, 201)):
            return
        record(kind="reserve", job=job, step=None, id=res["id"], vnis=res["vnis"])
        job_vnis = res["vnis"]
        steps = {}
        nodes = {"0": "sn[1-2]", "1": "sn3", "2": "sn[3-4]"}

        def step_reserve(st):
            s, res = call("PUT", "/v1/reservations/%s/steps/%s" % (job, st),
                          {"nodes": nodes[st], "vni_count": 1}, "scheduler",
                          c + int(st))
            if expect("%s step %s reserve" % (job, st), s, res, (200, 201)):
                steps[st] = res
        threads = [threading.Thread(target=step_reserve, args=(st,)) for st in nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if len(steps) != 3:
            return
        seen = set(job_vnis)
        for st, res in sorted(steps.items()):
            record(kind="reserve", job=job, step=st, id=res["id"], vnis=res["vnis"])
            env = res["environment"]["SLINGSHOT_VNIS"]
            want = ",".join(str(v) for v in res["vnis"] + job_vnis)
            if res["step_id"] != st or res["job_id"] != job:
                fail("%s step %s: told job_id %s step_id %s" % (job, st, res["job_id"], res["step_id"]))
            if res["job_vnis"] != job_vnis:
                fail("%s step %s: job_vnis %s, the job has %s" % (job, st, res["job_vnis"], job_vnis))
            if env != want:
                fail("%s step %s: SLINGSHOT_VNIS %s, want %s" % (job, st, env, want))
            if seen & set(res["vnis"]) or len(res["vnis"]) != 1:
                fail("%s step %s: VNIs %s overlap the job's or another step's %s" % (job, st, res["vnis"], sorted(seen)))
            seen |= set(res["vnis"])
        # The same reserve on the other replica: the same reservation.
        s, again = call("PUT", "/v1/reservations/%s/steps/0" % job,
                        {"nodes": "sn[1-2]", "vni_count": 1}, "scheduler", c + 1)
        if expect(job + " step 0 reserve again", s, again, (200,)) and again["id"] != steps["0"]["id"]:
            fail("%s step 0 again: reservation %s, first %s" % (job, again["id"], steps["0"]["id"]))

        def report(node, st, res_id, cxi):
            path = ("/v1/reservations/%s/steps/%s/nodes/%s" % (job, st, node) if st
                    else "/v1/reservations/%s/nodes/%s" % (job, node))
            s, res = call("PUT", path, {"cxi": cxi, "reservation_id": res_id}, node, c)
            expect("%s %s %s report %s" % (job, st or "job", node, cxi), s, res, (200,))
            return res
        report("sn1", "0", steps["0"]["id"], "creating")
        report("sn1", "0", steps["0"]["id"], "created")
        s, res = call("PUT", "/v1/reservations/%s/nodes/sn4" % job,
                      {"cxi": "created"}, "sn4", c)
        expect(job + " sn4 created", s, res, (200,))

        s, out = call("DELETE", "/v1/reservations/%s/steps/1" % job, None, "scheduler", c)
        if expect(job + " step 1 release", s, out, (202,)):
            if (out.get("reservation") or {}).get("state") != "released":
                fail("%s step 1 release: %s (no node held anything)" % (job, json.dumps(out)))
        s, out = call("DELETE", "/v1/reservations/" + job, None, "scheduler", c + 1)
        if expect(job + " release", s, out, (202,)) and out["state"] != "releasing":
            fail("%s release: state %s, nodes hold services" % (job, out["state"]))
        s, out = call("GET", "/v1/reservations/%s/steps/2" % job, None, "scheduler", c)
        if expect(job + " step 2", s, out, (200,)) and out["state"] != "released":
            fail("%s step 2 after the job's release: %s" % (job, out["state"]))
        s, out = call("GET", "/v1/reservations/%s/steps/0" % job, None, "scheduler", c)
        if expect(job + " step 0", s, out, (200,)) and out["state"] != "releasing":
            fail("%s step 0 after the job's release: %s (sn1 holds it)" % (job, out["state"]))
        s, res = call("PUT", "/v1/reservations/%s/nodes/sn4" % job,
                      {"cxi": "destroyed"}, "sn4", c)
        expect(job + " sn4 destroyed", s, res, (200,))
        s, out = call("GET", "/v1/reservations/" + job, None, "scheduler", c + 1)
        if expect(job + " after sn4", s, out, (200,)) and out["state"] != "releasing":
            fail("%s: its quarantine ended (%s) while step 0 was held" % (job, out["state"]))
        res = report("sn1", "0", steps["0"]["id"], "destroyed")
        if res.get("state") != "released":
            fail("%s step 0 after sn1 destroyed: %s" % (job, res.get("state")))
        s, out = call("GET", "/v1/reservations/" + job, None, "scheduler", c)
        if expect(job + " at the end", s, out, (200,)) and out["state"] != "released":
            fail("%s: still %s after its last step's quarantine ended" % (job, out["state"]))
        record(kind="end", job=job, state=out.get("state"))

    def client(c):
        r = 0
        while time.time() < deadline:
            try:
                one_job(c, r)
            except Exception as e:
                fail("client %d round %d: %r" % (c, r, e))
            r += 1
        record(kind="rounds", client=c, rounds=r)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for f in failures[:20]:
        print("FAIL " + f)
    print("clients: %d failures" % len(failures))
    return 1 if failures else 0

def check(log_path, db_path):
    db = {r["id"]: r for r in json.load(open(db_path)) or []}
    told = [json.loads(l) for l in open(log_path)]
    bad = []
    n = 0
    for t in told:
        if t["kind"] != "reserve":
            continue
        n += 1
        key = t["job"] + ("#" + t["step"] if t["step"] else "")
        row = db.get(t["id"])
        if row is None:
            bad.append("told %s reservation %s, the database has none" % (key, t["id"]))
        elif row["job_id"] != key or row["vnis"] != t["vnis"]:
            bad.append("told %s %s %s, the database has %s %s" % (key, t["id"], t["vnis"], row["job_id"], row["vnis"]))
    rounds = sum(t["rounds"] for t in told if t["kind"] == "rounds")
    for b in bad[:20]:
        print("FAIL " + b)
    print("history: %d reservations told in %d jobs, %d not as told" % (n, rounds, len(bad)))
    return 1 if bad or n == 0 else 0

if sys.argv[1] == "run":
    tokens = json.load(open(sys.argv[3]))
    sys.exit(run(sys.argv[2].split(","), tokens, int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]))
sys.exit(check(sys.argv[2], sys.argv[3]))
EOF

python3 "$T/steps.py" run "$URL_A,$URL_B" "$T/tokens.json" "$CLIENTS" "$SECONDS_RUN" \
    "$T/told.jsonl" >"$T/clients.out" 2>&1 &
CPID=$!
track "$CPID"
kill_replicas_during "$CPID" "$SECONDS_RUN" "$KILL_EVERY" A B
wait "$CPID"
crc=$?
sed 's/^/# /' "$T/clients.out"
expect_match "replicas were killed mid-load ($KILLS) and restarted on their ports ($RESTARTS)" \
    "$KILLS $RESTARTS" '^([1-9][0-9]*) \1$'
expect_eq "every answer was the one expected (clients' checks)" "$crc" 0
rounds=$(grep -c '"kind": "end"' "$T/told.jsonl")
expect_match "the clients completed jobs ($rounds)" "$rounds" '^[1-9]'

# ---- the history against the database --------------------------------------
psql_q "SELECT coalesce(json_agg(json_build_object('id', id, 'job_id', job_id,
            'vnis', vnis)), '[]') FROM reservations" >"$T/db.json"
python3 "$T/steps.py" check "$T/told.jsonl" "$T/db.json" >"$T/check.out" 2>&1
hrc=$?
sed 's/^/# /' "$T/check.out"
expect_eq "every reservation a client was told is in the database as told" "$hrc" 0

expect_db_consistent
expect_eq "no live step of a job that is not active" \
    "$(psql_q "SELECT count(*) FROM reservations s JOIN reservations j ON j.id = s.parent_id
                WHERE s.state = 'active' AND j.state <> 'active'
                   OR s.state <> 'released' AND j.state = 'released'")" 0
expect_eq "no VNI of a step is its job's" \
    "$(psql_q "SELECT count(*) FROM reservations s JOIN reservations j ON j.id = s.parent_id
                WHERE s.vnis && j.vnis")" 0
expect_eq "no quarantine ended while a node held something (but forced)" \
    "$(psql_q "SELECT count(*) FROM reservations r
                WHERE r.state = 'released' AND NOT r.forced
                  AND EXISTS (SELECT 1 FROM node_reports n
                               WHERE n.reservation_id = r.id AND n.cxi <> 'destroyed')")" 0
expect_eq "no job released before its steps" \
    "$(psql_q "SELECT count(*) FROM reservations s JOIN reservations j ON j.id = s.parent_id
                WHERE j.state = 'released' AND NOT j.forced
                  AND s.released_at > j.released_at")" 0
held=$(psql_q "SELECT count(*) FROM reservations s JOIN reservations j ON j.id = s.parent_id
                WHERE EXISTS (SELECT 1 FROM node_reports n WHERE n.reservation_id = s.id)")
expect_match "steps held services, so the quarantine checks had teeth ($held)" "$held" '^[1-9]'
deadlocks=$(grep -c 'deadlock detected' "$T/pglog/pg.log")
expect_eq "PostgreSQL detected no deadlock" "$deadlocks" 0
if [ "$deadlocks" != 0 ]; then
    grep -m 3 -A 3 'deadlock detected' "$T/pglog/pg.log" | sed 's/^/#   /'
fi
finish

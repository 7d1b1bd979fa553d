#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The job stream of `make demo` (deploy/local/demo.sh starts it).

Plays the scheduler of a simulated cluster against a running vnibrokerd:
every 1-3 s a job of a random size (1 to all nodes, on nodes that are free
and not drained) is reserved (POST /v1/reservations with the scheduler's
token), its prolog runs on each of its nodes (`vnib-agent prolog`), it
runs a few seconds, then it is released (DELETE /v1/reservations/JOB) and
its epilog runs on each node (`vnib-agent epilog`).  A node whose epilog
leaves services behind (a faulty simulated NIC) has reported "failed":
the broker drains it, and so does this scheduler, which gives it no more
jobs.  One line per step goes to stdout.

On SIGTERM or SIGINT, or after --seconds, no new job starts and the
running ones end at once (released, epilogs run); it then prints a
summary and exits 0.  Python 3 standard library only.
"""

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

USERS = [("alice", 1001), ("bob", 1002), ("carol", 1003), ("dave", 1004)]


def hostlist(names):
    """node1,node2,node3,node5 -> node[1-3,5] (names are nodeN)."""
    nums = sorted(int(re.sub(r"^\D+", "", n)) for n in names)
    if len(nums) == 1:
        return "node%d" % nums[0]
    parts, start = [], nums[0]
    for prev, cur in zip(nums, nums[1:] + [None]):
        if cur is None or cur != prev + 1:
            parts.append(str(start) if start == prev else "%d-%d" % (start, prev))
            start = cur
    return "node[%s]" % ",".join(parts)


def remaining(out):
    """Services left behind, from `epilog --json`: one indented object per
    step it ended, then the job's."""
    dec, i, left = json.JSONDecoder(), 0, 0
    while True:
        while i < len(out) and out[i].isspace():
            i += 1
        if i >= len(out):
            return left
        try:
            obj, i = dec.raw_decode(out, i)
        except ValueError:
            return left
        if isinstance(obj, dict):
            left += len(obj.get("remaining") or [])


def stamp():
    return time.strftime("%H:%M:%S")


class Cluster:
    """The scheduler's view: which nodes are busy, which drained."""

    def __init__(self, args):
        self.args = args
        self.nodes = ["node%d" % i for i in range(1, args.nodes + 1)]
        self.busy = set()
        self.drained = set()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.print_lock = threading.Lock()
        with open(args.token_file) as f:
            self.token = f.read().strip()
        self.log = open(os.path.join(args.nodes_dir, "agents.log"), "a")
        self.stats = {"jobs": 0, "hwcoll": 0, "released": 0, "failed": 0}

    def say(self, text):
        with self.print_lock:
            print("%s %s" % (stamp(), text), flush=True)

    def call(self, method, path, body=None):
        """One broker call as the scheduler: (status, decoded JSON or None)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.args.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                return e.code, json.loads(e.read() or b"null")
            except ValueError:
                return e.code, None
        except (urllib.error.URLError, OSError) as e:
            return 0, {"error": {"message": str(e)}}

    def agents(self, nodes, *argv):
        """Run `vnib-agent ARGV` on every node at once: {node: (rc, stdout)}."""
        procs = {}
        for n in nodes:
            conf = os.path.join(self.args.nodes_dir, n, "agent.toml")
            procs[n] = subprocess.Popen(
                [self.args.agent, "--config", conf] + list(argv),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        out = {}
        for n, p in procs.items():
            o, e = p.communicate()
            out[n] = (p.returncode, o)
            if e:
                with self.print_lock:
                    self.log.write("%s %s %s: %s" % (stamp(), n, argv[0], e))
                    self.log.flush()
        return out

    def count(self, what):
        with self.lock:
            self.stats[what] += 1

    def pick(self):
        """A job's nodes among the free ones, or None."""
        with self.lock:
            free = [n for n in self.nodes if n not in self.busy and n not in self.drained]
            if not free:
                return None
            size = min(random.randint(1, len(self.nodes)), len(free))
            chosen = sorted(random.sample(free, size), key=lambda n: int(n[4:]))
            self.busy.update(chosen)
            return chosen

    def job(self, job_id, nodes):
        user, uid = random.choice(USERS)
        hl = hostlist(nodes)
        try:
            self.run_job(job_id, nodes, hl, user, uid)
        finally:
            with self.lock:
                self.busy.difference_update(nodes)

    def run_job(self, job_id, nodes, hl, user, uid):
        st, res = self.call(
            "POST",
            "/v1/reservations",
            {"job_id": job_id, "uid": uid, "user": user, "nodes": hl},
        )
        if st not in (200, 201):
            msg = (res or {}).get("error", {}).get("message", "") if isinstance(res, dict) else ""
            self.say("job %s: reserve refused (%s %s)" % (job_id, st, msg))
            return
        hw = (res.get("hwcoll") or {}).get("state", "disabled")
        self.count("jobs")
        if hw == "reserved":
            self.count("hwcoll")
        vnis = ",".join(str(v) for v in res.get("vnis", []))
        self.say(
            "job %s: %s, %d node(s) %s, VNI %s, hwcoll %s"
            % (job_id, user, len(nodes), hl, vnis, hw)
        )
        bad = [n for n, (rc, _) in self.agents(nodes, "prolog", "--job", job_id,
                                               "--uid", str(uid)).items() if rc != 0]
        if bad:
            self.say("job %s: prolog failed on %s" % (job_id, hostlist(bad)))
        self.stop.wait(random.uniform(3, 8))
        st, _ = self.call("DELETE", "/v1/reservations/" + job_id)
        if st not in (200, 202):
            self.say("job %s: release refused (%s)" % (job_id, st))
        failed = []
        for n, (rc, out) in self.agents(nodes, "epilog", "--job", job_id, "--json").items():
            if rc != 0 or remaining(out):
                failed.append(n)
        self.count("released")
        if failed:
            self.count("failed")
            with self.lock:
                new = [n for n in failed if n not in self.drained]
                self.drained.update(failed)
            self.say(
                "job %s: released; cleanup FAILED on %s (CXI services busy): the "
                "broker drains it and the VNIs stay quarantined" % (job_id, hostlist(failed))
            )
            if new:
                self.say("  drained now: %s" % hostlist(sorted(self.drained)))
        else:
            self.say("job %s: released, services destroyed on all %d node(s): "
                     "quarantine over" % (job_id, len(nodes)))

    def main(self):
        deadline = time.monotonic() + self.args.seconds if self.args.seconds > 0 else None
        threads = []
        job = self.args.first_job
        while not self.stop.is_set():
            nodes = self.pick()
            if nodes:
                t = threading.Thread(target=self.job, args=(str(job), nodes))
                t.start()
                threads.append(t)
                job += 1
            threads = [t for t in threads if t.is_alive()]
            wait = random.uniform(1, 3)
            if deadline is not None:
                wait = min(wait, max(0.0, deadline - time.monotonic()))
                if wait == 0:
                    break
            self.stop.wait(wait)
        self.stop.set()
        for t in threads:
            t.join()
        s = self.stats
        self.say(
            "demo: %d job(s), %d with hardware collectives, %d released, %d with a "
            "failed cleanup; drained: %s"
            % (s["jobs"], s["hwcoll"], s["released"], s["failed"],
               hostlist(sorted(self.drained)) if self.drained else "none")
        )


def main():
    p = argparse.ArgumentParser(description="the job stream of `make demo`")
    p.add_argument("--url", required=True)
    p.add_argument("--token-file", required=True)
    p.add_argument("--agent", required=True)
    p.add_argument("--nodes-dir", required=True)
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--seconds", type=int, default=0)
    p.add_argument("--first-job", type=int, default=1001)
    args = p.parse_args()
    c = Cluster(args)
    signal.signal(signal.SIGTERM, lambda *_: c.stop.set())
    signal.signal(signal.SIGINT, lambda *_: c.stop.set())
    c.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())

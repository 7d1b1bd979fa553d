#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the node agent trusts: an agent.toml that someone other than root
# (or the agent's user) owns, or that group or others may write, is
# refused with the file named, since it names the library loaded into a
# root process; a broker's reservation with a uid outside 0..4294967294 or
# a tcs_mask that is not "0x" and one or two hex digits is refused before
# anything is written (a line break in tcs_mask used to add a line to the
# job's env file); a --retry-busy duration of nan or inf is a usage error.
# The broker here is a stub serving a reservation from a file.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent.sh"

auth_setup
cat >"$T/stub.py" <<'EOF'
import http.server, sys

class H(http.server.BaseHTTPRequestHandler):
    def reply(self, body):
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with open(sys.argv[1]) as f:
            self.reply(f.read())

    def do_PUT(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        self.reply("{}")

    do_POST = do_PUT

    def log_message(self, *args):
        pass

s = http.server.HTTPServer(("127.0.0.1", 0), H)
with open(sys.argv[2], "w") as f:
    f.write("%d\n" % s.server_address[1])
s.serve_forever()
EOF
python3 "$T/stub.py" "$T/res.json" "$T/port" &
STUB_PID=$!
for _ in $(seq 50); do [ -s "$T/port" ] && break; sleep 0.1; done
BROKER_URL=http://127.0.0.1:$(cat "$T/port")

agent_setup n1 1
agent_setup n2 1

# ---- agent.toml ownership and mode -----------------------------------------
chmod 0666 "$T/n1/agent.toml"
agent n1 list
expect_eq "a world-writable agent.toml is refused" "$AGENT_RC" 2
expect_match "... naming the file and the mode" "$AGENT_ERR" "$T/n1/agent.toml: refused: mode 0666"
chmod 0620 "$T/n1/agent.toml"
agent n1 list
expect_eq "a group-writable agent.toml is refused" "$AGENT_RC" 2
chmod 0644 "$T/n1/agent.toml"
if [ "$(id -u)" = 0 ]; then
    chown 4321 "$T/n1/agent.toml"
    agent n1 list
    expect_eq "an agent.toml of another user is refused" "$AGENT_RC" 2
    expect_match "... naming the file and the owner" "$AGENT_ERR" "$T/n1/agent.toml: refused: owned by uid 4321"
    chown 0 "$T/n1/agent.toml"
fi
agent n1 list
expect_eq "root's 0644 agent.toml is fine" "$AGENT_RC" 0

# ---- what the broker sends ---------------------------------------------------
# Each case is its own job, so that one case's leftovers cannot refuse the
# next; the uid cases run on n2, whose NIC a wrong uid could spoil.
N=0
prolog_of () { # NODE UID TCS_MASK(JSON): a reservation, and NODE's prolog
    N=$((N + 1))
    JOB=j$N
    printf '{"id":%d,"job_id":"%s","state":"active","uid":%s,"user":"alice","vnis":[%d],"tcs_mask":%s,"environment":{}}\n' \
        "$N" "$JOB" "$2" $((3000 + N)) "$3" >"$T/res.json"
    agent "$1" prolog --job "$JOB" --ncores 4
}

prolog_of n2 4294967295 '"0xa"'
expect_eq "uid 4294967295 ((uid_t)-1) is refused" "$AGENT_RC" 1
expect_eq "... and no env file is written" "$(ls "$T/n2/state/jobs" 2>/dev/null | grep -c '\.env$')" 0
prolog_of n2 -1 '"0xa"'
expect_eq "a negative uid is refused" "$AGENT_RC" 1
prolog_of n2 4294968296 '"0xa"'
expect_eq "a uid past 32 bits is refused" "$AGENT_RC" 1

prolog_of n1 1000 '"0xa\nexport LD_PRELOAD=/tmp/evil.so"'
expect_eq "a tcs_mask with a line break is refused" "$AGENT_RC" 1
expect_eq "... and nothing reaches an env file" \
    "$(cat "$T"/n1/state/jobs/*.env 2>/dev/null | grep -c LD_PRELOAD)" 0
for bad in '"0xA"' '"10"' '"0x"' '"0x123"' '" 0xa"' '"0xa "' '"-0xa"'; do
    prolog_of n1 1000 "$bad"
    expect_eq "tcs_mask $bad is refused" "$AGENT_RC" 1
done

prolog_of n1 1000 '"0x3"'
expect_eq "a well-formed reservation still works" "$AGENT_RC" 0
agent n1 env --job "$JOB"
expect_match "... with its traffic classes" "$AGENT_OUT" "SLINGSHOT_TCS=0x3"

# ---- durations -----------------------------------------------------------------
for bad in nan NaN inf infinity -1 nanms; do
    agent n1 epilog --job "$JOB" --retry-busy "$bad"
    expect_eq "--retry-busy $bad is a usage error" "$AGENT_RC" 2
done

kill "$STUB_PID" 2>/dev/null
wait "$STUB_PID" 2>/dev/null
finish

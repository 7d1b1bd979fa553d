#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The status page in a real browser (headless Chromium, driven through
# the DevTools protocol by browser.py): opened with a monitor token in its
# #token= fragment on a broker with active jobs, a quarantined
# reservation with nodes still holding services, a drained node (whose
# reason is markup, shown as text) and events, it renders what
# GET /v1/status and GET /v1/events report, in the elements the browser
# test and the demo read (contract D of issue 16), with no console error
# or uncaught exception (the harness is shown to catch one); the event
# filters ask the API; the token stays in sessionStorage, out of the
# address bar, localStorage and cookies; nothing overflows at 1280x900
# or on a narrow window.  Screenshots go to $VNIB_BUILD/ui/.
# Without chromium this is a skip, except under CI, where it fails.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fm.sh"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
    if [ -n "${CI:-}" ]; then
        not_ok "chromium is installed (CI is set: \`make deps\` installs it)"
        finish
    fi
    skip_all "chromium is not installed (\`make deps\` installs it)"
fi
mkdir -p "$BUILD/ui"

# browse URL [browser.py ARGS...]: the JSON report in $T/browser.json,
# Chromium's own output (its stderr noise) in $T/chromium.log.
browse () {
    url=$1
    shift
    python3 "$TOP/tests/integration/browser.py" "$url" --chromium "$CHROMIUM" \
        --chrome-log "$T/chromium.log" --timeout 40 "$@" >"$T/browser.json"
}
# value JQ: from the last report's value.
value () {
    jq -r ".value$1" "$T/browser.json"
}

pg_start || exit 1
fm_start || { not_ok "fmsim starts"; finish; }
hwcoll_config "$T/b.toml" tux "$(vni_pool 3000-3099)"
broker_migrate_start "$T/b.toml"

# ---- seed ---------------------------------------------------------------------
reserve () {
    TOKEN=$SCHED_TOKEN http POST /v1/reservations \
        -d "{\"job_id\":\"$1\",\"uid\":1001,\"user\":\"alice\",\"nodes\":\"$2\",\"vni_count\":${3:-1}}"
    expect_status "reserve $1 on $2" 201
}
report () {
    TOKEN=$(node_token "$2") http PUT "/v1/reservations/$1/nodes/$2" -d "{\"cxi\":\"$3\"${4:+,$4}}"
    expect_status "$2 reports $3 for $1" 200
}
reserve 4242.batch 'nid[001-064]' 2
reserve 4243 'nid[065-096]'
reserve 4244 'nid[097-100]'
reserve 4250 'nid[101-104]' 2
report 4250 nid101 creating
report 4250 nid101 created '"services":[{"device":"cxi0","svc_id":11}]'
report 4250 nid102 created '"services":[{"device":"cxi0","svc_id":12}]'
report 4250 nid103 created '"services":[{"device":"cxi0","svc_id":13}]'
report 4250 nid103 destroyed
TOKEN=$SCHED_TOKEN http DELETE /v1/reservations/4250
expect_json "4250 is released into quarantine" .quarantined true
XSS='<img src=x onerror=alert(1)> EBUSY'
report 4244 nid099 failed "\"message\":\"$XSS\""
# For the search: a job id with characters a URL must escape ('+' is a
# space in a query string, '@' and ':' are delimiters), with hardware
# collectives (a session token the page must never show), three nodes
# of which one created its services, one is creating, one silent.
ODD='4711.0+het@a:b'
TOKEN=$SCHED_TOKEN http POST /v1/reservations \
    -d "{\"job_id\":\"$ODD\",\"uid\":1002,\"user\":\"bob\",\"nodes\":\"nid[201-203]\",\"vni_count\":1,\"hwcoll\":\"on\"}"
expect_status "reserve $ODD on nid[201-203], hardware collectives on" 201
ODD_SESSION=$(jq -r '.hwcoll.session_token // empty' "$T/http.body")
expect_match "... which got a session token" "$ODD_SESSION" '^vnib1\.'
ODD_PATH=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$ODD")
report "$ODD_PATH" nid201 created '"services":[{"device":"cxi0","svc_id":21}]'
report "$ODD_PATH" nid202 creating

TOKEN=$MONITOR_TOKEN http GET /v1/status
expect_status "GET /v1/status answers the monitor" 200
# A few samples for the chart: one per gauges refresh (5 s).
samples () {
    curl -sS -H "Authorization: Bearer $MONITOR_TOKEN" "$BROKER_URL/v1/status" |
        jq -e '.history.samples | length >= 3' >/dev/null
}
wait_for 30 samples
expect_eq "the status history has samples for the chart" "$?" 0
# The Fabric Manager's figures settle: a leader, the connection up.
fm_settled () {
    curl -sS -H "Authorization: Bearer $MONITOR_TOKEN" "$BROKER_URL/v1/status" |
        jq -e '.fabric_manager.leader.replica != null and .fabric_manager.connection == "up"' >/dev/null
}
wait_for 30 fm_settled
expect_eq "the broker leads the Fabric Manager work, connected" "$?" 0

# ---- the page -------------------------------------------------------------------
# The page's fetches are recorded (before its own script runs) to see
# that the filters ask the API.
RECORD='window.__urls = []; const __f = window.fetch;
window.fetch = function (u, o) { window.__urls.push(String(u)); return __f.apply(this, arguments); };'
READ='(async () => {
  const t = (id) => document.getElementById(id).textContent;
  const ids = ["pool-free", "pool-active", "pool-quarantined", "pool-outside", "pool-total",
    "quarantine-count", "drained-count", "fm-connection", "fm-queue-depth", "leader"];
  const r = { ids: {} };
  for (const id of ids) r.ids[id] = t(id);
  r.pageError = window.vnibStatusPage.error();
  r.statusLine = t("status-line");
  r.events = [...document.querySelectorAll("#events tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent));
  r.quarantine = [...document.querySelectorAll("#quarantine-table tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent));
  r.drained = [...document.querySelectorAll("#drained-table tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent));
  r.imgs = document.querySelectorAll("main img").length;
  r.canvas = document.getElementById("pool-chart").width + "x" + document.getElementById("pool-chart").height;
  r.chartInk = (() => { const c = document.getElementById("pool-chart");
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; })();
  r.hash = location.hash;
  r.href = location.href;
  r.local = localStorage.length;
  r.cookie = document.cookie;
  r.session = sessionStorage.getItem("vnibroker.token");
  r.overflow = document.documentElement.scrollWidth - document.documentElement.clientWidth;
  r.renderMs = window.vnibStatusPage.renderMs();
  // The action filter: the next refresh asks the API for drain events.
  const n0 = window.vnibStatusPage.refreshes();
  const sel = document.getElementById("filter-action");
  sel.value = "drain";
  sel.dispatchEvent(new Event("change"));
  for (let i = 0; i < 100 && window.vnibStatusPage.refreshes() < n0 + 1; i++)
    await new Promise((res) => setTimeout(res, 100));
  r.filtered = [...document.querySelectorAll("#events tbody tr")].map((tr) => tr.cells[1].textContent);
  // The node and job id filters, submitted as a user does.
  const next = async (fn) => {
    const n = window.vnibStatusPage.refreshes();
    fn();
    for (let i = 0; i < 100 && window.vnibStatusPage.refreshes() < n + 1; i++)
      await new Promise((res) => setTimeout(res, 100));
    return [...document.querySelectorAll("#events tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent));
  };
  r.byNode = await next(() => { sel.value = ""; document.getElementById("filter-node").value = "nid101";
    document.getElementById("event-filters").requestSubmit(); });
  r.byJob = await next(() => { document.getElementById("filter-node").value = "";
    document.getElementById("filter-job").value = "4243"; document.getElementById("event-filters").requestSubmit(); });
  r.urls = window.__urls;
  return r;
})()'
WAIT='window.vnibStatusPage && window.vnibStatusPage.refreshes() >= 1'
browse "$BROKER_URL/ui/#token=$MONITOR_TOKEN" --before "$RECORD" --wait "$WAIT" \
    --eval "$READ" --screenshot "$BUILD/ui/status.png"
rc=$?
expect_eq "the page loads and refreshes in Chromium" "$rc" 0
expect_eq "no console error, uncaught exception or error log entry" \
    "$(jq -c .errors "$T/browser.json")" "[]"
expect_eq "the page reports no error of its own" "$(value .pageError)" null
expect_match "#status-line says when it refreshed" "$(value .statusLine)" '^Updated [0-9:]{8} '

# What the page shows is what the API says (the state is still).
TOKEN=$MONITOR_TOKEN http GET /v1/status
S=$T/status.json
cp "$T/http.body" "$S"
for pair in pool-free:.pool.free pool-active:.pool.active \
            pool-quarantined:.pool.quarantined pool-outside:.pool.outside_pool \
            pool-total:.pool.total quarantine-count:.quarantine.reservations \
            drained-count:.drained.count fm-connection:.fabric_manager.connection \
            fm-queue-depth:.fabric_manager.queue.depth \
            'leader:(.fabric_manager.leader.replica // "none")'; do
    id=${pair%%:*}
    expect_eq "#$id shows GET /v1/status $(printf '%s' "${pair#*:}")" \
        "$(value ".ids[\"$id\"]")" "$(jq -r "${pair#*:}" "$S")"
done
expect_eq "... the seed: 5 VNIs active" "$(value '.ids["pool-active"]')" 5
expect_eq "... 2 quarantined" "$(value '.ids["pool-quarantined"]')" 2
expect_eq "... 1 drained node" "$(value '.ids["drained-count"]')" 1

expect_eq "the quarantine table has the reservation" "$(value '.quarantine | length')" 1
expect_match "... its job, VNIs and waiting nodes (nid101-102 hold services)" \
    "$(value '.quarantine[0] | join("|")')" '^4250.*\|[0-9]+, [0-9]+\|.*\|2\|nid\[101-102\]$'
expect_eq "the drained table has nid099" "$(value '.drained[0][0]')" nid099
expect_eq "... with its reason as text, markup and all" "$(value '.drained[0][1]')" "$XSS"
expect_eq "... which made no element" "$(value .imgs)" 0

TOKEN=$ADMIN_TOKEN http GET '/v1/events?order=desc&limit=100'
expect_eq "the events table has a row per event" \
    "$(value '.events | length')" "$(jq '.events | length' "$T/http.body")"
expect_eq "... newest first, as the API lists them" \
    "$(value ' | [.events[] | .[1]] | join(",")')" "$(jq -r '[.events[].action] | join(",")' "$T/http.body")"
expect_match "... the seeded events are there" "$(value ' | [.events[] | .[2]] | join(",")')" '4250.*4242\.batch'
expect_match "... the drain of nid099" "$(value ' | [.events[] | select(.[1] == "drain") | .[3]] | join(",")')" nid099
expect_eq "the action filter shows only drain events" "$(value '.filtered | unique | join(",")')" drain
expect_match "... asked of the API" "$(value '.urls | join(" ")')" '/v1/events\?order=desc&limit=100&action=drain'
expect_eq "the node filter shows nid101's events (its two reports)" \
    "$(value ' | [.byNode[] | .[1] + ":" + .[3]] | join(",")')" "report:nid101,report:nid101"
expect_match "... asked of the API" "$(value '.urls | join(" ")')" '/v1/events\?order=desc&limit=100&node=nid101'
expect_eq "the job id filter shows 4243's events" "$(value ' | [.byJob[] | .[2]] | unique | join(",")')" 4243
expect_match "... asked of the API" "$(value '.urls | join(" ")')" '/v1/events\?order=desc&limit=100&job_id=4243'
expect_match "the page asks GET /v1/status" "$(value '.urls | join(" ")')" '/v1/status( |$)'

expect_eq "the token is taken out of the address bar" "$(value .hash)" ""
expect_eq "... kept in sessionStorage" "$(value .session)" "$MONITOR_TOKEN"
expect_eq "... not in localStorage" "$(value .local)" 0
expect_eq "... nor in a cookie" "$(value .cookie)" ""
expect_no_match "... nor in the URL" "$(value .href)" "$MONITOR_TOKEN"
expect_eq "nothing overflows at 1280x900" "$(value .overflow)" 0
expect_match "the chart is drawn on its canvas" "$(value .chartInk)" '^[1-9][0-9]{3,}$'
expect_match "a screenshot is saved ($BUILD/ui/status.png)" \
    "$(file "$BUILD/ui/status.png" 2>&1)" 'PNG image data, 1280 x 900'
echo "# render time of one refresh: $(value .renderMs) ms"

# ---- the search box -------------------------------------------------------------
# Each lookup is typed and submitted as a user does; the page's fetches
# are recorded.  A job id, a node with a drain and a job's services, a
# node holding a quarantined job's services, a node nobody knows, and a
# string that is neither.
SEARCH='(async () => {
  const t = (id) => document.getElementById(id).textContent;
  const rows = (id) => [...document.querySelectorAll("#" + id + " tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent));
  const find = async (q) => {
    const n = window.vnibStatusPage.searches();
    document.getElementById("search-input").value = q;
    document.getElementById("search-form").requestSubmit();
    for (let i = 0; i < 100 && window.vnibStatusPage.searches() < n + 1; i++)
      await new Promise((res) => setTimeout(res, 100));
    const r = { note: t("search-note"), jobShown: !document.getElementById("search-job").hidden,
      nodeShown: !document.getElementById("search-node").hidden, hash: location.hash };
    if (r.jobShown) {
      r.job = {};
      for (const id of ["job-id", "job-state", "job-reservation", "job-user", "job-nodes", "job-vnis",
        "job-hwcoll", "job-fm-job", "job-hwcoll-reason", "job-released", "job-events-note"]) r.job[id] = t(id);
      r.states = rows("job-states-table");
      r.reports = rows("job-reports-table");
      r.events = rows("job-events");
    }
    if (r.nodeShown) {
      r.node = {};
      for (const id of ["node-name", "node-drained", "node-reason", "node-inventory", "node-holding"]) r.node[id] = t(id);
      r.nodeJobs = rows("node-jobs-table");
      r.nodeEvents = rows("node-events");
    }
    r.text = document.body.innerText;
    r.imgs = document.querySelectorAll("main img").length;
    return r;
  };
  const out = {};
  out.odd = await find(ODD);
  out.drained = await find("nid099");
  out.holding = await find("nid101");
  out.nobody = await find("nid999");
  out.neither = await find("<b>x</b>");
  out.urls = window.__urls;
  return out;
})()'
SEARCH=${SEARCH//ODD/\"$ODD\"}
browse "$BROKER_URL/ui/#token=$MONITOR_TOKEN" --before "$RECORD" --wait "$WAIT" \
    --eval "$SEARCH" --screenshot "$BUILD/ui/status-search.png"
expect_eq "search: the page runs the lookups with no error" "$(jq -c .errors "$T/browser.json")" "[]"
TOKEN=$MONITOR_TOKEN http GET "/v1/reservations/$ODD_PATH"
J=$T/odd.json
cp "$T/http.body" "$J"
TOKEN=$MONITOR_TOKEN http GET "/v1/reservations/$ODD_PATH/nodes"
JN=$T/odd-nodes.json
cp "$T/http.body" "$JN"
expect_eq "search $ODD: the job is shown" "$(value .odd.jobShown)" true
expect_eq "... not a node (it is no node name)" "$(value .odd.nodeShown)" false
expect_eq "... its id, as typed" "$(value '.odd.job["job-id"]')" "$ODD"
expect_eq "... its state" "$(value '.odd.job["job-state"]')" active
expect_eq "... its reservation" "$(value '.odd.job["job-reservation"]')" "#$(jq -r .id "$J")"
expect_eq "... its nodes as a hostlist" "$(value '.odd.job["job-nodes"]')" "nid[201-203] (3)"
expect_eq "... its VNIs" "$(value '.odd.job["job-vnis"]')" "$(jq -r '.vnis | join(", ")' "$J")"
expect_eq "... its hardware collectives' state" "$(value '.odd.job["job-hwcoll"]')" \
    "$(jq -r '.hwcoll.state + " (mode " + .hwcoll.mode + ")"' "$J")"
expect_eq "... the FM job id" "$(value '.odd.job["job-fm-job"]')" "$(jq -r .hwcoll.fm_job_id "$J")"
expect_eq "... the collectives' reason (none when reserved)" "$(value '.odd.job["job-hwcoll-reason"]')" \
    "$(jq -r '.hwcoll.reason // "none"' "$J")"
expect_eq "... each node's report, by state, as GET .../nodes says" \
    "$(value ' | [.odd.states[] | .[0] + "=" + .[1] + ":" + .[2]] | join(" ")')" \
    "failed=0:– creating=1:nid202 created=1:nid201 destroyed=0:– no report=1:nid203"
expect_eq "... the API agrees" "$(jq -r '[.states | to_entries[] | .key + "=" + (.value.count | tostring)] | join(" ")' "$JN")" \
    "pending=1 creating=1 created=1 destroyed=0 failed=0"
expect_eq "... the reports, creating first, with services" \
    "$(value ' | [.odd.reports[] | .[0] + ":" + .[1] + ":" + .[2]] | join(" ")')" "nid202:creating:– nid201:created:cxi0:21"
expect_eq "... its events (reserve, hwcoll, two reports)" \
    "$(value ' | [.odd.events[] | .[1]] | sort | join(",")')" "hwcoll,report,report,reserve"
expect_eq "... each naming the job" "$(value ' | [.odd.events[] | .[2]] | unique | join(",")')" "$ODD"
expect_no_match "... and never the session token" "$(value .odd.text)" "$ODD_SESSION"
ODD_RE=$(printf '%s' "$ODD_PATH" | sed 's/[.+]/\\&/g')
expect_match "... one lookup, the id escaped" "$(value '.urls | join(" ")')" "/v1/search\\?q=$ODD_RE&limit="
expect_match "... and in the events' query" "$(value '.urls | join(" ")')" "job_id=$ODD_RE( |$)"
expect_no_match "... no node events asked for a name no node can have" "$(value '.urls | join(" ")')" "node=$ODD_RE"
expect_match "... and the address bar links to it" "$(value .odd.hash)" "^#find=$ODD_RE$"

expect_eq "search nid099: the node is shown" "$(value .drained.nodeShown)" true
expect_eq "... drained" "$(value '.drained.node["node-drained"]')" drained
expect_eq "... with its reason as text, markup and all" "$(value '.drained.node["node-reason"]')" "$XSS"
expect_eq "... which made no element" "$(value .drained.imgs)" 0
expect_eq "... no inventory here" "$(value '.drained.node["node-inventory"]')" "no inventory configured"
expect_eq "... the job whose services it may hold: 4244, failed" \
    "$(value ' | [.drained.nodeJobs[] | .[0] + ":" + .[2] + ":" + .[4] + ":" + .[6]] | join(" ")')" "4244:active:failed:yes"
expect_match "... its events: the report and the drain" \
    "$(value ' | [.drained.nodeEvents[] | .[1]] | join(",")')" '^drain,report$|^report,drain$'
expect_eq "search nid101: it still holds quarantined 4250's services" \
    "$(value ' | [.holding.nodeJobs[] | .[0] + ":" + .[2] + ":" + .[4] + ":" + .[6]] | join(" ")')" "4250:releasing:created:yes"
expect_eq "... one job to clean up" "$(value '.holding.node["node-holding"]')" 1
expect_eq "search nid999 (no such node): nothing shown" \
    "$(value ' | [.nobody.jobShown, .nobody.nodeShown] | map(tostring) | join(",")')" "false,false"
expect_match "... and the page says so" "$(value .nobody.note)" '^No job or node named “nid999”'
expect_eq "search <b>x</b>: nothing shown" \
    "$(value ' | [.neither.jobShown, .neither.nodeShown] | map(tostring) | join(",")')" "false,false"
expect_match "... the page says it is neither, and what each must be" "$(value .neither.note)" \
    '^“<b>x</b>” is neither a job id \(1-128 characters from \[A-Za-z0-9._:@\+-\], .*\) nor a node name'
expect_eq "... which made no element" "$(value .neither.imgs)" 0

# A link with #find= opens on the job, here with an admin token (to
# which the API does give the session token): the page still never
# shows it.
browse "$BROKER_URL/ui/#token=$ADMIN_TOKEN&find=$ODD_PATH" \
    --wait 'window.vnibStatusPage && window.vnibStatusPage.searches() >= 1' \
    --screenshot "$BUILD/ui/status-job.png" --eval '({ shown: !document.getElementById("search-job").hidden, input: document.getElementById("search-input").value, text: document.body.innerText, hash: location.hash })'
expect_eq "a #find= link looks the job up at once" "$(value ' | [.shown, .input] | map(tostring) | join(",")')" "true,$ODD"
expect_no_match "... an admin's page shows no session token either" "$(value .text)" "$ODD_SESSION"
expect_eq "... the token left the address bar, the search stayed" "$(value .hash)" "#find=$ODD_PATH"

# A narrow window: the page reflows, nothing wider than the window.
browse "$BROKER_URL/ui/#token=$MONITOR_TOKEN" --width 420 --height 900 --wait "$WAIT" \
    --eval 'document.documentElement.scrollWidth - document.documentElement.clientWidth' \
    --screenshot "$BUILD/ui/status-narrow.png"
expect_eq "a 420-pixel window: no error" "$(jq -c .errors "$T/browser.json")" "[]"
expect_eq "... nothing overflows it" "$(value '')" 0

# A refused token is said so, plainly.
browse "$BROKER_URL/ui/#token=vnib1.not-a-token" --wait "$WAIT" \
    --eval 'document.getElementById("status-line").textContent'
expect_match "a refused token: #status-line says so" "$(value '')" '^Token refused \(HTTP 401'

# The harness catches what it must: the page's own code failing (no
# ResizeObserver constructor makes its start-up throw).
browse "$BROKER_URL/ui/#token=$MONITOR_TOKEN" --wait 'document.readyState === "complete"' \
    --before 'Object.defineProperty(window, "ResizeObserver", { value: 1 });'
expect_match "a deliberate error in the page is reported" \
    "$(jq -r '.errors | join(" ")' "$T/browser.json")" 'uncaught: TypeError'

finish

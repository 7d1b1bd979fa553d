#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Run every test of vnibroker and print one summary line.
#
#   sh tests/run-all.sh BUILD-DIR                     all tests
#   sh tests/run-all.sh --unit-only BUILD-DIR         cmocka unit tests and
#                                                     fuzz replays
#   sh tests/run-all.sh --integration-only BUILD-DIR  integration tests
#   TESTS="0010 0030" sh tests/run-all.sh BUILD-DIR   only matching scripts
#   VNIB_SLURM_VERSIONS="24.11" sh tests/run-all.sh ... the Slurm scripts
#                                                     against these releases
#                                                     only (default: 22.05
#                                                     24.11 26.05)
#
# Unit tests are the cmocka binaries in BUILD/tests/unit; fuzz regression
# replays every committed corpus and crash input through the sanitizer
# build; integration tests are tests/integration/NNNN-*.sh, each against a
# throwaway PostgreSQL and the real vnibrokerd.  The last line is
# "check: N passed, N failed, N skipped" and the exit status is non-zero on
# failure.  A skip (a check that cannot run here: cmocka's skip(), an
# integration script's "ok N # skip REASON") is not a pass; each is listed,
# with its test and reason, before that line.  An integration script's
# "# counts: PASSED FAILED SKIPPED" line may omit SKIPPED (0).
#
#   VNIB_REQUIRE_SLURM=1  the Slurm tests (those using
#                         tests/integration/slurm.sh, 0530, 0590) fail
#                         instead of skipping when they cannot run (not
#                         root): set where Slurm must be tested, as in CI.
set -u

mode=all
case "${1:-}" in
    --unit-only) mode=unit; shift ;;
    --integration-only) mode=integration; shift ;;
esac
BUILD=${1:-build}
TOP=$(cd "$(dirname "$0")/.." && pwd)
case "$BUILD" in /*) ;; *) BUILD=$TOP/$BUILD ;; esac

# As root, the integration tests start daemons and jobs as other users
# (PostgreSQL and Patroni as postgres, the Slurm daemons, jobs as
# nobody), and a checkout may be one they cannot enter (a clone under
# /root, or under a mode-0700 directory).  So that every run finds what
# would fail there, even from a checkout others can enter (as CI's is),
# root runs them from a private view: in a mount namespace of its own,
# the checkout is bound under a mode-0700 directory and everything runs
# from that path.  Nothing outside the namespace sees the mount; the
# directory is removed afterwards.  VNIB_PRIVATE_VIEW is the view's path
# (0590-private-checkout checks that others cannot enter it);
# VNIB_PRIVATE_VIEW=none runs in place.
if [ "$(id -u)" -eq 0 ] && [ "$mode" != unit ] && [ -z "${VNIB_PRIVATE_VIEW:-}" ]; then
    view=$(mktemp -d "${TMPDIR:-/tmp}/vnib-private.XXXXXX")
    chmod 700 "$view"
    mkdir "$view/vnibroker"
    case "$BUILD" in
        "$TOP"/*) vbuild=$view/vnibroker/${BUILD#"$TOP"/} ;;
        *) vbuild=$BUILD ;;
    esac
    modearg=""
    [ "$mode" = integration ] && modearg=--integration-only
    # Whether a namespace and the mount can be made here (a container may
    # refuse them), then the run itself.
    if unshare --mount --propagation private \
        mount --bind "$TOP" "$view/vnibroker" 2>/dev/null; then
        unshare --mount --propagation private sh -c '
            mount --bind "$1" "$2/vnibroker" && cd "$2/vnibroker" &&
                VNIB_PRIVATE_VIEW=$2/vnibroker exec sh tests/run-all.sh $3 "$4"
        ' sh "$TOP" "$view" "$modearg" "$vbuild"
        rc=$?
        rmdir "$view/vnibroker" "$view"
        exit "$rc"
    fi
    rmdir "$view/vnibroker" "$view"
    echo "run-all: cannot bind the checkout in a mount namespace of its own" \
        "(unshare --mount); the tests run in place"
    VNIB_PRIVATE_VIEW=none
fi
export VNIB_PRIVATE_VIEW=${VNIB_PRIVATE_VIEW:-none}
export VNIB_BUILD=$BUILD
export VNIB_OPENAPI=$TOP/server/api/openapi.yaml
# Leaks are errors; libmicrohttpd and libpq keep a few process-lifetime
# allocations that are not ours, listed in the suppressions file.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$TOP/tests/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

passed=0
failed=0
skipped=0
failures=""
log=$(mktemp -d "${TMPDIR:-/tmp}/vnib-check.XXXXXX")

note_fail () {
    failed=$((failed + ${2:-1}))
    failures="$failures $1"
}

# note_skips NAME N LINES: N skips of test NAME, LINES their reasons (one
# per line), kept in $log/skips for the list before the summary.
note_skips () {
    skipped=$((skipped + $2))
    printf '%s\n' "$3" | sed "/^\$/d; s|^|    $1: |" >>"$log/skips"
}

run_unit () {
    for bin in "$BUILD"/tests/unit/*/test_*; do
        [ -x "$bin" ] || continue
        name=$(basename "$bin")
        out=$log/$name.out
        "$bin" >"$out" 2>&1
        rc=$?
        p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
        f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
        s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$out" | tail -n 1)
        p=${p:-0}
        f=${f:-0}
        s=${s:-0}
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
            f=1 # crashed or a sanitizer stopped it
        fi
        passed=$((passed + p))
        # A test's reason is a "skip: REASON" line it printed before skip().
        [ "$s" -eq 0 ] || note_skips "$name" "$s" "$(awk '
            /^\[ RUN      \] / { t = substr($0, 14); why = "" }
            /^skip: / { why = substr($0, 7) }
            /^\[  SKIPPED \] / && !/test\(s\)/ && t != "" {
                print t ": " (why != "" ? why : "(no reason given)"); t = ""
            }' "$out")"
        if [ "$f" -gt 0 ]; then
            note_fail "$name" "$f"
            echo "FAIL unit $name ($p passed, $f failed)"
            sed 's/^/    /' "$out" | tail -n 40
        else
            sk=""
            [ "$s" -eq 0 ] || sk=", $s skipped"
            echo "ok   unit $name ($p tests$sk)"
        fi
    done
}

run_fuzz_regressions () {
    for bin in "$BUILD"/tests/fuzz/replay_*; do
        [ -x "$bin" ] || continue
        target=${bin##*/replay_}
        out=$log/fuzz-$target.out
        if "$bin" "$TOP/tests/fuzz/corpus/$target" "$TOP/tests/fuzz/regression/$target" \
            >"$out" 2>&1; then
            passed=$((passed + 1))
            echo "ok   fuzz $target: $(tail -n 1 "$out")"
        else
            note_fail "fuzz-$target"
            echo "FAIL fuzz $target"
            sed 's/^/    /' "$out" | tail -n 40
        fi
    done
}

# One integration script, run as LABEL (its name in the summary), with the
# environment given before it.  Its report (one line, and on failure the
# failed checks and the end of its output) is printed whole, under a lock,
# so that the reports of scripts run at once never interleave; its counts
# go to $log/results and its skips to $log/skips.d/LABEL, which the summary
# adds up.
run_script () {
    t=$1
    label=$2
    shift 2
    out=$log/$label.out
    rep=$log/$label.report
    start=$(date +%s)
    env "$@" bash "$t" >"$out" 2>&1
    rc=$?
    counts=$(sed -n 's/^# counts: //p' "$out" | tail -n 1)
    set -- $counts
    p=${1:-0} f=${2:-1} s=${3:-0}
    [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
    [ "$s" -eq 0 ] || sed -n 's/^ok [0-9]* # skip //p' "$out" |
        sed "s|^|    $label: |" >"$log/skips.d/$label"
    secs=$(($(date +%s) - start))
    sk=""
    [ "$s" -eq 0 ] || sk=", $s skipped"
    if [ "$f" -gt 0 ]; then
        {
            echo "FAIL integration $label ($p passed, $f failed$sk, ${secs}s)"
            # The failed checks first (the tail below may start after them).
            grep '^not ok ' "$out" | head -n 20 | sed 's/^/    /'
            grep -v '^ok ' "$out" | sed 's/^/    /' | tail -n 60
        } >"$rep"
    else
        echo "ok   integration $label ($p checks$sk, ${secs}s)" >"$rep"
    fi
    flock "$log/print.lock" cat "$rep"
    echo "$p $f $s $label" >>"$log/results"
}

# A script that starts a Slurm cluster (it sources slurm.sh) runs once per
# Slurm release in VNIB_SLURM_VERSIONS, labelled NAME@VERSION.
SLURM_VERSIONS=${VNIB_SLURM_VERSIONS:-22.05 24.11 26.05}

# Integration scripts run VNIB_CHECK_JOBS at a time (default 2, 1 where
# the machine has one CPU; 1 runs them one after the other, in order).
# Each is an item in a queue directory that a worker claims by renaming
# it (one rename wins): the scripts that run Slurm daemons (those that
# source slurm.sh, and those marked "# run-all: slurm") in $log/q.slurm,
# one at a time, by the first worker, which moves on to the other queue
# when that one is empty; every other script in $log/q.other, by any
# worker.  Scripts pick their own free ports and work under their own
# directories, so any two may run at once; Slurm clusters are kept apart
# only because they are the heaviest and the most sensitive to load.
JOBS=${VNIB_CHECK_JOBS:-$([ "$(nproc 2>/dev/null || echo 1)" -ge 2 ] && echo 2 || echo 1)}

queue_integration () {
    mkdir -p "$log/q.slurm" "$log/q.other" "$log/claimed" "$log/skips.d"
    : >"$log/results"
    n=0
    for t in "$TOP"/tests/integration/[0-9]*.sh; do
        name=$(basename "$t" .sh)
        if [ -n "${TESTS:-}" ]; then
            case " $TESTS " in *" ${name%%-*} "*) ;; *) continue ;; esac
        fi
        if grep -q '^\. "$(dirname "$0")/slurm.sh"' "$t"; then
            for v in $SLURM_VERSIONS; do
                n=$((n + 1))
                printf '%s\n%s\nVNIB_SLURM_VERSION=%s\n' "$t" "$name@$v" "$v" \
                    >"$log/q.slurm/$(printf %04d $n)"
            done
        else
            n=$((n + 1))
            q=other
            grep -q '^# run-all: slurm$' "$t" && q=slurm
            printf '%s\n%s\n' "$t" "$name" >"$log/q.$q/$(printf %04d $n)"
        fi
    done
}

# worker QUEUE...: claim and run the items of each QUEUE in turn, in
# order, until all are empty.
worker () {
    for q in "$@"; do
        for item in "$log/q.$q"/*; do
            [ -e "$item" ] || continue
            mine=$log/claimed/${item##*/}
            mv "$item" "$mine" 2>/dev/null || continue
            env1=""
            { read -r t && read -r label && read -r env1; } <"$mine"
            if [ -n "$env1" ]; then
                run_script "$t" "$label" "$env1"
            else
                run_script "$t" "$label"
            fi
        done
    done
}

run_integration () {
    queue_integration
    if [ "$JOBS" -le 1 ]; then
        # One after the other, in the scripts' own order.
        for f in "$log/q.slurm"/* "$log/q.other"/*; do
            [ -e "$f" ] && mv "$f" "$log/claimed/"
        done
        mv "$log/claimed"/* "$log/q.other/" 2>/dev/null
        worker other
    else
        pids=""
        worker slurm other &
        pids="$pids $!"
        i=1
        while [ "$i" -lt "$JOBS" ]; do
            worker other &
            pids="$pids $!"
            i=$((i + 1))
        done
        wait $pids
    fi
    # The workers' counts and skips, in the scripts' order.
    sort -k4,4 "$log/results" >"$log/results.sorted"
    while read -r p f s label; do
        passed=$((passed + p))
        [ "$f" -eq 0 ] || note_fail "$label" "$f"
        skipped=$((skipped + s))
    done <"$log/results.sorted"
    for f in "$log/skips.d"/*; do
        [ -e "$f" ] && cat "$f" >>"$log/skips"
    done
}

case $mode in
    unit) run_unit; run_fuzz_regressions ;;
    integration) run_integration ;;
    all) run_unit; run_fuzz_regressions; run_integration ;;
esac

if [ -s "$log/skips" ]; then
    echo "skipped:"
    cat "$log/skips"
fi
rm -rf "$log"
[ -z "$failures" ] || echo "failed:$failures"
echo "check: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make check from a private checkout (issue 17): CI may clone under /root,
# which only root can enter.  This copies the tests, the schema and the
# built programs under a mode-0700 directory, with a private umask, and
# runs 0040-migrate (psql, as postgres, reads a migration file) and
# 0500-slurm-harness (sbatch, as nobody, loads the SPANK plugin; Slurm
# runs hooks and a batch script) from there.  Both must pass as they do
# here: what another user must read is copied into the test's own
# directory (lib.sh's share), never read from the checkout.  It also
# checks that this run's other tests ran from tests/run-all.sh's private
# view of the checkout, where any such read fails as it would here.
# run-all: slurm
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
    # It runs 0500-slurm-harness, so it is a Slurm test too.
    skip_slurm "only root's tests run anything as another user"
fi

# tests/run-all.sh, as root, runs every test from a view of the checkout
# under a mode-0700 directory, so that whatever another user would need of
# the checkout fails in every run, not only from a private clone.
if [ "${VNIB_PRIVATE_VIEW:-none}" = none ]; then
    skip "not run from tests/run-all.sh's private view (VNIB_PRIVATE_VIEW=none): this run's other tests could enter the checkout"
else
    expect_eq "this run's tests run from the private view" "$TOP" "$VNIB_PRIVATE_VIEW"
    expect_eq "... which nobody cannot enter" \
        "$(runuser -u nobody -- sh -c "cd '$TOP'" 2>/dev/null || echo refused)" refused
    expect_eq "... nor postgres" \
        "$(runuser -u postgres -- ls "$TOP/schema" >/dev/null 2>&1 || echo refused)" refused
fi

C=$T/private/vnibroker
mkdir -m 700 "$T/private"
(
    umask 077
    mkdir -p "$C/tests" "$C/build" &&
        cp -R "$TOP/tests/integration" "$TOP/schema" "$C/" &&
        mv "$C/integration" "$C/tests/" &&
        cp "$TOP/tests/lsan.supp" "$C/tests/" &&
        for f in vnibrokerd vnibctl vnib-agent fmsim vnib_spank.so; do
            [ ! -f "$BUILD/$f" ] || cp "$BUILD/$f" "$C/build/" || exit 1
        done
) || { not_ok "copy the checkout under $T/private"; finish; }
expect_eq "postgres cannot read the private copy" \
    "$(runuser -u postgres -- cat "$C/schema/0001_init.sql" >/dev/null 2>&1 || echo refused)" refused
expect_eq "nor can nobody" \
    "$(runuser -u nobody -- cat "$C/build/vnib_spank.so" >/dev/null 2>&1 || echo refused)" refused

# The suppressions the sanitizers read are the copy's too.
LSAN_OPTIONS=$(printf '%s' "${LSAN_OPTIONS:-}" | sed "s|$TOP/|$C/|g")
export LSAN_OPTIONS

for t in 0040-migrate 0500-slurm-harness; do
    (cd "$C" && umask 077 && VNIB_BUILD=$C/build bash "tests/integration/$t.sh") \
        >"$T/$t.out" 2>&1
    rc=$?
    # "# counts: PASSED FAILED SKIPPED": every check ran and passed.
    counts=$(sed -n 's/^# counts: //p' "$T/$t.out" | tail -n 1)
    read -r c_pass c_fail c_skip <<<"$counts"
    if [ "$rc" -eq 0 ] && [ "${c_pass:-0}" -gt 0 ] && [ "${c_fail:-1}" = 0 ] &&
        [ "${c_skip:-0}" = 0 ]; then
        ok "$t passes from a checkout under a 0700 directory ($c_pass checks)"
    else
        not_ok "$t passes from a checkout under a 0700 directory (exit $rc, counts '$counts')"
        grep '^not ok' "$T/$t.out" | head -n 20 | sed 's/^/#   /'
    fi
done
finish

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for slurmctld's free VNI count of the switch plugin
 * (plugins/slurm/switch/swv_free.c): admission against the broker's
 * count and the claims of started jobs, the nudge when VNIs come back,
 * the first poll of a fresh count, and the hold while the broker does
 * not answer (issue 45).  Most run on a fake clock (the *_at calls);
 * the poll thread's run against a fake fetch.  The source is compiled
 * in: it is part of no library.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugins/slurm/switch/swv_free.c"

/* slurmctld's free count: admits while the count allows, counts what
 * started jobs claimed, forgets claims after claim_ms, admits everything
 * when the count is unknown or stale, and asks for a scheduling pass
 * once VNIs come back for a refused job. */
static void test_free_count(void **state)
{
    vnib_error_t err = {0};
    struct swv_free *f;
    long free_vnis = 0;

    (void)state;
    assert_null(swv_free_create(0, 1000, 0, NULL, NULL, NULL, NULL, &err));
    assert_null(swv_free_create(1000, 0, 0, NULL, NULL, NULL, NULL, &err));
    f = swv_free_create(1000, 3200, 0, NULL, NULL, NULL, NULL, &err);
    assert_non_null(f);
    /* never fetched: admitted, count unknown */
    assert_true(swv_free_admit_at(f, 4, 0, 5000, &free_vnis));
    assert_int_equal(free_vnis, -1);

    swv_free_update_at(f, 5, 2, 10000);
    /* the test alone claims nothing: asked twice, the same answer */
    assert_true(swv_free_admit_at(f, 5, 0, 10000, &free_vnis));
    assert_true(swv_free_admit_at(f, 5, 0, 10000, &free_vnis));
    assert_int_equal(free_vnis, 5);
    swv_free_claim_at(f, 1, 2, 0, 10000);
    swv_free_claim_at(f, 2, -1, 0, 10100); /* the default, 2 */
    assert_true(swv_free_admit_at(f, 1, 0, 10200, &free_vnis));
    assert_int_equal(free_vnis, 1);
    assert_false(swv_free_admit_at(f, 2, 0, 10200, &free_vnis));
    assert_false(swv_free_admit_at(f, -1, 0, 10200, &free_vnis));
    swv_free_claim_at(f, 3, 1, 0, 10300);
    assert_false(swv_free_admit_at(f, 1, 0, 10400, &free_vnis));
    assert_int_equal(free_vnis, 0);
    /* the default changes: so does what its claims count */
    swv_free_update_at(f, 5, 1, 10500);
    assert_true(swv_free_admit_at(f, 1, 0, 10500, &free_vnis));
    assert_int_equal(free_vnis, 1);
    swv_free_update_at(f, 5, 2, 10600);

    /* no nudge while nothing came back */
    swv_free_update_at(f, 5, 2, 11000);
    assert_false(swv_free_should_nudge(f, 11000));
    assert_false(swv_free_admit_at(f, 1, 0, 11000, &free_vnis));
    /* after claim_ms the claims are gone: VNIs came back for the refused
     * jobs, one nudge */
    swv_free_update_at(f, 5, 2, 13500);
    assert_true(swv_free_should_nudge(f, 13500));
    assert_false(swv_free_should_nudge(f, 13500));
    assert_true(swv_free_admit_at(f, 5, 0, 13500, &free_vnis));
    assert_int_equal(free_vnis, 5);

    /* stale after 3 intervals without a fetch: admitted, unknown */
    assert_true(swv_free_admit_at(f, 4, 0, 13500 + 3001, &free_vnis));
    assert_int_equal(free_vnis, -1);
    swv_free_destroy(f);
}

/* Issue 45 (a): a job that needs no VNI starts, even when the count
 * shows fewer than none free and unclaimed. */
static void test_free_zero_need(void **state)
{
    vnib_error_t err = {0};
    struct swv_free *f;
    long free_vnis = 0;

    (void)state;
    f = swv_free_create(1000, 10000, 0, NULL, NULL, NULL, NULL, &err);
    assert_non_null(f);
    swv_free_update_at(f, 1, 0, 1000);
    swv_free_claim_at(f, 1, 2, 0, 1000);
    swv_free_claim_at(f, 2, 1, 0, 1000);
    assert_false(swv_free_admit_at(f, 1, 0, 1100, &free_vnis));
    assert_int_equal(free_vnis, -2);
    assert_true(swv_free_admit_at(f, 0, 0, 1100, &free_vnis));
    /* the broker's default is none: a job asking for it needs none */
    assert_true(swv_free_admit_at(f, -1, 0, 1100, &free_vnis));
    /* no VNI of its own, one for its first step: it waits */
    assert_false(swv_free_admit_at(f, 0, 1, 1100, &free_vnis));
    /* a job that needs nothing claims nothing */
    swv_free_claim_at(f, 3, 0, 0, 1200);
    assert_false(swv_free_admit_at(f, 1, 0, 1200, &free_vnis));
    assert_int_equal(free_vnis, -2);
    swv_free_destroy(f);
}

/* Issue 45 (b): a job's claim ends at the first poll begun after the
 * plugin reserved it, or at once when it ends unreserved: the count
 * never counts a reserved job twice past that poll, nor goes below
 * none because of it. */
static void test_free_reserved(void **state)
{
    vnib_error_t err = {0};
    struct swv_free *f;
    long free_vnis = 0;
    uint32_t j;

    (void)state;
    f = swv_free_create(1000, 10000, 0, NULL, NULL, NULL, NULL, &err);
    assert_non_null(f);
    /* a pool of 6: six 1-VNI jobs start */
    swv_free_update_at(f, 6, 1, 1000);
    for (j = 1; j <= 6; j++) {
        assert_true(swv_free_admit_at(f, 1, 0, 1000, &free_vnis));
        swv_free_claim_at(f, j, 1, 0, 1000);
    }
    assert_false(swv_free_admit_at(f, 1, 0, 1000, &free_vnis));
    assert_int_equal(free_vnis, 0);
    /* four reserve at 1500; a poll begun at 1400 (before the reserves)
     * answers 2 free: all six still claimed, not below none by more
     * than the broker's lag */
    for (j = 1; j <= 4; j++)
        swv_free_reserved_at(f, j, true, 1500);
    swv_free_reserved_at(f, 99, true, 1500); /* no claim: nothing */
    swv_free_update_at(f, 6, 1, 1400);
    assert_false(swv_free_admit_at(f, 1, 0, 1600, &free_vnis));
    assert_int_equal(free_vnis, 0);
    /* a poll begun at 2000 shows the four: 2 free, 2 claimed */
    swv_free_update_at(f, 2, 1, 2000);
    assert_false(swv_free_admit_at(f, 1, 0, 2100, &free_vnis));
    assert_int_equal(free_vnis, 0);
    /* job 5 ends unreserved: its claim ends now, no poll needed */
    swv_free_ended(f, 5);
    assert_true(swv_free_admit_at(f, 1, 0, 2200, &free_vnis));
    assert_int_equal(free_vnis, 1);
    /* job 6 reserves, then ends before a poll showed it: counted until
     * a poll begun after its reserve */
    swv_free_reserved_at(f, 6, true, 2300);
    swv_free_ended(f, 6);
    swv_free_update_at(f, 2, 1, 2300); /* begun with the reserve */
    assert_int_equal(f->claimed_vnis, 1);
    swv_free_update_at(f, 1, 1, 2400);
    assert_true(swv_free_admit_at(f, 1, 0, 2500, &free_vnis));
    assert_int_equal(free_vnis, 1);
    assert_null(f->by_claim.head);
    assert_int_equal(f->claimed_vnis, 0);
    assert_int_equal(f->claimed_deflt, 0);
    /* a requeued job's second start replaces its first claim */
    swv_free_claim_at(f, 7, 1, 0, 2600);
    swv_free_claim_at(f, 7, 1, 0, 2700);
    assert_false(swv_free_admit_at(f, 1, 0, 2700, &free_vnis));
    assert_int_equal(free_vnis, 0);
    /* NULL accepted where Slurm has no count (before 25.11) */
    swv_free_reserved(NULL, 7, true);
    swv_free_ended(NULL, 7);
    swv_free_destroy(f);
}

/* Issue 45 (d): a job that asks for per-step VNIs needs its first
 * step's too; a stepmgr job's reserve (the job's VNIs only) leaves the
 * step's part claimed until the job ends. */
static void test_free_step_need(void **state)
{
    vnib_error_t err = {0};
    struct swv_free *f;
    long free_vnis = 0;

    (void)state;
    f = swv_free_create(1000, 10000, 0, NULL, NULL, NULL, NULL, &err);
    assert_non_null(f);
    swv_free_update_at(f, 3, 1, 1000);
    assert_false(swv_free_admit_at(f, 1, 3, 1000, &free_vnis));
    assert_false(swv_free_admit_at(f, -1, 3, 1000, &free_vnis));
    assert_true(swv_free_admit_at(f, 1, 2, 1000, &free_vnis));
    swv_free_claim_at(f, 1, 1, 2, 1000);
    assert_false(swv_free_admit_at(f, 0, 1, 1000, &free_vnis));
    assert_int_equal(free_vnis, 0);
    /* its stepmgr reserve: the job's VNI is counted by the broker after
     * the next poll, its step's 2 stay claimed */
    swv_free_reserved_at(f, 1, false, 1100);
    swv_free_update_at(f, 2, 1, 1200);
    assert_int_equal(f->claimed_vnis, 2);
    assert_false(swv_free_admit_at(f, 1, 0, 1200, &free_vnis));
    assert_int_equal(free_vnis, 0);
    /* the job ends: its step's part goes at once */
    swv_free_ended(f, 1);
    assert_true(swv_free_admit_at(f, 1, 1, 1300, &free_vnis));
    assert_int_equal(free_vnis, 2);
    assert_null(f->by_claim.head);
    swv_free_destroy(f);
}

/* A later step's own VNIs come only from what is free and unclaimed
 * (its first step's from its job's claim): a step of a job admitted
 * earlier never takes the VNIs a job admitted since was promised. */
static void test_free_step_fits(void **state)
{
    vnib_error_t err = {0};
    struct swv_free *f;
    long avail = 0;

    (void)state;
    f = swv_free_create(1000, 10000, 0, NULL, NULL, NULL, NULL, &err);
    assert_non_null(f);
    /* unknown: the broker decides */
    assert_true(swv_free_step_fits_at(f, 1, 1, 1, 500, &avail));
    assert_int_equal(avail, -1);
    swv_free_update_at(f, 3, 1, 1000);
    /* job 1 (1 VNI, 1 for its first step) starts: its first step fits
     * on its own claim though nothing else is free */
    swv_free_claim_at(f, 1, 1, 1, 1000);
    swv_free_claim_at(f, 2, 1, 0, 1000);
    assert_true(swv_free_step_fits_at(f, 1, 1, 1, 1100, &avail));
    assert_int_equal(avail, 1);
    /* reserved with its first step: its second step finds none free
     * and unclaimed (job 2's VNI is promised) */
    swv_free_reserved_at(f, 1, true, 1200);
    swv_free_update_at(f, 1, 1, 1300);
    assert_false(swv_free_step_fits_at(f, 1, 1, 1, 1400, &avail));
    assert_int_equal(avail, 0);
    /* a job with no VNIs of its own has nothing to fall back on */
    assert_true(swv_free_step_fits_at(f, 3, 0, 1, 1400, &avail));
    assert_int_equal(avail, -1);
    /* job 2 reserved, and a VNI back: the step fits */
    swv_free_reserved_at(f, 2, false, 1500);
    swv_free_update_at(f, 1, 1, 1600);
    assert_true(swv_free_step_fits_at(f, 1, 1, 1, 1700, &avail));
    assert_int_equal(avail, 1);
    assert_false(swv_free_step_fits_at(f, 1, 1, 2, 1700, &avail));
    /* stale: the broker decides */
    assert_true(swv_free_step_fits_at(f, 1, 1, 2, 1600 + 3001, &avail));
    swv_free_destroy(f);
}

static int fetches;
static long fetch_free = 3;
static useconds_t fetch_sleep_us;
static bool fetch_fails;

static int fake_fetch(void *arg, long *freep, long *defp, vnib_error_t *errp)
{
    (void)arg;
    if (fetch_sleep_us > 0)
        usleep(fetch_sleep_us);
    fetches++;
    if (fetch_fails) {
        errno = ECONNREFUSED;
        return errprintf(errp, "connection refused");
    }
    *freep = fetch_free;
    *defp = 1;
    return 0;
}

/* The poll thread fetches at once, then every interval, and stops. */
static void test_free_thread(void **state)
{
    vnib_error_t err = {0};
    struct swv_free *f;
    long free_vnis = 0;
    int i;

    (void)state;
    fetches = 0;
    f = swv_free_create(20, 1000, 0, fake_fetch, NULL, NULL, NULL, &err);
    assert_non_null(f);
    for (i = 0; i < 200 && fetches < 3; i++)
        usleep(10000);
    assert_true(fetches >= 3);
    assert_false(swv_free_admit(f, 4, 0, &free_vnis));
    assert_int_equal(free_vnis, 3);
    swv_free_destroy(f);
}

/* Issue 45 (c): a fresh count answers its first admission from the
 * broker's count, asked before it; a broker that fails or is slower
 * than the bound leaves every job admitted, the reserve deciding. */
static void test_free_first(void **state)
{
    vnib_error_t err = {0};
    struct swv_free *f;
    long free_vnis = 0;
    int64_t t0;

    (void)state;
    /* the broker answers at once: known from the first admission on */
    fetch_free = 2;
    f = swv_free_create(60000, 10000, 1000, fake_fetch, NULL, NULL, NULL, &err);
    assert_non_null(f);
    assert_false(swv_free_admit(f, 3, 0, &free_vnis));
    assert_int_equal(free_vnis, 2);
    swv_free_destroy(f);

    /* the broker takes 50 ms: the first admission waits for it */
    fetch_sleep_us = 50000;
    f = swv_free_create(60000, 10000, 1000, fake_fetch, NULL, NULL, NULL, &err);
    assert_non_null(f);
    assert_false(swv_free_admit(f, 3, 0, &free_vnis));
    assert_int_equal(free_vnis, 2);
    swv_free_destroy(f);

    /* slower than the bound: creation returns at the bound, admitting */
    fetch_sleep_us = 400000;
    t0 = monotime_ms();
    f = swv_free_create(60000, 10000, 100, fake_fetch, NULL, NULL, NULL, &err);
    assert_non_null(f);
    assert_true(monotime_ms() - t0 < 350);
    assert_true(swv_free_admit(f, 3, 0, &free_vnis));
    assert_int_equal(free_vnis, -1);
    swv_free_destroy(f);

    /* unreachable: admitted at once, the reserve decides */
    fetch_sleep_us = 0;
    fetch_fails = true;
    f = swv_free_create(60000, 10000, 1000, fake_fetch, NULL, NULL, NULL, &err);
    assert_non_null(f);
    assert_true(swv_free_admit(f, 3, 0, &free_vnis));
    assert_int_equal(free_vnis, -1);
    swv_free_destroy(f);
    fetch_fails = false;
    fetch_free = 3;
}

/* Issue 45 part 2: while the count is unknown or stale, a job that
 * needs VNIs waits for the broker up to the hold, counted from the start
 * of its last answer (or from the hold's start before any answer), and
 * from the first failed poll on; one that needs none never waits; past
 * the hold every job is admitted; a job held is nudged when the broker
 * answers or the hold runs out; a hold of 0 changes nothing. */
static void test_free_hold(void **state)
{
    vnib_error_t err = {0};
    struct swv_free *f;
    long free_vnis = 0;

    (void)state;
    f = swv_free_create(1000, 10000, 0, NULL, NULL, NULL, NULL, &err);
    assert_non_null(f);
    swv_free_set_hold(f, 60000, 1000);
    /* a fresh slurmctld whose broker has not answered: held from 1000 */
    assert_false(swv_free_admit_at(f, 1, 0, 2000, &free_vnis));
    assert_int_equal(free_vnis, -1);
    assert_false(swv_free_admit_at(f, -1, 0, 2000, &free_vnis)); /* unknown */
    assert_false(swv_free_admit_at(f, 0, 1, 2000, &free_vnis));
    /* a job that needs no VNI is never held */
    assert_true(swv_free_admit_at(f, 0, 0, 2000, &free_vnis));
    assert_int_equal(free_vnis, -1);
    /* still within the hold: no nudge, still held */
    assert_false(swv_free_should_nudge(f, 60999));
    assert_false(swv_free_admit_at(f, 1, 0, 60999, &free_vnis));
    /* the hold is over (60 s after its start): one nudge, all admitted */
    assert_true(swv_free_should_nudge(f, 61000));
    assert_false(swv_free_should_nudge(f, 61000));
    assert_true(swv_free_admit_at(f, 1, 0, 61000, &free_vnis));
    assert_int_equal(free_vnis, -1);
    assert_true(swv_free_admit_at(f, -1, 2, 61000, &free_vnis));
    assert_false(swv_free_should_nudge(f, 61000)); /* none held since */

    /* the broker answers (default 0) at 70000; unreachable from then on:
     * stale after 3 intervals, held until 70000 + 60000 */
    swv_free_update_at(f, 5, 0, 70000);
    assert_true(swv_free_admit_at(f, 1, 0, 70000, &free_vnis));
    assert_int_equal(free_vnis, 5);
    assert_true(swv_free_admit_at(f, 1, 0, 73000, &free_vnis)); /* fresh */
    assert_false(swv_free_admit_at(f, 1, 0, 73001, &free_vnis));
    assert_int_equal(free_vnis, -1);
    /* the broker's default is known to be none: that job needs none */
    assert_true(swv_free_admit_at(f, -1, 0, 73001, &free_vnis));
    assert_true(swv_free_admit_at(f, 0, 0, 73001, &free_vnis));
    assert_false(swv_free_should_nudge(f, 80000));
    /* it answers again: the held jobs are nudged at once, and start */
    swv_free_update_at(f, 5, 0, 90000);
    assert_true(swv_free_should_nudge(f, 90000));
    assert_false(swv_free_should_nudge(f, 90000));
    assert_true(swv_free_admit_at(f, 1, 0, 90000, &free_vnis));
    assert_int_equal(free_vnis, 5);
    /* a job refused for VNIs; then a poll fails: from then on, before the
     * count is stale, its wait for VNIs is a wait for the broker */
    assert_false(swv_free_admit_at(f, 6, 0, 90000, &free_vnis));
    assert_int_equal(free_vnis, 5);
    errprintf(&err, "connection refused");
    assert_false(swv_free_failed_at(f, &err, 90100));
    assert_false(swv_free_admit_at(f, 1, 0, 90200, &free_vnis));
    assert_int_equal(free_vnis, -1);
    assert_true(swv_free_admit_at(f, 0, 0, 90200, &free_vnis));
    assert_false(swv_free_admit_at(f, 6, 0, 95000, &free_vnis));
    assert_int_equal(free_vnis, -1);
    memset(&err, 0, sizeof(err));
    swv_free_last_error(f, &err);
    assert_string_equal(err.text, "connection refused");
    /* the end of the hold, 60 s after the last answer: said once, and
     * the held jobs are nudged and admitted */
    assert_false(swv_free_should_nudge(f, 149999));
    assert_false(swv_free_failed_at(f, &err, 149999));
    assert_true(swv_free_failed_at(f, &err, 150000));
    assert_false(swv_free_failed_at(f, &err, 150200));
    assert_true(swv_free_should_nudge(f, 150200));
    assert_true(swv_free_admit_at(f, 6, 0, 150200, &free_vnis));
    assert_int_equal(free_vnis, -1);

    /* a hold of 0: a failed poll changes nothing while the count is
     * fresh, and a stale count admits at once, as before the hold */
    swv_free_set_hold(f, 0, 150000);
    swv_free_update_at(f, 5, 0, 160000);
    swv_free_last_error(f, &err);
    assert_string_equal(err.text, "");
    errprintf(&err, "connection refused");
    assert_false(swv_free_failed_at(f, &err, 160100));
    assert_true(swv_free_admit_at(f, 1, 0, 160200, &free_vnis));
    assert_int_equal(free_vnis, 5);
    assert_false(swv_free_admit_at(f, 6, 0, 160200, &free_vnis));
    assert_int_equal(free_vnis, 5);
    assert_true(swv_free_admit_at(f, 1, 0, 163001, &free_vnis));
    assert_int_equal(free_vnis, -1);
    assert_false(swv_free_should_nudge(f, 163001));
    assert_false(swv_free_failed_at(f, &err, 300000));
    swv_free_destroy(f);

    /* a fresh count with a hold of 0: never held */
    f = swv_free_create(1000, 10000, 0, NULL, NULL, NULL, NULL, &err);
    assert_non_null(f);
    swv_free_set_hold(f, 0, 1000);
    assert_true(swv_free_admit_at(f, 1, 0, 2000, &free_vnis));
    assert_int_equal(free_vnis, -1);
    swv_free_destroy(f);
}

static atomic_int hold_nudges, hold_events[3], hold_texts_bad;

static void hold_nudge(void)
{
    atomic_fetch_add(&hold_nudges, 1);
}

static void hold_log(void *arg, enum swv_free_event event, const char *text)
{
    (void)arg;
    if (event != SWV_FREE_BACK && strstr(text, "connection refused") == NULL)
        atomic_fetch_add(&hold_texts_bad, 1);
    atomic_fetch_add(&hold_events[event], 1);
}

/* The poll thread with an unreachable broker: jobs wait for it with its
 * error at hand; when the hold runs out, the log says so once and the
 * scheduler is nudged; when it answers again, the log says so. */
static void test_free_hold_thread(void **state)
{
    vnib_error_t err = {0};
    struct swv_free *f;
    long free_vnis = 0;
    int i;

    (void)state;
    fetch_fails = true;
    f = swv_free_create(
        20, 10000, 1000, fake_fetch, hold_log, hold_nudge, NULL, &err);
    assert_non_null(f);
    swv_free_set_hold(f, 300, monotime_ms());
    assert_false(swv_free_admit(f, 1, 0, &free_vnis));
    assert_int_equal(free_vnis, -1);
    swv_free_last_error(f, &err);
    assert_string_equal(err.text, "connection refused");
    assert_int_equal(atomic_load(&hold_events[SWV_FREE_FAILING]), 1);
    /* the hold runs out (within 10 s): one nudge, one line, admitted */
    for (i = 0; i < 1000 && atomic_load(&hold_nudges) == 0; i++)
        usleep(10000);
    assert_int_equal(atomic_load(&hold_nudges), 1);
    for (i = 0; i < 1000 && atomic_load(&hold_events[SWV_FREE_HOLD_OVER]) == 0;
         i++)
        usleep(10000);
    assert_int_equal(atomic_load(&hold_events[SWV_FREE_HOLD_OVER]), 1);
    assert_true(swv_free_admit(f, 1, 0, &free_vnis));
    assert_int_equal(free_vnis, -1);
    /* the broker answers: the count is back, the error gone */
    fetch_fails = false;
    for (i = 0; i < 1000 && atomic_load(&hold_events[SWV_FREE_BACK]) == 0; i++)
        usleep(10000);
    assert_int_equal(atomic_load(&hold_events[SWV_FREE_BACK]), 1);
    assert_false(swv_free_admit(f, 4, 0, &free_vnis));
    assert_int_equal(free_vnis, 3);
    swv_free_destroy(f);
    assert_int_equal(atomic_load(&hold_texts_bad), 0);
    assert_int_equal(atomic_load(&hold_events[SWV_FREE_HOLD_OVER]), 1);
    assert_int_equal(atomic_load(&hold_events[SWV_FREE_FAILING]), 1);
    assert_int_equal(atomic_load(&hold_nudges), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_free_count),
        cmocka_unit_test(test_free_zero_need),
        cmocka_unit_test(test_free_reserved),
        cmocka_unit_test(test_free_step_need),
        cmocka_unit_test(test_free_step_fits),
        cmocka_unit_test(test_free_thread),
        cmocka_unit_test(test_free_first),
        cmocka_unit_test(test_free_hold),
        cmocka_unit_test(test_free_hold_thread),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

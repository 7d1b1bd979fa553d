/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The summary `vnibctl status` prints (see statusfmt.h): aligned
 * "key: value" lines as print.c writes them, then the quarantined
 * reservations and the drained nodes as cli/table.c tables.  Text from
 * the broker (a node's drain reason, the FM's error) is made harmless for
 * a terminal on the way, and ages are taken against the reply's "time".
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli/statusfmt.h"
#include "cli/table.h"
#include "vnib/error.h"

/* The keys of the summary lines, padded to the longest. */
#define KEY_WIDTH ((int)sizeof("fm last error") - 1)

/* Digits of s from *i, at most n of them (exactly n when exact). */
static int digits(const char *s, size_t *i, int n, bool exact, int *valuep)
{
    int v = 0, got = 0;

    while (got < n && s[*i] >= '0' && s[*i] <= '9') {
        v = v * 10 + (s[*i] - '0');
        (*i)++;
        got++;
    }
    if (got == 0 || (exact && got != n))
        return -1;
    *valuep = v;
    return 0;
}

int statusfmt_parse_time(const char *s, double *tp, vnib_error_t *errp)
{
    struct tm tm = {0};
    int f[6];
    static const char seps[] = "--T::";
    static const int widths[] = {4, 2, 2, 2, 2, 2};
    double frac = 0;
    long offset = 0;
    size_t i = 0;

    for (int k = 0; s && k < 6; k++) {
        if (digits(s, &i, widths[k], true, &f[k]) < 0
            || (k < 5 && s[i++] != seps[k]))
            goto bad;
    }
    if (!s)
        goto bad;
    if (s[i] == '.') {
        double scale = 0.1;
        i++;
        if (s[i] < '0' || s[i] > '9')
            goto bad;
        for (; s[i] >= '0' && s[i] <= '9'; i++, scale /= 10)
            frac += (s[i] - '0') * scale;
    }
    if (s[i] == 'Z' || s[i] == 'z') {
        i++;
    } else if (s[i] == '+' || s[i] == '-') {
        int sign = s[i++] == '-' ? -1 : 1, hh, mm;
        if (digits(s, &i, 2, true, &hh) < 0 || s[i++] != ':'
            || digits(s, &i, 2, true, &mm) < 0 || hh > 23 || mm > 59)
            goto bad;
        offset = sign * (hh * 3600L + mm * 60L);
    } else {
        goto bad;
    }
    if (s[i] != '\0' || f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > 31
        || f[3] > 23 || f[4] > 59 || f[5] > 60)
        goto bad;
    tm.tm_year = f[0] - 1900;
    tm.tm_mon = f[1] - 1;
    tm.tm_mday = f[2];
    tm.tm_hour = f[3];
    tm.tm_min = f[4];
    tm.tm_sec = f[5];
    *tp = (double)timegm(&tm) - (double)offset + frac;
    return 0;
bad:
    errno = EINVAL;
    return errprintf(errp, "'%s' is not an RFC 3339 time", s ? s : "(null)");
}

const char *statusfmt_age(double seconds, char *buf, size_t size)
{
    long long s = isfinite(seconds) && seconds > 0 ? (long long)seconds : 0;

    if (s < 60)
        snprintf(buf, size, "%llds", s);
    else if (s < 3600)
        snprintf(buf, size, "%lldm%02llds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, size, "%lldh%02lldm", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, size, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
    return buf;
}

long long statusfmt_used_percent(long long nfree, long long total)
{
    if (total <= 0)
        return 0;
    long long used = total - nfree < 0 ? 0 : total - nfree;
    return (used * 100 + total / 2) / total;
}

/* ---- the pieces of a line ------------------------------------------------ */

/* What the lines need from the reply, and where they go. */
struct out {
    FILE *f;
    double now; /* the reply's "time"; NAN when absent */
};

/* A member's string, or NULL. */
static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* s with control characters as '?', into buf (truncated to fit). */
static const char *clean(const char *s, char *buf, size_t size)
{
    size_t n = 0;

    if (!s)
        s = "-";
    for (; s[n] && n + 1 < size; n++) {
        unsigned char c = (unsigned char)s[n];
        buf[n] = c < ' ' || c == 0x7f ? '?' : (char)c;
    }
    buf[n] = '\0';
    return buf;
}

/* A member's number as text ("-" when it is not a number). */
static const char *num(json_t *o, const char *key, char *buf, size_t size)
{
    json_t *v = json_object_get(o, key);

    if (json_is_integer(v))
        snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, size, "%.0f", json_real_value(v));
    else
        snprintf(buf, size, "-");
    return buf;
}

/* "s" unless the member is the number 1. */
static const char *plural(json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key)) == 1 ? "" : "s";
}

/* How long ago the time in member key was, against the reply's time:
 * "5m02s", or "-" when either is missing.
 */
static const char *ago(
    const struct out *o, json_t *obj, const char *key, char *buf, size_t size)
{
    double t;

    if (isnan(o->now) || statusfmt_parse_time(str(obj, key), &t, NULL) < 0)
        return strncpy(buf, "-", size);
    return statusfmt_age(o->now - t, buf, size);
}

/* "key: " padded like print.c's lines. */
static void key(const struct out *o, const char *k)
{
    fprintf(o->f, "%s:%*s ", k, KEY_WIDTH - (int)strlen(k), "");
}

/* ---- the summary lines --------------------------------------------------- */

static void line_broker(const struct out *o, json_t *st)
{
    char r[128], v[64], t[40];

    key(o, "broker");
    fprintf(o->f,
            "%s (vnibrokerd %s) at %s\n",
            clean(str(st, "replica"), r, sizeof(r)),
            clean(str(st, "version"), v, sizeof(v)),
            clean(str(st, "time"), t, sizeof(t)));
}

static void line_pool(const struct out *o, json_t *pool)
{
    char fr[24], ac[24], qu[24], co[24], ou[24], to[24];
    json_t *nfree = json_object_get(pool, "free");
    json_t *total = json_object_get(pool, "total");

    key(o, "pool");
    fprintf(o->f,
            "%s free, %s active, %s quarantined, ",
            num(pool, "free", fr, sizeof(fr)),
            num(pool, "active", ac, sizeof(ac)),
            num(pool, "quarantined", qu, sizeof(qu)));
    /* VNIs that wait for leases to expire, when there are any. */
    if (json_integer_value(json_object_get(pool, "cooling")) > 0)
        fprintf(o->f, "%s cooling, ", num(pool, "cooling", co, sizeof(co)));
    fprintf(o->f,
            "%s outside, %s total",
            num(pool, "outside_pool", ou, sizeof(ou)),
            num(pool, "total", to, sizeof(to)));
    if (json_is_integer(nfree) && json_is_integer(total))
        fprintf(o->f,
                ": %lld%% in use",
                statusfmt_used_percent(json_integer_value(nfree),
                                       json_integer_value(total)));
    fputc('\n', o->f);
}

static void line_quarantine(const struct out *o, json_t *q)
{
    char n[24], v[24], a[24];

    key(o, "quarantine");
    fprintf(o->f,
            "%s reservation%s, %s VNI%s, oldest %s\n",
            num(q, "reservations", n, sizeof(n)),
            plural(q, "reservations"),
            num(q, "vnis", v, sizeof(v)),
            plural(q, "vnis"),
            ago(o, q, "oldest_since", a, sizeof(a)));
}

static void line_drained(const struct out *o, json_t *d)
{
    char n[24], nodes[4096];
    const char *list = str(d, "nodes");

    key(o, "drained");
    fprintf(
        o->f, "%s node%s", num(d, "count", n, sizeof(n)), plural(d, "count"));
    if (list && list[0])
        fprintf(o->f, ": %s", clean(list, nodes, sizeof(nodes)));
    fputc('\n', o->f);
}

static void lines_fm(const struct out *o, json_t *fm)
{
    char c[32], a[24], d[24], m[512];
    json_t *queue = json_object_get(fm, "queue");
    json_t *err = json_object_get(fm, "last_error");
    json_t *rec = json_object_get(fm, "last_reconcile");

    key(o, "fm");
    fprintf(o->f, "%s", clean(str(fm, "connection"), c, sizeof(c)));
    if (str(fm, "last_success"))
        fprintf(o->f,
                ", last success %s ago",
                ago(o, fm, "last_success", a, sizeof(a)));
    fputc('\n', o->f);
    key(o, "fm queue");
    fprintf(o->f,
            "%s operation%s, oldest %s\n",
            num(queue, "depth", d, sizeof(d)),
            plural(queue, "depth"),
            statusfmt_age(json_number_value(json_object_get(queue, "oldest_s")),
                          a,
                          sizeof(a)));
    key(o, "fm last error");
    if (json_is_object(err))
        fprintf(o->f,
                "%s ago: %s\n",
                ago(o, err, "time", a, sizeof(a)),
                clean(str(err, "message"), m, sizeof(m)));
    else
        fprintf(o->f, "-\n");
    key(o, "fm reconcile");
    if (json_is_object(rec)) {
        char rl[24], lo[24], fo[24];
        fprintf(o->f,
                "%s ago: %s released, %s lost, %s foreign",
                ago(o, rec, "at", a, sizeof(a)),
                num(rec, "released", rl, sizeof(rl)),
                num(rec, "lost", lo, sizeof(lo)),
                num(rec, "foreign", fo, sizeof(fo)));
        if (str(rec, "error"))
            fprintf(
                o->f, ", error: %s", clean(str(rec, "error"), m, sizeof(m)));
        fputc('\n', o->f);
    } else {
        fprintf(o->f, "-\n");
    }
}

static void line_leader(const struct out *o, json_t *fm)
{
    char r[128], a[24];
    json_t *leader = json_object_get(fm, "leader");

    key(o, "leader");
    if (json_is_object(leader))
        fprintf(o->f,
                "%s for %s",
                clean(str(leader, "replica"), r, sizeof(r)),
                ago(o, leader, "since", a, sizeof(a)));
    else
        fprintf(o->f, "none");
    fprintf(o->f,
            "; this replica %s\n",
            json_is_true(json_object_get(fm, "leading")) ? "leads" : "follows");
}

static void line_database(const struct out *o, json_t *db)
{
    char a[24];
    json_t *age = json_object_get(db, "figures_age_s");

    key(o, "database");
    fprintf(
        o->f, "%s", json_is_true(json_object_get(db, "up")) ? "up" : "down");
    if (json_is_number(age))
        fprintf(o->f,
                ", figures read %s ago",
                statusfmt_age(json_number_value(age), a, sizeof(a)));
    fputc('\n', o->f);
}

/* ---- the tables ---------------------------------------------------------- */

/* "V1,V2" for an array of integers (the caller frees), NULL when out of
 * memory.
 */
static char *vni_list(json_t *vnis)
{
    char *s = NULL;
    size_t size = 0, i;
    json_t *v;
    FILE *f = open_memstream(&s, &size);

    if (!f)
        return NULL;
    json_array_foreach (vnis, i, v)
        fprintf(
            f, "%s%" JSON_INTEGER_FORMAT, i ? "," : "", json_integer_value(v));
    if (fclose(f) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

/* "(the oldest 10 of 35: --quarantine-limit N lists more)" after a
 * table's title when the reply listed fewer than it counted.
 */
static void title(const struct out *o,
                  const char *what,
                  const char *which,
                  size_t listed,
                  json_t *count,
                  const char *flag)
{
    fprintf(o->f, "\n%s", what);
    if (json_is_integer(count)
        && (json_int_t)listed < json_integer_value(count))
        fprintf(o->f,
                " (the %s %zu of %" JSON_INTEGER_FORMAT ": --%s N lists more)",
                which,
                listed,
                json_integer_value(count),
                flag);
    fprintf(o->f, ":\n");
}

static int table_quarantine(const struct out *o, json_t *q, vnib_error_t *errp)
{
    static const char *const headers[] = {
        "JOB_ID", "STEP", "VNIS", "AGE", "WAITING", "NODES"};
    json_t *items = json_object_get(q, "items");
    struct table *t = NULL;
    char *vnis = NULL;
    size_t i;
    json_t *it;
    int rc = -1;

    if (json_array_size(items) == 0)
        return 0;
    if (!(t = table_create(6, headers)))
        goto nomem;
    json_array_foreach (items, i, it) {
        json_t *w = json_object_get(it, "waiting");
        char job[256], step[256], age[24], count[24], nodes[4096];
        if (!(vnis = vni_list(json_object_get(it, "vnis"))))
            goto nomem;
        const char *cells[] = {clean(str(it, "job_id"), job, sizeof(job)),
                               clean(str(it, "step_id"), step, sizeof(step)),
                               vnis,
                               ago(o, it, "since", age, sizeof(age)),
                               num(w, "count", count, sizeof(count)),
                               clean(str(w, "nodes"), nodes, sizeof(nodes))};
        if (table_add(t, cells) < 0)
            goto nomem;
        free(vnis);
        vnis = NULL;
    }
    title(o,
          "quarantined reservations, oldest first",
          "oldest",
          json_array_size(items),
          json_object_get(q, "reservations"),
          "quarantine-limit");
    if (table_print(t, o->f) < 0)
        goto nomem;
    rc = 0;
    goto cleanup;
nomem:
    errprintf(errp, "out of memory");
cleanup:
    free(vnis);
    table_destroy(t);
    return rc;
}

static int table_drained(const struct out *o, json_t *d, vnib_error_t *errp)
{
    static const char *const headers[] = {"NODE", "FOR", "SINCE", "REASON"};
    json_t *items = json_object_get(d, "items");
    struct table *t = NULL;
    size_t i;
    json_t *it;

    if (json_array_size(items) == 0)
        return 0;
    if (!(t = table_create(4, headers)))
        return errprintf(errp, "out of memory");
    json_array_foreach (items, i, it) {
        char node[256], age[24], since[40], reason[512];
        const char *cells[] = {
            clean(str(it, "node"), node, sizeof(node)),
            ago(o, it, "since", age, sizeof(age)),
            clean(str(it, "since"), since, sizeof(since)),
            clean(str(it, "reason"), reason, sizeof(reason))};
        if (table_add(t, cells) < 0) {
            table_destroy(t);
            return errprintf(errp, "out of memory");
        }
    }
    title(o,
          "drained nodes, newest first",
          "newest",
          json_array_size(items),
          json_object_get(d, "count"),
          "drained-limit");
    int rc = table_print(t, o->f);
    table_destroy(t);
    return rc < 0 ? errprintf(errp, "out of memory") : 0;
}

int statusfmt_write(FILE *f, json_t *status, vnib_error_t *errp)
{
    struct out o = {f, NAN};
    json_t *fm = json_object_get(status, "fabric_manager");

    if (!json_is_object(status)) {
        errno = EPROTO;
        return errprintf(errp, "the broker's status is not a JSON object");
    }
    if (statusfmt_parse_time(str(status, "time"), &o.now, NULL) < 0)
        o.now = NAN;
    line_broker(&o, status);
    line_pool(&o, json_object_get(status, "pool"));
    line_quarantine(&o, json_object_get(status, "quarantine"));
    line_drained(&o, json_object_get(status, "drained"));
    lines_fm(&o, fm);
    line_leader(&o, fm);
    line_database(&o, json_object_get(status, "database"));
    if (table_quarantine(&o, json_object_get(status, "quarantine"), errp) < 0
        || table_drained(&o, json_object_get(status, "drained"), errp) < 0) {
        errno = ENOMEM;
        return -1;
    }
    if (ferror(f)) {
        errno = EIO;
        return errprintf(errp, "cannot write the status");
    }
    return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Building, printing and reading back a job's environment (jobenv.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/tclass.h"
#include "agent/jobenv.h"

enum {
    ENV_VNIS,
    ENV_DEVICES,
    ENV_SVC_IDS,
    ENV_TCS,
    ENV_COLL_JOB_ID,
    ENV_COLL_JOB_STEP_ID,
    ENV_COLL_MCAST_TOKEN,
    ENV_COLL_FABRIC_MGR_URL,
    ENV_HWCOLL_ADDRS_PER_JOB,
    ENV_HWCOLL_MIN_NODES,
};

static const char *const names[JOBENV_COUNT] = {
    [ENV_VNIS] = "SLINGSHOT_VNIS",
    [ENV_DEVICES] = "SLINGSHOT_DEVICES",
    [ENV_SVC_IDS] = "SLINGSHOT_SVC_IDS",
    [ENV_TCS] = "SLINGSHOT_TCS",
    [ENV_COLL_JOB_ID] = "FI_CXI_COLL_JOB_ID",
    [ENV_COLL_JOB_STEP_ID] = "FI_CXI_COLL_JOB_STEP_ID",
    [ENV_COLL_MCAST_TOKEN] = "FI_CXI_COLL_MCAST_TOKEN",
    [ENV_COLL_FABRIC_MGR_URL] = "FI_CXI_COLL_FABRIC_MGR_URL",
    [ENV_HWCOLL_ADDRS_PER_JOB] = "FI_CXI_HWCOLL_ADDRS_PER_JOB",
    [ENV_HWCOLL_MIN_NODES] = "FI_CXI_HWCOLL_MIN_NODES",
};

const char *jobenv_name(int i)
{
    return i >= 0 && i < JOBENV_COUNT ? names[i] : NULL;
}

void jobenv_clear(struct jobenv *env)
{
    for (int i = 0; i < JOBENV_COUNT; i++) {
        free(env->value[i]);
        env->value[i] = NULL;
    }
}

static int find_name(const char *name, size_t len)
{
    for (int i = 0; i < JOBENV_COUNT; i++)
        if (strlen(names[i]) == len && strncmp(names[i], name, len) == 0)
            return i;
    return -1;
}

/* Append "sep item" to a growing string. */
static int append(char **s, const char *item)
{
    size_t old = *s ? strlen(*s) : 0;
    char *n = realloc(*s, old + strlen(item) + 2);
    if (!n)
        return -1;
    if (old)
        n[old++] = ',';
    strcpy(n + old, item);
    *s = n;
    return 0;
}

static bool passable(const char *v)
{
    return !strpbrk(v, "\n\r");
}

int jobenv_build(struct jobenv *env,
                 json_t *reservation,
                 const struct nic_info *devs,
                 const int *svc_ids,
                 int ndev,
                 vnib_error_t *errp)
{
    json_t *vnis = json_object_get(reservation, "vnis");
    json_t *from = json_object_get(reservation, "environment");
    char num[32];
    size_t i;
    json_t *v;

    memset(env, 0, sizeof(*env));
    if (json_array_size(vnis) == 0)
        return 0;
    if (ndev > 0) {
        json_array_foreach (vnis, i, v) {
            snprintf(
                num, sizeof(num), "%lld", (long long)json_integer_value(v));
            if (append(&env->value[ENV_VNIS], num) < 0)
                goto nomem;
        }
        for (int d = 0; d < ndev; d++) {
            snprintf(num, sizeof(num), "%d", svc_ids[d]);
            if (append(&env->value[ENV_DEVICES], devs[d].name) < 0
                || append(&env->value[ENV_SVC_IDS], num) < 0)
                goto nomem;
        }
        const char *tcs =
            json_string_value(json_object_get(reservation, "tcs_mask"));
        unsigned mask;
        if (tcs && tclass_mask_parse(tcs, &mask) < 0) {
            jobenv_clear(env);
            errno = EINVAL;
            return errprintf(errp,
                             "the broker's tcs_mask is not a mask like 0xa");
        }
        if (tcs && !(env->value[ENV_TCS] = strdup(tcs)))
            goto nomem;
    }
    for (int k = ENV_COLL_JOB_ID; k < JOBENV_COUNT; k++) {
        const char *s = json_string_value(json_object_get(from, names[k]));
        if (!s || k == ENV_COLL_JOB_STEP_ID)
            continue;
        if (!passable(s)) {
            jobenv_clear(env);
            errno = EINVAL;
            return errprintf(
                errp, "the broker's %s holds a line break", names[k]);
        }
        if (!(env->value[k] = strdup(s)))
            goto nomem;
    }
    return 0;
nomem:
    jobenv_clear(env);
    errno = ENOMEM;
    return errprintf(errp, "out of memory");
}

int jobenv_set_step(struct jobenv *env, const char *step_id, vnib_error_t *errp)
{
    if (!env->value[ENV_COLL_JOB_ID])
        return 0;
    if (!passable(step_id)) {
        errno = EINVAL;
        return errprintf(errp, "the step id holds a line break");
    }
    free(env->value[ENV_COLL_JOB_STEP_ID]);
    if (!(env->value[ENV_COLL_JOB_STEP_ID] = strdup(step_id))) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    return 0;
}

bool jobenv_format_valid(const char *format)
{
    return !strcmp(format, "export") || !strcmp(format, "json")
           || !strcmp(format, "slurm-taskprolog");
}

/* Shell-quote v when it holds anything but plainly safe characters. */
static void put_quoted(const char *v, FILE *out)
{
    if (*v
        && strspn(v,
                  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                  "0123456789,._:/=+@%-")
               == strlen(v)) {
        fputs(v, out);
        return;
    }
    fputc('\'', out);
    for (; *v; v++) {
        if (*v == '\'')
            fputs("'\\''", out);
        else
            fputc(*v, out);
    }
    fputc('\'', out);
}

int jobenv_write(const struct jobenv *env,
                 const char *format,
                 FILE *out,
                 vnib_error_t *errp)
{
    if (!jobenv_format_valid(format)) {
        errno = EINVAL;
        return errprintf(errp,
                         "unknown format '%s' (use export, json or "
                         "slurm-taskprolog)",
                         format);
    }
    if (!strcmp(format, "json")) {
        json_t *o = json_object();
        for (int i = 0; o && i < JOBENV_COUNT; i++)
            json_object_set_new(
                o,
                names[i],
                env->value[i] ? json_string(env->value[i]) : json_null());
        if (!o
            || json_dumpf(o, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0) {
            json_decref(o);
            errno = EIO;
            return errprintf(errp, "cannot write the environment");
        }
        json_decref(o);
        fputc('\n', out);
    } else {
        bool quote = !strcmp(format, "export");
        for (int i = 0; i < JOBENV_COUNT; i++) {
            if (!env->value[i]) {
                fprintf(out, "unset %s\n", names[i]);
                continue;
            }
            fprintf(out, "export %s=", names[i]);
            if (quote)
                put_quoted(env->value[i], out);
            else
                fputs(env->value[i], out);
            fputc('\n', out);
        }
    }
    if (fflush(out) != 0 || ferror(out)) {
        errno = EIO;
        return errprintf(errp, "cannot write the environment");
    }
    return 0;
}

int jobenv_parse(struct jobenv *env,
                 const char *text,
                 const char *name,
                 vnib_error_t *errp)
{
    int line = 0;

    memset(env, 0, sizeof(*env));
    while (*text) {
        size_t len = strcspn(text, "\n");
        const char *p = text, *end = text + len;
        line++;
        text = *end ? end + 1 : end;
        if (len == 0)
            continue;
        bool set = len > 7 && strncmp(p, "export ", 7) == 0;
        if (!set && !(len > 6 && strncmp(p, "unset ", 6) == 0))
            goto bad;
        p += set ? 7 : 6;
        const char *eq = set ? memchr(p, '=', (size_t)(end - p)) : end;
        int k = eq ? find_name(p, (size_t)(eq - p)) : -1;
        if (k < 0)
            goto bad;
        free(env->value[k]);
        env->value[k] = NULL;
        if (set && !(env->value[k] = strndup(eq + 1, (size_t)(end - eq - 1)))) {
            jobenv_clear(env);
            errno = ENOMEM;
            return errprintf(errp, "out of memory");
        }
    }
    return 0;
bad:
    jobenv_clear(env);
    errno = EINVAL;
    return errprintf(errp,
                     "%s:%d: expected 'export NAME=value' or 'unset NAME' "
                     "for a SLINGSHOT_* or FI_CXI_* variable",
                     name,
                     line);
}

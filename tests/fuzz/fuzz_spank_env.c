/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target for the job env file as the SPANK plugin applies it:
 * lib/envfile.c's parser (envfile_parse, shared with the Flux shell
 * plugin), then the plugin's apply_env (plugins/slurm/spank/vnib_spank.c,
 * compiled into this file for its static functions).
 *
 * The file is written by the agent, but a compromised or buggy writer, a
 * full disk or a truncation must only ever make slurmstepd refuse it.
 * Every line accepted must name a valid variable, and a value (export)
 * must hold no control character.  What the plugin then does is checked
 * too: it unsets every reserved name first, sets only SLINGSHOT_* and
 * FI_CXI_* names, each honoured line once and in order, and sets
 * FI_CXI_COLL_JOB_STEP_ID to the step exactly when FI_CXI_COLL_JOB_ID
 * ends up set.  slurm_error is renamed to a local no-op (the plugin logs
 * its refusals); libslurm is linked for the plugin's hostlist calls;
 * spank_setenv and spank_unsetenv record each change and succeed, and
 * the other spank_* calls, which slurmstepd and srun provide to a plugin,
 * are stubs that fail: the target never makes them.
 */
#define slurm_error fuzz_slurm_error
#include "plugins/slurm/spank/vnib_spank.c"
#undef slurm_error

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

void fuzz_slurm_error(const char *fmt, ...)
{
    (void)fmt;
}

const char *spank_strerror(spank_err_t err)
{
    (void)err;
    return "stub";
}

int spank_remote(spank_t spank)
{
    (void)spank;
    return -1;
}

spank_context_t spank_context(void)
{
    return S_CTX_ERROR;
}

spank_err_t spank_option_register(spank_t spank, struct spank_option *opt)
{
    (void)spank;
    (void)opt;
    return ESPANK_ERROR;
}

spank_err_t spank_get_item(spank_t spank, spank_item_t item, ...)
{
    (void)spank;
    (void)item;
    return ESPANK_ERROR;
}

spank_err_t spank_getenv(spank_t spank, const char *var, char *buf, int len)
{
    (void)spank;
    (void)var;
    (void)buf;
    (void)len;
    return ESPANK_ERROR;
}

/* The changes apply_env made, in order (copies: a value may live on the
 * plugin's stack).
 */
static struct change {
    char *name;
    char *value; /* NULL: unset */
} * changes;
static size_t nchanges;
static size_t changes_max;

static void forget_changes(void)
{
    for (size_t i = 0; i < nchanges; i++) {
        free(changes[i].name);
        free(changes[i].value);
    }
    nchanges = 0;
}

static spank_err_t record(const char *name, const char *value)
{
    if (nchanges == changes_max) {
        size_t n = changes_max ? changes_max * 2 : 64;
        struct change *c = realloc(changes, n * sizeof(*c));
        if (!c)
            abort();
        changes = c;
        changes_max = n;
    }
    changes[nchanges].name = strdup(name);
    changes[nchanges].value = value ? strdup(value) : NULL;
    if (!changes[nchanges].name || (value && !changes[nchanges].value))
        abort();
    nchanges++;
    return ESPANK_SUCCESS;
}

spank_err_t spank_setenv(spank_t spank,
                         const char *var,
                         const char *val,
                         int overwrite)
{
    (void)spank;
    (void)overwrite;
    return record(var, val);
}

spank_err_t spank_unsetenv(spank_t spank, const char *var)
{
    (void)spank;
    return record(var, NULL);
}

spank_err_t spank_job_control_setenv(spank_t sp,
                                     const char *name,
                                     const char *value,
                                     int overwrite)
{
    return spank_setenv(sp, name, value, overwrite);
}

static bool has_control(const char *s)
{
    for (; s && *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

/* same: both NULL, or equal strings. */
static bool same(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* check_changes: what apply_env did with env's lines, for step 7. */
static void check_changes(const struct envfile *env)
{
    size_t nreserved = 0;
    size_t next;
    const char *coll_job_id = NULL;
    const char *step_id = NULL;

    for (; envfile_reserved_names[nreserved]; nreserved++)
        if (nreserved >= nchanges
            || strcmp(changes[nreserved].name,
                      envfile_reserved_names[nreserved])
                   != 0
            || changes[nreserved].value)
            abort();
    next = nreserved;
    for (size_t i = 0; i < env->count; i++) {
        if (!envfile_honoured_name(env->lines[i].name))
            continue;
        if (next >= nchanges || !same(changes[next].name, env->lines[i].name)
            || !same(changes[next].value, env->lines[i].value))
            abort();
        next++;
    }
    for (size_t i = 0; i < nchanges; i++) {
        if (!envfile_valid_name(changes[i].name)
            || !envfile_honoured_name(changes[i].name)
            || has_control(changes[i].value))
            abort();
        if (strcmp(changes[i].name, "FI_CXI_COLL_JOB_ID") == 0)
            coll_job_id = changes[i].value;
        if (strcmp(changes[i].name, "FI_CXI_COLL_JOB_STEP_ID") == 0)
            step_id = changes[i].value;
    }
    /* One change more, the step's id, exactly when the job's is set. */
    if (nchanges != next + (coll_job_id ? 1 : 0))
        abort();
    if (coll_job_id && (!step_id || strcmp(step_id, "7") != 0))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct envfile env = {0};

    if (!(env.buf = malloc(size + 1)))
        return 0;
    memcpy(env.buf, data, size);
    env.buf[size] = '\0';
    env.len = size;
    if (envfile_parse(&env, NULL) == 0) {
        for (size_t i = 0; i < env.count; i++)
            if (!envfile_valid_name(env.lines[i].name)
                || has_control(env.lines[i].value))
                abort();
        if (apply_env(NULL, 42, 7, &env) != 0)
            abort();
        check_changes(&env);
        forget_changes();
    } else if (env.lines || env.count) {
        abort();
    }
    envfile_cleanup(&env);
    return 0;
}

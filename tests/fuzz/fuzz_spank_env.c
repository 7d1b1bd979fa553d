/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target for the SPANK plugin's env-file parser
 * (plugins/slurm/spank/vnib_spank.c, compiled into this file for its
 * static parse_env_file and parse_line).
 *
 * The file is written by the agent, but a compromised or buggy writer, a
 * full disk or a truncation must only ever make slurmstepd refuse it.
 * Every line accepted must name a valid variable, and a value (export)
 * must hold no control character.  slurm_error is renamed to a local
 * no-op (the parser logs its refusals); libslurm is linked for the
 * plugin's hostlist calls, and the spank_* calls, which slurmstepd and
 * srun provide to a plugin, are stubs that fail: the target never makes
 * them.
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

spank_err_t spank_setenv(spank_t spank,
                         const char *var,
                         const char *val,
                         int overwrite)
{
    (void)spank;
    (void)var;
    (void)val;
    (void)overwrite;
    return ESPANK_ERROR;
}

spank_err_t spank_unsetenv(spank_t spank, const char *var)
{
    (void)spank;
    (void)var;
    return ESPANK_ERROR;
}

spank_err_t spank_job_control_setenv(spank_t sp,
                                     const char *name,
                                     const char *value,
                                     int overwrite)
{
    return spank_setenv(sp, name, value, overwrite);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct env_line *lines = NULL;
    char *buf = malloc(size + 1);
    int n;

    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    n = parse_env_file(buf, size, 42, &lines);
    for (int i = 0; i < n; i++) {
        if (!valid_name(lines[i].name))
            abort();
        for (const char *p = lines[i].value; p && *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                abort();
    }
    free(lines);
    free(buf);
    return 0;
}

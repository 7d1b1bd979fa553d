/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_opts: the switch/vnib plugin's settings and user options.
 *
 * Two strings configure the plugin.  slurm.conf's SwitchParameters (one
 * per cluster, read by every Slurm program that loads the plugin) holds
 * the site's settings, comma-separated KEY=VALUE pairs all starting with
 * vnib_; a job's or step's --network (srun, sbatch, salloc) holds the
 * user's choice, in the style of HPE's switch/hpe_slingshot keys.  Both
 * are parsed here, without Slurm: the plugin's Slurm-facing file passes
 * the strings in and logs what comes out.
 */
#ifndef SWV_OPTS_H
#define SWV_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vnib/error.h"
#include "vnib/tclass.h"

#define SWV_PATH_MAX 512
#define SWV_WARNING_MAX 160

/* The longest vnib_broker_hold_s: a larger value is read as this. */
#define SWV_BROKER_HOLD_MAX_S 3600

/* The helper's file name (swv_helper.h, swv_load.h). */
#define SWV_HELPER_NAME "vnib-switch-helper.so"

/* The plugin's log (Slurm's error, info, debug), for what the helper's
 * threads have to say. */
enum swv_log_level { SWV_LOG_ERROR, SWV_LOG_INFO, SWV_LOG_DEBUG };
typedef void swv_log_fn(enum swv_log_level level, const char *message);

/* What a step does when the broker cannot be reached at its start. */
enum swv_outage {
    SWV_OUTAGE_FAIL = 0, /* the step fails: ESLURM_INTERCONNECT_FAILURE */
    SWV_OUTAGE_OPEN = 1, /* it runs without VNI isolation, logged */
};

/* What a step does when its own VNIs cannot be had (503
 * vni_pool_exhausted) while its job holds VNIs. */
enum swv_step_fallback {
    SWV_FALLBACK_JOB = 0,  /* it runs on its job's VNIs alone, logged and
                              told to its tasks */
    SWV_FALLBACK_WAIT = 1, /* srun retries it (ESLURM_INTERCONNECT_BUSY,
                              Slurm < 25.11; JOB on 25.11 and later) */
    SWV_FALLBACK_FAIL = 2, /* it fails: ESLURM_INTERCONNECT_FAILURE */
};

/* HPE's per-resource NIC limits, as switch/hpe_slingshot takes them in
 * SwitchParameters and --network: def_<rsrc> (per CPU of the step on the
 * node, or per depth), res_<rsrc> (the reservation itself) and max_<rsrc>
 * (the most the service may use), <rsrc> in libcxi's order below, and
 * depth (the multiplier instead of the CPUs).  -1 where not set.  The
 * agent applies them (agent/limits.h). */
#define SWV_RSRC_COUNT 8
#define SWV_LIMIT_MAX 65535 /* a def_, res_ or max_: libcxi's 16 bits */
#define SWV_DEPTH_MAX 1024  /* depth, as HPE's plugin bounds it */
extern const char *const swv_rsrc_names[SWV_RSRC_COUNT]; /* "ptes"... */
struct swv_limits {
    int32_t def[SWV_RSRC_COUNT];
    int32_t res[SWV_RSRC_COUNT];
    int32_t max[SWV_RSRC_COUNT];
    int32_t depth;
};

/* True when l sets any limit. */
bool swv_limits_any(const struct swv_limits *l);

/* The site's settings (SwitchParameters). */
struct swv_config {
    char url[SWV_PATH_MAX];          /* vnib_url: the broker */
    char token_file[SWV_PATH_MAX];   /* vnib_token_file: slurmctld's token */
    char cacert[SWV_PATH_MAX];       /* vnib_cacert: "" the system store */
    char agent_config[SWV_PATH_MAX]; /* vnib_agent_config: %n the node */
    char spool[SWV_PATH_MAX];        /* vnib_release_spool */
    char helper[SWV_PATH_MAX];       /* vnib_helper: the helper object;
                                        "" its default places */
    enum swv_outage outage;          /* vnib_outage=fail|open */
    bool lease;                      /* vnib_lease=on|off: steps carry
                                        the broker's lease */
    int vnis;                        /* vnib_vnis: job VNIs; -1 broker's */
    int step_vnis;                   /* vnib_step_vnis: a step's own */
    enum swv_step_fallback step_fallback; /* vnib_step_fallback */
    char hwcoll[8];                       /* vnib_hwcoll: "" the broker's */
    long timeout_ms;                      /* vnib_timeout_ms: per request */
    long retry_busy_ms;                   /* vnib_retry_busy_ms: destroy */
    long free_poll_ms;                    /* vnib_free_poll_ms: slurmctld's
                                             free count (Slurm 25.11+) */
    long broker_hold_s;                   /* vnib_broker_hold_s: how long a
                                             job that needs VNIs waits for an
                                             unreachable broker (25.11+) */
    struct swv_limits limits;             /* def_/res_/max_<rsrc> (HPE's
                                             names, without vnib_) */
    char warning[SWV_WARNING_MAX];        /* what the parse bounded, for the
                                             log; "" when nothing */
};

/* What one step asks for, after the defaults and --network. */
struct swv_network {
    int vnis;      /* the job's VNIs, 0-4, or -1 for the broker's default */
    int step_vnis; /* the step's own VNIs, 0-4 */
    enum swv_step_fallback step_fallback; /* when step_vnis cannot be had */
    char hwcoll[8];
    struct swv_limits limits; /* the site's, then the job's and the
                                 step's --network over them */
};

/* Fill cfg from SwitchParameters (NULL or "" gives the defaults).  Keys
 * that do not start with vnib_, other than HPE's def_<rsrc>, res_<rsrc>
 * and max_<rsrc>, belong to no one here and are refused, as is an
 * unknown vnib_ key or a bad value.  Returns 0, or -1 with
 * errno EINVAL and errp naming the key.  A value above its bound that
 * is read as the bound (vnib_broker_hold_s) leaves a line for the log
 * in cfg->warning.
 */
int swv_config_parse(struct swv_config *cfg,
                     const char *params,
                     vnib_error_t *errp);

/* What a step gets: cfg's defaults, then the job's --network (job_net:
 * vnis, job_vni, no_vni, hwcoll, step_vnis, step_fallback), then the
 * step's (step_net: step_vnis, no_vni, step_fallback).  Either may be NULL.
 * HPE's limits (def_<rsrc>, res_<rsrc>, max_<rsrc>, depth) in either
 * override cfg's, the step's last.  HPE's keys that mean nothing here (tcs,
 * adjust_limits...) are accepted and ignored; anything else, or a limit out
 * of range, is refused: -1 with errno EINVAL and errp naming it.
 */
int swv_network_parse(const struct swv_config *cfg,
                      const char *job_net,
                      const char *step_net,
                      struct swv_network *net,
                      vnib_error_t *errp);

/* The name of a vnib_step_fallback value: "job", "wait" or "fail". */
const char *swv_step_fallback_name(enum swv_step_fallback f);

/* Replace each "%n" in pattern by node into out (size bytes).  Returns 0,
 * or -1 with errno ENAMETOOLONG when it does not fit.
 */
int swv_expand_node(const char *pattern,
                    const char *node,
                    char *out,
                    size_t size);

#endif /* !SWV_OPTS_H */

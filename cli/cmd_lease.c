/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vnibctl lease show: what a lease (the "lease" of a reserve's reply,
 * docs/node-path.md) says, decoded on this host with no broker call, and
 * whether it verifies against the broker's public keys, as a node checks
 * it (lib/lease.c): the signature, the key, the expiry.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "vnib/lease.h"
#include "cli/cmd_lease.h"
#include "cli/ctl.h"
#include "cli/opts.h"
#include "cli/print.h"

static const char help_lease[] =
    "Usage: vnibctl lease show [--key PUBFILE]... [--max-skew SECONDS] "
    "LEASE\n"
    "Decode a lease (a reserve's with --lease) and print its payload, on\n"
    "this host (no broker call).  LEASE '-' reads it from stdin.\n"
    "  --key PUBFILE        a public key of the broker (`openssl pkey -in\n"
    "                       lease.key -pubout`); repeatable, as a node's\n"
    "                       keyring.  With keys the lease must verify: else\n"
    "                       exit 1 and why (malformed, unknown key, bad\n"
    "                       signature, expired).  Without, it is only\n"
    "                       decoded: nothing in it is checked\n"
    "  --max-skew SECONDS   clock difference allowed with the broker (0-3600,\n"
    "                       default 30, as lease.max_skew_s)\n"
    "  --json               print the payload as JSON\n";

struct lease_args {
    struct lease_keyring *ring; /* made by the first --key */
    struct opts_uint skew;
};

static int lease_key(void *args, const char *cmd, const char *arg)
{
    struct lease_args *a = args;
    vnib_error_t error = {0};

    (void)cmd;
    if (!a->ring && !(a->ring = lease_keyring_create()))
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    if (lease_keyring_add_file(a->ring, arg, &error) < 0)
        return ctl_fail(CTL_EXIT_USAGE, "--key: %s", error.text);
    return OPTS_GO_ON;
}

static int check_show(const char *cmd, const char *arg)
{
    if (strcmp(arg, "show"))
        return ctl_usage_error(cmd, "unknown subcommand '%s' (show)", arg);
    return 0;
}

/* The lease of the command line, or of stdin for "-", in *textp (caller
 * frees): 0, or an exit status.
 */
static int lease_text(const char *arg, char **textp)
{
    size_t len = 0, n;
    char *buf;

    if (strcmp(arg, "-")) {
        if (!(*textp = strdup(arg)))
            return ctl_fail(CTL_EXIT_FAILED, "out of memory");
        return 0;
    }
    if (!(buf = malloc(LEASE_MAX_LEN + 2)))
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    while ((n = fread(buf + len, 1, LEASE_MAX_LEN + 1 - len, stdin)) > 0)
        len += n;
    buf[len] = '\0';
    while (len > 0 && strchr(" \t\r\n", buf[len - 1]))
        buf[--len] = '\0';
    *textp = buf;
    return 0;
}

/* The class of a lease's refusal, by lease_verify's errno. */
static const char *refusal(int err)
{
    switch (err) {
        case ENOKEY:
            return "unknown key";
        case EBADMSG:
            return "bad signature";
        case EKEYEXPIRED:
            return "expired";
        default:
            return "malformed";
    }
}

static int run_lease(struct ctl *ctl, void *args, char **pos)
{
    const struct lease_args *a = args;
    long skew = a->skew.text ? (long)a->skew.value : 30;
    vnib_error_t error = {0};
    json_t *payload = NULL;
    char *text = NULL;
    int rc;

    if ((rc = lease_text(pos[1], &text)) != 0)
        return rc;
    if (a->ring
            ? lease_verify(a->ring, text, time(NULL), skew, &payload, &error)
            : lease_decode(text, &payload, &error))
        rc = ctl_fail(CTL_EXIT_FAILED,
                      "the lease does not %s (%s): %s",
                      a->ring ? "verify" : "decode",
                      refusal(errno),
                      error.text);
    else if (ctl->json)
        rc = ctl_print_json(payload);
    else {
        printf("verified: %s\n",
               a->ring ? "yes" : "no (no --key: decoded only)");
        rc = print_kv(payload, NULL, NULL);
    }
    json_decref(payload);
    free(text);
    return rc;
}

static void lease_cleanup(void *args)
{
    lease_keyring_destroy(((struct lease_args *)args)->ring);
}

/* clang-format off */
static const struct opts_option lease_options[] = {
    OPTS_ROW_CALL("key", 'k', "PUBFILE", lease_key),
    OPTS_ROW_UINT("max-skew", 's', struct lease_args, skew, 0, "SECONDS", 0, 3600),
    OPTS_ROW_END,
};

const struct opts_command cmd_lease_commands[] = {
    {"lease", help_lease, false, 2, "show and LEASE", {check_show, NULL}, lease_options, sizeof(struct lease_args), run_lease, lease_cleanup},
    {.name = NULL},
};
/* clang-format on */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `vnibctl token` (see tokencmd.h).
 *
 * The formats and the cryptography are those of lib/token.c, which the
 * broker uses to verify, so what is minted here is what the broker
 * accepts.  Secrets are wiped from memory before exit; a new node key is
 * created with O_EXCL so an existing key (and every node token derived
 * from it) is never destroyed by accident.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vnib/secfile.h"
#include "vnib/token.h"
#include "cli/ctl.h"
#include "cli/tokencmd.h"

/* Longest token name the broker's tokens file accepts, plus NUL. */
#define NAME_SIZE 64

static const char usage_token[] =
    "Usage: vnibctl token new ROLE NAME\n"
    "       vnibctl token node NAME --key-file FILE\n"
    "       vnibctl token key --out FILE\n"
    "Mint credentials locally (no broker is contacted).\n"
    "  new ROLE NAME   a new random token for ROLE (admin, scheduler or\n"
    "                  monitor) named NAME (1-63 of letters, digits, ._@-).\n"
    "                  Prints the token on line 1 and the line for the\n"
    "                  broker's tokens file, \"ROLE NAME SHA256HEX\", on\n"
    "                  line 2.  The token is not stored anywhere: keep it.\n"
    "  node NAME       the token of node NAME, derived from the cluster's\n"
    "                  node key (--key-file, mode 0600)\n"
    "  key --out FILE  write 32 random bytes to FILE (mode 0600) as a new\n"
    "                  node key or FM token key (hwcoll.token_key_file);\n"
    "                  an existing FILE is never overwritten\n"
    "Options:\n"
    "  --json          print one JSON object\n"
    "  -h, --help      this text\n";

static const struct option opts_plain[] = {
    {"json", no_argument, NULL, 'j'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Shared loop for the subcommands: --json, --help and one option with an
 * argument (key_opt, or NULL), stored in *key_val.  Returns -1 to go on,
 * or an exit status.
 */
static int parse(int argc,
                 char **argv,
                 const char *cmd,
                 const char *key_opt,
                 const char **key_val,
                 bool *json)
{
    struct option with_key[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {key_opt, required_argument, NULL, 'k'},
        {NULL, 0, NULL, 0},
    };
    bool first = true;
    int c;

    while ((c = ctl_getopt(
                argc, argv, cmd, ":h", key_opt ? with_key : opts_plain, &first))
           != -1) {
        switch (c) {
            case 'j':
                *json = true;
                break;
            case 'h':
                fputs(usage_token, stdout);
                return CTL_EXIT_OK;
            case 'k':
                if (!key_val) /* only the with_key table has it */
                    return CTL_EXIT_USAGE;
                *key_val = optarg;
                break;
            default:
                return CTL_EXIT_USAGE;
        }
    }
    return -1;
}

static bool name_valid(const char *s)
{
    size_t n = strspn(s,
                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789._@-");
    return n > 0 && n < NAME_SIZE && s[n] == '\0';
}

static int cmd_new(int argc, char **argv, bool json)
{
    static const char *const roles[] = {"admin", "scheduler", "monitor"};
    char token[TOKEN_SIZE];
    char hex[TOKEN_HASH_HEX_SIZE];
    vnib_error_t error = {0};
    const char *role = NULL;
    int rc;

    if ((rc = parse(argc, argv, "token new", NULL, NULL, &json)) >= 0)
        return rc;
    if (argc - optind != 2)
        return ctl_usage_error("token new",
                               "expected ROLE and NAME, got %d argument%s",
                               argc - optind,
                               argc - optind == 1 ? "" : "s");
    for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++) {
        if (strcmp(argv[optind], roles[i]) == 0)
            role = roles[i];
    }
    if (!role)
        return ctl_usage_error("token new",
                               "role '%s' is not admin, scheduler or monitor "
                               "(nodes use 'vnibctl token node')",
                               argv[optind]);
    const char *name = argv[optind + 1];
    if (!name_valid(name))
        return ctl_usage_error("token new",
                               "name '%s' must be 1-63 characters of "
                               "letters, digits and ._@-",
                               name);
    if (token_generate(token, sizeof(token), &error) < 0)
        return ctl_fail(CTL_EXIT_FAILED, "%s", error.text);
    token_hash_hex(token, hex);
    /* Printed directly rather than through jansson, so that the token is
     * in no buffer this function does not wipe; every value is plain
     * ASCII without quotes or backslashes.
     */
    if (json)
        printf(
            "{\n  \"token\": \"%s\",\n  \"role\": \"%s\",\n"
            "  \"name\": \"%s\",\n  \"line\": \"%s %s %s\"\n}\n",
            token,
            role,
            name,
            role,
            name,
            hex);
    else
        printf("%s\n%s %s %s\n", token, role, name, hex);
    vnib_memburn(token, sizeof(token));
    if (fflush(stdout) == EOF)
        return ctl_fail(CTL_EXIT_FAILED, "cannot write to stdout");
    return CTL_EXIT_OK;
}

static int cmd_node(int argc, char **argv, bool json)
{
    char token[TOKEN_NODE_SIZE];
    vnib_error_t error = {0};
    const char *key_file = NULL;
    char *key = NULL;
    size_t keylen = 0;
    int rc;

    if ((rc = parse(argc, argv, "token node", "key-file", &key_file, &json))
        >= 0)
        return rc;
    if (argc - optind != 1)
        return ctl_usage_error("token node",
                               "expected one node NAME, got %d arguments",
                               argc - optind);
    const char *node = argv[optind];
    if (!token_node_name_valid(node))
        return ctl_usage_error("token node",
                               "'%s' is not a valid node name (letters, "
                               "digits, -_. ; not starting with - or .)",
                               node);
    if (!key_file)
        return ctl_usage_error("token node", "--key-file FILE is required");
    if (secfile_read(key_file, &key, &keylen, &error) < 0)
        return ctl_fail(CTL_EXIT_USAGE, "%s", error.text);
    if (token_node_derive((const unsigned char *)key,
                          keylen,
                          node,
                          token,
                          sizeof(token),
                          &error)
        < 0) {
        secfile_free(key, keylen);
        return ctl_fail(CTL_EXIT_USAGE, "%s: %s", key_file, error.text);
    }
    secfile_free(key, keylen);
    /* Node names and base64url hold nothing JSON needs to escape. */
    if (json)
        printf("{\n  \"node\": \"%s\",\n  \"token\": \"%s\"\n}\n", node, token);
    else
        printf("%s\n", token);
    vnib_memburn(token, sizeof(token));
    if (fflush(stdout) == EOF)
        return ctl_fail(CTL_EXIT_FAILED, "cannot write to stdout");
    return CTL_EXIT_OK;
}

/* Write the whole buffer, retrying short writes. */
static int write_all(int fd, const unsigned char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int cmd_key(int argc, char **argv, bool json)
{
    unsigned char key[TOKEN_KEY_MIN];
    vnib_error_t error = {0};
    const char *out = NULL;
    int fd = -1;
    int rc;

    if ((rc = parse(argc, argv, "token key", "out", &out, &json)) >= 0)
        return rc;
    if (argc - optind != 0)
        return ctl_usage_error(
            "token key", "unexpected argument '%s'", argv[optind]);
    if (!out)
        return ctl_usage_error("token key", "--out FILE is required");
    if (token_key_generate(key, sizeof(key), &error) < 0)
        return ctl_fail(CTL_EXIT_FAILED, "%s", error.text);
    rc = CTL_EXIT_FAILED;
    fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        if (errno == EEXIST)
            ctl_fail(rc,
                     "%s: file exists; refusing to overwrite a key (every "
                     "node token, or sealed session token, depends on it)",
                     out);
        else
            ctl_fail(rc, "%s: %s", out, strerror(errno));
        goto done;
    }
    /* The umask may only have narrowed 0600; make it exact. */
    if (fchmod(fd, 0600) < 0 || write_all(fd, key, sizeof(key)) < 0
        || fsync(fd) < 0) {
        ctl_fail(rc, "%s: %s", out, strerror(errno));
        unlink(out);
        goto done;
    }
    if (close(fd) < 0) {
        fd = -1;
        ctl_fail(rc, "%s: %s", out, strerror(errno));
        unlink(out);
        goto done;
    }
    fd = -1;
    if (json) {
        json_t *o = json_pack("{s:s, s:i}", "key_file", out, "bytes", 32);
        rc = o ? ctl_print_json(o) : ctl_fail(CTL_EXIT_FAILED, "out of memory");
        json_decref(o);
    } else {
        printf("wrote a new %zu-byte key to %s\n", sizeof(key), out);
        rc = CTL_EXIT_OK;
    }
done:
    if (fd >= 0)
        close(fd);
    vnib_memburn(key, sizeof(key));
    return rc;
}

int tokencmd_run(int argc, char **argv, bool json)
{
    if (argc < 2)
        return ctl_usage_error("token",
                               "missing subcommand (new, node or key)");
    const char *sub = argv[1];
    if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0) {
        fputs(usage_token, stdout);
        return CTL_EXIT_OK;
    }
    if (strcmp(sub, "new") == 0)
        return cmd_new(argc - 1, argv + 1, json);
    if (strcmp(sub, "node") == 0)
        return cmd_node(argc - 1, argv + 1, json);
    if (strcmp(sub, "key") == 0)
        return cmd_key(argc - 1, argv + 1, json);
    return ctl_usage_error(
        "token", "unknown subcommand '%s' (new, node or key)", sub);
}

/* vnibctl: the command-line client of vnibroker, for admins and scheduler
 * scripts (Slurm prolog/epilog, cron checks).
 *
 * Every broker command is one REST call (list --all follows the `next`
 * cursors) made through lib/client.c; the output is an aligned table or
 * "key: value" lines, or the broker's JSON with --json.  `token` commands
 * mint credentials locally (cli/tokencmd.c).
 *
 * Exit statuses, which scripts rely on:
 *   0  success, including idempotent repeats (HTTP 200, 201, 202)
 *   1  the broker refused (any HTTP status >= 400; "vnibctl: CODE: MESSAGE"
 *      on stderr) or a local action failed
 *   2  usage error: unknown option or command, missing or bad argument
 *      (the message says which), or an unusable token, key or CA file
 *   3  the broker could not be reached or gave no usable answer
 *      (connection refused, unresolvable host, timeout, TLS failure,
 *      reply that is not JSON)
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "vnib/client.h"
#include "vnib/hostlist.h"
#include "vnib/secfile.h"
#include "vnib/token.h"
#include "cli/ctl.h"
#include "cli/table.h"
#include "cli/tokencmd.h"
#include "server/version.h"

#define DEFAULT_URL "http://127.0.0.1:8080"

static const char usage_text[] =
    "Usage: vnibctl [OPTIONS] COMMAND [ARGS]\n"
    "Talk to the vnibroker VNI broker.\n"
    "\n"
    "Commands:\n"
    "  reserve JOB_ID --uid N --user NAME --nodes HOSTLIST [--vnis N]\n"
    "  release JOB_ID [--force]\n"
    "  show JOB_ID\n"
    "  list [--state active|releasing|released] [--node NAME] [--uid N]\n"
    "       [--limit N] [--after CURSOR] [--all]\n"
    "  pool\n"
    "  vni N\n"
    "  events [--job JOB_ID] [--limit N] [--after CURSOR]\n"
    "  node NAME [--undrain]\n"
    "  report JOB_ID NODE --cxi creating|created|destroyed|failed\n"
    "         [--service DEV:SVCID]... [--message TEXT]\n"
    "  token new ROLE NAME | token node NAME --key-file FILE |\n"
    "  token key --out FILE          (local; no broker needed)\n"
    "'vnibctl COMMAND --help' describes each command.\n"
    "\n"
    "Options:\n"
    "  --url URL           broker URL (default $VNIB_URL, else " DEFAULT_URL
    ")\n"
    "  --token-file FILE   file holding the bearer token, mode 0600\n"
    "                      (default $VNIB_TOKEN, else the file\n"
    "                      $VNIB_TOKEN_FILE)\n"
    "  --cacert FILE       CA bundle for https (default $VNIB_CACERT, else\n"
    "                      the system store)\n"
    "  --timeout SECONDS   per request (default 10)\n"
    "  --json              print the broker's JSON instead of text (a\n"
    "                      refusal's error object too, on stdout)\n"
    "  -h, --help          this text\n"
    "  -V, --version       print the version\n"
    "\n"
    "Exit status:\n"
    "  0  success, including idempotent repeats\n"
    "  1  refused by the broker (HTTP >= 400) or a local action failed\n"
    "  2  usage error, or an unusable token, key or CA file\n"
    "  3  broker unreachable (refused, timeout, TLS or protocol failure)\n";

/* Global options and the client, created on first use. */
struct ctl {
    const char *url;
    const char *token_file; /* --token-file, or NULL */
    const char *cacert;     /* --cacert / $VNIB_CACERT, or NULL */
    long timeout_ms;
    bool json;
    struct vnib_client *client;
};

/* One command: its name and handler (which prints its own --help). */
struct command {
    const char *name;
    int (*run)(struct ctl *ctl, int argc, char **argv);
};

/* ---- connecting ------------------------------------------------------- */

/* The token from --token-file, $VNIB_TOKEN or $VNIB_TOKEN_FILE, in a
 * buffer the caller wipes with secfile_free(*tokenp, *sizep); NULL when
 * none is configured.  Returns 0 or an exit status.
 */
static int token_load(const struct ctl *ctl, char **tokenp, size_t *sizep)
{
    vnib_error_t error = {""};
    const char *file = ctl->token_file;
    const char *env = getenv("VNIB_TOKEN");
    char *buf = NULL;
    size_t len = 0;

    *tokenp = NULL;
    *sizep = 0;
    if (!file && env && env[0]) {
        len = strlen(env);
        if (!(buf = malloc(len + 1)))
            return ctl_fail(CTL_EXIT_FAILED, "out of memory");
        memcpy(buf, env, len + 1);
    } else {
        if (!file)
            file = getenv("VNIB_TOKEN_FILE");
        if (!file || !file[0])
            return 0;
        if (secfile_read(file, &buf, &len, &error) < 0)
            return ctl_fail(CTL_EXIT_USAGE, "%s", error.text);
    }
    /* Trailing newlines and blanks are an editor's, not the token's. */
    while (len > 0 && strchr(" \t\r\n", buf[len - 1]))
        buf[--len] = '\0';
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)buf[i] <= ' ' || (unsigned char)buf[i] >= 0x7f) {
            secfile_free(buf, len);
            return ctl_fail(CTL_EXIT_USAGE,
                            "%s: must hold one token on one line",
                            file ? file : "$VNIB_TOKEN");
        }
    }
    if (len == 0) {
        secfile_free(buf, len);
        return ctl_fail(
            CTL_EXIT_USAGE, "%s: holds no token", file ? file : "$VNIB_TOKEN");
    }
    *tokenp = buf;
    *sizep = len;
    return 0;
}

/* Create the client on first use.  Returns 0 or an exit status. */
static int ctl_connect(struct ctl *ctl)
{
    vnib_error_t error = {""};
    char *token = NULL;
    size_t size = 0;
    int rc;

    if (ctl->client)
        return 0;
    if (ctl->cacert && access(ctl->cacert, R_OK) < 0)
        return ctl_fail(
            CTL_EXIT_USAGE, "CA file %s: %s", ctl->cacert, strerror(errno));
    if ((rc = token_load(ctl, &token, &size)) != 0)
        return rc;
    ctl->client = vnib_client_create(ctl->url, token, &error);
    secfile_free(token, size);
    if (!ctl->client)
        return ctl_fail(errno == EINVAL ? CTL_EXIT_USAGE : CTL_EXIT_FAILED,
                        "%s",
                        error.text);
    if ((ctl->cacert && vnib_client_set_cacert(ctl->client, ctl->cacert) < 0)
        || vnib_client_set_timeout_ms(ctl->client, ctl->timeout_ms) < 0)
        return ctl_fail(CTL_EXIT_FAILED, "%s", strerror(errno));
    return 0;
}

/* Turn the outcome of a call into an exit status, printing errors.  A
 * refusal prints "vnibctl: CODE: MESSAGE" (and the error JSON on stdout
 * with --json).
 */
static int outcome(const struct ctl *ctl,
                   int status,
                   const json_t *reply,
                   const vnib_error_t *error)
{
    if (status < 0) {
        int rc = errno == EINVAL || errno == ENOMEM ? CTL_EXIT_FAILED
                                                    : CTL_EXIT_UNREACHABLE;
        return ctl_fail(rc, "%s", error->text);
    }
    if (status >= 400) {
        if (ctl->json && reply)
            ctl_print_json(reply);
        return ctl_fail(CTL_EXIT_FAILED, "%s", error->text);
    }
    if (status >= 300)
        return ctl_fail(CTL_EXIT_FAILED,
                        "unexpected HTTP %d from %s (redirects are not "
                        "followed; check --url)",
                        status,
                        vnib_client_url(ctl->client));
    return CTL_EXIT_OK;
}

/* ---- formatting ------------------------------------------------------- */

/* Text of a JSON value for a table cell or a "key: value" line, in a new
 * string: strings as they are, booleans as yes/no, null as "-", arrays of
 * scalars comma-separated, an object of numbers as "N key, N key", and
 * anything else as compact JSON.  NULL only when out of memory.
 */
static char *value_text(json_t *v)
{
    char *s = NULL;
    size_t size = 0;
    FILE *f;

    if (!v || json_is_null(v))
        return strdup("-");
    if (json_is_string(v)) {
        /* Text from the broker (a node's message, say) must not move the
         * cursor or drive the terminal: control characters become '?'.
         */
        if ((s = strdup(json_string_value(v)))) {
            for (char *p = s; *p; p++) {
                if ((unsigned char)*p < ' ' || *p == 0x7f)
                    *p = '?';
            }
        }
        return s;
    }
    if (json_is_true(v))
        return strdup("yes");
    if (json_is_false(v))
        return strdup("no");
    if (json_is_number(v))
        return json_dumps(v, JSON_ENCODE_ANY);
    if (!(f = open_memstream(&s, &size)))
        return NULL;
    if (json_is_array(v)) {
        size_t i;
        json_t *item;
        json_array_foreach (v, i, item) {
            char *t = json_is_array(item) || json_is_object(item)
                          ? json_dumps(item, JSON_COMPACT)
                          : value_text(item);
            fprintf(f, "%s%s", i ? "," : "", t ? t : "?");
            free(t);
        }
        if (json_array_size(v) == 0)
            fputs("-", f);
    } else {
        const char *key;
        json_t *item;
        bool numbers = true;
        json_object_foreach (v, key, item) {
            if (!json_is_integer(item))
                numbers = false;
        }
        if (numbers) {
            const char *sep = "";
            json_object_foreach (v, key, item) {
                fprintf(f,
                        "%s%" JSON_INTEGER_FORMAT " %s",
                        sep,
                        json_integer_value(item),
                        key);
                sep = ", ";
            }
        } else {
            char *t = json_dumps(v, JSON_COMPACT);
            fputs(t ? t : "?", f);
            free(t);
        }
    }
    if (fclose(f) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

static bool in_list(const char *const *list, const char *key)
{
    for (size_t i = 0; list && list[i]; i++) {
        if (strcmp(list[i], key) == 0)
            return true;
    }
    return false;
}

static void print_line(const char *key, json_t *v, size_t width)
{
    char *t = value_text(v);
    printf("%s:%*s %s\n", key, (int)(width - strlen(key)), "", t ? t : "?");
    free(t);
}

/* Print obj as aligned "key: value" lines: the keys of `order` first (when
 * present), then the others in the broker's order, leaving out `skip`.
 * Both lists end with NULL and may be NULL.
 */
static int print_kv(json_t *obj,
                    const char *const *order,
                    const char *const *skip)
{
    const char *key;
    json_t *v;
    size_t width = 0;

    if (!json_is_object(obj))
        return ctl_fail(CTL_EXIT_UNREACHABLE,
                        "the broker's reply is not a JSON object");
    json_object_foreach (obj, key, v) {
        if (!in_list(skip, key) && strlen(key) > width)
            width = strlen(key);
    }
    for (size_t i = 0; order && order[i]; i++) {
        if (!in_list(skip, order[i]) && (v = json_object_get(obj, order[i])))
            print_line(order[i], v, width);
    }
    json_object_foreach (obj, key, v) {
        if (!in_list(order, key) && !in_list(skip, key))
            print_line(key, v, width);
    }
    return CTL_EXIT_OK;
}

/* A string member, or NULL. */
static const char *str(json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

/* value_text of a member into a table cell (the caller frees). */
static char *cell(json_t *obj, const char *key)
{
    return value_text(json_object_get(obj, key));
}

/* A table from an array of objects: one column per key of `keys`, headed
 * by `headers`.  Returns an exit status.
 */
static int print_table(json_t *rows,
                       size_t ncols,
                       const char *const *headers,
                       const char *const *keys)
{
    struct table *t = NULL;
    char *cells[16] = {NULL};
    size_t i;
    json_t *row;
    int rc = CTL_EXIT_FAILED;

    if (ncols > sizeof(cells) / sizeof(cells[0]) || !json_is_array(rows))
        return ctl_fail(CTL_EXIT_UNREACHABLE,
                        "the broker's reply lacks the expected list");
    if (!(t = table_create(ncols, headers)))
        goto nomem;
    json_array_foreach (rows, i, row) {
        for (size_t c = 0; c < ncols; c++) {
            if (!(cells[c] = cell(row, keys[c])))
                goto nomem;
        }
        if (table_add(t, (const char *const *)cells) < 0)
            goto nomem;
        for (size_t c = 0; c < ncols; c++) {
            free(cells[c]);
            cells[c] = NULL;
        }
    }
    if (table_print(t, stdout) < 0)
        goto nomem;
    rc = CTL_EXIT_OK;
    goto done;
nomem:
    ctl_fail(rc, "out of memory");
done:
    for (size_t c = 0; c < ncols; c++)
        free(cells[c]);
    table_destroy(t);
    return rc;
}

static const char *const reservation_order[] = {
    "job_id",       "state",           "uid",        "user",
    "nodes",        "node_count",      "vni_count",  "vnis",
    "empty_reason", "traffic_classes", "tcs_mask",   "quarantined",
    "cleanup",      "created_at",      "created_by", "release_requested_at",
    "released_at",  "released_by",     "forced",     NULL,
};

/* The reply of reserve, release, show and report. */
static int print_reservation(const struct ctl *ctl, json_t *r)
{
    if (ctl->json)
        return ctl_print_json(r);
    return print_kv(r, reservation_order, NULL);
}

/* ---- argument checks -------------------------------------------------- */

/* The job id pattern of the API, checked here for a clear message. */
static int check_job_id(const char *cmd, const char *id)
{
    size_t n = strspn(id,
                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789._:@+-");
    if (n == 0 || n > 128 || id[n] != '\0')
        return ctl_usage_error(cmd,
                               "'%s' is not a valid job id (1-128 of "
                               "letters, digits and ._:@+-)",
                               id);
    if (id[0] == '-')
        return ctl_usage_error(cmd,
                               "'%s' is not a valid job id (it must not "
                               "start with '-')",
                               id);
    return 0;
}

static int check_node(const char *cmd, const char *node)
{
    if (!token_node_name_valid(node))
        return ctl_usage_error(cmd,
                               "'%s' is not a valid node name (1-255 of "
                               "letters, digits and -_. ; not starting with "
                               "- or .)",
                               node);
    return 0;
}

/* Exactly `want` positional arguments remain, named by `names`. */
static int check_args(
    const char *cmd, int argc, char **argv, int want, const char *names)
{
    int have = argc - optind;
    if (have < want)
        return ctl_usage_error(cmd, "missing %s", names);
    if (have > want)
        return ctl_usage_error(
            cmd, "unexpected argument '%s'", argv[optind + want]);
    return 0;
}

/* Print a command's help text when asked. */
static int help(const char *text)
{
    fputs(text, stdout);
    return CTL_EXIT_OK;
}

/* A path with a query string of escaped values, built up one parameter at
 * a time in a memstream.
 */
struct query {
    FILE *f;
    char *buf;
    size_t size;
    char sep; /* '?' before the first parameter, then '&' */
};

static int query_open(struct query *q, const char *path)
{
    q->buf = NULL;
    q->size = 0;
    q->sep = '?';
    if (!(q->f = open_memstream(&q->buf, &q->size)))
        return -1;
    fputs(path, q->f);
    return 0;
}

/* Append name=escaped(value) when value is not NULL. */
static int query_add(struct query *q, const char *name, const char *value)
{
    char *esc;

    if (!value)
        return 0;
    if (!(esc = vnib_client_escape(value)))
        return -1;
    fprintf(q->f, "%c%s=%s", q->sep, name, esc);
    q->sep = '&';
    free(esc);
    return 0;
}

/* Close the stream; returns the path (the caller frees) or NULL. */
static char *query_close(struct query *q)
{
    if (fclose(q->f) != 0) {
        free(q->buf);
        return NULL;
    }
    return q->buf;
}

/* ---- commands --------------------------------------------------------- */

static const char help_reserve[] =
    "Usage: vnibctl reserve JOB_ID --uid N --user NAME --nodes HOSTLIST "
    "[--vnis N]\n"
    "                      [--hwcoll on|off|auto]\n"
    "Reserve VNIs for a job (roles: scheduler, admin).  Repeating the same\n"
    "reservation is harmless and prints it again; different parameters for\n"
    "an active job are refused (reservation_conflict).\n"
    "  --uid N           the job's user id (0-4294967294)\n"
    "  --user NAME       the job's user name\n"
    "  --nodes HOSTLIST  the job's nodes, e.g. tux[0-63]\n"
    "  --vnis N          VNIs to reserve (0-4; default: the broker's)\n"
    "  --hwcoll MODE     hardware collectives: on, off or auto (the\n"
    "                    broker's rule by node count; the default)\n"
    "  --json            print the reservation as JSON\n";

static int cmd_reserve(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"uid", required_argument, NULL, 'u'},
        {"user", required_argument, NULL, 'U'},
        {"nodes", required_argument, NULL, 'n'},
        {"vnis", required_argument, NULL, 'v'},
        {"hwcoll", required_argument, NULL, 'H'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *uid_s = NULL, *user = NULL, *nodes = NULL, *hwcoll = NULL;
    unsigned long long uid = 0, vnis = 0;
    int vni_count = -1;
    vnib_error_t error = {""};
    json_t *reply = NULL;
    bool first = true;
    int c, rc;

    while ((c = ctl_getopt(argc, argv, "reserve", ":h", opts, &first)) != -1) {
        switch (c) {
            case 'u':
                uid_s = optarg;
                break;
            case 'U':
                user = optarg;
                break;
            case 'n':
                nodes = optarg;
                break;
            case 'v':
                if (ctl_parse_uint("reserve", "--vnis", optarg, 0, 4, &vnis)
                    < 0)
                    return CTL_EXIT_USAGE;
                vni_count = (int)vnis;
                break;
            case 'H':
                if (strcmp(optarg, "on") && strcmp(optarg, "off")
                    && strcmp(optarg, "auto"))
                    return ctl_usage_error(
                        "reserve",
                        "--hwcoll '%s' is not on, off or auto",
                        optarg);
                hwcoll = optarg;
                break;
            case 'j':
                ctl->json = true;
                break;
            case 'h':
                return help(help_reserve);
            default:
                return CTL_EXIT_USAGE;
        }
    }
    if (check_args("reserve", argc, argv, 1, "JOB_ID") != 0
        || check_job_id("reserve", argv[optind]) != 0)
        return CTL_EXIT_USAGE;
    if (!uid_s)
        return ctl_usage_error("reserve", "--uid N is required");
    if (!user)
        return ctl_usage_error("reserve", "--user NAME is required");
    if (!nodes)
        return ctl_usage_error("reserve", "--nodes HOSTLIST is required");
    if (ctl_parse_uint("reserve", "--uid", uid_s, 0, 4294967294ull, &uid) < 0)
        return CTL_EXIT_USAGE;
    if (!user[0] || strlen(user) > 64)
        return ctl_usage_error("reserve", "--user must be 1-64 bytes");
    size_t count = 0;
    if (hostlist_count_expr(nodes, HOSTLIST_DEFAULT_MAX_NAMES, &count, &error)
        < 0)
        return ctl_usage_error(
            "reserve", "--nodes '%s': %s", nodes, error.text);
    if ((rc = ctl_connect(ctl)) != 0)
        return rc;
    struct vnib_reserve r = {
        .job_id = argv[optind],
        .uid = (uint32_t)uid,
        .user = user,
        .nodes = nodes,
        .vni_count = vni_count,
        .hwcoll = hwcoll,
    };
    int status = vnib_client_reserve(ctl->client, &r, &reply, &error);
    if ((rc = outcome(ctl, status, reply, &error)) == CTL_EXIT_OK)
        rc = print_reservation(ctl, reply);
    json_decref(reply);
    return rc;
}

static const char help_release[] =
    "Usage: vnibctl release JOB_ID [--force] [--reservation ID]\n"
    "Release a job's VNIs (roles: scheduler, admin).  They stay quarantined\n"
    "until every node that created CXI services reports them destroyed.\n"
    "Repeating the call is harmless.\n"
    "  --force            end the quarantine now (admin only; recorded)\n"
    "  --reservation ID   that reservation of the job and no other (not a\n"
    "                     requeued job's newer one); default: the active\n"
    "                     one, else the newest\n"
    "  --json             print the reservation as JSON\n";

static int cmd_release(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"force", no_argument, NULL, 'f'},
        {"reservation", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    vnib_error_t error = {""};
    json_t *reply = NULL;
    bool force = false;
    bool first = true;
    long long res = 0;
    char *end = NULL;
    int c, rc;

    while ((c = ctl_getopt(argc, argv, "release", ":h", opts, &first)) != -1) {
        switch (c) {
            case 'f':
                force = true;
                break;
            case 'r':
                errno = 0;
                res = strtoll(optarg, &end, 10);
                if (errno || end == optarg || *end || res < 1) {
                    fprintf(stderr,
                            "vnibctl release: --reservation: '%s' is not a "
                            "reservation id (a positive integer)\n",
                            optarg);
                    return CTL_EXIT_USAGE;
                }
                break;
            case 'j':
                ctl->json = true;
                break;
            case 'h':
                return help(help_release);
            default:
                return CTL_EXIT_USAGE;
        }
    }
    if (check_args("release", argc, argv, 1, "JOB_ID") != 0
        || check_job_id("release", argv[optind]) != 0)
        return CTL_EXIT_USAGE;
    if ((rc = ctl_connect(ctl)) != 0)
        return rc;
    int status = vnib_client_release(
        ctl->client, argv[optind], res, force, &reply, &error);
    if ((rc = outcome(ctl, status, reply, &error)) == CTL_EXIT_OK)
        rc = print_reservation(ctl, reply);
    json_decref(reply);
    return rc;
}

static const char help_show[] =
    "Usage: vnibctl show JOB_ID\n"
    "Show the newest reservation of a job, with its VNIs and how many nodes\n"
    "have cleaned up (roles: scheduler, admin, monitor, a node of the "
    "job).\n"
    "  --json    print the reservation as JSON\n";

static int cmd_show(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    vnib_error_t error = {""};
    json_t *reply = NULL;
    bool first = true;
    int c, rc;

    while ((c = ctl_getopt(argc, argv, "show", ":h", opts, &first)) != -1) {
        switch (c) {
            case 'j':
                ctl->json = true;
                break;
            case 'h':
                return help(help_show);
            default:
                return CTL_EXIT_USAGE;
        }
    }
    if (check_args("show", argc, argv, 1, "JOB_ID") != 0
        || check_job_id("show", argv[optind]) != 0)
        return CTL_EXIT_USAGE;
    if ((rc = ctl_connect(ctl)) != 0)
        return rc;
    int status =
        vnib_client_get_reservation(ctl->client, argv[optind], &reply, &error);
    if ((rc = outcome(ctl, status, reply, &error)) == CTL_EXIT_OK)
        rc = print_reservation(ctl, reply);
    json_decref(reply);
    return rc;
}

static const char help_list[] =
    "Usage: vnibctl list [--state STATE] [--node NAME] [--uid N] [--limit N]\n"
    "                    [--after CURSOR] [--all]\n"
    "List reservations, oldest first (roles: scheduler, admin, monitor).\n"
    "  --state STATE    active, releasing or released\n"
    "  --node NAME      only reservations that include this node\n"
    "  --uid N          only this user's (0-4294967294)\n"
    "  --limit N        reservations per page (1-1000; default 100)\n"
    "  --after CURSOR   start after this cursor (a page's `next`)\n"
    "  --all            fetch every page\n"
    "  --json           print the page (with --all: every reservation) as "
    "JSON\n"
    "Columns: JOB_ID STATE UID USER NODES VNIS CREATED.\n";

/* One page of the list: GET, append its reservations to `all`, and return
 * its `next` cursor (a new string, or NULL on the last page) in *nextp.
 */
static int list_page(struct ctl *ctl,
                     const char *const *params,
                     const char *after,
                     json_t *all,
                     char **nextp,
                     json_t **pagep)
{
    vnib_error_t error = {""};
    json_t *reply = NULL;
    struct query q;
    char *path = NULL;
    int rc;

    *nextp = NULL;
    *pagep = NULL;
    if (query_open(&q, "/v1/reservations") < 0)
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    for (size_t i = 0; params[i]; i += 2)
        query_add(&q, params[i], params[i + 1]);
    query_add(&q, "after", after);
    if (!(path = query_close(&q)))
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    int status =
        vnib_client_request(ctl->client, "GET", path, NULL, &reply, &error);
    free(path);
    if ((rc = outcome(ctl, status, reply, &error)) != CTL_EXIT_OK)
        goto done;
    json_t *rows = json_object_get(reply, "reservations");
    if (!json_is_array(rows)) {
        rc = ctl_fail(CTL_EXIT_UNREACHABLE,
                      "the broker's reply has no reservations list");
        goto done;
    }
    if (json_array_extend(all, rows) < 0) {
        rc = ctl_fail(CTL_EXIT_FAILED, "out of memory");
        goto done;
    }
    const char *next = str(reply, "next");
    if (next && !(*nextp = strdup(next))) {
        rc = ctl_fail(CTL_EXIT_FAILED, "out of memory");
        goto done;
    }
    *pagep = reply;
    reply = NULL;
done:
    json_decref(reply);
    return rc;
}

static int cmd_list(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"state", required_argument, NULL, 's'},
        {"node", required_argument, NULL, 'n'},
        {"uid", required_argument, NULL, 'u'},
        {"limit", required_argument, NULL, 'l'},
        {"after", required_argument, NULL, 'a'},
        {"all", no_argument, NULL, 'A'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char *const headers[] = {
        "JOB_ID", "STATE", "UID", "USER", "NODES", "VNIS", "CREATED"};
    static const char *const keys[] = {
        "job_id", "state", "uid", "user", "nodes", "vnis", "created_at"};
    const char *state = NULL, *node = NULL, *uid = NULL, *limit = NULL;
    const char *after = NULL;
    unsigned long long n;
    json_t *all = NULL;
    json_t *page = NULL;
    char *next = NULL;
    char *cursor = NULL;
    bool every = false;
    bool first = true;
    int c, rc;

    while ((c = ctl_getopt(argc, argv, "list", ":h", opts, &first)) != -1) {
        switch (c) {
            case 's':
                state = optarg;
                break;
            case 'n':
                node = optarg;
                break;
            case 'u':
                uid = optarg;
                if (ctl_parse_uint("list", "--uid", uid, 0, 4294967294ull, &n)
                    < 0)
                    return CTL_EXIT_USAGE;
                break;
            case 'l':
                limit = optarg;
                if (ctl_parse_uint("list", "--limit", limit, 1, 1000, &n) < 0)
                    return CTL_EXIT_USAGE;
                break;
            case 'a':
                after = optarg;
                break;
            case 'A':
                every = true;
                break;
            case 'j':
                ctl->json = true;
                break;
            case 'h':
                return help(help_list);
            default:
                return CTL_EXIT_USAGE;
        }
    }
    if (check_args("list", argc, argv, 0, "") != 0)
        return CTL_EXIT_USAGE;
    if (state && strcmp(state, "active") != 0 && strcmp(state, "releasing") != 0
        && strcmp(state, "released") != 0)
        return ctl_usage_error(
            "list", "--state '%s' is not active, releasing or released", state);
    if (node && check_node("list", node) != 0)
        return CTL_EXIT_USAGE;
    if ((rc = ctl_connect(ctl)) != 0)
        return rc;
    const char *const params[] = {
        "state", state, "node", node, "uid", uid, "limit", limit, NULL};
    if (!(all = json_array()))
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    for (;;) {
        json_decref(page);
        rc = list_page(ctl, params, cursor ? cursor : after, all, &next, &page);
        if (rc != CTL_EXIT_OK || !every || !next)
            break;
        /* A cursor that does not move would loop forever. */
        if (cursor && strcmp(cursor, next) == 0) {
            rc = ctl_fail(CTL_EXIT_FAILED,
                          "the broker returned the same cursor twice");
            break;
        }
        free(cursor);
        cursor = next;
        next = NULL;
    }
    if (rc != CTL_EXIT_OK)
        goto done;
    if (ctl->json && !every) {
        rc = ctl_print_json(page);
    } else if (ctl->json) {
        json_t *o = json_pack("{s:O, s:n}", "reservations", all, "next");
        rc = o ? ctl_print_json(o) : ctl_fail(CTL_EXIT_FAILED, "out of memory");
        json_decref(o);
    } else {
        rc = print_table(all, 7, headers, keys);
        fflush(stdout); /* the table before the hint, also in a pipe */
        if (rc == CTL_EXIT_OK && next)
            fprintf(stderr,
                    "vnibctl: more reservations follow: --after %s (or "
                    "--all)\n",
                    next);
    }
done:
    json_decref(page);
    json_decref(all);
    free(next);
    free(cursor);
    return rc;
}

static const char help_pool[] =
    "Usage: vnibctl pool\n"
    "Show the VNI pool: its ranges and how many VNIs are free, active,\n"
    "quarantined or held outside the configured pool (roles: admin,\n"
    "scheduler, monitor).\n"
    "  --json    print the pool as JSON\n";

static const char help_vni[] =
    "Usage: vnibctl vni N\n"
    "Show who holds VNI N (0-65535), or when it was last released (admin).\n"
    "  --json    print the answer as JSON\n";

static const char help_node[] =
    "Usage: vnibctl node NAME [--undrain]\n"
    "Show a node: whether it is drained and the reservations it still has\n"
    "to clean up (roles: admin, the node itself).\n"
    "  --undrain  clear the node's drained mark after it was cleaned up\n"
    "             (admin)\n"
    "  --json     print the node as JSON\n";

/* GET one path and print it with `print` (or as JSON). */
static int get_and_print(struct ctl *ctl,
                         const char *method,
                         const char *path,
                         int (*print)(json_t *reply))
{
    vnib_error_t error = {""};
    json_t *reply = NULL;
    int rc;

    if ((rc = ctl_connect(ctl)) != 0)
        return rc;
    int status =
        vnib_client_request(ctl->client, method, path, NULL, &reply, &error);
    if ((rc = outcome(ctl, status, reply, &error)) == CTL_EXIT_OK)
        rc = ctl->json ? ctl_print_json(reply) : print(reply);
    json_decref(reply);
    return rc;
}

/* Options of commands that take only --json and --help: returns -1 to go
 * on, or an exit status.
 */
static int simple_options(struct ctl *ctl,
                          int argc,
                          char **argv,
                          const char *cmd,
                          const char *help_text)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool first = true;
    int c;

    while ((c = ctl_getopt(argc, argv, cmd, ":h", opts, &first)) != -1) {
        switch (c) {
            case 'j':
                ctl->json = true;
                break;
            case 'h':
                return help(help_text);
            default:
                return CTL_EXIT_USAGE;
        }
    }
    return -1;
}

static int print_pool(json_t *reply)
{
    static const char *const order[] = {"ranges",
                                        "total",
                                        "free",
                                        "active",
                                        "quarantined",
                                        "outside_pool",
                                        "cursor",
                                        "per_job_default",
                                        NULL};
    return print_kv(reply, order, NULL);
}

static int cmd_pool(struct ctl *ctl, int argc, char **argv)
{
    int rc = simple_options(ctl, argc, argv, "pool", help_pool);
    if (rc >= 0)
        return rc;
    if (check_args("pool", argc, argv, 0, "") != 0)
        return CTL_EXIT_USAGE;
    return get_and_print(ctl, "GET", "/v1/pool", print_pool);
}

static int print_vni(json_t *reply)
{
    static const char *const order[] = {
        "vni", "in_pool", "state", "last_released_at", NULL};
    static const char *const skip[] = {"reservation", NULL};
    json_t *r = json_object_get(reply, "reservation");
    int rc = print_kv(reply, order, skip);

    if (rc != CTL_EXIT_OK)
        return rc;
    if (!json_is_object(r)) {
        printf("\nno reservation has held it\n");
        return CTL_EXIT_OK;
    }
    const char *state = str(reply, "state");
    bool released = state && strcmp(state, "free") == 0;
    printf("\n%s reservation:\n", released ? "last" : "holding");
    return print_kv(r, reservation_order, NULL);
}

static int cmd_vni(struct ctl *ctl, int argc, char **argv)
{
    unsigned long long vni;
    char path[32];
    int rc = simple_options(ctl, argc, argv, "vni", help_vni);

    if (rc >= 0)
        return rc;
    if (check_args("vni", argc, argv, 1, "N") != 0
        || ctl_parse_uint("vni", "VNI", argv[optind], 0, 65535, &vni) < 0)
        return CTL_EXIT_USAGE;
    snprintf(path, sizeof(path), "/v1/vnis/%llu", vni);
    return get_and_print(ctl, "GET", path, print_vni);
}

/* "DEV:SVCID,..." for an array of services (the caller frees), or NULL
 * when out of memory or an entry has another shape.
 */
static char *services_text(json_t *services)
{
    char *s = NULL;
    size_t size = 0;
    size_t i;
    json_t *svc;
    bool ok = true;
    FILE *f = open_memstream(&s, &size);

    if (!f)
        return NULL;
    json_array_foreach (services, i, svc) {
        const char *dev = str(svc, "device");
        json_t *id = json_object_get(svc, "svc_id");
        if (!dev || !json_is_integer(id))
            ok = false;
        else
            fprintf(f,
                    "%s%s:%" JSON_INTEGER_FORMAT,
                    i ? "," : "",
                    dev,
                    json_integer_value(id));
    }
    if (fclose(f) != 0 || !ok) {
        free(s);
        return NULL;
    }
    return s;
}

static int print_node(json_t *reply)
{
    static const char *const order[] = {"node",
                                        "drained",
                                        "drained_reason",
                                        "drained_at",
                                        "cleanup_needed",
                                        NULL};
    static const char *const skip[] = {"reservations", NULL};
    static const char *const headers[] = {
        "JOB_ID", "STATE", "UID", "VNIS", "CXI", "SERVICES", "CLEANUP"};
    static const char *const keys[] = {
        "job_id", "state", "uid", "vnis", "cxi", "services", "cleanup_needed"};
    json_t *rows = json_object_get(reply, "reservations");
    int rc = print_kv(reply, order, skip);

    if (rc != CTL_EXIT_OK || !json_is_array(rows))
        return rc;
    putchar('\n');
    /* Services as DEV:SVCID, the form `report --service` takes. */
    size_t i;
    json_t *row;
    json_array_foreach (rows, i, row) {
        json_t *services = json_object_get(row, "services");
        char *text = services_text(services);
        if (json_is_array(services) && text)
            json_object_set_new(row, "services", json_string(text));
        free(text);
    }
    if (json_array_size(rows) == 0) {
        printf("no active or releasing reservations\n");
        return CTL_EXIT_OK;
    }
    return print_table(rows, 7, headers, keys);
}

static int cmd_node(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"undrain", no_argument, NULL, 'U'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool undrain = false;
    bool first = true;
    char *esc = NULL;
    char *path = NULL;
    int c, rc;

    while ((c = ctl_getopt(argc, argv, "node", ":h", opts, &first)) != -1) {
        switch (c) {
            case 'U':
                undrain = true;
                break;
            case 'j':
                ctl->json = true;
                break;
            case 'h':
                return help(help_node);
            default:
                return CTL_EXIT_USAGE;
        }
    }
    if (check_args("node", argc, argv, 1, "NAME") != 0
        || check_node("node", argv[optind]) != 0)
        return CTL_EXIT_USAGE;
    if (!(esc = vnib_client_escape(argv[optind])))
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    size_t len = strlen("/v1/nodes//drain") + strlen(esc) + 1;
    if (!(path = malloc(len))) {
        free(esc);
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    }
    snprintf(path, len, "/v1/nodes/%s%s", esc, undrain ? "/drain" : "");
    rc = get_and_print(ctl, undrain ? "DELETE" : "GET", path, print_node);
    free(path);
    free(esc);
    return rc;
}

static const char help_events[] =
    "Usage: vnibctl events [--job JOB_ID] [--limit N] [--after CURSOR]\n"
    "Show the audit trail of state changes, oldest first (admin).\n"
    "  --job JOB_ID     only this job's events\n"
    "  --limit N        events per page (1-1000; default 100)\n"
    "  --after CURSOR   start after this cursor (a page's `next`)\n"
    "  --json           print the page as JSON\n"
    "Columns: ID TIME JOB_ID NODE ACTOR ACTION DETAIL.\n";

static int cmd_events(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"job", required_argument, NULL, 'J'},
        {"limit", required_argument, NULL, 'l'},
        {"after", required_argument, NULL, 'a'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char *const headers[] = {
        "ID", "TIME", "JOB_ID", "NODE", "ACTOR", "ACTION", "DETAIL"};
    static const char *const keys[] = {
        "id", "time", "job_id", "node", "actor", "action", "detail"};
    const char *job = NULL, *limit = NULL, *after = NULL;
    unsigned long long n;
    vnib_error_t error = {""};
    json_t *reply = NULL;
    struct query q;
    char *path = NULL;
    bool first = true;
    int c, rc;

    while ((c = ctl_getopt(argc, argv, "events", ":h", opts, &first)) != -1) {
        switch (c) {
            case 'J':
                job = optarg;
                if (check_job_id("events", job) != 0)
                    return CTL_EXIT_USAGE;
                break;
            case 'l':
                limit = optarg;
                if (ctl_parse_uint("events", "--limit", limit, 1, 1000, &n) < 0)
                    return CTL_EXIT_USAGE;
                break;
            case 'a':
                after = optarg;
                break;
            case 'j':
                ctl->json = true;
                break;
            case 'h':
                return help(help_events);
            default:
                return CTL_EXIT_USAGE;
        }
    }
    if (check_args("events", argc, argv, 0, "") != 0)
        return CTL_EXIT_USAGE;
    if ((rc = ctl_connect(ctl)) != 0)
        return rc;
    if (query_open(&q, "/v1/events") < 0)
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    query_add(&q, "job_id", job);
    query_add(&q, "limit", limit);
    query_add(&q, "after", after);
    if (!(path = query_close(&q)))
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    int status =
        vnib_client_request(ctl->client, "GET", path, NULL, &reply, &error);
    free(path);
    if ((rc = outcome(ctl, status, reply, &error)) != CTL_EXIT_OK)
        goto done;
    if (ctl->json) {
        rc = ctl_print_json(reply);
        goto done;
    }
    rc = print_table(json_object_get(reply, "events"), 7, headers, keys);
    fflush(stdout); /* the table before the hint, also in a pipe */
    if (rc == CTL_EXIT_OK && str(reply, "next"))
        fprintf(stderr,
                "vnibctl: more events follow: --after %s\n",
                str(reply, "next"));
done:
    json_decref(reply);
    return rc;
}

static const char help_report[] =
    "Usage: vnibctl report JOB_ID NODE --cxi STATE [--service DEV:SVCID]...\n"
    "                      [--message TEXT] [--reservation ID]\n"
    "Record what a node did with a job's CXI services (roles: admin, the\n"
    "node itself).  Normally the node agent reports; admins use this after\n"
    "cleaning a node by hand.\n"
    "  --cxi STATE           creating, created, destroyed or failed\n"
    "  --service DEV:SVCID   a CXI service on device DEV (e.g. cxi0:5);\n"
    "                        repeatable, at most 64\n"
    "  --message TEXT        a note for the audit trail (at most 1024 "
    "bytes)\n"
    "  --reservation ID      the reservation acted on: refused (409\n"
    "                        stale_reservation) when the job has a newer one\n"
    "  --json                print the reservation as JSON\n";

/* Parse DEV:SVCID into a {"device", "svc_id"} object appended to list. */
static int add_service(json_t *list, const char *arg)
{
    const char *colon = strrchr(arg, ':');
    unsigned long long id;
    char dev[33];

    if (!colon || colon == arg || (size_t)(colon - arg) >= sizeof(dev)
        || strspn(arg,
                  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789_.-")
               != (size_t)(colon - arg))
        return ctl_usage_error("report",
                               "--service '%s' is not DEV:SVCID (DEV: 1-32 "
                               "of letters, digits and _.-)",
                               arg);
    if (ctl_parse_uint(
            "report", "--service SVCID", colon + 1, 0, 4294967295ull, &id)
        < 0)
        return CTL_EXIT_USAGE;
    if (json_array_size(list) >= 64)
        return ctl_usage_error("report", "at most 64 --service options");
    memcpy(dev, arg, (size_t)(colon - arg));
    dev[colon - arg] = '\0';
    if (json_array_append_new(
            list,
            json_pack("{s:s, s:I}", "device", dev, "svc_id", (json_int_t)id))
        < 0)
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    return 0;
}

static int cmd_report(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"cxi", required_argument, NULL, 'c'},
        {"service", required_argument, NULL, 's'},
        {"message", required_argument, NULL, 'm'},
        {"reservation", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char *const states[] = {
        "creating", "created", "destroyed", "failed", NULL};
    const char *cxi = NULL, *message = NULL;
    long long reservation = 0;
    vnib_error_t error = {""};
    json_t *services = NULL;
    json_t *reply = NULL;
    bool first = true;
    int c;
    int rc = CTL_EXIT_USAGE;

    if (!(services = json_array()))
        return ctl_fail(CTL_EXIT_FAILED, "out of memory");
    while ((c = ctl_getopt(argc, argv, "report", ":h", opts, &first)) != -1) {
        switch (c) {
            case 'c':
                cxi = optarg;
                break;
            case 's':
                if ((rc = add_service(services, optarg)) != 0)
                    goto done;
                rc = CTL_EXIT_USAGE;
                break;
            case 'm':
                message = optarg;
                break;
            case 'r': {
                char *end;
                errno = 0;
                reservation = strtoll(optarg, &end, 10);
                if (errno || end == optarg || *end || reservation <= 0) {
                    ctl_usage_error("report",
                                    "--reservation '%s' is not a positive "
                                    "integer",
                                    optarg);
                    goto done;
                }
                break;
            }
            case 'j':
                ctl->json = true;
                break;
            case 'h':
                rc = help(help_report);
                goto done;
            default:
                goto done;
        }
    }
    if (check_args("report", argc, argv, 2, "JOB_ID and NODE") != 0
        || check_job_id("report", argv[optind]) != 0
        || check_node("report", argv[optind + 1]) != 0)
        goto done;
    if (!cxi) {
        ctl_usage_error("report", "--cxi STATE is required");
        goto done;
    }
    if (!in_list(states, cxi)) {
        ctl_usage_error("report",
                        "--cxi '%s' is not creating, created, destroyed or "
                        "failed",
                        cxi);
        goto done;
    }
    if (message && strlen(message) > 1024) {
        ctl_usage_error("report", "--message is longer than 1024 bytes");
        goto done;
    }
    if ((rc = ctl_connect(ctl)) != 0)
        goto done;
    struct vnib_report r = {
        .job_id = argv[optind],
        .node = argv[optind + 1],
        .cxi = cxi,
        .services = json_array_size(services) ? services : NULL,
        .message = message,
        .reservation = reservation,
    };
    int status = vnib_client_report(ctl->client, &r, &reply, &error);
    if ((rc = outcome(ctl, status, reply, &error)) == CTL_EXIT_OK)
        rc = print_reservation(ctl, reply);
done:
    json_decref(reply);
    json_decref(services);
    return rc;
}

static int cmd_token(struct ctl *ctl, int argc, char **argv)
{
    return tokencmd_run(argc, argv, ctl->json);
}

static const struct command commands[] = {
    {"reserve", cmd_reserve},
    {"release", cmd_release},
    {"show", cmd_show},
    {"list", cmd_list},
    {"pool", cmd_pool},
    {"vni", cmd_vni},
    {"events", cmd_events},
    {"node", cmd_node},
    {"report", cmd_report},
    {"token", cmd_token},
};

/* ---- main ------------------------------------------------------------- */

/* --timeout SECONDS: a positive decimal up to a day. */
static int parse_timeout(const char *s, long *msp)
{
    char *end = NULL;
    double secs;

    errno = 0;
    secs = s[0] >= '0' && s[0] <= '9' ? strtod(s, &end) : -1;
    if (errno != 0 || !end || *end != '\0' || !isfinite(secs) || secs <= 0
        || secs > 86400)
        return ctl_usage_error(NULL,
                               "--timeout: '%s' is not a number of seconds "
                               "in (0, 86400]",
                               s);
    *msp = (long)(secs * 1000 + 0.5);
    if (*msp < 1)
        *msp = 1;
    return 0;
}

/* Global options, up to the command.  Returns -1 to go on, or an exit
 * status.
 */
static int parse_global(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"url", required_argument, NULL, 'u'},
        {"token-file", required_argument, NULL, 't'},
        {"cacert", required_argument, NULL, 'c'},
        {"timeout", required_argument, NULL, 'T'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    bool first = true;
    int c;

    /* '+': stop at the command, whose options are its own. */
    while ((c = ctl_getopt(argc, argv, NULL, "+:hV", opts, &first)) != -1) {
        switch (c) {
            case 'u':
                ctl->url = optarg;
                break;
            case 't':
                ctl->token_file = optarg;
                break;
            case 'c':
                ctl->cacert = optarg;
                break;
            case 'T':
                if (parse_timeout(optarg, &ctl->timeout_ms) != 0)
                    return CTL_EXIT_USAGE;
                break;
            case 'j':
                ctl->json = true;
                break;
            case 'h':
                return help(usage_text);
            case 'V':
                printf("vnibctl %s\n", VNIB_VERSION);
                return CTL_EXIT_OK;
            default:
                return CTL_EXIT_USAGE;
        }
    }
    return -1;
}

int main(int argc, char **argv)
{
    struct ctl ctl = {
        .url = getenv("VNIB_URL"),
        .cacert = getenv("VNIB_CACERT"),
        .timeout_ms = VNIB_CLIENT_TIMEOUT_MS,
    };
    int rc;

    if (!ctl.url || !ctl.url[0])
        ctl.url = DEFAULT_URL;
    if (ctl.cacert && !ctl.cacert[0])
        ctl.cacert = NULL;
    if ((rc = parse_global(&ctl, argc, argv)) >= 0)
        return rc;
    if (optind >= argc)
        return ctl_usage_error(NULL, "no command given");
    const char *name = argv[optind];
    rc = -1;
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(name, commands[i].name) == 0) {
            rc = commands[i].run(&ctl, argc - optind, argv + optind);
            break;
        }
    }
    if (rc < 0)
        rc = ctl_usage_error(NULL, "unknown command '%s'", name);
    vnib_client_destroy(ctl.client);
    if (fflush(stdout) == EOF && rc == CTL_EXIT_OK)
        rc = ctl_fail(CTL_EXIT_FAILED, "cannot write to stdout");
    return rc;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fmsim: a Slingshot Fabric Manager simulator for tests and `make run`.
 *
 * HPE's Fabric Manager is not available outside a Slingshot system, so the
 * broker's FM client is tested against this stand-in.  It serves the FM
 * collectives API as its public clients (Slurm, libfabric) use it, with
 * the same authentication modes, status codes and 507 sub-codes, keeps
 * its jobs in an optional state file across restarts, and injects faults
 * (latency, errors, outages, 403s, expired tokens, lost or unknown jobs)
 * set by flags at start or through a loopback-only admin API at run time
 * (see fmsim_http.h).
 *
 * main() parses the flags, reads the secret files, loads the state, starts
 * both listeners, prints one line that tests parse:
 *
 *   fmsim listening on http(s)://ADDR:PORT admin http://ADDR:APORT
 *
 * and waits for SIGTERM or SIGINT (blocked in every thread, taken with
 * sigwait) to tear down in reverse.  Exit status: 0 after a clean
 * shutdown, 1 when it cannot start, 2 for usage errors.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vnib/logger.h"
#include "vnib/secfile.h"
#include "vnib/sigstop.h"
#include "fmsim/fmsim_http.h"
#include "fmsim/fmsim_state.h"

enum {
    EXIT_RUNTIME = 1,
    EXIT_USAGE = 2,
};

static const char usage_text[] =
    "Usage: fmsim [OPTIONS]   simulate the Slingshot Fabric Manager API\n"
    "  --listen ADDR:PORT          main API, IPv4 (default 127.0.0.1:0)\n"
    "  --admin-listen ADDR:PORT    admin API, loopback only "
    "(default 127.0.0.1:0)\n"
    "  --tls-cert FILE --tls-key FILE   HTTPS on the main port (key 0600)\n"
    "  --auth none|basic|oauth     WLM authentication (default none)\n"
    "  --user NAME                 basic: user name (default cxi)\n"
    "  --password-file FILE        basic: password (0600)\n"
    "  --client-id ID              oauth: client id\n"
    "  --client-secret-file FILE   oauth: client secret (0600)\n"
    "  --token-ttl SECONDS         oauth: access token lifetime (default "
    "300)\n"
    "  --state FILE                load jobs from FILE, save after each "
    "change\n"
    "  --total-addrs N             fabric multicast addresses (default "
    "4086)\n"
    "  --latency-ms N              fault: delay every main-port request\n"
    "  --error-rate F              fault: answer this share 500/503 (0..1)\n"
    "  --outage none|refuse|drop   fault: main port down\n"
    "  --forbid                    fault: 403 for every WLM call\n"
    "  --log-level LEVEL           error, warning, notice, info (default), "
    "debug\n"
    "  -h, --help                  this text\n";

struct options {
    struct fmsim_http_config http;
    const char *addr_text;  /* --listen address, for the banner */
    const char *admin_text; /* --admin-listen address */
    const char *tls_cert_file;
    const char *tls_key_file;
    const char *password_file;
    const char *client_secret_file;
    const char *state_file;
    long total_addrs;
    int log_level;
};

/* Secrets read from files, wiped at exit. */
struct secrets {
    char *password;
    size_t password_len;
    char *client_secret;
    size_t client_secret_len;
    char *cert;
    size_t cert_len;
    char *key;
    size_t key_len;
};

static int parse_long(
    const char *name, const char *s, long min, long max, long *valp)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max) {
        fprintf(stderr,
                "fmsim: --%s must be an integer %ld..%ld, not '%s'\n",
                name,
                min,
                max,
                s);
        return -1;
    }
    *valp = v;
    return 0;
}

/* "A.B.C.D:PORT" (IPv4 literal, port 0..65535; 0 picks a free port).  The
 * address text is kept (borrowed from argv) for the banner.
 */
static int parse_listen(const char *name,
                        char *s,
                        struct sockaddr_in *sa,
                        const char **textp)
{
    char *colon = strrchr(s, ':');
    long port;

    if (!colon)
        goto bad;
    *colon = '\0';
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    if (inet_pton(AF_INET, s, &sa->sin_addr) != 1) {
        *colon = ':';
        goto bad;
    }
    char *end;
    errno = 0;
    port = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || port < 0 || port > 65535) {
        *colon = ':';
        goto bad;
    }
    sa->sin_port = htons((uint16_t)port);
    *textp = s;
    return 0;
bad:
    fprintf(
        stderr, "fmsim: --%s must be IPV4-ADDRESS:PORT, not '%s'\n", name, s);
    return -1;
}

static int parse_options(int argc, char **argv, struct options *opt)
{
    enum {
        O_LISTEN = 256,
        O_ADMIN,
        O_CERT,
        O_KEY,
        O_AUTH,
        O_USER,
        O_PASSWORD,
        O_CLIENT_ID,
        O_CLIENT_SECRET,
        O_TTL,
        O_STATE,
        O_TOTAL,
        O_LATENCY,
        O_ERROR_RATE,
        O_OUTAGE,
        O_FORBID,
        O_LOG_LEVEL,
    };
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, O_LISTEN},
        {"admin-listen", required_argument, NULL, O_ADMIN},
        {"tls-cert", required_argument, NULL, O_CERT},
        {"tls-key", required_argument, NULL, O_KEY},
        {"auth", required_argument, NULL, O_AUTH},
        {"user", required_argument, NULL, O_USER},
        {"password-file", required_argument, NULL, O_PASSWORD},
        {"client-id", required_argument, NULL, O_CLIENT_ID},
        {"client-secret-file", required_argument, NULL, O_CLIENT_SECRET},
        {"token-ttl", required_argument, NULL, O_TTL},
        {"state", required_argument, NULL, O_STATE},
        {"total-addrs", required_argument, NULL, O_TOTAL},
        {"latency-ms", required_argument, NULL, O_LATENCY},
        {"error-rate", required_argument, NULL, O_ERROR_RATE},
        {"outage", required_argument, NULL, O_OUTAGE},
        {"forbid", no_argument, NULL, O_FORBID},
        {"log-level", required_argument, NULL, O_LOG_LEVEL},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    /* The options that only name a string (a file, a user). */
    const struct {
        int opt;
        const char **field;
    } strings[] = {
        {O_CERT, &opt->tls_cert_file},
        {O_KEY, &opt->tls_key_file},
        {O_USER, &opt->http.user},
        {O_PASSWORD, &opt->password_file},
        {O_CLIENT_ID, &opt->http.client_id},
        {O_CLIENT_SECRET, &opt->client_secret_file},
        {O_STATE, &opt->state_file},
    };
    int c;

    opt->http.listen.sin_family = AF_INET;
    opt->http.listen.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    opt->http.admin = opt->http.listen;
    opt->addr_text = "127.0.0.1";
    opt->admin_text = "127.0.0.1";
    opt->http.auth = FMSIM_AUTH_NONE;
    opt->http.user = "cxi";
    opt->http.token_ttl_s = 300;
    opt->total_addrs = FMSIM_TOTAL_ADDRS_DEFAULT;
    opt->log_level = LOG_INFO;

    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        char *end;
        bool named = false;
        for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
            if (c == strings[i].opt) {
                *strings[i].field = optarg;
                named = true;
            }
        }
        if (named)
            continue;
        switch (c) {
            case O_LISTEN:
                if (parse_listen(
                        "listen", optarg, &opt->http.listen, &opt->addr_text)
                    < 0)
                    return -1;
                break;
            case O_ADMIN:
                if (parse_listen("admin-listen",
                                 optarg,
                                 &opt->http.admin,
                                 &opt->admin_text)
                    < 0)
                    return -1;
                break;
            case O_AUTH:
                if (strcmp(optarg, "none") == 0)
                    opt->http.auth = FMSIM_AUTH_NONE;
                else if (strcmp(optarg, "basic") == 0)
                    opt->http.auth = FMSIM_AUTH_BASIC;
                else if (strcmp(optarg, "oauth") == 0)
                    opt->http.auth = FMSIM_AUTH_OAUTH;
                else {
                    fprintf(stderr,
                            "fmsim: --auth must be none, basic or oauth\n");
                    return -1;
                }
                break;
            case O_TTL:
                if (parse_long("token-ttl",
                               optarg,
                               1,
                               86400 * 366,
                               &opt->http.token_ttl_s)
                    < 0)
                    return -1;
                break;
            case O_TOTAL:
                if (parse_long("total-addrs",
                               optarg,
                               1,
                               FMSIM_MCAST_IDS,
                               &opt->total_addrs)
                    < 0)
                    return -1;
                break;
            case O_LATENCY:
                if (parse_long("latency-ms",
                               optarg,
                               0,
                               FMSIM_LATENCY_MAX_MS,
                               &opt->http.faults.latency_ms)
                    < 0)
                    return -1;
                break;
            case O_ERROR_RATE:
                errno = 0;
                opt->http.faults.error_rate = strtod(optarg, &end);
                if (errno || end == optarg || *end
                    || !isfinite(opt->http.faults.error_rate)
                    || opt->http.faults.error_rate < 0
                    || opt->http.faults.error_rate > 1) {
                    fprintf(stderr,
                            "fmsim: --error-rate must be a number 0..1\n");
                    return -1;
                }
                break;
            case O_OUTAGE:
                if (fmsim_outage_parse(optarg, &opt->http.faults.outage) < 0) {
                    fprintf(stderr,
                            "fmsim: --outage must be none, refuse or drop\n");
                    return -1;
                }
                break;
            case O_FORBID:
                opt->http.faults.forbid = true;
                break;
            case O_LOG_LEVEL:
                if (logger_level_parse(optarg, &opt->log_level) < 0) {
                    fprintf(
                        stderr, "fmsim: unknown --log-level '%s'\n", optarg);
                    return -1;
                }
                break;
            case 'h':
                fputs(usage_text, stdout);
                exit(0);
            default:
                fputs(usage_text, stderr);
                return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fmsim: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if ((ntohl(opt->http.admin.sin_addr.s_addr) >> 24) != 127) {
        fprintf(stderr,
                "fmsim: --admin-listen must be a loopback address (127.x.x.x): "
                "the admin API has no authentication\n");
        return -1;
    }
    if (!opt->tls_cert_file != !opt->tls_key_file) {
        fprintf(stderr, "fmsim: --tls-cert and --tls-key go together\n");
        return -1;
    }
    if (opt->http.auth == FMSIM_AUTH_BASIC && !opt->password_file) {
        fprintf(stderr, "fmsim: --auth basic needs --password-file\n");
        return -1;
    }
    if (opt->http.auth == FMSIM_AUTH_OAUTH
        && (!opt->http.client_id || !opt->client_secret_file)) {
        fprintf(stderr,
                "fmsim: --auth oauth needs --client-id and "
                "--client-secret-file\n");
        return -1;
    }
    return 0;
}

/* Read a one-line secret file (mode 0600), dropping one trailing newline. */
static int read_secret(const char *path,
                       char **bufp,
                       size_t *lenp,
                       vnib_error_t *errp)
{
    if (secfile_read(path, bufp, lenp, errp) < 0)
        return -1;
    size_t n = strlen(*bufp);
    if (n > 0 && (*bufp)[n - 1] == '\n')
        (*bufp)[--n] = '\0';
    if (n > 0 && (*bufp)[n - 1] == '\r')
        (*bufp)[--n] = '\0';
    if (n == 0) {
        errno = EINVAL;
        return errprintf(errp, "%s: empty", path);
    }
    return 0;
}

static int read_secrets(struct options *opt,
                        struct secrets *sec,
                        vnib_error_t *errp)
{
    if (opt->password_file
        && read_secret(
               opt->password_file, &sec->password, &sec->password_len, errp)
               < 0)
        return -1;
    if (opt->client_secret_file
        && read_secret(opt->client_secret_file,
                       &sec->client_secret,
                       &sec->client_secret_len,
                       errp)
               < 0)
        return -1;
    if (opt->tls_cert_file
        && (secfile_read_public(
                opt->tls_cert_file, &sec->cert, &sec->cert_len, errp)
                < 0
            || secfile_read(opt->tls_key_file, &sec->key, &sec->key_len, errp)
                   < 0))
        return -1;
    opt->http.password = sec->password;
    opt->http.client_secret = sec->client_secret;
    opt->http.tls_cert = sec->cert;
    opt->http.tls_key = sec->key;
    return 0;
}

static void secrets_free(struct secrets *sec)
{
    secfile_free(sec->password, sec->password_len);
    secfile_free(sec->client_secret, sec->client_secret_len);
    secfile_free(sec->cert, sec->cert_len);
    secfile_free(sec->key, sec->key_len);
}

int main(int argc, char **argv)
{
    struct options opt = {0};
    struct secrets sec = {0};
    struct logger *log = NULL;
    struct fmsim_state *state = NULL;
    struct fmsim_http *http = NULL;
    vnib_error_t error = {0};
    sigset_t sigs;
    int rc = EXIT_RUNTIME;

    if (parse_options(argc, argv, &opt) < 0)
        return EXIT_USAGE;
    if (!(log = logger_create("fmsim", opt.log_level, STDERR_FILENO))) {
        fprintf(stderr, "fmsim: out of memory\n");
        goto done;
    }

    /* Before any thread exists, so that only sigstop_wait() below sees
     * the stop signals.
     */
    sigstop_block(&sigs);

    if (read_secrets(&opt, &sec, &error) < 0) {
        logger_printf(log, LOG_ERR, NULL, "cannot start: %s", error.text);
        goto done;
    }
    if (!(state = fmsim_state_create(
              (int)opt.total_addrs, opt.state_file, log, &error))) {
        logger_printf(log, LOG_ERR, NULL, "cannot start: %s", error.text);
        goto done;
    }
    if (!(http = fmsim_http_create(&opt.http, state, log, &error))) {
        logger_printf(log, LOG_ERR, NULL, "cannot start: %s", error.text);
        goto done;
    }
    printf("fmsim listening on %s://%s:%u admin http://%s:%u\n",
           opt.http.tls_cert ? "https" : "http",
           opt.addr_text,
           (unsigned)fmsim_http_port(http),
           opt.admin_text,
           (unsigned)fmsim_http_admin_port(http));
    fflush(stdout);
    logger_printf(log,
                  LOG_NOTICE,
                  NULL,
                  "serving the FM API on port %u (%s, auth %s), admin API on "
                  "port %u, %ld multicast addresses%s%s",
                  (unsigned)fmsim_http_port(http),
                  opt.http.tls_cert ? "https" : "http",
                  opt.http.auth == FMSIM_AUTH_BASIC   ? "basic"
                  : opt.http.auth == FMSIM_AUTH_OAUTH ? "oauth"
                                                      : "none",
                  (unsigned)fmsim_http_admin_port(http),
                  opt.total_addrs,
                  opt.state_file ? ", state in " : "",
                  opt.state_file ? opt.state_file : "");

    sigstop_wait(&sigs, log, NULL);
    rc = 0;
done:
    fmsim_http_destroy(http);
    fmsim_state_destroy(state);
    secrets_free(&sec);
    logger_destroy(log);
    return rc;
}

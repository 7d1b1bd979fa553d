/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Bearer-token authentication (see auth.h).
 *
 * Named tokens are kept as a sorted array of SHA-256 digests and found by
 * binary search: the digest of a guess reveals nothing about stored ones,
 * so the search needs no constant-time care, and the broker never holds a
 * named token in memory.  Node and job tokens are verified by recomputing
 * their HMAC with the node key and comparing in constant time; during a
 * key rotation, a token the current key refuses is tried with the
 * previous key, until auth.node_key_previous_until.  A job token only
 * says which job and reservation it was made for: whether that
 * reservation is still the job's active one is the handler's check
 * (server/api/steps.c), as the route table's roles are the pipeline's.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/sha.h>

#include "vnib/hex.h"
#include "vnib/logger.h"
#include "vnib/secfile.h"
#include "server/http/auth.h"
#include "server/config.h"

struct named_token {
    unsigned char digest[32]; /* SHA-256 of the token */
    unsigned role;
    char name[64];
};

struct auth {
    struct named_token *tokens; /* sorted by digest */
    size_t ntokens;
    unsigned char *node_key; /* NULL: node tokens disabled */
    size_t node_key_len;
    unsigned char *prev_key; /* NULL: no rotation under way */
    size_t prev_key_len;
    time_t prev_until; /* the previous key is refused from then on */
    char prev_until_text[32];
    struct logger *log;
    atomic_bool prev_warned; /* the end of the overlap was logged */
};

static const struct {
    const char *name;
    unsigned role;
} role_names[] = {
    {"admin", ROLE_ADMIN},
    {"scheduler", ROLE_SCHEDULER},
    {"node", ROLE_NODE},
    {"monitor", ROLE_MONITOR},
    {"job", ROLE_JOB},
};

const char *auth_role_name(unsigned role)
{
    for (size_t i = 0; i < sizeof(role_names) / sizeof(role_names[0]); i++)
        if (role_names[i].role == role)
            return role_names[i].name;
    return "unknown";
}

static int digest_cmp(const void *a, const void *b)
{
    return memcmp(((const struct named_token *)a)->digest,
                  ((const struct named_token *)b)->digest,
                  32);
}

static bool name_valid(const char *s)
{
    size_t n = strspn(s,
                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789._@-");
    return n > 0 && n < 64 && s[n] == '\0';
}

/* Parse one non-comment line "ROLE NAME SHA256HEX" into t. */
static int parse_line(char *line,
                      const char *path,
                      int lineno,
                      struct named_token *t,
                      vnib_error_t *errp)
{
    char *save = NULL;
    char *role = strtok_r(line, " \t", &save);
    char *name = strtok_r(NULL, " \t", &save);
    char *hex = strtok_r(NULL, " \t", &save);
    char *extra = strtok_r(NULL, " \t", &save);

    errno = EINVAL;
    if (!role || !name || !hex || extra)
        return errprintf(
            errp, "%s:%d: expected 'ROLE NAME SHA256HEX'", path, lineno);
    t->role = 0;
    for (size_t i = 0; i < sizeof(role_names) / sizeof(role_names[0]); i++)
        if (strcmp(role, role_names[i].name) == 0)
            t->role = role_names[i].role;
    if (t->role == 0 || t->role == ROLE_NODE || t->role == ROLE_JOB)
        return errprintf(errp,
                         "%s:%d: role '%s' is not admin, scheduler or monitor "
                         "(nodes and jobs use derived tokens)",
                         path,
                         lineno,
                         role);
    if (!name_valid(name))
        return errprintf(errp,
                         "%s:%d: name '%.40s' must be 1-63 characters of "
                         "letters, digits and ._@-",
                         path,
                         lineno,
                         name);
    if (!token_hash_valid(hex)
        || hex_decode(hex, t->digest, sizeof(t->digest)) < 0)
        return errprintf(
            errp,
            "%s:%d: '%.16s...' is not a SHA-256 in hex (64 digits); "
            "'vnibctl token new' prints the line to use",
            path,
            lineno,
            hex);
    snprintf(t->name, sizeof(t->name), "%s", name);
    return 0;
}

static int load_tokens(struct auth *a, const char *path, vnib_error_t *errp)
{
    char *buf = NULL;
    size_t len = 0;
    int lineno = 0;
    int rc = -1;

    if (secfile_read_owned(path, &buf, &len, errp) < 0)
        return -1;
    char *save = NULL;
    for (char *line = buf; line; line = save) {
        save = strchr(line, '\n');
        if (save)
            *save++ = '\0';
        lineno++;
        line[strcspn(line, "#\r")] = '\0';
        if (line[strspn(line, " \t")] == '\0')
            continue;
        struct named_token *grown =
            realloc(a->tokens, (a->ntokens + 1) * sizeof(*grown));
        if (!grown) {
            errprintf(errp, "out of memory");
            goto done;
        }
        a->tokens = grown;
        if (parse_line(line, path, lineno, &a->tokens[a->ntokens], errp) < 0)
            goto done;
        a->ntokens++;
    }
    qsort(a->tokens, a->ntokens, sizeof(a->tokens[0]), digest_cmp);
    for (size_t i = 1; i < a->ntokens; i++) {
        if (digest_cmp(&a->tokens[i - 1], &a->tokens[i]) == 0) {
            errno = EINVAL;
            errprintf(errp,
                      "%s: tokens '%s' and '%s' have the same hash",
                      path,
                      a->tokens[i - 1].name,
                      a->tokens[i].name);
            goto done;
        }
    }
    rc = 0;
done:
    secfile_free(buf, len);
    return rc;
}

/* Read a node key file of at least TOKEN_KEY_MIN bytes. */
static int load_node_key(const char *path,
                         unsigned char **keyp,
                         size_t *lenp,
                         vnib_error_t *errp)
{
    char *key = NULL;
    size_t keylen = 0;

    if (secfile_read_owned(path, &key, &keylen, errp) < 0)
        return -1;
    if (keylen < TOKEN_KEY_MIN) {
        secfile_free(key, keylen);
        errno = EINVAL;
        return errprintf(errp,
                         "%s: the node key has %zu bytes; at least %d are "
                         "needed ('vnibctl token key --out FILE' makes one)",
                         path,
                         keylen,
                         TOKEN_KEY_MIN);
    }
    *keyp = (unsigned char *)key;
    *lenp = keylen;
    return 0;
}

struct auth *auth_create(const struct config *cfg,
                         struct logger *log,
                         vnib_error_t *errp)
{
    struct auth *a = calloc(1, sizeof(*a));

    if (!a) {
        errprintf(errp, "out of memory");
        return NULL;
    }
    a->log = log;
    atomic_init(&a->prev_warned, false);
    if (cfg->auth.tokens_file[0]
        && load_tokens(a, cfg->auth.tokens_file, errp) < 0)
        goto error;
    if (cfg->auth.node_key_file[0]
        && load_node_key(
               cfg->auth.node_key_file, &a->node_key, &a->node_key_len, errp)
               < 0)
        goto error;
    if (cfg->auth.node_key_previous_file[0]) {
        if (load_node_key(cfg->auth.node_key_previous_file,
                          &a->prev_key,
                          &a->prev_key_len,
                          errp)
            < 0)
            goto error;
        a->prev_until = cfg->node_key_previous_until;
        snprintf(a->prev_until_text,
                 sizeof(a->prev_until_text),
                 "%s",
                 cfg->auth.node_key_previous_until);
        bool over = time(NULL) >= a->prev_until;
        if (over)
            atomic_store(&a->prev_warned, true);
        logger_printf(log,
                      over ? LOG_WARNING : LOG_NOTICE,
                      NULL,
                      "auth: node tokens of the previous key (%s) %s until "
                      "%s%s",
                      cfg->auth.node_key_previous_file,
                      over ? "were accepted" : "are accepted",
                      a->prev_until_text,
                      over ? ", and are refused now: remove "
                             "auth.node_key_previous_file"
                           : "");
    }
    return a;
error:
    auth_destroy(a);
    return NULL;
}

void auth_destroy(struct auth *a)
{
    int saved_errno = errno;
    if (a) {
        secfile_free((char *)a->node_key, a->node_key_len);
        secfile_free((char *)a->prev_key, a->prev_key_len);
        free(a->tokens);
        free(a);
    }
    errno = saved_errno;
}

size_t auth_token_count(const struct auth *a)
{
    return a->ntokens;
}

int auth_nodes_enabled(const struct auth *a)
{
    return a && a->node_key != NULL;
}

/* A token the previous key verified, for `what` (as "node 'NAME'"): true
 * while its overlap lasts.  After it, the first such token is logged
 * (once per process: a node still holding one needs a new token), and
 * all are refused.
 */
static bool previous_in_overlap(struct auth *a, time_t now, const char *what)
{
    if (now < a->prev_until)
        return true;
    if (!atomic_exchange(&a->prev_warned, true))
        logger_printf(a->log,
                      LOG_WARNING,
                      NULL,
                      "auth: %s presented a token of the previous node "
                      "key, whose overlap ended at %s: refused (it needs a "
                      "token of the current key; further ones are refused "
                      "without a log line)",
                      what,
                      a->prev_until_text);
    return false;
}

/* Verify a node token with the previous key, while its overlap lasts. */
static bool previous_verifies(struct auth *a,
                              const char *token,
                              time_t now,
                              struct identity *who)
{
    char what[TOKEN_NODE_MAX + 16];

    if (!a->prev_key
        || !token_node_verify(
            a->prev_key, a->prev_key_len, token, who->node, sizeof(who->node)))
        return false;
    snprintf(what, sizeof(what), "node '%s'", who->node);
    if (previous_in_overlap(a, now, what))
        return true;
    who->node[0] = '\0';
    return false;
}

/* Verify a job token with the previous key, while its overlap lasts. */
static bool previous_job_verifies(struct auth *a,
                                  const char *token,
                                  time_t now,
                                  struct identity *who)
{
    char what[TOKEN_JOB_ID_MAX + 64];

    if (!a->prev_key
        || !token_job_verify(a->prev_key,
                             a->prev_key_len,
                             token,
                             &who->resv_id,
                             who->job_id,
                             sizeof(who->job_id)))
        return false;
    snprintf(what,
             sizeof(what),
             "job '%s' (reservation %lld)",
             who->job_id,
             who->resv_id);
    if (previous_in_overlap(a, now, what))
        return true;
    who->job_id[0] = '\0';
    who->resv_id = 0;
    return false;
}

int auth_job_token(const struct auth *a,
                   long long resv_id,
                   const char *job_id,
                   char *buf,
                   size_t size,
                   vnib_error_t *errp)
{
    if (!auth_nodes_enabled(a)) {
        errno = ENOTSUP;
        return errprintf(errp, "job tokens are not enabled on this broker");
    }
    return token_job_derive(
        a->node_key, a->node_key_len, resv_id, job_id, buf, size, errp);
}

int auth_check(struct auth *a,
               const char *header,
               struct identity *who,
               vnib_error_t *errp)
{
    return auth_check_at(a, header, time(NULL), who, errp);
}

int auth_check_at(struct auth *a,
                  const char *header,
                  time_t now,
                  struct identity *who,
                  vnib_error_t *errp)
{
    errno = EACCES;
    if (!header)
        return errprintf(errp,
                         "missing 'Authorization: Bearer <token>' header");
    if (strncasecmp(header, "Bearer ", 7) != 0)
        return errprintf(errp,
                         "the Authorization header must be 'Bearer <token>'");
    const char *token = header + 7;
    while (*token == ' ')
        token++;
    size_t len = strlen(token);
    if (len == 0 || len > TOKEN_MAX_LEN)
        return errprintf(errp, "invalid token");

    memset(who, 0, sizeof(*who));
    if (token_is_node(token)) {
        if (!a->node_key)
            return errprintf(errp,
                             "node tokens are not enabled on this broker");
        if (!token_node_verify(a->node_key,
                               a->node_key_len,
                               token,
                               who->node,
                               sizeof(who->node))
            && !previous_verifies(a, token, now, who))
            return errprintf(errp, "invalid token");
        who->role = ROLE_NODE;
        snprintf(who->name, sizeof(who->name), "node:%.60s", who->node);
        return 0;
    }
    if (token_is_job(token)) {
        if (!a->node_key)
            return errprintf(errp, "job tokens are not enabled on this broker");
        if (!token_job_verify(a->node_key,
                              a->node_key_len,
                              token,
                              &who->resv_id,
                              who->job_id,
                              sizeof(who->job_id))
            && !previous_job_verifies(a, token, now, who))
            return errprintf(errp, "invalid token");
        who->role = ROLE_JOB;
        snprintf(who->name, sizeof(who->name), "job:%s", who->job_id);
        return 0;
    }
    struct named_token key;
    SHA256((const unsigned char *)token, len, key.digest);
    const struct named_token *t =
        bsearch(&key, a->tokens, a->ntokens, sizeof(key), digest_cmp);
    if (!t)
        return errprintf(errp, "invalid token");
    who->role = t->role;
    snprintf(who->name, sizeof(who->name), "%s", t->name);
    return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* swv_conn: clients of the broker, made and kept (see swv_conn.h). */
#include "swv_conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vnib/secfile.h"

void swv_conn_close(struct swv_conn *cc)
{
    if (cc->c)
        cc->api->destroy(cc->c);
    cc->c = NULL;
}

/* Apply cfg's CA and timeout to a new client c. */
static int client_settings(const struct swv_config *cfg,
                           const struct swv_client_api *api,
                           struct vnib_client *c,
                           vnib_error_t *errp)
{
    if ((cfg->cacert[0] != '\0' && api->set_cacert(c, cfg->cacert) < 0)
        || api->set_timeout_ms(c, cfg->timeout_ms) < 0)
        return errprintf(
            errp, "%s: client settings: %s", cfg->url, strerror(errno));
    return 0;
}

/* slurmctld's token from its file (secfile_free it), trailing space
 * trimmed. */
static int read_token(const struct swv_config *cfg,
                      char **bufp,
                      size_t *lenp,
                      vnib_error_t *errp)
{
    if (secfile_read(cfg->token_file, bufp, lenp, errp) < 0)
        return -1;
    while (*lenp > 0 && strchr(" \t\r\n", (*bufp)[*lenp - 1]) != NULL)
        (*bufp)[--*lenp] = '\0';
    return 0;
}

int swv_conn_open(const struct swv_config *cfg,
                  const char *job_token,
                  struct swv_conn *cc,
                  vnib_error_t *errp)
{
    char *buf = NULL;
    size_t len = 0;

    cc->c = NULL;
    if (cfg->url[0] == '\0') {
        errno = EINVAL;
        return errprintf(errp, "SwitchParameters has no vnib_url");
    }
    if (!(cc->api = swv_broker_client(errp)))
        return -1;
    if (job_token != NULL) {
        cc->c = cc->api->create(cfg->url, job_token, errp);
    } else {
        if (read_token(cfg, &buf, &len, errp) < 0)
            return -1;
        cc->c = cc->api->create(cfg->url, buf, errp);
        secfile_free(buf, len);
    }
    if (cc->c == NULL)
        return -1;
    if (client_settings(cfg, cc->api, cc->c, errp) < 0) {
        swv_conn_close(cc);
        return -1;
    }
    return 0;
}

int swv_conn_get(struct swv_conn_slot *s,
                 const struct swv_config *cfg,
                 struct swv_conn *cc,
                 vnib_error_t *errp)
{
    char *buf = NULL;
    size_t len = 0;

    pthread_mutex_lock(&s->lock);
    cc->c = NULL;
    if (cfg->url[0] == '\0') {
        errno = EINVAL;
        errprintf(errp, "SwitchParameters has no vnib_url");
        goto fail;
    }
    if (!(cc->api = swv_broker_client(errp))
        || read_token(cfg, &buf, &len, errp) < 0)
        goto fail;
    if (s->c && (len != s->token_len || memcmp(buf, s->token, len) != 0)) {
        cc->api->destroy(s->c);
        s->c = NULL;
    }
    if (!s->c) {
        if (s->token)
            secfile_free(s->token, s->token_len);
        s->token = NULL;
        if (!(s->c = cc->api->create(cfg->url, buf, errp)))
            goto fail;
        if (client_settings(cfg, cc->api, s->c, errp) < 0) {
            cc->api->destroy(s->c);
            s->c = NULL;
            goto fail;
        }
        s->token = buf;
        s->token_len = len;
        buf = NULL;
    }
    if (buf)
        secfile_free(buf, len);
    cc->c = s->c;
    return 0;
fail:
    if (buf)
        secfile_free(buf, len);
    pthread_mutex_unlock(&s->lock);
    return -1;
}

void swv_conn_put(struct swv_conn_slot *s, struct swv_conn *cc, bool drop)
{
    if (drop && s->c) {
        cc->api->destroy(s->c);
        s->c = NULL;
    }
    cc->c = NULL;
    pthread_mutex_unlock(&s->lock);
}

void swv_conn_slot_init(struct swv_conn_slot *s)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->lock, NULL);
}

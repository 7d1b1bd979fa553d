/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target for what the FM client reads from servers
 * (fmclient/fmauth.c, fmclient.c and fmhttp.c, compiled into this file for
 * their static parsers).
 *
 * The first byte picks the prefix the job list is filtered by; the rest
 * is a reply body, parsed as JSON and read the way each call reads it:
 * a job list's documentLinks (link ids percent-decoded), a token
 * endpoint's access_token and expires_in, a job's sessionToken, and an
 * error's detail, scrubbed of secrets.  Any crash, leak or sanitizer
 * report is a bug, and so is a scrubbed detail that still holds a secret.
 */
#include "fmclient/fmauth.c"
#include "fmclient/fmclient.c"
#include "fmclient/fmhttp.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const prefixes[] = {"tux", "a", "cluster-x", "%"};
    static const char *const forms[] = {
        "s3cret", "Y3hpOnMzY3JldA==", "p%26ss", "p&ss", "AT1", NULL};
    vnib_error_t err = {0};
    json_error_t jerr;
    char **ids = NULL;
    size_t count = 0;
    char *token = NULL;
    json_int_t lifetime;
    json_t *body;

    if (size == 0)
        return 0;
    const char *prefix = prefixes[data[0] % 4];
    body = json_loadb((const char *)data + 1, size - 1, 0, &jerr);
    if (list_ids(body, prefix, "fuzz", &ids, &count, &err) == 0) {
        for (size_t i = 0; i < count; i++)
            if (strncmp(ids[i], prefix, strlen(prefix)) != 0)
                abort();
        fmc_free_ids(ids, count);
    }
    if (token_parse(body, "fuzz", 200, &token, &lifetime, &err) == 0) {
        if (!httpc_token_printable(token))
            abort();
        httpc_secret_free(token);
    }
    if (session_token(body, "fuzz", 200, size == 1, &token, &err) == 0)
        httpc_secret_free(token);
    const char *detail = detail_of(body);
    if (detail) {
        char *clean = scrub_text(detail, forms, 5);
        if (clean) {
            for (int i = 0; forms[i]; i++)
                if (strstr(clean, forms[i]))
                    abort();
            httpc_secret_free(clean);
        }
    }
    /* Link ids straight from the bytes, not only from JSON strings. */
    char *raw = strndup((const char *)data + 1, size - 1);
    if (raw) {
        free(link_id(raw));
        free(raw);
    }
    json_decref(body);
    return 0;
}

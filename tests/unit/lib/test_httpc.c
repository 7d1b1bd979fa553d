/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the one libcurl client (lib/httpc.c).
 *
 * The reply cap, buffer wiping and fault classes are checked on the write
 * callback directly and against the fake HTTP server
 * (tests/unit/common/fakehttp.h); TLS verification against a TLS server
 * in a thread of the test, with a self-signed certificate made at run
 * time, that no default set-up accepts.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "tests/unit/common/fakehttp.h"
#include "vnib/httpc.h"

/* ---- the write callback -------------------------------------------------- */

static void test_cap(void **state)
{
    struct httpc_reply r = {.max = 10};
    char data[] = "0123456789ab";
    (void)state;

    assert_int_equal(httpc_write_cb(data, 1, 8, &r), 8);
    assert_int_equal(r.len, 8);
    assert_false(r.too_large);
    /* 8 + 3 passes the cap: the transfer is aborted, nothing appended. */
    assert_int_equal(httpc_write_cb(data, 1, 3, &r), 0);
    assert_true(r.too_large);
    assert_int_equal(r.len, 8);
    assert_memory_equal(r.buf, "01234567", 9);
    /* Exactly up to the cap is accepted. */
    r.too_large = false;
    assert_int_equal(httpc_write_cb(data, 2, 1, &r), 2);
    assert_int_equal(r.len, 10);
    assert_int_equal(httpc_fault_of(CURLE_WRITE_ERROR, &r), HTTPC_OTHER);
    r.too_large = true;
    assert_int_equal(httpc_fault_of(CURLE_WRITE_ERROR, &r), HTTPC_TOO_LARGE);
    httpc_reply_free(&r);
}

/* Every buffer that is replaced or freed is wiped first. */
static void test_wipes(void **state)
{
    struct httpc_reply r = {.max = 1 << 20};
    char chunk[3000];
    (void)state;

    memset(chunk, 'x', sizeof(chunk));
    httpc_reply_free(&r); /* nothing to wipe */
    assert_int_equal(r.wipes, 0);
    assert_int_equal(httpc_write_cb(chunk, 1, sizeof(chunk), &r),
                     sizeof(chunk));
    assert_int_equal(r.wipes, 0);
    /* 6000 bytes do not fit in the first 4096: a new buffer, the old one
     * wiped, the content kept.
     */
    assert_int_equal(httpc_write_cb(chunk, 1, sizeof(chunk), &r),
                     sizeof(chunk));
    assert_int_equal(r.wipes, 1);
    assert_int_equal(r.len, 2 * sizeof(chunk));
    assert_int_equal(strspn(r.buf, "x"), 2 * sizeof(chunk));
    httpc_reply_free(&r);
    assert_int_equal(r.wipes, 2);
    assert_null(r.buf);
    assert_int_equal(r.len, 0);
}

/* ---- URLs, headers, escaping --------------------------------------------- */

static void test_url_check(void **state)
{
    char scheme[16] = "";
    (void)state;

    assert_int_equal(httpc_url_check("https://fm:8443/apis", NULL, 0),
                     HTTPC_URL_OK);
    assert_int_equal(httpc_url_check(NULL, NULL, 0), HTTPC_URL_EMPTY);
    assert_int_equal(httpc_url_check("", NULL, 0), HTTPC_URL_EMPTY);
    assert_int_equal(httpc_url_check("http://a b", NULL, 0), HTTPC_URL_CHARS);
    assert_int_equal(httpc_url_check("http://\x7f", NULL, 0), HTTPC_URL_CHARS);
    assert_int_equal(httpc_url_check("ftp://fm", scheme, sizeof(scheme)),
                     HTTPC_URL_SCHEME);
    assert_string_equal(scheme, "ftp");
    assert_int_equal(httpc_url_check("https://u:pw@fm", NULL, 0),
                     HTTPC_URL_USER);
    assert_int_equal(httpc_url_check("https://fm/?q=1", NULL, 0),
                     HTTPC_URL_QUERY);
    assert_int_equal(httpc_url_check("https://fm/#f", NULL, 0),
                     HTTPC_URL_QUERY);
    assert_int_equal(httpc_url_check("::", NULL, 0), HTTPC_URL_SYNTAX);
}

static void test_headers(void **state)
{
    struct curl_slist *l = NULL;
    (void)state;

    assert_int_equal(
        httpc_headers_json(&l, "application/json", "Authorization: Bearer t"),
        0);
    assert_string_equal(l->data, "Accept: application/json");
    assert_string_equal(l->next->data, "Expect:");
    assert_string_equal(l->next->next->data, "Content-Type: application/json");
    assert_string_equal(l->next->next->next->data, "Authorization: Bearer t");
    assert_null(l->next->next->next->next);
    httpc_headers_free(l);
    httpc_headers_free(NULL);

    assert_true(httpc_token_printable("vnib1.abc-_~"));
    assert_false(httpc_token_printable(NULL));
    assert_false(httpc_token_printable(""));
    assert_false(httpc_token_printable("a b"));
    assert_false(httpc_token_printable("a\nb"));

    char *e = httpc_escape("..");
    assert_string_equal(e, "%2E%2E");
    httpc_secret_free(e);
    errno = 0;
    assert_null(httpc_escape(NULL));
    assert_int_equal(errno, EINVAL);
    httpc_secret_free(NULL);
}

/* ---- transfers ----------------------------------------------------------- */

/* One GET of url with a fresh handle; returns what curl_easy_perform did
 * and the reply in r (the caller frees it).
 */
static CURLcode get(const char *url,
                    const struct httpc_tls *tls,
                    long timeout_ms,
                    size_t max,
                    struct httpc_reply *r)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    struct httpc_request rq = {.method = "GET", .url = url};
    CURL *h = httpc_handle_new("test/1", tls, errbuf);
    CURLcode res;

    assert_non_null(h);
    *r = (struct httpc_reply){.max = max};
    assert_int_equal(httpc_request_setup(h, &rq, NULL, timeout_ms, 1000, r),
                     CURLE_OK);
    res = curl_easy_perform(h);
    httpc_request_reset(h);
    curl_easy_cleanup(h);
    return res;
}

static void test_cap_on_the_wire(void **state)
{
    char url[64];
    struct httpc_reply r;
    (void)state;

    struct fakehttp *s = fakehttp_new(1);
    s->big_body = 1 << 20;
    fakehttp_add(s, "GET /big ", NULL, 1);
    fakehttp_run(s);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/big", s->port);
    CURLcode res = get(url, NULL, 10000, 4096, &r);
    assert_int_equal(httpc_fault_of(res, &r), HTTPC_TOO_LARGE);
    assert_true(r.len <= 4096);
    httpc_reply_free(&r);
    fakehttp_join(s);
    fakehttp_free(s);
}

static void test_timeout(void **state)
{
    char url[64];
    struct httpc_reply r;
    int port;
    (void)state;

    /* Listening, never accepting: the request waits for an answer. */
    int fd = fakehttp_listen_any(&port);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/slow", port);
    CURLcode res = get(url, NULL, 200, 4096, &r);
    assert_int_equal(res, CURLE_OPERATION_TIMEDOUT);
    assert_int_equal(httpc_fault_of(res, &r), HTTPC_TIMEOUT);
    httpc_reply_free(&r);
    close(fd);
}

static void test_unreachable(void **state)
{
    char url[64];
    struct httpc_reply r;
    int port;
    (void)state;

    close(fakehttp_listen_any(&port));
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
    CURLcode res = get(url, NULL, 2000, 4096, &r);
    assert_int_equal(httpc_fault_of(res, &r), HTTPC_UNREACHABLE);
    httpc_reply_free(&r);
}

/* ---- TLS ----------------------------------------------------------------- */

/* A TLS server with a self-signed certificate for 127.0.0.1 that answers
 * one request per connection, for n connections.
 */
struct tls_server {
    int fd;
    int port;
    int n;
    SSL_CTX *ctx;
    pthread_t thread;
    int handshakes; /* completed */
};

static void *tls_main(void *arg)
{
    static const char ok[] =
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
        "Connection: close\r\n\r\n{}";
    struct tls_server *t = arg;

    for (int i = 0; i < t->n; i++) {
        char buf[4096];
        int conn = accept(t->fd, NULL, NULL);
        if (conn < 0)
            break;
        SSL *ssl = SSL_new(t->ctx);
        SSL_set_fd(ssl, conn);
        if (SSL_accept(ssl) == 1) {
            t->handshakes++;
            if (SSL_read(ssl, buf, sizeof(buf)) > 0)
                SSL_write(ssl, ok, (int)strlen(ok));
            SSL_shutdown(ssl);
        }
        SSL_free(ssl);
        close(conn);
    }
    return NULL;
}

static SSL_CTX *self_signed_ctx(void)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

    assert_non_null(key);
    assert_non_null(x);
    assert_non_null(ctx);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name,
                               "CN",
                               MBSTRING_ASC,
                               (const unsigned char *)"127.0.0.1",
                               -1,
                               -1,
                               0);
    X509_set_issuer_name(x, name);
    assert_true(X509_sign(x, key, EVP_sha256()) > 0);
    assert_int_equal(SSL_CTX_use_certificate(ctx, x), 1);
    assert_int_equal(SSL_CTX_use_PrivateKey(ctx, key), 1);
    X509_free(x);
    EVP_PKEY_free(key);
    return ctx;
}

static void tls_start(struct tls_server *t, int n)
{
    *t = (struct tls_server){.n = n, .ctx = self_signed_ctx()};
    t->fd = fakehttp_listen_any(&t->port);
    assert_int_equal(pthread_create(&t->thread, NULL, tls_main, t), 0);
}

static void tls_stop(struct tls_server *t)
{
    assert_int_equal(pthread_join(t->thread, NULL), 0);
    close(t->fd);
    SSL_CTX_free(t->ctx);
}

/* Neither no TLS settings nor a zero-initialised struct (with or without a
 * CA file) accepts a certificate that does not verify; only
 * insecure_skip_verify does.
 */
static void test_tls_verify_by_default(void **state)
{
    struct httpc_tls zero = {0};
    struct httpc_tls ca = {.ca_file = "/etc/ssl/certs/ca-certificates.crt"};
    struct httpc_tls insecure = {.insecure_skip_verify = true};
    const struct httpc_tls *refused[] = {NULL, &zero, &ca};
    struct tls_server t;
    struct httpc_reply r;
    char url[64];
    (void)state;

    tls_start(&t, 4);
    snprintf(url, sizeof(url), "https://127.0.0.1:%d/", t.port);
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        CURLcode res = get(url, refused[i], 5000, 4096, &r);
        if (httpc_fault_of(res, &r) != HTTPC_TLS_VERIFY)
            fail_msg("set-up %zu: %s, not a verification failure",
                     i,
                     curl_easy_strerror(res));
        httpc_reply_free(&r);
    }
    assert_int_equal(get(url, &insecure, 5000, 4096, &r), CURLE_OK);
    assert_string_equal(r.buf, "{}");
    httpc_reply_free(&r);
    tls_stop(&t);
    assert_int_equal(t.handshakes, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_wipes),
        cmocka_unit_test(test_url_check),
        cmocka_unit_test(test_headers),
        cmocka_unit_test(test_cap_on_the_wire),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_tls_verify_by_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for the NIC backends (agent/nic.c, nic_sim.c, nic_cxi.c).
 *
 * The simulated NIC must answer as libcxi does: the same errno for the
 * same mistake, the reservation arithmetic with its avail figures, the
 * hidden pool limits, and the injected faults, which count down on disk so
 * that they span processes.  Several processes allocating on one NIC at
 * once must all succeed with distinct ids.  The libcxi backend is only
 * checked for refusing, without crashing, a library it cannot use.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "agent/nic.h"
#include "agent/nic_sim.h"

#define NNICS 4

struct fixture {
    char dir[64];
    struct nic_backend *nb;
    struct nic_info *devs;
    int ndevs;
};

static void rm_dir(const char *dir)
{
    char path[PATH_MAX];
    struct dirent *de;
    DIR *d = opendir(dir);

    if (!d)
        return;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static void make_dir(char *buf, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, size, "%s/test_nic_sim.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    assert_non_null(mkdtemp(buf));
}

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    vnib_error_t e = {0};

    assert_non_null(fx);
    make_dir(fx->dir, sizeof(fx->dir));
    assert_int_equal(nic_sim_init(fx->dir, NNICS, &e), 0);
    assert_non_null(fx->nb = nic_create("sim", fx->dir, &e));
    assert_int_equal(nic_list(fx->nb, &fx->devs, &fx->ndevs, &e), 0);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;

    free(fx->devs);
    nic_destroy(fx->nb);
    rm_dir(fx->dir);
    free(fx);
    return 0;
}

static void write_text(const char *dir, const char *file, const char *text)
{
    char path[PATH_MAX];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    assert_non_null(f = fopen(path, "w"));
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static json_t *load_nic(const char *dir, int n)
{
    char path[PATH_MAX];
    json_t *root;

    snprintf(path, sizeof(path), "%s/cxi%d.json", dir, n);
    assert_non_null(root = json_load_file(path, 0, NULL));
    return root;
}

static void save_nic(const char *dir, int n, json_t *root)
{
    char path[PATH_MAX];

    snprintf(path, sizeof(path), "%s/cxi%d.json", dir, n);
    assert_int_equal(json_dump_file(root, path, JSON_INDENT(2)), 0);
    json_decref(root);
}

/* Set faults.key (steals val). */
static void set_fault(const char *dir, int n, const char *key, json_t *val)
{
    json_t *root = load_nic(dir, n);
    assert_int_equal(
        json_object_set_new(json_object_get(root, "faults"), key, val), 0);
    save_nic(dir, n, root);
}

/* Set key of service svc_id (steals val). */
static void set_svc(
    const char *dir, int n, unsigned svc_id, const char *key, json_t *val)
{
    json_t *root = load_nic(dir, n);
    json_t *svc;
    size_t i;
    bool done = false;

    json_array_foreach (json_object_get(root, "services"), i, svc) {
        if (json_integer_value(json_object_get(svc, "svc_id")) == svc_id) {
            assert_int_equal(json_object_set(svc, key, val), 0);
            done = true;
        }
    }
    json_decref(val);
    assert_true(done);
    save_nic(dir, n, root);
}

static json_int_t get_fault(const char *dir, int n, const char *key)
{
    json_t *root = load_nic(dir, n);
    json_int_t v = json_integer_value(
        json_object_get(json_object_get(root, "faults"), key));
    json_decref(root);
    return v;
}

/* A job's request: one VNI, one UID, LL+BE, no resource limits. */
static void req_init(struct nic_svc *req, uint16_t vni)
{
    memset(req, 0, sizeof(*req));
    req->restricted_members = true;
    req->has_uid = true;
    req->uid = 1000;
    req->restricted_vnis = true;
    req->nvnis = 1;
    req->vnis[0] = vni;
    req->restricted_tcs = true;
    req->tcs_mask = 0xa;
}

static const struct nic_svc *find_svc(const struct nic_svc *svcs,
                                      int n,
                                      unsigned id)
{
    for (int i = 0; i < n; i++) {
        if (svcs[i].svc_id == id)
            return &svcs[i];
    }
    return NULL;
}

static void test_init_list(void **state)
{
    struct fixture *fx = *state;
    struct nic_info *devs = NULL;
    struct nic_backend *nb;
    vnib_error_t e = {0};
    char dir[64];
    int n = -1;

    assert_string_equal(nic_kind(fx->nb), "sim");
    assert_int_equal(fx->ndevs, NNICS);
    for (int i = 0; i < NNICS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "cxi%d", i);
        assert_string_equal(fx->devs[i].name, name);
        assert_int_equal(fx->devs[i].dev_id, i);
        assert_int_equal(fx->devs[i].cap[NIC_RSRC_PTE], 2048);
        assert_int_equal(fx->devs[i].cap[NIC_RSRC_LE], 16384);
        assert_int_equal(fx->devs[i].cap[NIC_RSRC_AC], 1022);
    }
    assert_string_equal(nic_rsrc_name(NIC_RSRC_TLE), "tle");
    assert_string_equal(nic_rsrc_name(NIC_RSRC_COUNT), "(invalid)");

    /* A second init refuses, whole. */
    assert_int_equal(nic_sim_init(fx->dir, NNICS + 2, &e), -1);
    assert_int_equal(errno, EEXIST);
    assert_non_null(strstr(e.text, "cxi0.json: already exists"));
    assert_int_equal(nic_list(fx->nb, &devs, &n, NULL), 0);
    assert_int_equal(n, NNICS);
    free(devs);

    /* Sorted by dev_id, not by name: cxi10 after cxi9. */
    make_dir(dir, sizeof(dir));
    assert_int_equal(nic_sim_init(dir, 12, &e), 0);
    assert_non_null(nb = nic_create("sim", dir, &e));
    assert_int_equal(nic_list(nb, &devs, &n, &e), 0);
    assert_int_equal(n, 12);
    for (int i = 0; i < n; i++)
        assert_int_equal(devs[i].dev_id, i);
    free(devs);
    nic_destroy(nb);
    rm_dir(dir);

    /* A directory without NICs lists none; a missing one cannot open. */
    make_dir(dir, sizeof(dir));
    assert_non_null(nb = nic_create("sim", dir, &e));
    assert_int_equal(nic_list(nb, &devs, &n, &e), 0);
    assert_int_equal(n, 0);
    free(devs);
    nic_destroy(nb);
    rm_dir(dir);
    assert_null(nic_create("sim", dir, &e));
    assert_int_equal(errno, ENODEV);
}

static void test_alloc_list_destroy(void **state)
{
    struct fixture *fx = *state;
    const struct nic_info *dev = &fx->devs[1];
    struct nic_svc req, *svcs = NULL;
    const struct nic_svc *s;
    vnib_error_t e = {0};
    unsigned id = 0, id2 = 0;
    int n = 0;

    /* The new file: the default service and one system service. */
    assert_int_equal(nic_svc_list(fx->nb, dev, &svcs, &n, &e), 0);
    assert_int_equal(n, 2);
    assert_int_equal(svcs[0].svc_id, 1);
    assert_false(svcs[0].enabled);
    assert_int_equal(svcs[0].nvnis, 2);
    assert_int_equal(svcs[0].vnis[1], 10);
    assert_true(svcs[1].is_system);
    assert_int_equal(svcs[1].use[NIC_RSRC_LE], 1024);
    free(svcs);

    req_init(&req, 100);
    req.nvnis = 2;
    req.vnis[1] = 101;
    req.resource_limits = true;
    for (int r = 0; r < NIC_RSRC_COUNT; r++)
        req.max[r] = 16;
    req.res[NIC_RSRC_TXQ] = 4;
    req.res[NIC_RSRC_TLE] = 1;
    assert_int_equal(nic_svc_alloc(fx->nb, dev, &req, &id, NULL, &e), 0);
    assert_int_equal(id, 3);

    assert_int_equal(nic_svc_list(fx->nb, dev, &svcs, &n, &e), 0);
    assert_int_equal(n, 3);
    assert_non_null(s = find_svc(svcs, n, id));
    assert_false(s->is_system);
    assert_true(s->enabled);
    assert_true(s->restricted_members);
    assert_true(s->has_uid);
    assert_int_equal(s->uid, 1000);
    assert_true(s->restricted_vnis);
    assert_int_equal(s->nvnis, 2);
    assert_int_equal(s->vnis[0], 100);
    assert_int_equal(s->vnis[1], 101);
    assert_true(s->restricted_tcs);
    assert_int_equal(s->tcs_mask, 0xa);
    assert_true(s->resource_limits);
    assert_int_equal(s->res[NIC_RSRC_TXQ], 4);
    assert_int_equal(s->max[NIC_RSRC_TXQ], 16);
    /* The driver raises a TLE reservation to 8 and pins max to it. */
    assert_int_equal(s->res[NIC_RSRC_TLE], 8);
    assert_int_equal(s->max[NIC_RSRC_TLE], 8);
    assert_int_equal(s->lnis, 0);
    free(svcs);

    /* Other NICs are untouched. */
    assert_int_equal(nic_svc_list(fx->nb, &fx->devs[0], &svcs, &n, &e), 0);
    assert_int_equal(n, 2);
    free(svcs);

    assert_int_equal(nic_svc_destroy(fx->nb, dev, id, &e), 0);
    assert_int_equal(nic_svc_list(fx->nb, dev, &svcs, &n, &e), 0);
    assert_int_equal(n, 2);
    assert_null(find_svc(svcs, n, id));
    free(svcs);

    /* Refusals: gone, the default service, a system service. */
    assert_int_equal(nic_svc_destroy(fx->nb, dev, id, &e), -1);
    assert_int_equal(errno, EINVAL);
    assert_string_equal(e.text, "sim: cxi1: no service 3");
    assert_int_equal(nic_svc_destroy(fx->nb, dev, 1, &e), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(nic_svc_destroy(fx->nb, dev, 2, &e), -1);
    assert_int_equal(errno, EINVAL);

    /* Ids are not reused, and the VNIs are free again. */
    assert_int_equal(nic_svc_alloc(fx->nb, dev, &req, &id2, NULL, &e), 0);
    assert_int_equal(id2, 4);

    /* A VNI-range service is not enabled at alloc. */
    memset(&req, 0, sizeof(req));
    assert_int_equal(nic_svc_alloc(fx->nb, dev, &req, &id, NULL, &e), 0);
    assert_int_equal(nic_svc_list(fx->nb, dev, &svcs, &n, &e), 0);
    assert_non_null(s = find_svc(svcs, n, id));
    assert_false(s->enabled);
    assert_false(s->restricted_vnis);
    assert_false(s->has_uid);
    free(svcs);
}

static void expect_einval(struct fixture *fx,
                          const struct nic_svc *req,
                          const char *text)
{
    vnib_error_t e = {0};
    unsigned id = 0;

    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[0], req, &id, NULL, &e),
                     -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(id, 0);
    if (!strstr(e.text, text))
        fail_msg("'%s' does not contain '%s'", e.text, text);
}

static void test_einval(void **state)
{
    struct fixture *fx = *state;
    struct nic_svc req, *svcs = NULL;
    int n = 0;

    req_init(&req, 100);
    req.nvnis = 5;
    expect_einval(fx, &req, "sim: cxi0: 5 VNIs");

    req_init(&req, 0);
    expect_einval(fx, &req, "VNI 0 is not valid");

    req_init(&req, 100);
    req.nvnis = 0;
    expect_einval(fx, &req, "restricted_vnis without VNIs");

    req_init(&req, 100);
    req.nvnis = 2;
    req.vnis[1] = 100;
    expect_einval(fx, &req, "VNI 100 listed twice");

    req_init(&req, 100);
    req.resource_limits = true;
    req.max[NIC_RSRC_PTE] = 2049;
    expect_einval(fx, &req, "pte max 2049 exceeds the device's 2048");

    req_init(&req, 100);
    req.resource_limits = true;
    req.max[NIC_RSRC_EQ] = 4;
    req.res[NIC_RSRC_EQ] = 5;
    expect_einval(fx, &req, "eq reservation 5 exceeds its max 4");

    req_init(&req, 100);
    req.tcs_mask = 0x40;
    expect_einval(fx, &req, "traffic class mask 0x40");

    /* Nothing was created. */
    assert_int_equal(nic_svc_list(fx->nb, &fx->devs[0], &svcs, &n, NULL), 0);
    assert_int_equal(n, 2);
    free(svcs);
}

static void test_eexist(void **state)
{
    struct fixture *fx = *state;
    struct nic_svc req;
    vnib_error_t e = {0};
    unsigned id = 0, id2 = 0;

    /* VNIs 1 and 10 belong to the default service (SHS 13-14). */
    req_init(&req, 10);
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[0], &req, &id, NULL, &e),
                     -1);
    assert_int_equal(errno, EEXIST);
    assert_string_equal(e.text,
                        "sim: cxi0: VNI 10 is already used by service 1");

    req_init(&req, 200);
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[0], &req, &id, NULL, &e),
                     0);
    req.nvnis = 2;
    req.vnis[0] = 201;
    req.vnis[1] = 200;
    req.uid = 1001;
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[0], &req, &id2, NULL, &e),
                     -1);
    assert_int_equal(errno, EEXIST);
    assert_non_null(strstr(e.text, "VNI 200 is already used by service 3"));

    /* Per NIC: the same VNI on another NIC is fine. */
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[1], &req, &id2, NULL, &e),
                     0);

    /* Free again once the first service is gone. */
    assert_int_equal(nic_svc_destroy(fx->nb, &fx->devs[0], id, &e), 0);
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[0], &req, &id2, NULL, &e),
                     0);
}

static void test_enospc(void **state)
{
    struct fixture *fx = *state;
    struct nic_fail fail;
    struct nic_svc req;
    vnib_error_t e = {0};
    unsigned id = 0;

    /* A small NIC: the system service uses more PTEs and ACs than it
     * reserved, so it holds its use; the default service holds 512 TLEs.
     */
    write_text(fx->dir,
               "cxi3.json",
               "{\"capacity\": {\"pte\": 100, \"txq\": 50, \"tgq\": 40,"
               " \"eq\": 30, \"ct\": 20, \"le\": 1000, \"tle\": 600,"
               " \"ac\": 10},"
               " \"services\": ["
               "  {\"svc_id\": 1, \"enabled\": false, \"vnis\": [1, 10],"
               "   \"res\": {\"tle\": 512}},"
               "  {\"svc_id\": 2, \"system\": true, \"resource_limits\": true,"
               "   \"res\": {\"pte\": 10, \"txq\": 5},"
               "   \"use\": {\"pte\": 30, \"txq\": 2, \"ac\": 4}}]}");
    req_init(&req, 300);
    req.resource_limits = true;
    req.max[NIC_RSRC_PTE] = 100;
    req.res[NIC_RSRC_PTE] = 80;
    req.max[NIC_RSRC_TLE] = 8;
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[3], &req, &id, &fail, &e),
                     -1);
    assert_int_equal(errno, ENOSPC);
    assert_string_equal(e.text,
                        "sim: cxi3: cannot reserve 80 pte: 70 available");
    const unsigned avail[NIC_RSRC_COUNT] = {[NIC_RSRC_PTE] = 70,
                                            [NIC_RSRC_TXQ] = 45,
                                            [NIC_RSRC_TGQ] = 40,
                                            [NIC_RSRC_EQ] = 30,
                                            [NIC_RSRC_CT] = 20,
                                            [NIC_RSRC_LE] = 1000,
                                            [NIC_RSRC_TLE] = 88,
                                            [NIC_RSRC_AC] = 6};
    for (int r = 0; r < NIC_RSRC_COUNT; r++)
        assert_int_equal(fail.avail[r], avail[r]);
    assert_false(fail.no_le_pools);
    assert_false(fail.no_tle_pools);

    /* Exactly what is available fits; then nothing is left. */
    req.res[NIC_RSRC_PTE] = 70;
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[3], &req, &id, &fail, &e),
                     0);
    req_init(&req, 301);
    req.resource_limits = true;
    req.max[NIC_RSRC_PTE] = 1;
    req.res[NIC_RSRC_PTE] = 1;
    req.max[NIC_RSRC_TLE] = 8;
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[3], &req, &id, &fail, &e),
                     -1);
    assert_int_equal(errno, ENOSPC);
    assert_int_equal(fail.avail[NIC_RSRC_PTE], 0);
    assert_int_equal(fail.avail[NIC_RSRC_TLE], 80);
}

static void test_tle_pools(void **state)
{
    struct fixture *fx = *state;
    struct nic_fail fail;
    struct nic_svc req;
    vnib_error_t e = {0};
    unsigned id = 0;

    /* Every service with resource limits takes a TLE pool: 3 per NIC. */
    for (int i = 0; i < 3; i++) {
        req_init(&req, (uint16_t)(400 + i));
        req.resource_limits = true;
        req.max[NIC_RSRC_TXQ] = 2;
        req.res[NIC_RSRC_TXQ] = 2;
        assert_int_equal(
            nic_svc_alloc(fx->nb, &fx->devs[2], &req, &id, &fail, &e), 0);
    }
    req_init(&req, 403);
    req.resource_limits = true;
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[2], &req, &id, &fail, &e),
                     -1);
    assert_int_equal(errno, ENOSPC);
    assert_true(fail.no_tle_pools);
    assert_false(fail.no_le_pools);
    assert_int_equal(fail.avail[NIC_RSRC_TLE], 2048 - 512 - 3 * 8);
    assert_non_null(strstr(e.text, "no TLE pool left"));

    /* Without limits no pool is needed. */
    req.resource_limits = false;
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[2], &req, &id, &fail, &e),
                     0);
}

static void test_le_pools(void **state)
{
    struct fixture *fx = *state;
    struct nic_fail fail;
    struct nic_svc req;
    vnib_error_t e = {0};
    json_t *root = load_nic(fx->dir, 0);
    json_t *svcs = json_object_get(root, "services");
    unsigned id = 0;

    /* 15 user services hold LE reservations (and, say, no TLEs). */
    for (int i = 0; i < 15; i++) {
        assert_int_equal(json_array_append_new(svcs,
                                               json_pack("{s:i, s:b, s:{s:i}}",
                                                         "svc_id",
                                                         10 + i,
                                                         "resource_limits",
                                                         1,
                                                         "res",
                                                         "le",
                                                         16)),
                         0);
    }
    save_nic(fx->dir, 0, root);
    req_init(&req, 500);
    req.resource_limits = true;
    req.max[NIC_RSRC_LE] = 16;
    req.res[NIC_RSRC_LE] = 16;
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[0], &req, &id, &fail, &e),
                     -1);
    assert_int_equal(errno, ENOSPC);
    assert_true(fail.no_le_pools);
    assert_int_equal(fail.avail[NIC_RSRC_LE], 16384 - 1024 - 15 * 16);
    /* New ids follow the highest in the file. */
    req.res[NIC_RSRC_LE] = 0;
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[0], &req, &id, &fail, &e),
                     0);
    assert_int_equal(id, 25);
}

static void test_destroy_ebusy(void **state)
{
    struct fixture *fx = *state;
    struct nic_backend *other;
    struct nic_svc req;
    vnib_error_t e = {0};
    unsigned id = 0;

    req_init(&req, 600);
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[0], &req, &id, NULL, &e),
                     0);
    set_fault(fx->dir, 0, "destroy_ebusy", json_integer(2));
    assert_int_equal(nic_svc_destroy(fx->nb, &fx->devs[0], id, &e), -1);
    assert_int_equal(errno, EBUSY);
    assert_int_equal(get_fault(fx->dir, 0, "destroy_ebusy"), 1);
    /* The count is on disk: another handle sees what is left. */
    assert_non_null(other = nic_create("sim", fx->dir, &e));
    assert_int_equal(nic_svc_destroy(other, &fx->devs[0], id, &e), -1);
    assert_int_equal(errno, EBUSY);
    assert_non_null(strstr(e.text, "busy (injected fault, 0 more)"));
    nic_destroy(other);
    assert_int_equal(nic_svc_destroy(fx->nb, &fx->devs[0], id, &e), 0);
    assert_int_equal(get_fault(fx->dir, 0, "destroy_ebusy"), 0);
}

static void test_lnis_busy(void **state)
{
    struct fixture *fx = *state;
    struct nic_svc req, *svcs = NULL;
    vnib_error_t e = {0};
    unsigned id = 0;
    int n = 0;

    req_init(&req, 700);
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[1], &req, &id, NULL, &e),
                     0);
    set_svc(fx->dir, 1, id, "lnis", json_integer(2));
    assert_int_equal(nic_svc_list(fx->nb, &fx->devs[1], &svcs, &n, &e), 0);
    assert_int_equal(find_svc(svcs, n, id)->lnis, 2);
    free(svcs);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(nic_svc_destroy(fx->nb, &fx->devs[1], id, &e), -1);
        assert_int_equal(errno, EBUSY);
        assert_string_equal(e.text, "sim: cxi1: service 3 has 2 LNIs attached");
    }
    set_svc(fx->dir, 1, id, "lnis", json_integer(0));
    assert_int_equal(nic_svc_destroy(fx->nb, &fx->devs[1], id, &e), 0);
}

static void test_alloc_error(void **state)
{
    struct fixture *fx = *state;
    struct nic_svc req;
    struct nic_fail fail;
    vnib_error_t e = {0};
    unsigned id = 0;

    req_init(&req, 800);
    set_fault(fx->dir, 2, "alloc_error", json_string("ENOSPC"));
    set_fault(fx->dir, 2, "alloc_error_count", json_integer(2));
    for (int i = 0; i < 2; i++) {
        memset(&fail, 0xff, sizeof(fail));
        assert_int_equal(
            nic_svc_alloc(fx->nb, &fx->devs[2], &req, &id, &fail, &e), -1);
        assert_int_equal(errno, ENOSPC);
        assert_non_null(strstr(e.text, "(injected fault)"));
        /* The real figures: minus the system service and svc 1's TLEs. */
        assert_int_equal(fail.avail[NIC_RSRC_PTE], 2048 - 64);
        assert_int_equal(fail.avail[NIC_RSRC_TLE], 2048 - 512);
        assert_int_equal(fail.avail[NIC_RSRC_AC], 1022 - 16);
        assert_false(fail.no_tle_pools);
        assert_int_equal(get_fault(fx->dir, 2, "alloc_error_count"), 1 - i);
    }
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[2], &req, &id, &fail, &e),
                     0);

    /* A count left out means one failure. */
    set_fault(fx->dir, 2, "alloc_error", json_string("EINVAL"));
    json_t *root = load_nic(fx->dir, 2);
    json_object_del(json_object_get(root, "faults"), "alloc_error_count");
    save_nic(fx->dir, 2, root);
    req_init(&req, 801);
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[2], &req, &id, NULL, &e),
                     -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[2], &req, &id, NULL, &e),
                     0);
}

static void test_open_fail(void **state)
{
    struct fixture *fx = *state;
    struct nic_info *devs = NULL;
    struct nic_svc req, *svcs = NULL;
    vnib_error_t e = {0};
    unsigned id = 0;
    int n = 0;

    set_fault(fx->dir, 2, "open_fail", json_true());
    assert_int_equal(nic_list(fx->nb, &devs, &n, &e), -1);
    assert_int_equal(errno, ENODEV);
    assert_string_equal(e.text,
                        "sim: cxi2: cannot open device (injected fault)");
    assert_null(devs);
    assert_int_equal(n, 0);
    assert_int_equal(nic_svc_list(fx->nb, &fx->devs[2], &svcs, &n, &e), -1);
    assert_int_equal(errno, ENODEV);
    req_init(&req, 900);
    assert_int_equal(nic_svc_alloc(fx->nb, &fx->devs[2], &req, &id, NULL, &e),
                     -1);
    assert_int_equal(errno, ENODEV);
    assert_int_equal(nic_svc_list(fx->nb, &fx->devs[1], &svcs, &n, &e), 0);
    free(svcs);

    /* A NIC without a file cannot be opened either. */
    struct nic_info gone = {.name = "cxi9", .dev_id = 9};
    assert_int_equal(nic_svc_list(fx->nb, &gone, &svcs, &n, &e), -1);
    assert_int_equal(errno, ENODEV);
    assert_non_null(strstr(e.text, "sim: cxi9: no such NIC"));
}

static void expect_malformed(struct fixture *fx,
                             const char *text,
                             const char *msg)
{
    struct nic_info *devs = NULL;
    vnib_error_t e = {0};
    int n = 0;

    write_text(fx->dir, "cxi1.json", text);
    assert_int_equal(nic_list(fx->nb, &devs, &n, &e), -1);
    assert_int_equal(errno, ENODEV);
    if (!strstr(e.text, "/cxi1.json: ") || !strstr(e.text, msg))
        fail_msg("'%s' does not name the file and '%s'", e.text, msg);
}

static void test_malformed(void **state)
{
    struct fixture *fx = *state;
    struct nic_info *devs = NULL;
    struct nic_svc *svcs = NULL;
    vnib_error_t e = {0};
    int n = 0;

    expect_malformed(fx, "{ not json", "line 1");
    expect_malformed(fx, "", "");
    expect_malformed(fx, "[1, 2]", "expected an object");
    expect_malformed(fx,
                     "{\"capacity\": {\"pte\": \"many\"}}",
                     "capacity.pte: expected an integer 0..65535");
    expect_malformed(fx, "{\"capacity\": {\"pte\": 70000}}", "capacity.pte");
    expect_malformed(fx, "{\"faultz\": {}}", "unknown key 'faultz'");
    expect_malformed(
        fx, "{\"services\": [{\"vnis\": [5]}]}", "services[0].svc_id: missing");
    expect_malformed(fx,
                     "{\"services\": [{\"svc_id\": 4, \"vnis\": [1,2,3,4,5]}]}",
                     "services[0].vnis");
    expect_malformed(fx,
                     "{\"services\": [{\"svc_id\": 4}, {\"svc_id\": 4}]}",
                     "service id 4 appears twice");
    expect_malformed(
        fx, "{\"faults\": {\"alloc_error\": \"EFOO\"}}", "faults.alloc_error");
    expect_malformed(fx, "{\"name\": \"cxi7\"}", "name: does not match");
    expect_malformed(fx, "{\"a\": 1, \"a\": 2}", "duplicate");

    /* The shortest file is a NIC with defaults and the default service. */
    write_text(fx->dir, "cxi1.json", "{}");
    assert_int_equal(nic_list(fx->nb, &devs, &n, &e), 0);
    assert_int_equal(n, NNICS);
    assert_int_equal(devs[1].cap[NIC_RSRC_TGQ], 512);
    free(devs);
    assert_int_equal(nic_svc_list(fx->nb, &fx->devs[1], &svcs, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_int_equal(svcs[0].svc_id, 1);
    assert_int_equal(svcs[0].res[NIC_RSRC_TLE], 512);
    free(svcs);
}

#define NCHILDREN 4
#define PER_CHILD 8

static void test_concurrent(void **state)
{
    struct fixture *fx = *state;
    struct nic_svc *svcs = NULL;
    pid_t pids[NCHILDREN];
    vnib_error_t e = {0};
    int n = 0;

    for (int c = 0; c < NCHILDREN; c++) {
        pids[c] = fork();
        assert_true(pids[c] >= 0);
        if (pids[c] == 0) {
            /* Each child opens its own backend, as separate agents do. */
            struct nic_backend *nb = nic_create("sim", fx->dir, NULL);
            int bad = !nb;
            for (int i = 0; nb && i < PER_CHILD; i++) {
                struct nic_svc req;
                unsigned id = 0;
                req_init(&req, (uint16_t)(1000 + c * 100 + i));
                req.uid = (uid_t)(2000 + c);
                if (nic_svc_alloc(nb, &fx->devs[0], &req, &id, NULL, NULL) < 0
                    || id < 3)
                    bad = 1;
            }
            nic_destroy(nb);
            _exit(bad);
        }
    }
    for (int c = 0; c < NCHILDREN; c++) {
        int status = 0;
        assert_int_equal(waitpid(pids[c], &status, 0), pids[c]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    assert_int_equal(nic_svc_list(fx->nb, &fx->devs[0], &svcs, &n, &e), 0);
    assert_int_equal(n, 2 + NCHILDREN * PER_CHILD);
    for (int i = 1; i < n; i++)
        assert_true(svcs[i].svc_id > svcs[i - 1].svc_id);
    assert_int_equal(svcs[n - 1].svc_id, 2 + NCHILDREN * PER_CHILD);
    for (int c = 0; c < NCHILDREN; c++) {
        for (int i = 0; i < PER_CHILD; i++) {
            int found = 0;
            for (int s = 0; s < n; s++)
                found += svcs[s].nvnis == 1
                         && svcs[s].vnis[0] == 1000 + c * 100 + i
                         && svcs[s].uid == (uid_t)(2000 + c);
            assert_int_equal(found, 1);
        }
    }
    free(svcs);
}

static void test_backends(void **state)
{
    vnib_error_t e = {0};
    (void)state;

    assert_null(nic_create("libcxi", "/nonexistent/libcxi.so.1", &e));
    assert_int_equal(errno, ENODEV);
    assert_memory_equal(e.text, "libcxi:", 7);
    assert_non_null(strstr(e.text, "cannot load /nonexistent/libcxi.so.1"));

    /* A library that loads but is not libcxi. */
    assert_null(nic_create("libcxi", "libc.so.6", &e));
    assert_int_equal(errno, ENODEV);
    assert_string_equal(e.text,
                        "libcxi: symbol cxil_get_device_list not found");

    assert_null(nic_create("verbs", NULL, &e));
    assert_int_equal(errno, EINVAL);
    assert_string_equal(e.text,
                        "unknown NIC backend 'verbs' (use libcxi or sim)");
    assert_null(nic_create(NULL, NULL, &e));
    assert_int_equal(errno, EINVAL);
    assert_null(nic_create("sim", NULL, &e));
    assert_int_equal(errno, EINVAL);
    assert_int_equal(nic_sim_init("/nonexistent/x/y", 1, &e), -1);
    assert_int_equal(errno, ENOENT);
    nic_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_init_list, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_alloc_list_destroy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_einval, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eexist, setup, teardown),
        cmocka_unit_test_setup_teardown(test_enospc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tle_pools, setup, teardown),
        cmocka_unit_test_setup_teardown(test_le_pools, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_ebusy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lnis_busy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alloc_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_fail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent, setup, teardown),
        cmocka_unit_test(test_backends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

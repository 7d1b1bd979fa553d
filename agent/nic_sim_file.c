/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The simulated NICs' files (see nic_sim_file.h): reading, checking,
 * writing and locking them.
 *
 * The file DIR/cxiN.json, written by nic_sim_init and kept readable:
 *
 *   {"name": "cxi0", "dev_id": 0,
 *    "capacity": {"pte": 2048, "txq": 1024, "tgq": 512, "eq": 2047,
 *                 "ct": 2047, "le": 16384, "tle": 2048, "ac": 1022},
 *    "next_svc_id": 3,
 *    "services": [
 *      {"svc_id": 1, "system": false, "enabled": false,
 *       "restricted_members": false, "uid": 1000 (only when a member),
 *       "restricted_vnis": true, "vnis": [1, 10],
 *       "restricted_tcs": false, "tcs": 15,
 *       "resource_limits": false, "lnis": 0,
 *       "max": {...}, "res": {...}, "use": {...}}, ...],
 *    "faults": {"destroy_ebusy": 0, "alloc_error": null,
 *               "alloc_error_count": 0, "open_fail": false,
 *               "stop_after_alloc": 0}}
 *
 * Resource objects have the keys of nic_rsrc_name().  Every key may be
 * left out so that tests can write short files: name and dev_id follow the
 * file name, capacity keys default to the Cassini maxima, services to the
 * default service alone, next_svc_id to one past the highest id, a
 * service's flags to false except "enabled" (true) and "restricted_vnis"
 * (true when "vnis" is not empty), tcs to 15, max to the capacity, res and
 * use to 0, faults to none, and alloc_error_count to 1 when alloc_error
 * is set.  Unknown keys and wrong types are errors naming the file.
 *
 * Several agents may work on one node at once.  Each operation takes
 * flock on DIR/.cxiN.lock (shared to read, exclusive to change), reads the
 * file, and replaces it with rename(2) from DIR/.cxiN.json.tmp.PID.  The
 * lock is on a separate file because rename replaces the data file's
 * inode.  Fault counters are stored the same way, so a count of EBUSY
 * answers spans processes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "agent/nic_sim_file.h"

/* Defaults of a new or short file. */
#define SIM_DEFAULT_TLE_RES 512
#define SIM_MAX_FILES 4096 /* NIC files in one directory */

/* Cassini device maxima, in enum nic_rsrc order. */
static const uint16_t sim_default_cap[NIC_RSRC_COUNT] = {
    2048, 1024, 512, 2047, 2047, 16384, 2048, 1022};

/* What the system service of a new file holds (kfilnd and friends). */
static const uint16_t sim_system_rsrc[NIC_RSRC_COUNT] = {
    64, 64, 32, 64, 64, 1024, 0, 16};

static const uint16_t sim_zero[NIC_RSRC_COUNT];

/* The faults "alloc_error" may name. */
static const struct {
    int errnum;
    const char *name;
} sim_errnames[] = {
    {ENOSPC, "ENOSPC"},
    {EINVAL, "EINVAL"},
    {EPERM, "EPERM"},
};

/* A service's flags in the file: key, field, and the default when the
 * key is left out (-1: true when the service has VNIs). */
static const struct {
    const char *key;
    size_t offset; /* of a bool in struct nic_svc */
    int def;
} sim_svc_flags[] = {
    {"system", offsetof(struct nic_svc, is_system), 0},
    {"enabled", offsetof(struct nic_svc, enabled), 1},
    {"restricted_members", offsetof(struct nic_svc, restricted_members), 0},
    {"restricted_vnis", offsetof(struct nic_svc, restricted_vnis), -1},
    {"restricted_tcs", offsetof(struct nic_svc, restricted_tcs), 0},
    {"resource_limits", offsetof(struct nic_svc, resource_limits), 0},
};

#define SIM_NFLAGS (sizeof(sim_svc_flags) / sizeof(sim_svc_flags[0]))

/* Where a parse is, for messages naming the file. */
struct sim_parse {
    const char *file;
    vnib_error_t *errp;
};

/* A malformed file: the NIC cannot be opened.  where.key names the value
 * ("services[2].max", "faults"); both may be "".
 */
static int parse_fail(const struct sim_parse *p,
                      const char *where,
                      const char *key,
                      const char *what)
{
    char label[80];

    snprintf(label,
             sizeof(label),
             "%s%s%s%s",
             where,
             where[0] && key[0] ? "." : "",
             key,
             where[0] || key[0] ? ": " : "");
    errno = ENODEV;
    return errprintf(p->errp, "sim: %s: %s%s", p->file, label, what);
}

static int check_keys(const struct sim_parse *p,
                      json_t *obj,
                      const char *where,
                      const char *const *allowed)
{
    const char *key;
    json_t *val;
    char what[96];

    json_object_foreach (obj, key, val) {
        size_t i = 0;
        while (allowed[i] && strcmp(allowed[i], key) != 0)
            i++;
        if (!allowed[i]) {
            snprintf(what, sizeof(what), "unknown key '%.40s'", key);
            return parse_fail(p, where, "", what);
        }
    }
    return 0;
}

/* obj.key, an integer 0..max (max -1: true or false, as 1 or 0), or def
 * when it is left out. */
static int get_uint(const struct sim_parse *p,
                    json_t *obj,
                    const char *where,
                    const char *key,
                    json_int_t max,
                    json_int_t def,
                    json_int_t *out)
{
    json_t *v = json_object_get(obj, key);
    char what[64];

    if (!v) {
        *out = def;
        return 0;
    }
    if (max < 0) {
        if (!json_is_boolean(v))
            return parse_fail(p, where, key, "expected true or false");
        *out = json_is_true(v);
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0
        || json_integer_value(v) > max) {
        snprintf(
            what, sizeof(what), "expected an integer 0..%lld", (long long)max);
        /* The -1 is spelt out: clang's analyzer, this deep in calls, no
         * longer follows parse_fail to see that *out is set on 0. */
        parse_fail(p, where, key, what);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

/* A resource object; keys left out take def[r]. */
static int get_rsrc(const struct sim_parse *p,
                    json_t *obj,
                    const char *where,
                    const char *key,
                    const uint16_t def[NIC_RSRC_COUNT],
                    uint16_t out[NIC_RSRC_COUNT])
{
    static const char *const keys[] = {
        "pte", "txq", "tgq", "eq", "ct", "le", "tle", "ac", NULL};
    json_t *v = json_object_get(obj, key);
    char sub[64];

    snprintf(sub, sizeof(sub), "%s%s%s", where, where[0] ? "." : "", key);
    if (v && !json_is_object(v))
        return parse_fail(p, sub, "", "expected an object");
    if (v && check_keys(p, v, sub, keys) < 0)
        return -1;
    for (int r = 0; r < NIC_RSRC_COUNT; r++) {
        json_int_t n;
        if (get_uint(p, v, sub, keys[r], UINT16_MAX, def[r], &n) < 0)
            return -1;
        out[r] = (uint16_t)n;
    }
    return 0;
}

static int parse_vnis(const struct sim_parse *p,
                      json_t *obj,
                      const char *where,
                      struct nic_svc *svc)
{
    json_t *v = json_object_get(obj, "vnis");
    size_t i;
    json_t *vni;

    svc->nvnis = 0;
    if (!v)
        return 0;
    if (!json_is_array(v) || json_array_size(v) > VNIB_SERVICE_VNIS_MAX)
        return parse_fail(p, where, "vnis", "expected an array of 0..4 VNIs");
    json_array_foreach (v, i, vni) {
        if (!json_is_integer(vni) || json_integer_value(vni) < 1
            || json_integer_value(vni) > UINT16_MAX)
            return parse_fail(p, where, "vnis", "a VNI is 1..65535");
        svc->vnis[svc->nvnis++] = (uint16_t)json_integer_value(vni);
    }
    return 0;
}

static int parse_svc(const struct sim_parse *p,
                     json_t *obj,
                     int index,
                     const uint16_t cap[NIC_RSRC_COUNT],
                     struct nic_svc *svc)
{
    static const char *const keys[] = {"svc_id",
                                       "system",
                                       "enabled",
                                       "restricted_members",
                                       "uid",
                                       "restricted_vnis",
                                       "vnis",
                                       "restricted_tcs",
                                       "tcs",
                                       "resource_limits",
                                       "lnis",
                                       "max",
                                       "res",
                                       "use",
                                       NULL};
    char where[32];
    json_int_t n;

    snprintf(where, sizeof(where), "services[%d]", index);
    memset(svc, 0, sizeof(*svc));
    if (!json_is_object(obj))
        return parse_fail(p, where, "", "expected an object");
    if (check_keys(p, obj, where, keys) < 0)
        return -1;
    if (!json_object_get(obj, "svc_id"))
        return parse_fail(p, where, "svc_id", "missing");
    if (get_uint(p, obj, where, "svc_id", INT_MAX, 0, &n) < 0)
        return -1;
    if (n == 0)
        return parse_fail(p, where, "svc_id", "a service id is 1 or more");
    svc->svc_id = (unsigned)n;
    if (parse_vnis(p, obj, where, svc) < 0)
        return -1;
    for (size_t i = 0; i < SIM_NFLAGS; i++) {
        int def =
            sim_svc_flags[i].def < 0 ? svc->nvnis > 0 : sim_svc_flags[i].def;
        if (get_uint(p, obj, where, sim_svc_flags[i].key, -1, def, &n) < 0)
            return -1;
        *(bool *)((char *)svc + sim_svc_flags[i].offset) = n != 0;
    }
    if (json_object_get(obj, "uid")) {
        if (get_uint(p, obj, where, "uid", UINT32_MAX - 1, 0, &n) < 0)
            return -1;
        svc->has_uid = true;
        svc->uid = (uid_t)n;
    }
    if (get_uint(p, obj, where, "tcs", SIM_TCS_ALL, 0xf, &n) < 0)
        return -1;
    svc->tcs_mask = (unsigned)n;
    if (get_uint(p, obj, where, "lnis", INT_MAX, 0, &n) < 0)
        return -1;
    svc->lnis = (unsigned)n;
    if (get_rsrc(p, obj, where, "max", cap, svc->max) < 0
        || get_rsrc(p, obj, where, "res", sim_zero, svc->res) < 0
        || get_rsrc(p, obj, where, "use", sim_zero, svc->use) < 0)
        return -1;
    return 0;
}

/* The default service as the driver creates it at probe. */
static void sim_default_svc(const uint16_t cap[NIC_RSRC_COUNT],
                            struct nic_svc *svc)
{
    memset(svc, 0, sizeof(*svc));
    svc->svc_id = SIM_DEFAULT_SVC_ID;
    svc->enabled = false; /* disable_default_svc=1, HPE's default */
    svc->restricted_vnis = true;
    svc->nvnis = 2;
    svc->vnis[0] = 1;
    svc->vnis[1] = 10;
    svc->tcs_mask = 0xf;
    memcpy(svc->max, cap, sizeof(svc->max));
    svc->res[NIC_RSRC_TLE] = cap[NIC_RSRC_TLE] < SIM_DEFAULT_TLE_RES
                                 ? cap[NIC_RSRC_TLE]
                                 : SIM_DEFAULT_TLE_RES;
}

static int svc_cmp(const void *a, const void *b)
{
    const struct nic_svc *x = a, *y = b;
    return (x->svc_id > y->svc_id) - (x->svc_id < y->svc_id);
}

static int parse_services(const struct sim_parse *p,
                          json_t *root,
                          struct simfile_nic *nic)
{
    json_t *v = json_object_get(root, "services");
    size_t n = v ? json_array_size(v) : 1;

    if (v && !json_is_array(v))
        return parse_fail(p, "services", "", "expected an array");
    if (n > SIM_MAX_SVCS)
        return parse_fail(p, "services", "", "too many services");
    if (n > 0 && !(nic->svcs = calloc(n, sizeof(*nic->svcs)))) {
        errno = ENOMEM;
        return errprintf(p->errp, "sim: %s: out of memory", p->file);
    }
    if (!v) {
        sim_default_svc(nic->cap, &nic->svcs[0]);
        nic->nsvcs = 1;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (parse_svc(p, json_array_get(v, i), (int)i, nic->cap, &nic->svcs[i])
            < 0)
            return -1;
        nic->nsvcs++;
    }
    qsort(nic->svcs, n, sizeof(*nic->svcs), svc_cmp);
    for (size_t i = 1; i < n; i++) {
        if (nic->svcs[i].svc_id == nic->svcs[i - 1].svc_id) {
            char what[48];
            snprintf(what,
                     sizeof(what),
                     "service id %u appears twice",
                     nic->svcs[i].svc_id);
            return parse_fail(p, "services", "", what);
        }
    }
    return 0;
}

static int parse_faults(const struct sim_parse *p,
                        json_t *root,
                        struct simfile_nic *nic)
{
    static const char *const keys[] = {"destroy_ebusy",
                                       "alloc_error",
                                       "alloc_error_count",
                                       "open_fail",
                                       "stop_after_alloc",
                                       NULL};
    json_t *f = json_object_get(root, "faults");
    json_t *e = json_object_get(f, "alloc_error");
    json_int_t n;

    if (f && !json_is_object(f))
        return parse_fail(p, "faults", "", "expected an object");
    if (f && check_keys(p, f, "faults", keys) < 0)
        return -1;
    if (get_uint(p, f, "faults", "destroy_ebusy", INT_MAX, 0, &n) < 0)
        return -1;
    nic->destroy_ebusy = (unsigned)n;
    if (get_uint(p, f, "faults", "open_fail", -1, 0, &n) < 0)
        return -1;
    nic->open_fail = n != 0;
    if (get_uint(p, f, "faults", "stop_after_alloc", INT_MAX, 0, &n) < 0)
        return -1;
    nic->stop_after_alloc = (unsigned)n;
    nic->alloc_error = 0;
    if (e && !json_is_null(e)) {
        const char *s = json_string_value(e);
        for (size_t i = 0;
             s && i < sizeof(sim_errnames) / sizeof(sim_errnames[0]);
             i++) {
            if (strcmp(s, sim_errnames[i].name) == 0)
                nic->alloc_error = sim_errnames[i].errnum;
        }
        if (!nic->alloc_error)
            return parse_fail(p,
                              "faults",
                              "alloc_error",
                              "expected null, \"ENOSPC\", \"EINVAL\" or "
                              "\"EPERM\"");
    }
    if (get_uint(p,
                 f,
                 "faults",
                 "alloc_error_count",
                 INT_MAX,
                 nic->alloc_error ? 1 : 0,
                 &n)
        < 0)
        return -1;
    nic->alloc_error_count = (unsigned)n;
    return 0;
}

static void sim_nic_free(struct simfile_nic *nic)
{
    int saved_errno = errno;
    free(nic->svcs);
    nic->svcs = NULL;
    nic->nsvcs = 0;
    errno = saved_errno;
}

/* Parse root, the contents of file, for the NIC cxi<dev_id>. */
static int sim_parse_nic(json_t *root,
                         const char *file,
                         uint32_t dev_id,
                         struct simfile_nic *nic,
                         vnib_error_t *errp)
{
    static const char *const keys[] = {"name",
                                       "dev_id",
                                       "capacity",
                                       "next_svc_id",
                                       "services",
                                       "faults",
                                       NULL};
    const struct sim_parse p = {.file = file, .errp = errp};
    json_t *name = json_object_get(root, "name");
    json_int_t n;
    unsigned next;

    memset(nic, 0, sizeof(*nic));
    snprintf(nic->name, sizeof(nic->name), "cxi%u", (unsigned)dev_id);
    nic->dev_id = dev_id;
    if (!json_is_object(root))
        return parse_fail(&p, "", "", "expected an object");
    if (check_keys(&p, root, "", keys) < 0)
        return -1;
    if (name
        && (!json_is_string(name)
            || strcmp(json_string_value(name), nic->name) != 0))
        return parse_fail(&p, "name", "", "does not match the file name");
    if (get_uint(&p, root, "", "dev_id", UINT32_MAX, dev_id, &n) < 0)
        return -1;
    if ((uint32_t)n != dev_id)
        return parse_fail(&p, "dev_id", "", "does not match the file name");
    if (get_rsrc(&p, root, "", "capacity", sim_default_cap, nic->cap) < 0
        || parse_services(&p, root, nic) < 0 || parse_faults(&p, root, nic) < 0)
        goto error;
    next = SIM_DEFAULT_SVC_ID + 1;
    if (nic->nsvcs > 0 && nic->svcs[nic->nsvcs - 1].svc_id >= next)
        next = nic->svcs[nic->nsvcs - 1].svc_id + 1;
    if (get_uint(&p, root, "", "next_svc_id", INT_MAX, next, &n) < 0)
        goto error;
    /* Never hand out an id that is in the file already. */
    nic->next_svc_id = (unsigned)n > next ? (unsigned)n : next;
    return 0;
error:
    sim_nic_free(nic);
    return -1;
}

static json_t *rsrc_json(const uint16_t v[NIC_RSRC_COUNT])
{
    json_t *o = json_object();

    for (int r = 0; o && r < NIC_RSRC_COUNT; r++) {
        if (json_object_set_new(o, nic_rsrc_name(r), json_integer(v[r])) < 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

static json_t *svc_json(const struct nic_svc *svc)
{
    json_t *vnis = json_array();
    json_t *o = json_object();
    bool ok = vnis && o;

    for (int i = 0; ok && i < svc->nvnis; i++)
        ok = json_array_append_new(vnis, json_integer(svc->vnis[i])) == 0;
    const struct {
        const char *key;
        json_t *value;
    } fields[] = {
        {"svc_id", json_integer(svc->svc_id)},
        {"vnis", vnis},
        {"tcs", json_integer(svc->tcs_mask)},
        {"lnis", json_integer(svc->lnis)},
        {"max", rsrc_json(svc->max)},
        {"res", rsrc_json(svc->res)},
        {"use", rsrc_json(svc->use)},
    };
    /* Every value is set (or freed) whatever happens before it. */
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (!fields[i].value)
            ok = false;
        else if (!o)
            json_decref(fields[i].value);
        else if (json_object_set_new(o, fields[i].key, fields[i].value) < 0)
            ok = false;
    }
    if (ok && svc->has_uid)
        ok = json_object_set_new(o, "uid", json_integer(svc->uid)) == 0;
    for (size_t i = 0; ok && i < SIM_NFLAGS; i++) {
        const bool *flag =
            (const bool *)((const char *)svc + sim_svc_flags[i].offset);
        ok = json_object_set_new(o, sim_svc_flags[i].key, json_boolean(*flag))
             == 0;
    }
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *nic_json(const struct simfile_nic *nic)
{
    const char *errname = NULL;
    json_t *svcs = json_array();
    json_t *o = NULL;

    for (int i = 0; svcs && i < nic->nsvcs; i++) {
        if (json_array_append_new(svcs, svc_json(&nic->svcs[i])) < 0)
            goto done;
    }
    for (size_t i = 0; i < sizeof(sim_errnames) / sizeof(sim_errnames[0]);
         i++) {
        if (sim_errnames[i].errnum == nic->alloc_error)
            errname = sim_errnames[i].name;
    }
    o = json_pack(
        "{s:s, s:I, s:o, s:I, s:O,"
        " s:{s:I, s:s?, s:I, s:b, s:I}}",
        "name",
        nic->name,
        "dev_id",
        (json_int_t)nic->dev_id,
        "capacity",
        rsrc_json(nic->cap),
        "next_svc_id",
        (json_int_t)nic->next_svc_id,
        "services",
        svcs,
        "faults",
        "destroy_ebusy",
        (json_int_t)nic->destroy_ebusy,
        "alloc_error",
        errname,
        "alloc_error_count",
        (json_int_t)nic->alloc_error_count,
        "open_fail",
        nic->open_fail,
        "stop_after_alloc",
        (json_int_t)nic->stop_after_alloc);
done:
    json_decref(svcs);
    return o;
}

/* Build DIR/<prefix>cxiN<suffix> into buf. */
static int sim_path(char *buf,
                    size_t size,
                    const char *dir,
                    const char *prefix,
                    const char *name,
                    const char *suffix,
                    vnib_error_t *errp)
{
    int n = snprintf(buf, size, "%s/%s%s%s", dir, prefix, name, suffix);

    if (n < 0 || (size_t)n >= size) {
        errno = ENAMETOOLONG;
        return errprintf(errp, "sim: %s: path too long", name);
    }
    return 0;
}

int simfile_store(const char *dir,
                  const struct simfile_nic *nic,
                  bool excl,
                  vnib_error_t *errp)
{
    char tmp[PATH_MAX], path[PATH_MAX], suffix[32];
    json_t *root = NULL;
    char *text = NULL;
    bool created = false;
    int fd = -1;
    int rc = -1;

    snprintf(suffix, sizeof(suffix), ".json.tmp.%ld", (long)getpid());
    if (sim_path(tmp, sizeof(tmp), dir, ".", nic->name, suffix, errp) < 0
        || sim_path(path, sizeof(path), dir, "", nic->name, ".json", errp) < 0)
        goto done;
    if (!(root = nic_json(nic))) {
        errno = ENOMEM;
        errprintf(errp, "sim: %s: out of memory", nic->name);
        goto done;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        errprintf(errp, "sim: %s: %s", tmp, strerror(errno));
        goto done;
    }
    created = true;
    /* No fsync: a real NIC's services do not survive a reboot either,
     * and the rename alone keeps readers from seeing half a file. */
    /* One write: json_dumpfd would issue a system call per token. */
    errno = EIO; /* json_dumps need not set errno */
    text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    size_t len = text ? strlen(text) : 0;
    if (text)
        text[len++] = '\n'; /* replaces the NUL; len bytes are written */
    if (!text || write(fd, text, len) != (ssize_t)len) {
        errprintf(errp, "sim: %s: cannot write: %s", tmp, strerror(errno));
        goto done;
    }
    if (close(fd) < 0) {
        fd = -1; /* closed even so */
        errprintf(errp, "sim: %s: cannot write: %s", tmp, strerror(errno));
        goto done;
    }
    fd = -1;
    if (excl ? link(tmp, path) : rename(tmp, path)) {
        errprintf(errp, "sim: %s: %s", path, strerror(errno));
        goto done;
    }
    if (!excl)
        created = false;
    rc = 0;
done:
    if (fd >= 0 || created) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        if (created)
            unlink(tmp);
        errno = e;
    }
    free(text);
    json_decref(root);
    return rc;
}

static int sim_lock(const char *dir,
                    const char *name,
                    int op,
                    vnib_error_t *errp)
{
    char path[PATH_MAX];
    int fd;

    if (sim_path(path, sizeof(path), dir, ".", name, ".lock", errp) < 0)
        return -1;
    fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return errprintf(errp, "sim: %s: %s", path, strerror(errno));
    while (flock(fd, op) < 0) {
        if (errno != EINTR) {
            int e = errno;
            errprintf(errp, "sim: %s: cannot lock: %s", path, strerror(e));
            close(fd);
            errno = e;
            return -1;
        }
    }
    return fd;
}

static void sim_unlock(int fd)
{
    int saved_errno = errno;
    if (fd >= 0)
        close(fd); /* releases the flock */
    errno = saved_errno;
}

/* Read and parse path, the file of cxi<dev_id>. */
static int sim_load(const char *path,
                    uint32_t dev_id,
                    struct simfile_nic *nic,
                    vnib_error_t *errp)
{
    json_error_t jerr;
    json_t *root;
    int rc;

    memset(nic, 0, sizeof(*nic));
    if (!(root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr))) {
        errno = ENODEV;
        if (jerr.line < 0)
            return errprintf(errp, "sim: %s: %s", path, jerr.text);
        return errprintf(errp,
                         "sim: %s: line %d column %d: %s",
                         path,
                         jerr.line,
                         jerr.column,
                         jerr.text);
    }
    rc = sim_parse_nic(root, path, dev_id, nic, errp);
    json_decref(root);
    return rc;
}

/* Open the NIC of dev for one operation: lock (op is LOCK_SH or LOCK_EX),
 * read, and refuse a NIC whose open fails.  Close with simfile_close.
 */
int simfile_open(const char *dir,
                 uint32_t dev_id,
                 int op,
                 struct simfile_open *so,
                 vnib_error_t *errp)
{
    char name[NIC_NAME_MAX];
    struct stat st;

    memset(so, 0, sizeof(*so));
    so->lockfd = -1;
    snprintf(name, sizeof(name), "cxi%u", (unsigned)dev_id);
    if (sim_path(so->path, sizeof(so->path), dir, "", name, ".json", errp) < 0)
        return -1;
    if (stat(so->path, &st) < 0) {
        errno = ENODEV;
        return errprintf(errp, "sim: %s: no such NIC (%s)", name, so->path);
    }
    if ((so->lockfd = sim_lock(dir, name, op, errp)) < 0)
        return -1;
    if (sim_load(so->path, dev_id, &so->nic, errp) < 0)
        goto error;
    if (so->nic.open_fail) {
        errno = ENODEV;
        errprintf(errp, "sim: %s: cannot open device (injected fault)", name);
        goto error;
    }
    return 0;
error:
    sim_nic_free(&so->nic);
    sim_unlock(so->lockfd);
    so->lockfd = -1;
    return -1;
}

void simfile_close(struct simfile_open *so)
{
    sim_nic_free(&so->nic);
    sim_unlock(so->lockfd);
    so->lockfd = -1;
}

/* The N of a canonical NIC file name "cxiN.json", or -1. */
static long long sim_file_dev_id(const char *file)
{
    const char *s = file + 3;
    long long n = 0;

    if (strncmp(file, "cxi", 3) != 0 || *s < '0' || *s > '9')
        return -1;
    if (s[0] == '0' && s[1] != '.')
        return -1; /* "cxi01.json" is no NIC name */
    for (; *s >= '0' && *s <= '9'; s++) {
        n = n * 10 + (*s - '0');
        if (n > UINT32_MAX)
            return -1;
    }
    return strcmp(s, ".json") == 0 ? n : -1;
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The dev_ids of the NIC files in dir, sorted. */
int simfile_scan(const char *dir,
                 uint32_t **idsp,
                 int *countp,
                 vnib_error_t *errp)
{
    uint32_t *ids = NULL;
    int count = 0, alloc = 0;
    struct dirent *de;
    DIR *d;
    int rc = -1;

    if (!(d = opendir(dir))) {
        int e = errno;
        errprintf(errp, "sim: %s: %s", dir, strerror(e));
        errno = ENODEV;
        return -1;
    }
    errno = 0;
    while ((de = readdir(d))) {
        long long id = sim_file_dev_id(de->d_name);
        if (id < 0)
            continue;
        if (count == alloc) {
            uint32_t *n;
            alloc = alloc ? alloc * 2 : 8;
            if (alloc > SIM_MAX_FILES
                || !(n = realloc(ids, (size_t)alloc * sizeof(*ids)))) {
                errno = ENOMEM;
                errprintf(errp, "sim: %s: too many NIC files", dir);
                goto done;
            }
            ids = n;
        }
        ids[count++] = (uint32_t)id;
        errno = 0;
    }
    if (errno != 0) {
        errprintf(errp, "sim: %s: %s", dir, strerror(errno));
        goto done;
    }
    if (count > 0)
        qsort(ids, (size_t)count, sizeof(*ids), u32_cmp);
    *idsp = ids;
    *countp = count;
    ids = NULL;
    rc = 0;
done:
    free(ids);
    closedir(d);
    return rc;
}

/* A new NIC file's contents. */
static int sim_default_nic(uint32_t dev_id, struct simfile_nic *nic)
{
    memset(nic, 0, sizeof(*nic));
    snprintf(nic->name, sizeof(nic->name), "cxi%u", (unsigned)dev_id);
    nic->dev_id = dev_id;
    memcpy(nic->cap, sim_default_cap, sizeof(nic->cap));
    if (!(nic->svcs = calloc(2, sizeof(*nic->svcs))))
        return -1;
    nic->nsvcs = 2;
    sim_default_svc(nic->cap, &nic->svcs[0]);
    nic->svcs[1].svc_id = SIM_DEFAULT_SVC_ID + 1;
    nic->svcs[1].is_system = true;
    nic->svcs[1].enabled = true;
    nic->svcs[1].tcs_mask = 0xf;
    nic->svcs[1].resource_limits = true;
    memcpy(nic->svcs[1].max, sim_system_rsrc, sizeof(sim_system_rsrc));
    memcpy(nic->svcs[1].res, sim_system_rsrc, sizeof(sim_system_rsrc));
    memcpy(nic->svcs[1].use, sim_system_rsrc, sizeof(sim_system_rsrc));
    nic->next_svc_id = SIM_DEFAULT_SVC_ID + 2;
    return 0;
}

int simfile_create(const char *dir, uint32_t dev_id, vnib_error_t *errp)
{
    struct simfile_nic nic;
    int fd, rc;

    if (sim_default_nic(dev_id, &nic) < 0) {
        errno = ENOMEM;
        return errprintf(errp, "sim: out of memory");
    }
    if ((fd = sim_lock(dir, nic.name, LOCK_EX, errp)) < 0) {
        sim_nic_free(&nic);
        return -1;
    }
    rc = simfile_store(dir, &nic, true, errp);
    sim_unlock(fd);
    sim_nic_free(&nic);
    return rc;
}

int simfile_check_new(const char *dir, uint32_t dev_id, vnib_error_t *errp)
{
    char path[PATH_MAX], name[NIC_NAME_MAX];
    struct stat st;

    snprintf(name, sizeof(name), "cxi%u", (unsigned)dev_id);
    if (sim_path(path, sizeof(path), dir, "", name, ".json", errp) < 0)
        return -1;
    if (lstat(path, &st) == 0) {
        errno = EEXIST;
        return errprintf(errp, "sim: %s: already exists", path);
    }
    return 0;
}

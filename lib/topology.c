/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Slurm topology.conf (tree topology) into a queryable inventory (see
 * include/vnib/topology.h).
 *
 * Parsing is two passes.  The first reads the text record by record (one
 * line, or several joined by a trailing backslash): tokens KEY=VALUE,
 * keys case-insensitive, each token remembering its line and column so
 * that every message can point at it.  Nodes= and Switches= are expanded
 * through lib/hostlist.c with what is left of the file's name budget.
 * The second pass checks the whole: switch names unique, child switches
 * defined, no cycle, no node under two leaf switches; and builds the
 * node index, a sorted array searched by name, so a lookup costs
 * O(log nodes) however large the cluster.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "vnib/hostlist.h"
#include "vnib/topology.h"

/* Longest piece of a token quoted back in a message. */
#define TOPO_QUOTE_MAX 40

struct topo_switch {
    char *name;
    unsigned line, col;     /* of the SwitchName value */
    struct hostlist *nodes; /* Nodes= (uniq'd), NULL when absent */
    unsigned nodes_line, nodes_col;
    struct hostlist *children; /* Switches= (uniq'd), NULL when absent */
    unsigned sw_line, sw_col;
    size_t *child_idx; /* children resolved to switch indices */
    long link_speed;   /* -1: not given */
};

/* One node of the index: its name (borrowed from its switch's list). */
struct topo_node {
    const char *name;
    uint32_t sw;
};

struct topology {
    struct topo_switch *sw; /* in the file's order */
    size_t nsw, capsw;
    size_t *by_name;         /* switch indices sorted by name */
    struct topo_node *nodes; /* sorted by name */
    size_t nnodes;
    size_t nleaves;
};

/* The reader's position and what it reports to. */
struct topo_scan {
    const char *text;
    size_t len, pos;
    unsigned line, col; /* of text[pos], 1-based */
    const char *name;   /* the file, in messages */
    size_t max_names;   /* names the whole file may expand to */
    size_t budget;      /* names it may still expand to */
    vnib_error_t *errp;
};

/* A KEY=VALUE token. */
struct topo_token {
    const char *key, *value;
    size_t key_len, value_len;
    unsigned line, col, value_col;
};

/* "NAME:LINE:COL: ..." with errno set to err.  Always returns -1. */
static int topo_fail(const struct topo_scan *sc,
                     int err,
                     unsigned line,
                     unsigned col,
                     const char *fmt,
                     ...) __attribute__((format(printf, 5, 6)));
static int topo_fail(const struct topo_scan *sc,
                     int err,
                     unsigned line,
                     unsigned col,
                     const char *fmt,
                     ...)
{
    char msg[sizeof(((vnib_error_t *)0)->text)];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    errprintf(sc->errp, "%s:%u:%u: %s", sc->name, line, col, msg);
    errno = err;
    return -1;
}

/* As error.h does for errprintf: the -1 made visible where it is called,
 * for clang's static analyzer, which does not follow variadic calls.
 */
#define topo_fail(...) vnib_error_ret(topo_fail(__VA_ARGS__))

/* Copy at most TOPO_QUOTE_MAX bytes of s (n bytes) for a message, with
 * bytes that are not printable ASCII shown as '?'.
 */
static void quote(char *buf, size_t size, const char *s, size_t n)
{
    size_t i = 0;

    for (; i < n && i < TOPO_QUOTE_MAX && i + 1 < size; i++)
        buf[i] = s[i] > ' ' && s[i] < 0x7f ? s[i] : '?';
    buf[i] = '\0';
    if (n > i && i >= 3)
        memcpy(buf + i - 3, "...", 3);
}

void topology_destroy(struct topology *t)
{
    int saved_errno = errno;

    if (t) {
        for (size_t i = 0; i < t->nsw; i++) {
            free(t->sw[i].name);
            hostlist_destroy(t->sw[i].nodes);
            hostlist_destroy(t->sw[i].children);
            free(t->sw[i].child_idx);
        }
        free(t->sw);
        free(t->by_name);
        free(t->nodes);
        free(t);
    }
    errno = saved_errno;
}

/* ---- the reader ---------------------------------------------------------- */

static void advance(struct topo_scan *sc)
{
    if (sc->text[sc->pos] == '\n') {
        sc->line++;
        sc->col = 1;
    } else
        sc->col++;
    sc->pos++;
}

/* A backslash that ends its line (before "\n" or "\r\n") joins the next. */
static size_t continuation(const struct topo_scan *sc)
{
    size_t p = sc->pos;

    if (p >= sc->len || sc->text[p] != '\\')
        return 0;
    if (p + 1 < sc->len && sc->text[p + 1] == '\n')
        return 2;
    if (p + 2 < sc->len && sc->text[p + 1] == '\r' && sc->text[p + 2] == '\n')
        return 3;
    return 0;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Skip blanks, continuations and a comment.  Returns the next byte ('\n'
 * at the end of a record, '\0' at the end of the text), or -1 after
 * reporting a NUL byte.
 */
static int skip_space(struct topo_scan *sc)
{
    for (;;) {
        size_t n;
        if (sc->pos >= sc->len)
            return '\0';
        char c = sc->text[sc->pos];
        if (c == '\0')
            return topo_fail(sc, EINVAL, sc->line, sc->col, "NUL byte");
        if (is_blank(c)) {
            advance(sc);
        } else if ((n = continuation(sc)) > 0) {
            while (n--)
                advance(sc);
        } else if (c == '#') {
            while (sc->pos < sc->len && sc->text[sc->pos] != '\n') {
                if (sc->text[sc->pos] == '\0')
                    return topo_fail(sc, EINVAL, sc->line, sc->col, "NUL byte");
                advance(sc);
            }
        } else
            return (unsigned char)c;
    }
}

/* Read one token (at a byte that is not space) into tok. */
static int read_token(struct topo_scan *sc, struct topo_token *tok)
{
    const char *start = sc->text + sc->pos;
    const char *eq;
    size_t n = 0;
    char what[TOPO_QUOTE_MAX + 1];

    tok->line = sc->line;
    tok->col = sc->col;
    while (sc->pos < sc->len) {
        char c = sc->text[sc->pos];
        if (c == '\0' || c == '\n' || c == '#' || is_blank(c)
            || continuation(sc))
            break;
        advance(sc);
        n++;
    }
    eq = memchr(start, '=', n);
    quote(what, sizeof(what), start, n);
    if (!eq || eq == start)
        return topo_fail(sc,
                         EINVAL,
                         tok->line,
                         tok->col,
                         "expected KEY=VALUE, found \"%s\"",
                         what);
    tok->key = start;
    tok->key_len = (size_t)(eq - start);
    tok->value = eq + 1;
    tok->value_len = n - tok->key_len - 1;
    tok->value_col = tok->col + (unsigned)tok->key_len + 1;
    if (tok->value_len == 0) {
        quote(what, sizeof(what), tok->key, tok->key_len);
        return topo_fail(
            sc, EINVAL, tok->line, tok->value_col, "%s has no value", what);
    }
    return 0;
}

static int key_is(const struct topo_token *tok, const char *key)
{
    return strlen(key) == tok->key_len
           && strncasecmp(tok->key, key, tok->key_len) == 0;
}

/* A NUL-terminated copy of the token's value, or NULL (ENOMEM). */
static char *value_dup(const struct topo_token *tok)
{
    char *s = malloc(tok->value_len + 1);

    if (s) {
        memcpy(s, tok->value, tok->value_len);
        s[tok->value_len] = '\0';
    }
    return s;
}

/* Expand a Nodes= or Switches= value with the file's remaining budget. */
static struct hostlist *expand(struct topo_scan *sc,
                               const struct topo_token *tok,
                               const char *key)
{
    vnib_error_t why = {0};
    struct hostlist *hl = NULL;
    char *expr = value_dup(tok);
    const char *at;
    const char *msg;
    size_t off = 0;

    if (!expr) {
        errprintf(sc->errp, "out of memory");
        return NULL;
    }
    if (!(hl = hostlist_decode(expr, sc->budget, &why))) {
        int e = errno;
        free(expr);
        if (e == ENOMEM) {
            errprintf(sc->errp, "out of memory");
            return NULL;
        }
        if (e == E2BIG && strstr(why.text, "more than")
            && !strstr(why.text, "bytes"))
            topo_fail(sc,
                      E2BIG,
                      tok->line,
                      tok->value_col,
                      "%s: the file names more than %zu hosts and switches",
                      key,
                      sc->max_names);
        else {
            /* Point at the byte the hostlist parser names. */
            if ((at = strstr(why.text, "at offset ")))
                off = strtoul(at + 10, NULL, 10);
            msg =
                strncmp(why.text, "hostlist: ", 10) ? why.text : why.text + 10;
            topo_fail(sc,
                      e,
                      tok->line,
                      tok->value_col + (unsigned)off,
                      "%s: %s",
                      key,
                      msg);
        }
        return NULL;
    }
    free(expr);
    sc->budget -= hostlist_count(hl);
    hostlist_uniq(hl);
    return hl;
}

/* The SwitchName value: one name from the hostlist alphabet. */
static int switch_name(struct topo_scan *sc,
                       const struct topo_token *tok,
                       struct topo_switch *s)
{
    static const char alphabet[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.";
    char what[TOPO_QUOTE_MAX + 1];

    for (size_t i = 0; i < tok->value_len; i++) {
        if (!strchr(alphabet, tok->value[i])) {
            quote(what, sizeof(what), tok->value + i, 1);
            return topo_fail(sc,
                             EINVAL,
                             tok->line,
                             tok->value_col + (unsigned)i,
                             "SwitchName: '%s' is not allowed in a switch "
                             "name (letters, digits, '-', '_', '.')",
                             what);
        }
    }
    if (tok->value_len > HOSTLIST_MAX_NAME_LEN)
        return topo_fail(sc,
                         E2BIG,
                         tok->line,
                         tok->value_col,
                         "SwitchName: longer than %u bytes",
                         HOSTLIST_MAX_NAME_LEN);
    if (!(s->name = value_dup(tok)))
        return errprintf(sc->errp, "out of memory");
    s->line = tok->line;
    s->col = tok->value_col;
    return 0;
}

static int link_speed(struct topo_scan *sc,
                      const struct topo_token *tok,
                      struct topo_switch *s)
{
    long v = 0;

    for (size_t i = 0; i < tok->value_len; i++) {
        if (tok->value[i] < '0' || tok->value[i] > '9' || v > 99999999)
            return topo_fail(sc,
                             EINVAL,
                             tok->line,
                             tok->value_col,
                             "LinkSpeed: not a number in 0-999999999");
        v = v * 10 + (tok->value[i] - '0');
    }
    s->link_speed = v;
    return 0;
}

/* Keys of Slurm's other topologies, refused by name. */
static const char *const other_records[] = {
    "BlockName", "BlockSizes", "RingName", NULL};

/* One more key of a SwitchName record. */
static int record_key(struct topo_scan *sc,
                      const struct topo_token *tok,
                      struct topo_switch *s,
                      bool *seen)
{
    static const char *const keys[] = {
        "SwitchName", "Nodes", "Switches", "LinkSpeed", NULL};
    char what[TOPO_QUOTE_MAX + 1];
    size_t k = 0;

    while (keys[k] && !key_is(tok, keys[k]))
        k++;
    quote(what, sizeof(what), tok->key, tok->key_len);
    if (!keys[k])
        return topo_fail(
            sc, EINVAL, tok->line, tok->col, "unknown key \"%s\"", what);
    if (seen[k])
        return topo_fail(sc,
                         EINVAL,
                         tok->line,
                         tok->col,
                         "%s given twice for switch %s",
                         keys[k],
                         s->name);
    seen[k] = true;
    if ((k == 1 && seen[2]) || (k == 2 && seen[1]))
        return topo_fail(sc,
                         EINVAL,
                         tok->line,
                         tok->col,
                         "switch %s has both Nodes= and Switches=",
                         s->name);
    if (k == 1) {
        s->nodes_line = tok->line;
        s->nodes_col = tok->value_col;
        return (s->nodes = expand(sc, tok, "Nodes")) ? 0 : -1;
    }
    if (k == 2) {
        s->sw_line = tok->line;
        s->sw_col = tok->value_col;
        return (s->children = expand(sc, tok, "Switches")) ? 0 : -1;
    }
    return link_speed(sc, tok, s);
}

/* Read one record, whose first token the scanner is at. */
static int read_record(struct topo_scan *sc, struct topology *t)
{
    struct topo_token tok;
    struct topo_switch *s;
    bool seen[4] = {false, false, false, false};
    char what[TOPO_QUOTE_MAX + 1];
    int c;

    if (read_token(sc, &tok) < 0)
        return -1;
    if (!key_is(&tok, "SwitchName")) {
        quote(what, sizeof(what), tok.key, tok.key_len);
        for (size_t i = 0; other_records[i]; i++)
            if (key_is(&tok, other_records[i]))
                return topo_fail(sc,
                                 EINVAL,
                                 tok.line,
                                 tok.col,
                                 "%s: only tree topologies (SwitchName=) "
                                 "are read",
                                 other_records[i]);
        if (key_is(&tok, "Nodes") || key_is(&tok, "Switches")
            || key_is(&tok, "LinkSpeed"))
            return topo_fail(sc,
                             EINVAL,
                             tok.line,
                             tok.col,
                             "a line must start with SwitchName=, not %s",
                             what);
        return topo_fail(
            sc, EINVAL, tok.line, tok.col, "unknown key \"%s\"", what);
    }
    if (t->nsw >= TOPOLOGY_MAX_SWITCHES)
        return topo_fail(sc,
                         E2BIG,
                         tok.line,
                         tok.col,
                         "more than %u switches",
                         TOPOLOGY_MAX_SWITCHES);
    if (t->nsw == t->capsw) {
        size_t cap = t->capsw ? t->capsw * 2 : 16;
        struct topo_switch *p = realloc(t->sw, cap * sizeof(*p));
        if (!p)
            return errprintf(sc->errp, "out of memory");
        t->sw = p;
        t->capsw = cap;
    }
    s = &t->sw[t->nsw++];
    memset(s, 0, sizeof(*s));
    s->link_speed = -1;
    seen[0] = true;
    if (switch_name(sc, &tok, s) < 0)
        return -1;
    while ((c = skip_space(sc)) != '\n' && c != '\0') {
        if (c < 0 || read_token(sc, &tok) < 0
            || record_key(sc, &tok, s, seen) < 0)
            return -1;
    }
    if (!s->nodes && !s->children)
        return topo_fail(sc,
                         EINVAL,
                         s->line,
                         s->col,
                         "switch %s has neither Nodes= nor Switches=",
                         s->name);
    if (s->nodes)
        t->nleaves++;
    return 0;
}

/* ---- the whole ----------------------------------------------------------- */

/* qsort has no argument: each index rides with its name. */
struct sw_key {
    const char *name;
    size_t i;
};

static int cmp_sw_key(const void *a, const void *b)
{
    const struct sw_key *x = a, *y = b;
    int c = strcmp(x->name, y->name);

    return c ? c : (x->i > y->i) - (x->i < y->i);
}

static int cmp_node(const void *a, const void *b)
{
    const struct topo_node *x = a, *y = b;
    int c = strcmp(x->name, y->name);

    return c ? c : (x->sw > y->sw) - (x->sw < y->sw);
}

/* The switch called name, or -1. */
static long find_switch(const struct topology *t, const char *name)
{
    size_t lo = 0, hi = t->nsw;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, t->sw[t->by_name[mid]].name);
        if (c == 0)
            return (long)t->by_name[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return -1;
}

/* Sort the switches by name; refuse one defined twice (the first such
 * redefinition in the file's order).
 */
static int index_switches(struct topo_scan *sc, struct topology *t)
{
    struct sw_key *keys = calloc(t->nsw ? t->nsw : 1, sizeof(*keys));
    size_t dup = SIZE_MAX, first = 0;

    if (!keys || !(t->by_name = calloc(t->nsw ? t->nsw : 1, sizeof(size_t)))) {
        free(keys);
        return errprintf(sc->errp, "out of memory");
    }
    for (size_t i = 0; i < t->nsw; i++)
        keys[i] = (struct sw_key){t->sw[i].name, i};
    qsort(keys, t->nsw, sizeof(*keys), cmp_sw_key);
    for (size_t i = 0; i < t->nsw; i++) {
        t->by_name[i] = keys[i].i;
        if (i > 0 && !strcmp(t->sw[keys[i].i].name, t->sw[keys[i - 1].i].name)
            && keys[i].i < dup) {
            dup = keys[i].i;
            first = keys[i - 1].i;
        }
    }
    free(keys);
    if (dup != SIZE_MAX)
        return topo_fail(sc,
                         EINVAL,
                         t->sw[dup].line,
                         t->sw[dup].col,
                         "switch %s is defined twice (first on line %u)",
                         t->sw[dup].name,
                         t->sw[first].line);
    return 0;
}

/* Resolve every Switches= name to its switch. */
static int resolve_children(struct topo_scan *sc, struct topology *t)
{
    for (size_t i = 0; i < t->nsw; i++) {
        struct topo_switch *s = &t->sw[i];
        size_t n = s->children ? hostlist_count(s->children) : 0;
        if (n == 0)
            continue;
        if (!(s->child_idx = calloc(n, sizeof(size_t))))
            return errprintf(sc->errp, "out of memory");
        for (size_t k = 0; k < n; k++) {
            const char *name = hostlist_nth(s->children, k);
            long j = find_switch(t, name);
            if (j < 0)
                return topo_fail(sc,
                                 EINVAL,
                                 s->sw_line,
                                 s->sw_col,
                                 "Switches: switch %s is not defined",
                                 name);
            s->child_idx[k] = (size_t)j;
        }
    }
    return 0;
}

/* Describe the cycle path[from..n-1] -> path[from] for a message. */
static void cycle_text(const struct topology *t,
                       const size_t *path,
                       size_t from,
                       size_t n,
                       char *buf,
                       size_t size)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t k = from; k <= n && used < size; k++) {
        int w = snprintf(buf + used,
                         size - used,
                         "%s%s",
                         k > from ? " -> " : "",
                         t->sw[path[k < n ? k : from]].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* Depth-first over the child edges, iteratively (a file may nest deep):
 * an edge back to a switch on the current path closes a cycle.
 */
static int check_cycles(struct topo_scan *sc, struct topology *t)
{
    unsigned char *state =
        calloc(t->nsw ? t->nsw : 1, 1); /* 0, 1 on path, 2 done */
    size_t *path = calloc(t->nsw ? t->nsw : 1, sizeof(size_t));
    size_t *next = calloc(t->nsw ? t->nsw : 1, sizeof(size_t));
    char text[120];
    int rc = 0;

    if (!state || !path || !next) {
        rc = errprintf(sc->errp, "out of memory");
        goto done;
    }
    for (size_t root = 0; root < t->nsw && rc == 0; root++) {
        size_t depth = 0;
        if (state[root])
            continue;
        path[depth++] = root;
        state[root] = 1;
        next[root] = 0;
        while (depth > 0) {
            size_t u = path[depth - 1];
            const struct topo_switch *s = &t->sw[u];
            size_t n = s->children ? hostlist_count(s->children) : 0;
            if (next[u] == n) {
                state[u] = 2;
                depth--;
                continue;
            }
            size_t v = s->child_idx[next[u]++];
            if (state[v] == 1) {
                size_t from = 0;
                while (path[from] != v)
                    from++;
                cycle_text(t, path, from, depth, text, sizeof(text));
                rc = topo_fail(sc,
                               EINVAL,
                               s->sw_line,
                               s->sw_col,
                               "Switches: switch cycle %s",
                               text);
                break;
            }
            if (state[v] == 0) {
                state[v] = 1;
                next[v] = 0;
                path[depth++] = v;
            }
        }
    }
done:
    free(next);
    free(path);
    free(state);
    return rc;
}

/* The node index; a node under two leaf switches is refused (at the
 * later of the two).
 */
static int index_nodes(struct topo_scan *sc, struct topology *t)
{
    size_t n = 0, k = 0;
    size_t bad = SIZE_MAX;

    for (size_t i = 0; i < t->nsw; i++)
        n += t->sw[i].nodes ? hostlist_count(t->sw[i].nodes) : 0;
    if (!(t->nodes = calloc(n ? n : 1, sizeof(*t->nodes))))
        return errprintf(sc->errp, "out of memory");
    for (size_t i = 0; i < t->nsw; i++) {
        size_t m = t->sw[i].nodes ? hostlist_count(t->sw[i].nodes) : 0;
        for (size_t j = 0; j < m; j++)
            t->nodes[k++] = (struct topo_node){hostlist_nth(t->sw[i].nodes, j),
                                               (uint32_t)i};
    }
    t->nnodes = n;
    qsort(t->nodes, n, sizeof(*t->nodes), cmp_node);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(t->nodes[i].name, t->nodes[i - 1].name)
            && (bad == SIZE_MAX || t->nodes[i].sw < t->nodes[bad].sw))
            bad = i;
    if (bad != SIZE_MAX) {
        const struct topo_switch *a = &t->sw[t->nodes[bad - 1].sw];
        const struct topo_switch *b = &t->sw[t->nodes[bad].sw];
        return topo_fail(sc,
                         EINVAL,
                         b->nodes_line,
                         b->nodes_col,
                         "Nodes: node %s is under two leaf switches, %s "
                         "(line %u) and %s",
                         t->nodes[bad].name,
                         a->name,
                         a->line,
                         b->name);
    }
    return 0;
}

struct topology *topology_parse(const char *text,
                                size_t len,
                                const char *name,
                                size_t max_names,
                                vnib_error_t *errp)
{
    struct topo_scan sc = {
        .text = text,
        .len = len,
        .line = 1,
        .col = 1,
        .name = name ? name : "topology.conf",
        .max_names = max_names,
        .budget = max_names,
        .errp = errp,
    };
    struct topology *t = calloc(1, sizeof(*t));
    int c;

    if (!t) {
        errprintf(errp, "out of memory");
        return NULL;
    }
    errno = 0;
    while ((c = skip_space(&sc)) != '\0') {
        if (c < 0)
            goto error;
        if (c == '\n') {
            advance(&sc);
            continue;
        }
        if (read_record(&sc, t) < 0)
            goto error;
    }
    if (index_switches(&sc, t) < 0 || resolve_children(&sc, t) < 0
        || index_nodes(&sc, t) < 0 || check_cycles(&sc, t) < 0)
        goto error;
    return t;
error:
    if (errno == 0)
        errno = ENOMEM;
    topology_destroy(t);
    return NULL;
}

struct topology *topology_load(const char *path,
                               size_t max_names,
                               vnib_error_t *errp)
{
    struct topology *t = NULL;
    struct stat st;
    char *buf = NULL;
    size_t n = 0;
    FILE *f = fopen(path, "r");

    if (!f) {
        errprintf(errp, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fileno(f), &st) < 0) {
        errprintf(errp, "%s: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > (off_t)TOPOLOGY_MAX_FILE_BYTES) {
        errno = S_ISREG(st.st_mode) ? E2BIG : EINVAL;
        errprintf(
            errp,
            "%s: %s",
            path,
            S_ISREG(st.st_mode) ? "larger than 16 MiB" : "not a regular file");
        goto done;
    }
    /* One byte more than allowed tells a file that grew while read. */
    if (!(buf = malloc((size_t)TOPOLOGY_MAX_FILE_BYTES + 1))) {
        errprintf(errp, "out of memory");
        goto done;
    }
    n = fread(buf, 1, (size_t)TOPOLOGY_MAX_FILE_BYTES + 1, f);
    if (ferror(f)) {
        errno = EIO;
        errprintf(errp, "%s: read error", path);
        goto done;
    }
    if (n > TOPOLOGY_MAX_FILE_BYTES) {
        errno = E2BIG;
        errprintf(errp, "%s: larger than 16 MiB", path);
        goto done;
    }
    t = topology_parse(buf, n, path, max_names, errp);
done:
    free(buf);
    fclose(f);
    return t;
}

/* ---- queries ------------------------------------------------------------- */

size_t topology_switch_count(const struct topology *t)
{
    return t->nsw;
}

size_t topology_leaf_count(const struct topology *t)
{
    return t->nleaves;
}

size_t topology_node_count(const struct topology *t)
{
    return t->nnodes;
}

int topology_switch(const struct topology *t,
                    size_t i,
                    struct topology_switch_info *info)
{
    if (i >= t->nsw) {
        errno = ENOENT;
        return -1;
    }
    const struct topo_switch *s = &t->sw[i];
    info->name = s->name;
    info->leaf = s->nodes != NULL;
    info->nodes = s->nodes ? hostlist_count(s->nodes) : 0;
    info->children = s->children ? hostlist_count(s->children) : 0;
    info->link_speed = s->link_speed;
    info->line = s->line;
    return 0;
}

/* The index entry of node, or NULL. */
static const struct topo_node *find_node(const struct topology *t,
                                         const char *node)
{
    size_t lo = 0, hi = t->nnodes;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(node, t->nodes[mid].name);
        if (c == 0)
            return &t->nodes[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const char *topology_node(const struct topology *t,
                          size_t i,
                          const char **leafp)
{
    if (i >= t->nnodes)
        return NULL;
    *leafp = t->sw[t->nodes[i].sw].name;
    return t->nodes[i].name;
}

bool topology_has_node(const struct topology *t, const char *node)
{
    return find_node(t, node) != NULL;
}

const char *topology_leaf_of(const struct topology *t, const char *node)
{
    const struct topo_node *n = find_node(t, node);
    return n ? t->sw[n->sw].name : NULL;
}

int topology_span(const struct topology *t,
                  const struct hostlist *hl,
                  struct topology_spans *out,
                  vnib_error_t *errp)
{
    size_t *count = calloc(t->nsw ? t->nsw : 1, sizeof(size_t));

    memset(out, 0, sizeof(*out));
    if (!count) {
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    for (size_t i = 0; i < hostlist_count(hl); i++) {
        const char *name = hostlist_nth(hl, i);
        const struct topo_node *n = find_node(t, name);
        if (n)
            out->n += count[n->sw]++ == 0;
        else if (out->unknown++ == 0)
            out->first_unknown = name;
    }
    if (out->n > 0 && !(out->v = calloc(out->n, sizeof(*out->v)))) {
        free(count);
        memset(out, 0, sizeof(*out));
        errno = ENOMEM;
        return errprintf(errp, "out of memory");
    }
    for (size_t i = 0, k = 0; i < t->nsw; i++)
        if (count[i] > 0)
            out->v[k++] = (struct topology_span){t->sw[i].name, count[i]};
    free(count);
    return 0;
}

void topology_spans_free(struct topology_spans *spans)
{
    free(spans->v);
    memset(spans, 0, sizeof(*spans));
}

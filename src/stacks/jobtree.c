/* stacks/jobtree.c: the ranks' stacks merged into one tree (see
 * stacks/jobtree.h). */
#include "stacks/jobtree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the tree ---- */

typedef struct ranks {
    long *v; /* sorted, no repeats */
    size_t n, cap;
} ranks;

typedef struct node {
    char *key;
    json_t *frame;  /* a reference; NULL for a group's root */
    ranks r;
    size_t threads; /* threads through here (a rank may have several) */
    ranks ends;     /* ranks with a thread whose stack ends here */
    struct node **kids;
    size_t n_kids;
} node;

typedef struct group {
    char *name;
    int main;
    node root;
} group;

struct tdb_jobtree {
    group *g;
    size_t n;
};

static void ranks_add(ranks *s, long r)
{
    size_t i = 0;
    while (i < s->n && s->v[i] < r)
        i++;
    if (i < s->n && s->v[i] == r)
        return;
    TDB_GROW(s->v, s->n, s->cap);
    memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof(*s->v));
    s->v[i] = r;
    s->n++;
}

static int ranks_equal(const ranks *a, const ranks *b)
{
    return a->n == b->n && (!a->n || !memcmp(a->v, b->v, a->n * sizeof(*a->v)));
}

static json_t *ranks_json(const ranks *s)
{
    json_t *a = json_array();
    for (size_t i = 0; i < s->n; i++)
        json_array_append_new(a, json_integer(s->v[i]));
    return a;
}

static void node_clear(node *n)
{
    for (size_t i = 0; i < n->n_kids; i++) {
        node_clear(n->kids[i]);
        free(n->kids[i]);
    }
    free(n->kids);
    free(n->key);
    free(n->r.v);
    free(n->ends.v);
    json_decref(n->frame);
}

tdb_jobtree *tdb_jobtree_new(void)
{
    return tdb_xcalloc(1, sizeof(tdb_jobtree));
}

void tdb_jobtree_free(tdb_jobtree *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        node_clear(&t->g[i].root);
        free(t->g[i].name);
    }
    free(t->g);
    free(t);
}

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* A frame's library as the tree shows it: its file name; the vDSO, which
 * libdw names after each process ("[vdso: 1234]"), as one. */
static const char *library_name(const json_t *f)
{
    const char *lib = str(f, "library");
    if (!lib)
        return NULL;
    return !strncmp(lib, "[vdso", 5) ? "[vdso]" : tdb_base_name(lib);
}

/* The identity of a frame (stacks/jobtree.h says when two are the same). */
static char *frame_key(const json_t *f)
{
    const char *kind = str(f, "kind");
    const char *lib = library_name(f);
    if (kind && !strcmp(kind, "python"))
        return tdb_xasprintf("py\037%s\037%s\037%lld", str(f, "file") ? str(f, "file") : "?",
                             str(f, "function") ? str(f, "function") : "?",
                             (long long)json_integer_value(json_object_get(f, "line")));
    lib = lib ? lib : "?";
    if (str(f, "function"))
        return tdb_xasprintf("c\037%s\037%lld\037%s", str(f, "function"),
                             (long long)json_integer_value(json_object_get(f, "offset")), lib);
    const char *pc = str(f, "pc");
    unsigned long long v = pc ? strtoull(pc, NULL, 16) : 0;
    return tdb_xasprintf("c\037?\037%llx\037%s", v & 0xfff, lib);
}

static node *child(node *n, const json_t *frame)
{
    char *key = frame_key(frame);
    for (size_t i = 0; i < n->n_kids; i++)
        if (!strcmp(n->kids[i]->key, key)) {
            free(key);
            return n->kids[i];
        }
    node *k = tdb_xcalloc(1, sizeof(*k));
    k->key = key;
    k->frame = json_incref((json_t *)frame);
    n->kids = tdb_xrealloc(n->kids, (n->n_kids + 1) * sizeof(*n->kids));
    n->kids[n->n_kids++] = k;
    return k;
}

static group *group_for(tdb_jobtree *t, const char *name, int main)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->g[i].main == main && !strcmp(t->g[i].name, name))
            return &t->g[i];
    t->g = tdb_xrealloc(t->g, (t->n + 1) * sizeof(*t->g));
    group *g = &t->g[t->n++];
    memset(g, 0, sizeof(*g));
    g->name = tdb_xstrdup(name);
    g->main = main;
    return g;
}

/* A thread's frames, innermost first: its merged stack, or when the
 * merge failed its Python stack (what a rank is doing), else its native
 * one. */
static const json_t *thread_frames(const json_t *th)
{
    const json_t *f = json_object_get(th, "frames");
    if (json_is_array(f))
        return f;
    f = json_object_get(th, "python_frames");
    if (json_array_size(f))
        return f;
    return json_object_get(th, "native_frames");
}

void tdb_jobtree_add(tdb_jobtree *t, long rank, const json_t *process)
{
    json_int_t pid = json_integer_value(json_object_get(process, "pid"));
    size_t i;
    const json_t *th;
    json_array_foreach(json_object_get(process, "threads"), i, th) {
        const char *pyname = str(th, "python_name");
        json_int_t tid = json_integer_value(json_object_get(th, "tid"));
        int main = (tid > 0 && tid == pid) || (tid <= 0 && pyname && !strcmp(pyname, "MainThread"));
        const char *name = main ? "main" : pyname ? pyname : str(th, "name") ? str(th, "name") : "?";
        group *g = group_for(t, name, main);
        node *n = &g->root;
        ranks_add(&n->r, rank);
        n->threads++;
        const json_t *frames = thread_frames(th);
        for (size_t k = json_array_size(frames); k > 0; k--) {
            n = child(n, json_array_get(frames, k - 1));
            ranks_add(&n->r, rank);
            n->threads++;
        }
        ranks_add(&n->ends, rank);
    }
}

/* Largest set first, then by lowest rank. */
static int cmp_kid(const void *a, const void *b)
{
    const node *x = *(node *const *)a, *y = *(node *const *)b;
    if (x->r.n != y->r.n)
        return x->r.n > y->r.n ? -1 : 1;
    return x->r.v[0] < y->r.v[0] ? -1 : x->r.v[0] > y->r.v[0];
}

static int cmp_group(const void *a, const void *b)
{
    const group *x = a, *y = b;
    if (x->main != y->main)
        return y->main - x->main;
    return strcmp(x->name, y->name);
}

/* Walk from N down the chain its ranks share: the frames on the way go to
 * FRAMES (when given), the node where they part is returned. */
static const node *segment(const node *n, json_t *frames)
{
    for (;;) {
        if (n->frame && frames)
            json_array_append(frames, n->frame);
        if (n->n_kids != 1 || n->ends.n || !ranks_equal(&n->kids[0]->r, &n->r) ||
            n->kids[0]->threads != n->threads)
            return n;
        n = n->kids[0];
    }
}

static json_t *branch_json(const node *n)
{
    json_t *o = json_object();
    json_t *frames = json_array();
    json_object_set_new(o, "ranks", ranks_json(&n->r));
    tdb_buf b = TDB_BUF_INIT;
    tdb_rank_set_format(&b, n->r.v, n->r.n);
    json_object_set_new(o, "rank_set", json_string(tdb_buf_str(&b)));
    tdb_buf_free(&b);
    json_object_set_new(o, "threads", json_integer((json_int_t)n->threads));
    const node *end = segment(n, frames);
    json_object_set_new(o, "frames", frames);
    if (end->ends.n && end->n_kids)
        json_object_set_new(o, "ends", ranks_json(&end->ends));
    json_t *kids = json_array();
    node **sorted = tdb_xmalloc((end->n_kids ? end->n_kids : 1) * sizeof(*sorted));
    if (end->n_kids)
        memcpy(sorted, end->kids, end->n_kids * sizeof(*sorted));
    qsort(sorted, end->n_kids, sizeof(*sorted), cmp_kid);
    for (size_t i = 0; i < end->n_kids; i++)
        json_array_append_new(kids, branch_json(sorted[i]));
    free(sorted);
    json_object_set_new(o, "children", kids);
    return o;
}

static group *sorted_groups(const tdb_jobtree *t)
{
    group *g = tdb_xmalloc((t->n ? t->n : 1) * sizeof(*g));
    if (t->n)
        memcpy(g, t->g, t->n * sizeof(*g));
    qsort(g, t->n, sizeof(*g), cmp_group);
    return g;
}

json_t *tdb_jobtree_json(const tdb_jobtree *t)
{
    json_t *a = json_array();
    group *g = sorted_groups(t);
    for (size_t i = 0; i < t->n; i++) {
        json_t *o = json_pack("{s:s, s:b}", "thread", g[i].name, "main", g[i].main);
        json_object_update_new(o, branch_json(&g[i].root));
        json_array_append_new(a, o);
    }
    free(g);
    return a;
}

/* ---- text ---- */

/* One frame, as 'tdebug stacks' prints it; WITH_PC: with its address
 * (one process), else without (a frame several ranks share). */
static void frame_text(tdb_buf *b, const json_t *f, const char *indent, int with_pc)
{
    const char *kind = str(f, "kind");
    tdb_buf_adds(b, indent);
    if (kind && !strcmp(kind, "python")) {
        const json_t *line = json_object_get(f, "line");
        tdb_buf_addf(b, "File \"%s\", line ", str(f, "file") ? str(f, "file") : "?");
        if (json_is_integer(line))
            tdb_buf_addf(b, "%lld", (long long)json_integer_value(line));
        else
            tdb_buf_addc(b, '?');
        tdb_buf_addf(b, ", in %s\n", str(f, "function") ? str(f, "function") : "?");
        return;
    }
    if (with_pc && str(f, "pc"))
        tdb_buf_addf(b, "%s ", str(f, "pc"));
    if (str(f, "function"))
        tdb_buf_addf(b, "%s+0x%llx", str(f, "function"),
                     (unsigned long long)json_integer_value(json_object_get(f, "offset")));
    else
        tdb_buf_adds(b, "??");
    if (str(f, "library"))
        tdb_buf_addf(b, " (%s)", with_pc ? tdb_base_name(str(f, "library")) : library_name(f));
    tdb_buf_addc(b, '\n');
}

static void label(tdb_buf *b, const node *n)
{
    tdb_rank_set_label(b, n->r.v, n->r.n);
    if (n->threads != n->r.n)
        tdb_buf_addf(b, ", %zu threads", n->threads);
}

static void render_branch(tdb_buf *b, const node *n, size_t depth)
{
    char *indent = tdb_xmalloc(2 * depth + 1);
    memset(indent, ' ', 2 * depth);
    indent[2 * depth] = '\0';
    json_t *frames = json_array();
    const node *end = segment(n, frames);
    size_t i;
    json_t *f;
    json_array_foreach(frames, i, f)
        frame_text(b, f, indent, 0);
    json_decref(frames);
    node **sorted = tdb_xmalloc((end->n_kids ? end->n_kids : 1) * sizeof(*sorted));
    if (end->n_kids)
        memcpy(sorted, end->kids, end->n_kids * sizeof(*sorted));
    qsort(sorted, end->n_kids, sizeof(*sorted), cmp_kid);
    for (i = 0; i < end->n_kids; i++) {
        tdb_buf_addf(b, "%s[", indent);
        label(b, sorted[i]);
        tdb_buf_adds(b, "]\n");
        render_branch(b, sorted[i], depth + 1);
    }
    if (end->ends.n && end->n_kids) {
        tdb_buf_addf(b, "%s[", indent);
        tdb_rank_set_label(b, end->ends.v, end->ends.n);
        tdb_buf_adds(b, ": the stack ends here]\n");
    }
    free(sorted);
    free(indent);
}

void tdb_jobtree_render(tdb_buf *b, const tdb_jobtree *t)
{
    group *g = sorted_groups(t);
    for (size_t i = 0; i < t->n; i++) {
        if (i)
            tdb_buf_addc(b, '\n');
        if (g[i].main)
            tdb_buf_adds(b, "Main thread, ");
        else
            tdb_buf_addf(b, "Thread \"%s\", ", g[i].name);
        label(b, &g[i].root);
        tdb_buf_adds(b, ":\n");
        render_branch(b, &g[i].root, 1);
    }
    free(g);
}

void tdb_process_json_render(tdb_buf *b, const json_t *process, const char *indent)
{
    size_t i, k;
    const json_t *v, *th;
    int python = !json_is_null(json_object_get(process, "python"));
    json_array_foreach(json_object_get(process, "notes"), i, v)
        tdb_buf_addf(b, "%snote: %s\n", indent, json_string_value(v));
    char *deeper = tdb_xasprintf("%s  ", indent);
    json_array_foreach(json_object_get(process, "threads"), i, th) {
        const char *marks[4];
        size_t nm = 0;
        const char *gil = str(th, "gil");
        json_int_t tid = json_integer_value(json_object_get(th, "tid"));
        tdb_buf_addf(b, "%s%s", i ? "\n" : "", indent);
        if (tid > 0)
            tdb_buf_addf(b, "Thread %lld", (long long)tid);
        else
            tdb_buf_addf(b, "Python thread 0x%llx",
                         (unsigned long long)json_integer_value(json_object_get(th, "thread_id")));
        if (str(th, "name"))
            tdb_buf_addf(b, " \"%s\"", str(th, "name"));
        if (str(th, "python_name"))
            tdb_buf_addf(b, ", threading \"%s\"", str(th, "python_name"));
        if (gil && !strcmp(gil, "held"))
            marks[nm++] = "holds the GIL";
        else if (gil && !strcmp(gil, "waiting"))
            marks[nm++] = "waiting for the GIL";
        if (json_is_true(json_object_get(th, "gc")))
            marks[nm++] = "collecting garbage";
        if (json_is_true(json_object_get(th, "in_signal")))
            marks[nm++] = "in a signal handler";
        if (python && !json_is_true(json_object_get(th, "python")))
            marks[nm++] = "no Python";
        for (k = 0; k < nm; k++)
            tdb_buf_addf(b, "%s%s", k ? ", " : " (", marks[k]);
        tdb_buf_adds(b, nm ? "):\n" : ":\n");
        if (json_is_array(json_object_get(th, "frames"))) {
            json_array_foreach(json_object_get(th, "frames"), k, v)
                frame_text(b, v, deeper, 1);
        } else {
            /* The stacks did not line up: both, as 'stacks' shows them. */
            tdb_buf_addf(b, "%s(the stacks do not line up: %s; both shown whole)\n", deeper,
                         str(th, "mismatch") ? str(th, "mismatch") : "?");
            tdb_buf_addf(b, "%sPython stack:\n", deeper);
            char *deepest = tdb_xasprintf("%s  ", deeper);
            json_array_foreach(json_object_get(th, "python_frames"), k, v)
                frame_text(b, v, deepest, 1);
            tdb_buf_addf(b, "%sNative stack:\n", deeper);
            json_array_foreach(json_object_get(th, "native_frames"), k, v)
                frame_text(b, v, deepest, 1);
            free(deepest);
        }
        if (str(th, "python_partial"))
            tdb_buf_addf(b, "%s(Python stack incomplete: %s)\n", deeper, str(th, "python_partial"));
        if (str(th, "native_note"))
            tdb_buf_addf(b, "%s(native stack: %s)\n", deeper, str(th, "native_note"));
    }
    free(deeper);
}

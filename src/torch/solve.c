/*
 * torch/solve.c: where a torch build keeps each field of a tensor, solved
 * from the calibration helper's probes (tensors whose every field torch
 * itself reported, torch/layout.c) by reading the probes' objects in the
 * helper's memory, then verified by decoding every probe with the layout
 * found (contract: tdb_torch_solve() in torch/layout.h).
 */
#include "torch/layout.h"

#include "native/cxxabi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How much of each object the solver looks at. */
#define IMPL_SCAN 512     /* a TensorImpl (about 200 bytes in torch 1.13) */
#define OBJ_SCAN 64       /* the Python tensor object's head */
#define STORAGE_SCAN 256  /* a StorageImpl */
#define AUTOGRAD_SCAN 256 /* an AutogradMeta */
#define NODE_SCAN 2048    /* an autograd Node holding a saved Scalar */
#define PROBE_DIMS 16

/* Class names (not layouts) the solver checks objects against. */
#define UNDEFINED_IMPL_CLASS "N3c1019UndefinedTensorImplE"
#define AUTOGRAD_NODE_CLASS "N5torch8autograd4NodeE"

/* --- the probes, as read ------------------------------------------------ */

typedef struct probe {
    const char *name;
    uint64_t impl, obj;
    int ndim;
    int64_t sizes[PROBE_DIMS], strides[PROBE_DIMS];
    int64_t offset, numel, itemsize, nbytes;
    const char *dtype, *device;
    int index, requires_grad, leaf, plain;
    uint64_t data;
    int has_data;
    const json_t *values;
    int scalar_kind;             /* TDB_SCALAR_*, or -1 */
    const json_t *scalar_value;
    int clamp;                   /* a clamp probe */
    const json_t *clamp_min, *clamp_max;
    unsigned char ib[IMPL_SCAN]; /* the impl's bytes */
    size_t ilen;
    unsigned char ob[OBJ_SCAN];  /* the Python object's */
    size_t olen;
    uint64_t meta;               /* its autograd metadata, once known */
    unsigned char ab[AUTOGRAD_SCAN];
    size_t alen;
} probe;

static int word_at(const unsigned char *b, size_t len, long off, int size, int64_t *out)
{
    if (off < 0 || (size_t)off + (size_t)size > len)
        return 0;
    uint64_t v = 0;
    for (int i = size - 1; i >= 0; i--)
        v = v << 8 | b[off + i];
    if (size < 8 && (v >> (8 * size - 1)) & 1)
        v |= ~0ULL << (8 * size); /* sign-extend */
    *out = (int64_t)v;
    return 1;
}

static int impl_word(const probe *p, long off, int size, int64_t *out)
{
    return word_at(p->ib, p->ilen, off, size, out);
}

static int scalar_kind_of(const char *s)
{
    static const char *const names[TDB_SCALAR_KINDS] = {"double", "int", "complex", "bool"};
    for (int k = 0; s && k < TDB_SCALAR_KINDS; k++)
        if (!strcmp(s, names[k]))
            return k;
    return -1;
}

static int parse_probes(tdb_mem *m, const json_t *arr, probe **out, size_t *out_n, tdb_error *err)
{
    size_t n = json_array_size(arr);
    probe *ps = tdb_xcalloc(n ? n : 1, sizeof(*ps));
    for (size_t i = 0; i < n; i++) {
        const json_t *j = json_array_get(arr, i), *sz = json_object_get(j, "sizes"),
                     *st = json_object_get(j, "strides"), *sc = json_object_get(j, "scalar"),
                     *cl = json_object_get(j, "clamp");
        probe *p = &ps[i];
        p->name = json_string_value(json_object_get(j, "name"));
        p->impl = (uint64_t)json_integer_value(json_object_get(j, "impl"));
        p->obj = (uint64_t)json_integer_value(json_object_get(j, "obj"));
        p->ndim = (int)json_array_size(sz);
        p->offset = json_integer_value(json_object_get(j, "offset"));
        p->numel = json_integer_value(json_object_get(j, "numel"));
        p->itemsize = json_integer_value(json_object_get(j, "itemsize"));
        p->dtype = json_string_value(json_object_get(j, "dtype"));
        p->device = json_string_value(json_object_get(j, "device"));
        p->index = (int)json_integer_value(json_object_get(j, "index"));
        p->requires_grad = json_is_true(json_object_get(j, "requires_grad"));
        p->leaf = json_is_true(json_object_get(j, "leaf"));
        p->plain = json_is_true(json_object_get(j, "plain"));
        p->data = (uint64_t)json_integer_value(json_object_get(j, "data"));
        p->has_data = json_is_integer(json_object_get(j, "data")) && p->data != 0;
        p->nbytes = json_is_integer(json_object_get(j, "nbytes")) ? json_integer_value(json_object_get(j, "nbytes")) : -1;
        p->values = json_object_get(j, "values");
        p->scalar_kind = sc ? scalar_kind_of(json_string_value(json_object_get(sc, "kind"))) : -1;
        p->scalar_value = sc ? json_object_get(sc, "value") : NULL;
        p->clamp = cl != NULL;
        p->clamp_min = cl ? json_object_get(cl, "min") : NULL;
        p->clamp_max = cl ? json_object_get(cl, "max") : NULL;
        if (!p->name || !p->impl || !p->obj || !p->dtype || !p->device || p->ndim > PROBE_DIMS ||
            json_array_size(st) != (size_t)p->ndim || p->itemsize <= 0 || p->itemsize > 16) {
            tdb_error_set(err, EINVAL, "the calibration helper's probe %zu is malformed", i);
            free(ps);
            return -1;
        }
        for (int d = 0; d < p->ndim; d++) {
            p->sizes[d] = json_integer_value(json_array_get(sz, (size_t)d));
            p->strides[d] = json_integer_value(json_array_get(st, (size_t)d));
        }
        ssize_t r = tdb_mem_read(m, p->impl, p->ib, sizeof(p->ib));
        ssize_t o = tdb_mem_read(m, p->obj, p->ob, sizeof(p->ob));
        if (r <= 0 || o <= 0) {
            tdb_error_errno(err, "cannot read the calibration helper's tensor '%s' at 0x%llx", p->name,
                            (unsigned long long)p->impl);
            free(ps);
            return -1;
        }
        p->ilen = (size_t)r;
        p->olen = (size_t)o;
    }
    *out = ps;
    *out_n = n;
    return 0;
}

/* --- the solver --------------------------------------------------------- */

/* Record a candidate offset; more than one is an ambiguity. */
typedef struct cands {
    long v[8];
    int n;
} cands;

static void cand_add(cands *c, long off)
{
    if (c->n < 8)
        c->v[c->n] = off;
    c->n++;
}

static int cand_one(const cands *c, const char *what, long *out, tdb_error *err)
{
    if (c->n == 1) {
        *out = c->v[0];
        return 0;
    }
    if (c->n == 0)
        tdb_error_set(err, ENOENT, "calibration found no place where torch keeps %s", what);
    else
        tdb_error_set(err, ENOENT, "calibration found %d places where torch may keep %s (at %ld, %ld, ...)",
                      c->n, what, c->v[0], c->v[1]);
    return -1;
}

static int is_cpu(const probe *p)
{
    return !strcmp(p->device, "cpu");
}

static int solve_pyobj(const probe *ps, size_t n, tdb_tensor_layout *l, tdb_error *err)
{
    cands c = {{0}, 0};
    for (long off = 0; off + 8 <= OBJ_SCAN; off += 8) {
        size_t i;
        for (i = 0; i < n; i++) {
            int64_t w;
            if (!word_at(ps[i].ob, ps[i].olen, off, 8, &w) || (uint64_t)w != ps[i].impl)
                break;
        }
        if (i == n)
            cand_add(&c, off);
    }
    long off;
    if (cand_one(&c, "a Python tensor's TensorImpl", &off, err) < 0)
        return -1;
    l->pyobj_impl_off = (int)off;
    return 0;
}

/* An int64 field equal in every probe to what GET says of it. */
static int solve_int64(const probe *ps, size_t n, int64_t (*get)(const probe *), const char *what,
                       int *out, tdb_error *err)
{
    cands c = {{0}, 0};
    for (long off = 8; off + 8 <= IMPL_SCAN; off += 8) {
        size_t i;
        for (i = 0; i < n; i++) {
            int64_t w;
            if (!impl_word(&ps[i], off, 8, &w) || w != get(&ps[i]))
                break;
        }
        if (i == n)
            cand_add(&c, off);
    }
    long off;
    if (cand_one(&c, what, &off, err) < 0)
        return -1;
    *out = (int)off;
    return 0;
}

static int64_t get_ndim(const probe *p) { return p->ndim; }
static int64_t get_numel(const probe *p) { return p->numel; }
static int64_t get_offset(const probe *p) { return p->offset; }

/* Do the N int64 at OFF of P's impl equal V? */
static int impl_array_is(const probe *p, long off, const int64_t *v, int n)
{
    for (int d = 0; d < n; d++) {
        int64_t w;
        if (!impl_word(p, off + 8 * d, 8, &w) || w != v[d])
            return 0;
    }
    return 1;
}

static int solve_dims(tdb_mem *m, const probe *ps, size_t n, tdb_tensor_layout *l, tdb_error *err)
{
    long s = -1, t = -1;
    cands cs = {{0}, 0}, ct = {{0}, 0};
    /* Tensors of up to three dimensions certainly keep them inline. */
    for (long off = 8; off + 8 <= IMPL_SCAN; off += 8) {
        int sok = 1, tok = 1;
        for (size_t i = 0; i < n; i++) {
            if (ps[i].ndim < 1 || ps[i].ndim > 3)
                continue;
            sok = sok && impl_array_is(&ps[i], off, ps[i].sizes, ps[i].ndim);
            tok = tok && impl_array_is(&ps[i], off, ps[i].strides, ps[i].ndim);
        }
        if (sok)
            cand_add(&cs, off);
        if (tok)
            cand_add(&ct, off);
    }
    if (cand_one(&cs, "the sizes", &s, err) < 0 || cand_one(&ct, "the strides", &t, err) < 0)
        return -1;
    if (t <= s || (t - s) % 8 || (t - s) / 8 < 3 || (t - s) / 8 > TDB_TENSOR_MAX_DIMS) {
        tdb_error_set(err, EINVAL, "calibration found sizes at %ld and strides at %ld, which make no sense", s, t);
        return -1;
    }
    l->sizes_off = (int)s;
    l->strides_off = (int)t;
    l->inline_max = (int)((t - s) / 8);
    l->ool_strides_at_dim = -1;
    int ool_dim = 1, ool_max = 1;
    for (size_t i = 0; i < n; i++) {
        const probe *p = &ps[i];
        if (p->ndim <= l->inline_max) {
            if (!impl_array_is(p, s, p->sizes, p->ndim) || !impl_array_is(p, t, p->strides, p->ndim)) {
                tdb_error_set(err, EINVAL, "calibration: tensor '%s' does not keep its %d dimensions inline", p->name, p->ndim);
                return -1;
            }
            continue;
        }
        /* Out of line: the first inline word points to sizes, then strides. */
        int64_t arr, v[2 * PROBE_DIMS];
        if (!impl_word(p, s, 8, &arr) ||
            tdb_mem_read_full(m, (uint64_t)arr, v, 8 * (size_t)(p->ndim + (p->ndim > l->inline_max ? p->ndim : l->inline_max))) < 0) {
            tdb_error_set(err, EINVAL, "calibration: cannot read the sizes of tensor '%s'", p->name);
            return -1;
        }
        if (memcmp(v, p->sizes, 8 * (size_t)p->ndim) != 0) {
            tdb_error_set(err, EINVAL, "calibration: tensor '%s' keeps its sizes neither inline nor behind a pointer", p->name);
            return -1;
        }
        ool_dim = ool_dim && !memcmp(v + p->ndim, p->strides, 8 * (size_t)p->ndim);
        ool_max = ool_max && !memcmp(v + l->inline_max, p->strides, 8 * (size_t)p->ndim);
        if (!ool_dim && !ool_max) {
            tdb_error_set(err, EINVAL, "calibration: cannot find the strides of tensor '%s'", p->name);
            return -1;
        }
        l->ool_strides_at_dim = ool_dim ? 1 : 0;
    }
    return 0;
}

static int solve_dtype(const probe *ps, size_t n, tdb_tensor_layout *l, tdb_error *err)
{
    cands c = {{0}, 0};
    int sizes[2] = {2, 1};
    /* The code of each dtype: the same in every probe of that dtype, and
     * different from every other dtype's; a small number (an index, not a
     * pointer, which would differ between processes). */
    for (int k = 0; k < 2 && c.n == 0; k++) {
        for (long off = 0; off + sizes[k] <= IMPL_SCAN; off += sizes[k]) {
            int ok = 1;
            for (size_t i = 0; i < n && ok; i++) {
                int64_t a;
                ok = impl_word(&ps[i], off, sizes[k], &a) && a >= 0 && a < 256;
                for (size_t j = 0; j < i && ok; j++) {
                    int64_t b = 0;
                    impl_word(&ps[j], off, sizes[k], &b);
                    ok = (a == b) == (strcmp(ps[i].dtype, ps[j].dtype) == 0);
                }
            }
            if (ok)
                cand_add(&c, off);
        }
        if (c.n)
            l->dtype_size = sizes[k];
    }
    long off;
    if (cand_one(&c, "the dtype", &off, err) < 0)
        return -1;
    l->dtype_off = (int)off;
    for (size_t i = 0; i < n; i++) {
        int64_t code = 0;
        impl_word(&ps[i], off, l->dtype_size, &code);
        if (tdb_tensor_dtype_of(l, (int)code))
            continue;
        if (l->n_dtypes == TDB_TENSOR_MAX_DTYPES || strlen(ps[i].dtype) >= sizeof(l->dtypes[0].name))
            continue;
        tdb_tensor_dtype *d = &l->dtypes[l->n_dtypes++];
        d->code = (int)code;
        strcpy(d->name, ps[i].dtype);
        d->itemsize = (int)ps[i].itemsize;
    }
    return 0;
}

static int solve_device(const probe *ps, size_t n, tdb_tensor_layout *l, tdb_error *err)
{
    cands c = {{0}, 0};
    /* A c10::Device is its type, then its index (-1: none): look for the
     * pair, the type the same for one device and different between two. */
    for (long off = 0; off + 2 <= IMPL_SCAN; off++) {
        int ok = 1;
        for (size_t i = 0; i < n && ok; i++) {
            int64_t a, idx;
            ok = impl_word(&ps[i], off, 1, &a) && impl_word(&ps[i], off + 1, 1, &idx) &&
                 idx == ps[i].index && a >= 0;
            for (size_t j = 0; j < i && ok; j++) {
                int64_t b = 0;
                impl_word(&ps[j], off, 1, &b);
                ok = (a == b) == (strcmp(ps[i].device, ps[j].device) == 0);
            }
        }
        if (ok)
            cand_add(&c, off);
    }
    long off;
    if (cand_one(&c, "the device", &off, err) < 0)
        return -1;
    l->device_off = (int)off;
    l->device_size = 1;
    l->device_index_off = (int)off + 1;
    for (size_t i = 0; i < n; i++) {
        int64_t code = 0;
        impl_word(&ps[i], off, 1, &code);
        if (tdb_tensor_device_of(l, (int)code) || l->n_devices == TDB_TENSOR_MAX_DEVICES ||
            strlen(ps[i].device) >= sizeof(l->devices[0].name))
            continue;
        tdb_tensor_device *d = &l->devices[l->n_devices++];
        d->code = (int)code;
        strcpy(d->name, ps[i].device);
    }
    return 0;
}

static int solve_storage(tdb_mem *m, const probe *ps, size_t n, tdb_tensor_layout *l, tdb_error *err)
{
    cands c = {{0}, 0};
    long found_data = -1, found_nbytes = -1;
    for (long off = 8; off + 8 <= IMPL_SCAN; off += 8) {
        long data_at = -1, nbytes_at = -1;
        int first = 1;
        for (size_t i = 0; i < n; i++) {
            const probe *p = &ps[i];
            unsigned char sb[STORAGE_SCAN];
            int64_t w;
            if (!p->has_data || !is_cpu(p))
                continue;
            ssize_t r;
            if (!impl_word(p, off, 8, &w) || w < 4096 ||
                (r = tdb_mem_read(m, (uint64_t)w, sb, sizeof(sb))) <= 0) {
                data_at = -1;
                break;
            }
            /* The first probe proposes, the others must agree. */
            long from = first ? 0 : data_at, to = first ? r - 8 : data_at;
            long got = -1;
            for (long k = from; k >= 0 && k <= to && got < 0; k += 8) {
                int64_t v;
                if (word_at(sb, (size_t)r, k, 8, &v) && (uint64_t)v == p->data)
                    got = k;
            }
            long from2 = first ? 0 : nbytes_at, to2 = first ? r - 8 : nbytes_at;
            long got2 = -1;
            for (long k = from2; k >= 0 && k <= to2 && got2 < 0; k += 8) {
                int64_t v;
                if (k != got && word_at(sb, (size_t)r, k, 8, &v) && v == p->nbytes)
                    got2 = k;
            }
            data_at = got;
            nbytes_at = got2;
            first = 0;
            if (data_at < 0)
                break;
        }
        if (data_at >= 0) {
            cand_add(&c, off);
            found_data = data_at;
            found_nbytes = nbytes_at;
        }
    }
    long off;
    if (cand_one(&c, "the storage", &off, err) < 0)
        return -1;
    l->storage_off = (int)off;
    l->storage_data_off = (int)found_data;
    l->storage_nbytes_off = (int)found_nbytes;
    return 0;
}

static int solve_autograd(tdb_mem *m, probe *ps, size_t n, tdb_tensor_layout *l, tdb_error *err)
{
    cands c = {{0}, 0}, cg = {{0}, 0}, cf = {{0}, 0};
    long off, g, f;
    /* Plain tensors have none, tensors that require grad have one. */
    for (off = 8; off + 8 <= IMPL_SCAN; off += 8) {
        int ok = 1;
        for (size_t i = 0; i < n && ok; i++) {
            int64_t w;
            ok = impl_word(&ps[i], off, 8, &w) &&
                 (ps[i].plain ? w == 0 : ps[i].requires_grad ? w >= 4096 : 1);
        }
        if (ok)
            cand_add(&c, off);
    }
    if (cand_one(&c, "the autograd metadata", &off, err) < 0)
        return -1;
    l->autograd_off = (int)off;
    for (size_t i = 0; i < n; i++) {
        int64_t w = 0;
        impl_word(&ps[i], off, 8, &w);
        ps[i].meta = (uint64_t)w;
        ssize_t r = w ? tdb_mem_read(m, (uint64_t)w, ps[i].ab, sizeof(ps[i].ab)) : 0;
        ps[i].alen = r > 0 ? (size_t)r : 0;
    }
    /* grad_fn: set on results (not leaves), and pointing to a Node. */
    for (g = 0; g + 8 <= AUTOGRAD_SCAN; g += 8) {
        int ok = 1, seen = 0;
        for (size_t i = 0; i < n && ok; i++) {
            int64_t w;
            if (!ps[i].meta)
                continue;
            ok = word_at(ps[i].ab, ps[i].alen, g, 8, &w);
            if (ok && ps[i].requires_grad && !ps[i].leaf) {
                uint64_t type;
                ok = w != 0 && tdb_cxx_dynamic_type(m, (uint64_t)w, &type, NULL, NULL) == 0 &&
                     tdb_rtti_find_base(m, type, AUTOGRAD_NODE_CLASS, (uint64_t)w, NULL, NULL) == 1;
                seen = 1;
            } else if (ok) {
                ok = w == 0;
            }
        }
        if (ok && seen)
            cand_add(&cg, g);
    }
    if (cand_one(&cg, "grad_fn", &g, err) < 0)
        return -1;
    l->autograd_grad_fn_off = (int)g;
    /* requires_grad_: up on leaves that require grad, down elsewhere. */
    for (f = 0; f < AUTOGRAD_SCAN; f++) {
        int ok = 1, up = 0, down = 0;
        for (size_t i = 0; i < n && ok; i++) {
            if (!ps[i].meta)
                continue;
            int want = ps[i].requires_grad && ps[i].leaf;
            ok = (size_t)f < ps[i].alen && ps[i].ab[f] == want;
            up += want;
            down += !want;
        }
        if (ok && up && down)
            cand_add(&cf, f);
    }
    if (cand_one(&cf, "requires_grad", &f, err) < 0)
        return -1;
    l->autograd_requires_grad_off = (int)f;
    return 0;
}

static uint64_t bits_of(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* The saved-Scalar node of probe P (its grad_fn), read into B. */
static ssize_t read_node(tdb_mem *m, const probe *p, const tdb_tensor_layout *l, unsigned char *b,
                         uint64_t *out_node)
{
    int64_t node;
    if (!p->meta || !word_at(p->ab, p->alen, l->autograd_grad_fn_off, 8, &node) || !node)
        return -1;
    *out_node = (uint64_t)node;
    return tdb_mem_read(m, (uint64_t)node, b, NODE_SCAN);
}

/* Does word K of node B hold the value of probe P's Scalar? */
static int holds_scalar(const probe *p, const unsigned char *b, size_t len, long k)
{
    int64_t v, v2;
    if (!word_at(b, len, k, 8, &v))
        return 0;
    switch (p->scalar_kind) {
    case TDB_SCALAR_DOUBLE:
        return (uint64_t)v == bits_of(json_number_value(p->scalar_value));
    case TDB_SCALAR_INT:
        return v == json_integer_value(p->scalar_value);
    case TDB_SCALAR_BOOL:
        return v == (json_is_true(p->scalar_value) ? 1 : 0);
    case TDB_SCALAR_COMPLEX:
        return word_at(b, len, k + 8, 8, &v2) &&
               (uint64_t)v == bits_of(json_number_value(json_array_get(p->scalar_value, 0))) &&
               (uint64_t)v2 == bits_of(json_number_value(json_array_get(p->scalar_value, 1)));
    }
    return 0;
}

static int solve_scalar(tdb_mem *m, const probe *ps, size_t n, tdb_tensor_layout *l, long *out_at,
                        tdb_error *err)
{
    const probe *sp[TDB_SCALAR_KINDS] = {NULL};
    unsigned char nb[TDB_SCALAR_KINDS][NODE_SCAN];
    size_t nlen[TDB_SCALAR_KINDS];
    cands cv = {{0}, 0}, ct = {{0}, 0};
    long v, r;
    for (size_t i = 0; i < n; i++)
        if (ps[i].scalar_kind >= 0)
            sp[ps[i].scalar_kind] = &ps[i];
    for (int k = 0; k < TDB_SCALAR_KINDS; k++) {
        uint64_t node;
        ssize_t got = sp[k] ? read_node(m, sp[k], l, nb[k], &node) : -1;
        if (got <= 0) {
            tdb_error_set(err, ENOENT, "calibration: no autograd node for the c10::Scalar probes");
            return -1;
        }
        nlen[k] = (size_t)got;
    }
    /* The same node type saves each kind at the same place. */
    for (v = 0; v + 16 <= NODE_SCAN; v += 8) {
        int ok = 1;
        for (int k = 0; k < TDB_SCALAR_KINDS && ok; k++)
            ok = holds_scalar(sp[k], nb[k], nlen[k], v);
        if (ok)
            cand_add(&cv, v);
    }
    if (cand_one(&cv, "a c10::Scalar's value", &v, err) < 0)
        return -1;
    /* The tag: a small 4-byte code, different for each kind, just before
     * the value or just after its 16 bytes. */
    for (r = -32; r <= 28; r += 4) {
        int64_t t[TDB_SCALAR_KINDS];
        int ok = r < 0 || r >= 16;
        for (int k = 0; k < TDB_SCALAR_KINDS && ok; k++) {
            ok = word_at(nb[k], nlen[k], v + r, 4, &t[k]) && t[k] >= 0 && t[k] < 64;
            for (int j = 0; j < k && ok; j++)
                ok = t[j] != t[k];
        }
        if (ok)
            cand_add(&ct, r);
    }
    if (cand_one(&ct, "a c10::Scalar's tag", &r, err) < 0)
        return -1;
    long start = r < 0 ? v + r : v;
    l->scalar_tag_off = (int)(v + r - start);
    l->scalar_value_off = (int)(v - start);
    for (int k = 0; k < TDB_SCALAR_KINDS; k++) {
        int64_t t = 0;
        word_at(nb[k], nlen[k], v + r, 4, &t);
        l->scalar_tags[k] = (int)t;
    }
    *out_at = v;
    return 0;
}

/* Where does the clamp probe P's node keep the double D?  -1 if nowhere. */
static long find_double(const unsigned char *b, size_t len, double d)
{
    for (long k = 0; k + 8 <= (long)len; k += 8) {
        int64_t w;
        if (word_at(b, len, k, 8, &w) && (uint64_t)w == bits_of(d))
            return k;
    }
    return -1;
}

static int solve_opt_scalar(tdb_mem *m, const probe *ps, size_t n, tdb_tensor_layout *l, tdb_error *err)
{
    /* Two probes with min set (engaged) and one with only max: min's
     * optional has its flag up in the first two, down in the third. */
    const probe *with[2] = {NULL, NULL}, *without = NULL;
    unsigned char b[3][NODE_SCAN];
    size_t len[3];
    long at = -1;
    cands c = {{0}, 0};
    for (size_t i = 0; i < n; i++) {
        if (!ps[i].clamp)
            continue;
        if (json_is_number(ps[i].clamp_min))
            with[with[0] ? 1 : 0] = &ps[i];
        else
            without = &ps[i];
    }
    const probe *three[3] = {with[0], with[1], without};
    for (int k = 0; k < 3; k++) {
        uint64_t node;
        ssize_t got = three[k] ? read_node(m, three[k], l, b[k], &node) : -1;
        if (got <= 0) {
            tdb_error_set(err, ENOENT, "calibration: no autograd node for the c10::optional probes");
            return -1;
        }
        len[k] = (size_t)got;
    }
    at = find_double(b[0], len[0], json_number_value(with[0]->clamp_min));
    if (at < 0 || find_double(b[1], len[1], json_number_value(with[1]->clamp_min)) != at) {
        tdb_error_set(err, ENOENT, "calibration: cannot find the saved c10::optional<c10::Scalar>");
        return -1;
    }
    long scalar = at - l->scalar_value_off;
    for (long f = -32; f < 0; f++) {
        long pos = scalar + f;
        if (pos >= 0 && (size_t)pos < len[0] && (size_t)pos < len[1] && (size_t)pos < len[2] &&
            b[0][pos] == 1 && b[1][pos] == 1 && b[2][pos] == 0)
            cand_add(&c, f);
    }
    /* Padding between the flag and the Scalar may hold anything: when
     * several bytes fit, the flag is the one an aligned Scalar follows. */
    if (c.n > 1) {
        cands aligned = {{0}, 0};
        for (int i = 0; i < c.n && i < 8; i++)
            if ((-c.v[i] & (-c.v[i] - 1)) == 0 && -c.v[i] >= 8)
                cand_add(&aligned, c.v[i]);
        c = aligned;
    }
    long f;
    if (cand_one(&c, "a c10::optional's flag", &f, err) < 0)
        return -1;
    l->opt_scalar_flag_off = 0;
    l->opt_scalar_value_off = (int)-f;
    return 0;
}

/* --- verification ------------------------------------------------------- */

static int same_value(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!same_value(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

/* Decode every probe with L and compare with what torch said; SCALAR_AT
 * is where the Scalar probes' nodes keep the value. */
static int verify(tdb_mem *m, const probe *ps, size_t n, const tdb_tensor_layout *l, long scalar_at,
                  tdb_error *err)
{
    for (size_t i = 0; i < n; i++) {
        const probe *p = &ps[i];
        tdb_error e = {0};
        const char *bad = NULL;
        json_t *t = tdb_tensor_decode_pyobject(m, l, p->obj, 8, &e);
        if (!t) {
            tdb_error_set(err, EINVAL, "calibration did not verify: tensor '%s': %s", p->name, e.msg);
            return -1;
        }
        json_t *sizes = json_object_get(t, "sizes"), *strides = json_object_get(t, "strides");
        char device[40];
        if (p->index >= 0)
            snprintf(device, sizeof(device), "%s:%d", p->device, p->index);
        else
            snprintf(device, sizeof(device), "%s", p->device);
        for (int d = 0; d < p->ndim && !bad; d++)
            if (json_integer_value(json_array_get(sizes, (size_t)d)) != p->sizes[d] ||
                json_integer_value(json_array_get(strides, (size_t)d)) != p->strides[d])
                bad = "sizes or strides";
        if (!bad && json_array_size(sizes) != (size_t)p->ndim)
            bad = "dimensions";
        if (!bad && strcmp(json_string_value(json_object_get(t, "dtype")), p->dtype))
            bad = "dtype";
        if (!bad && strcmp(json_string_value(json_object_get(t, "device")), device))
            bad = "device";
        if (!bad && json_integer_value(json_object_get(t, "storage_offset")) != p->offset)
            bad = "storage offset";
        if (!bad && json_is_true(json_object_get(t, "requires_grad")) != p->requires_grad)
            bad = "requires_grad";
        if (!bad && p->values && !same_value(json_object_get(t, "values"), p->values))
            bad = "values";
        if (!bad && p->scalar_kind >= 0) {
            /* PowBackward0 keeps the exponent: decode it there. */
            unsigned char b[NODE_SCAN];
            uint64_t node;
            json_t *s = read_node(m, p, l, b, &node) > 0
                            ? tdb_scalar_decode(m, l, node + (uint64_t)(scalar_at - l->scalar_value_off), NULL)
                            : NULL;
            if (!s || !same_value(s, p->scalar_value))
                bad = "c10::Scalar";
            json_decref(s);
        }
        if (bad) {
            char *got = json_dumps(t, JSON_COMPACT);
            tdb_error_set(err, EINVAL, "calibration did not verify: tensor '%s': its %s decode wrong (%s)",
                          p->name, bad, got ? got : "?");
            free(got);
            json_decref(t);
            return -1;
        }
        json_decref(t);
    }
    return 0;
}

int tdb_torch_solve(tdb_mem *m, const json_t *probes, tdb_tensor_layout *out, tdb_error *err)
{
    probe *ps = NULL;
    size_t n = 0;
    tdb_tensor_layout l;
    int rc = -1;
    uint64_t type;
    tdb_rtti t;
    tdb_error e = {0};
    long scalar_at = -1;

    tdb_tensor_layout_init(&l);
    snprintf(l.source, sizeof(l.source), "calibration");
    if (!json_is_array(probes) || json_array_size(probes) < 4) {
        tdb_error_set(err, EINVAL, "calibration: too few probes");
        return -1;
    }
    if (parse_probes(m, probes, &ps, &n, err) < 0)
        return -1;
    /* The class every dense tensor's impl is (its type information). */
    if (tdb_cxx_dynamic_type(m, ps[0].impl, &type, &t, &e) < 0) {
        tdb_error_set(err, EINVAL, "calibration: the helper's tensor is no C++ object: %s", e.msg);
        goto cleanup;
    }
    if (strlen(t.mangled) >= sizeof(l.impl_class)) {
        tdb_error_set(err, EINVAL, "calibration: the tensors' class name is too long");
        goto cleanup;
    }
    strcpy(l.impl_class, t.mangled);
    snprintf(l.undefined_class, sizeof(l.undefined_class), "%s", UNDEFINED_IMPL_CLASS);
    l.dim_size = 8;
    if (solve_pyobj(ps, n, &l, err) < 0 ||
        solve_int64(ps, n, get_ndim, "the number of dimensions", &l.dim_off, err) < 0 ||
        solve_dims(m, ps, n, &l, err) < 0 ||
        solve_int64(ps, n, get_numel, "numel", &l.numel_off, err) < 0 ||
        solve_int64(ps, n, get_offset, "the storage offset", &l.offset_off, err) < 0 ||
        solve_dtype(ps, n, &l, err) < 0 || solve_device(ps, n, &l, err) < 0 ||
        solve_storage(m, ps, n, &l, err) < 0 || solve_autograd(m, ps, n, &l, err) < 0 ||
        solve_scalar(m, ps, n, &l, &scalar_at, err) < 0 || solve_opt_scalar(m, ps, n, &l, err) < 0 ||
        verify(m, ps, n, &l, scalar_at, err) < 0)
        goto cleanup;
    *out = l;
    rc = 0;
cleanup:
    free(ps);
    return rc;
}

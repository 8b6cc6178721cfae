/*
 * test_torchlayout.c: the calibration solver and the per-build cache.
 *
 * The solver is given probes as the helper reports them, over tensors laid
 * out in this process's memory with a made-up layout (no torch here, and
 * no offset of torch's: it must find whatever the objects say), and must
 * find every field, then refuse when the probes disagree.  The cache is
 * exercised through tdb_torch_open() on a made-up memory map whose
 * "libc10.so" is a fixture ELF with a build-id.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "fake_cxx.h"
#include "process/procfs.h"
#include "torch/tensor.h"
#include "tmp_tree.h"
#include "torch/layout.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif

static tdb_mem mem;
static uint64_t vptr_impl, vptr_node, vptr_pow, vptr_clamp;
static unsigned seed = 12345;

/* The made-up layout the probes are built with. */
typedef struct syn_impl {
    uint64_t vptr, refcount, autograd, pad;
    uint64_t storage;
    int64_t offset, dim;
    int64_t sizes[5], strides[5];
    int64_t numel;
    uint16_t dtype;
    uint8_t dev_init;
    int8_t dev_type, dev_index;
} syn_impl;
typedef struct syn_storage {
    uint64_t vptr, refcount, data;
    int64_t nbytes;
} syn_storage;
typedef struct syn_meta {
    uint64_t vptr, grad_fn, grad_fn_ctrl;
    uint8_t requires_grad, retains_grad, is_view;
} syn_meta;
typedef struct syn_scalar {
    int32_t tag;
    int32_t pad[3];
    union {
        double d;
        int64_t i;
        double z[2];
    } v;
} syn_scalar;
typedef struct syn_opt_scalar {
    uint8_t init;
    uint8_t pad[15];
    syn_scalar s;
} syn_opt_scalar;
typedef struct syn_node {
    uint64_t vptr, self[2], seq;
    uint64_t junk[4];
    syn_scalar exponent;        /* PowBackward0 */
    syn_opt_scalar min, max;    /* ClampBackward1 */
} syn_node;

static const struct {
    const char *name;
    int code, size;
} dtypes[] = {{"float32", 6, 4}, {"float64", 7, 8}, {"float16", 5, 2}, {"bfloat16", 15, 2},
              {"int8", 1, 1},    {"uint8", 0, 1},   {"int16", 2, 2},   {"int32", 3, 4},
              {"int64", 4, 8},   {"bool", 11, 1},   {"complex64", 9, 8}, {"complex128", 10, 16}};

/* Objects with unpredictable bytes after their fields, as the heap has. */
static void *noisy(size_t used, size_t total)
{
    unsigned char *p = fake_alloc(total);
    for (size_t i = used; i < total; i++)
        p[i] = (unsigned char)(rand_r(&seed) >> 7);
    return p;
}

static int setup(void **state)
{
    tdb_mem_init(&mem, getpid());
    vptr_impl = fake_vtable(fake_class("N3c1010TensorImplE"), 8);
    uint64_t node = fake_class("N5torch8autograd4NodeE");
    vptr_node = fake_vtable(fake_si_class("N5torch8autograd9generated11MulBackward0E", node), 4);
    vptr_pow = fake_vtable(fake_si_class("N5torch8autograd9generated12PowBackward0E", node), 4);
    vptr_clamp = fake_vtable(fake_si_class("N5torch8autograd9generated14ClampBackward1E", node), 4);
    return tmp_tree_setup(state);
}

static int teardown(void **state)
{
    fake_reset();
    tdb_mem_close(&mem);
    return tmp_tree_teardown(state);
}

typedef struct spec {
    const char *name, *dtype, *device;
    int dim;
    int64_t sizes[8], strides[8], offset;
    int plain, requires_grad, leaf, grad_off;
    const char *scalar_kind; /* pow probes */
    json_t *scalar_value;
    int clamp;               /* 1 min, 2 min (other value), 3 max */
} spec;

static int code_of(const char *dtype, int *size)
{
    for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
        if (!strcmp(dtypes[i].name, dtype)) {
            *size = dtypes[i].size;
            return dtypes[i].code;
        }
    abort();
}

/* Lay out one probe and describe it as the helper would. */
static json_t *build(const spec *s)
{
    int itemsize, code = code_of(s->dtype, &itemsize);
    syn_impl *t = noisy(sizeof(syn_impl), 512);
    int64_t numel = 1, extent = s->offset + 1;
    for (int d = 0; d < s->dim; d++) {
        numel *= s->sizes[d];
        extent += (s->sizes[d] - 1) * s->strides[d];
    }
    t->vptr = vptr_impl;
    t->refcount = 1;
    t->dim = s->dim;
    t->numel = numel;
    t->offset = s->offset;
    t->dtype = (uint16_t)code;
    t->dev_init = 1;
    t->dev_type = !strcmp(s->device, "meta") ? 14 : 0;
    t->dev_index = -1;
    if (s->dim == 0) {
        /* no dimensions */
    } else if (s->dim <= 5) {
        memcpy(t->sizes, s->sizes, 8 * (size_t)s->dim);
        memcpy(t->strides, s->strides, 8 * (size_t)s->dim);
    } else {
        int64_t *arr = fake_alloc(16 * (size_t)s->dim);
        memcpy(arr, s->sizes, 8 * (size_t)s->dim);
        memcpy(arr + s->dim, s->strides, 8 * (size_t)s->dim);
        t->sizes[0] = (int64_t)addr_of(arr);
    }
    syn_storage *st = noisy(sizeof(syn_storage), 256);
    t->storage = addr_of(st);
    int64_t nbytes = numel ? extent * itemsize : 0;
    unsigned char *data = NULL;
    if (strcmp(s->device, "meta") && nbytes) {
        data = fake_alloc((size_t)nbytes);
        for (int64_t i = 0; i < nbytes / itemsize; i++)
            if (!strcmp(s->dtype, "float32")) {
                float f = (float)i;
                memcpy(data + 4 * i, &f, 4);
            } else if (!strcmp(s->dtype, "int64")) {
                memcpy(data + 8 * i, &i, 8);
            }
    }
    st->data = addr_of(data);
    st->nbytes = nbytes;
    if (!s->plain) {
        syn_meta *m = noisy(sizeof(syn_meta), 256);
        m->requires_grad = (uint8_t)(s->requires_grad && s->leaf && !s->grad_off);
        if (s->requires_grad && !s->leaf) {
            syn_node *n = noisy(sizeof(syn_node), 2048);
            n->vptr = s->scalar_kind ? vptr_pow : s->clamp ? vptr_clamp : vptr_node;
            m->grad_fn = addr_of(n);
            m->grad_fn_ctrl = addr_of(fake_alloc(32));
            if (s->scalar_kind) {
                const char *k = s->scalar_kind;
                n->exponent.tag = !strcmp(k, "double") ? 0 : !strcmp(k, "int") ? 1 : !strcmp(k, "complex") ? 2 : 3;
                if (!strcmp(k, "double"))
                    n->exponent.v.d = json_real_value(s->scalar_value);
                else if (!strcmp(k, "int"))
                    n->exponent.v.i = json_integer_value(s->scalar_value);
                else if (!strcmp(k, "bool"))
                    n->exponent.v.i = json_is_true(s->scalar_value);
                else {
                    n->exponent.v.z[0] = json_real_value(json_array_get(s->scalar_value, 0));
                    n->exponent.v.z[1] = json_real_value(json_array_get(s->scalar_value, 1));
                }
            }
            if (s->clamp) {
                syn_opt_scalar *o = s->clamp == 3 ? &n->max : &n->min;
                o->init = 1;
                o->s.tag = 0;
                o->s.v.d = s->clamp == 1 ? 2.75 : s->clamp == 2 ? -7.25 : -5.5;
                (s->clamp == 3 ? &n->min : &n->max)->init = 0;
            }
        }
        t->autograd = addr_of(m);
    } else {
        t->autograd = 0;
    }
    uint64_t *py = noisy(32, 64);
    py[0] = 1, py[1] = 0x9999, py[2] = 0, py[3] = addr_of(t);

    json_t *sz = json_array(), *sr = json_array();
    for (int d = 0; d < s->dim; d++) {
        json_array_append_new(sz, json_integer(s->sizes[d]));
        json_array_append_new(sr, json_integer(s->strides[d]));
    }
    json_t *p = json_pack("{s:s,s:I,s:I,s:o,s:o,s:I,s:s,s:i,s:s,s:i,s:b,s:b,s:b,s:I}", "name", s->name,
                          "impl", (json_int_t)addr_of(t), "obj", (json_int_t)addr_of(py), "sizes", sz,
                          "strides", sr, "offset", (json_int_t)s->offset, "dtype", s->dtype, "itemsize",
                          itemsize, "device", s->device, "index", -1, "requires_grad", s->requires_grad,
                          "leaf", s->leaf, "plain", s->plain, "numel", (json_int_t)numel);
    if (strcmp(s->device, "meta")) {
        json_object_set_new(p, "data", json_integer((json_int_t)addr_of(data)));
        json_object_set_new(p, "nbytes", json_integer(nbytes));
        if (!strcmp(s->dtype, "float32") || !strcmp(s->dtype, "int64")) {
            /* the first values in index order, as torch lists them */
            json_t *v = json_array();
            int64_t idx[8] = {0};
            for (int64_t k = 0; k < numel && k < 8; k++) {
                int64_t lin = s->offset;
                for (int d = 0; d < s->dim; d++)
                    lin += idx[d] * s->strides[d];
                json_array_append_new(v, !strcmp(s->dtype, "float32") ? json_real((double)lin) : json_integer(lin));
                for (int d = s->dim - 1; d >= 0; d--) {
                    if (++idx[d] < s->sizes[d])
                        break;
                    idx[d] = 0;
                }
            }
            json_object_set_new(p, "values", v);
        }
    }
    if (s->scalar_kind)
        json_object_set_new(p, "scalar", json_pack("{s:s,s:O}", "kind", s->scalar_kind, "value", s->scalar_value));
    if (s->clamp)
        json_object_set_new(p, "clamp", s->clamp == 3 ? json_pack("{s:f}", "max", -5.5)
                                                      : json_pack("{s:f}", "min", s->clamp == 1 ? 2.75 : -7.25));
    return p;
}

/* The probe set of the helper script, over the made-up layout. */
static json_t *all_probes(void)
{
    json_t *a = json_array();
    spec s;
#define ADD(...)                                                                                 \
    do {                                                                                         \
        spec tmp = {__VA_ARGS__};                                                                \
        json_array_append_new(a, build(&tmp));                                                   \
        json_decref(tmp.scalar_value);                                                           \
    } while (0)
    ADD(.name = "strided", .dtype = "float32", .device = "cpu", .dim = 3, .sizes = {3, 5, 7},
        .strides = {97, 13, 2}, .offset = 11, .leaf = 1);
    for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
        ADD(.name = dtypes[i].name, .dtype = dtypes[i].name, .device = "cpu", .dim = 2,
            .sizes = {2, 3}, .strides = {3, 1}, .plain = 1, .leaf = 1);
    ADD(.name = "zero-dim", .dtype = "float64", .device = "cpu", .dim = 0, .plain = 1, .leaf = 1);
    ADD(.name = "dims6", .dtype = "float32", .device = "cpu", .dim = 6, .sizes = {2, 1, 3, 1, 2, 4},
        .strides = {24, 24, 8, 8, 4, 1}, .leaf = 1);
    ADD(.name = "dims7", .dtype = "int32", .device = "cpu", .dim = 7, .sizes = {3, 2, 1, 2, 1, 2, 4},
        .strides = {16, 48, 16, 8, 8, 4, 1}, .leaf = 1);
    ADD(.name = "empty", .dtype = "float32", .device = "cpu", .dim = 2, .sizes = {0, 3},
        .strides = {3, 1}, .plain = 1, .leaf = 1);
    ADD(.name = "offset", .dtype = "int64", .device = "cpu", .dim = 1, .sizes = {6}, .strides = {1},
        .offset = 4, .leaf = 1);
    ADD(.name = "meta", .dtype = "float32", .device = "meta", .dim = 2, .sizes = {2, 3},
        .strides = {3, 1}, .plain = 1, .leaf = 1);
    ADD(.name = "leaf-grad-unused", .dtype = "float32", .device = "cpu", .dim = 1, .sizes = {4},
        .strides = {1}, .requires_grad = 1, .leaf = 1);
    ADD(.name = "leaf-grad", .dtype = "float32", .device = "cpu", .dim = 1, .sizes = {3},
        .strides = {1}, .requires_grad = 1, .leaf = 1);
    ADD(.name = "leaf-grad-off", .dtype = "float32", .device = "cpu", .dim = 1, .sizes = {5},
        .strides = {1}, .leaf = 1, .grad_off = 1);
    ADD(.name = "nonleaf", .dtype = "float32", .device = "cpu", .dim = 1, .sizes = {3}, .strides = {1},
        .requires_grad = 1);
    ADD(.name = "pow-double", .dtype = "float32", .device = "cpu", .dim = 1, .sizes = {3},
        .strides = {1}, .requires_grad = 1, .scalar_kind = "double", .scalar_value = json_real(2.75));
    ADD(.name = "pow-int", .dtype = "float32", .device = "cpu", .dim = 1, .sizes = {3}, .strides = {1},
        .requires_grad = 1, .scalar_kind = "int", .scalar_value = json_integer(-123457));
    ADD(.name = "pow-bool", .dtype = "float32", .device = "cpu", .dim = 1, .sizes = {3},
        .strides = {1}, .requires_grad = 1, .scalar_kind = "bool", .scalar_value = json_true());
    ADD(.name = "pow-complex", .dtype = "complex128", .device = "cpu", .dim = 1, .sizes = {3},
        .strides = {1}, .requires_grad = 1, .scalar_kind = "complex",
        .scalar_value = json_pack("[ff]", 2.0, 3.0));
    ADD(.name = "clamp-min", .dtype = "float32", .device = "cpu", .dim = 1, .sizes = {3},
        .strides = {1}, .requires_grad = 1, .clamp = 1);
    ADD(.name = "clamp-min2", .dtype = "float32", .device = "cpu", .dim = 1, .sizes = {3},
        .strides = {1}, .requires_grad = 1, .clamp = 2);
    ADD(.name = "clamp-max", .dtype = "float32", .device = "cpu", .dim = 1, .sizes = {3},
        .strides = {1}, .requires_grad = 1, .clamp = 3);
#undef ADD
    (void)s;
    return a;
}

static void test_solve(void **state)
{
    json_t *probes = all_probes();
    tdb_tensor_layout l;
    tdb_error e = {0};
    int rc = tdb_torch_solve(&mem, probes, &l, &e);
    if (rc < 0)
        fprintf(stderr, "solve: %s\n", e.msg);
    assert_int_equal(rc, 0);
    assert_string_equal(l.impl_class, "N3c1010TensorImplE");
    assert_int_equal(l.pyobj_impl_off, 24);
    assert_int_equal(l.dim_off, offsetof(syn_impl, dim));
    assert_int_equal(l.sizes_off, offsetof(syn_impl, sizes));
    assert_int_equal(l.strides_off, offsetof(syn_impl, strides));
    assert_int_equal(l.inline_max, 5);
    assert_int_equal(l.ool_strides_at_dim, 1);
    assert_int_equal(l.offset_off, offsetof(syn_impl, offset));
    assert_int_equal(l.numel_off, offsetof(syn_impl, numel));
    assert_int_equal(l.dtype_off, offsetof(syn_impl, dtype));
    assert_int_equal(l.dtype_size, 2);
    assert_int_equal(l.device_off, offsetof(syn_impl, dev_type));
    assert_int_equal(l.device_index_off, offsetof(syn_impl, dev_index));
    assert_int_equal(l.storage_off, offsetof(syn_impl, storage));
    assert_int_equal(l.storage_data_off, offsetof(syn_storage, data));
    assert_int_equal(l.storage_nbytes_off, offsetof(syn_storage, nbytes));
    assert_int_equal(l.autograd_off, offsetof(syn_impl, autograd));
    assert_int_equal(l.autograd_grad_fn_off, offsetof(syn_meta, grad_fn));
    assert_int_equal(l.autograd_requires_grad_off, offsetof(syn_meta, requires_grad));
    assert_int_equal(l.scalar_tag_off, 0);
    assert_int_equal(l.scalar_value_off, offsetof(syn_scalar, v));
    assert_int_equal(l.scalar_tags[TDB_SCALAR_BOOL], 3);
    assert_int_equal(l.opt_scalar_flag_off, 0);
    assert_int_equal(l.opt_scalar_value_off, offsetof(syn_opt_scalar, s));
    assert_int_equal(l.n_dtypes, 12);
    assert_int_equal(tdb_tensor_dtype_named(&l, "bfloat16")->code, 15);
    assert_int_equal(tdb_tensor_dtype_named(&l, "complex128")->itemsize, 16);
    assert_string_equal(tdb_tensor_device_of(&l, 14)->name, "meta");
    json_decref(probes);
}

static void test_solve_refuses(void **state)
{
    /* A probe whose dtype field disagrees with what torch said: no place
     * fits every probe, and the message names the field. */
    json_t *probes = all_probes();
    json_t *p = json_array_get(probes, 1);
    syn_impl *t = (syn_impl *)(uintptr_t)json_integer_value(json_object_get(p, "impl"));
    t->dtype = 99;
    tdb_tensor_layout l;
    tdb_error e = {0};
    assert_int_equal(tdb_torch_solve(&mem, probes, &l, &e), -1);
    assert_non_null(strstr(e.msg, "the dtype"));
    t->dtype = 6;

    /* Values that do not verify: the layout is refused whole. */
    p = json_array_get(probes, 0);
    json_array_set_new(json_object_get(p, "values"), 0, json_real(-1.0));
    tdb_error_clear(&e);
    assert_int_equal(tdb_torch_solve(&mem, probes, &l, &e), -1);
    assert_non_null(strstr(e.msg, "calibration did not verify: tensor 'strided': its values"));
    json_decref(probes);

    tdb_error_clear(&e);
    probes = json_array();
    assert_int_equal(tdb_torch_solve(&mem, probes, &l, &e), -1);
    assert_non_null(strstr(e.msg, "too few probes"));
    json_decref(probes);
}

/* A memory map holding the fixture ELF as libc10 (a symlink named so). */
static void fake_maps(tdb_maps *m, const char *lib)
{
    m->n = 1;
    m->v = calloc(1, sizeof(tdb_map));
    m->v[0].start = 0x1000;
    m->v[0].end = 0x2000;
    strcpy(m->v[0].perms, "r-xp");
    m->v[0].path = strdup(lib);
    m->text = NULL;
}

static void test_open_and_cache(void **state)
{
    char lib[256], cache[256], target[512];
    tdb_maps maps;
    tdb_torch *t = NULL;
    tdb_error e = {0};
    snprintf(lib, sizeof(lib), "%s/libc10.so.1.13", tmp_tree);
    assert_non_null(realpath(FIXTURES "/elf/libversioned.so", target));
    assert_int_equal(symlink(target, lib), 0);
    snprintf(cache, sizeof(cache), "%s/cache", tmp_tree);
    setenv("XDG_CACHE_HOME", cache, 1);
    fake_maps(&maps, lib);

    /* No torch: a map without libc10. */
    tdb_maps none = {calloc(1, sizeof(tdb_map)), 1, NULL};
    none.v[0].path = strdup("/usr/lib/libfoo.so");
    assert_int_equal(tdb_torch_open(getpid(), &none, &t, &e), 1);
    tdb_maps_free(&none);

    assert_int_equal(tdb_torch_open(getpid(), &maps, &t, &e), 0);
    assert_non_null(strstr(tdb_torch_key(t), "c10 "));
    assert_non_null(tdb_torch_cache_path(t));
    char *path = strdup(tdb_torch_cache_path(t));
    assert_non_null(strstr(path, "/cache/tdebug/torch-layout/"));
    assert_int_equal(tdb_torch_layout_origin(t, NULL), 0);
    /* Nothing cached and no torch/_C mapped: calibration is refused, and
     * the refusal is remembered. */
    assert_null(tdb_torch_layout(t, &e));
    assert_non_null(strstr(e.msg, "no torch/_C module mapped"));
    tdb_error_clear(&e);
    assert_null(tdb_torch_layout(t, &e));
    assert_true(e.set);

    /* A cache file for this key is used at once. */
    tdb_tensor_layout l;
    tdb_tensor_layout_init(&l);
    strcpy(l.source, "calibration");
    l.dim_off = 72;
    json_t *doc = json_pack("{s:i,s:s,s:o}", "format", 1, "key", tdb_torch_key(t), "layout",
                            tdb_tensor_layout_to_json(&l));
    assert_int_equal(json_dump_file(doc, path, 0), 0);
    json_decref(doc);
    tdb_torch_free(t);
    assert_int_equal(tdb_torch_open(getpid(), &maps, &t, &e), 0);
    assert_int_equal(tdb_torch_layout_origin(t, NULL), 1);
    const tdb_tensor_layout *got = tdb_torch_layout(t, &e);
    assert_non_null(got);
    assert_int_equal(got->dim_off, 72);
    tdb_torch_free(t);

    /* A corrupt or foreign cache file is ignored. */
    FILE *f = fopen(path, "w");
    fputs("{\"format\": 1, \"key\": \"another build\", \"layout\": {}}", f);
    fclose(f);
    assert_int_equal(tdb_torch_open(getpid(), &maps, &t, &e), 0);
    assert_int_equal(tdb_torch_layout_origin(t, NULL), 0);
    tdb_torch_free(t);
    f = fopen(path, "w");
    fputs("{not json", f);
    fclose(f);
    assert_int_equal(tdb_torch_open(getpid(), &maps, &t, &e), 0);
    assert_int_equal(tdb_torch_layout_origin(t, NULL), 0);
    tdb_torch_free(t);

    /* The Python-values callback refuses without a layout. */
    assert_int_equal(tdb_torch_open(getpid(), &maps, &t, &e), 0);
    tdb_tensor_ctx ctx = {t, &mem, -1};
    json_t *out = NULL;
    tdb_error_clear(&e);
    assert_int_equal(tdb_tensor_from_pyobject(&ctx, 0x1000, &out, &e), -1);
    assert_null(out);
    assert_true(e.set);
    tdb_torch_free(t);
    tdb_maps_free(&maps);
    free(path);
    unsetenv("XDG_CACHE_HOME");
}

static void test_cache_dir(void **state)
{
    char want[256];
    setenv("XDG_CACHE_HOME", tmp_tree, 1);
    char *dir = tdb_user_cache_dir("a/b", NULL);
    snprintf(want, sizeof(want), "%s/tdebug/a/b", tmp_tree);
    assert_string_equal(dir, want);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    free(dir);
    unsetenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    char *saved = home ? strdup(home) : NULL;
    setenv("HOME", tmp_tree, 1);
    dir = tdb_user_cache_dir("x", NULL);
    snprintf(want, sizeof(want), "%s/.cache/tdebug/x", tmp_tree);
    assert_string_equal(dir, want);
    free(dir);
    unsetenv("HOME");
    tdb_error e = {0};
    assert_null(tdb_user_cache_dir("x", &e));
    assert_non_null(strstr(e.msg, "no cache directory"));
    /* A base others may write to (not sticky), or another user's: none. */
    char open_dir[200];
    snprintf(open_dir, sizeof(open_dir), "%s/open", tmp_tree);
    assert_int_equal(mkdir(open_dir, 0700), 0);
    assert_int_equal(chmod(open_dir, 0777), 0);
    setenv("XDG_CACHE_HOME", open_dir, 1);
    tdb_error_clear(&e);
    assert_null(tdb_user_cache_dir("x", &e));
    assert_non_null(strstr(e.msg, "other users may write there"));
    if (geteuid() == 0) {
        assert_int_equal(chmod(open_dir, 0755), 0);
        assert_int_equal(chown(open_dir, 65534, 65534), 0);
        tdb_error_clear(&e);
        assert_null(tdb_user_cache_dir("x", &e));
        assert_non_null(strstr(e.msg, "belongs to another user"));
        /* Nothing was made in it. */
        snprintf(want, sizeof(want), "%s/tdebug", open_dir);
        assert_int_equal(access(want, F_OK), -1);
    }
    unsetenv("XDG_CACHE_HOME");
    if (saved)
        setenv("HOME", saved, 1);
    free(saved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_solve),
        cmocka_unit_test(test_solve_refuses),
        cmocka_unit_test(test_open_and_cache),
        cmocka_unit_test(test_cache_dir),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * fake_tensor.h: tensors laid out in the test's own memory with a made-up
 * layout (offsets no torch uses: the decoders must only follow the
 * layout they are given), and gdb's answers about tinytensor's DWARF,
 * scripted.  Needs fake_cxx.h.  (Included by the tests that need it.)
 */
#ifndef TDB_FAKE_TENSOR_H
#define TDB_FAKE_TENSOR_H

#include "fake_cxx.h"
#include "process/procfs.h"
#include "torch/tensor.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tdb_tensor_layout L;
static uint64_t vptr_impl, vptr_undefined, vptr_other;
static tdb_mem mem; /* this process's memory */

/* The made-up layout. */
typedef struct fake_impl {
    uint64_t vptr;
    uint64_t storage;
    uint64_t autograd;
    int64_t sizes[4]; /* up to 4 inline; beyond, sizes[0] points to sizes then strides */
    int64_t strides[4];
    int64_t dim;
    int64_t numel;
    int64_t offset;
    uint8_t dtype;
    int8_t device_type, device_index;
} fake_impl;
typedef struct fake_storage {
    uint64_t pad, data;
    int64_t nbytes;
} fake_storage;
typedef struct fake_meta {
    uint64_t pad, grad_fn;
    uint8_t requires_grad;
} fake_meta;

static const struct {
    const char *name;
    int code, size;
} dtypes[] = {{"uint8", 0, 1},   {"int8", 1, 1},      {"int16", 2, 2},     {"int32", 3, 4},
              {"int64", 4, 8},   {"float16", 5, 2},   {"float32", 6, 4},   {"float64", 7, 8},
              {"complex64", 9, 8}, {"complex128", 10, 16}, {"bool", 11, 1}, {"bfloat16", 15, 2},
              {"complex32", 8, 4}};

/* The made-up layout as a tdb_tensor_layout, and the classes' vptrs. */
static void fake_tensor_setup(void)
{
    tdb_tensor_layout_init(&L);
    strcpy(L.source, "test");
    strcpy(L.impl_class, "N3c1010TensorImplE");
    strcpy(L.undefined_class, "N3c1019UndefinedTensorImplE");
    L.dim_off = offsetof(fake_impl, dim), L.dim_size = 8;
    L.sizes_off = offsetof(fake_impl, sizes), L.strides_off = offsetof(fake_impl, strides);
    L.inline_max = 4, L.ool_strides_at_dim = 1;
    L.offset_off = offsetof(fake_impl, offset), L.numel_off = offsetof(fake_impl, numel);
    L.dtype_off = offsetof(fake_impl, dtype), L.dtype_size = 1;
    L.device_off = offsetof(fake_impl, device_type), L.device_size = 1;
    L.device_index_off = offsetof(fake_impl, device_index);
    L.storage_off = offsetof(fake_impl, storage);
    L.storage_data_off = offsetof(fake_storage, data), L.storage_nbytes_off = offsetof(fake_storage, nbytes);
    L.autograd_off = offsetof(fake_impl, autograd);
    L.autograd_requires_grad_off = offsetof(fake_meta, requires_grad);
    L.autograd_grad_fn_off = offsetof(fake_meta, grad_fn);
    L.pyobj_impl_off = 16;
    for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++) {
        L.dtypes[i].code = dtypes[i].code;
        strcpy(L.dtypes[i].name, dtypes[i].name);
        L.dtypes[i].itemsize = dtypes[i].size;
        L.n_dtypes++;
    }
    L.devices[0].code = 0, strcpy(L.devices[0].name, "cpu");
    L.devices[1].code = 14, strcpy(L.devices[1].name, "meta");
    L.devices[2].code = 1, strcpy(L.devices[2].name, "cuda");
    L.n_devices = 3;
    L.scalar_tag_off = 0, L.scalar_value_off = 16, L.scalar_size = 32;
    L.scalar_tags[TDB_SCALAR_DOUBLE] = 0, L.scalar_tags[TDB_SCALAR_INT] = 1;
    L.scalar_tags[TDB_SCALAR_COMPLEX] = 2, L.scalar_tags[TDB_SCALAR_BOOL] = 3;
    L.opt_scalar_flag_off = 0, L.opt_scalar_value_off = 16;

    uint64_t base = fake_class("N3c1010TensorImplE");
    vptr_impl = fake_vtable(base, 8);
    vptr_undefined = fake_vtable(fake_si_class("N3c1019UndefinedTensorImplE", base), 8);
    vptr_other = fake_vtable(fake_class("N5torch8autograd4NodeE"), 8);
}

static __attribute__((unused)) int code_of(const char *dtype)
{
    for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
        if (!strcmp(dtypes[i].name, dtype))
            return dtypes[i].code;
    abort();
}

/* A CPU tensor over DATA (NBYTES bytes). */
static __attribute__((unused)) fake_impl *make(int dim, const int64_t *sizes, const int64_t *strides, int64_t offset,
                       const char *dtype, const void *data, int64_t nbytes)
{
    fake_impl *t = fake_alloc(sizeof(*t));
    fake_storage *s = fake_alloc(sizeof(*s));
    t->vptr = vptr_impl;
    t->storage = addr_of(s);
    s->data = data ? addr_of(data) : 0;
    s->nbytes = nbytes;
    t->dim = dim;
    t->numel = 1;
    if (dim == 0) {
        /* no dimensions */
    } else if (dim <= 4) {
        memcpy(t->sizes, sizes, 8 * (size_t)dim);
        memcpy(t->strides, strides, 8 * (size_t)dim);
    } else {
        int64_t *arr = fake_alloc(16 * (size_t)dim);
        memcpy(arr, sizes, 8 * (size_t)dim);
        memcpy(arr + dim, strides, 8 * (size_t)dim);
        t->sizes[0] = (int64_t)addr_of(arr);
    }
    for (int d = 0; d < dim; d++)
        t->numel *= sizes[d];
    t->offset = offset;
    t->dtype = (uint8_t)code_of(dtype);
    t->device_type = 0;
    t->device_index = -1;
    return t;
}

/* --- the DWARF path, with gdb's answers scripted ---------------------- */

static const struct {
    const char *expr;
    int64_t v;
} answers[] = {
    {"(long)&((tt_tensor *)0)->ndim", 24},     {"(long)sizeof(((tt_tensor *)0)->ndim)", 4},
    {"(long)&((tt_tensor *)0)->shape", 32},    {"(long)&((tt_tensor *)0)->strides", 96},
    {"(long)sizeof(((tt_tensor *)0)->shape)", 64}, {"(long)sizeof(((tt_tensor *)0)->shape[0])", 8},
    {"(long)&((tt_tensor *)0)->offset", 16},   {"(long)&((tt_tensor *)0)->dtype", 160},
    {"(long)sizeof(((tt_tensor *)0)->dtype)", 4}, {"(long)&((tt_tensor *)0)->device", 164},
    {"(long)sizeof(((tt_tensor *)0)->device)", 4}, {"(long)&((tt_tensor *)0)->storage", 8},
    {"(long)&((tt_storage *)0)->data", 8},     {"(long)&((tt_storage *)0)->nbytes", 16},
    {"(long)sizeof(((tt_tensor *)0)->offset)", 8}, {"(long)&((tt_pytensor *)0)->cdata", 16},
    {"(long)TT_FLOAT64", 0}, {"(long)TT_INT64", 1}, {"(long)TT_CPU", 0}, {"(long)TT_META", 1},
};

static __attribute__((unused)) int scripted(void *ctx, const char *expr, int64_t *out, tdb_error *err)
{
    int *asked = ctx;
    (*asked)++;
    for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++)
        if (!strcmp(answers[i].expr, expr)) {
            *out = answers[i].v;
            return 0;
        }
    tdb_error_set(err, 0, "No symbol \"%s\" in current context.", expr);
    return -1;
}

/* A one-dimensional tinytensor tensor of two 8-byte values V0, V1 of
 * dtype CODE (TT_FLOAT64 0, TT_INT64 1), laid out as the scripted answers
 * say: storage at 8, offset 16, ndim at 24, shape at 32, strides at 96,
 * dtype at 160; the storage's data at 8, nbytes at 16. */
static __attribute__((unused)) uint64_t fake_tt_tensor(int code, const void *v0, const void *v1)
{
    unsigned char *t = fake_alloc(168);
    uint64_t *storage = fake_alloc(24);
    unsigned char *data = fake_alloc(16);
    int32_t ndim = 1;
    int64_t size = 2, stride = 1;
    memcpy(data, v0, 8);
    memcpy(data + 8, v1, 8);
    storage[1] = addr_of(data), storage[2] = 16;
    uint64_t sp = addr_of(storage);
    memcpy(t + 8, &sp, 8);
    memcpy(t + 24, &ndim, 4);
    memcpy(t + 32, &size, 8);
    memcpy(t + 96, &stride, 8);
    t[160] = (unsigned char)code;
    return addr_of(t);
}

/* cmocka group setup and teardown for the tests that use these. */
static __attribute__((unused)) int fake_tensor_group_setup(void **state)
{
    tdb_mem_init(&mem, getpid());
    fake_tensor_setup();
    return 0;
}

static __attribute__((unused)) int fake_tensor_group_teardown(void **state)
{
    fake_reset();
    tdb_mem_close(&mem);
    return 0;
}

#endif

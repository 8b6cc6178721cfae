/*
 * tt_tensor.c: see tt_tensor.h.  Mirrors c10/core/TensorImpl.cpp,
 * aten/src/ATen/EmptyTensor.cpp, aten/src/ATen/native/TensorShape.cpp
 * (as_strided, expand, transpose) and aten/src/ATen/ExpandUtils.cpp.
 */
#include "tt_tensor.h"
#include "tt_iter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dtype_names[TT_DTYPE_COUNT] = {"float64", "int64"};
static const char *const device_names[TT_DEVICE_COUNT] = {"cpu", "meta"};

const char *tt_dtype_name(tt_dtype dtype) { return dtype_names[dtype]; }
const char *tt_device_name(tt_device device) { return device_names[device]; }

/* The index of NAME in NAMES[0..N), or -1. */
static int lookup_name(const char *name, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

int tt_dtype_from_name(const char *name, tt_dtype *out, tt_error *err)
{
    int i = lookup_name(name, dtype_names, TT_DTYPE_COUNT);

    if (i < 0) {
        tt_error_set(err, TT_ERR_RUNTIME, "unknown dtype '%s' (tinytensor has float64 and int64)", name);
        return -1;
    }
    *out = (tt_dtype)i;
    return 0;
}

int tt_device_from_name(const char *name, tt_device *out, tt_error *err)
{
    int i = lookup_name(name, device_names, TT_DEVICE_COUNT);

    if (i < 0) {
        tt_error_set(err, TT_ERR_RUNTIME, "unknown device '%s' (tinytensor has cpu and meta)", name);
        return -1;
    }
    *out = (tt_device)i;
    return 0;
}

size_t tt_dtype_size(tt_dtype dtype)
{
    return dtype == TT_FLOAT64 ? sizeof(double) : sizeof(int64_t);
}

tt_scalar tt_scalar_from_double(double d) { return (tt_scalar){0, (int64_t)d, d}; }
tt_scalar tt_scalar_from_int64(int64_t i) { return (tt_scalar){1, i, (double)i}; }
double tt_scalar_to_double(tt_scalar s) { return s.is_integral ? (double)s.i : s.d; }
int64_t tt_scalar_to_int64(tt_scalar s) { return s.is_integral ? s.i : (int64_t)s.d; }

char *tt_shape_str(const int64_t *shape, int ndim, char *buf, size_t size)
{
    size_t len = 0;

    len += (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", d ? ", " : "",
                                (long long)shape[d]);
    if (len < size)
        snprintf(buf + len, size - len, "]");
    return buf;
}

/* Check a shape given by a caller and count its elements. */
static int check_shape(const int64_t *shape, int ndim, int64_t *out_numel, tt_error *err)
{
    int64_t numel = 1;

    if (ndim < 0 || ndim > TT_MAX_DIMS) {
        tt_error_set(err, TT_ERR_RUNTIME, "cannot make a %d-dimensional tensor: tinytensor has at most %d dimensions",
                     ndim, TT_MAX_DIMS);
        return -1;
    }
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) {
            tt_error_set(err, TT_ERR_RUNTIME, "cannot make a tensor with size %lld in dimension %d: sizes are >= 0",
                         (long long)shape[d], d);
            return -1;
        }
        if (shape[d] && numel > (int64_t)(SIZE_MAX / 16) / shape[d]) {
            tt_error_set(err, TT_ERR_NOMEM, "cannot make a tensor that large: too many elements");
            return -1;
        }
        numel *= shape[d];
    }
    *out_numel = numel;
    return 0;
}

static void contiguous_strides(const int64_t *shape, int ndim, int64_t *strides)
{
    int64_t stride = 1;

    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= shape[d] > 1 ? shape[d] : 1;
    }
}

/* A tensor header over STORAGE (whose reference it takes). */
static tt_tensor *tensor_new(tt_storage *storage, const int64_t *shape,
                             const int64_t *strides, int ndim, int64_t offset,
                             tt_dtype dtype, tt_device device, tt_error *err)
{
    tt_tensor *t = calloc(1, sizeof(*t));

    if (!t) {
        tt_error_set(err, TT_ERR_NOMEM, "cannot allocate a tensor: out of memory");
        return NULL;
    }
    t->refcount = 1;
    t->storage = storage;
    t->offset = offset;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
        t->strides[d] = strides[d];
    }
    t->dtype = dtype;
    t->device = device;
    return t;
}

static tt_tensor *tensor_with_new_storage(void *data, int owns_data, const int64_t *shape,
                                          int ndim, int64_t numel, tt_dtype dtype,
                                          tt_device device, tt_error *err)
{
    int64_t strides[TT_MAX_DIMS];
    tt_storage *storage = calloc(1, sizeof(*storage));
    tt_tensor *t;

    if (!storage) {
        tt_error_set(err, TT_ERR_NOMEM, "cannot allocate a tensor: out of memory");
        return NULL;
    }
    storage->refcount = 1;
    storage->data = data;
    storage->nbytes = (size_t)numel * tt_dtype_size(dtype);
    storage->owns_data = owns_data;
    contiguous_strides(shape, ndim, strides);
    if (!(t = tensor_new(storage, shape, strides, ndim, 0, dtype, device, err)))
        free(storage);
    return t;
}

tt_tensor *tt_empty(const int64_t *shape, int ndim, tt_dtype dtype,
                    tt_device device, tt_error *err)
{
    int64_t numel;
    void *data = NULL;
    tt_tensor *t;

    if (check_shape(shape, ndim, &numel, err) < 0)
        return NULL;
    if (device == TT_CPU) {
        /* malloc(0) may return NULL: always ask for at least one element. */
        data = malloc((size_t)(numel ? numel : 1) * tt_dtype_size(dtype));
        if (!data) {
            tt_error_set(err, TT_ERR_NOMEM, "cannot allocate %lld elements: out of memory", (long long)numel);
            return NULL;
        }
    }
    if (!(t = tensor_with_new_storage(data, 1, shape, ndim, numel, dtype, device, err)))
        free(data);
    return t;
}

tt_tensor *tt_scalar_tensor(tt_scalar value, tt_dtype dtype, tt_device device,
                            tt_error *err)
{
    tt_tensor *t = tt_empty(NULL, 0, dtype, device, err);

    if (!t || device == TT_META)
        return t;
    if (dtype == TT_FLOAT64)
        *(double *)tt_data(t) = tt_scalar_to_double(value);
    else
        *(int64_t *)tt_data(t) = tt_scalar_to_int64(value);
    return t;
}

tt_tensor *tt_from_blob(void *data, const int64_t *shape, int ndim,
                        tt_dtype dtype, tt_error *err)
{
    int64_t numel;

    if (!data) {
        tt_error_set(err, TT_ERR_RUNTIME, "cannot wrap address 0: it is a null pointer");
        return NULL;
    }
    if (check_shape(shape, ndim, &numel, err) < 0)
        return NULL;
    return tensor_with_new_storage(data, 0, shape, ndim, numel, dtype, TT_CPU, err);
}

tt_tensor *tt_as_strided(const tt_tensor *t, const int64_t *shape,
                         const int64_t *strides, int ndim, int64_t offset,
                         tt_error *err)
{
    int64_t numel, last = offset;
    tt_tensor *view;

    if (check_shape(shape, ndim, &numel, err) < 0)
        return NULL;
    /* Every element the view can reach must lie inside the storage. */
    for (int d = 0; d < ndim; d++) {
        if (strides[d] < 0) {
            tt_error_set(err, TT_ERR_RUNTIME, "cannot make a view with stride %lld: strides are >= 0",
                         (long long)strides[d]);
            return NULL;
        }
        if (shape[d] > 0)
            last += (shape[d] - 1) * strides[d];
    }
    if (numel > 0 && (size_t)(last + 1) * tt_dtype_size(t->dtype) > t->storage->nbytes) {
        tt_error_set(err, TT_ERR_RUNTIME, "cannot make a view reaching element %lld of a storage of %zu bytes",
                     (long long)last, t->storage->nbytes);
        return NULL;
    }
    if (!(view = tensor_new(t->storage, shape, strides, ndim, offset, t->dtype, t->device, err)))
        return NULL;
    t->storage->refcount++;
    return view;
}

tt_tensor *tt_expand(const tt_tensor *t, const int64_t *shape, int ndim, tt_error *err)
{
    int64_t strides[TT_MAX_DIMS];
    char have[128], want[128];

    if (ndim < t->ndim)
        goto mismatch;
    for (int d = 0; d < ndim; d++) {
        int src = d - (ndim - t->ndim);  /* T's dimension aligned on the right */

        if (src < 0 || (t->shape[src] == 1 && shape[d] != 1))
            strides[d] = 0;  /* every index reads the same element */
        else if (t->shape[src] == shape[d])
            strides[d] = t->strides[src];
        else
            goto mismatch;
    }
    return tt_as_strided(t, shape, strides, ndim, t->offset, err);

mismatch:
    tt_error_set(err, TT_ERR_RUNTIME, "cannot expand shape %s to %s",
                 tt_shape_str(t->shape, t->ndim, have, sizeof(have)),
                 tt_shape_str(shape, ndim, want, sizeof(want)));
    return NULL;
}

tt_tensor *tt_transpose(const tt_tensor *t, int d0, int d1, tt_error *err)
{
    int64_t shape[TT_MAX_DIMS], strides[TT_MAX_DIMS], tmp;

    if (d0 < 0 || d0 >= t->ndim || d1 < 0 || d1 >= t->ndim) {
        tt_error_set(err, TT_ERR_RUNTIME, "cannot transpose dimensions %d and %d of a %d-dimensional tensor",
                     d0, d1, t->ndim);
        return NULL;
    }
    memcpy(shape, t->shape, sizeof(shape));
    memcpy(strides, t->strides, sizeof(strides));
    tmp = shape[d0], shape[d0] = shape[d1], shape[d1] = tmp;
    tmp = strides[d0], strides[d0] = strides[d1], strides[d1] = tmp;
    return tt_as_strided(t, shape, strides, t->ndim, t->offset, err);
}

static void copy_element(void *dst, tt_dtype dst_type, const void *src, tt_dtype src_type)
{
    if (dst_type == TT_FLOAT64)
        *(double *)dst = src_type == TT_FLOAT64 ? *(const double *)src : (double)*(const int64_t *)src;
    else
        *(int64_t *)dst = src_type == TT_INT64 ? *(const int64_t *)src : (int64_t)*(const double *)src;
}

tt_tensor *tt_copy(const tt_tensor *t, tt_dtype dtype, tt_error *err)
{
    tt_tensor *out = tt_empty(t->shape, t->ndim, dtype, t->device, err);
    tt_tensor *pair[2] = {out, (tt_tensor *)t};
    size_t out_size = tt_dtype_size(dtype), in_size = tt_dtype_size(t->dtype);
    char *dst, *src;
    tt_iter it;

    if (!out || t->device == TT_META)
        return out;
    dst = tt_data(out);
    src = tt_data(t);
    for (tt_iter_init(&it, pair, 2); !tt_iter_done(&it); tt_iter_next(&it))
        copy_element(dst + it.offset[0] * out_size, dtype, src + it.offset[1] * in_size, t->dtype);
    return out;
}

tt_tensor *tt_to_dtype(const tt_tensor *t, tt_dtype dtype, tt_error *err)
{
    if (t->dtype != dtype)
        return tt_copy(t, dtype, err);
    tt_tensor_incref((tt_tensor *)t);
    return (tt_tensor *)t;
}

int tt_broadcast_shapes(const tt_tensor *a, const tt_tensor *b, const char *what,
                        int64_t *out_shape, int *out_ndim, tt_error *err)
{
    int ndim = a->ndim > b->ndim ? a->ndim : b->ndim;
    int64_t shape[TT_MAX_DIMS];
    char sa[128], sb[128];

    /* Walk both shapes from their last dimension. */
    for (int d = ndim - 1, da = a->ndim - 1, db = b->ndim - 1; d >= 0; d--, da--, db--) {
        int64_t size_a = da >= 0 ? a->shape[da] : 1;
        int64_t size_b = db >= 0 ? b->shape[db] : 1;

        if (size_a != size_b && size_a != 1 && size_b != 1) {
            tt_error_set(err, TT_ERR_RUNTIME,
                         "cannot %s shapes %s and %s: sizes %lld and %lld in dimension %d do not broadcast "
                         "(sizes must be equal or one of them 1)", what,
                         tt_shape_str(a->shape, a->ndim, sa, sizeof(sa)),
                         tt_shape_str(b->shape, b->ndim, sb, sizeof(sb)),
                         (long long)size_a, (long long)size_b, d);
            return -1;
        }
        shape[d] = size_a == 1 ? size_b : size_a;
    }
    for (int d = 0; d < ndim; d++)
        out_shape[d] = shape[d];
    *out_ndim = ndim;
    return 0;
}

void tt_tensor_incref(tt_tensor *t)
{
    t->refcount++;
}

void tt_tensor_decref(tt_tensor *t)
{
    if (!t || --t->refcount > 0)
        return;
    if (--t->storage->refcount == 0) {
        if (t->storage->owns_data)
            free(t->storage->data);
        free(t->storage);
    }
    free(t);
}

int64_t tt_numel(const tt_tensor *t)
{
    int64_t n = 1;

    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

void *tt_data(const tt_tensor *t)
{
    if (!t->storage->data)
        return NULL;
    return (char *)t->storage->data + t->offset * (int64_t)tt_dtype_size(t->dtype);
}

/*
 * tt_tensor.h: the tensor, a strided view of reference-counted storage.
 *
 * Mirrors c10/core/TensorImpl.h (sizes, strides, storage offset, dtype,
 * device) and c10/core/StorageImpl.h (the bytes, shared between views).
 * Reference counting is by hand, like c10::intrusive_ptr: every function
 * returning a tt_tensor * returns a new reference, released with
 * tt_tensor_decref().  Not thread-safe: the Python bindings call the core
 * with the GIL held.
 */
#ifndef TT_TENSOR_H
#define TT_TENSOR_H

#include "tt_error.h"

#include <stddef.h>
#include <stdint.h>

#define TT_MAX_DIMS 8

/* c10/core/ScalarType.h */
typedef enum tt_dtype { TT_FLOAT64, TT_INT64, TT_DTYPE_COUNT } tt_dtype;

/* c10/core/DeviceType.h.  A meta tensor has a shape and no data: operators
 * on it only compute the shape of their result (torch's "meta" device). */
typedef enum tt_device { TT_CPU, TT_META, TT_DEVICE_COUNT } tt_device;

/* c10/core/Scalar.h: a number that is either integral or floating. */
typedef struct tt_scalar {
    int is_integral;
    int64_t i;
    double d;
} tt_scalar;

/* c10/core/StorageImpl.h */
typedef struct tt_storage {
    int refcount;
    void *data;     /* NULL for meta tensors */
    size_t nbytes;
    int owns_data;  /* 0 for tt_from_blob(): the memory is the caller's */
} tt_storage;

/* c10/core/TensorImpl.h */
typedef struct tt_tensor {
    int refcount;
    tt_storage *storage;
    int64_t offset;                 /* storage_offset(), in elements */
    int ndim;                       /* 0 for a scalar tensor */
    int64_t shape[TT_MAX_DIMS];     /* sizes() */
    int64_t strides[TT_MAX_DIMS];   /* strides(), in elements */
    tt_dtype dtype;
    tt_device device;
} tt_tensor;

/* Names as the Python side spells them ("float64", "cpu"). */
const char *tt_dtype_name(tt_dtype dtype);
const char *tt_device_name(tt_device device);
/* Parse NAME; 0 and *OUT written on success, -1 with ERR set otherwise. */
int tt_dtype_from_name(const char *name, tt_dtype *out, tt_error *err);
int tt_device_from_name(const char *name, tt_device *out, tt_error *err);
size_t tt_dtype_size(tt_dtype dtype);

tt_scalar tt_scalar_from_double(double d);
tt_scalar tt_scalar_from_int64(int64_t i);
double tt_scalar_to_double(tt_scalar s);
int64_t tt_scalar_to_int64(tt_scalar s);

/* A new contiguous tensor of SHAPE (NDIM dims), uninitialized; no data for
 * TT_META.  at::empty (aten/src/ATen/EmptyTensor.cpp). */
tt_tensor *tt_empty(const int64_t *shape, int ndim, tt_dtype dtype,
                    tt_device device, tt_error *err);

/* A 0-dimensional tensor holding VALUE (no data for TT_META).
 * at::scalar_tensor; the bindings wrap Python numbers with it (torch's
 * wrapped_scalar_tensor). */
tt_tensor *tt_scalar_tensor(tt_scalar value, tt_dtype dtype, tt_device device,
                            tt_error *err);

/* A CPU tensor over memory the caller owns and keeps alive; nothing is
 * checked beyond DATA being non-NULL, as with at::from_blob
 * (aten/src/ATen/templates/Functions.h). */
tt_tensor *tt_from_blob(void *data, const int64_t *shape, int ndim,
                        tt_dtype dtype, tt_error *err);

/* A view of T's storage with another shape, strides and offset: shares the
 * data.  at::as_strided (aten/src/ATen/native/TensorShape.cpp). */
tt_tensor *tt_as_strided(const tt_tensor *t, const int64_t *shape,
                         const int64_t *strides, int ndim, int64_t offset,
                         tt_error *err);
/* T broadcast to SHAPE: size-1 (or missing leading) dimensions get stride 0.
 * at::expand. */
tt_tensor *tt_expand(const tt_tensor *t, const int64_t *shape, int ndim,
                     tt_error *err);
/* T with dimensions D0 and D1 swapped (a view).  at::transpose. */
tt_tensor *tt_transpose(const tt_tensor *t, int d0, int d1, tt_error *err);
/* A new contiguous copy of T converted to DTYPE.  at::_to_copy. */
tt_tensor *tt_copy(const tt_tensor *t, tt_dtype dtype, tt_error *err);
/* T itself (a new reference) when it already has DTYPE, else tt_copy(). */
tt_tensor *tt_to_dtype(const tt_tensor *t, tt_dtype dtype, tt_error *err);

/* The shape two shapes broadcast to, numpy-style: aligned on the right,
 * sizes equal or one of them 1.  at::infer_size (ExpandUtils.cpp).  WHAT
 * names the operation in the error ("add").  0 on success. */
int tt_broadcast_shapes(const tt_tensor *a, const tt_tensor *b,
                        const char *what, int64_t *out_shape, int *out_ndim,
                        tt_error *err);

void tt_tensor_incref(tt_tensor *t);
/* Drop a reference; frees T (and its storage, when the last) at zero.
 * Accepts NULL. */
void tt_tensor_decref(tt_tensor *t);

int64_t tt_numel(const tt_tensor *t);
/* Address of element [0, 0, ...]; NULL for meta tensors. */
void *tt_data(const tt_tensor *t);
/* "[2, 3]" into BUF (for messages); returns BUF. */
char *tt_shape_str(const int64_t *shape, int ndim, char *buf, size_t size);

#endif

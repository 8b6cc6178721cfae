/*
 * tt_native_meta.c: the meta kernels, which only work out shapes.
 *
 * Mirrors the TORCH_META_FUNC halves of torch's structured kernels
 * (aten/src/ATen/native/BinaryOps.cpp, LinearAlgebra.cpp): a meta tensor
 * has a shape and no data, so running a model on "meta" checks every shape
 * without computing anything.
 */
#include "tt_iter.h"
#include "tt_native.h"

/* The result of an element-wise binary operator: the broadcast shape. */
static tt_tensor *meta_binary_op(const tt_tensor *self, const tt_tensor *other, const char *what,
                                 tt_error *err)
{
    tt_tensor *a, *b, *out;

    if (tt_iter_binary_op(self, other, what, TT_META, &a, &b, &out, err) < 0)
        return NULL;
    tt_tensor_decref(a);
    tt_tensor_decref(b);
    return out;
}

tt_tensor *tt_meta_add(const tt_tensor *self, const tt_tensor *other,
                       tt_scalar alpha, tt_error *err)
{
    return meta_binary_op(self, other, "add", err);
}

tt_tensor *tt_meta_mul(const tt_tensor *self, const tt_tensor *other, tt_error *err)
{
    return meta_binary_op(self, other, "multiply", err);
}

int tt_matmul_shape(const tt_tensor *self, const tt_tensor *other,
                    int64_t *out_shape, int *out_ndim, tt_error *err)
{
    /* A 1-D left operand is a row, a 1-D right operand a column: the
     * sizes that meet in the middle are the last of SELF and the first of
     * OTHER. */
    int64_t inner_self, inner_other;
    int n = 0;
    char sa[128], sb[128];

    if (self->ndim < 1 || self->ndim > 2 || other->ndim < 1 || other->ndim > 2) {
        tt_error_set(err, TT_ERR_RUNTIME, "cannot matmul %d-D and %d-D tensors: tinytensor's matmul takes 1-D and 2-D ones",
                     self->ndim, other->ndim);
        return -1;
    }
    inner_self = self->shape[self->ndim - 1];
    inner_other = other->shape[0];
    if (inner_self != inner_other) {
        tt_error_set(err, TT_ERR_RUNTIME, "cannot matmul shapes %s and %s: inner sizes %lld and %lld differ",
                     tt_shape_str(self->shape, self->ndim, sa, sizeof(sa)),
                     tt_shape_str(other->shape, other->ndim, sb, sizeof(sb)),
                     (long long)inner_self, (long long)inner_other);
        return -1;
    }
    if (self->ndim == 2)
        out_shape[n++] = self->shape[0];
    if (other->ndim == 2)
        out_shape[n++] = other->shape[1];
    *out_ndim = n;
    return 0;
}

tt_tensor *tt_meta_matmul(const tt_tensor *self, const tt_tensor *other, tt_error *err)
{
    int64_t shape[2];
    int ndim;

    if (tt_matmul_shape(self, other, shape, &ndim, err) < 0)
        return NULL;
    return tt_empty(shape, ndim, self->dtype, TT_META, err);
}

int tt_meta_fill_(tt_tensor *self, tt_scalar value, tt_error *err)
{
    return 0;  /* nothing to write */
}

/*
 * tt_native_cpu.c: the CPU kernels, where the arithmetic finally happens.
 *
 * In torch, at::_ops::add_Tensor::call reaches the CPU implementation of
 * add (aten/src/ATen/native/BinaryOps.cpp), which builds a TensorIterator
 * and calls add_stub, whose CPU kernel (add_kernel in
 * aten/src/ATen/native/cpu/BinaryOpsKernel.cpp) runs the element loop
 * `a + alpha * b`, vectorized and per dtype.  Here each kernel does the
 * same in a few lines: set up (broadcast, allocate), pick the loop for the
 * dtype, run it.  Everything is -O0 and unvectorized so that a debugger
 * can stop on any line, and each dtype's loop is written out (where torch
 * instantiates a template) because a loop inside a macro is one line to a
 * debugger.  Lines marked "TOUR:" are where the samples' tour
 * and tests put breakpoints.
 */
#include "tt_iter.h"
#include "tt_native.h"

/* ---- add: self + alpha * other ---- */

static void add_kernel_float64(tt_tensor *out, tt_tensor *a, tt_tensor *b, double alpha)
{
    tt_tensor *operands[3] = {out, a, b};
    double *o = tt_data(out);
    const double *x = tt_data(a), *y = tt_data(b);
    tt_iter it;

    for (tt_iter_init(&it, operands, 3); !tt_iter_done(&it); tt_iter_next(&it))
        o[it.offset[0]] = x[it.offset[1]] + alpha * y[it.offset[2]];  /* TOUR: add loop */
}

static void add_kernel_int64(tt_tensor *out, tt_tensor *a, tt_tensor *b, int64_t alpha)
{
    tt_tensor *operands[3] = {out, a, b};
    int64_t *o = tt_data(out);
    const int64_t *x = tt_data(a), *y = tt_data(b);
    tt_iter it;

    for (tt_iter_init(&it, operands, 3); !tt_iter_done(&it); tt_iter_next(&it))
        o[it.offset[0]] = x[it.offset[1]] + alpha * y[it.offset[2]];
}

tt_tensor *tt_native_add(const tt_tensor *self, const tt_tensor *other,
                         tt_scalar alpha, tt_error *err)
{
    tt_tensor *a, *b, *out;

    /* TensorIterator::binary_op: broadcast, expand, allocate the result. */
    if (tt_iter_binary_op(self, other, "add", TT_CPU, &a, &b, &out, err) < 0)
        return NULL;
    if (out->dtype == TT_FLOAT64)  /* AT_DISPATCH_ALL_TYPES */
        add_kernel_float64(out, a, b, tt_scalar_to_double(alpha));  /* TOUR: add kernel call */
    else
        add_kernel_int64(out, a, b, tt_scalar_to_int64(alpha));
    tt_tensor_decref(a);
    tt_tensor_decref(b);
    return out;
}

/* ---- mul: self * other ---- */

static void mul_kernel_float64(tt_tensor *out, tt_tensor *a, tt_tensor *b)
{
    tt_tensor *operands[3] = {out, a, b};
    double *o = tt_data(out);
    const double *x = tt_data(a), *y = tt_data(b);
    tt_iter it;

    for (tt_iter_init(&it, operands, 3); !tt_iter_done(&it); tt_iter_next(&it))
        o[it.offset[0]] = x[it.offset[1]] * y[it.offset[2]];
}

static void mul_kernel_int64(tt_tensor *out, tt_tensor *a, tt_tensor *b)
{
    tt_tensor *operands[3] = {out, a, b};
    int64_t *o = tt_data(out);
    const int64_t *x = tt_data(a), *y = tt_data(b);
    tt_iter it;

    for (tt_iter_init(&it, operands, 3); !tt_iter_done(&it); tt_iter_next(&it))
        o[it.offset[0]] = x[it.offset[1]] * y[it.offset[2]];
}

tt_tensor *tt_native_mul(const tt_tensor *self, const tt_tensor *other, tt_error *err)
{
    tt_tensor *a, *b, *out;

    if (tt_iter_binary_op(self, other, "multiply", TT_CPU, &a, &b, &out, err) < 0)
        return NULL;
    if (out->dtype == TT_FLOAT64)
        mul_kernel_float64(out, a, b);
    else
        mul_kernel_int64(out, a, b);
    tt_tensor_decref(a);
    tt_tensor_decref(b);
    return out;
}

/* ---- matmul ---- */

/* A 1-D tensor as a 1xK row (the left operand) or a Kx1 column (the right
 * one), a 2-D one as it is: at::native::matmul does the same with
 * unsqueeze(0) and unsqueeze(-1), then calls mm. */
static tt_tensor *as_matrix(const tt_tensor *t, int column, tt_error *err)
{
    int64_t shape[2], strides[2];

    if (t->ndim == 2)
        return tt_as_strided(t, t->shape, t->strides, 2, t->offset, err);
    shape[0] = column ? t->shape[0] : 1;
    shape[1] = column ? 1 : t->shape[0];
    strides[0] = column ? t->strides[0] : 0;
    strides[1] = column ? 0 : t->strides[0];
    return tt_as_strided(t, shape, strides, 2, t->offset, err);
}

/* C = A B, the textbook triple loop over strided matrices.  torch calls a
 * BLAS gemm here (aten/src/ATen/native/cpu/BlasKernel.cpp has the plain
 * fallback). */
static void mm_kernel_float64(tt_tensor *c, const tt_tensor *a, const tt_tensor *b)
{
    const double *A = tt_data(a), *B = tt_data(b);
    double *C = tt_data(c);
    int64_t n = a->shape[0], k = a->shape[1], m = b->shape[1];

    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < m; j++) {
            double acc = 0;

            for (int64_t p = 0; p < k; p++)
                acc += A[i * a->strides[0] + p * a->strides[1]] *
                       B[p * b->strides[0] + j * b->strides[1]];  /* TOUR: matmul inner loop */
            C[i * c->strides[0] + j * c->strides[1]] = acc;
        }
    }
}

tt_tensor *tt_native_matmul(const tt_tensor *self, const tt_tensor *other, tt_error *err)
{
    int64_t shape[2], mm_shape[2];
    int ndim;
    tt_tensor *a = NULL, *b = NULL, *c = NULL, *out = NULL;

    if (tt_matmul_shape(self, other, shape, &ndim, err) < 0)
        return NULL;
    if (!(a = as_matrix(self, 0, err)) || !(b = as_matrix(other, 1, err)))
        goto cleanup;
    mm_shape[0] = a->shape[0];
    mm_shape[1] = b->shape[1];
    if (!(c = tt_empty(mm_shape, 2, TT_FLOAT64, TT_CPU, err)))
        goto cleanup;
    mm_kernel_float64(c, a, b);
    /* The n x m result, seen with the 0-, 1- or 2-D shape matmul returns:
     * same elements, same order. */
    out = tt_as_strided(c, shape, c->strides + (2 - ndim), ndim, 0, err);
cleanup:
    tt_tensor_decref(a);
    tt_tensor_decref(b);
    tt_tensor_decref(c);
    return out;
}

/* ---- sum ---- */

tt_tensor *tt_native_sum(const tt_tensor *self, tt_error *err)
{
    tt_tensor *operands[1] = {(tt_tensor *)self};
    tt_tensor *out = tt_empty(NULL, 0, self->dtype, TT_CPU, err);
    tt_iter it;

    if (!out)
        return NULL;
    if (self->dtype == TT_FLOAT64) {
        const double *x = tt_data(self);
        double acc = 0;

        for (tt_iter_init(&it, operands, 1); !tt_iter_done(&it); tt_iter_next(&it))
            acc += x[it.offset[0]];  /* TOUR: sum loop */
        *(double *)tt_data(out) = acc;
    } else {
        const int64_t *x = tt_data(self);
        int64_t acc = 0;

        for (tt_iter_init(&it, operands, 1); !tt_iter_done(&it); tt_iter_next(&it))
            acc += x[it.offset[0]];
        *(int64_t *)tt_data(out) = acc;
    }
    return out;
}

/* ---- fill_ ---- */

int tt_native_fill_(tt_tensor *self, tt_scalar value, tt_error *err)
{
    tt_tensor *operands[1] = {self};
    tt_iter it;

    if (self->dtype == TT_FLOAT64) {
        double *x = tt_data(self), v = tt_scalar_to_double(value);

        for (tt_iter_init(&it, operands, 1); !tt_iter_done(&it); tt_iter_next(&it))
            x[it.offset[0]] = v;
    } else {
        int64_t *x = tt_data(self), v = tt_scalar_to_int64(value);

        for (tt_iter_init(&it, operands, 1); !tt_iter_done(&it); tt_iter_next(&it))
            x[it.offset[0]] = v;
    }
    return 0;
}

/* ---- apply_: a C loop that calls back whoever asked ---- */

int tt_apply_(tt_tensor *t, tt_apply_fn fn, void *ctx, tt_error *err)
{
    tt_tensor *operands[1] = {t};
    char *data = tt_data(t);
    size_t size = tt_dtype_size(t->dtype);
    tt_iter it;

    if (t->device != TT_CPU) {
        tt_error_set(err, TT_ERR_RUNTIME, "cannot apply_ a function to a %s tensor: it has no data on the cpu",
                     tt_device_name(t->device));
        return -1;
    }
    for (tt_iter_init(&it, operands, 1); !tt_iter_done(&it); tt_iter_next(&it)) {
        if (fn(t->dtype, data + it.offset[0] * (int64_t)size, ctx) < 0) {  /* TOUR: apply callback */
            tt_error_set(err, TT_ERR_CALLBACK, "the function given to apply_ failed");
            return -1;
        }
    }
    return 0;
}

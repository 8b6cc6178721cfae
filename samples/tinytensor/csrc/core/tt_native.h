/*
 * tt_native.h: the kernels the dispatcher routes to.
 *
 * torch's structured kernels come in two halves: a meta function that
 * checks the arguments and works out the result's shape
 * (TORCH_META_FUNC(add_Tensor) in aten/src/ATen/native/BinaryOps.cpp) and
 * an implementation that computes it, per device (TORCH_IMPL_FUNC and the
 * CPU loops in aten/src/ATen/native/cpu/BinaryOpsKernel.cpp).  Here the
 * tt_meta_* kernels are the first half, registered for the "meta" device,
 * and the tt_native_* CPU kernels call the same shape logic first.
 *
 * Kernels receive arguments that already have the dtype of their dispatch
 * key (tt_ops.c converts them), and return new references or NULL/-1 with
 * ERR set.
 */
#ifndef TT_NATIVE_H
#define TT_NATIVE_H

#include "tt_tensor.h"

/* CPU (tt_native_cpu.c) */

/* self + alpha * other, broadcast.  at::native add (BinaryOps.cpp). */
tt_tensor *tt_native_add(const tt_tensor *self, const tt_tensor *other,
                         tt_scalar alpha, tt_error *err);
/* self * other, broadcast.  at::native mul. */
tt_tensor *tt_native_mul(const tt_tensor *self, const tt_tensor *other, tt_error *err);
/* Matrix product of 1-D and 2-D tensors (dot, mv, vm, mm), float64.
 * at::native::matmul (aten/src/ATen/native/LinearAlgebra.cpp). */
tt_tensor *tt_native_matmul(const tt_tensor *self, const tt_tensor *other, tt_error *err);
/* The sum of all elements, as a 0-dimensional tensor.  at::native::sum
 * (ReduceOps.cpp). */
tt_tensor *tt_native_sum(const tt_tensor *self, tt_error *err);
/* Set every element to VALUE, in place.  at::native::fill_ (Fill.cpp). */
int tt_native_fill_(tt_tensor *self, tt_scalar value, tt_error *err);

/* Meta: shapes only (tt_native_meta.c) */

tt_tensor *tt_meta_add(const tt_tensor *self, const tt_tensor *other,
                       tt_scalar alpha, tt_error *err);
tt_tensor *tt_meta_mul(const tt_tensor *self, const tt_tensor *other, tt_error *err);
tt_tensor *tt_meta_matmul(const tt_tensor *self, const tt_tensor *other, tt_error *err);
int tt_meta_fill_(tt_tensor *self, tt_scalar value, tt_error *err);

/* The shape of matmul(SELF, OTHER), shared by the CPU and meta kernels;
 * 0 on success, -1 with ERR set for unsupported ranks or mismatched inner
 * sizes. */
int tt_matmul_shape(const tt_tensor *self, const tt_tensor *other,
                    int64_t *out_shape, int *out_ndim, tt_error *err);

/* Not an operator: call FN on every element of T, in place, with a pointer
 * to the element (a double or an int64_t, by T's dtype) and CTX.  FN
 * returns 0, or -1 to stop (then tt_apply_ fails with TT_ERR_CALLBACK and
 * FN has reported its own error).  CPU only.  The core of torch's
 * Tensor.apply_ (torch/csrc/utils/tensor_apply.cpp), which calls a Python
 * callable per element; tinytensor's bindings pass such a trampoline. */
typedef int (*tt_apply_fn)(tt_dtype dtype, void *element, void *ctx);
int tt_apply_(tt_tensor *t, tt_apply_fn fn, void *ctx, tt_error *err);

#endif

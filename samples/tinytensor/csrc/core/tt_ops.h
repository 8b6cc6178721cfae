/*
 * tt_ops.h: the entry points every caller uses: one per operator.
 *
 * Mirrors at::_ops (generated into build/aten/src/ATen/Operators.h and
 * Operators_*.cpp): at::_ops::add_Tensor::call(self, other, alpha) finds
 * the operator in the dispatcher, works out the dispatch key from its
 * arguments and calls the kernel registered for it.  torch.add, the
 * Tensor.__add__ binding and C++'s at::add all end up here.
 *
 * Each call returns a new reference (or 0 for in-place ones), or NULL/-1
 * with ERR set: TT_ERR_RUNTIME for bad arguments (shapes, devices),
 * TT_ERR_NOT_IMPLEMENTED when no kernel is registered for the key.
 */
#ifndef TT_OPS_H
#define TT_OPS_H

#include "tt_dispatcher.h"
#include "tt_tensor.h"

/* self + alpha * other, broadcast.  at::_ops::add_Tensor::call. */
tt_tensor *tt_ops_add_call(const tt_tensor *self, const tt_tensor *other,
                           tt_scalar alpha, tt_error *err);
/* self * other, broadcast.  at::_ops::mul_Tensor::call. */
tt_tensor *tt_ops_mul_call(const tt_tensor *self, const tt_tensor *other, tt_error *err);
/* Matrix product (1-D and 2-D).  at::_ops::matmul::call. */
tt_tensor *tt_ops_matmul_call(const tt_tensor *self, const tt_tensor *other, tt_error *err);
/* Sum of all elements, 0-D.  at::_ops::sum::call. */
tt_tensor *tt_ops_sum_call(const tt_tensor *self, tt_error *err);
/* Set every element to VALUE, in place.  at::_ops::fill__Scalar::call. */
int tt_ops_fill__call(tt_tensor *self, tt_scalar value, tt_error *err);

/* The key a binary operator WHAT dispatches on: the tensors' common device
 * (they must agree) and their promoted dtype (equal dtypes stay, mixed ones
 * become float64: c10::promoteTypes for tinytensor's two dtypes). */
int tt_binary_dispatch_key(const tt_tensor *self, const tt_tensor *other,
                           const char *what, tt_dispatch_key *out_key, tt_error *err);

#endif

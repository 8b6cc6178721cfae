/*
 * tt_iter.h: walk the elements of a few same-shaped tensors together.
 *
 * The small cousin of aten/src/ATen/TensorIterator.h: each tensor may have
 * its own strides (0 in a broadcast dimension, swapped in a transpose), and
 * the iterator keeps every tensor's element offset as it walks the shape in
 * row-major order.  The real one also merges dimensions, vectorizes, and
 * splits the work between threads.
 *
 *     tt_iter it;
 *     for (tt_iter_init(&it, tensors, 3); !tt_iter_done(&it); tt_iter_next(&it))
 *         out[it.offset[0]] = a[it.offset[1]] + b[it.offset[2]];
 */
#ifndef TT_ITER_H
#define TT_ITER_H

#include "tt_tensor.h"

#define TT_ITER_MAX 3

typedef struct tt_iter {
    int ntensors;
    int ndim;
    int64_t shape[TT_MAX_DIMS];
    int64_t strides[TT_ITER_MAX][TT_MAX_DIMS];
    int64_t index[TT_MAX_DIMS];   /* the current element's coordinates */
    int64_t offset[TT_ITER_MAX];  /* its offset in each tensor, in elements */
    int64_t remaining;            /* elements left, the current one included */
} tt_iter;

/* Start at element 0 of TENSORS[0..NTENSORS), which all have the shape of
 * TENSORS[0] (expand them first).  Offsets are relative to tt_data(). */
void tt_iter_init(tt_iter *it, tt_tensor *const *tensors, int ntensors);
static inline int tt_iter_done(const tt_iter *it) { return it->remaining <= 0; }
/* Step to the next element. */
void tt_iter_next(tt_iter *it);

/* The setup every element-wise binary operator shares (TensorIterator's
 * binary_op): broadcast SELF and OTHER to one shape, expand both to it and
 * allocate the result on DEVICE, with SELF's dtype.  On success writes new
 * references to *OUT_A, *OUT_B, *OUT_RESULT and returns 0. */
int tt_iter_binary_op(const tt_tensor *self, const tt_tensor *other,
                      const char *what, tt_device device, tt_tensor **out_a,
                      tt_tensor **out_b, tt_tensor **out_result, tt_error *err);

#endif

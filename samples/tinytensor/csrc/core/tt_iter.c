/* tt_iter.c: see tt_iter.h.  Mirrors aten/src/ATen/TensorIterator.cpp. */
#include "tt_iter.h"

void tt_iter_init(tt_iter *it, tt_tensor *const *tensors, int ntensors)
{
    const tt_tensor *first = tensors[0];

    it->ntensors = ntensors;
    it->ndim = first->ndim;
    it->remaining = tt_numel(first);
    for (int d = 0; d < first->ndim; d++) {
        it->shape[d] = first->shape[d];
        it->index[d] = 0;
    }
    for (int t = 0; t < ntensors; t++) {
        it->offset[t] = 0;
        for (int d = 0; d < first->ndim; d++)
            it->strides[t][d] = tensors[t]->strides[d];
    }
}

void tt_iter_next(tt_iter *it)
{
    /* Count up like an odometer: bump the last coordinate; when it wraps,
     * rewind that dimension and carry into the one before. */
    it->remaining--;
    for (int d = it->ndim - 1; d >= 0; d--) {
        it->index[d]++;
        for (int t = 0; t < it->ntensors; t++)
            it->offset[t] += it->strides[t][d];
        if (it->index[d] < it->shape[d])
            return;
        for (int t = 0; t < it->ntensors; t++)
            it->offset[t] -= it->strides[t][d] * it->shape[d];
        it->index[d] = 0;
    }
}

int tt_iter_binary_op(const tt_tensor *self, const tt_tensor *other,
                      const char *what, tt_device device, tt_tensor **out_a,
                      tt_tensor **out_b, tt_tensor **out_result, tt_error *err)
{
    int64_t shape[TT_MAX_DIMS];
    int ndim;
    tt_tensor *a = NULL, *b = NULL, *result = NULL;

    if (tt_broadcast_shapes(self, other, what, shape, &ndim, err) < 0)
        return -1;
    if (!(a = tt_expand(self, shape, ndim, err)) ||
        !(b = tt_expand(other, shape, ndim, err)) ||
        !(result = tt_empty(shape, ndim, self->dtype, device, err))) {
        tt_tensor_decref(a);
        tt_tensor_decref(b);
        return -1;
    }
    *out_a = a;
    *out_b = b;
    *out_result = result;
    return 0;
}

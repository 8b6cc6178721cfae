/*
 * tt_ops.c: see tt_ops.h.  Each tt_ops_*_call does what the generated
 * at::_ops::*::call does: look the operator up once (torch keeps the
 * OperatorHandle in a function-local static too), compute the dispatch
 * key, find the kernel, cast it back to the operator's signature
 * (c10::KernelFunction::call) and call it.
 */
#include "tt_ops.h"

/* Kernel signatures, one per operator (its "schema"). */
typedef tt_tensor *(*add_fn)(const tt_tensor *, const tt_tensor *, tt_scalar, tt_error *);
typedef tt_tensor *(*binary_fn)(const tt_tensor *, const tt_tensor *, tt_error *);
typedef tt_tensor *(*unary_fn)(const tt_tensor *, tt_error *);
typedef int (*fill_fn)(tt_tensor *, tt_scalar, tt_error *);

int tt_binary_dispatch_key(const tt_tensor *self, const tt_tensor *other,
                           const char *what, tt_dispatch_key *out_key, tt_error *err)
{
    if (self->device != other->device) {
        tt_error_set(err, TT_ERR_RUNTIME, "cannot %s a %s tensor and a %s tensor: both must be on the same device",
                     what, tt_device_name(self->device), tt_device_name(other->device));
        return -1;
    }
    out_key->device = self->device;
    out_key->dtype = self->dtype == other->dtype ? self->dtype : TT_FLOAT64;
    return 0;
}

/* What every binary operator's call does before the kernel: find the
 * operator (once: *OP caches it), compute the key, look up the kernel and
 * convert both operands to the key's dtype (TensorIterator's
 * promote_inputs_to_common_dtype; usually two new references to the
 * operands themselves).  Returns the kernel, with new references in *OUT_A
 * and *OUT_B, or NULL with ERR set. */
static const tt_kernel *dispatch_binary(const tt_operator **op, const char *name, const char *what,
                                        const tt_tensor *self, const tt_tensor *other,
                                        tt_tensor **out_a, tt_tensor **out_b, tt_error *err)
{
    const tt_kernel *kernel;
    tt_dispatch_key key;
    tt_tensor *a, *b;

    if (!*op && !(*op = tt_dispatcher_find_op(name, err)))
        return NULL;
    if (tt_binary_dispatch_key(self, other, what, &key, err) < 0)
        return NULL;
    if (!(kernel = tt_dispatcher_lookup(*op, key, err)))
        return NULL;
    if (!(a = tt_to_dtype(self, key.dtype, err)))
        return NULL;
    if (!(b = tt_to_dtype(other, key.dtype, err))) {
        tt_tensor_decref(a);
        return NULL;
    }
    *out_a = a;
    *out_b = b;
    return kernel;
}

tt_tensor *tt_ops_add_call(const tt_tensor *self, const tt_tensor *other,
                           tt_scalar alpha, tt_error *err)
{
    static const tt_operator *op;
    tt_tensor *a, *b, *out;
    const tt_kernel *kernel = dispatch_binary(&op, "add", "add", self, other, &a, &b, err);

    if (!kernel)
        return NULL;
    out = ((add_fn)kernel->fn)(a, b, alpha, err);  /* TOUR: add dispatch */
    tt_tensor_decref(a);
    tt_tensor_decref(b);
    return out;
}

/* The whole call of a binary operator without extra arguments. */
static tt_tensor *call_binary(const tt_operator **op, const char *name, const char *what,
                              const tt_tensor *self, const tt_tensor *other, tt_error *err)
{
    tt_tensor *a, *b, *out;
    const tt_kernel *kernel = dispatch_binary(op, name, what, self, other, &a, &b, err);

    if (!kernel)
        return NULL;
    out = ((binary_fn)kernel->fn)(a, b, err);
    tt_tensor_decref(a);
    tt_tensor_decref(b);
    return out;
}

tt_tensor *tt_ops_mul_call(const tt_tensor *self, const tt_tensor *other, tt_error *err)
{
    static const tt_operator *op;

    return call_binary(&op, "mul", "multiply", self, other, err);
}

tt_tensor *tt_ops_matmul_call(const tt_tensor *self, const tt_tensor *other, tt_error *err)
{
    static const tt_operator *op;

    return call_binary(&op, "matmul", "matmul", self, other, err);
}

tt_tensor *tt_ops_sum_call(const tt_tensor *self, tt_error *err)
{
    static const tt_operator *op;
    const tt_kernel *kernel;
    tt_dispatch_key key = {self->device, self->dtype};

    if (!op && !(op = tt_dispatcher_find_op("sum", err)))
        return NULL;
    if (!(kernel = tt_dispatcher_lookup(op, key, err)))
        return NULL;
    return ((unary_fn)kernel->fn)(self, err);
}

int tt_ops_fill__call(tt_tensor *self, tt_scalar value, tt_error *err)
{
    static const tt_operator *op;
    const tt_kernel *kernel;
    tt_dispatch_key key = {self->device, self->dtype};

    if (!op && !(op = tt_dispatcher_find_op("fill_", err)))
        return -1;
    if (!(kernel = tt_dispatcher_lookup(op, key, err)))
        return -1;
    return ((fill_fn)kernel->fn)(self, value, err);
}

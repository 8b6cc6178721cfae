/*
 * tt_dispatcher.h: the operator table that routes each call to a kernel.
 *
 * c10's Dispatcher (aten/src/ATen/core/dispatch/Dispatcher.h) keeps one
 * OperatorEntry per operator ("aten::add.Tensor") holding a kernel per
 * DispatchKey (CPU, CUDA, Meta, Autograd...).  at::_ops::add_Tensor::call
 * finds the entry once, computes the key from its arguments and calls the
 * kernel registered for that key: on CPU, at::native's add.  Here an
 * operator is a name ("add") and the key is (device, dtype).  torch picks
 * the dtype later, inside the kernel (AT_DISPATCH_ALL_TYPES); putting it in
 * the key lets the table say plainly which dtypes an operator lacks.
 *
 * Kernels are registered when libtt_core.so is loaded (tt_register.c), as
 * torch's TORCH_LIBRARY_IMPL blocks register theirs from static
 * initializers while 'import torch' maps libtorch_cpu.so.
 */
#ifndef TT_DISPATCHER_H
#define TT_DISPATCHER_H

#include "tt_tensor.h"

#define TT_MAX_OPERATORS 16

/* A kernel with its type erased, as in c10::KernelFunction; each
 * tt_ops_*_call casts it back to its operator's own signature. */
typedef void (*tt_kernel_fn)(void);

typedef struct tt_kernel {
    tt_kernel_fn fn;    /* NULL: nothing registered for this key */
    const char *name;   /* the C function's name, for traces and errors */
} tt_kernel;

/* c10/core/DispatchKey.h, reduced to what tinytensor routes on. */
typedef struct tt_dispatch_key {
    tt_device device;
    tt_dtype dtype;
} tt_dispatch_key;

/* aten/src/ATen/core/dispatch/OperatorEntry.h */
typedef struct tt_operator {
    const char *name;
    tt_kernel kernels[TT_DEVICE_COUNT][TT_DTYPE_COUNT];
} tt_operator;

/* Register FN (called FN_NAME) as OP's kernel for (DEVICE, DTYPE); the
 * operator is created on its first kernel.  OP and FN_NAME must outlive the
 * table (string literals).  -1 with ERR set when the key already has a
 * kernel or the table is full. */
int tt_dispatcher_register(const char *op, tt_device device, tt_dtype dtype,
                           tt_kernel_fn fn, const char *fn_name, tt_error *err);
#define TT_REGISTER(op, device, dtype, fn, err) \
    tt_dispatcher_register((op), (device), (dtype), (tt_kernel_fn)(fn), #fn, (err))

/* Register tinytensor's own kernels (tt_register.c; run when the library
 * is loaded).  -1 with ERR set on the first failure, which only a mistake
 * in that file can cause. */
int tt_register_kernels(tt_error *err);

/* The operator called NAME, or NULL with ERR set ("unknown operator").
 * c10::Dispatcher::findSchemaOrThrow.  Borrowed: the table lives as long
 * as the library. */
const tt_operator *tt_dispatcher_find_op(const char *name, tt_error *err);

/* OP's kernel for KEY, or NULL with ERR set (TT_ERR_NOT_IMPLEMENTED, naming
 * the keys that do have one).  With TINYTENSOR_SHOW_DISPATCH_TRACE=1 in the
 * environment, prints each lookup on stderr, like TORCH_SHOW_DISPATCH_TRACE:
 *   [call] op=[add], key=[cpu/float64], kernel=[tt_native_add] */
const tt_kernel *tt_dispatcher_lookup(const tt_operator *op, tt_dispatch_key key,
                                      tt_error *err);

/* The registered operators, in registration order, for listing them. */
int tt_dispatcher_count(void);
const tt_operator *tt_dispatcher_operator(int i);

#endif

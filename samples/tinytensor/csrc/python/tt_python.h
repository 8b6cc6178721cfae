/*
 * tt_python.h: the Python bindings (libtt_python.so), shared between
 * tt_python_module.c and tt_python_tensor.c.
 *
 * This library is tinytensor's libtorch_python.so: the _C extension module
 * is a stub whose PyInit__C calls tt_init_module() here, as torch's
 * torch/csrc/stub.c calls initModule() in torch/csrc/Module.cpp.  The
 * bindings hold the GIL throughout (torch releases it around kernels; the
 * tinytensor core is not thread-safe, so it does not).
 */
#ifndef TT_PYTHON_H
#define TT_PYTHON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "tt_tensor.h"

/* A Python tensor: a PyObject holding one reference to a core tensor.
 * THPVariable (torch/csrc/autograd/python_variable.h), whose cdata is an
 * at::Tensor. */
typedef struct tt_pytensor {
    PyObject_HEAD
    tt_tensor *cdata;
} tt_pytensor;

/* tinytensor._C.TensorBase, the base of tinytensor.Tensor (torch's
 * torch._C._TensorBase and torch.Tensor). */
extern PyTypeObject tt_pytensor_type;

/* The module object, created once.  torch/csrc/Module.cpp's initModule. */
PyObject *tt_init_module(void);

/* Wrap T (stealing the reference) in the registered Python class
 * (tinytensor.Tensor once tinytensor/__init__.py has set it, else
 * TensorBase).  THPVariable_Wrap.  NULL with an exception on failure. */
PyObject *tt_pytensor_wrap(tt_tensor *t);
/* Set the class tt_pytensor_wrap() uses; CLS must subclass TensorBase.
 * 0, or -1 with an exception. */
int tt_pytensor_set_class(PyObject *cls);
/* Add TensorBase to MODULE.  0, or -1 with an exception. */
int tt_pytensor_add_type(PyObject *module);

static inline int tt_pytensor_check(PyObject *obj)
{
    return PyObject_TypeCheck(obj, &tt_pytensor_type);
}

/* OBJ as a core tensor: a tensor itself, or a Python int or float wrapped
 * as a 0-D tensor on LIKE's device (with LIKE's dtype when the number fits
 * it: 1 added to a float64 tensor is a float64 1, as torch wraps numbers).
 * Returns 1 with a new reference in *OUT; 0 when OBJ is neither (the
 * caller returns NotImplemented); -1 with an exception. */
int tt_python_as_tensor(PyObject *obj, const tt_tensor *like, tt_tensor **out);

/* Raise ERR as a Python exception (RuntimeError, NotImplementedError,
 * MemoryError; a failed callback's exception is already set).  Returns
 * NULL, for 'return tt_python_error(&err);'. */
PyObject *tt_python_error(const tt_error *err);

/* A Python callable applied to every element of T in place, from C:
 * Tensor.apply_ (torch/csrc/utils/tensor_apply.cpp).  0, or -1 with an
 * exception. */
int tt_python_apply_(tt_tensor *t, PyObject *fn);

#endif

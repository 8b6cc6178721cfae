/*
 * tt_python_apply.c: C calling back into Python, once per element.
 *
 * Mirrors torch/csrc/utils/tensor_apply.cpp (Tensor.apply_): the loop is
 * in C (tt_apply_ in the core) and each element goes through a Python
 * callable.  A debugger stopped in the callable's own C calls sees a stack
 * that goes Python -> C -> Python -> C:
 *
 *   tt_native_add            (core: the callable did 'x + 1' on a tensor)
 *   ...                      (bindings, interpreter)
 *   <lambda>                 (Python: the callable)
 *   call_python              (bindings: this file's trampoline)
 *   tt_apply_                (core: the element loop)
 *   tt_python_apply_         (bindings)
 *   <module>                 (Python: t.apply_(fn))
 */
#include "tt_python.h"

#include "tt_native.h"

/* The trampoline tt_apply_ calls for each element: ELEMENT = fn(ELEMENT). */
static int call_python(tt_dtype dtype, void *element, void *ctx)
{
    PyObject *fn = ctx, *arg, *result;

    if (dtype == TT_FLOAT64)
        arg = PyFloat_FromDouble(*(double *)element);
    else
        arg = PyLong_FromLongLong(*(int64_t *)element);
    if (!arg)
        return -1;
    result = PyObject_CallOneArg(fn, arg);  /* TOUR: back into Python */
    Py_DECREF(arg);
    if (!result)
        return -1;
    if (dtype == TT_FLOAT64) {
        double v = PyFloat_AsDouble(result);  /* ints, floats, 1-element tensors */

        if (v == -1.0 && PyErr_Occurred())
            goto fail;
        *(double *)element = v;
    } else {
        long long v;

        if (PyFloat_Check(result)) {
            PyErr_Format(PyExc_TypeError, "apply_(): the function returned a float (%R) for an int64 tensor; "
                         "return an int, or convert the tensor to float64 first", result);
            goto fail;
        }
        v = PyLong_AsLongLong(result);
        if (v == -1 && PyErr_Occurred())
            goto fail;
        *(int64_t *)element = v;
    }
    Py_DECREF(result);
    return 0;
fail:
    Py_DECREF(result);
    return -1;
}

int tt_python_apply_(tt_tensor *t, PyObject *fn)
{
    tt_error err = TT_ERROR_INIT;

    if (tt_apply_(t, call_python, fn, &err) < 0) {
        tt_python_error(&err);
        return -1;
    }
    return 0;
}

/*
 * tt_python_module.c: the tinytensor._C module: factories, dispatcher
 * introspection, and tt_init_module(), which the _C stub's PyInit__C calls.
 *
 * Mirrors torch/csrc/Module.cpp (initModule, which builds torch._C) and
 * the factory bindings torch generates into
 * torch/csrc/autograd/generated/python_torch_functions_*.cpp (torch.ones,
 * torch.tensor...).
 */
#include "tt_python.h"

#include "tt_dispatcher.h"
#include "tt_faults.h"
#include "tt_ops.h"

/* ---- argument helpers ---- */

/* A size given as 3, (2, 3) or [2, 3]. */
static int shape_from(PyObject *size, const char *fname, int64_t *shape, int *ndim)
{
    Py_ssize_t n;

    if (PyLong_Check(size)) {
        if ((shape[0] = PyLong_AsLongLong(size)) == -1 && PyErr_Occurred())
            return -1;
        *ndim = 1;
        return 0;
    }
    if (!PyTuple_Check(size) && !PyList_Check(size)) {
        PyErr_Format(PyExc_TypeError, "%s(): the size must be ints or a sequence of ints, not %.100s", fname,
                     Py_TYPE(size)->tp_name);
        return -1;
    }
    if ((n = PySequence_Fast_GET_SIZE(size)) > TT_MAX_DIMS) {
        PyErr_Format(PyExc_RuntimeError, "%s(): cannot make a %zd-dimensional tensor: tinytensor has at most %d dimensions",
                     fname, n, TT_MAX_DIMS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(size, i);

        if (!PyLong_Check(item)) {
            PyErr_Format(PyExc_TypeError, "%s(): sizes must be ints, not %.100s", fname, Py_TYPE(item)->tp_name);
            return -1;
        }
        if ((shape[i] = PyLong_AsLongLong(item)) == -1 && PyErr_Occurred())
            return -1;
    }
    *ndim = (int)n;
    return 0;
}

/* ones(2, 3) and ones((2, 3)) alike. */
static int shape_from_args(PyObject *args, const char *fname, int64_t *shape, int *ndim)
{
    if (PyTuple_GET_SIZE(args) == 1 && !PyLong_Check(PyTuple_GET_ITEM(args, 0)))
        return shape_from(PyTuple_GET_ITEM(args, 0), fname, shape, ndim);
    return shape_from(args, fname, shape, ndim);
}

/* dtype= and device= keywords; a NULL DTYPE_NAME leaves *DTYPE alone. */
static int parse_options(const char *dtype_name, const char *device_name, tt_dtype *dtype,
                         tt_device *device)
{
    tt_error err = TT_ERROR_INIT;

    if ((dtype_name && tt_dtype_from_name(dtype_name, dtype, &err) < 0) ||
        tt_device_from_name(device_name, device, &err) < 0) {
        tt_python_error(&err);
        return -1;
    }
    return 0;
}

/* A new tensor of SHAPE set to VALUE: at::ones is at::empty then fill_,
 * through the dispatcher. */
static PyObject *new_filled(const int64_t *shape, int ndim, tt_scalar value, tt_dtype dtype,
                            tt_device device)
{
    tt_error err = TT_ERROR_INIT;
    tt_tensor *t = tt_empty(shape, ndim, dtype, device, &err);

    if (!t || tt_ops_fill__call(t, value, &err) < 0) {
        tt_tensor_decref(t);
        return tt_python_error(&err);
    }
    return tt_pytensor_wrap(t);
}

/* ---- factories ---- */

static PyObject *ones_or_zeros(PyObject *args, PyObject *kwargs, const char *fname, const char *format,
                               int64_t value)
{
    static char *kwlist[] = {"dtype", "device", NULL};
    const char *dtype_name = "float64", *device_name = "cpu";
    int64_t shape[TT_MAX_DIMS];
    int ndim, ok;
    tt_dtype dtype;
    tt_device device;
    PyObject *empty = PyTuple_New(0);

    if (!empty)
        return NULL;
    ok = PyArg_ParseTupleAndKeywords(empty, kwargs, format, kwlist, &dtype_name, &device_name);
    Py_DECREF(empty);
    if (!ok || parse_options(dtype_name, device_name, &dtype, &device) < 0)
        return NULL;
    if (shape_from_args(args, fname, shape, &ndim) < 0)
        return NULL;
    return new_filled(shape, ndim, tt_scalar_from_int64(value), dtype, device);
}

/* torch.ones: THPVariable_ones in python_torch_functions. */
static PyObject *tt_python_ones(PyObject *module, PyObject *args, PyObject *kwargs)
{
    return ones_or_zeros(args, kwargs, "ones", "|$ss:ones", 1);
}

static PyObject *tt_python_zeros(PyObject *module, PyObject *args, PyObject *kwargs)
{
    return ones_or_zeros(args, kwargs, "zeros", "|$ss:zeros", 0);
}

static PyObject *tt_python_full(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"size", "fill_value", "dtype", "device", NULL};
    PyObject *size, *fill;
    const char *dtype_name = NULL, *device_name = "cpu";
    int64_t shape[TT_MAX_DIMS];
    int ndim;
    tt_dtype dtype;
    tt_device device;
    tt_scalar value;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$zs:full", kwlist, &size, &fill, &dtype_name,
                                     &device_name))
        return NULL;
    if (PyFloat_Check(fill)) {
        value = tt_scalar_from_double(PyFloat_AS_DOUBLE(fill));
        dtype = TT_FLOAT64;
    } else if (PyLong_Check(fill)) {
        value = tt_scalar_from_int64(PyLong_AsLongLong(fill));
        dtype = TT_INT64;
        if (PyErr_Occurred())
            return NULL;
    } else {
        return PyErr_Format(PyExc_TypeError, "full(): fill_value must be a number, not %.100s",
                            Py_TYPE(fill)->tp_name);
    }
    if (parse_options(dtype_name, device_name, &dtype, &device) < 0 || shape_from(size, "full", shape, &ndim) < 0)
        return NULL;
    return new_filled(shape, ndim, value, dtype, device);
}

/* The shape of nested lists: follow the first element down. */
static int infer_shape(PyObject *data, int64_t *shape, int *ndim)
{
    int n = 0;

    while (PyList_Check(data) || PyTuple_Check(data)) {
        if (n == TT_MAX_DIMS) {
            PyErr_Format(PyExc_RuntimeError, "tensor(): cannot nest lists deeper than %d", TT_MAX_DIMS);
            return -1;
        }
        shape[n++] = PySequence_Fast_GET_SIZE(data);
        if (PySequence_Fast_GET_SIZE(data) == 0)
            break;
        data = PySequence_Fast_GET_ITEM(data, 0);
    }
    *ndim = n;
    return 0;
}

/* Check that DATA from dimension DIM on is rectangular and holds numbers;
 * notes whether any is a float. */
static int check_data(PyObject *data, int dim, const int64_t *shape, int ndim, int *any_float)
{
    if (dim == ndim) {
        if (PyFloat_Check(data)) {
            *any_float = 1;
            return 0;
        }
        if (PyLong_Check(data))
            return 0;
        PyErr_Format(PyExc_TypeError, "tensor(): cannot make a tensor of %.100s: elements must be ints or floats",
                     Py_TYPE(data)->tp_name);
        return -1;
    }
    if ((!PyList_Check(data) && !PyTuple_Check(data)) || PySequence_Fast_GET_SIZE(data) != shape[dim]) {
        PyErr_Format(PyExc_RuntimeError, "tensor(): the lists are ragged: expected %lld elements in dimension %d",
                     (long long)shape[dim], dim);
        return -1;
    }
    for (Py_ssize_t i = 0; i < shape[dim]; i++)
        if (check_data(PySequence_Fast_GET_ITEM(data, i), dim + 1, shape, ndim, any_float) < 0)
            return -1;
    return 0;
}

/* Write DATA's numbers in row-major order at *P, advancing it. */
static int store_data(PyObject *data, int dim, int ndim, tt_dtype dtype, char **p)
{
    if (dim == ndim) {
        if (dtype == TT_FLOAT64) {
            double v = PyFloat_AsDouble(data);

            if (v == -1.0 && PyErr_Occurred())
                return -1;
            *(double *)*p = v;
        } else {
            long long v = PyFloat_Check(data) ? (long long)PyFloat_AS_DOUBLE(data) : PyLong_AsLongLong(data);

            if (v == -1 && PyErr_Occurred())
                return -1;
            *(int64_t *)*p = v;
        }
        *p += tt_dtype_size(dtype);
        return 0;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(data); i++)
        if (store_data(PySequence_Fast_GET_ITEM(data, i), dim + 1, ndim, dtype, p) < 0)
            return -1;
    return 0;
}

/* torch.tensor(data): a new tensor from a number or nested lists;
 * float64 if any element is a float, else int64. */
static PyObject *tt_python_tensor(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"data", "dtype", "device", NULL};
    PyObject *data;
    const char *dtype_name = NULL, *device_name = "cpu";
    int64_t shape[TT_MAX_DIMS];
    int ndim, any_float = 0;
    tt_dtype dtype;
    tt_device device;
    tt_error err = TT_ERROR_INIT;
    tt_tensor *t;
    char *p;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$zs:tensor", kwlist, &data, &dtype_name, &device_name))
        return NULL;
    if (infer_shape(data, shape, &ndim) < 0 || check_data(data, 0, shape, ndim, &any_float) < 0)
        return NULL;
    dtype = any_float ? TT_FLOAT64 : TT_INT64;
    if (parse_options(dtype_name, device_name, &dtype, &device) < 0)
        return NULL;
    if (!(t = tt_empty(shape, ndim, dtype, device, &err)))
        return tt_python_error(&err);
    p = tt_data(t);  /* NULL for meta tensors: nothing to store */
    if (p && store_data(data, 0, ndim, dtype, &p) < 0) {
        tt_tensor_decref(t);
        return NULL;
    }
    return tt_pytensor_wrap(t);
}

/* at::from_blob: a tensor over memory at ADDRESS that the caller owns.
 * Nothing is checked: a wrong address crashes at the first read. */
static PyObject *tt_python_from_blob(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"address", "size", "dtype", NULL};
    PyObject *address, *size;
    const char *dtype_name = "float64";
    int64_t shape[TT_MAX_DIMS];
    int ndim;
    tt_dtype dtype;
    tt_device device;
    tt_error err = TT_ERROR_INIT;
    tt_tensor *t;
    void *data;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$s:from_blob", kwlist, &address, &size, &dtype_name))
        return NULL;
    if ((data = PyLong_AsVoidPtr(address)) == NULL && PyErr_Occurred())
        return NULL;
    if (parse_options(dtype_name, "cpu", &dtype, &device) < 0 || shape_from(size, "from_blob", shape, &ndim) < 0)
        return NULL;
    if (!(t = tt_from_blob(data, shape, ndim, dtype, &err)))
        return tt_python_error(&err);
    return tt_pytensor_wrap(t);
}

/* ---- the dispatcher, seen from Python (torch._C._dispatch_dump and
 * friends) ---- */

static PyObject *tt_python_dispatch_operators(PyObject *module, PyObject *unused)
{
    PyObject *names = PyList_New(0);

    for (int i = 0; names && i < tt_dispatcher_count(); i++) {
        PyObject *name = PyUnicode_FromString(tt_dispatcher_operator(i)->name);

        if (!name || PyList_Append(names, name) < 0)
            Py_CLEAR(names);
        Py_XDECREF(name);
    }
    return names;
}

/* "operator: add\n  cpu/float64: tt_native_add\n..." */
static PyObject *tt_python_dispatch_dump(PyObject *module, PyObject *args)
{
    const char *name;
    const tt_operator *op;
    tt_error err = TT_ERROR_INIT;
    char text[2048];
    size_t len;

    if (!PyArg_ParseTuple(args, "s:_dispatch_dump", &name))
        return NULL;
    if (!(op = tt_dispatcher_find_op(name, &err)))
        return tt_python_error(&err);
    len = (size_t)snprintf(text, sizeof(text), "operator: %s\n", op->name);
    for (int dev = 0; dev < TT_DEVICE_COUNT; dev++) {
        for (int dt = 0; dt < TT_DTYPE_COUNT; dt++) {
            const tt_kernel *k = &op->kernels[dev][dt];

            if (k->fn && len < sizeof(text))
                len += (size_t)snprintf(text + len, sizeof(text) - len, "  %s/%s: %s\n",
                                        tt_device_name((tt_device)dev), tt_dtype_name((tt_dtype)dt), k->name);
        }
    }
    return PyUnicode_FromString(text);
}

/* The kernel the dispatcher picks for (OP, DEVICE, DTYPE), by name; the
 * same lookup the operators do, so it fails the same way. */
static PyObject *tt_python_dispatch_kernel(PyObject *module, PyObject *args)
{
    const char *name, *device_name, *dtype_name;
    const tt_operator *op;
    const tt_kernel *kernel;
    tt_dispatch_key key;
    tt_error err = TT_ERROR_INIT;

    if (!PyArg_ParseTuple(args, "sss:_dispatch_kernel", &name, &device_name, &dtype_name))
        return NULL;
    if (parse_options(dtype_name, device_name, &key.dtype, &key.device) < 0)
        return NULL;
    if (!(op = tt_dispatcher_find_op(name, &err)) || !(kernel = tt_dispatcher_lookup(op, key, &err)))
        return tt_python_error(&err);
    return PyUnicode_FromString(kernel->name);
}

/* ---- the rest ---- */

static PyObject *tt_python_set_tensor_class(PyObject *module, PyObject *cls)
{
    if (tt_pytensor_set_class(cls) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* For samples/hang_native.py: deadlock in C, holding the GIL, forever. */
static PyObject *tt_python_deadlock(PyObject *module, PyObject *unused)
{
    tt_error err = TT_ERROR_INIT;

    if (tt_deadlock(&err) < 0)
        return tt_python_error(&err);
    Py_RETURN_NONE;
}

#define KW(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef module_methods[] = {
    {"ones", KW(tt_python_ones), METH_VARARGS | METH_KEYWORDS,
     "ones(*size, dtype='float64', device='cpu') -> Tensor filled with 1"},
    {"zeros", KW(tt_python_zeros), METH_VARARGS | METH_KEYWORDS,
     "zeros(*size, dtype='float64', device='cpu') -> Tensor filled with 0"},
    {"full", KW(tt_python_full), METH_VARARGS | METH_KEYWORDS,
     "full(size, fill_value, *, dtype=None, device='cpu') -> Tensor filled with fill_value"},
    {"tensor", KW(tt_python_tensor), METH_VARARGS | METH_KEYWORDS,
     "tensor(data, *, dtype=None, device='cpu') -> Tensor from a number or nested lists"},
    {"from_blob", KW(tt_python_from_blob), METH_VARARGS | METH_KEYWORDS,
     "from_blob(address, size, *, dtype='float64') -> Tensor over memory you own (unchecked)"},
    {"_dispatch_operators", tt_python_dispatch_operators, METH_NOARGS,
     "_dispatch_operators() -> list of the dispatcher's operator names"},
    {"_dispatch_dump", tt_python_dispatch_dump, METH_VARARGS,
     "_dispatch_dump(op) -> str: the kernels registered for op, per device/dtype"},
    {"_dispatch_kernel", tt_python_dispatch_kernel, METH_VARARGS,
     "_dispatch_kernel(op, device, dtype) -> str: the kernel a call would run"},
    {"_set_tensor_class", tt_python_set_tensor_class, METH_O,
     "_set_tensor_class(cls): wrap results in cls (tinytensor.Tensor)"},
    {"_deadlock", tt_python_deadlock, METH_NOARGS, "_deadlock(): hang forever in C (see tinytensor.faults)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tinytensor._C",
    .m_doc = "tinytensor's C core, bound for Python (like torch._C)",
    .m_size = -1,
    .m_methods = module_methods,
};

PyObject *tt_init_module(void)
{
    PyObject *module = PyModule_Create(&module_def);

    if (!module)
        return NULL;
    if (tt_pytensor_add_type(module) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

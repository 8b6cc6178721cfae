/*
 * tt_python_tensor.c: tinytensor._C.TensorBase, the Python face of a tensor.
 *
 * Mirrors torch/csrc/autograd/python_variable.cpp (the type, its
 * properties) and the generated python_variable_methods.cpp (its methods
 * and operators).  'x + 1' reaches tt_pytensor_add through the type's
 * nb_add slot, which Python's BINARY_OP calls; tt_pytensor_add calls
 * tt_ops_add_call in the core, as THPVariable_add calls
 * at::_ops::add_Tensor::call.
 */
#include "tt_python.h"

#include "tt_native.h"
#include "tt_ops.h"

/* The class results are wrapped in; like torch's THPVariableClass, a
 * global set once by the package's __init__.py. */
static PyTypeObject *tensor_class = &tt_pytensor_type;

PyObject *tt_pytensor_wrap(tt_tensor *t)
{
    tt_pytensor *self = (tt_pytensor *)tensor_class->tp_alloc(tensor_class, 0);

    if (!self) {
        tt_tensor_decref(t);
        return NULL;
    }
    self->cdata = t;
    return (PyObject *)self;
}

int tt_pytensor_set_class(PyObject *cls)
{
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &tt_pytensor_type)) {
        PyErr_SetString(PyExc_TypeError, "the tensor class must be a subclass of tinytensor._C.TensorBase");
        return -1;
    }
    Py_INCREF(cls);
    if (tensor_class != &tt_pytensor_type)
        Py_DECREF(tensor_class);
    tensor_class = (PyTypeObject *)cls;
    return 0;
}

PyObject *tt_python_error(const tt_error *err)
{
    switch (err->code) {
    case TT_ERR_CALLBACK:
        if (PyErr_Occurred())
            return NULL;  /* the callback's own exception says it best */
        PyErr_SetString(PyExc_RuntimeError, err->msg);
        break;
    case TT_ERR_NOT_IMPLEMENTED:
        PyErr_SetString(PyExc_NotImplementedError, err->msg);
        break;
    case TT_ERR_NOMEM:
        PyErr_SetString(PyExc_MemoryError, err->msg);
        break;
    default:
        PyErr_SetString(PyExc_RuntimeError, err->msg[0] ? err->msg : "tinytensor failed without saying why");
        break;
    }
    return NULL;
}

int tt_python_as_tensor(PyObject *obj, const tt_tensor *like, tt_tensor **out)
{
    tt_error err = TT_ERROR_INIT;
    tt_tensor *t;

    if (tt_pytensor_check(obj)) {
        t = ((tt_pytensor *)obj)->cdata;
        tt_tensor_incref(t);
    } else if (PyFloat_Check(obj)) {
        t = tt_scalar_tensor(tt_scalar_from_double(PyFloat_AS_DOUBLE(obj)), TT_FLOAT64, like->device, &err);
    } else if (PyLong_Check(obj)) {
        long long v = PyLong_AsLongLong(obj);

        if (v == -1 && PyErr_Occurred())
            return -1;
        t = tt_scalar_tensor(tt_scalar_from_int64(v), like->dtype, like->device, &err);
    } else {
        return 0;
    }
    if (!t) {
        tt_python_error(&err);
        return -1;
    }
    *out = t;
    return 1;
}

/* Both operands of a binary operator as tensors (one of them already is).
 * Returns like tt_python_as_tensor(). */
static int operands(PyObject *x, PyObject *y, tt_tensor **out_x, tt_tensor **out_y)
{
    const tt_tensor *like = ((tt_pytensor *)(tt_pytensor_check(x) ? x : y))->cdata;
    tt_tensor *a, *b;
    int rc;

    if ((rc = tt_python_as_tensor(x, like, &a)) <= 0)
        return rc;
    if ((rc = tt_python_as_tensor(y, like, &b)) <= 0) {
        tt_tensor_decref(a);
        return rc;
    }
    *out_x = a;
    *out_y = b;
    return 1;
}

/* ---- operators: x + y, x * y, x @ y ---- */

/* Tensor.__add__ and __radd__.  torch: THPVariable_add. */
static PyObject *tt_pytensor_add(PyObject *x, PyObject *y)
{
    tt_error err = TT_ERROR_INIT;
    tt_tensor *self, *other, *out;
    int rc = operands(x, y, &self, &other);

    if (rc <= 0)
        return rc < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    out = tt_ops_add_call(self, other, tt_scalar_from_int64(1), &err);  /* TOUR: bindings call the core */
    tt_tensor_decref(self);
    tt_tensor_decref(other);
    return out ? tt_pytensor_wrap(out) : tt_python_error(&err);
}

/* Tensor.__mul__ and __rmul__.  torch: THPVariable_mul. */
static PyObject *tt_pytensor_mul(PyObject *x, PyObject *y)
{
    tt_error err = TT_ERROR_INIT;
    tt_tensor *self, *other, *out;
    int rc = operands(x, y, &self, &other);

    if (rc <= 0)
        return rc < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    out = tt_ops_mul_call(self, other, &err);
    tt_tensor_decref(self);
    tt_tensor_decref(other);
    return out ? tt_pytensor_wrap(out) : tt_python_error(&err);
}

/* Tensor.__matmul__ and __rmatmul__ (tensors only).  torch: THPVariable_matmul. */
static PyObject *tt_pytensor_matmul(PyObject *x, PyObject *y)
{
    tt_error err = TT_ERROR_INIT;
    tt_tensor *out;

    if (!tt_pytensor_check(x) || !tt_pytensor_check(y))
        Py_RETURN_NOTIMPLEMENTED;
    out = tt_ops_matmul_call(((tt_pytensor *)x)->cdata, ((tt_pytensor *)y)->cdata, &err);
    return out ? tt_pytensor_wrap(out) : tt_python_error(&err);
}

/* The value of a one-element CPU tensor, as a Python float or int. */
static PyObject *tensor_item(tt_pytensor *self, PyObject *unused)
{
    const tt_tensor *t = self->cdata;

    if (t->device != TT_CPU || tt_numel(t) != 1) {
        PyErr_Format(PyExc_RuntimeError,
                     "cannot convert a %s tensor of %lld elements to a Python number: only one-element cpu tensors can be",
                     tt_device_name(t->device), (long long)tt_numel(t));
        return NULL;
    }
    if (t->dtype == TT_FLOAT64)
        return PyFloat_FromDouble(*(double *)tt_data(t));
    return PyLong_FromLongLong(*(int64_t *)tt_data(t));
}

static PyObject *tt_pytensor_float(PyObject *self)
{
    PyObject *v = tensor_item((tt_pytensor *)self, NULL);

    if (v && !PyFloat_Check(v))
        Py_SETREF(v, PyNumber_Float(v));
    return v;
}

static PyObject *tt_pytensor_int(PyObject *self)
{
    PyObject *v = tensor_item((tt_pytensor *)self, NULL);

    if (v && !PyLong_Check(v))
        Py_SETREF(v, PyNumber_Long(v));
    return v;
}

/* Lets an int64 one-element tensor be used where Python wants an integer
 * (range(), indexing, PyLong_AsLongLong), as torch allows. */
static PyObject *tt_pytensor_index(PyObject *self)
{
    const tt_tensor *t = ((tt_pytensor *)self)->cdata;

    if (t->dtype != TT_INT64)
        return PyErr_Format(PyExc_TypeError, "cannot use a %s tensor as an integer: only int64 ones can be",
                            tt_dtype_name(t->dtype));
    return tensor_item((tt_pytensor *)self, NULL);
}

static PyNumberMethods tensor_as_number = {
    .nb_add = tt_pytensor_add,
    .nb_multiply = tt_pytensor_mul,
    .nb_matrix_multiply = tt_pytensor_matmul,
    .nb_float = tt_pytensor_float,
    .nb_int = tt_pytensor_int,
    .nb_index = tt_pytensor_index,
};

/* ---- methods ---- */

static PyObject *tensor_add(tt_pytensor *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"other", "alpha", NULL};
    PyObject *other_obj, *alpha_obj = NULL;
    tt_scalar alpha = tt_scalar_from_int64(1);
    tt_error err = TT_ERROR_INIT;
    tt_tensor *other, *out;
    int rc;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:add", kwlist, &other_obj, &alpha_obj))
        return NULL;
    if (alpha_obj && PyFloat_Check(alpha_obj))
        alpha = tt_scalar_from_double(PyFloat_AS_DOUBLE(alpha_obj));
    else if (alpha_obj && PyLong_Check(alpha_obj))
        alpha = tt_scalar_from_int64(PyLong_AsLongLong(alpha_obj));
    else if (alpha_obj)
        return PyErr_Format(PyExc_TypeError, "add(): alpha must be a number, not %.100s", Py_TYPE(alpha_obj)->tp_name);
    if (PyErr_Occurred())
        return NULL;
    if ((rc = tt_python_as_tensor(other_obj, self->cdata, &other)) <= 0)
        return rc < 0 ? NULL : PyErr_Format(PyExc_TypeError, "add(): other must be a tensor or a number, not %.100s",
                                           Py_TYPE(other_obj)->tp_name);
    out = tt_ops_add_call(self->cdata, other, alpha, &err);
    tt_tensor_decref(other);
    return out ? tt_pytensor_wrap(out) : tt_python_error(&err);
}

static PyObject *tensor_sum(tt_pytensor *self, PyObject *unused)
{
    tt_error err = TT_ERROR_INIT;
    tt_tensor *out = tt_ops_sum_call(self->cdata, &err);

    return out ? tt_pytensor_wrap(out) : tt_python_error(&err);
}

/* A contiguous copy with its own data.  Tensor.clone(). */
static PyObject *tensor_clone(tt_pytensor *self, PyObject *unused)
{
    tt_error err = TT_ERROR_INIT;
    tt_tensor *out = tt_copy(self->cdata, self->cdata->dtype, &err);

    return out ? tt_pytensor_wrap(out) : tt_python_error(&err);
}

/* The transpose of a 2-D tensor, a view sharing its data.  Tensor.t(). */
static PyObject *tensor_t(tt_pytensor *self, PyObject *unused)
{
    tt_error err = TT_ERROR_INIT;
    tt_tensor *out;

    if (self->cdata->ndim != 2)
        return PyErr_Format(PyExc_RuntimeError, "cannot t() a %d-D tensor: t() takes 2-D ones", self->cdata->ndim);
    out = tt_transpose(self->cdata, 0, 1, &err);
    return out ? tt_pytensor_wrap(out) : tt_python_error(&err);
}

static PyObject *element(tt_dtype dtype, const char *p)
{
    if (dtype == TT_FLOAT64)
        return PyFloat_FromDouble(*(const double *)p);
    return PyLong_FromLongLong(*(const int64_t *)p);
}

/* Nested lists of the elements from dimension DIM on, starting at P. */
static PyObject *tolist_from(const tt_tensor *t, int dim, const char *p)
{
    int64_t step = t->strides[dim] * (int64_t)tt_dtype_size(t->dtype);
    PyObject *list;

    if (dim == t->ndim)
        return element(t->dtype, p);
    if (!(list = PyList_New((Py_ssize_t)t->shape[dim])))
        return NULL;
    for (int64_t i = 0; i < t->shape[dim]; i++) {
        PyObject *item_obj = tolist_from(t, dim + 1, p + i * step);

        if (!item_obj) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item_obj);
    }
    return list;
}

static PyObject *tensor_tolist(tt_pytensor *self, PyObject *unused)
{
    const tt_tensor *t = self->cdata;

    if (t->device != TT_CPU)
        return PyErr_Format(PyExc_RuntimeError, "cannot read the values of a %s tensor: it has a shape and no data",
                            tt_device_name(t->device));
    return tolist_from(t, 0, tt_data(t));
}

static PyObject *tensor_apply_(tt_pytensor *self, PyObject *fn)
{
    if (!PyCallable_Check(fn))
        return PyErr_Format(PyExc_TypeError, "apply_(): the argument must be callable, not %.100s",
                            Py_TYPE(fn)->tp_name);
    if (tt_python_apply_(self->cdata, fn) < 0)
        return NULL;
    return Py_NewRef((PyObject *)self);
}

static PyObject *int64_tuple(const int64_t *v, int n)
{
    PyObject *tuple = PyTuple_New(n);

    for (int i = 0; tuple && i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);

        if (!x) {
            Py_CLEAR(tuple);
            break;
        }
        PyTuple_SET_ITEM(tuple, i, x);
    }
    return tuple;
}

static PyObject *tensor_stride(tt_pytensor *self, PyObject *unused)
{
    return int64_tuple(self->cdata->strides, self->cdata->ndim);
}

static PyObject *tensor_numel(tt_pytensor *self, PyObject *unused)
{
    return PyLong_FromLongLong(tt_numel(self->cdata));
}

static PyObject *tensor_dim(tt_pytensor *self, PyObject *unused)
{
    return PyLong_FromLong(self->cdata->ndim);
}

/* The address of element 0, for tinytensor.from_blob (0 for meta tensors). */
static PyObject *tensor_data_ptr(tt_pytensor *self, PyObject *unused)
{
    return PyLong_FromVoidPtr(tt_data(self->cdata));
}

static PyObject *tensor_matmul(tt_pytensor *self, PyObject *other)
{
    return tt_pytensor_matmul((PyObject *)self, other);
}

static PyMethodDef tensor_methods[] = {
    {"add", (PyCFunction)(void (*)(void))tensor_add, METH_VARARGS | METH_KEYWORDS,
     "add(other, *, alpha=1) -> Tensor: self + alpha * other, broadcast"},
    {"matmul", (PyCFunction)tensor_matmul, METH_O, "matmul(other) -> Tensor: self @ other"},
    {"sum", (PyCFunction)tensor_sum, METH_NOARGS, "sum() -> Tensor: the sum of all elements, 0-D"},
    {"clone", (PyCFunction)tensor_clone, METH_NOARGS, "clone() -> Tensor: a copy with its own data"},
    {"t", (PyCFunction)tensor_t, METH_NOARGS, "t() -> Tensor: the transpose of a 2-D tensor (a view)"},
    {"apply_", (PyCFunction)tensor_apply_, METH_O,
     "apply_(fn) -> self: replace every element x by fn(x), calling fn from C"},
    {"tolist", (PyCFunction)tensor_tolist, METH_NOARGS, "tolist() -> list: the elements as nested lists"},
    {"item", (PyCFunction)tensor_item, METH_NOARGS, "item() -> number: the value of a one-element tensor"},
    {"stride", (PyCFunction)tensor_stride, METH_NOARGS, "stride() -> tuple: the step of each dimension, in elements"},
    {"numel", (PyCFunction)tensor_numel, METH_NOARGS, "numel() -> int: the number of elements"},
    {"dim", (PyCFunction)tensor_dim, METH_NOARGS, "dim() -> int: the number of dimensions"},
    {"data_ptr", (PyCFunction)tensor_data_ptr, METH_NOARGS, "data_ptr() -> int: the address of the first element"},
    {NULL, NULL, 0, NULL},
};

/* ---- properties ---- */

static PyObject *get_shape(tt_pytensor *self, void *unused)
{
    return int64_tuple(self->cdata->shape, self->cdata->ndim);
}

static PyObject *get_dtype(tt_pytensor *self, void *unused)
{
    return PyUnicode_FromString(tt_dtype_name(self->cdata->dtype));
}

static PyObject *get_device(tt_pytensor *self, void *unused)
{
    return PyUnicode_FromString(tt_device_name(self->cdata->device));
}

static PyObject *get_ndim(tt_pytensor *self, void *unused)
{
    return PyLong_FromLong(self->cdata->ndim);
}

static PyGetSetDef tensor_getset[] = {
    {"shape", (getter)get_shape, NULL, "the size of each dimension, a tuple", NULL},
    {"dtype", (getter)get_dtype, NULL, "'float64' or 'int64'", NULL},
    {"device", (getter)get_device, NULL, "'cpu' or 'meta'", NULL},
    {"ndim", (getter)get_ndim, NULL, "the number of dimensions", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static void tensor_dealloc(tt_pytensor *self)
{
    tt_tensor_decref(self->cdata);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyTypeObject tt_pytensor_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tinytensor._C.TensorBase",
    .tp_basicsize = sizeof(tt_pytensor),
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_as_number = &tensor_as_number,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C half of tinytensor.Tensor (like torch._C._TensorBase); made by "
              "tinytensor.tensor(), ones(), zeros(), full() and operators, not directly",
    .tp_methods = tensor_methods,
    .tp_getset = tensor_getset,
};

int tt_pytensor_add_type(PyObject *module)
{
    if (PyType_Ready(&tt_pytensor_type) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "TensorBase", (PyObject *)&tt_pytensor_type);
}

// A CPython extension over libfar_core.so (RUNPATH $ORIGIN): farext.scale(x)
// calls far::scale in the core library.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "far_core.h"

static PyObject *farext_scale(PyObject *self, PyObject *arg)
{
    long x = PyLong_AsLong(arg); // farext: first line
    if (x == -1 && PyErr_Occurred())
        return NULL;
    long r = far::scale(x, 3); // farext: the call
    return PyLong_FromLong(r);
}

static PyMethodDef methods[] = {
    {"scale", farext_scale, METH_O, "far::scale(x, 3)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "farext", NULL, -1, methods};

PyMODINIT_FUNC PyInit_farext(void)
{
    return PyModule_Create(&module);
}

/*
 * stub.c: the whole of tinytensor._C, the extension module Python loads.
 *
 * Like torch/csrc/stub.c (torch/_C.cpython-311-x86_64-linux-gnu.so, 14 KB):
 * Python dlopen()s this file and calls PyInit__C, which hands over to the
 * bindings library at once.  Everything else lives in lib/libtt_python.so
 * and lib/libtt_core.so, found through this file's RUNPATH, $ORIGIN/lib,
 * as torch's _C finds libtorch_python.so.
 */
#include <Python.h>

extern PyObject *tt_init_module(void);  /* lib/libtt_python.so */

PyMODINIT_FUNC PyInit__C(void)
{
    return tt_init_module();  /* TOUR: stub hands over */
}

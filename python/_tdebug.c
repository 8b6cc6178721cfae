/*
 * _tdebug.c: the C half of the 'tdebug' Python package: wait for a native
 * debugger, ask whether one is attached, and trap into it.
 *
 * The same handshake as the preloaded library (lib/tdebug_preload.h): a
 * waiting process says so on stderr and announces itself on the rendezvous
 * socket, where 'tdebug attach --wait' learns about it.  Its announcement
 * has no "release_symbol": attaching a debugger and letting the process run
 * releases it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "preload_announce.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    PyObject *error; /* tdebug.Error */
} tdebug_state;

static inline tdebug_state *
get_state(PyObject *module)
{
    return (tdebug_state *)PyModule_GetState(module);
}

/* The tracer's pid, or -1 with tdebug.Error set when /proc cannot say. */
static long
tracer_pid(PyObject *module)
{
    char status[4096];

    if (tdp_read_small("/proc/self/status", status, sizeof(status)) < 0) {
        PyErr_Format(get_state(module)->error,
                     "cannot read /proc/self/status: %s", strerror(errno));
        return -1;
    }
    return tdp_tracer_pid();
}

PyDoc_STRVAR(is_traced_doc,
"is_traced() -> bool\n"
"\n"
"True when a native debugger (gdb, or any ptrace tracer) is attached.");

static PyObject *
tdebug_is_traced(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    long pid = tracer_pid(module);

    if (pid < 0) {
        return NULL;
    }
    return PyBool_FromLong(pid != 0);
}

PyDoc_STRVAR(tracer_pid_doc,
"tracer_pid() -> int\n"
"\n"
"The pid of the attached debugger, 0 when there is none.");

static PyObject *
tdebug_tracer_pid(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    long pid = tracer_pid(module);

    if (pid < 0) {
        return NULL;
    }
    return PyLong_FromLong(pid);
}

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
announce(double timeout)
{
    char path[108]; /* sizeof(sockaddr_un.sun_path) */
    char text[160];
    struct tdp_line *line;
    int n;

    n = snprintf(text, sizeof(text),
                 "tdebug: pid %ld waiting for a debugger: tdebug attach %ld\n",
                 (long)getpid(), (long)getpid());
    tdp_write_all(2, text, (size_t)n);
    if (!tdebug_announce_path(path, sizeof(path), getenv(TDEBUG_ENV_ANNOUNCE),
                              (unsigned long)getuid())) {
        return;
    }
    line = PyMem_RawMalloc(sizeof(*line));
    if (line == NULL) {
        return;     /* announcing is a courtesy; waiting still works */
    }
    tdp_line_start(line, "waiting");
    tdp_line_str(line, "module", NULL);
    tdp_line_str(line, "path", NULL);
    tdp_line_str(line, "symbol", NULL);
    tdp_line_str(line, "action", "wait");
    if (timeout < 0) {
        tdp_line_add(line, ",\"timeout\":null");
    }
    else {
        tdp_line_add(line, ",\"timeout\":%g", timeout);
    }
    tdp_line_end(line);
    tdp_announce_send(path, line);
    PyMem_RawFree(line);
}

PyDoc_STRVAR(wait_for_debugger_doc,
"wait_for_debugger(timeout=None) -> bool\n"
"\n"
"Say on stderr that this process waits for a debugger ('tdebug attach PID'),\n"
"announce it to 'tdebug attach --wait', and block until a debugger is\n"
"attached and lets the process run, or TIMEOUT seconds pass (None: no\n"
"limit).  True when a debugger is attached, False after the timeout.\n"
"Returns at once when a debugger is already attached.  Ctrl-C interrupts.");

static PyObject *
tdebug_wait_for_debugger(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"timeout", NULL};
    PyObject *timeout_obj = Py_None;
    double timeout = -1, deadline;
    long pid;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:wait_for_debugger", keywords,
                                     &timeout_obj)) {
        return NULL;
    }
    if (timeout_obj != Py_None) {
        timeout = PyFloat_AsDouble(timeout_obj);
        if (timeout == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
        if (!isfinite(timeout) || timeout < 0) {
            PyErr_SetString(PyExc_ValueError,
                            "timeout must be a non-negative number of seconds or None");
            return NULL;
        }
    }
    if ((pid = tracer_pid(module)) != 0) {
        return pid < 0 ? NULL : Py_NewRef(Py_True);
    }
    announce(timeout);
    deadline = now() + timeout;
    for (;;) {
        struct timespec ts = {0, 20 * 1000 * 1000};

        Py_BEGIN_ALLOW_THREADS
        nanosleep(&ts, NULL);
        Py_END_ALLOW_THREADS
        if (PyErr_CheckSignals() < 0) {
            return NULL;
        }
        if ((pid = tracer_pid(module)) != 0) {
            return pid < 0 ? NULL : Py_NewRef(Py_True);
        }
        if (timeout >= 0 && now() >= deadline) {
            Py_RETURN_FALSE;
        }
    }
}

static void
ignore_trap(int sig)
{
    (void)sig;
}

PyDoc_STRVAR(breakpoint_doc,
"breakpoint() -> bool\n"
"\n"
"Stop in the attached native debugger, here, as if at a breakpoint; continue\n"
"from it as usual.  Without a debugger: a RuntimeWarning and nothing else.\n"
"True when it trapped.");

static PyObject *
tdebug_breakpoint(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    struct sigaction quiet = {0}, old;
    long pid = tracer_pid(module);

    if (pid < 0) {
        return NULL;
    }
    if (pid == 0) {
        if (PyErr_WarnEx(PyExc_RuntimeWarning,
                         "tdebug.breakpoint(): no debugger is attached; not stopping", 1) < 0) {
            return NULL;
        }
        Py_RETURN_FALSE;
    }
    /* A debugger intercepts the SIGTRAP before any handler runs (gdb does
     * not pass it on).  Should it detach between the check and the trap,
     * the handler swallows the signal instead of the default action, which
     * would kill the process with a core dump. */
    quiet.sa_handler = ignore_trap;
    sigemptyset(&quiet.sa_mask);
    if (sigaction(SIGTRAP, &quiet, &old) < 0) {
        PyErr_Format(get_state(module)->error, "cannot trap: sigaction: %s", strerror(errno));
        return NULL;
    }
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("int3");
#elif defined(__aarch64__)
    __asm__ volatile("brk #0xf000");
#else
    raise(SIGTRAP);
#endif
    sigaction(SIGTRAP, &old, NULL);
    Py_RETURN_TRUE;
}

static PyMethodDef tdebug_methods[] = {
    {"is_traced", tdebug_is_traced, METH_NOARGS, is_traced_doc},
    {"tracer_pid", tdebug_tracer_pid, METH_NOARGS, tracer_pid_doc},
    {"wait_for_debugger", (PyCFunction)(void (*)(void))tdebug_wait_for_debugger,
     METH_VARARGS | METH_KEYWORDS, wait_for_debugger_doc},
    {"breakpoint", tdebug_breakpoint, METH_NOARGS, breakpoint_doc},
    {NULL, NULL, 0, NULL}
};

static int
tdebug_exec(PyObject *module)
{
    tdebug_state *state = get_state(module);

    state->error = PyErr_NewExceptionWithDoc(
        "tdebug.Error", "An operation of the tdebug module failed.", PyExc_OSError, NULL);
    if (state->error == NULL) {
        return -1;
    }
    if (PyModule_AddObjectRef(module, "Error", state->error) < 0) {
        return -1;
    }
    if (PyModule_AddIntConstant(module, "DEFAULT_TIMEOUT", TDEBUG_DEFAULT_TIMEOUT) < 0) {
        return -1;
    }
    return 0;
}

static int
tdebug_traverse(PyObject *module, visitproc visit, void *arg)
{
    Py_VISIT(get_state(module)->error);
    return 0;
}

static int
tdebug_clear(PyObject *module)
{
    Py_CLEAR(get_state(module)->error);
    return 0;
}

static void
tdebug_free(void *module)
{
    tdebug_clear((PyObject *)module);
}

static PyModuleDef_Slot tdebug_slots[] = {
    {Py_mod_exec, tdebug_exec},
    {0, NULL}
};

static struct PyModuleDef tdebug_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tdebug._tdebug",
    .m_doc = "Native half of the tdebug package: wait for, detect and trap into a "
             "native debugger.",
    .m_size = sizeof(tdebug_state),
    .m_methods = tdebug_methods,
    .m_slots = tdebug_slots,
    .m_traverse = tdebug_traverse,
    .m_clear = tdebug_clear,
    .m_free = tdebug_free,
};

PyMODINIT_FUNC PyInit__tdebug(void);

PyMODINIT_FUNC
PyInit__tdebug(void)
{
    return PyModuleDef_Init(&tdebug_module);
}

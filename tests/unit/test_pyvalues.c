/*
 * test_pyvalues.c: the Python values library against real interpreters:
 * Debian's python3 (with torch: tensors go to the callback) and each pyenv
 * CPython present, stopped with SIGSTOP while their locals are read.  An
 * object whose memory is unreadable gives an error for that value.
 * Skips (77) when no interpreter is found, saying so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "cpython/frames.h"
#include "cpython/values.h"

#include <dirent.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char program[] =
    "import ctypes, sys, time\n"
    "try:\n"
    "    import torch\n"
    "except ImportError:\n"
    "    torch = None\n"
    "G = 'global value'\n"
    "def work(n, text='t\\xe9xt'):\n"
    "    big = -(2 ** 100)\n"
    "    items = [1.25, None, True, (b'\\x01', {'k': 'v'})]\n"
    "    broken = [0]\n"
    "    # An item pointing at unreadable memory (the list is never touched\n"
    "    # again): its ob_item[0] = 0x10.\n"
    "    ptr = ctypes.cast(id(broken) + 24, ctypes.POINTER(ctypes.c_void_p)).contents.value\n"
    "    ctypes.c_void_p.from_address(ptr).value = 0x10\n"
    "    tensor = torch.ones(2) if torch else None\n"
    "    param = torch.nn.Parameter(torch.zeros(1)) if torch else None\n"
    "    captured = n\n"
    "    def inner():\n"
    "        return captured\n"
    "    sys.stdout.write('ready\\n')\n"
    "    sys.stdout.flush()\n"
    "    time.sleep(1000)\n"
    "work(7)\n";

typedef struct target {
    pid_t pid;
} target;

/* The process of the test running now: killed even when it fails. */
static pid_t running;

static int kill_running(void **state)
{
    if (running > 0) {
        kill(running, SIGKILL);
        waitpid(running, NULL, 0);
        running = 0;
    }
    return 0;
}

/* Start PYTHON running the program, wait for "ready", stop it. */
static int start(const char *python, target *t)
{
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    pid_t pid = fork();
    if (pid > 0)
        running = pid;
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(python, python, "-c", program, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[64];
    ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
    close(fds[0]);
    if (n <= 0 || strncmp(buf, "ready", 5) != 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    /* 'ready' is written before time.sleep: let it get there. */
    usleep(200 * 1000);
    kill(pid, SIGSTOP);
    waitpid(pid, NULL, WUNTRACED);
    t->pid = pid;
    return 0;
}

static void stop(target *t)
{
    kill(t->pid, SIGKILL);
    waitpid(t->pid, NULL, 0);
    running = 0;
}

static int tensors_seen;

static int tensor_cb(void *ctx, uint64_t object, json_t **out)
{
    tensors_seen++;
    *out = json_pack("{s:I}", "object", (json_int_t)object);
    return 0;
}

static const json_t *local(const json_t *locals, const char *name)
{
    size_t i;
    json_t *l;
    json_array_foreach(locals, i, l)
        if (strcmp(json_string_value(json_object_get(l, "name")), name) == 0)
            return l;
    fail_msg("no local '%s'", name);
    return NULL;
}

static const char *value_of(const json_t *locals, const char *name)
{
    return json_string_value(json_object_get(local(locals, name), "value"));
}

/* Check the locals of work() in the process running PYTHON. */
static void check(const char *python, int with_torch)
{
    target t;
    if (start(python, &t) < 0) {
        print_message("skipping %s: it did not start\n", python);
        return;
    }
    tdb_py_process *py = NULL;
    tdb_error err = {0};
    assert_int_equal(tdb_py_open(t.pid, NULL, &py, &err), 0);
    tdb_py_snapshot *s = tdb_py_read(py, &err);
    assert_non_null(s);
    const tdb_py_thread *th = tdb_py_find_thread(s, t.pid);
    assert_non_null(th);
    const tdb_py_frame *work = NULL;
    for (size_t i = 0; i < th->n_frames && !work; i++)
        if (strcmp(th->frames[i].name, "work") == 0)
            work = &th->frames[i];
    assert_non_null(work);

    tdb_py_value_opts o = TDB_PY_VALUE_OPTS_INIT;
    o.tensor = tensor_cb;
    tensors_seen = 0;
    json_t *locals = NULL;
    assert_int_equal(tdb_py_frame_locals(py, work, &o, &locals, &err), 0);
    assert_string_equal(value_of(locals, "n"), "7");
    assert_string_equal(value_of(locals, "text"), "'t\xc3\xa9xt'");
    assert_string_equal(value_of(locals, "big"), "-1267650600228229401496703205376");
    assert_string_equal(value_of(locals, "items"), "[1.25, None, True, (b'\\x01', {'k': 'v'})]");
    assert_string_equal(json_string_value(json_object_get(local(locals, "captured"), "kind")),
                        "cell");
    assert_string_equal(value_of(locals, "captured"), "7");
    /* The unreadable item: said, not guessed. */
    assert_string_equal(value_of(locals, "broken"), "[<unreadable object at 0x10>]");
    assert_string_equal(json_string_value(json_object_get(local(locals, "broken"), "error")),
                        "part of the value could not be read");
    if (with_torch) {
        assert_int_equal(tensors_seen, 2);
        const json_t *tensor = local(locals, "tensor");
        assert_string_equal(json_string_value(json_object_get(tensor, "type")), "Tensor");
        assert_true(json_is_object(json_object_get(tensor, "tensor")));
        assert_string_equal(json_string_value(json_object_get(local(locals, "param"), "type")),
                            "Parameter");
        /* Without the callback: the object as any other. */
        json_t *plain = NULL;
        tdb_py_value_opts none = TDB_PY_VALUE_OPTS_INIT;
        assert_int_equal(tdb_py_frame_locals(py, work, &none, &plain, &err), 0);
        assert_true(strncmp(value_of(plain, "tensor"), "<Tensor object at 0x", 20) == 0);
        json_decref(plain);
    }
    json_decref(locals);

    json_t *v = NULL;
    assert_int_equal(tdb_py_lookup_name(py, work, "G", &o, &v, &err), 0);
    assert_string_equal(json_string_value(json_object_get(v, "scope")), "global");
    assert_string_equal(json_string_value(json_object_get(v, "value")), "'global value'");
    json_decref(v);
    assert_int_equal(tdb_py_lookup_name(py, work, "len", &o, &v, &err), 0);
    assert_string_equal(json_string_value(json_object_get(v, "scope")), "builtin");
    json_decref(v);
    assert_int_equal(tdb_py_lookup_name(py, work, "no_such_name", &o, &v, &err), 1);
    /* The module's frame shows its globals, dunder names left out. */
    const tdb_py_frame *mod = &th->frames[th->n_frames - 1];
    assert_int_equal(tdb_py_frame_locals(py, mod, &o, &locals, &err), 0);
    assert_string_equal(json_string_value(json_object_get(local(locals, "G"), "kind")), "global");
    size_t i;
    json_t *l;
    json_array_foreach(locals, i, l)
        assert_false(strncmp(json_string_value(json_object_get(l, "name")), "__", 2) == 0);
    json_decref(locals);
    /* An address that holds no object. */
    tdb_error_clear(&err);
    assert_int_equal(tdb_py_format_object(py, 0x10, &o, &v, &err), -1);
    assert_string_equal(json_string_value(json_object_get(v, "error")),
                        "cannot read memory at 0x10");
    json_decref(v);
    tdb_py_snapshot_free(s);
    tdb_py_close(py);
    stop(&t);
}

static void test_debian_python_with_torch(void **state)
{
    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    check("/usr/bin/python3", system("/usr/bin/python3 -c 'import torch' 2>/dev/null") == 0);
}

/* Each pyenv CPython 3.8-3.13 present. */
static void test_pyenv_versions(void **state)
{
    const char *home = getenv("HOME");
    char *root = tdb_xasprintf("%s/.pyenv/versions", home ? home : "/root");
    int tried = 0;
    for (int minor = 8; minor <= 13; minor++) {
        DIR *d = opendir(root);
        struct dirent *e;
        char *exe = NULL;
        char prefix[16];
        snprintf(prefix, sizeof(prefix), "3.%d.", minor);
        while (d && (e = readdir(d)))
            if (!exe && strncmp(e->d_name, prefix, strlen(prefix)) == 0)
                exe = tdb_xasprintf("%s/%s/bin/python3.%d", root, e->d_name, minor);
        if (d)
            closedir(d);
        if (!exe || access(exe, X_OK) != 0) {
            print_message("skipping CPython 3.%d: not in %s\n", minor, root);
            free(exe);
            continue;
        }
        check(exe, 0);
        tried++;
        free(exe);
    }
    free(root);
    if (!tried)
        skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_debian_python_with_torch, kill_running),
        cmocka_unit_test_teardown(test_pyenv_versions, kill_running),
    };
    return cmocka_run_group_tests_name("pyvalues", tests, NULL, NULL);
}

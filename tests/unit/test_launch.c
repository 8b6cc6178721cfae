/*
 * test_launch.c: the pure parts of vscode/launch.c: where PyTorch was
 * built, the search for the user's own libraries, and the shape and names
 * of the entries.  What the command writes as a whole is checked against
 * VS Code's schemas and run end to end in tests/e2e/test_vscode*.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"
#include "launch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void check_root(const char *buf, size_t len, const char *expected)
{
    char *root = tdb_vscode_build_root_in(buf, len);
    if (!expected)
        assert_null(root);
    else
        assert_string_equal(root, expected);
    free(root);
}

#define ROOT_OF(lit, expected) check_root(lit, sizeof(lit) - 1, expected)

static void test_build_root(void **state)
{
    (void)state;
    /* Debian's reproducible build maps its directory to "." */
    ROOT_OF("\0\0./c10/core/CPUAllocator.cpp\0more", ".");
    /* a source build records its checkout */
    ROOT_OF("xx\0/home/me/pytorch/c10/core/TensorImpl.cpp\0", "/home/me/pytorch");
    /* inside an assertion message */
    ROOT_OF("false INTERNAL ASSERT FAILED at \"/opt/src/pytorch/c10/core/Device.cpp\":12, please",
            "/opt/src/pytorch");
    /* a bare relative name */
    ROOT_OF("\0c10/core/Scalar.cpp\0", ".");
    /* headers count too */
    ROOT_OF("\0/b/c10/core/impl/LocalDispatchKeySet.h\0", "/b");
    /* a mention that is no file name does not */
    ROOT_OF("\0see c10/core/ for details\0", NULL);
    ROOT_OF("\0nothing here\0", NULL);
    /* the first good one wins */
    ROOT_OF("\0c10/core/\0/x/c10/core/A.cpp\0/y/c10/core/B.cpp", "/x");
}

static char *tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char *t = tdb_xasprintf("%s/test_launch.XXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(t));
    return t;
}

static void put(const char *dir, const char *name, const char *content)
{
    char *p = tdb_xasprintf("%s/%s", dir, name);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    char *cmd = tdb_xasprintf("mkdir -p '%s'", p);
    assert_int_equal(system(cmd), 0);
    *slash = '/';
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
    free(cmd);
    free(p);
}

static void test_find_libraries(void **state)
{
    char *dir = tmpdir();
    json_t *patterns = json_pack("[s]", "_C.cpython*.so");
    (void)state;

    put(dir, "build/pkg/libcore.so", "\177ELF...");
    put(dir, "build/pkg/libver.so.1.2", "\177ELF...");
    put(dir, "pkg/_C.cpython-311-x86_64-linux-gnu.so", "\177ELF..."); /* covered by the pattern */
    put(dir, "pkg/notes.so.txt", "\177ELF...");                       /* not a shared object name */
    put(dir, "pkg/fake.so", "#!/bin/sh\n");                          /* not ELF */
    put(dir, ".git/objects/libhidden.so", "\177ELF...");              /* dot directory */
    put(dir, "venv/pyvenv.cfg", "home = /usr/bin\n");
    put(dir, "venv/lib/libnumpy_thing.so", "\177ELF...");             /* a virtual environment */
    put(dir, "x/site-packages/libdep.so", "\177ELF...");
    put(dir, "a/b/c/d/libdeep.so", "\177ELF...");
    tdb_vscode_find_libraries(dir, 8, patterns, NULL);
    char *got = json_dumps(patterns, JSON_COMPACT);
    assert_string_equal(got, "[\"_C.cpython*.so\",\"libcore.so\",\"libdeep.so\",\"libver.so.1.2\"]");
    free(got);
    json_decref(patterns);

    /* depth 0: the folder itself only */
    patterns = json_array();
    put(dir, "top.so", "\177ELF...");
    tdb_vscode_find_libraries(dir, 0, patterns, NULL);
    got = json_dumps(patterns, JSON_COMPACT);
    assert_string_equal(got, "[\"top.so\"]");
    free(got);
    json_decref(patterns);

    char *cmd = tdb_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(dir);
}

static tdb_vscode_spec spec_for_launch(json_t *libs)
{
    static char *args[] = {"--lr", "0.1"};
    tdb_vscode_spec s = {0};
    s.label = "train.py";
    s.program = "/home/me/proj/train.py";
    s.workspace = "/home/me/proj";
    s.runner = "/opt/tdebug/lib/tdebug/tdebug/_vscode_run.py";
    s.args = args;
    s.n_args = 2;
    s.python = "/usr/bin/python3";
    s.python_version = "3.10";
    s.gdb = "/usr/bin/gdb";
    s.tdebug = "/opt/tdebug/bin/tdebug";
    s.host = "127.0.0.1";
    s.port = 5678;
    s.libraries = libs;
    return s;
}

static void test_launch_entries(void **state)
{
    json_t *libs = json_pack("[s, s]", "libc.so.6", "libtorch*.so*");
    tdb_vscode_spec s = spec_for_launch(libs);
    json_t *conf, *comp, *tasks;
    (void)state;

    tdb_vscode_entries(&s, &conf, &comp, &tasks);
    json_t *gdb = json_array_get(conf, 0), *py = json_array_get(conf, 1);
    assert_string_equal(json_string_value(json_object_get(gdb, "name")), "tdebug: train.py (C++, gdb)");
    assert_string_equal(json_string_value(json_object_get(py, "name")), "tdebug: train.py (Python, debugpy)");
    /* before 3.11 there are no frozen modules to turn off */
    char *args = json_dumps(json_object_get(gdb, "args"), JSON_COMPACT);
    assert_string_equal(args, "[\"/opt/tdebug/lib/tdebug/tdebug/_vscode_run.py\",\"127.0.0.1:5678\","
                              "\"60\",\"\\\"${workspaceFolder}/train.py\\\"\",\"--lr\",\"0.1\"]");
    free(args);
    assert_string_equal(json_string_value(json_object_get(json_object_get(gdb, "symbolLoadInfo"),
                                                           "exceptionList")),
                        "libc.so.6;libtorch*.so*");
    assert_true(json_is_false(json_object_get(py, "justMyCode")));
    char *map0 = json_dumps(json_object_get(gdb, "sourceFileMap"), JSON_COMPACT);
    assert_string_equal(map0, "{\"${workspaceFolder}\":\"${workspaceFolder}\"}");
    free(map0);
    /* MIEngine sends 'set debuginfod enabled off' itself; the hook loads
     * what is under the workspace */
    char *setup = json_dumps(json_object_get(gdb, "setupCommands"), JSON_COMPACT);
    assert_null(strstr(setup, "debuginfod"));
    assert_non_null(strstr(setup, "where='^/home/me/proj/': gdb.execute('sharedlibrary ' + where"));
    free(setup);
    assert_true(json_is_true(json_object_get(json_array_get(comp, 0), "stopAll")));
    char *task_args = json_dumps(json_object_get(json_array_get(tasks, 0), "args"), JSON_COMPACT);
    assert_string_equal(task_args, "[\"wait-port\",\"127.0.0.1:5678\",\"--timeout\",\"120\","
                                   "\"--started-within\",\"30\"]");
    free(task_args);
    assert_string_equal(json_string_value(json_object_get(json_array_get(comp, 0), "name")),
                        "tdebug: train.py (Python + C++)");
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 0), "label")),
                        "tdebug: wait for debugpy (train.py)");
    assert_string_equal(json_string_value(json_object_get(py, "preLaunchTask")),
                        "tdebug: wait for debugpy (train.py)");
    assert_null(tdb_vscode_stale_names(&s)[0]);
    json_decref(conf);
    json_decref(comp);
    json_decref(tasks);

    /* --module, 3.11, --torch-src with a known build root */
    s.program = NULL;
    s.module = "pkg.main";
    s.label = "-m pkg.main";
    s.n_args = 0;
    s.python_version = "3.11";
    s.torch_src = "/src/pytorch";
    s.build_root = ".";
    tdb_vscode_entries(&s, &conf, &comp, &tasks);
    gdb = json_array_get(conf, 0);
    args = json_dumps(json_object_get(gdb, "args"), JSON_COMPACT);
    assert_string_equal(args, "[\"-Xfrozen_modules=off\",\"/opt/tdebug/lib/tdebug/tdebug/_vscode_run.py\","
                              "\"127.0.0.1:5678\",\"60\",\"-m\",\"pkg.main\"]");
    free(args);
    char *map = json_dumps(json_object_get(gdb, "sourceFileMap"), JSON_COMPACT);
    assert_string_equal(map, "{\"${workspaceFolder}\":\"${workspaceFolder}\",\".\":\"/src/pytorch\"}");
    free(map);
    json_t *last = json_array_get(json_object_get(gdb, "setupCommands"),
                                  json_array_size(json_object_get(gdb, "setupCommands")) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "text")), "directory /src/pytorch");
    json_decref(conf);
    json_decref(comp);
    json_decref(tasks);
    json_decref(libs);
}

static void test_attach_entries(void **state)
{
    json_t *libs = json_array();
    tdb_vscode_spec s = {0};
    json_t *conf, *comp, *tasks;
    (void)state;

    s.gdb = "/usr/bin/gdb";
    s.host = "127.0.0.1";
    s.libraries = libs;
    s.attach_pid = 4242;
    s.attach_program = "/usr/bin/python3.11";
    s.port = 0; /* no debugpy server */
    tdb_vscode_entries(&s, &conf, &comp, &tasks);
    assert_int_equal(json_array_size(conf), 1);
    assert_int_equal(json_array_size(comp), 0);
    assert_int_equal(json_array_size(tasks), 0);
    json_t *gdb = json_array_get(conf, 0);
    assert_string_equal(json_string_value(json_object_get(gdb, "name")), "tdebug: attach (C++, gdb)");
    assert_string_equal(json_string_value(json_object_get(gdb, "request")), "attach");
    assert_string_equal(json_string_value(json_object_get(gdb, "program")), "/usr/bin/python3.11");
    assert_int_equal(json_integer_value(json_object_get(gdb, "processId")), 4242);
    assert_string_equal(tdb_vscode_stale_names(&s)[0], "tdebug: attach (Python, debugpy)");
    assert_string_equal(tdb_vscode_stale_names(&s)[1], "tdebug: attach (Python + C++)");
    assert_null(tdb_vscode_stale_names(&s)[2]);
    assert_string_equal(json_string_value(json_object_get(gdb, "miDebuggerPath")), "/usr/bin/gdb");
    assert_null(json_object_get(gdb, "pipeTransport")); /* pkexec it is */
    json_decref(conf);
    json_decref(comp);
    json_decref(tasks);

    s.attach_direct = 1; /* gdb may attach as the user: started through /bin/sh */
    s.gdb = "/opt/my gdb/gdb";
    tdb_vscode_entries(&s, &conf, &comp, &tasks);
    gdb = json_array_get(conf, 0);
    char *pipe = json_dumps(json_object_get(gdb, "pipeTransport"), JSON_COMPACT);
    assert_string_equal(pipe, "{\"pipeProgram\":\"/bin/sh\",\"pipeArgs\":[\"-c\",\"exec ${debuggerCommand}\"],"
                              "\"debuggerPath\":\"'/opt/my gdb/gdb'\"}");
    free(pipe);
    assert_null(json_object_get(gdb, "miDebuggerPath"));
    assert_int_equal(json_integer_value(json_object_get(gdb, "processId")), 4242);

    s.port = 6000; /* a debugpy server */
    json_decref(conf);
    json_decref(comp);
    json_decref(tasks);
    tdb_vscode_entries(&s, &conf, &comp, &tasks);
    assert_int_equal(json_array_size(conf), 2);
    json_t *py = json_array_get(conf, 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(py, "connect"), "port")), 6000);
    assert_null(json_object_get(py, "preLaunchTask"));
    assert_string_equal(json_string_value(json_object_get(json_array_get(comp, 0), "name")),
                        "tdebug: attach (Python + C++)");
    /* no stopAll: VS Code would stop debugpy with terminateDebuggee */
    assert_null(json_object_get(json_array_get(comp, 0), "stopAll"));
    assert_null(tdb_vscode_stale_names(&s)[0]);
    json_decref(conf);
    json_decref(comp);
    json_decref(tasks);
    json_decref(libs);
}

/* What reaches the program: the word as sh reads it after MIEngine
 * passed it on (a word starting with '"', or one without space, tab or
 * parenthesis, goes untouched). */
static void check_arg(const char *arg, const char *expected)
{
    char *w = tdb_vscode_arg(arg);
    if (!expected) {
        assert_null(w);
        return;
    }
    assert_string_equal(w, expected);
    /* nothing MIEngine would quote again, no ${ for VS Code */
    assert_true(w[0] == '"' || !strpbrk(w, " \t()"));
    assert_null(strstr(w, "${"));
    free(w);
}

static void test_program_arguments(void **state)
{
    (void)state;
    check_arg("--lr", "--lr");
    check_arg("a=b,c:d/e.f@g%h+i", "a=b,c:d/e.f@g%h+i");
    check_arg("", "\"\"");
    check_arg("a b", "\"a b\"");
    check_arg("it's", "\"it's\"");
    check_arg("a\"b", "\"a\\\"b\"");
    check_arg("a\\b", "\"a\\\\b\"");
    check_arg("`id`", "\"\\`id\\`\"");
    check_arg("$HOME", "\"\"'$'\"HOME\"");
    check_arg("${workspaceFolder}", "\"\"'$'\"{workspaceFolder}\"");
    check_arg("*.py", "\"*.py\"");
    check_arg("~", "\"~\"");
    check_arg("a;b|c&d>e<f", "\"a;b|c&d>e<f\"");
    check_arg("(x)", "\"(x)\"");
    check_arg("\"quoted\"", "\"\\\"quoted\\\"\"");
    check_arg("caf\xc3\xa9", "\"caf\xc3\xa9\"");
    check_arg("tab\tx", "\"tab\tx\"");
    check_arg("two\nlines", NULL);
    check_arg("cr\r", NULL);
}

static void test_attach_plan(void **state)
{
    (void)state;
    /* no Yama, or scope 0: the user's gdb, same user (or its capabilities) */
    assert_int_equal(tdb_vscode_plan_attach(-1, 0, 1, 1, 0, 0), TDB_VSCODE_ATTACH_DIRECT);
    assert_int_equal(tdb_vscode_plan_attach(0, 0, 0, 1, 0, 1), TDB_VSCODE_ATTACH_REFUSED);
    /* another user's, by gdb's capability: MIEngine would not elevate anyway */
    assert_int_equal(tdb_vscode_plan_attach(-1, 0, 1, 0, 0, 0), TDB_VSCODE_ATTACH_DIRECT);
    /* scope 1: gdb with CAP_SYS_PTRACE, or the process's PR_SET_PTRACER */
    assert_int_equal(tdb_vscode_plan_attach(1, 0, 1, 1, 0, 1), TDB_VSCODE_ATTACH_DIRECT);
    assert_int_equal(tdb_vscode_plan_attach(1, 0, 0, 1, 1, 1), TDB_VSCODE_ATTACH_DIRECT);
    /* ...but another user's process needs root to be paused: pkexec */
    assert_int_equal(tdb_vscode_plan_attach(1, 0, 1, 0, 0, 1), TDB_VSCODE_ATTACH_ELEVATED);
    /* else MIEngine's pkexec, when root could */
    assert_int_equal(tdb_vscode_plan_attach(1, 0, 0, 1, 0, 1), TDB_VSCODE_ATTACH_ELEVATED);
    assert_int_equal(tdb_vscode_plan_attach(2, 0, 0, 1, 1, 1), TDB_VSCODE_ATTACH_ELEVATED);
    assert_int_equal(tdb_vscode_plan_attach(1, 0, 0, 1, 0, 0), TDB_VSCODE_ATTACH_REFUSED);
    /* root is never elevated further */
    assert_int_equal(tdb_vscode_plan_attach(1, 1, 1, 1, 0, 0), TDB_VSCODE_ATTACH_DIRECT);
    assert_int_equal(tdb_vscode_plan_attach(3, 1, 0, 1, 0, 0), TDB_VSCODE_ATTACH_REFUSED);
}

/* A workspace whose path has regex and quote characters: the hook's
 * regex matches it literally, inside a valid Python string. */
static void test_workspace_hook_quoting(void **state)
{
    json_t *libs = json_array(), *conf, *comp, *tasks;
    tdb_vscode_spec s = spec_for_launch(libs);
    (void)state;

    s.workspace = "/w/a.b[c]*^$\\'q";
    s.program = "/w/a.b[c]*^$\\'q/x y.py";
    tdb_vscode_entries(&s, &conf, &comp, &tasks);
    json_t *gdb = json_array_get(conf, 0);
    const char *hook = json_string_value(json_object_get(json_array_get(json_object_get(gdb, "setupCommands"), 1), "text"));
    assert_non_null(strstr(hook, "where='^/w/a\\\\.b\\\\[c\\\\]\\\\*\\\\^\\\\$\\\\\\\\\\'q/'"));
    /* a workspace that cannot sit inside double quotes: the absolute path */
    json_t *args = json_object_get(gdb, "args");
    assert_string_equal(json_string_value(json_array_get(args, 3)),
                        "\"/w/a.b[c]*^\"'$'\"\\\\'q/x y.py\"");
    json_decref(conf);
    json_decref(comp);
    json_decref(tasks);
    json_decref(libs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_root),
        cmocka_unit_test(test_find_libraries),
        cmocka_unit_test(test_launch_entries),
        cmocka_unit_test(test_attach_entries),
        cmocka_unit_test(test_program_arguments),
        cmocka_unit_test(test_attach_plan),
        cmocka_unit_test(test_workspace_hook_quoting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

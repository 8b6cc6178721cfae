/*
 * test_launch.c: the pure parts of src/vscode/launch.c: where PyTorch was
 * built, the search for the user's own libraries, the shape and names of
 * the entries (the "tdebug" configuration and the compound), what VS Code
 * takes for a variable, and --lib's globs as regexes.  What the command writes as a whole is checked against
 * VS Code's schemas and run end to end in tests/e2e/test_vscode*.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "vscode/launch.h"

#include <regex.h>
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

/* Release what tdb_vscode_entries() gave. */
static void release(json_t *conf, json_t *comp, json_t *tasks)
{
    json_decref(conf);
    json_decref(comp);
    json_decref(tasks);
}

/* SPEC's stale names: the configurations C1, C2, the compound M and the
 * task T (NULL: none). */
static void check_stale(const tdb_vscode_spec *spec, const char *c1, const char *c2,
                        const char *m, const char *t)
{
    tdb_vscode_stale st;
    tdb_vscode_stale_names(spec, &st);
    const char *conf[] = {c1, c2, NULL};
    for (size_t i = 0; i < 3; i++) {
        if (conf[i])
            assert_string_equal(st.configurations[i], conf[i]);
        else
            assert_null(st.configurations[i]);
        if (!conf[i])
            break;
    }
    if (m)
        assert_string_equal(st.compounds[0], m);
    assert_null(st.compounds[m ? 1 : 0]);
    if (t)
        assert_string_equal(st.tasks[0], t);
    assert_null(st.tasks[t ? 1 : 0]);
    tdb_vscode_stale_clear(&st);
}

static tdb_vscode_spec spec_for_launch(json_t *libs)
{
    static char *args[] = {"--lr", "0.1"};
    tdb_vscode_spec s = {0};
    s.compound = 1;
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
    /* the "tdebug" configuration of that name goes */
    check_stale(&s, "tdebug: train.py (Python + C++)", NULL, NULL, NULL);
    release(conf, comp, tasks);

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
    release(conf, comp, tasks);
    json_decref(libs);
}

static void test_attach_entries(void **state)
{
    json_t *libs = json_array();
    tdb_vscode_spec s = {0};
    json_t *conf, *comp, *tasks;
    (void)state;

    s.compound = 1;
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
    /* no server: an earlier attach's debugpy entry and compound go */
    check_stale(&s, "tdebug: attach (Python + C++)", "tdebug: attach (Python, debugpy)",
                "tdebug: attach (Python + C++)", NULL);
    char *pick = tdb_vscode_pick_name(&s);
    assert_string_equal(pick, "tdebug: attach (C++, gdb)");
    free(pick);
    assert_string_equal(json_string_value(json_object_get(gdb, "miDebuggerPath")), "/usr/bin/gdb");
    assert_null(json_object_get(gdb, "pipeTransport")); /* pkexec it is */
    release(conf, comp, tasks);

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
    release(conf, comp, tasks);
    tdb_vscode_entries(&s, &conf, &comp, &tasks);
    assert_int_equal(json_array_size(conf), 2);
    json_t *py = json_array_get(conf, 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(py, "connect"), "port")), 6000);
    assert_null(json_object_get(py, "preLaunchTask"));
    assert_string_equal(json_string_value(json_object_get(json_array_get(comp, 0), "name")),
                        "tdebug: attach (Python + C++)");
    /* no stopAll: VS Code would stop debugpy with terminateDebuggee */
    assert_null(json_object_get(json_array_get(comp, 0), "stopAll"));
    check_stale(&s, "tdebug: attach (Python + C++)", NULL, NULL, NULL);
    release(conf, comp, tasks);
    json_decref(libs);
}

/* The one "tdebug" configuration: only the attributes 'tdebug dap' takes,
 * the arguments as they are, and the other form's entries named stale. */
static void test_tdebug_entries(void **state)
{
    static char *args[] = {"a b", "", "two\nlines", "$HOME", "it's"};
    static char *mods[] = {"torch._C"};
    json_t *conf, *comp, *tasks, *symbols = json_pack("[s]", "/libfoo[^/]*\\.so$");
    json_t *env = json_pack("{s:s}", "A", "b c");
    tdb_vscode_spec s = {0};
    (void)state;

    s.label = "sub/train.py";
    s.program = "/home/me/proj/sub/train.py";
    s.workspace = "/home/me/proj";
    s.args = args;
    s.n_args = 5;
    s.python = "/usr/bin/python3";
    tdb_vscode_entries(&s, &conf, &comp, &tasks);
    assert_int_equal(json_array_size(comp), 0);
    assert_int_equal(json_array_size(tasks), 0);
    char *text = json_dumps(conf, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(text, "[{\"name\":\"tdebug: sub/train.py (Python + C++)\",\"type\":\"tdebug\","
                              "\"request\":\"launch\",\"program\":\"${workspaceFolder}/sub/train.py\","
                              "\"args\":[\"a b\",\"\",\"two\\nlines\",\"$HOME\",\"it's\"],"
                              "\"python\":\"/usr/bin/python3\",\"cwd\":\"${workspaceFolder}\"}]");
    free(text);
    check_stale(&s, "tdebug: sub/train.py (C++, gdb)", "tdebug: sub/train.py (Python, debugpy)",
                "tdebug: sub/train.py (Python + C++)", "tdebug: wait for debugpy (sub/train.py)");
    release(conf, comp, tasks);

    /* a module, with every option; a script outside goes by its path */
    s.program = NULL;
    s.module = "pkg.main";
    s.label = "-m pkg.main";
    s.n_args = 0;
    s.stop_on_entry = 1;
    s.stop_at_import = mods;
    s.n_stop_at_import = 1;
    s.symbols = symbols;
    s.catch_throw = "";
    s.env = env;
    tdb_vscode_entries(&s, &conf, &comp, &tasks);
    text = json_dumps(conf, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(text, "[{\"name\":\"tdebug: -m pkg.main (Python + C++)\",\"type\":\"tdebug\","
                              "\"request\":\"launch\",\"module\":\"pkg.main\",\"args\":[],"
                              "\"python\":\"/usr/bin/python3\",\"cwd\":\"${workspaceFolder}\","
                              "\"env\":{\"A\":\"b c\"},\"stopOnEntry\":true,"
                              "\"stopAtImport\":[\"torch._C\"],\"symbols\":[\"/libfoo[^/]*\\\\.so$\"],"
                              "\"catchThrow\":true}]");
    free(text);
    release(conf, comp, tasks);
    s.module = NULL;
    s.program = "/elsewhere/run.py";
    s.label = "/elsewhere/run.py";
    tdb_vscode_entries(&s, &conf, &comp, &tasks);
    assert_string_equal(json_string_value(json_object_get(json_array_get(conf, 0), "program")),
                        "/elsewhere/run.py");
    release(conf, comp, tasks);

    /* attach by pid: the compound's entries go; wait: nothing else */
    memset(&s, 0, sizeof(s));
    s.attach_pid = 4242;
    s.catch_throw = "^c10::";
    tdb_vscode_entries(&s, &conf, &comp, &tasks);
    text = json_dumps(conf, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(text, "[{\"name\":\"tdebug: attach (Python + C++)\",\"type\":\"tdebug\","
                              "\"request\":\"attach\",\"processId\":4242,\"catchThrow\":\"^c10::\"}]");
    free(text);
    check_stale(&s, "tdebug: attach (C++, gdb)", "tdebug: attach (Python, debugpy)",
                "tdebug: attach (Python + C++)", NULL);
    release(conf, comp, tasks);
    memset(&s, 0, sizeof(s));
    s.wait = 1;
    tdb_vscode_entries(&s, &conf, &comp, &tasks);
    text = json_dumps(conf, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(text, "[{\"name\":\"tdebug: attach when torch loads (Python + C++)\","
                              "\"type\":\"tdebug\",\"request\":\"attach\",\"wait\":true}]");
    free(text);
    check_stale(&s, NULL, NULL, NULL, NULL);
    release(conf, comp, tasks);
    json_decref(symbols);
    json_decref(env);
}

/* What VS Code takes for a variable (its ConfigurationResolverExpression):
 * "${" whose braces close, nested ones counted. */
static void test_vscode_variables(void **state)
{
    (void)state;
    assert_true(tdb_vscode_has_variable("${workspaceFolder}"));
    assert_true(tdb_vscode_has_variable("a${env:HOME}b"));
    assert_true(tdb_vscode_has_variable("${}"));
    assert_true(tdb_vscode_has_variable("${a{b}c}"));
    assert_true(tdb_vscode_has_variable("x${ ${y}"));   /* the second one */
    assert_true(tdb_vscode_has_variable("${${x}}"));
    assert_false(tdb_vscode_has_variable("$HOME"));
    assert_false(tdb_vscode_has_variable("${"));
    assert_false(tdb_vscode_has_variable("${x"));
    assert_false(tdb_vscode_has_variable("${a{b}"));    /* never closes */
    assert_false(tdb_vscode_has_variable("}${"));
    assert_false(tdb_vscode_has_variable("$ {x}"));
    assert_false(tdb_vscode_has_variable("{x}"));
    assert_false(tdb_vscode_has_variable(""));
}

/* --lib's globs as regexes of library paths, matched as gdb matches them
 * (regcomp without REG_EXTENDED). */
static void check_glob(const char *glob, const char *expected, const char *match,
                       const char *no_match)
{
    regex_t re;
    char *r = tdb_vscode_glob_regex(glob);
    assert_string_equal(r, expected);
    assert_int_equal(regcomp(&re, r, REG_NOSUB), 0);
    assert_int_equal(regexec(&re, match, 0, NULL, 0), 0);
    if (no_match)
        assert_int_not_equal(regexec(&re, no_match, 0, NULL, 0), 0);
    regfree(&re);
    free(r);
}

static void test_glob_regex(void **state)
{
    (void)state;
    check_glob("libfoo*.so*", "/libfoo[^/]*\\.so[^/]*$", "/usr/lib/libfoo-2.so.1", "/usr/lib/libfoo");
    check_glob("libfoo.so", "/libfoo\\.so$", "/a/libfoo.so", "/a/libfooXso");
    check_glob("libfoo.so", "/libfoo\\.so$", "/a/libfoo.so", "/a/mylibfoo.so");
    check_glob("lib?.so", "/lib[^/]\\.so$", "/x/libc.so", "/x/lib/.so");
    check_glob("lib[ab].so", "/lib[ab]\\.so$", "/x/liba.so", "/x/libc.so");
    check_glob("lib[!ab].so", "/lib[^ab]\\.so$", "/x/libc.so", "/x/liba.so");
    check_glob("lib[x.so", "/lib\\[x\\.so$", "/x/lib[x.so", NULL);
    check_glob("a+b(c)|d{1}", "/a+b(c)|d{1}$", "/x/a+b(c)|d{1}", "/x/aab(c)|d{1}");
    check_glob("a\\*b^c$", "/a\\*b\\^c\\$$", "/x/a*b^c$", "/x/aXb^c$");
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
    release(conf, comp, tasks);
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
        cmocka_unit_test(test_tdebug_entries),
        cmocka_unit_test(test_vscode_variables),
        cmocka_unit_test(test_glob_regex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

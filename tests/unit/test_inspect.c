/*
 * test_inspect.c: telling module names from paths, which mapped objects
 * matter, this process's own mappings, and the subprocess runner.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "native/elf.h"
#include "checks/inspect.h"
#include "process/spawn.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_module_names(void **state)
{
    (void)state;
    assert_true(tdb_looks_like_module("torch._C"));
    assert_true(tdb_looks_like_module("tdbext"));
    assert_true(tdb_looks_like_module("a.b_c.D9"));
    assert_false(tdb_looks_like_module("libc.so.6"));      /* "6" is no identifier */
    assert_false(tdb_looks_like_module("python3.11"));
    assert_false(tdb_looks_like_module("./torch._C"));
    assert_false(tdb_looks_like_module("torch..C"));
    assert_false(tdb_looks_like_module("torch."));
    assert_false(tdb_looks_like_module(""));
    /* An existing file wins over the name: "Makefile" is here. */
    assert_false(tdb_looks_like_module("Makefile"));
}

static void test_objects_that_matter(void **state)
{
    (void)state;
    assert_true(tdb_object_matters("/usr/bin/python3.11", "/usr/bin/python3.11"));
    assert_false(tdb_object_matters("/usr/bin/python3.11", NULL));
    assert_true(tdb_object_matters("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", NULL));
    assert_true(tdb_object_matters("/usr/lib/python3/dist-packages/torch/_C.cpython-311-x86_64-linux-gnu.so", NULL));
    assert_true(tdb_object_matters("/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0", NULL));
    assert_true(tdb_object_matters("/usr/lib/x86_64-linux-gnu/libc10.so.1.13.0", NULL));
    assert_true(tdb_object_matters("/usr/lib/python3.11/lib-dynload/_ssl.cpython-311-x86_64-linux-gnu.so", NULL));
    assert_true(tdb_object_matters("/venv/lib/python3.11/site-packages/m/_x.abi3.so", NULL));
    assert_false(tdb_object_matters("/usr/lib/x86_64-linux-gnu/libc.so.6", NULL));
    assert_false(tdb_object_matters("/usr/lib/x86_64-linux-gnu/libgomp.so.1", NULL));
}

static void test_own_mappings(void **state)
{
    (void)state;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    size_t count = 0;
    tdb_error err = {0};
    char **v = tdb_pid_objects(getpid(), TDB_PID_MATTERS, &count, &err);
    assert_non_null(v);
    assert_int_equal(count, 1); /* this test binary is the "interpreter" */
    assert_string_equal(v[0], exe);
    tdb_strv_free(v);

    v = tdb_pid_objects(getpid(), TDB_PID_ALL, &count, &err);
    assert_non_null(v);
    int libc = 0, bfd = 0;
    for (size_t i = 0; i < count; i++) {
        libc |= strstr(v[i], "/libc.so") != NULL;
        bfd |= strstr(v[i], "libbfd") != NULL;
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(v[i], v[j]);
    }
    assert_true(libc && bfd);
    tdb_strv_free(v);

    assert_null(tdb_pid_objects(0x7ffffff0, TDB_PID_MATTERS, &count, &err));
    assert_non_null(strstr(err.msg, "no such process"));
    assert_int_equal(err.exit_code, TDB_EXIT_FAIL);
}

static void test_spawn_capture(void **state)
{
    (void)state;
    tdb_spawn_result r = TDB_SPAWN_RESULT_INIT;
    tdb_error err = {0};
    char *argv[] = {"sh", "-c", "echo out; echo err >&2; echo \"$TDB_X${HOME+home}\"; exit 3",
                    NULL};
    char *env[] = {"TDB_X=set", "HOME", NULL};
    assert_int_equal(tdb_spawn_capture(argv, env, 60000, &r, &err), 0);
    assert_int_equal(r.status, 3);
    assert_string_equal(r.out, "out\nset\n");
    assert_string_equal(r.err, "err\n");
    tdb_spawn_result_free(&r);

    char *slow[] = {"sleep", "30", NULL};
    assert_int_equal(tdb_spawn_capture(slow, NULL, 200, &r, &err), 0);
    assert_true(r.timed_out);
    assert_int_equal(r.status, 128 + 9);
    tdb_spawn_result_free(&r);

    char *missing[] = {"/nonexistent/tool", NULL};
    assert_int_equal(tdb_spawn_capture(missing, NULL, 1000, &r, &err), -1);
    assert_int_equal(err.exit_code, TDB_EXIT_NOTFOUND);
    assert_non_null(strstr(err.msg, "cannot run '/nonexistent/tool': No such file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_module_names),
        cmocka_unit_test(test_objects_that_matter),
        cmocka_unit_test(test_own_mappings),
        cmocka_unit_test(test_spawn_capture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

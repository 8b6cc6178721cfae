/*
 * test_spawn.c: helper programs kept running (tdb_child_*): a line with a
 * prefix among other output, one split over several writes, a program that
 * ends or stays silent, stdin closing as the signal to exit, a program
 * that ignores it and is killed, one that cannot be started.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "process/spawn.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_answer_then_stdin_eof(void **state)
{
    char *argv[] = {"sh", "-c",
                    "echo noise; echo 'warning: on stderr' >&2; printf 'ANSWER {\"a\"'; sleep 0.1; "
                    "echo ': 1}'; echo after; cat >/dev/null; exit 3",
                    NULL};
    tdb_child c;
    tdb_error e = {0};
    assert_int_equal(tdb_child_start(argv, NULL, &c, &e), 0);
    char *line = tdb_child_wait_line(&c, "ANSWER ", 10000, &e);
    assert_non_null(line);
    assert_string_equal(line, "{\"a\": 1}");
    free(line);
    /* Output after the answer stays for a later call. */
    line = tdb_child_wait_line(&c, "after", 10000, &e);
    assert_string_equal(line, "");
    free(line);
    /* Closing its stdin lets it exit by itself, with its status. */
    assert_int_equal(tdb_child_finish(&c, 10000), 3);
}

static void test_ends_without_answer(void **state)
{
    char *argv[] = {"sh", "-c", "echo line one; echo 'Traceback: ModuleNotFoundError' >&2", NULL};
    tdb_child c;
    tdb_error e = {0};
    assert_int_equal(tdb_child_start(argv, NULL, &c, &e), 0);
    assert_null(tdb_child_wait_line(&c, "ANSWER ", 10000, &e));
    assert_non_null(strstr(e.msg, "it ended without answering; it said:\n"));
    assert_non_null(strstr(e.msg, "ModuleNotFoundError"));
    assert_int_equal(tdb_child_finish(&c, 10000), 0);
}

static void test_silent_and_stubborn(void **state)
{
    /* Says nothing, ignores its stdin closing: the wait times out and the
     * finish kills it. */
    char *argv[] = {"sh", "-c", "trap '' TERM; exec sleep 100 </dev/null", NULL};
    tdb_child c;
    tdb_error e = {0};
    assert_int_equal(tdb_child_start(argv, NULL, &c, &e), 0);
    assert_null(tdb_child_wait_line(&c, "ANSWER ", 200, &e));
    assert_non_null(strstr(e.msg, "did not answer in time"));
    assert_int_equal(tdb_child_finish(&c, 100), 128 + SIGKILL);
}

static void test_environment_changes(void **state)
{
    char *argv[] = {"sh", "-c", "echo \"ANSWER ${TDB_X-unset} ${TDB_Y-unset}\"", NULL};
    char *env[] = {"TDB_X=set", "TDB_Y", NULL};
    tdb_child c;
    setenv("TDB_Y", "was set", 1);
    assert_int_equal(tdb_child_start(argv, env, &c, NULL), 0);
    char *line = tdb_child_wait_line(&c, "ANSWER ", 10000, NULL);
    assert_string_equal(line, "set unset");
    free(line);
    tdb_child_finish(&c, 10000);
    unsetenv("TDB_Y");
}

static void test_cannot_start(void **state)
{
    char *argv[] = {"/nonexistent/helper", NULL};
    tdb_child c;
    tdb_error e = {0};
    assert_int_equal(tdb_child_start(argv, NULL, &c, &e), -1);
    assert_string_equal(e.msg, "cannot run '/nonexistent/helper': No such file or directory");
    assert_int_equal(e.exit_code, TDB_EXIT_NOTFOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answer_then_stdin_eof),
        cmocka_unit_test(test_ends_without_answer),
        cmocka_unit_test(test_silent_and_stubborn),
        cmocka_unit_test(test_environment_changes),
        cmocka_unit_test(test_cannot_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_spawn.c: helper programs kept running (tdb_child_*): a line with a
 * prefix among other output, one split over several writes, a program that
 * ends or stays silent, stdin closing as the signal to exit, a program
 * that ignores it and is killed, one that cannot be started; one started
 * as another user (tdb_child_start_as()) with that user's ids, no group of
 * ours, in "/", with the environment given and nothing of ours; a loopback
 * peer's owner (tdb_tcp_peer_uid()).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "process/spawn.h"
#include "process/tcp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

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

static void test_start_as_another_user(void **state)
{
    if (geteuid() != 0) {
        skip(); /* only root may become nobody */
        return;
    }
    char *argv[] = {"/bin/sh", "-c",
                    "echo \"WHO $(id -u) $(id -g) [$(id -G)] $(pwd) ${TDB_X-unset} $PATH\"", NULL};
    char *env[] = {"PATH=/usr/bin:/bin", NULL};
    tdb_child_user nobody = {65534, 65534};
    tdb_child c;
    setenv("TDB_X", "ours", 1);
    assert_int_equal(tdb_child_start_as(argv, env, &nobody, &c, NULL), 0);
    char *line = tdb_child_wait_line(&c, "WHO ", 10000, NULL);
    assert_string_equal(line, "65534 65534 [65534] / unset /usr/bin:/bin");
    free(line);
    tdb_child_finish(&c, 10000);
    unsetenv("TDB_X");
}

static void test_loopback_peer_uid(void **state)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(l, 1), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
    assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
    int s = accept(l, NULL, NULL);
    assert_true(s >= 0);
    unsigned int uid = 12345;
    tdb_error e = {0};
    assert_int_equal(tdb_tcp_peer_uid(s, &uid, &e), 1);
    assert_int_equal(uid, geteuid());
    close(s);
    close(c);
    close(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answer_then_stdin_eof),
        cmocka_unit_test(test_ends_without_answer),
        cmocka_unit_test(test_silent_and_stubborn),
        cmocka_unit_test(test_environment_changes),
        cmocka_unit_test(test_cannot_start),
        cmocka_unit_test(test_start_as_another_user),
        cmocka_unit_test(test_loopback_peer_uid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

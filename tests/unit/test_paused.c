/*
 * test_paused.c: src/process/paused.c, the pieces of 'tdebug attach --wait' and
 * 'tdebug run --preload' that need no gdb: which announcements are taken,
 * process ancestry, the Yama decision (this kernel may have no Yama, so
 * every scope is decided here, not measured), starting a program with the
 * library's environment, and the signal pipe.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "process/paused.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_ptracer_plan(void **state)
{
    /* No Yama, or scope 0: any same-uid debugger may attach already. */
    assert_int_equal(tdb_ptracer_plan_for(-1, 0), TDB_PTRACER_NONE);
    assert_int_equal(tdb_ptracer_plan_for(0, 0), TDB_PTRACER_NONE);
    assert_int_equal(tdb_ptracer_plan_for(0, 1), TDB_PTRACER_NONE);
    /* Scope 1 (Ubuntu's default): gdb is not the program's ancestor, so
     * the program names tdebug, gdb's parent, with PR_SET_PTRACER. */
    assert_int_equal(tdb_ptracer_plan_for(1, 0), TDB_PTRACER_DECLARE);
    assert_int_equal(tdb_ptracer_plan_for(1, 1), TDB_PTRACER_DECLARE);
    /* Scope 2: admin only; declaring does not help. */
    assert_int_equal(tdb_ptracer_plan_for(2, 1), TDB_PTRACER_PRIVILEGED);
    assert_int_equal(tdb_ptracer_plan_for(2, 0), TDB_PTRACER_REFUSED);
    /* Scope 3: nobody, until reboot. */
    assert_int_equal(tdb_ptracer_plan_for(3, 1), TDB_PTRACER_REFUSED);
    assert_int_equal(tdb_ptracer_plan_for(3, 0), TDB_PTRACER_REFUSED);
}

static void test_yama_scope_and_capability(void **state)
{
    int scope = tdb_yama_ptrace_scope();
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int expected = -1;

    if (f) {
        assert_int_equal(fscanf(f, "%d", &expected), 1);
        fclose(f);
    }
    assert_int_equal(scope, expected);
    /* root in the initial namespace has every capability. */
    if (geteuid() == 0)
        assert_true(tdb_have_cap_sys_ptrace());
}

static void test_announce_is_waiting(void **state)
{
    json_t *a = json_pack("{s:i, s:s, s:i}", "tdebug", 1, "event", "waiting", "pid",
                          (int)getpid());
    json_t *loaded = json_pack("{s:i, s:s, s:i}", "tdebug", 1, "event", "loaded", "pid",
                               (int)getpid());
    json_t *nopid = json_pack("{s:i, s:s}", "tdebug", 1, "event", "waiting");

    assert_true(tdb_announce_is_waiting(a, 0, 0));
    assert_true(tdb_announce_is_waiting(a, getpid(), 0));
    assert_false(tdb_announce_is_waiting(a, getppid(), 0));
    /* We descend from our parent. */
    assert_true(tdb_announce_is_waiting(a, getppid(), 1));
    assert_false(tdb_announce_is_waiting(a, getpid() + 100000, 1));
    /* notify's "loaded" does not wait; no pid is nobody. */
    assert_false(tdb_announce_is_waiting(loaded, 0, 0));
    assert_false(tdb_announce_is_waiting(nopid, 0, 0));
    json_decref(a);
    json_decref(loaded);
    json_decref(nopid);
}

static void test_descends_from(void **state)
{
    int go[2];
    pid_t child, grandchild = 0;

    assert_int_equal(pipe(go), 0);
    child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        /* A grandchild that lives until the pipe closes. */
        char c;
        close(go[1]);
        if (fork() == 0) {
            ssize_t n = read(go[0], &c, 1);
            _exit(n < 0);
        }
        ssize_t n = read(go[0], &c, 1);
        wait(NULL);
        _exit(n < 0);
    }
    close(go[0]);
    /* Find the grandchild: the process whose parent is CHILD. */
    for (int tries = 0; tries < 2000 && !grandchild; tries++) {
        char path[64], buf[256];
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)child, (int)child);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(buf, sizeof(buf), f))
                grandchild = (pid_t)atoi(buf);
            fclose(f);
        }
        if (!grandchild)
            usleep(5000);
    }
    assert_true(grandchild > 0);
    assert_true(tdb_pid_descends_from(grandchild, child));
    assert_true(tdb_pid_descends_from(grandchild, getpid()));
    assert_true(tdb_pid_descends_from(child, child));
    assert_false(tdb_pid_descends_from(child, grandchild));
    assert_false(tdb_pid_descends_from(getpid(), child));
    close(go[1]);
    assert_int_equal(waitpid(child, NULL, 0), child);
}

static void test_spawn_applies_the_environment(void **state)
{
    char path[] = "/tmp/tdb-paused-test-XXXXXX";
    int fd = mkstemp(path);
    tdb_error err = {0};
    json_t *env = json_pack("{s:s, s:s}", "TDEBUG_ACTION", "log", "TDEBUG_TIMEOUT", "7");
    char *script = tdb_xasprintf("echo \"$TDEBUG_ACTION $TDEBUG_TIMEOUT ${TDEBUG_WATCH-unset}\" > %s; "
                                 "exit 3", path);
    char *argv[] = {"sh", "-c", script, NULL};
    char buf[64] = "";
    int ws;

    assert_true(fd >= 0);
    /* A stale setting in our environment is not inherited. */
    setenv("TDEBUG_WATCH", "stale", 1);
    pid_t pid = tdb_paused_spawn(argv, env, 0, TDB_PTRACER_DECLARE, &err);
    assert_true(pid > 0);
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 3);
    assert_true(read(fd, buf, sizeof(buf) - 1) > 0);
    assert_string_equal(buf, "log 7 unset\n");
    /* ...and tdebug's own environment is untouched. */
    assert_string_equal(getenv("TDEBUG_WATCH"), "stale");
    assert_null(getenv("TDEBUG_ACTION"));
    unsetenv("TDEBUG_WATCH");
    close(fd);
    unlink(path);
    free(script);
    json_decref(env);
}

static void test_spawn_reports_exec_failure(void **state)
{
    tdb_error err = {0};
    json_t *env = json_object();
    char *missing[] = {"/nonexistent/tdebug-test-program", NULL};
    char *dir[] = {"/tmp", NULL};

    assert_int_equal(tdb_paused_spawn(missing, env, 0, TDB_PTRACER_NONE, &err), -1);
    assert_int_equal(err.exit_code, TDB_EXIT_NOTFOUND);
    assert_string_equal(err.msg, "cannot run '/nonexistent/tdebug-test-program': No such file "
                                 "or directory");
    tdb_error_clear(&err);
    assert_int_equal(tdb_paused_spawn(dir, env, 0, TDB_PTRACER_NONE, &err), -1);
    assert_int_equal(err.exit_code, TDB_EXIT_NOEXEC);
    /* Nothing left to reap. */
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    json_decref(env);
}

static void test_signal_pipe(void **state)
{
    tdb_error err = {0};
    int fd = tdb_signals_install(1, &err);

    assert_true(fd >= 0);
    assert_int_equal(tdb_signals_take(), 0);
    raise(SIGINT);
    raise(SIGTERM);
    assert_int_equal(tdb_signals_take(), SIGINT);
    assert_int_equal(tdb_signals_take(), SIGTERM);
    kill(getpid(), SIGCHLD);
    assert_int_equal(tdb_signals_take(), SIGCHLD);
    tdb_signals_sigchld_off();
    kill(getpid(), SIGCHLD);
    assert_int_equal(tdb_signals_take(), 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ptracer_plan),
        cmocka_unit_test(test_yama_scope_and_capability),
        cmocka_unit_test(test_announce_is_waiting),
        cmocka_unit_test(test_descends_from),
        cmocka_unit_test(test_spawn_applies_the_environment),
        cmocka_unit_test(test_spawn_reports_exec_failure),
        cmocka_unit_test(test_signal_pipe),
    };
    return cmocka_run_group_tests_name("paused", tests, NULL, NULL);
}

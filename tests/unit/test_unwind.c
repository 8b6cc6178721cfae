/*
 * test_unwind.c: the pause and the unwinder on a real child process: a
 * signal sent while it is held is delivered after, a job-control stop is
 * kept, and a process that dies right after the pause is still unwound
 * from what was copied (with the memory map read before it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "process/pause.h"
#include "process/procfs.h"
#include "native/unwind.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* A Python child that prints "ready", then a line per SIGUSR1, and sleeps
 * in f(); its stdout is *OUT_FD. */
static const char child_code[] =
    "import os, signal, sys, time\n"
    "signal.signal(signal.SIGUSR1, lambda *a: print('usr1', flush=True))\n"
    "def f():\n"
    "    print('ready', flush=True)\n"
    "    while True:\n"
    "        time.sleep(100)\n"
    "f()\n";

/* The child of the running test, killed by the teardown even when an
 * assertion fails half-way. */
static pid_t child = -1;
static int child_fd = -1;

static int kill_child(void **state)
{
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    if (child_fd >= 0)
        close(child_fd);
    child = -1;
    child_fd = -1;
    return 0;
}

/* Read one line (up to SIZE-1 bytes, without its newline) from FD:
 * Python may write "ready" and "\n" separately (PYTHONUNBUFFERED). */
static void read_line(int fd, char *buf, size_t size)
{
    size_t n = 0;
    while (n + 1 < size) {
        char c;
        ssize_t r = read(fd, &c, 1);
        assert_int_equal(r, 1);
        if (c == '\n')
            break;
        buf[n++] = c;
    }
    buf[n] = '\0';
}

static pid_t start_child(int *out_fd)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(tdb_default_python(), "python3", "-c", child_code, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    child = pid;
    child_fd = *out_fd = fds[0];
    char buf[16];
    read_line(fds[0], buf, sizeof(buf));
    assert_string_equal(buf, "ready");
    return pid;
}


static void test_signal_during_pause_is_delivered(void **state)
{
    int fd;
    pid_t pid = start_child(&fd);
    tdb_error err = {0};
    tdb_pause *p;
    assert_int_equal(tdb_pause_start(pid, &p, &err), 0);
    assert_true(p->n >= 1 && p->threads[0].tid == pid && p->threads[0].stopped);
    assert_int_equal(tdb_proc_state(pid, 0), 't'); /* traced-stopped */
    kill(pid, SIGUSR1);
    tdb_pause_end(p);
    assert_true(tdb_pause_ms(p) >= 0);
    char buf[16];
    read_line(fd, buf, sizeof(buf)); /* blocks until the handler ran */
    assert_string_equal(buf, "usr1");
    assert_int_equal(tdb_proc_tracer(pid), 0);
    tdb_pause_free(p);
    kill_child(NULL);
}

static void test_job_stop_is_kept(void **state)
{
    int fd;
    pid_t pid = start_child(&fd);
    kill(pid, SIGSTOP);
    for (int i = 0; i < 2000 && tdb_proc_state(pid, 0) != 'T'; i++)
        usleep(1000);
    assert_int_equal(tdb_proc_state(pid, 0), 'T');
    tdb_error err = {0};
    tdb_pause *p;
    assert_int_equal(tdb_pause_start(pid, &p, &err), 0);
    assert_true(p->threads[0].job_stopped);
    tdb_pause_free(p);
    usleep(100000);
    assert_int_equal(tdb_proc_state(pid, 0), 'T');
    kill(pid, SIGCONT);
    kill_child(NULL);
}

/* Wait until PID's main thread sleeps in time.sleep() ("ready" is printed
 * just before). */
static void wait_asleep(pid_t pid)
{
    long nr = -1;
    uint64_t arg0;
    for (int i = 0; i < 3000; i++) {
        if (tdb_proc_syscall(pid, pid, &nr, &arg0) == 0 && nr == SYS_clock_nanosleep)
            return;
        usleep(1000);
    }
    fail_msg("pid %d never went to sleep (last system call %ld)", (int)pid, nr);
}

static void test_unwind_after_death(void **state)
{
    int fd;
    pid_t pid = start_child(&fd);
    wait_asleep(pid);
    tdb_error err = {0};
    tdb_maps maps;
    tdb_pause *p;
    assert_int_equal(tdb_maps_read(pid, &maps, &err), 0);
    assert_int_equal(tdb_pause_start(pid, &p, &err), 0);
    tdb_capture *c = tdb_capture_take(p, &maps, TDB_STACK_COPY_MAX, &err);
    assert_non_null(c);
    assert_true(tdb_capture_bytes(c) > 0);
    tdb_pause_free(p);
    kill_child(NULL); /* gone: /proc/PID/maps with it */

    tdb_native_frame *f = NULL;
    size_t n = 0;
    char *note = NULL;
    assert_int_equal(tdb_capture_unwind(c, pid, 256, NULL, &f, &n, &note, &err), 0);
    int sleep_at = -1, eval_at = -1;
    for (size_t i = 0; i < n; i++) {
        if (f[i].function && strstr(f[i].function, "sleep") && sleep_at < 0)
            sleep_at = (int)i;
        if (f[i].function && strcmp(f[i].function, "_PyEval_EvalFrameDefault") == 0)
            eval_at = (int)i;
    }
    assert_true(sleep_at >= 0 && eval_at > sleep_at);
    assert_non_null(f[0].library);
    assert_null(note);
    /* A shared symbol cache, filled by a first unwind, names the same. */
    tdb_symcache *cache = tdb_symcache_new();
    for (int round = 0; round < 2; round++) {
        tdb_native_frame *g = NULL;
        size_t m = 0;
        assert_int_equal(tdb_capture_unwind(c, pid, 256, cache, &g, &m, &note, &err), 0);
        assert_int_equal(m, n);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(g[i].pc, f[i].pc);
            assert_true((!g[i].function && !f[i].function) ||
                        (g[i].function && f[i].function && !strcmp(g[i].function, f[i].function)));
            assert_int_equal(g[i].offset, f[i].offset);
        }
        tdb_native_frames_free(g, m);
    }
    tdb_symcache_free(cache);
    tdb_native_frames_free(f, n);
    assert_int_equal(tdb_capture_unwind(c, 1, 256, NULL, &f, &n, &note, &err), -1);
    assert_non_null(strstr(err.msg, "was not captured"));
    tdb_capture_free(c);
    tdb_maps_free(&maps);
}

static void test_no_such_process(void **state)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    waitpid(pid, NULL, 0);
    tdb_error err = {0};
    tdb_pause *p = NULL;
    assert_int_equal(tdb_pause_start(pid, &p, &err), -1);
    assert_int_equal(err.code, ESRCH);
    assert_null(p);
}

int main(void)
{
#if !defined(__x86_64__)
    printf("test_unwind: native unwinding is only supported on x86-64\n");
    return 77;
#endif
    if (access(tdb_default_python(), X_OK) != 0) {
        printf("test_unwind: %s is missing: 'make deps' installs python3\n", tdb_default_python());
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_signal_during_pause_is_delivered, kill_child),
        cmocka_unit_test_teardown(test_job_stop_is_kept, kill_child),
        cmocka_unit_test_teardown(test_unwind_after_death, kill_child),
        cmocka_unit_test(test_no_such_process),
    };
    return cmocka_run_group_tests_name("unwind", tests, NULL, NULL);
}

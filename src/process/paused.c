/*
 * process/paused.c: getting hold of a process the preloaded library paused (see
 * process/paused.h).
 */
#include "process/paused.h"

#include "process/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- which announcements ---- */

/* The parent of PID from /proc, or 0. */
static pid_t parent_of(pid_t pid)
{
    char path[64], buf[512];
    FILE *f;
    size_t n;
    int ppid = 0;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "re")))
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* "pid (comm) S ppid ...": comm may hold spaces and parentheses. */
    char *paren = strrchr(buf, ')');
    if (!paren || sscanf(paren + 1, " %*c %d", &ppid) != 1)
        return 0;
    return (pid_t)ppid;
}

int tdb_pid_running(pid_t pid)
{
    char path[64], buf[512];
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (pid <= 0 || !(f = fopen(path, "re")))
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

int tdb_pid_descends_from(pid_t pid, pid_t ancestor)
{
    for (int depth = 0; pid > 1 && depth < 64; depth++) {
        if (pid == ancestor)
            return 1;
        pid = parent_of(pid);
    }
    return pid == ancestor;
}

int tdb_announce_is_waiting(const json_t *a, pid_t pid, int descendants)
{
    const char *event = json_string_value(json_object_get(a, "event"));
    pid_t from = (pid_t)json_integer_value(json_object_get(a, "pid"));

    if (!event || strcmp(event, "waiting") != 0 || from <= 0)
        return 0;
    if (pid <= 0 || from == pid)
        return 1;
    return descendants && tdb_pid_descends_from(from, pid);
}

/* ---- Yama ---- */

int tdb_yama_ptrace_scope(void)
{
    char *text = tdb_read_file("/proc/sys/kernel/yama/ptrace_scope", NULL, NULL);
    long scope;
    int rc = -1;

    if (text) {
        text[strcspn(text, "\n")] = '\0';
        if (tdb_parse_long(text, 0, 3, &scope) == 0)
            rc = (int)scope;
        free(text);
    }
    return rc;
}

tdb_ptracer_plan tdb_ptracer_plan_for(int scope, int cap_sys_ptrace)
{
    switch (scope) {
    case 1:
        /* Privileged tracers pass scope 1 anyway; declaring costs nothing
         * and keeps the program attachable if tdebug's gdb drops
         * privileges. */
        return TDB_PTRACER_DECLARE;
    case 2:
        return cap_sys_ptrace ? TDB_PTRACER_PRIVILEGED : TDB_PTRACER_REFUSED;
    case 3:
        return TDB_PTRACER_REFUSED;
    default: /* -1 (no Yama), 0 */
        return TDB_PTRACER_NONE;
    }
}

int tdb_have_cap_sys_ptrace(void)
{
    char *text = tdb_read_file("/proc/self/status", NULL, NULL);
    unsigned long long eff = 0;
    char *line;

    if (!text)
        return 0;
    line = strstr(text, "\nCapEff:");
    if (line)
        eff = strtoull(line + 8, NULL, 16);
    free(text);
    return (eff >> 19) & 1; /* CAP_SYS_PTRACE is capability 19 */
}

/* ---- starting a program with the library ---- */

pid_t tdb_paused_spawn(char *const argv[], const json_t *env, int stdout_to_stderr,
                       tdb_ptracer_plan plan, tdb_error *err)
{
    tdb_spawn_how how = {.stdout_to_stderr = stdout_to_stderr, .plan = plan};
    return tdb_paused_spawn_with(argv, env, &how, err);
}

pid_t tdb_paused_spawn_with(char *const argv[], const json_t *env, const tdb_spawn_how *how,
                            tdb_error *err)
{
    int report[2];
    pid_t parent = getpid(), pid;
    int child_errno = 0;
    ssize_t n;

    if (pipe2(report, O_CLOEXEC) < 0) {
        tdb_error_errno(err, "cannot create a pipe to start '%s'", argv[0]);
        return -1;
    }
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        tdb_error_errno(err, "cannot start '%s': fork", argv[0]);
        close(report[0]);
        close(report[1]);
        return -1;
    }
    if (pid == 0) {
        /* The child: nothing here may print but the exec failure, sent
         * to the parent, which says it. */
        static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGTTOU, SIGTTIN, SIGPIPE};
        sigset_t none;

        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
            signal(sigs[i], SIG_DFL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) /* tdebug is already gone */
            _exit(127);
        if (how->plan == TDB_PTRACER_DECLARE)
            prctl(PR_SET_PTRACER, (unsigned long)parent, 0, 0, 0);
        if (how->own_pgrp)
            setpgid(0, 0);
        if (how->fds) {
            for (int i = 0; i < 3; i++)
                if (how->fds[i] != i)
                    dup2(how->fds[i], i);
        } else if (how->stdout_to_stderr) {
            dup2(2, 1);
        }
        tdb_preload_apply(env);
        if (how->pid_var) {
            char self[32];
            snprintf(self, sizeof(self), "%ld", (long)getpid());
            setenv(how->pid_var, self, 1);
        }
        execvp(argv[0], argv);
        child_errno = errno;
        n = write(report[1], &child_errno, sizeof(child_errno));
        (void)n;
        _exit(child_errno == ENOENT ? TDB_EXIT_NOTFOUND : TDB_EXIT_NOEXEC);
    }
    if (how->own_pgrp)
        setpgid(pid, pid); /* also here, so there is no race with the child */
    close(report[1]);
    do
        n = read(report[0], &child_errno, sizeof(child_errno));
    while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == (ssize_t)sizeof(child_errno)) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        tdb_error_set_exit(err, child_errno == ENOENT ? TDB_EXIT_NOTFOUND : TDB_EXIT_NOEXEC,
                           child_errno, "cannot run '%s': %s", argv[0], strerror(child_errno));
        return -1;
    }
    return pid;
}

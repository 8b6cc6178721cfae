/* process/spawn.c: fork/exec with captured output and a deadline (see process/spawn.h). */
#include "process/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define CAPTURE_MAX (16u << 20)

/* A copy of environ with CHANGES applied. */
static char **build_env(char *const changes[])
{
    size_t n = 0, m = 0;
    while (environ[n])
        n++;
    while (changes[m])
        m++;
    char **env = tdb_xcalloc(n + m + 1, sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t len = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        int changed = 0;
        for (size_t j = 0; j < m && !changed; j++) {
            const char *ceq = strchr(changes[j], '=');
            size_t clen = ceq ? (size_t)(ceq - changes[j]) : strlen(changes[j]);
            changed = clen == len && !strncmp(changes[j], environ[i], len);
        }
        if (!changed)
            env[k++] = environ[i];
    }
    for (size_t j = 0; j < m; j++)
        if (strchr(changes[j], '='))
            env[k++] = changes[j];
    env[k] = NULL;
    return env;
}

static void drain(int *fd, tdb_buf *b)
{
    char chunk[8192];
    ssize_t n = read(*fd, chunk, sizeof(chunk));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        close(*fd);
        *fd = -1;
        return;
    }
    if (b->len + (size_t)n <= CAPTURE_MAX)
        tdb_buf_add(b, chunk, (size_t)n);
}

/* Fork and exec ARGV (with ENVP, or ours when NULL) in a process group of
 * its own, its stdin, stdout and stderr being FDS[0..2] (-1: /dev/null for
 * stdin); with DIE_WITH_US it is killed when tdebug dies.  Its pid, or -1
 * with ERR set ("cannot run 'gdb': No such file or directory"), the exec
 * failure coming back through a close-on-exec pipe. */
static pid_t start_child(char *const argv[], char **envp, const int fds[3], int die_with_us,
                         tdb_error *err)
{
    int xpipe[2];
    pid_t parent = getpid(), pid;
    if (pipe2(xpipe, O_CLOEXEC) < 0) {
        tdb_error_errno(err, "cannot run '%s': pipe", argv[0]);
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        tdb_error_errno(err, "cannot run '%s': fork", argv[0]);
        close(xpipe[0]);
        close(xpipe[1]);
        return -1;
    }
    if (pid == 0) {
        int in = fds[0] >= 0 ? fds[0] : open("/dev/null", O_RDONLY);
        setpgid(0, 0);
        signal(SIGPIPE, SIG_DFL);
        if (die_with_us) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(127);
        }
        if (in >= 0)
            dup2(in, 0);
        dup2(fds[1], 1);
        dup2(fds[2], 2);
        if (envp)
            environ = envp;
        execvp(argv[0], argv);
        int e = errno;
        (void)!write(xpipe[1], &e, sizeof(e));
        _exit(127);
    }
    close(xpipe[1]);
    /* The exec error pipe closes on a successful exec. */
    int exec_errno = 0;
    ssize_t n;
    do
        n = read(xpipe[0], &exec_errno, sizeof(exec_errno));
    while (n < 0 && errno == EINTR);
    close(xpipe[0]);
    if (n == (ssize_t)sizeof(exec_errno)) {
        waitpid(pid, NULL, 0);
        errno = exec_errno;
        tdb_error_set_exit(err, exec_errno == ENOENT ? TDB_EXIT_NOTFOUND : TDB_EXIT_NOEXEC,
                           exec_errno, "cannot run '%s': %s", argv[0], strerror(exec_errno));
        return -1;
    }
    return pid;
}

int tdb_spawn_capture(char *const argv[], char *const env[], int timeout_ms,
                      tdb_spawn_result *out, tdb_error *err)
{
    int opipe[2] = {-1, -1}, epipe[2] = {-1, -1};
    char **envp = env ? build_env(env) : NULL;
    tdb_buf ob = TDB_BUF_INIT, eb = TDB_BUF_INIT;
    pid_t pid = -1;
    int rc = -1;

    if (pipe2(opipe, O_CLOEXEC) < 0 || pipe2(epipe, O_CLOEXEC) < 0) {
        tdb_error_errno(err, "cannot run '%s': pipe", argv[0]);
        goto cleanup;
    }
    int child_fds[3] = {-1, opipe[1], epipe[1]};
    pid = start_child(argv, envp, child_fds, 0, err);
    if (pid < 0)
        goto cleanup;
    close(opipe[1]), opipe[1] = -1;
    close(epipe[1]), epipe[1] = -1;

    int64_t deadline = timeout_ms > 0 ? tdb_now_ms() + timeout_ms : 0;
    int timed_out = 0;
    while (opipe[0] >= 0 || epipe[0] >= 0) {
        struct pollfd fds[2] = {{opipe[0], POLLIN, 0}, {epipe[0], POLLIN, 0}};
        int wait = -1;
        if (deadline) {
            int64_t left = deadline - tdb_now_ms();
            if (left <= 0) {
                timed_out = 1;
                break;
            }
            wait = (int)left;
        }
        int r = poll(fds, 2, wait);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        if (fds[0].revents)
            drain(&opipe[0], &ob);
        if (fds[1].revents)
            drain(&epipe[0], &eb);
    }
    if (timed_out)
        kill(-pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    out->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    out->timed_out = timed_out;
    out->out = tdb_buf_detach(&ob);
    out->err = tdb_buf_detach(&eb);
    rc = 0;
cleanup:
    for (int i = 0; i < 2; i++) {
        if (opipe[i] >= 0)
            close(opipe[i]);
        if (epipe[i] >= 0)
            close(epipe[i]);
    }
    tdb_buf_free(&ob);
    tdb_buf_free(&eb);
    free(envp);
    return rc;
}

void tdb_spawn_result_free(tdb_spawn_result *r)
{
    if (!r)
        return;
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

char *tdb_first_line(const char *s)
{
    const char *nl = strchr(s, '\n');
    return tdb_xstrndup(s, nl ? (size_t)(nl - s) : strlen(s));
}


int tdb_child_start(char *const argv[], char *const env[], tdb_child *out, tdb_error *err)
{
    int ipipe[2] = {-1, -1}, opipe[2] = {-1, -1};
    char **envp = env ? build_env(env) : NULL;
    pid_t pid;
    int rc = -1;

    if (pipe2(ipipe, O_CLOEXEC) < 0 || pipe2(opipe, O_CLOEXEC) < 0) {
        tdb_error_errno(err, "cannot run '%s': pipe", argv[0]);
        goto cleanup;
    }
    int fds[3] = {ipipe[0], opipe[1], opipe[1]};
    pid = start_child(argv, envp, fds, 1, err);
    if (pid < 0)
        goto cleanup;
    memset(out, 0, sizeof(*out));
    out->pid = pid;
    out->in = ipipe[1], ipipe[1] = -1;
    out->out = opipe[0], opipe[0] = -1;
    rc = 0;
cleanup:
    for (int i = 0; i < 2; i++) {
        if (ipipe[i] >= 0)
            close(ipipe[i]);
        if (opipe[i] >= 0)
            close(opipe[i]);
    }
    free(envp);
    return rc;
}

/* The last few lines of TEXT, for saying why a helper failed. */
static const char *tail_lines(const char *text, int lines)
{
    const char *p = text + strlen(text);
    while (p > text && (p[-1] == '\n' || p[-1] == ' '))
        p--;
    while (p > text && lines > 0) {
        p--;
        if (*p == '\n')
            lines--;
    }
    return *p == '\n' ? p + 1 : p;
}

char *tdb_child_wait_line(tdb_child *c, const char *prefix, int timeout_ms, tdb_error *err)
{
    int64_t deadline = tdb_now_ms() + timeout_ms;
    size_t plen = strlen(prefix), scanned = 0;
    for (;;) {
        /* Complete lines first. */
        const char *s = tdb_buf_str(&c->got);
        const char *nl;
        while ((nl = strchr(s + scanned, '\n'))) {
            const char *line = s + scanned;
            if ((size_t)(nl - line) >= plen && strncmp(line, prefix, plen) == 0) {
                char *r = tdb_xstrndup(line + plen, (size_t)(nl - line) - plen);
                /* keep what follows for a later call */
                tdb_buf rest = TDB_BUF_INIT;
                tdb_buf_adds(&rest, nl + 1);
                tdb_buf_free(&c->got);
                c->got = rest;
                return r;
            }
            scanned = (size_t)(nl - s) + 1;
        }
        int64_t left = deadline - tdb_now_ms();
        if (c->out < 0 || left <= 0) {
            tdb_error_set(err, c->out < 0 ? EPIPE : ETIMEDOUT, "%s%s",
                          c->out < 0 ? "it ended without answering" : "it did not answer in time",
                          c->got.len ? "; it said:\n" : "");
            if (c->got.len && err && strlen(err->msg) < sizeof(err->msg) - 1)
                snprintf(err->msg + strlen(err->msg), sizeof(err->msg) - strlen(err->msg), "%s",
                         tail_lines(tdb_buf_str(&c->got), 6));
            return NULL;
        }
        struct pollfd pfd = {c->out, POLLIN, 0};
        int r = poll(&pfd, 1, (int)left);
        if (r < 0 && errno != EINTR) {
            tdb_error_errno(err, "cannot read a helper's output: poll");
            return NULL;
        }
        if (r > 0)
            drain(&c->out, &c->got);
    }
}

int tdb_child_finish(tdb_child *c, int grace_ms)
{
    int status = -1, rc = -1;
    if (c->in >= 0)
        close(c->in), c->in = -1;
    if (c->pid > 0) {
        int64_t deadline = tdb_now_ms() + grace_ms;
        pid_t r;
        while ((r = waitpid(c->pid, &status, WNOHANG)) == 0 && tdb_now_ms() < deadline) {
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (r == 0) {
            kill(-c->pid, SIGKILL);
            while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
                ;
        }
        rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        c->pid = -1;
    }
    if (c->out >= 0)
        close(c->out), c->out = -1;
    tdb_buf_free(&c->got);
    return rc;
}

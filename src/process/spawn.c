/* process/spawn.c: fork/exec with captured output and a deadline (see process/spawn.h). */
#include "process/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
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

enum { DIE_WITH_US = 1, NEW_SESSION = 2 };

/* Fork and exec ARGV (with ENVP, or ours when NULL) in a process group of
 * its own (with NEW_SESSION: a session of its own, without a controlling
 * terminal), its stdin, stdout and stderr being FDS[0..2] (-1: /dev/null
 * for stdin); with DIE_WITH_US it is killed when tdebug dies.  Its pid, or
 * -1 with ERR set ("cannot run 'gdb': No such file or directory"), the exec
 * failure coming back through a close-on-exec pipe. */
static pid_t start_child(char *const argv[], char **envp, const int fds[3], int how,
                         const tdb_child_user *as, tdb_error *err)
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
        if (how & NEW_SESSION)
            setsid();
        else
            setpgid(0, 0);
        signal(SIGPIPE, SIG_DFL);
        /* Another user's rights, wholly: groups first, then the gid, the uid
         * last (after it nothing more may be dropped).  Before the death
         * signal, which a change of credentials clears. */
        if (as && (setgroups(0, NULL) < 0 || setresgid(as->gid, as->gid, as->gid) < 0 ||
                   setresuid(as->uid, as->uid, as->uid) < 0 || chdir("/") < 0)) {
            int e = errno;
            (void)!write(xpipe[1], &e, sizeof(e));
            _exit(127);
        }
        if (how & DIE_WITH_US) {
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

/* One program of capture(): its pipes and what it said so far. */
typedef struct running {
    pid_t pid;   /* -1 once reaped (or never started) */
    int out, err; /* our ends, -1 at EOF */
    tdb_buf ob, eb;
    int64_t t0;
} running;

/* Run the N programs ARGVS at once (see tdb_spawn_capture_many()); HOW is
 * start_child()'s. */
static int capture(char *const *const argvs[], size_t n, char *const env[], int timeout_ms,
                   int cancel_fd, int how, tdb_spawn_result *out, tdb_error *errs)
{
    char **envp = env ? build_env(env) : NULL;
    running *r = tdb_xcalloc(n ? n : 1, sizeof(*r));
    struct pollfd *fds = tdb_xcalloc(2 * n + 1, sizeof(*fds));
    int64_t deadline = timeout_ms > 0 ? tdb_now_ms() + timeout_ms : 0;
    int timed_out = 0, cancelled = 0;

    for (size_t i = 0; i < n; i++) {
        int opipe[2] = {-1, -1}, epipe[2] = {-1, -1};
        memset(&out[i], 0, sizeof(out[i]));
        r[i].pid = -1;
        r[i].out = r[i].err = -1;
        if (pipe2(opipe, O_CLOEXEC) < 0 || pipe2(epipe, O_CLOEXEC) < 0) {
            tdb_error_errno(&errs[i], "cannot run '%s': pipe", argvs[i][0]);
        } else {
            int child_fds[3] = {-1, opipe[1], epipe[1]};
            r[i].t0 = tdb_now_ms();
            r[i].pid = start_child(argvs[i], envp, child_fds, how, NULL, &errs[i]);
        }
        if (opipe[1] >= 0)
            close(opipe[1]);
        if (epipe[1] >= 0)
            close(epipe[1]);
        if (r[i].pid > 0) {
            r[i].out = opipe[0];
            r[i].err = epipe[0];
        } else {
            if (opipe[0] >= 0)
                close(opipe[0]);
            if (epipe[0] >= 0)
                close(epipe[0]);
        }
    }
    for (;;) {
        size_t nfds = 0, open_pipes = 0;
        for (size_t i = 0; i < n; i++) {
            fds[2 * i] = (struct pollfd){r[i].out, POLLIN, 0};
            fds[2 * i + 1] = (struct pollfd){r[i].err, POLLIN, 0};
            open_pipes += (r[i].out >= 0) + (r[i].err >= 0);
            /* A program is done when both pipes closed: reap it now, so
             * its time is its own, not the slowest one's. */
            int status;
            if (r[i].pid > 0 && r[i].out < 0 && r[i].err < 0 &&
                waitpid(r[i].pid, &status, 0) == r[i].pid) {
                out[i].status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                out[i].ms = (double)(tdb_now_ms() - r[i].t0);
                r[i].pid = -1;
            }
        }
        nfds = 2 * n;
        fds[nfds++] = (struct pollfd){cancel_fd, POLLIN, 0};
        if (!open_pipes)
            break;
        int wait = -1;
        if (deadline) {
            int64_t left = deadline - tdb_now_ms();
            if (left <= 0) {
                timed_out = 1;
                break;
            }
            wait = (int)left;
        }
        int rc = poll(fds, nfds, wait);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0)
            break;
        if (cancel_fd >= 0 && fds[nfds - 1].revents) {
            cancelled = 1;
            break;
        }
        for (size_t i = 0; i < n; i++) {
            if (fds[2 * i].revents)
                drain(&r[i].out, &r[i].ob);
            if (fds[2 * i + 1].revents)
                drain(&r[i].err, &r[i].eb);
        }
    }
    /* What still runs was too slow, or we were told to stop. */
    for (size_t i = 0; i < n; i++) {
        if (r[i].pid > 0) {
            int status = 0;
            kill(-r[i].pid, SIGKILL);
            while (waitpid(r[i].pid, &status, 0) < 0 && errno == EINTR)
                ;
            out[i].status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            out[i].timed_out = timed_out;
            out[i].ms = (double)(tdb_now_ms() - r[i].t0);
        }
        if (r[i].out >= 0)
            close(r[i].out);
        if (r[i].err >= 0)
            close(r[i].err);
        if (!errs[i].set) {
            out[i].out = tdb_buf_detach(&r[i].ob);
            out[i].err = tdb_buf_detach(&r[i].eb);
        }
        tdb_buf_free(&r[i].ob);
        tdb_buf_free(&r[i].eb);
    }
    free(r);
    free(fds);
    free(envp);
    return cancelled ? -1 : 0;
}

int tdb_spawn_capture(char *const argv[], char *const env[], int timeout_ms,
                      tdb_spawn_result *out, tdb_error *err)
{
    char *const *const argvs[1] = {argv};
    tdb_error e = {0};
    capture(argvs, 1, env, timeout_ms, -1, 0, out, &e);
    if (e.set) {
        if (err)
            *err = e;
        return -1;
    }
    return 0;
}

int tdb_spawn_capture_many(char *const *const argvs[], size_t n, int timeout_ms, int cancel_fd,
                           tdb_spawn_result *out, tdb_error *errs)
{
    return capture(argvs, n, NULL, timeout_ms, cancel_fd, NEW_SESSION, out, errs);
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
    return tdb_child_start_as(argv, env, NULL, out, err);
}

int tdb_child_start_as(char *const argv[], char *const env[], const tdb_child_user *as,
                       tdb_child *out, tdb_error *err)
{
    int ipipe[2] = {-1, -1}, opipe[2] = {-1, -1};
    char **envp = as ? NULL : env ? build_env(env) : NULL;
    pid_t pid;
    int rc = -1;

    if (pipe2(ipipe, O_CLOEXEC) < 0 || pipe2(opipe, O_CLOEXEC) < 0) {
        tdb_error_errno(err, "cannot run '%s': pipe", argv[0]);
        goto cleanup;
    }
    int fds[3] = {ipipe[0], opipe[1], opipe[1]};
    pid = start_child(argv, as ? (char **)env : envp, fds, DIE_WITH_US, as, err);
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

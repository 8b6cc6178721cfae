/* spawn.c: fork/exec with captured output and a deadline (see spawn.h). */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

int tdb_spawn_capture(char *const argv[], char *const env[], int timeout_ms,
                      tdb_spawn_result *out, tdb_error *err)
{
    int opipe[2] = {-1, -1}, epipe[2] = {-1, -1}, xpipe[2] = {-1, -1};
    char **envp = env ? build_env(env) : NULL;
    tdb_buf ob = TDB_BUF_INIT, eb = TDB_BUF_INIT;
    pid_t pid = -1;
    int rc = -1;

    if (pipe2(opipe, O_CLOEXEC) < 0 || pipe2(epipe, O_CLOEXEC) < 0 ||
        pipe2(xpipe, O_CLOEXEC) < 0) {
        tdb_error_errno(err, "cannot run '%s': pipe", argv[0]);
        goto cleanup;
    }
    pid = fork();
    if (pid < 0) {
        tdb_error_errno(err, "cannot run '%s': fork", argv[0]);
        goto cleanup;
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        setpgid(0, 0);
        signal(SIGPIPE, SIG_DFL);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(opipe[1], 1);
        dup2(epipe[1], 2);
        if (envp)
            environ = envp;
        execvp(argv[0], argv);
        int e = errno;
        (void)!write(xpipe[1], &e, sizeof(e));
        _exit(127);
    }
    close(opipe[1]), opipe[1] = -1;
    close(epipe[1]), epipe[1] = -1;
    close(xpipe[1]), xpipe[1] = -1;

    /* The exec error pipe closes on a successful exec. */
    int exec_errno = 0;
    ssize_t n;
    do
        n = read(xpipe[0], &exec_errno, sizeof(exec_errno));
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof(exec_errno)) {
        waitpid(pid, NULL, 0);
        errno = exec_errno;
        tdb_error_set_exit(err, exec_errno == ENOENT ? TDB_EXIT_NOTFOUND : TDB_EXIT_NOEXEC,
                           exec_errno, "cannot run '%s': %s", argv[0], strerror(exec_errno));
        pid = -1;
        goto cleanup;
    }

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
        if (xpipe[i] >= 0)
            close(xpipe[i]);
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


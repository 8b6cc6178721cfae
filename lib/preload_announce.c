/*
 * preload_announce.c: announcement lines and the small I/O they need.
 * Runs inside the dynamic loader's audit namespace (no stdio streams, no
 * allocation) and inside the Python extension.
 */
#include "preload_announce.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/*
 * SIGPIPE is blocked around the write and a SIGPIPE we caused is consumed,
 * so a closed pipe never kills the host (send(MSG_NOSIGNAL) does not work
 * on pipes and ttys).
 */
int tdp_write_all(int fd, const char *buf, size_t len)
{
    sigset_t pipe_set, old, pending_before;
    int rc = 0;

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending_before);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = -1;
            break;
        }
        buf += n;
        len -= (size_t)n;
    }
    if (rc < 0 && errno == EPIPE && !sigismember(&pending_before, SIGPIPE)) {
        int saved = errno;
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
        errno = saved;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

ssize_t tdp_read_small(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n, total = 0;

    if (fd < 0)
        return -1;
    while ((size_t)total < size - 1) {
        n = read(fd, buf + total, size - 1 - (size_t)total);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        total += n;
    }
    close(fd);
    buf[total] = '\0';
    return total;
}

long tdp_tracer_pid(void)
{
    char status[4096];
    const char *p;

    if (tdp_read_small("/proc/self/status", status, sizeof(status)) < 0)
        return 0;
    p = strstr(status, "\nTracerPid:");
    return p ? strtol(p + 11, NULL, 10) : 0;
}

void tdp_line_add(struct tdp_line *l, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (l->overflow)
        return;
    va_start(ap, fmt);
    n = vsnprintf(l->s + l->len, sizeof(l->s) - l->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(l->s) - l->len)
        l->overflow = 1;
    else
        l->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence at P, 0 if there is none. */
static size_t utf8_len(const unsigned char *p)
{
    size_t n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

void tdp_line_str(struct tdp_line *l, const char *key, const char *s)
{
    tdp_line_add(l, ",\"%s\":", key);
    if (!s) {
        tdp_line_add(l, "null");
        return;
    }
    tdp_line_add(l, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n;
        if (*p == '"' || *p == '\\')
            tdp_line_add(l, "\\%c", *p++);
        else if (*p < 0x20 || *p == 0x7f)
            tdp_line_add(l, "\\u%04x", *p++);
        else if (*p < 0x80)
            tdp_line_add(l, "%c", *p++);
        else if ((n = utf8_len(p)))
            tdp_line_add(l, "%.*s", (int)n, (const char *)p), p += n;
        else
            tdp_line_add(l, "\\ufffd"), p++;
    }
    tdp_line_add(l, "\"");
}

void tdp_line_start(struct tdp_line *l, const char *event)
{
    l->len = 0;
    l->overflow = 0;
    tdp_line_add(l, "{\"tdebug\":%d,\"event\":\"%s\",\"pid\":%ld,\"ppid\":%ld,\"uid\":%lu",
                 TDEBUG_PRELOAD_ABI, event, (long)getpid(), (long)getppid(),
                 (unsigned long)getuid());
}

void tdp_line_end(struct tdp_line *l)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    struct timespec ts;

    exe[n > 0 ? n : 0] = '\0';
    tdp_line_str(l, "exe", n > 0 ? exe : NULL);
    clock_gettime(CLOCK_REALTIME, &ts);
    tdp_line_add(l, ",\"time\":%.3f}\n", ts.tv_sec + ts.tv_nsec / 1e9);
}

void tdp_announce_send(const char *path, const struct tdp_line *l)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    char dir[sizeof(addr.sun_path)];
    struct stat st;
    char *slash;
    int fd;

    if (!path || !*path || l->overflow || strlen(path) >= sizeof(addr.sun_path))
        return;
    strcpy(dir, path);
    slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
            return;
    }
    strcpy(addr.sun_path, path);
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    sendto(fd, l->s, l->len, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&addr,
           sizeof(addr));
    close(fd);
}

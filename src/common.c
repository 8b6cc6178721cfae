/* common.c: errors, buffers, parsing and paths shared by all layers. */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef TDB_LIBDIR
#define TDB_LIBDIR "/usr/local/lib/tdebug"
#endif
#ifndef TDB_PYTHON
#define TDB_PYTHON "/usr/bin/python3"
#endif

static void error_vset(tdb_error *err, int exit_code, int code, const char *fmt, va_list ap)
{
    if (!err || err->set)
        return;
    err->set = 1;
    err->code = code;
    err->exit_code = exit_code;
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

void tdb_error_set(tdb_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, 0, code, fmt, ap);
    va_end(ap);
}

void tdb_error_set_exit(tdb_error *err, int exit_code, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, exit_code, code, fmt, ap);
    va_end(ap);
}

void tdb_error_errno(tdb_error *err, const char *fmt, ...)
{
    int saved = errno;
    char head[768];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(head, sizeof(head), fmt, ap);
    va_end(ap);
    tdb_error_set(err, saved, "%s: %s", head, strerror(saved));
    errno = saved;
}

void tdb_error_clear(tdb_error *err)
{
    if (err)
        memset(err, 0, sizeof(*err));
}

void tdb_print_error(const tdb_error *err)
{
    fprintf(stderr, "tdebug: %s\n", err && err->set ? err->msg : "unknown error");
}

int tdb_error_exit(const tdb_error *err)
{
    tdb_print_error(err);
    return err && err->exit_code ? err->exit_code : TDB_EXIT_TOOL;
}

void tdb_fail(const char *fmt, ...)
{
    va_list ap;
    fputs("tdebug: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void tdb_warn(const char *fmt, ...)
{
    va_list ap;
    fputs("tdebug: warning: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void out_of_memory(size_t n)
{
    fprintf(stderr, "tdebug: out of memory allocating %zu bytes\n", n);
    abort();
}

void *tdb_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        out_of_memory(n);
    return p;
}

void *tdb_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        out_of_memory(n * size);
    return p;
}

void *tdb_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        out_of_memory(n);
    return q;
}

char *tdb_xstrdup(const char *s)
{
    return tdb_xstrndup(s, strlen(s));
}

char *tdb_xstrndup(const char *s, size_t n)
{
    char *p = tdb_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *tdb_xasprintf(const char *fmt, ...)
{
    tdb_buf b = TDB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    tdb_buf_vaddf(&b, fmt, ap);
    va_end(ap);
    return tdb_buf_detach(&b);
}

void tdb_ptrs_push(char ***list, size_t *n, char *item)
{
    *list = tdb_xrealloc(*list, (*n + 1) * sizeof(**list));
    (*list)[(*n)++] = item;
}

static void buf_grow(tdb_buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    b->s = tdb_xrealloc(b->s, cap);
    b->cap = cap;
}

void tdb_buf_add(tdb_buf *b, const char *data, size_t n)
{
    buf_grow(b, n);
    memcpy(b->s + b->len, data, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void tdb_buf_adds(tdb_buf *b, const char *s)
{
    tdb_buf_add(b, s, strlen(s));
}

void tdb_buf_addc(tdb_buf *b, char c)
{
    tdb_buf_add(b, &c, 1);
}

void tdb_buf_vaddf(tdb_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    buf_grow(b, (size_t)n);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void tdb_buf_addf(tdb_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tdb_buf_vaddf(b, fmt, ap);
    va_end(ap);
}

const char *tdb_buf_str(const tdb_buf *b)
{
    return b->s ? b->s : "";
}

char *tdb_buf_detach(tdb_buf *b)
{
    char *s = b->s ? b->s : tdb_xstrdup("");
    b->s = NULL;
    b->len = b->cap = 0;
    return s;
}

void tdb_buf_reset(tdb_buf *b)
{
    b->len = 0;
    if (b->s)
        b->s[0] = '\0';
}

void tdb_buf_free(tdb_buf *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

int tdb_parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    long v;

    if (!s || !*s)
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int tdb_parse_seconds(const char *s, double *out)
{
    char *end;
    double v;

    if (!s || !*s)
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || *end || end == s || !isfinite(v) || v < 0 || v > 1e7)
        return -1;
    *out = v;
    return 0;
}

int64_t tdb_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tdb_shell_quote(tdb_buf *b, const char *arg)
{
    tdb_buf_addc(b, '\'');
    for (const char *p = arg; *p; p++) {
        if (*p == '\'')
            tdb_buf_adds(b, "'\\''");
        else
            tdb_buf_addc(b, *p);
    }
    tdb_buf_addc(b, '\'');
}

char *tdb_companion_path(const char *name)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            /* Beside the binary (a build tree), then PREFIX/lib/tdebug for
             * an install moved or made with another PREFIX than built. */
            const char *const rel[] = {"%s/%s", "%s/../lib/tdebug/%s"};
            for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
                char *p = tdb_xasprintf(rel[i], exe, name);
                char *real = realpath(p, NULL); /* no "bin/.." in what users see */
                free(p);
                if (real)
                    return real;
            }
        }
    }
    char *p = tdb_xasprintf("%s/%s", TDB_LIBDIR, name);
    if (access(p, F_OK) == 0)
        return p;
    free(p);
    return NULL;
}

char *tdb_which(const char *name)
{
    if (strchr(name, '/'))
        return tdb_xstrdup(name);
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char *copy = tdb_xstrdup(path), *save = NULL, *found = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
        char *cand = tdb_xasprintf("%s/%s", *dir ? dir : ".", name);
        if (access(cand, X_OK) == 0)
            found = cand;
        else
            free(cand);
    }
    free(copy);
    return found;
}

const char *tdb_target_python(const char *given)
{
    const char *env = getenv("TDEBUG_PYTHON");
    if (given)
        return given;
    return env && *env ? env : tdb_default_python();
}

const char *tdb_default_python(void)
{
    return TDB_PYTHON;
}

char *tdb_read_file(const char *path, size_t *out_len, tdb_error *err)
{
    tdb_buf b = TDB_BUF_INIT;
    char chunk[4096];
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        tdb_error_errno(err, "cannot open '%s'", path);
        return NULL;
    }
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            tdb_error_errno(err, "cannot read '%s'", path);
            close(fd);
            tdb_buf_free(&b);
            return NULL;
        }
        if (n == 0)
            break;
        tdb_buf_add(&b, chunk, (size_t)n);
    }
    close(fd);
    if (out_len)
        *out_len = b.len;
    return tdb_buf_detach(&b);
}

/* A name beside PATH that does not exist: PATH.bak, then PATH.bak.1, ... */
static char *free_backup_name(const char *path)
{
    struct stat st;
    char *name = tdb_xasprintf("%s.bak", path);
    for (int n = 1; lstat(name, &st) == 0; n++) {
        free(name);
        name = tdb_xasprintf("%s.bak.%d", path, n);
    }
    return name;
}

int tdb_write_file_keeping(const char *path, const char *data, size_t len, char **out_backup,
                           tdb_error *err)
{
    char *tmp = tdb_xasprintf("%s.tdebug-XXXXXX", path), *backup = NULL;
    struct stat st;
    int fd = -1, rc = -1, exists = lstat(path, &st) == 0;

    if (exists && S_ISDIR(st.st_mode)) {
        tdb_error_set(err, EISDIR, "cannot write '%s': it is a directory", path);
        goto cleanup;
    }
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        tdb_error_errno(err, "cannot create a file beside '%s'", path);
        goto cleanup;
    }
    /* The mode a plain creat() would give, or the old file's. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, exists && S_ISREG(st.st_mode) ? (st.st_mode & 07777) : (0666 & ~mask));
    for (size_t off = 0; off < len;) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            tdb_error_errno(err, "cannot write '%s'", tmp);
            goto cleanup;
        }
        off += (size_t)n;
    }
    if (close(fd) < 0) {
        fd = -1;
        tdb_error_errno(err, "cannot write '%s'", tmp);
        goto cleanup;
    }
    fd = -1;
    if (exists) {
        /* A hard link keeps the old file whole under its new name while
         * the new one takes PATH; where links are refused, a rename. */
        backup = free_backup_name(path);
        if (link(path, backup) < 0 && rename(path, backup) < 0) {
            tdb_error_errno(err, "cannot keep '%s' as '%s'", path, backup);
            goto cleanup;
        }
    }
    if (rename(tmp, path) < 0) {
        tdb_error_errno(err, "cannot write '%s'", path);
        if (backup && access(path, F_OK) < 0)
            rename(backup, path); /* it was moved: put it back */
        else if (backup)
            unlink(backup); /* a second link: PATH still has the data */
        goto cleanup;
    }
    rc = 0;
    if (out_backup) {
        *out_backup = backup;
        backup = NULL;
    }
cleanup:
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        unlink(tmp);
    free(tmp);
    free(backup);
    return rc;
}

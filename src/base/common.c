/* base/common.c: errors, buffers, parsing and paths shared by all layers. */
#include "base/common.h"

#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
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

static void print_line(const char *prefix, const char *fmt, va_list ap)
{
    fputs(prefix, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void tdb_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    print_line("tdebug: ", fmt, ap);
    va_end(ap);
}

void tdb_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    print_line("tdebug: warning: ", fmt, ap);
    va_end(ap);
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

char *tdb_hex(const void *data, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *d = data;
    char *s = tdb_xmalloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = digits[d[i] >> 4];
        s[2 * i + 1] = digits[d[i] & 15];
    }
    s[2 * n] = '\0';
    return s;
}

void tdb_ptrs_push(char ***list, size_t *n, char *item)
{
    *list = tdb_xrealloc(*list, (*n + 2) * sizeof(**list));
    (*list)[(*n)++] = item;
    (*list)[*n] = NULL;
}

void tdb_strv_free(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
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
    if (!fmt)
        return; /* and gcc, inlining callers at -O1, knows it */
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

const char *tdb_base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
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

const char *tdb_gdb_env_problem(const char *name, const char *value)
{
    /* 'set environment' takes one line and trims blanks around the value:
     * what it cannot carry exactly is refused, not changed. */
    size_t n = value ? strlen(value) : 0;
    if (!*name || strpbrk(name, "=\n\r \t"))
        return "a name has no '=', blank or newline";
    if (value && (strpbrk(value, "\n\r") ||
                  (n && (isspace((unsigned char)value[0]) || isspace((unsigned char)value[n - 1])))))
        return "gdb drops newlines and blanks at the ends of a value";
    return NULL;
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

/* May we trust directory PATH (stat() when FOLLOW, else lstat()) with a
 * cache: a directory of ours or root's that no other user may change?
 * Root running with another user's HOME (sudo -E) must not write where
 * that user can plant links, nor read an index they wrote. */
static int trusted_dir(const char *path, int follow, tdb_error *err)
{
    struct stat st;
    if ((follow ? stat(path, &st) : lstat(path, &st)) < 0) {
        tdb_error_errno(err, "cannot use the cache directory '%s'", path);
        return -1;
    }
    /* Sticky (/tmp): others may add entries, never replace ours, and each
     * directory under it is checked in turn. */
    int shared = !(st.st_mode & S_ISVTX) &&
                 ((st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && st.st_gid != getegid()));
    if (!S_ISDIR(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != 0) || shared) {
        tdb_error_set(err, EPERM,
                      "cannot use the cache directory '%s': %s (uid %lu, mode %04o); no cache is "
                      "used (set XDG_CACHE_HOME to a directory of yours)", path,
                      !S_ISDIR(st.st_mode) ? "not a directory"
                      : (st.st_uid != geteuid() && st.st_uid != 0) ? "it belongs to another user"
                                                                    : "other users may write there",
                      (unsigned long)st.st_uid, (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

char *tdb_user_cache_dir(const char *sub, tdb_error *err)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    const char *base = xdg && *xdg ? xdg : home;
    char *dir = xdg && *xdg ? tdb_xasprintf("%s/tdebug/%s", xdg, sub)
                : home && *home ? tdb_xasprintf("%s/.cache/tdebug/%s", home, sub) : NULL;
    if (!dir) {
        tdb_error_set(err, ENOENT, "no cache directory: neither XDG_CACHE_HOME nor HOME is set");
        return NULL;
    }
    /* The base itself (which may be a link: /home -> /data/home) before
     * anything is made in it, then every directory under it, links
     * refused.  A base that does not exist yet is made below, ours. */
    struct stat bst;
    if ((stat(base, &bst) == 0 || errno != ENOENT) && trusted_dir(base, 1, err) < 0) {
        free(dir);
        return NULL;
    }
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0700);
            *p = '/';
        }
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        tdb_error_errno(err, "cannot make the cache directory '%s': mkdir", dir);
        free(dir);
        return NULL;
    }
    if (trusted_dir(base, 1, err) < 0) {
        free(dir);
        return NULL;
    }
    for (char *p = dir + strlen(base); *p; p++)
        if (*p == '/' && p > dir + strlen(base)) {
            *p = '\0';
            int bad = trusted_dir(dir, 0, err) < 0;
            *p = '/';
            if (bad) {
                free(dir);
                return NULL;
            }
        }
    if (trusted_dir(dir, 0, err) < 0) {
        free(dir);
        return NULL;
    }
    return dir;
}

uint64_t tdb_cache_max(void)
{
    const char *env = getenv("TDEBUG_CACHE_MAX");
    char *end = NULL;
    if (!env || !*env)
        return TDB_CACHE_MAX_DEFAULT;
    errno = 0;
    unsigned long long v = strtoull(env, &end, 10);
    int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20
              : *end == 'G' || *end == 'g' ? 30 : 0;
    if (shift)
        end++;
    if (errno || end == env || *end || *env == '-' || v > (~0ull >> shift))
        return TDB_CACHE_MAX_DEFAULT;
    return (uint64_t)v << shift;
}

typedef struct cache_file {
    char *path;
    uint64_t size;
    time_t used;
} cache_file;

static int older_first(const void *a, const void *b)
{
    const cache_file *x = a, *y = b;
    return x->used < y->used ? -1 : x->used > y->used;
}

uint64_t tdb_cache_prune(const char *dir, uint64_t max)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    cache_file *files = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0, removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        char *path = tdb_xasprintf("%s/%s", dir, e->d_name);
        if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
            free(path);
            continue;
        }
        TDB_GROW(files, n, cap);
        files[n].path = path;
        files[n].size = (uint64_t)st.st_size;
        files[n].used = st.st_atime > st.st_mtime ? st.st_atime : st.st_mtime;
        total += files[n].size;
        n++;
    }
    closedir(d);
    if (n)
        qsort(files, n, sizeof(*files), older_first);
    for (size_t i = 0; i < n; i++) {
        if (total > max && unlink(files[i].path) == 0) {
            total -= files[i].size;
            removed += files[i].size;
        }
        free(files[i].path);
    }
    free(files);
    return removed;
}

char *tdb_private_dir(const char *prefix, tdb_error *err)
{
    const char *tmp = getenv("TMPDIR");
    char *dir;

    if (!tmp || *tmp != '/' || strlen(tmp) > 64)
        tmp = "/tmp";
    dir = tdb_xasprintf("%s/%s-XXXXXX", tmp, prefix);
    if (mkdtemp(dir))
        return dir;
    free(dir);
    if (strcmp(tmp, "/tmp") != 0) {
        dir = tdb_xasprintf("/tmp/%s-XXXXXX", prefix);
        if (mkdtemp(dir))
            return dir;
        free(dir);
    }
    tdb_error_errno(err, "cannot create a directory of tdebug's own in '%s': mkdtemp", tmp);
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

/* Read all of FD (closed) into a new string; PATH names it in messages. */
static char *read_fd(int fd, const char *path, size_t *out_len, tdb_error *err)
{
    tdb_buf b = TDB_BUF_INIT;
    char chunk[4096];

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

char *tdb_read_file(const char *path, size_t *out_len, tdb_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        tdb_error_errno(err, "cannot open '%s'", path);
        return NULL;
    }
    return read_fd(fd, path, out_len, err);
}

const char *tdb_file_kind(mode_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
    default: return "not a regular file";
    }
}

/* ERR for NAME, which is (or links to) a file of MODE that is no regular
 * file. */
static void not_regular(tdb_error *err, const char *path, const char *name, mode_t mode)
{
    struct stat lst;
    char *target = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode) ? realpath(path, NULL) : NULL;
    tdb_error_set_exit(err, TDB_EXIT_FAIL, EINVAL,
                       "cannot update '%s': %s%s%s is %s, not a regular file (tdebug writes "
                       "only regular files: move it away and run the command again)",
                       name, target ? "it links to '" : "it", target ? target : "",
                       target ? "', which" : "", tdb_file_kind(mode));
    free(target);
}

char *tdb_read_regular_file(const char *path, const char *name, size_t *out_len, tdb_error *err)
{
    struct stat st, fst;
    int fd;

    if (!name)
        name = path;
    /* stat() first: a device is never opened (opening some has effects),
     * a FIFO never waited on. */
    if (stat(path, &st) < 0) {
        tdb_error_set(err, errno, "cannot read '%s': %s", name, strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        not_regular(err, path, name, st.st_mode);
        return NULL;
    }
    /* O_NONBLOCK: should a FIFO have taken its place since, the open does
     * not wait for a writer, and fstat() below tells. */
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        tdb_error_set(err, errno, "cannot read '%s': %s", name, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode)) {
        not_regular(err, path, name, fst.st_mode);
        close(fd);
        return NULL;
    }
    return read_fd(fd, name, out_len, err);
}

static int write_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The next free numbered backup name for PATH: PATH.~N~, N one more than
 * the highest existing. */
static char *next_backup(const char *path)
{
    char *copy = tdb_xstrdup(path), *copy2 = tdb_xstrdup(path);
    const char *dir = dirname(copy), *base = basename(copy2);
    size_t bl = strlen(base);
    long max = 0;
    DIR *d = opendir(dir);

    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            const char *nm = de->d_name;
            if (strncmp(nm, base, bl) || strncmp(nm + bl, ".~", 2))
                continue;
            char *end;
            long v = strtol(nm + bl + 2, &end, 10);
            if (end != nm + bl + 2 && !strcmp(end, "~") && v > max)
                max = v;
        }
        closedir(d);
    }
    char *out = tdb_xasprintf("%s.~%ld~", path, max + 1);
    free(copy);
    free(copy2);
    return out;
}

/* Keep the current file at PATH (whose bytes are OLD) as a numbered
 * backup: a hard link to the old file when the filesystem allows one, else
 * a copy.  Returns the backup's path or NULL with ERR set. */
static char *make_backup(const char *path, const char *name, const char *old, size_t old_len,
                         mode_t mode, tdb_error *err)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        char *bak = next_backup(path);
        if (link(path, bak) == 0)
            return bak;
        if (errno == EEXIST) { /* someone else took the number: next */
            free(bak);
            continue;
        }
        int fd = open(bak, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
        if (fd < 0 && errno == EEXIST) {
            free(bak);
            continue;
        }
        if (fd < 0 || write_all(fd, old, old_len) < 0 || fsync(fd) < 0) {
            tdb_error_errno(err, "cannot keep a backup of '%s' as '%s'", name, bak);
            if (fd >= 0) {
                close(fd);
                unlink(bak);
            }
            free(bak);
            return NULL;
        }
        close(fd);
        return bak;
    }
    tdb_error_set(err, 0, "cannot keep a backup of '%s': too many backups being made at once", name);
    return NULL;
}

int tdb_write_file_keeping(const char *path, const char *name, const char *old, size_t old_len,
                           const char *data, size_t len, char **out_backup, int *out_changed,
                           tdb_error *err)
{
    char *real = NULL, *dircopy = NULL, *tmp = NULL, *backup = NULL, *now = NULL;
    int fd = -1, dfd = -1, rc = -1;
    struct stat st;
    int existed;
    mode_t mode;

    if (!name)
        name = path;
    if (old && old_len == len && !memcmp(old, data, len)) {
        if (out_backup)
            *out_backup = NULL;
        if (out_changed)
            *out_changed = 0;
        return 0;
    }
    /* Replace a symlink's target, not the link (dotfile managers). */
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        real = realpath(path, NULL);
        if (!real) {
            tdb_error_errno(err, "cannot resolve the symbolic link '%s'", name);
            goto cleanup;
        }
    } else {
        real = tdb_xstrdup(path);
    }
    existed = stat(real, &st) == 0;
    if (!existed && errno != ENOENT) {
        tdb_error_errno(err, "cannot stat '%s'", name);
        goto cleanup;
    }
    if (existed && !S_ISREG(st.st_mode)) {
        not_regular(err, path, name, st.st_mode);
        goto cleanup;
    }
    /* The file must still hold what the caller read and based DATA on. */
    if (existed != (old != NULL)) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, 0,
                           "cannot update '%s': it %s while tdebug was working (run the command again)",
                           name, existed ? "appeared" : "disappeared");
        goto cleanup;
    }
    if (existed) {
        size_t now_len;
        now = tdb_read_regular_file(real, name, &now_len, err);
        if (!now)
            goto cleanup;
        if (now_len != old_len || memcmp(now, old, old_len)) {
            tdb_error_set_exit(err, TDB_EXIT_FAIL, 0,
                               "cannot update '%s': it changed while tdebug was working (run the command again)",
                               name);
            goto cleanup;
        }
        mode = st.st_mode & 07777;
    } else {
        mode_t um = umask(0);
        umask(um);
        mode = 0666 & ~um;
    }

    dircopy = tdb_xstrdup(real);
    const char *dir = dirname(dircopy);
    {
        char *bcopy = tdb_xstrdup(real);
        tmp = tdb_xasprintf("%s/.%s.tdebug-XXXXXX", dir, basename(bcopy));
        free(bcopy);
    }
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        tdb_error_errno(err, "cannot create a temporary file in '%s'", dir);
        free(tmp);
        tmp = NULL;
        goto cleanup;
    }
    if (write_all(fd, data, len) < 0) {
        tdb_error_errno(err, "cannot write '%s'", tmp);
        goto cleanup;
    }
    if (fchmod(fd, mode) < 0) {
        tdb_error_errno(err, "cannot set the mode of '%s'", tmp);
        goto cleanup;
    }
    if (existed && (st.st_uid != geteuid() || st.st_gid != getegid()))
        (void)!fchown(fd, st.st_uid, st.st_gid); /* best effort: root editing a user's file */
    if (fsync(fd) < 0) {
        tdb_error_errno(err, "cannot write '%s' to disk", tmp);
        goto cleanup;
    }
    if (close(fd) < 0) {
        fd = -1;
        tdb_error_errno(err, "cannot write '%s'", tmp);
        goto cleanup;
    }
    fd = -1;
    if (existed) {
        backup = make_backup(real, name, old, old_len, st.st_mode, err);
        if (!backup)
            goto cleanup;
    }
    if (rename(tmp, real) < 0) {
        tdb_error_errno(err, "cannot replace '%s'", name);
        goto cleanup;
    }
    free(tmp);
    tmp = NULL;
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd); /* the rename itself reaches the disk */
        close(dfd);
    }
    if (out_backup) {
        *out_backup = backup;
        backup = NULL;
    }
    if (out_changed)
        *out_changed = 1;
    rc = 0;
cleanup:
    if (fd >= 0)
        close(fd);
    if (tmp) {
        unlink(tmp);
        free(tmp);
    }
    free(backup);
    free(now);
    free(dircopy);
    free(real);
    return rc;
}

/* ---- JSON output that never drops data ---- */

size_t tdb_utf8_seq_len(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    if (!n)
        return 0;
    unsigned char c = p[0];
    size_t need = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : (c & 0xf0) == 0xe0 ? 3
                  : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!need || need > n)
        return 0;
    for (size_t k = 1; k < need; k++)
        if ((p[k] & 0xc0) != 0x80)
            return 0;
    if (need == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0)))
        return 0; /* overlong, or a UTF-16 surrogate */
    if (need == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90)))
        return 0; /* overlong, or past U+10FFFF */
    return need;
}

int tdb_utf8_valid(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t k = tdb_utf8_seq_len(s + i, len - i);
        if (!k)
            return 0;
        i += k;
    }
    return 1;
}

json_t *tdb_json_bytes(const char *s, size_t len, int force, int *out_escaped)
{
    if (out_escaped)
        *out_escaped = 0;
    if (!s)
        return json_null();
    if (!force && tdb_utf8_valid(s, len)) {
        json_t *v = json_stringn(s, len);
        if (v)
            return v;
    }
    tdb_buf b = TDB_BUF_INIT;
    for (size_t i = 0; i < len;) {
        size_t k = tdb_utf8_seq_len(s + i, len - i);
        if (k == 1 && s[i] == '\\')
            tdb_buf_adds(&b, "\\\\");
        else if (k)
            tdb_buf_add(&b, s + i, k);
        else
            tdb_buf_addf(&b, "\\x%02x", (unsigned char)s[i]);
        i += k ? k : 1;
    }
    json_t *v = json_stringn(tdb_buf_str(&b), b.len);
    tdb_buf_free(&b);
    if (out_escaped)
        *out_escaped = 1;
    return v ? v : json_null(); /* cannot happen: every byte left is valid */
}

static void set_escaped_flag(json_t *obj, const char *key, int escaped)
{
    if (!escaped)
        return;
    char *flag = tdb_xasprintf("%s_escaped", key);
    json_object_set_new(obj, flag, json_true());
    free(flag);
}

void tdb_json_set_str(json_t *obj, const char *key, const char *s)
{
    int escaped;
    json_object_set_new(obj, key, tdb_json_bytes(s, s ? strlen(s) : 0, 0, &escaped));
    set_escaped_flag(obj, key, escaped);
}

void tdb_json_set_strv(json_t *obj, const char *key, char *const *v, size_t n)
{
    int force = 0;
    for (size_t i = 0; i < n && !force; i++)
        force = v[i] && !tdb_utf8_valid(v[i], strlen(v[i]));
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, tdb_json_bytes(v[i], v[i] ? strlen(v[i]) : 0, force, NULL));
    json_object_set_new(obj, key, arr);
    set_escaped_flag(obj, key, force);
}

json_t *tdb_json_versioned(json_t *doc)
{
    json_t *out = json_object();
    json_object_set_new(out, "version", json_integer(TDB_JSON_VERSION));
    if (doc) {
        json_object_del(doc, "version");
        json_object_update(out, doc);
        json_decref(doc);
    }
    return out;
}

/*
 * process/preload.c: the tdebug side of libtdebug-preload.so (see process/preload.h and
 * lib/tdebug_preload.h for the contract).
 */
#include "process/preload.h"
#include "preload_config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

char *tdb_preload_library(tdb_error *err)
{
    char *path = tdb_companion_path(TDEBUG_PRELOAD_LIBNAME);

    if (!path)
        tdb_error_set(err, ENOENT,
                      "cannot find '%s' beside tdebug or in '%s' (run 'make', or "
                      "'make install')", TDEBUG_PRELOAD_LIBNAME, TDB_LIBDIR);
    return path;
}

/* ---- settings ---- */

/* The settings as the variables the library reads, NULL-terminated. */
#define N_SETTINGS 14 /* the rows of settings_table(), and its NULL */

static void settings_table(const tdb_preload_settings *s, const char *names[N_SETTINGS],
                           const char *values[N_SETTINGS])
{
    const tdb_preload_settings none = {0};
    size_t i = 0;

    if (!s)
        s = &none;
#define ROW(name, field) (names[i] = (name), values[i++] = s->field)
    ROW(TDEBUG_ENV_ACTION, action);
    ROW(TDEBUG_ENV_TIMEOUT, timeout);
    ROW(TDEBUG_ENV_WATCH, watch);
    ROW(TDEBUG_ENV_WATCH_FILES, watch_files);
    ROW(TDEBUG_ENV_NOTIFY, notify);
    ROW(TDEBUG_ENV_NOTIFY_ACK, notify_ack);
    ROW(TDEBUG_ENV_ANNOUNCE, announce);
    ROW(TDEBUG_ENV_WORKERS, workers);
    ROW(TDEBUG_ENV_VERBOSE, verbose);
    ROW(TDEBUG_ENV_TRAP_PID, trap_pid);
    ROW(TDEBUG_ENV_TRAP_STARTUP, trap_startup);
    ROW(TDEBUG_ENV_TRAP_WAIT, trap_wait);
    ROW(TDEBUG_ENV_RANK, rank);
#undef ROW
    names[i] = values[i] = NULL;
}

/* tdp_config_load() asks for variables through a getter and reports
 * through a callback, neither of which takes a context: these statics
 * carry it for the duration of one check. */
static __thread const char **check_names, **check_values;
static __thread tdb_error *check_err;
static __thread int check_full; /* name the variable in the message */

static const char *check_get(const char *name)
{
    for (size_t i = 0; check_names[i]; i++)
        if (!strcmp(check_names[i], name))
            return check_values[i];
    return NULL;
}

static void check_warn(const char *name, const char *value, const char *why, const char *dflt)
{
    if (check_full)
        tdb_error_set_exit(check_err, TDB_EXIT_USAGE, EINVAL, "cannot use %s='%s': %s", name,
                           value, why);
    else
        tdb_error_set_exit(check_err, TDB_EXIT_USAGE, EINVAL, "%s", why);
}

static int check(const char **names, const char **values, int full, tdb_error *err)
{
    struct tdp_config c;
    tdb_error local = {0};

    check_names = names;
    check_values = values;
    check_err = &local;
    check_full = full;
    tdp_config_load(&c, check_get, check_warn, (unsigned long)getuid());
    check_err = NULL;
    if (!local.set)
        return 0;
    if (err && !err->set)
        *err = local;
    return -1;
}

int tdb_preload_check(const tdb_preload_settings *s, tdb_error *err)
{
    const char *names[N_SETTINGS], *values[N_SETTINGS];

    settings_table(s, names, values);
    return check(names, values, 1, err);
}

int tdb_preload_check_one(const char *variable, const char *value, tdb_error *err)
{
    const char *names[2] = {variable, NULL}, *values[2] = {value, NULL};

    return check(names, values, 0, err);
}

/* Nonzero when the colon-separated LIST names LIBRARY. */
void tdb_preload_add_module_files(tdb_buf *b, const char *name)
{
    char *path = tdb_xstrdup(name);

    for (char *p = path; *p; p++)
        if (*p == '.')
            *p = '/';
    tdb_buf_addf(b, "%s*/%s.so,*/%s.*.so", b->len ? "," : "", path, path);
    free(path);
}

void tdb_preload_add_dir_files(tdb_buf *b, const char *dir)
{
    if (b->len)
        tdb_buf_addc(b, ',');
    for (const char *p = dir; *p; p++) {
        if (strchr("*?[]\\", *p))
            tdb_buf_addc(b, '\\');
        tdb_buf_addc(b, *p);
    }
    tdb_buf_adds(b, dir[0] && dir[strlen(dir) - 1] == '/' ? "*" : "/*");
}

static int list_has(const char *list, const char *library)
{
    size_t n = strlen(library);

    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ":");
        if (len == n && !strncmp(p, library, n))
            return 1;
        p += len + (p[len] == ':');
    }
    return 0;
}

json_t *tdb_preload_env(const char *library, const tdb_preload_settings *s,
                        const char *current_ld_audit)
{
    const char *names[N_SETTINGS], *values[N_SETTINGS];
    json_t *env = json_object();
    char timeout[32];

    if (current_ld_audit && *current_ld_audit && !list_has(current_ld_audit, library)) {
        char *joined = tdb_xasprintf("%s:%s", library, current_ld_audit);
        json_object_set_new(env, "LD_AUDIT", json_string_nocheck(joined));
        free(joined);
    } else {
        json_object_set_new(env, "LD_AUDIT",
                            json_string_nocheck(current_ld_audit && *current_ld_audit
                                                    ? current_ld_audit : library));
    }
    snprintf(timeout, sizeof(timeout), "%d", TDEBUG_DEFAULT_TIMEOUT);
    settings_table(s, names, values);
    for (size_t i = 0; names[i]; i++) {
        const char *v = values[i];
        if (!v && !strcmp(names[i], TDEBUG_ENV_ACTION))
            v = "wait";
        if (!v && !strcmp(names[i], TDEBUG_ENV_TIMEOUT))
            v = timeout;
        if (v)
            json_object_set_new(env, names[i], json_string_nocheck(v));
    }
    return env;
}

json_t *tdb_preload_stale(const json_t *env, char *const *envp)
{
    const char *names[N_SETTINGS], *values[N_SETTINGS];
    json_t *stale = json_array();

    settings_table(NULL, names, values);
    for (size_t i = 0; names[i]; i++) {
        size_t n = strlen(names[i]);
        if (json_object_get(env, names[i]))
            continue;
        for (char *const *e = envp ? envp : environ; *e; e++)
            if (!strncmp(*e, names[i], n) && (*e)[n] == '=') {
                json_array_append_new(stale, json_string(names[i]));
                break;
            }
    }
    return stale;
}

void tdb_preload_apply(const json_t *env)
{
    json_t *stale = tdb_preload_stale(env, NULL);
    const char *name;
    json_t *v;
    size_t i;

    json_array_foreach(stale, i, v)
        unsetenv(json_string_value(v));
    json_decref(stale);
    json_object_foreach((json_t *)env, name, v)
    {
        if (json_is_null(v))
            unsetenv(name);
        else
            setenv(name, json_string_value(v), 1);
    }
}

/* ---- the rendezvous socket ---- */

struct tdb_announce_listener {
    int fd;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

/* The directory of PATH must be a directory of ours; the default one is
 * created (mode 0700) and must not be open to others. */
static int check_dir(const char *path, int create, tdb_error *err)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char *slash;
    struct stat st;

    snprintf(dir, sizeof(dir), "%s", path);
    slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    if (create && mkdir(dir, 0700) < 0 && errno != EEXIST) {
        tdb_error_errno(err, "cannot create '%s'", dir);
        return -1;
    }
    if (lstat(dir, &st) < 0) {
        tdb_error_errno(err, "cannot use '%s'", dir);
        return -1;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
        tdb_error_set(err, EPERM,
                      "cannot use '%s': not a directory owned by uid %lu (remove it, or set "
                      "TDEBUG_ANNOUNCE to another path)", dir, (unsigned long)getuid());
        return -1;
    }
    if (create && (st.st_mode & 077)) {
        tdb_error_set(err, EPERM,
                      "cannot use '%s': other users can write to it (chmod 700 '%s')", dir, dir);
        return -1;
    }
    return 0;
}

/* Nonzero when a live listener holds the socket at ADDR. */
static int socket_alive(const struct sockaddr_un *addr)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int alive;

    if (fd < 0)
        return 1;
    alive = connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) == 0;
    close(fd);
    return alive;
}

tdb_announce_listener *tdb_announce_listen(const char *path, tdb_error *err)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    tdb_announce_listener *l = NULL;
    const char *env = getenv(TDEBUG_ENV_ANNOUNCE);
    int on = 1, create = 0;

    if (!path) {
        if (!tdebug_announce_path(addr.sun_path, sizeof(addr.sun_path), env,
                                  (unsigned long)getuid())) {
            tdb_error_set(err, EINVAL,
                          "cannot listen for announcements: %s='%s' turns them off (unset it)",
                          TDEBUG_ENV_ANNOUNCE, env ? env : "");
            return NULL;
        }
        create = env == NULL;
    } else if (strlen(path) >= sizeof(addr.sun_path) || !*path) {
        tdb_error_set(err, ENAMETOOLONG, "cannot listen on '%s': not a usable socket path", path);
        return NULL;
    } else {
        strcpy(addr.sun_path, path);
    }
    if (check_dir(addr.sun_path, create, err) < 0)
        return NULL;

    l = tdb_xcalloc(1, sizeof(*l));
    strcpy(l->path, addr.sun_path);
    l->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (l->fd < 0) {
        tdb_error_errno(err, "cannot create a socket for '%s'", l->path);
        goto fail;
    }
    if (bind(l->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        struct stat st;
        if (errno != EADDRINUSE) {
            tdb_error_errno(err, "cannot listen on '%s'", l->path);
            goto fail;
        }
        if (socket_alive(&addr)) {
            tdb_error_set(err, EADDRINUSE,
                          "cannot listen on '%s': another 'tdebug attach --wait' is listening "
                          "(stop it, or set TDEBUG_ANNOUNCE to another path)", l->path);
            goto fail;
        }
        /* A socket left by a listener that died: replace it, but never
         * remove anything that is not a socket. */
        if (lstat(l->path, &st) < 0 || !S_ISSOCK(st.st_mode) || unlink(l->path) < 0 ||
            bind(l->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
            tdb_error_errno(err, "cannot listen on '%s'", l->path);
            goto fail;
        }
    }
    if (setsockopt(l->fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) < 0) {
        tdb_error_errno(err, "cannot listen on '%s': setsockopt SO_PASSCRED", l->path);
        unlink(l->path);
        goto fail;
    }
    return l;

fail:
    if (l->fd >= 0)
        close(l->fd);
    free(l);
    return NULL;
}

const char *tdb_announce_listener_path(const tdb_announce_listener *l)
{
    return l->path;
}

int tdb_announce_listener_fd(const tdb_announce_listener *l)
{
    return l->fd;
}

void tdb_announce_listener_free(tdb_announce_listener *l)
{
    if (!l)
        return;
    close(l->fd);
    unlink(l->path);
    free(l);
}

json_t *tdb_announce_parse(const char *data, size_t len, tdb_error *err)
{
    json_error_t jerr;
    json_t *j = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
    json_t *abi, *pid;

    if (!j) {
        tdb_error_set(err, EINVAL, "cannot read announcement: %s", jerr.text);
        return NULL;
    }
    abi = json_object_get(j, "tdebug");
    pid = json_object_get(j, "pid");
    if (!json_is_object(j) || !json_is_integer(abi) || !json_is_integer(pid) ||
        json_integer_value(pid) <= 0) {
        tdb_error_set(err, EINVAL, "cannot read announcement: not a tdebug announcement");
        goto fail;
    }
    if (json_integer_value(abi) != TDEBUG_PRELOAD_ABI) {
        tdb_error_set(err, EPROTO,
                      "cannot read announcement of protocol %lld: this tdebug speaks %d "
                      "(use the tdebug that 'tdebug env' came from)",
                      (long long)json_integer_value(abi), TDEBUG_PRELOAD_ABI);
        goto fail;
    }
    return j;

fail:
    json_decref(j);
    return NULL;
}

/* Receive one datagram into BUF; *OUT_PID gets the sender's pid from its
 * credentials (0 when none came).  Returns the length or -1. */
static ssize_t recv_with_pid(int fd, char *buf, size_t size, pid_t *out_pid)
{
    union {
        struct cmsghdr align;
        char space[CMSG_SPACE(sizeof(struct ucred))];
    } control;
    struct iovec iov = {.iov_base = buf, .iov_len = size};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.space,
                         .msg_controllen = sizeof(control.space)};
    ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

    *out_pid = 0;
    if (n < 0)
        return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
            struct ucred cred;
            memcpy(&cred, CMSG_DATA(c), sizeof(cred));
            *out_pid = cred.pid;
        }
    return n;
}

int tdb_announce_next(tdb_announce_listener *l, int timeout_ms, int cancel_fd, json_t **out,
                      tdb_error *err)
{
    int64_t deadline = timeout_ms < 0 ? -1 : tdb_now_ms() + timeout_ms;
    char buf[TDEBUG_ANNOUNCE_MAX];

    for (;;) {
        struct pollfd pfd[2] = {{.fd = l->fd, .events = POLLIN},
                                {.fd = cancel_fd, .events = POLLIN}};
        int wait = -1, rc;

        if (deadline >= 0) {
            int64_t left = deadline - tdb_now_ms();
            wait = left > 0 ? (int)left : 0;
        }
        rc = poll(pfd, cancel_fd >= 0 ? 2 : 1, wait);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0) {
            tdb_error_errno(err, "cannot wait on '%s': poll", l->path);
            return -1;
        }
        if (cancel_fd >= 0 && pfd[1].revents) {
            tdb_error_set(err, ECANCELED, "stopped waiting for announcements on '%s'", l->path);
            return -1;
        }
        if (rc == 0)
            return 0;
        if (!pfd[0].revents)
            continue;

        pid_t sender;
        ssize_t n = recv_with_pid(l->fd, buf, sizeof(buf), &sender);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            tdb_error_errno(err, "cannot read from '%s'", l->path);
            return -1;
        }
        json_t *j = tdb_announce_parse(buf, (size_t)n, NULL);
        if (!j)
            continue;
        /* A process may only speak for itself. */
        if (sender && json_integer_value(json_object_get(j, "pid")) != sender) {
            json_decref(j);
            continue;
        }
        *out = j;
        return 1;
    }
}

void tdb_announce_note_unreleased(const json_t *announcement, tdb_error *err)
{
    json_t *timeout = json_object_get(announcement, "timeout");
    int pid = (int)json_integer_value(json_object_get(announcement, "pid"));
    tdb_error why;

    if (!err || !err->set)
        return;
    why = *err;
    tdb_error_clear(err);
    if (json_is_number(timeout))
        tdb_error_set_exit(err, why.exit_code, why.code,
                           "%s; pid %d stays paused until its own timeout (%g s) passes, then "
                           "goes on by itself", why.msg, pid, json_number_value(timeout));
    else
        tdb_error_set_exit(err, why.exit_code, why.code,
                           "%s; pid %d waits without a timeout until a debugger releases it",
                           why.msg, pid);
}

/* ---- releasing ---- */

static int is_hex_addr(const char *s)
{
    if (!s || strncmp(s, "0x", 2) || !s[2] || strlen(s) > 18)
        return 0;
    return strspn(s + 2, "0123456789abcdefABCDEF") == strlen(s + 2);
}

static int is_identifier(const char *s)
{
    if (!s || !*s || (*s >= '0' && *s <= '9'))
        return 0;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
           strlen(s);
}

char **tdb_preload_release_commands(const json_t *announcement, int disarm)
{
    char **v = tdb_xcalloc(3, sizeof(char *));
    int value = disarm ? TDEBUG_RELEASE_DISARM : TDEBUG_RELEASE_CONTINUE;
    const char *symbol = TDEBUG_PRELOAD_SYM_RELEASE;

    if (announcement) {
        const char *addr = json_string_value(json_object_get(announcement, "release_addr"));
        symbol = json_string_value(json_object_get(announcement, "release_symbol"));
        if (is_hex_addr(addr)) {
            v[0] = tdb_xasprintf("set var *(int *)%s = %d", addr, value);
            return v;
        }
        if (!is_identifier(symbol))
            return v;
    } else {
        /* By symbol, which needs the library's symbols: a no-op when gdb
         * has them, the fix when 'auto-solib-add' is off. */
        v[0] = tdb_xstrdup("sharedlibrary libtdebug-preload");
        v[1] = tdb_xasprintf("set var *(int *)&%s = %d", symbol, value);
        return v;
    }
    /* Cast: gdb 13 may find the symbol without its type (seen when the
     * stop is in a libc without debug info), and then refuses the plain
     * form with "has unknown type". */
    v[0] = tdb_xasprintf("set var *(int *)&%s = %d", symbol, value);
    return v;
}


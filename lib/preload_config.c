/*
 * preload_config.c: TDEBUG_* variables to settings, each garbage value to
 * one warning line and the default.  No allocation: this runs inside the
 * dynamic loader's audit namespace before main(), where the less we touch
 * the better.
 */
#include "preload_config.h"
#include "tdebug_preload.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tdp_format_warning(char *line, size_t size, const char *name, const char *value,
                        const char *why, const char *dflt)
{
    char shown[64];
    size_t i;

    for (i = 0; value[i] && i < sizeof(shown) - 4; i++)
        shown[i] = ((unsigned char)value[i] < 0x20 || value[i] == 0x7f) ? '?' : value[i];
    strcpy(shown + i, value[i] ? "..." : "");
    snprintf(line, size, "tdebug-preload: ignoring %s='%s': %s (using %s)\n", name, shown,
             why, dflt);
}

static void warnf(tdp_warn_fn warn, const char *name, const char *value,
                  const char *why, const char *dflt)
{
    if (warn)
        warn(name, value, why, dflt);
}

static int is_symbol_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '$' || ch == '@';
}

/*
 * Split the comma-separated VALUE into C's storage from *USED on, filling
 * OUT[] and *N.  Empty items are skipped.  Returns NULL on success, else why
 * the value is refused (nothing is kept then).
 */
static const char *split_list(struct tdp_config *c, size_t *used, const char *value,
                              int symbols, const char **out, size_t *n)
{
    size_t count = 0;
    const char *p = value;

    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);

        while (len && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len) {
            if (symbols)
                for (size_t i = 0; i < len; i++)
                    if (!is_symbol_char(p[i]))
                        return "not a comma-separated list of symbol names";
            if (count == TDP_MAX_PATTERNS)
                return "more than 16 items";
            if (*used + len + 1 > sizeof(c->storage))
                return "too long";
            memcpy(c->storage + *used, p, len);
            c->storage[*used + len] = '\0';
            out[count++] = c->storage + *used;
            *used += len + 1;
        }
        p += end ? (size_t)(end - p) + 1 : strlen(p);
        if (!end)
            break;
    }
    if (!count)
        return "an empty list";
    *n = count;
    return NULL;
}

/* 0/1 switches: "0", "1" and the usual words. */
static int parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"1", "yes", "true", "on"};
    static const char *const no[] = {"0", "no", "false", "off"};

    for (size_t i = 0; i < 4; i++) {
        if (!strcmp(s, yes[i])) {
            *out = 1;
            return 0;
        }
        if (!strcmp(s, no[i])) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

static int parse_timeout(const char *s, double *out)
{
    char *end;
    double v;

    if (!strcmp(s, "never") || !strcmp(s, "inf")) {
        *out = -1;
        return 0;
    }
    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < 0 || v > 1e7)
        return -1;
    *out = v;
    return 0;
}

static int parse_notify(struct tdp_config *c, const char *s)
{
    if (!strncmp(s, "fd:", 3)) {
        char *end;
        long fd;

        errno = 0;
        fd = strtol(s + 3, &end, 10);
        if (end == s + 3 || *end || errno || fd < 0 || fd > 65535)
            return -1;
        c->notify_kind = TDP_NOTIFY_FD;
        c->notify_fd = (int)fd;
        return 0;
    }
    if (!strncmp(s, "unix:", 5) && s[5] && strlen(s + 5) < sizeof(c->notify_path)) {
        c->notify_kind = TDP_NOTIFY_UNIX;
        strcpy(c->notify_path, s + 5);
        return 0;
    }
    return -1;
}

/* A rank: a decimal number from 0. */
static int parse_rank(const char *s, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < 0 || v > (1L << 30) || !(*s >= '0' && *s <= '9'))
        return -1;
    *out = v;
    return 0;
}

/* The value of NAME, with "" counting as unset. */
static const char *get_set(tdp_getenv_fn get, const char *name)
{
    const char *v = get(name);
    return v && *v ? v : NULL;
}

void tdp_config_load(struct tdp_config *c, tdp_getenv_fn get, tdp_warn_fn warn,
                     unsigned long uid)
{
    const char *v;
    size_t used = 0;
    char dflt[32];

    memset(c, 0, sizeof(*c));
    c->action = TDP_WAIT;
    c->timeout = TDEBUG_DEFAULT_TIMEOUT;
    c->notify_kind = TDP_NOTIFY_FD;
    c->notify_fd = 2;
    c->skip_workers = 1;
    c->trap_wait_load = 1;

    /* What to watch.  PyInit__C unless the user named symbols or files. */
    const char *watch = get_set(get, TDEBUG_ENV_WATCH);
    const char *files = get_set(get, TDEBUG_ENV_WATCH_FILES);
    const char *why;
    if (files && (why = split_list(c, &used, files, 0, c->files, &c->n_files))) {
        warnf(warn, TDEBUG_ENV_WATCH_FILES, files, why, "no file patterns");
        files = NULL;
        c->n_files = 0;
    }
    if (watch && (why = split_list(c, &used, watch, 1, c->syms, &c->n_syms))) {
        warnf(warn, TDEBUG_ENV_WATCH, watch, why,
              files ? "no symbols" : TDEBUG_DEFAULT_WATCH);
        watch = NULL;
        c->n_syms = 0;
    }
    if (!watch && !files) {
        c->syms[0] = TDEBUG_DEFAULT_WATCH;
        c->n_syms = 1;
    }

    if ((v = get_set(get, TDEBUG_ENV_ACTION))) {
        if (!strcmp(v, "wait"))
            c->action = TDP_WAIT;
        else if (!strcmp(v, "notify"))
            c->action = TDP_NOTIFY;
        else if (!strcmp(v, "log"))
            c->action = TDP_LOG;
        else if (!strcmp(v, "off"))
            c->action = TDP_OFF;
        else if (!strcmp(v, "trap"))
            c->action = TDP_TRAP;
        else
            warnf(warn, TDEBUG_ENV_ACTION, v, "not wait, notify, log, trap or off", "wait");
    }

    snprintf(dflt, sizeof(dflt), "%d", TDEBUG_DEFAULT_TIMEOUT);
    if ((v = get_set(get, TDEBUG_ENV_TIMEOUT)) && parse_timeout(v, &c->timeout) < 0)
        warnf(warn, TDEBUG_ENV_TIMEOUT, v, "not a number of seconds or 'never'", dflt);

    if ((v = get_set(get, TDEBUG_ENV_VERBOSE))) {
        if (!strcmp(v, "2"))
            c->verbose = 2;
        else if (parse_bool(v, &c->verbose) < 0)
            warnf(warn, TDEBUG_ENV_VERBOSE, v, "not 0, 1 or 2", "0");
    }

    if ((v = get_set(get, TDEBUG_ENV_NOTIFY)) && parse_notify(c, v) < 0)
        warnf(warn, TDEBUG_ENV_NOTIFY, v, "not fd:N or unix:PATH", "fd:2");

    if ((v = get_set(get, TDEBUG_ENV_NOTIFY_ACK)) && parse_bool(v, &c->notify_ack) < 0)
        warnf(warn, TDEBUG_ENV_NOTIFY_ACK, v, "not 0 or 1", "0");

    v = get(TDEBUG_ENV_ANNOUNCE);
    c->announce = tdebug_announce_path(c->announce_path, sizeof(c->announce_path), v, uid);
    if (!c->announce && v && *v && strcmp(v, "off") != 0) {
        warnf(warn, TDEBUG_ENV_ANNOUNCE, v, "longer than a socket path can be",
              "/tmp/tdebug-UID/announce");
        c->announce = tdebug_announce_path(c->announce_path, sizeof(c->announce_path),
                                           NULL, uid);
    }

    if ((v = get_set(get, TDEBUG_ENV_WORKERS))) {
        if (!strcmp(v, "skip"))
            c->skip_workers = 1;
        else if (!strcmp(v, "watch"))
            c->skip_workers = 0;
        else
            warnf(warn, TDEBUG_ENV_WORKERS, v, "not skip or watch", "skip");
    }

    if ((v = get_set(get, TDEBUG_ENV_TRAP_PID))) {
        char *end;
        errno = 0;
        c->trap_pid = strtol(v, &end, 10);
        if (end == v || *end || errno || c->trap_pid <= 0) {
            warnf(warn, TDEBUG_ENV_TRAP_PID, v, "not a process id", "any traced process");
            c->trap_pid = 0;
        }
    }

    if ((v = get_set(get, TDEBUG_ENV_TRAP_STARTUP)) && parse_bool(v, &c->trap_startup) < 0)
        warnf(warn, TDEBUG_ENV_TRAP_STARTUP, v, "not 0 or 1", "0");

    if ((v = get_set(get, TDEBUG_ENV_TRAP_WAIT))) {
        if (!strcmp(v, "load"))
            c->trap_wait_load = 1;
        else if (!strcmp(v, "init"))
            c->trap_wait_load = 0;
        else
            warnf(warn, TDEBUG_ENV_TRAP_WAIT, v, "not load or init", "load");
    }

    /* One rank of a job: every other process does nothing at all. */
    c->only_rank = c->rank = -1;
    if ((v = get_set(get, TDEBUG_ENV_RANK)) && parse_rank(v, &c->only_rank) < 0)
        warnf(warn, TDEBUG_ENV_RANK, v, "not a rank (0, 1, 2, ...)", "every process");
    if ((v = get_set(get, "RANK")) && parse_rank(v, &c->rank) < 0)
        c->rank = -1;
    if (c->only_rank >= 0 && c->rank != c->only_rank) {
        c->other_rank = 1;
        c->action = TDP_OFF;
    }
}

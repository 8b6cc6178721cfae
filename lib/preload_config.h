/*
 * preload_config.h: the preloaded library's settings, read once from the
 * TDEBUG_* environment (see tdebug_preload.h for the variables).
 *
 * Pure: the environment comes through a getter and warnings go to a
 * callback, so tests/unit/test_preload_config.c runs it without a loader.
 * Internal to lib/ (hidden visibility; nothing here is exported).
 */
#ifndef TDP_CONFIG_H
#define TDP_CONFIG_H

#include <stddef.h>

enum tdp_action { TDP_WAIT, TDP_NOTIFY, TDP_LOG, TDP_OFF, TDP_TRAP };
enum tdp_notify_kind { TDP_NOTIFY_FD, TDP_NOTIFY_UNIX };

#define TDP_MAX_PATTERNS 16
#define TDP_PATH_MAX 108 /* sizeof(sockaddr_un.sun_path) */

struct tdp_config {
    /* Watched symbols and file-name patterns, pointing into 'storage'. */
    const char *syms[TDP_MAX_PATTERNS];
    size_t n_syms;
    const char *files[TDP_MAX_PATTERNS];
    size_t n_files;
    char storage[2048];

    enum tdp_action action;
    double timeout;      /* seconds; < 0: wait without limit */
    int verbose;         /* 0 quiet, 1 decisions, 2 also every object */
    enum tdp_notify_kind notify_kind;
    int notify_fd;
    char notify_path[TDP_PATH_MAX];
    int notify_ack;
    int announce;        /* nonzero: send to announce_path while waiting */
    char announce_path[TDP_PATH_MAX];
    int skip_workers;    /* multiprocessing spawn/forkserver children don't pause */
    long trap_pid;       /* action trap: only this pid traps (0: any traced one) */
    int trap_startup;    /* action trap: also trap at the first consistent point */
    int trap_wait_load;  /* action trap: an untraced match waits for the debugger
                          * (TDEBUG_TRAP_WAIT=load), else only a module's init does */
    long only_rank;      /* TDEBUG_RANK: the one rank that acts, or -1 (any process) */
    long rank;           /* this process's RANK, or -1 when unset or not a number */
    int other_rank;      /* ONLY_RANK is set and this process is not that rank:
                          * ACTION is then TDP_OFF */
};

typedef const char *(*tdp_getenv_fn)(const char *name);
/* Called once per refused value: the variable, its value, why it is
 * refused and the default used instead.  tdp_format_warning() makes the
 * line the library prints. */
typedef void (*tdp_warn_fn)(const char *name, const char *value, const char *why,
                            const char *dflt);

/* "tdebug-preload: ignoring NAME='VALUE': WHY (using DFLT)\n" into LINE,
 * the value cut short and its control characters replaced, so it is one
 * line whatever the value holds. */
void tdp_format_warning(char *line, size_t size, const char *name, const char *value,
                        const char *why, const char *dflt);

/* Fill C from the environment.  Never fails: each garbage value gives one
 * warning and its default.  UID names the default announce socket. */
void tdp_config_load(struct tdp_config *c, tdp_getenv_fn get, tdp_warn_fn warn,
                     unsigned long uid);

#endif

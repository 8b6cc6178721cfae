/*
 * session/launch.c: starting the program under gdb ('tdebug run'): the
 * exec wrapper, the program's arguments and stdio, the stops placed before
 * it runs (a light session starts it otherwise: session/light.c).
 *
 * The flow of 'tdebug run --stop-at-import torch._C':
 *   gdb starts with 'auto-solib-add off' (FIELD-NOTES: gdb's default reads
 *   ~300 libraries' symbols and takes 4.45 s to reach PyInit__C, against
 *   2.0 s this way), a load catchpoint on torch/_C's file, and runs the
 *   program through tdebug-exec (stdio, process group, death signal).
 *   When _C is mapped the catchpoint stops in ld.so; _C's own DT_NEEDED
 *   libraries are not mapped yet, but _C is: tdebug reads _C's symbols only
 *   and puts a temporary breakpoint on PyInit__C, keeping only the location
 *   inside _C, then continues.  The breakpoint fires before the module's
 *   init runs.  At every stop shown to the user, libc and ld.so symbols are
 *   loaded first (without their CFI backtraces are garbage), then any
 *   library on the stack whose symbols are not loaded, until the stack is
 *   stable.
 */
#include "session/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int tdb_session_arm_one(tdb_session *s, const char *what, int is_break, tdb_error *err)
{
    json_t *bp = is_break ? tdb_session_breakpoint_add(s, what, 0, err)
                          : tdb_session_catchpoint_add(s, what, err);
    if (!bp)
        return -1;
    const char *msg = json_string_value(json_object_get(bp, "message"));
    int rc = 0;
    if (!json_integer_value(json_object_get(bp, "id"))) {
        if (!is_break)
            tdb_error_set_exit(err, TDB_EXIT_USAGE, 0, "cannot catch C++ throws: %s",
                               msg ? msg : "?");
        else
            tdb_error_set_exit(err, TDB_EXIT_USAGE, 0, "%s --break '%s': %s",
                               tdb_break_location_kind(what) == TDB_BREAK_PYTHON_FILE
                                   ? "cannot place" : "gdb rejects",
                               what, msg ? msg : "?");
        rc = -1;
    }
    json_decref(bp);
    return rc;
}

/* Set up catchpoints and breakpoints before the program runs (or right
 * after attaching). */
int tdb_session_arm(tdb_session *s, const char *script_dir, tdb_error *err)
{
    if (tdb_session_prepare_interest(s, script_dir, err) < 0 ||
        tdb_session_place_load_catchpoint(s, err) < 0)
        return -1;
    size_t n = s->opts.n_breaks + s->opts.n_catch_throw;
    for (size_t i = 0; i < n; i++) {
        int is_break = i < s->opts.n_breaks;
        const char *what = is_break ? s->opts.breaks[i] : s->opts.catch_throw[i - s->opts.n_breaks];
        if (tdb_session_arm_one(s, what, is_break, err) < 0)
            return -1;
    }
    for (size_t i = 0; i < s->opts.n_catch_raise; i++) {
        json_t *bp = tdb_session_python_catch(s, TDB_CATCH_PY_RAISED, s->opts.catch_raise[i], err);
        if (!bp)
            return -1;
        const char *msg = json_string_value(json_object_get(bp, "message"));
        int placed = json_integer_value(json_object_get(bp, "id")) != 0;
        if (!placed)
            tdb_error_set_exit(err, TDB_EXIT_USAGE, 0, "cannot catch Python exceptions: %s",
                               msg ? msg : "?");
        json_decref(bp);
        if (!placed)
            return -1;
    }
    return 0;
}

static char *dir_of(const char *path)
{
    char *copy = realpath(path, NULL);
    if (!copy)
        return NULL;
    char *slash = strrchr(copy, '/');
    if (slash && slash != copy)
        *slash = '\0';
    else if (slash)
        slash[1] = '\0';
    return copy;
}

/* NAME=VALUE (VALUE NULL: unset) in the program's environment, for gdb's
 * start and a light one's. */
static int program_env(tdb_session *s, const char *name, const char *value, tdb_error *err)
{
    const char *why = tdb_gdb_env_problem(name, value);
    if (why) {
        tdb_error_set(err, EINVAL, "cannot pass environment variable '%s' to the program: %s",
                      name, why);
        return -1;
    }
    if (!s->light.env)
        s->light.env = json_object();
    json_object_set_new(s->light.env, name, value ? json_string_nocheck(value) : json_null());
    if (!value)
        return tdb_session_console(s, CMD_TIMEOUT_MS, err, "unset environment %s", name);
    return tdb_session_console(s, CMD_TIMEOUT_MS, err, "set environment %s=%s", name, value);
}

/* opts.children_wait: python/tdebug-children/sitecustomize.py first on the
 * program's PYTHONPATH (before the front-end's or tdebug's own), and the
 * seconds a child waits for its debugger.  Without the file (not built)
 * children do not wait, which is said. */
static int children_wait_env(tdb_session *s, tdb_error *err)
{
    char secs[32];
    const char *old = getenv("PYTHONPATH");
    json_t *given = s->light.env ? json_object_get(s->light.env, "PYTHONPATH") : NULL;
    char *dir = tdb_companion_path("python/tdebug-children");

    if (!dir)
        dir = tdb_companion_path("tdebug-children");
    if (!dir) {
        say(s, "warning", "cannot find tdebug's 'tdebug-children/sitecustomize.py' beside "
                          "tdebug or in %s: the program's Python children will not wait for "
                          "their debugger (reinstall tdebug)", TDB_LIBDIR);
        return 0;
    }
    if (given)
        old = json_string_value(given); /* NULL when the front-end unset it */
    char *path = old && *old ? tdb_xasprintf("%s:%s", dir, old) : tdb_xstrdup(dir);
    snprintf(secs, sizeof(secs), "%d", s->opts.children_wait);
    int rc = program_env(s, "PYTHONPATH", path, err) < 0 ||
                     program_env(s, TDB_CHILDREN_WAIT_VAR, secs, err) < 0
                 ? -1 : 0;
    free(path);
    free(dir);
    return rc;
}

/* tdebug-exec, the wrapper gdb starts programs through (new string), or
 * NULL with ERR set. */
static char *exec_wrapper(tdb_error *err)
{
    char *wrapper = tdb_companion_path("tdebug-exec");
    if (!wrapper)
        tdb_error_set(err, ENOENT, "cannot find tdebug-exec beside tdebug or in %s (reinstall tdebug)",
                      TDB_LIBDIR);
    return wrapper;
}

/* gdb is to start ARGV itself, the ordinary way: through the shell (the
 * only way it keeps arguments with spaces intact) and WRAPPER, so that
 * the program gets tdebug's stdio, its own process group, and dies with
 * gdb; the interpreter's symbols read.  0, or -1 with ERR set. */
static int gdb_program(tdb_session *s, char *const argv[], const char *wrapper, tdb_error *err)
{
    tdb_buf cmd = TDB_BUF_INIT;
    int rc = -1;
    tdb_buf_adds(&cmd, "set exec-wrapper ");
    tdb_shell_quote(&cmd, wrapper);
    tdb_buf_addf(&cmd, " --fds %d,%d,%d --pgrp --pdeathsig --", s->saved_fds[0], s->saved_fds[1],
                 s->saved_fds[2]);
    if (tdb_session_console(s, CMD_TIMEOUT_MS, err, "%s", tdb_buf_str(&cmd)) < 0 ||
        tdb_session_console(s, CMD_TIMEOUT_MS, err, "set startup-with-shell on") < 0)
        goto cleanup;
    tdb_buf_reset(&cmd);
    tdb_buf_adds(&cmd, "-file-exec-and-symbols ");
    tdb_mi_quote(&cmd, argv[0]);
    tdb_session_hide_cpython_debuginfo(s);
    int loaded = tdb_gdb_cmd(s->gdb, SYMBOLS_TIMEOUT_MS, NULL, err, "%s", tdb_buf_str(&cmd));
    tdb_session_restore_debuginfo(s);
    if (loaded < 0)
        goto cleanup;
    tdb_buf_reset(&cmd);
    tdb_buf_adds(&cmd, "set args");
    for (int i = 1; argv[i]; i++) {
        tdb_buf_addc(&cmd, ' ');
        tdb_shell_quote(&cmd, argv[i]);
    }
    rc = tdb_session_console(s, CMD_TIMEOUT_MS, err, "%s", tdb_buf_str(&cmd));
cleanup:
    tdb_buf_free(&cmd);
    return rc;
}

/* The Python breakpoints' safe point, then the program runs from its
 * start: gdb's -exec-run.  0, or -1 with ERR set. */
static int exec_run(tdb_session *s, tdb_error *err)
{
    if (tdb_session_python_launch(s, err) < 0)
        return -1;
    s->state = STOPPED; /* tdb_session_resume_mi() wants a target it may run */
    s->have_exit = 0;
    if (tdb_session_resume_mi(s, "-exec-run", err) < 0) {
        s->state = NOT_STARTED;
        return -1;
    }
    return 0;
}

int tdb_session_launch(tdb_session *s, char *const argv[], tdb_error *err)
{
    char *wrapper = NULL, *script_dir = NULL;
    int rc = -1;

    wrapper = exec_wrapper(err);
    if (!wrapper)
        goto cleanup;
    /* The script's directory, where the user's own extensions often are. */
    for (int i = 1; argv[i]; i++) {
        if (argv[i][0] != '-') {
            script_dir = dir_of(argv[i]);
            break;
        }
        if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "-m"))
            break;
        if (!strcmp(argv[i], "-X") || !strcmp(argv[i], "-W"))
            i++;
    }

    if (s->opts.children_wait > 0 && children_wait_env(s, err) < 0)
        goto cleanup;
    /* A front-end's Python breakpoints placed since the session began
     * (the DAP's) may make it light now. */
    int spawned = s->light.wanted; /* gdb started without its handshake */
    s->light.wanted = tdb_session_light_applies_at_launch(s);
    if (spawned && !s->light.wanted && tdb_gdb_handshake(s->gdb, err) < 0)
        goto cleanup;
    if (s->light.wanted) {
        int light = tdb_session_light_launch(s, argv, script_dir, err);
        if (light <= 0) {
            rc = light;
            goto cleanup;
        }
    }
    if (tdb_session_setup_symbols(s, err) < 0 || gdb_program(s, argv, wrapper, err) < 0 ||
        tdb_session_arm(s, script_dir, err) < 0 || exec_run(s, err) < 0)
        goto cleanup;
    rc = 0;
cleanup:
    free(wrapper);
    free(script_dir);
    return rc;
}

/* 'run' in a session that started light, whose breakpoints now need an
 * ordinary session (tdb_session_light_rerun() ended the old program):
 * gdb starts the program itself, its held breakpoints given to gdb. */
static int rerun_ordinary(tdb_session *s, tdb_error *err)
{
    char *wrapper = exec_wrapper(err);
    int rc = -1;
    if (!wrapper || gdb_program(s, s->light.argv, wrapper, err) < 0 ||
        tdb_session_place_load_catchpoint(s, err) < 0)
        goto cleanup;
    for (size_t i = 0; i < s->n_bps; i++)
        if (s->bps[i].kind == BP_NATIVE && s->bps[i].number == 0 &&
            tdb_session_bind_held(s, &s->bps[i], err) < 0)
            goto cleanup;
    rc = exec_run(s, err);
cleanup:
    free(wrapper);
    return rc;
}

int tdb_session_rerun(tdb_session *s, tdb_error *err)
{
    if (s->attached) {
        tdb_error_set(err, EPERM, "tdebug attached to pid %d: 'run' restarts only a program "
                                  "tdebug started ('detach', then 'tdebug run')",
                      (int)s->pid);
        return -1;
    }
    if (s->state == RUNNING) {
        tdb_error_set(err, EAGAIN, "the program is running");
        return -1;
    }
    if (s->light.argv) {
        /* gdb attached to a program tdebug started: tdebug starts it
         * again, light when its breakpoints allow (session/light.c). */
        int light = tdb_session_light_rerun(s, err);
        return light <= 0 ? light : rerun_ordinary(s, err);
    }
    /* The new process has no hook: the Python breakpoints are armed again,
     * as at the first start. */
    tdb_session_python_forget(s);
    tdb_session_note_running(s); /* what the stop showed is gone */
    tdb_py_close(s->py); /* the interpreter's reader was the old process's */
    s->py = NULL;
    s->py_state = 0;
    tdb_session_values_free(s);
    s->state = NOT_STARTED;
    return exec_run(s, err);
}

int tdb_session_program_setenv(tdb_session *s, const char *name, const char *value,
                               tdb_error *err)
{
    /* A light launch starts the program itself, with these; the
     * preloaded library's own variables it cannot take. */
    if (!strncmp(name, "TDEBUG_", 7) || !strcmp(name, "LD_AUDIT"))
        s->light.env_changed = 1;
    return program_env(s, name, value, err);
}

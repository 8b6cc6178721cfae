/*
 * session/pyexc.c: stops at Python exceptions ('catch python-raise
 * [TYPE]', --catch-raise, the DAP's raised/uncaught/userUnhandled
 * filters), through the Python hook (lib/tdebug_pyhook.h,
 * TDB_PYHOOK_BP_EXCEPTION; the hook decides in lib/pyhook/exceptions.c).
 *
 * A catchpoint is a Python breakpoint (BP_PYTHON) whose py_exc says which
 * events stop and whose py_function is the class, so that the table, the
 * safe point, enable/disable/delete, conditions and hit counts are the
 * Python breakpoints' own.  The user's code the hook needs for "leaving
 * the user's code" is the same rule as a step's (session/stepinto.c): the
 * program's directory, the working directory, --my-code.
 *
 * torch turns a c10::Error into a RuntimeError (or one of its subclasses)
 * when it reaches Python, and the C++ side is gone by then: so a session
 * with a Python exception catchpoint also keeps a silent 'catch throw
 * c10::Error' (internal, id 0), which records each such throw, its
 * message and first native frames, and goes on; the Python exception
 * whose message is that throw's carries it ("cxx_throw").
 */
#include "session/internal.h"

#include "tdebug_pyhook.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

_Static_assert((int)TDB_CATCH_PY_RAISED == (int)TDB_PYHOOK_EXC_RAISED &&
                   (int)TDB_CATCH_PY_UNCAUGHT == (int)TDB_PYHOOK_EXC_UNCAUGHT &&
                   (int)TDB_CATCH_PY_USER == (int)TDB_PYHOOK_EXC_USER,
               "the session's catch bits are the hook's");

/* The word of each event, as 'catch python-WORD' and the stop say it. */
static const char *when_word(int when)
{
    switch (when) {
    case TDB_CATCH_PY_RAISED: return "raise";
    case TDB_CATCH_PY_UNCAUGHT: return "uncaught";
    case TDB_CATCH_PY_USER: return "user-unhandled";
    default: return "exception";
    }
}

int tdb_python_exc_type_refusal(const char *type, tdb_buf *why)
{
    if (!type || !*type)
        return 0;
    for (const char *p = type; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '.' || (unsigned char)*p >= 0x80)) {
            if (why)
                tdb_buf_addf(why, "'%s' is not a Python class name (ValueError, "
                                  "json.JSONDecodeError, mymod.MyError)", type);
            return 1;
        }
    if (strlen(type) >= TDB_PYHOOK_NAME_MAX) {
        if (why)
            tdb_buf_addf(why, "'%s' is longer than %d bytes", type, TDB_PYHOOK_NAME_MAX - 1);
        return 1;
    }
    return 0;
}

/* The silent c10::Error catchpoint, once a session (see the top). */
static void silent_c10_catch(tdb_session *s)
{
    for (size_t i = 0; i < s->n_bps; i++)
        if (s->bps[i].silent)
            return;
    int before = s->next_bp_id;
    json_t *bp = tdb_session_catchpoint_add(s, "c10::Error", NULL);
    int id = (int)json_integer_value(json_object_get(bp, "id"));
    json_decref(bp);
    bp_info *b = id ? tdb_session_find_bp_id(s, id) : NULL;
    if (!b)
        return; /* no libstdc++ catchpoint here: Python's side only */
    b->id = 0;
    b->silent = 1;
    if (s->next_bp_id == id)
        s->next_bp_id = before;
}

/* Is the frame of gdb's FUNC (may be NULL) the throw's own machinery? */
static int throw_machinery(const char *func)
{
    return !func || !strncmp(func, "__cxa_throw", 11) || !strncmp(func, "c10::", 5);
}

void tdb_session_c10_throw_seen(tdb_session *s, json_t *exc)
{
    /* the libraries on the stack get their symbols read, as at a stop */
    json_t *res = tdb_session_stack_frames(s, 0, NULL), *frames = json_array();
    const char *site = NULL;
    if (res) {
        size_t i;
        json_t *f;
        json_array_foreach(res, i, f)
        {
            if (i == 12)
                break;
            const json_t *fr = json_object_get(f, "frame") ?: f;
            const char *func = tdb_mi_str(fr, "func"), *file = tdb_mi_str(fr, "file");
            const char *from = tdb_mi_str(fr, "from"), *line = tdb_mi_str(fr, "line");
            char *text = file && line ? tdb_xasprintf("%s at %s:%s", func ? func : "??", file, line)
                                      : tdb_xasprintf("%s from %s", func ? func : "??",
                                                      from ? from : "?");
            json_array_append_new(frames, json_string(text));
            if (!site && !throw_machinery(func))
                site = json_string_value(json_array_get(frames, json_array_size(frames) - 1));
            free(text);
        }
    }
    json_object_set_new(exc, "frames", frames);
    if (site)
        json_object_set_new(exc, "site", json_string(site));
    json_decref(res);
    json_decref(s->last_c10_throw);
    s->last_c10_throw = exc;
}

/* Is the Python exception's message MSG the c10 throw's THROWN (torch
 * passes its text, or the first line of it, to Python)? */
static int same_message(const char *msg, const char *thrown)
{
    if (!msg || !thrown || !*msg || !*thrown)
        return 0;
    size_t n = strcspn(thrown, "\n");
    return strncmp(msg, thrown, n) == 0 || strstr(msg, thrown) != NULL;
}

json_t *tdb_session_python_catch(tdb_session *s, int when, const char *type, tdb_error *err)
{
    tdb_buf why = TDB_BUF_INIT, loc = TDB_BUF_INIT;
    json_t *out = NULL;
    if (type && !*type)
        type = NULL;
    tdb_buf_addf(&loc, "python-%s%s%s", when_word(when), type ? " " : "", type ? type : "");
    if (when != TDB_CATCH_PY_RAISED && when != TDB_CATCH_PY_UNCAUGHT && when != TDB_CATCH_PY_USER)
        out = tdb_session_bp_refused(tdb_buf_str(&loc), "location", "no such Python exception event");
    else if (tdb_python_exc_type_refusal(type, &why))
        out = tdb_session_bp_refused(tdb_buf_str(&loc), "location", tdb_buf_str(&why));
    if (out)
        goto cleanup;
    bp_info *b = tdb_session_add_bp(s, 0, BP_PYTHON, tdb_buf_str(&loc), NULL);
    b->py_exc = when;
    b->py_function = type ? tdb_xstrdup(type) : NULL;
    b->slot = -1;
    out = tdb_session_python_bp_placed(s, b, err);
    if (out && s->gdb && tdb_gdb_alive(s->gdb)) {
        /* The throw site is read through gdb, which a light session keeps
         * from the libraries: such a catchpoint set after the launch (a
         * filter VS Code's Breakpoints view ticks at a stop) makes it an
         * ordinary one, as one set before does.  Failing that, Python's
         * side only. */
        tdb_error up = {0};
        if (tdb_session_light_upgrade(s, &up) == 0)
            silent_c10_catch(s);
    }
cleanup:
    tdb_buf_free(&why);
    tdb_buf_free(&loc);
    return out;
}

int tdb_hook_write_my_code(tdb_session *s, tdb_error *err)
{
    char list[TDB_PYHOOK_MY_CODE_MAX];
    size_t at = 0;
    tdb_session_step_dirs(s, NULL);
    for (size_t i = 0; i < s->step.n_dirs; i++) {
        size_t n = strlen(s->step.dirs[i]);
        if (at + n + 2 > sizeof(list))
            break; /* the first ones: the program's and the working directory */
        memcpy(list + at, s->step.dirs[i], n + 1);
        at += n + 1;
    }
    list[at++] = 0;
    return tdb_hook_write_mem(s, CONTROL(s, my_code), list, at, err);
}

void tdb_session_python_exc_stop(tdb_session *s, const tdb_pyhook_report *rep,
                                 tdb_stop_info *st)
{
    bp_info *b = tdb_session_find_bp_id(s, rep->breakpoint_id);
    if (b && b->kind != BP_PYTHON)
        b = NULL;
    st->reason = TDB_STOP_PYTHON_EXCEPTION;
    st->bp_number = rep->breakpoint_id;
    st->bp_location = b ? b->location : NULL;
    st->condition_error = rep->message[0] ? rep->message : NULL;
    if (b)
        b->hits++;
    const char *when = rep->exc_when == TDB_PYHOOK_EXC_UNCAUGHT ? "uncaught"
                       : rep->exc_when == TDB_PYHOOK_EXC_USER   ? "user-unhandled"
                                                                : "raised";
    json_t *exc = json_pack("{s:s, s:s, s:s}", "language", "python", "event", when, "type",
                            rep->exc_type);
    tdb_json_set_str(exc, "message", rep->exc_message);
    tdb_json_set_str(exc, "traceback", rep->exc_traceback);
    if (s->last_c10_throw &&
        same_message(rep->exc_message, json_string_value(json_object_get(s->last_c10_throw,
                                                                         "message")))) {
        json_object_set_new(exc, "cxx_throw", s->last_c10_throw);
        s->last_c10_throw = NULL;
    }
    st->exception = exc;
}

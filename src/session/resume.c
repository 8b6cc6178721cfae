/*
 * session/resume.c: letting the program run: continue, the steps (a step
 * at a Python line is the hook's: session/python.c), interrupting it, and
 * forgetting what a stop showed once it runs.
 */
#include "session/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The program runs again: what this stop showed is stale. */
void tdb_session_note_running(tdb_session *s)
{
    s->state = RUNNING;
    tdb_session_drop_stop_readers(s);
    if (s->have_stop) {
        json_decref(s->stop.frames);
        json_decref(s->stop.python_frames);
        json_decref(s->stop.stack);
        json_decref(s->stop.libraries);
        json_decref(s->stop.exception);
        json_decref(s->stop.args);
        if (s->have_stop_view)
            tdb_stackview_clear(&s->stop_view);
        s->have_stop_view = 0;
        memset(&s->stop, 0, sizeof(s->stop));
        s->have_stop = 0;
    }
    json_decref(s->stop_frame);
    s->stop_frame = NULL;
    tdb_strv_free(s->stop_strs);
    s->stop_strs = NULL;
    s->n_stop_strs = 0;
    s->selected = 0;
    s->hook.stop_is_hook = 0;
    s->python_top = -1;
    if (s->paused)
        s->paused_released = 1; /* running lets even wait_for_debugger() go */
}

int tdb_session_resume_mi(tdb_session *s, const char *how, tdb_error *err)
{
    tdb_mi_response *r = tdb_gdb_send(s->gdb, CMD_TIMEOUT_MS, err, how);
    if (!r)
        return -1;
    int rc = 0;
    if (strcmp(r->result->klass, "error") == 0) {
        const char *msg = tdb_mi_str(r->result->results, "msg");
        tdb_error_set(err, 0, "%s", msg ? msg : "gdb cannot resume the program");
        rc = -1;
    } else {
        tdb_session_note_running(s);
        snprintf(s->last_mi, sizeof(s->last_mi), "%s", how);
    }
    tdb_mi_response_free(r);
    return rc;
}

int tdb_session_resume(tdb_session *s, tdb_resume how, tdb_error *err)
{
    static const char *const mi[] = {
        [TDB_RESUME_CONTINUE] = "-exec-continue", [TDB_RESUME_STEP] = "-exec-step",
        [TDB_RESUME_NEXT] = "-exec-next",         [TDB_RESUME_FINISH] = "-exec-finish",
        [TDB_RESUME_STEPI] = "-exec-step-instruction",
        [TDB_RESUME_NEXTI] = "-exec-next-instruction",
    };
    if (s->state != STOPPED) {
        tdb_error_set(err, 0, s->state == EXITED ? "the program is not being run"
                                                 : "the program is running");
        return -1;
    }
    s->hook.native_what[0] = '\0'; /* a step into native code says what it implements */
    /* A step into one call is this resume's only (tdb_session_step_target()). */
    free(s->step.target);
    s->step.target = how == TDB_RESUME_STEP ? s->step.want_target : NULL;
    s->step.target_skip = s->step.want_skip;
    if (s->step.target != s->step.want_target)
        free(s->step.want_target);
    s->step.want_target = NULL;
    int py = tdb_session_python_resume(s, how, err);
    if (py < 0)
        return -1;
    if (py == 1) {
        /* The hook steps in Python; the program just goes on. */
        if (tdb_session_resume_mi(s, "-exec-continue", err) < 0)
            return -1;
        s->last_resume = (int)how;
        return 0;
    }
    if (how == TDB_RESUME_FINISH && tdb_session_stop_complete(s, err) < 0)
        return -1; /* the frame to finish is gdb's */
    if (how == TDB_RESUME_STEP && s->stop_frame) {
        /* gdb steps over a call into a library whose symbols it has not
         * read: read those the stopped code's library calls into first. */
        lib_info *at = tdb_session_lib_at(s, parse_addr(tdb_mi_str(s->stop_frame, "addr")));
        if (at && tdb_session_read_dep_symbols(s, at->path, err) < 0)
            return -1;
    }
    tdb_buf cmd = TDB_BUF_INIT;
    tdb_buf_adds(&cmd, mi[how]);
    if (how == TDB_RESUME_FINISH && s->have_stop_view) {
        /* finish out of the selected frame, gdb's number; out of the glue
         * too when the glue alone lies between it and its Python caller
         * (session/stepinto.c).  gdb wants the thread with the frame. */
        tdb_view_frame f;
        int level = -1, outer = -1;
        if (s->selected > 0 && /* 0: the innermost, folded or not, as gdb's finish */
            tdb_stackview_frame_at(&s->stop_view, tdb_session_stack_flags(s),
                                   (size_t)s->selected, &f) == 0 &&
            f.kind == TDB_FRAME_NATIVE && f.level > 0)
            level = f.level;
        if (tdb_session_step_finish_level(s, &outer)) {
            /* The selected frame first, for what it returns (gdb's value,
             * its printers: a tensor), then the glue above it at that stop
             * (session/stops.c). */
            int sel = level > 0 ? level : 0;
            s->step.finish_rest = outer - sel; /* 1 + its level once SEL returned */
            free(s->step.finish_value);
            s->step.finish_value = NULL;
            level = sel;
        }
        if (level > 0 || s->step.finish_rest)
            tdb_buf_addf(&cmd, " --thread %d --frame %d", s->stop.thread, level > 0 ? level : 0);
    }
    int rc = tdb_session_resume_mi(s, tdb_buf_str(&cmd), err);
    tdb_buf_free(&cmd);
    if (rc == 0)
        s->last_resume = (int)how;
    return rc;
}

int tdb_session_resume_n(tdb_session *s, tdb_resume how, int count, tdb_error *err)
{
    s->repeat = 0;
    if (tdb_session_resume(s, how, err) < 0)
        return -1;
    s->repeat = count > 1 ? count - 1 : 0;
    s->repeat_how = (int)how;
    return 0;
}

int tdb_session_interrupt(tdb_session *s, tdb_error *err)
{
    if (s->state != RUNNING || s->interrupt_sent)
        return 0;
    s->interrupt_sent = 1;
    return tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-exec-interrupt");
}

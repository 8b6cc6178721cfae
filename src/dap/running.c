/*
 * dap/running.c: the requests that let the program run (see dap/dap.h):
 * continue, next, stepIn, stepOut (a step is its thread's, from its
 * innermost frame) and pause (whose stop comes as a 'stopped' event).
 */
#include "dap/internal.h"

#include <string.h>


static void resume_request(tdb_dap *d, int seq, const char *cmd, const json_t *args,
                           tdb_resume how)
{
    json_t *t = json_object_get(args, "threadId");
    tdb_error err = {0};
    if (!tdb_session_stop(d->s)) {
        tdb_dap_fail(d, seq, cmd, "the program is %s", tdb_session_running(d->s) ? "running"
                                                                                : "not stopped");
        return;
    }
    /* granularity "instruction": one machine instruction (the client's
     * disassembly view), into calls for stepIn, over them for next. */
    const char *gran = json_string_value(json_object_get(args, "granularity"));
    if (gran && !strcmp(gran, "instruction"))
        how = how == TDB_RESUME_STEP ? TDB_RESUME_STEPI : how == TDB_RESUME_NEXT ? TDB_RESUME_NEXTI
                                                                                : how;
    /* A step is the thread's, from its innermost frame. */
    int thread = json_is_integer(t) && json_integer_value(t) > 0 && json_integer_value(t) < 32768
                     ? (int)json_integer_value(t) : 0;
    if (how != TDB_RESUME_CONTINUE && tdb_session_select(d->s, thread, 0, &err) < 0) {
        tdb_dap_fail(d, seq, cmd, "%s", err.msg);
        return;
    }
    if (tdb_dap_resume(d, how, &err) < 0) {
        tdb_dap_fail(d, seq, cmd, "%s", err.msg);
        return;
    }
    tdb_dap_ok(d, seq, cmd, how == TDB_RESUME_CONTINUE
                                ? json_pack("{s:b}", "allThreadsContinued", 1) : NULL);
}

void tdb_dap_continue(tdb_dap *d, int seq, const json_t *args)
{
    resume_request(d, seq, "continue", args, TDB_RESUME_CONTINUE);
}

void tdb_dap_next(tdb_dap *d, int seq, const json_t *args)
{
    resume_request(d, seq, "next", args, TDB_RESUME_NEXT);
}

void tdb_dap_step_in(tdb_dap *d, int seq, const json_t *args)
{
    resume_request(d, seq, "stepIn", args, TDB_RESUME_STEP);
}

void tdb_dap_step_out(tdb_dap *d, int seq, const json_t *args)
{
    resume_request(d, seq, "stepOut", args, TDB_RESUME_FINISH);
}

void tdb_dap_pause(tdb_dap *d, int seq, const json_t *args)
{
    (void)args;
    tdb_error err = {0};
    if (tdb_session_running(d->s) && tdb_session_interrupt(d->s, &err) < 0) {
        tdb_dap_fail(d, seq, "pause", "%s", err.msg);
        return;
    }
    tdb_dap_ok(d, seq, "pause", NULL); /* the stop comes as a 'stopped' event */
}

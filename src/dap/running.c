/*
 * dap/running.c: the requests that let the program run (see dap/dap.h):
 * continue, next, stepIn, stepOut (a step is its thread's, from its
 * innermost frame), stepInTargets (the calls of a Python line, for a
 * stepIn into one of them) and pause (whose stop comes as a 'stopped'
 * event).
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
    json_t *id = json_object_get(args, "targetId");
    if (!id || json_is_null(id)) {
        resume_request(d, seq, "stepIn", args, TDB_RESUME_STEP);
        return;
    }
    /* Into one call of the line: the stepInTargets answer of this stop. */
    json_t *t = json_is_integer(id) && json_integer_value(id) > 0
                    ? json_array_get(d->step_targets, (size_t)json_integer_value(id) - 1) : NULL;
    if (!t) {
        tdb_dap_fail(d, seq, "stepIn", "'targetId' is an id 'stepInTargets' gave at this stop");
        return;
    }
    const char *name = json_string_value(json_object_get(t, "name"));
    int skip = 0;
    for (size_t i = 0; i + 1 < (size_t)json_integer_value(id); i++)
        skip += !strcmp(json_string_value(json_object_get(json_array_get(d->step_targets, i),
                                                          "name")) ?: "", name);
    tdb_error err = {0};
    tdb_values_reset(d->vals);
    if (tdb_session_step_target(d->s, name, skip, &err) < 0) {
        tdb_dap_fail(d, seq, "stepIn", "%s", err.msg);
        return;
    }
    tdb_dap_ok(d, seq, "stepIn", NULL);
}

void tdb_dap_step_in_targets(tdb_dap *d, int seq, const json_t *args)
{
    int thread, index;
    tdb_error err = {0};
    if (tdb_dap_frame_arg(d, seq, "stepInTargets", args, &thread, &index) < 0)
        return;
    json_t *calls = tdb_session_step_targets(d->s, thread, index, &err);
    if (!calls) {
        tdb_dap_fail(d, seq, "stepInTargets", "%s", err.msg);
        return;
    }
    json_decref(d->step_targets);
    d->step_targets = calls;
    json_t *out = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c)
    {
        const char *label = json_string_value(json_object_get(c, "label"));
        json_t *o = json_pack("{s:I, s:o}", "id", (json_int_t)i + 1, "label",
                              tdb_dap_string(label, strlen(label)));
        json_t *col = json_object_get(c, "column"), *end = json_object_get(c, "end_column");
        if (json_is_integer(col) && json_is_integer(end)) {
            json_object_set_new(o, "column", json_integer(json_integer_value(col) - 1 +
                                                          d->column_base));
            json_object_set_new(o, "endColumn", json_integer(json_integer_value(end) - 1 +
                                                             d->column_base));
        }
        json_array_append_new(out, o);
    }
    tdb_dap_ok(d, seq, "stepInTargets", json_pack("{s:o}", "targets", out));
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

/*
 * session/steptargets.c: the calls a Python line is about to make, for a
 * step into one of them (the DAP's stepInTargets: 'torch.add(x.relu(), y)'
 * steps into relu or into add), and that step.
 *
 * The calls are read by the hook at a Python stop, in the process: a small
 * module (_tdebug_steptargets, sent once in pieces: an expression the hook
 * evaluates holds at most TDB_PYHOOK_EXPR_MAX bytes) reads the frame's
 * bytecode with 'dis': each call instruction of the line not run yet, and
 * the name that loads what it calls (the instruction left once its
 * arguments are taken off the stack, by dis.stack_effect); 3.11+ also
 * gives the call's columns (co_positions), 3.8-3.10 the name only.  The
 * first 32 calls of a line, their names and labels cut at 60 characters:
 * the hook's answer holds 4,096 bytes.
 *
 * The step itself is the hook's step (session/python.c) told the name: a
 * native call or a Python function of another name is let go (the hook
 * steps on in the line, or finishes the Python callee and steps on), the
 * first of that name is where it stops (a native one goes on to torch's
 * operator as any step does); a step that reaches the next line stops
 * there and says so.
 */
#include "session/internal.h"

#include "tdebug_pyhook.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MODULE "__import__('sys').modules.setdefault('_tdebug_steptargets', " \
               "__import__('types').ModuleType('_tdebug_steptargets'))"

static const char helper[] =
    "import dis,json,linecache\n"
    "class J(str):\n"
    "    __repr__=str.__str__\n"
    "def targets(f):\n"
    "    co=f.f_code;ln=f.f_lineno;la=f.f_lasti;E=dis.stack_effect;out=[];cur=None\n"
    "    ins=[i for i in dis.get_instructions(co) if i.opname not in('CACHE','EXTENDED_ARG')]\n"
    "    src=linecache.getline(co.co_filename,ln).encode()\n"
    "    w=lambda b:len(b.decode(errors='replace'))+1\n"
    "    for k,i in enumerate(ins):\n"
    "        p=getattr(i,'positions',None);m=getattr(i,'line_number',0);o=i.opname\n"
    "        if p and p.lineno:cur=p.lineno\n"
    "        elif m:cur=m\n"
    "        elif not p and i.starts_line:cur=i.starts_line\n"
    "        if cur!=ln or i.offset<la or not o.startswith('CALL') or 'INTRINSIC' in o:continue\n"
    "        n=i.arg or 0\n"
    "        if o=='CALL_FUNCTION_KW':n+=1\n"
    "        if o=='CALL_FUNCTION_EX':n=1+(n&1)\n"
    "        j=k-1;s=0\n"
    "        while j>=0 and ins[j].opname in('PRECALL','KW_NAMES'):j-=1\n"
    "        while j>=0 and s<n:\n"
    "            c=ins[j];s+=E(c.opcode,c.arg) if c.opcode>=dis.HAVE_ARGUMENT else E(c.opcode);j-=1\n"
    "        while j>=0 and ins[j].opname=='PUSH_NULL':j-=1\n"
    "        if j<0 or s!=n or not isinstance(ins[j].argval,str):continue\n"
    "        c=ins[j];q=getattr(c,'positions',None);lab=c.argval;col=end=0\n"
    "        if q and p and p.col_offset is not None and q.end_col_offset and p.lineno==q.end_lineno==ln:\n"
    "            lab=src[p.col_offset:q.end_col_offset].decode(errors='replace');col=w(src[:p.col_offset]);end=w(src[:p.end_col_offset])\n"
    "        out.append([c.argval[:60],lab[:60],col,end])\n"
    "    return J(json.dumps(out[:32]))\n";

/* Append S as a Python string literal. */
static void py_literal(tdb_buf *b, const char *s, size_t n)
{
    tdb_buf_adds(b, "'");
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' || s[i] == '\'')
            tdb_buf_addf(b, "\\%c", s[i]);
        else if (s[i] == '\n')
            tdb_buf_adds(b, "\\n");
        else
            tdb_buf_add(b, s + i, 1);
    }
    tdb_buf_adds(b, "'");
}

/* Send the helper module into the process, unless it is there. */
static int send_helper(tdb_session *s, int thread, int index, tdb_error *err)
{
    json_t *there = tdb_session_py_eval(s, thread, index, "hasattr(" MODULE ", 'targets')", 0, err);
    if (!there)
        return -1;
    int have = !strcmp(json_string_value(json_object_get(there, "value")) ?: "", "True");
    json_decref(there);
    if (have)
        return 0;
    const size_t piece = 180; /* escaped, with the expression around it, under the limit */
    tdb_buf e = TDB_BUF_INIT;
    int rc = 0;
    for (size_t at = 0; at < sizeof(helper) - 1 && rc == 0; at += piece) {
        size_t n = sizeof(helper) - 1 - at < piece ? sizeof(helper) - 1 - at : piece;
        tdb_buf_reset(&e);
        tdb_buf_addf(&e, "%s.__dict__.setdefault('p', []).%s(", MODULE, at ? "append" : "clear() or " MODULE ".p.append");
        py_literal(&e, helper + at, n);
        tdb_buf_adds(&e, ")");
        json_t *r = tdb_session_py_eval(s, thread, index, tdb_buf_str(&e), 0, err);
        rc = r ? 0 : -1;
        json_decref(r);
    }
    if (rc == 0) {
        json_t *r = tdb_session_py_eval(
            s, thread, index,
            "(lambda m: exec(''.join(m.p), m.__dict__))(" MODULE ")", 0, err);
        rc = r ? 0 : -1;
        json_decref(r);
    }
    tdb_buf_free(&e);
    return rc;
}

json_t *tdb_session_step_targets(tdb_session *s, int thread, int index, tdb_error *err)
{
    if (tdb_session_need_stop(s, err) < 0)
        return NULL;
    if (index == 0)
        index = s->python_top; /* the stop's own line */
    if ((thread > 0 && thread != tdb_session_stop_thread(s)) || s->python_top < 0 ||
        index != s->python_top || !s->hook.stop_is_hook) {
        tdb_error_set(err, EINVAL, "the calls of a line are listed at a Python breakpoint or "
                                   "step, for the Python line it stopped at");
        return NULL;
    }
    if (send_helper(s, 0, index, err) < 0)
        return NULL;
    json_t *r = tdb_session_py_eval(s, 0, index, MODULE ".targets(__import__('sys')._getframe(1))",
                                    0, err);
    if (!r)
        return NULL;
    const char *text = json_string_value(json_object_get(r, "value"));
    json_error_t jerr;
    json_t *list = text ? json_loads(text, 0, &jerr) : NULL, *out = NULL;
    json_decref(r);
    if (!json_is_array(list)) {
        tdb_error_set(err, EPROTO, "the hook listed no calls it could read (%s)",
                      text ? jerr.text : "no answer");
        json_decref(list);
        return NULL;
    }
    out = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c)
    {
        json_t *o = json_pack("{s:O, s:O}", "name", json_array_get(c, 0), "label",
                              json_array_get(c, 1));
        if (!o)
            continue;
        if (json_integer_value(json_array_get(c, 2)) > 0) {
            json_object_set(o, "column", json_array_get(c, 2));
            json_object_set(o, "end_column", json_array_get(c, 3));
        }
        json_array_append_new(out, o);
    }
    json_decref(list);
    return out;
}

int tdb_session_step_target(tdb_session *s, const char *name, int skip, tdb_error *err)
{
    if (tdb_session_need_stop(s, err) < 0)
        return -1;
    if (s->python_top < 0 || !s->hook.stop_is_hook || s->hook.state != PYHOOK_READY) {
        tdb_error_set(err, EINVAL, "a step into one call of a line starts at a Python breakpoint "
                                   "or step");
        return -1;
    }
    free(s->step.want_target);
    s->step.want_target = tdb_xstrdup(name);
    s->step.want_skip = skip;
    return tdb_session_resume(s, TDB_RESUME_STEP, err);
}

int tdb_session_step_target_matches(tdb_session *s, const char *what, int python)
{
    const char *name = s->step.target;
    if (!name || !what)
        return 0;
    /* "torch.add", "Tensor.relu", "Linear.forward": the last part; a class
     * called is its __init__ (or __new__, __call__). */
    const char *last = strrchr(what, '.');
    size_t n = strlen(name);
    int hit = !strcmp(last ? last + 1 : what, name);
    if (!hit && python && !last && (!strcmp(what, "__init__") || !strcmp(what, "__new__")))
        hit = 1; /* 3.8-3.10 name a method without its class: a class called */
    if (!hit && python && last && (!strcmp(last, ".__init__") || !strcmp(last, ".__new__") ||
                                   !strcmp(last, ".__call__"))) {
        const char *start = what;
        for (const char *p = what; p < last; p++)
            if (*p == '.')
                start = p + 1;
        hit = (size_t)(last - start) == n && !strncmp(start, name, n);
    }
    if (hit && s->step.target_skip > 0) {
        s->step.target_skip--;
        return 0;
    }
    return hit;
}

/*
 * session/values.c: what a stop shows of the program's values (see
 * session/internal.h), read from memory without debug info and without calling
 * into the process:
 *  - at a 'catch throw' stop, the C++ exception being thrown (native/cxxexc.h),
 *    and whether it is of the class the catchpoint asked for;
 *  - 'args': a native frame's arguments, from its demangled signature and
 *    the registers at its entry, or gdb's own with debug info (torch/cxxargs.h);
 *    at a breakpoint stop the same, as the stop's "args";
 *  - 'tensor EXPR': a tensor at any address gdb can evaluate (torch/tensor.h);
 *  - 'py-locals' and 'py-print NAME': Python values (cpython/values.h).
 * Tensors of torch need the layout of the torch build in use, learned by
 * calibration once per build and cached (torch/layout.h): it is looked up
 * when a value first needs it, and what happened is said once.
 */
#include "session/internal.h"

#include "torch/cxxargs.h"
#include "native/cxxexc.h"
#include "cpython/values.h"
#include "torch/tensor.h"
#include "torch/layout.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct tdb_session_values {
    json_t *reg_names;   /* -data-list-register-names, asked once */
    char reg_list[128];  /* " 5 4 ...": numbers of the argument registers */
    tdb_mem mem;
    pid_t mem_pid;
    tdb_torch *torch;    /* the process's torch, once found */
    int torch_failed;    /* it could not be read (said) */
    int layout_said;     /* where the layout came from was said */
    int printers;        /* gdb's printers are loaded (1), and have the layout (2) */
    json_t *refused;     /* this command's tensors refused: {"0x...": why} */
};

static struct tdb_session_values *values(tdb_session *s)
{
    if (!s->values) {
        s->values = tdb_xcalloc(1, sizeof(*s->values));
        tdb_mem_init(&s->values->mem, s->pid); /* fd -1, not 0 */
        s->values->mem_pid = s->pid;
    }
    struct tdb_session_values *v = s->values;
    if (v->mem_pid != s->pid) {
        tdb_mem_close(&v->mem);
        tdb_mem_init(&v->mem, s->pid);
        v->mem_pid = s->pid;
    }
    return v;
}

void tdb_session_values_free(tdb_session *s)
{
    struct tdb_session_values *v = s->values;
    if (!v)
        return;
    json_decref(v->reg_names);
    json_decref(v->refused);
    tdb_mem_close(&v->mem);
    tdb_torch_free(v->torch);
    free(v);
    s->values = NULL;
}

/* ---- the process's torch ---- */

static const tdb_tensor_layout *torch_layout(tdb_session *s, tdb_error *err);

/* Hand the layout's cache file to gdb's printers (once). */
static void give_printers_layout(tdb_session *s)
{
    struct tdb_session_values *v = values(s);
    const char *cache = v->torch ? tdb_torch_cache_path(v->torch) : NULL;
    if (v->printers != 1 || !cache || strchr(cache, '"') || strchr(cache, '\\'))
        return;
    if (tdb_session_console(s, CMD_TIMEOUT_MS, NULL,
                            "python tdebug_printers.set_layout_file(\"%s\")", cache) == 0)
        v->printers = 2;
}

void tdb_session_printers_load(tdb_session *s)
{
    char *path = tdb_companion_path("gdb/tdebug_printers.py");
    if (!path)
        return;
    char *dir = tdb_xstrdup(path);
    *strrchr(dir, '/') = '\0';
    if (!strchr(dir, '"') && !strchr(dir, '\\') &&
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-enable-pretty-printing") == 0 &&
        tdb_session_console(s, CMD_TIMEOUT_MS, NULL,
                            "python import sys; sys.path.insert(0, \"%s\"); import tdebug_printers",
                            dir) == 0)
        values(s)->printers = 1;
    free(dir);
    free(path);
}

int tdb_session_printers_prepare(tdb_session *s)
{
    struct tdb_session_values *v = values(s);
    if (v->printers != 1 || v->torch_failed)
        return 0;
    tdb_error e = {0};
    if (!v->torch)
        torch_layout(s, &e); /* gives the printers the layout when it has one */
    else
        give_printers_layout(s);
    return v->printers == 2; /* was 1 on entry: handed over now */
}

/* The tensor layout of the process's torch build: from the cache, else
 * learned now (said before, since it takes a second or two).  NULL when
 * the process has no torch, or the layout could not be learned or did not
 * check out: tensors are then refused (said once). */
static const tdb_tensor_layout *torch_layout(tdb_session *s, tdb_error *err)
{
    struct tdb_session_values *v = values(s);
    if (v->torch_failed) {
        tdb_error_set(err, 0, "the tensor layout of pid %d's torch is unknown (see the warning "
                              "above)", (int)s->pid);
        return NULL;
    }
    if (!v->torch) {
        tdb_error local = {0};
        tdb_session_make_stop_readers(s);
        int rc = tdb_torch_open(s->pid, s->have_maps ? &s->maps : NULL, &v->torch, &local);
        if (rc == 1) {
            /* No torch yet: it may be imported later, so look again then. */
            tdb_error_set(err, 0, "pid %d has not loaded torch (no libc10 is mapped)", (int)s->pid);
            return NULL;
        }
        if (rc < 0) {
            v->torch_failed = 1;
            say(s, "warning", "tensors cannot be decoded: %s", local.msg);
            tdb_error_set(err, 0, "%s", local.msg);
            return NULL;
        }
    }
    if (!tdb_torch_layout_origin(v->torch, NULL))
        tdb_session_emit(s, "note", json_pack("{s:s}", "layout", "calibrating"),
                         "learning the tensor layout of this torch build: a helper process "
                         "imports torch and probes tensors of known shape (once per build, about a "
                         "second; then cached)");
    const tdb_tensor_layout *l = tdb_torch_layout(v->torch, err);
    if (v->layout_said)
        return l;
    v->layout_said = 1;
    double secs = 0;
    uid_t owner = 0;
    int origin = tdb_torch_layout_origin(v->torch, &secs);
    const char *cache = tdb_torch_cache_path(v->torch);
    if (!l) {
        v->torch_failed = 1;
        say(s, "warning", "tensors are not decoded: %s", err->msg);
    } else if (origin == 2 && tdb_torch_calibrated_as(v->torch, &owner)) {
        tdb_session_emit(s, "note", json_pack("{s:s, s:f, s:I}", "layout", "calibration",
                                              "seconds", secs, "as_uid", (json_int_t)owner),
                         "tensor layout learned in %.1f s by a helper running as uid %u, the "
                         "owner of pid %d (its Python is theirs); not cached", secs,
                         (unsigned)owner, (int)s->pid);
    } else if (origin == 2) {
        tdb_session_emit(s, "note", json_pack("{s:s, s:f, s:s?}", "layout", "calibration",
                                              "seconds", secs, "cache", cache),
                         "tensor layout learned in %.1f s and checked on every probe%s%s", secs,
                         cache ? "; cached in " : " (no cache directory: learned again next time)",
                         cache ? cache : "");
    } else {
        tdb_session_emit(s, "note", json_pack("{s:s, s:s?}", "layout", "cache", "cache", cache),
                         "tensor layout of this torch build read from the cache (%s)",
                         cache ? cache : "?");
    }
    give_printers_layout(s);
    return l;
}

/* Does a C++ signature or type mention something only torch's layout
 * decodes? */
static int needs_torch(const char *text)
{
    return text && (strstr(text, "Tensor") || strstr(text, "Scalar"));
}

/* ---- registers ---- */

/* " --thread THREAD --frame LEVEL" (gdb's selected frame may be another),
 * or "" when the thread is unknown. */
static void frame_option(int thread, int level, char *buf, size_t size)
{
    if (thread > 0)
        snprintf(buf, size, " --thread %d --frame %d", thread, level);
    else
        buf[0] = '\0';
}

/* The registers that pass arguments, at frame 0 of THREAD. */
static int read_regs(tdb_session *s, int thread, tdb_regs *r, tdb_error *err)
{
    struct tdb_session_values *v = values(s);
    if (!v->reg_names) {
        static const char *const want[] = {"rdi", "rsi", "rdx", "rcx", "r8", "r9", "rsp", "rip",
                                           "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5",
                                           "xmm6", "xmm7"};
        if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &v->reg_names, err,
                        "-data-list-register-names") < 0)
            return -1;
        json_t *names = json_object_get(v->reg_names, "register-names");
        size_t len = 0;
        for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
            for (size_t i = 0; i < json_array_size(names); i++)
                if (json_string_value(json_array_get(names, i)) &&
                    strcmp(json_string_value(json_array_get(names, i)), want[k]) == 0)
                    len += (size_t)snprintf(v->reg_list + len, sizeof(v->reg_list) - len, " %zu", i);
    }
    json_t *vals = NULL;
    char where[64];
    frame_option(thread, 0, where, sizeof(where));
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &vals, err,
                    "-data-list-register-values%s --skip-unavailable x%s", where, v->reg_list) < 0)
        return -1;
    int rc = tdb_regs_from_mi(v->reg_names, vals, r, err);
    json_decref(vals);
    return rc;
}

/* Do the registers of frame 0 still hold its arguments?  1 and *PUSHED,
 * or 0 with *WHY. */
static int at_entry(tdb_session *s, const tdb_regs *r, int *pushed, const char **why)
{
    uint64_t off;
    tdb_error e = {0};
    *why = "the place of the pc in its function is unknown";
    if (tdb_gdb_symbol_offset(s->gdb, CMD_TIMEOUT_MS, r->rip, &off, &e) < 0) {
        /* gdb has not read the library (a light session's): tdebug's own
         * symbol tables place it. */
        tdb_native_frame f = {.pc = r->rip};
        tdb_session_make_stop_readers(s);
        if (!s->sym)
            return 0;
        tdb_symbolizer_name(s->sym, &f, 1);
        int named = f.function != NULL;
        off = f.offset;
        free(f.function);
        free(f.library);
        if (!named)
            return 0;
    }
    return tdb_regs_at_entry(&values(s)->mem, r, r->rip - off, pushed, why, &e) == 1;
}

static int eval_int(void *ctx, const char *expr, int64_t *out, tdb_error *err)
{
    tdb_session *s = ctx;
    return tdb_gdb_eval_int(s->gdb, CMD_TIMEOUT_MS, expr, out, err);
}

/* ---- the C++ exception at a throw ---- */

/* __cxa_throw(void *obj, std::type_info *tinfo, void (*dest)(void *)):
 * gdb's catchpoint stops on libstdc++'s 'throw' probe, whose arguments are
 * OBJ and TINFO; without the probe (another libstdc++), on the function's
 * entry, where rdi and rsi hold them. */
static int throw_args(tdb_session *s, uint64_t *obj, uint64_t *tinfo, tdb_error *err)
{
    int64_t a, b;
    tdb_error e = {0};
    if (tdb_gdb_eval_int(s->gdb, CMD_TIMEOUT_MS, "$_probe_arg0", &a, &e) == 0 &&
        tdb_gdb_eval_int(s->gdb, CMD_TIMEOUT_MS, "$_probe_arg1", &b, &e) == 0) {
        *obj = (uint64_t)a;
        *tinfo = (uint64_t)b;
        return 0;
    }
    if (!tdb_gdb_alive(s->gdb)) {
        tdb_error_set(err, e.code, "%s", e.msg);
        return -1;
    }
    tdb_regs r;
    int pushed;
    const char *why;
    if (read_regs(s, s->stop.thread, &r, err) < 0)
        return -1;
    if (!at_entry(s, &r, &pushed, &why)) {
        tdb_error_set(err, 0, "the stop is neither on libstdc++'s throw probe nor at "
                              "__cxa_throw's entry: %s", why);
        return -1;
    }
    *obj = r.gpr[0];
    *tinfo = r.gpr[1];
    return 0;
}

int tdb_session_throw_stop(tdb_session *s, const bp_info *b, json_t **out_exc, tdb_error *err)
{
    uint64_t obj, tinfo;
    tdb_error e = {0};
    if (throw_args(s, &obj, &tinfo, &e) < 0) {
        if (!tdb_gdb_alive(s->gdb)) {
            tdb_error_set(err, e.code, "%s", e.msg);
            return -1;
        }
        *out_exc = json_pack("{s:n, s:n, s:s}", "type", "message", "note", e.msg);
        return 1;
    }
    struct tdb_session_values *v = values(s);
    /* "throw" or "throw TYPE" (tdb_session_catchpoint_add()) */
    const char *want = b->location + strlen("throw");
    while (*want == ' ')
        want++;
    int is = *want ? tdb_cxx_exception_is(&v->mem, obj, tinfo, want, &e) : 1;
    if (is == 0)
        return 0; /* another class: let it go */
    json_t *exc = tdb_cxx_exception(&v->mem, obj, tinfo, &e);
    if (!exc)
        exc = json_pack("{s:n, s:n, s:s}", "type", "message", "note", e.msg);
    if (is < 0)
        json_object_set_new(exc, "filter", json_string("cannot tell whether it is a TYPE"));
    *out_exc = exc;
    return 1;
}


/* ---- a native frame's arguments ---- */

/* The arguments of native frame F (at gdb's level F->level) of THREAD:
 * gdb's with debug info, else from the signature and the registers.  New
 * reference, or NULL with ERR set (saying why they cannot be named). */
static json_t *frame_args(tdb_session *s, int thread, const tdb_view_frame *f, tdb_error *err)
{
    struct tdb_session_values *v = values(s);
    const char *func = f->native->function;
    json_t *out = NULL;
    tdb_error e = {0};
    if (f->mi && tdb_mi_str(f->mi, "line")) {
        /* Debug info: gdb's own list, tensors decoded. */
        json_t *res = NULL;
        if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err,
                        "-stack-list-arguments --simple-values %d %d", f->level, f->level) < 0)
            return NULL;
        json_t *list = json_object_get(json_array_get(json_object_get(res, "stack-args"), 0), "args");
        const tdb_tensor_layout *l = NULL;
        size_t i;
        json_t *a;
        char where[64];
        frame_option(thread, f->level, where, sizeof(where));
        json_array_foreach(list, i, a)
        {
            if (!l && needs_torch(tdb_mi_str(a, "type")) &&
                !tdb_tensor_dwarf_struct(tdb_mi_str(a, "type")))
                l = torch_layout(s, &e);
            const char *shown = tdb_mi_str(a, "value"), *ty = tdb_mi_str(a, "type");
            int64_t at = 0;
            if (shown && shown[0] != '@' && needs_torch(ty) && tdb_mi_str(a, "name")) {
                /* gdb's printers show the tensor, not its address: the
                 * address tdb_args_from_gdb() reads it at. */
                char *expr = tdb_xasprintf("(long)&(%s)", tdb_mi_str(a, "name"));
                if (tdb_gdb_eval_int(s->gdb, CMD_TIMEOUT_MS, expr, &at, NULL) == 0)
                    json_object_set_new(a, "value", json_sprintf("@0x%llx: %s",
                                                                 (unsigned long long)at, shown));
                free(expr);
            }
            if (!tdb_mi_str(a, "value") && tdb_mi_str(a, "name")) {
                /* --simple-values leaves structs out: gdb's print of it */
                json_t *val = NULL;
                tdb_buf cmd = TDB_BUF_INIT;
                tdb_buf_addf(&cmd, "-data-evaluate-expression%s ", where);
                tdb_mi_quote(&cmd, tdb_mi_str(a, "name"));
                if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &val, NULL, "%s", tdb_buf_str(&cmd)) == 0 &&
                    json_object_get(val, "value"))
                    json_object_set(a, "value", json_object_get(val, "value"));
                json_decref(val);
                tdb_buf_free(&cmd);
            }
        }
        out = tdb_args_from_gdb(&v->mem, func, list, eval_int, s, l, -1);
        json_decref(res);
        return out;
    }
    if (!func) {
        tdb_error_set(err, 0, "frame #%d has no symbol: what its arguments are is unknown",
                      f->level);
        return NULL;
    }
    tdb_cxx_sig sig;
    if (tdb_cxx_sig_parse(func, &sig, &e) < 0) {
        tdb_error_set(err, 0, "%s has no debug info and its name carries no parameter types (a C "
                              "function): its arguments cannot be named ('info registers rdi rsi "
                              "rdx rcx r8 r9' shows what carried the first six at its entry)",
                      func);
        return NULL;
    }
    tdb_cxx_sig_free(&sig);
    tdb_regs r = {0};
    int pushed = 0, entry = 0;
    const char *why = NULL;
    char buf[160];
    if (f->level != 0) {
        snprintf(buf, sizeof(buf), "frame #%d is not the innermost: the registers that passed its "
                                   "arguments were reused by the calls it made since",
                 f->level);
        why = buf;
    } else if (read_regs(s, thread, &r, err) < 0) {
        return NULL;
    } else {
        entry = at_entry(s, &r, &pushed, &why);
    }
    const tdb_tensor_layout *l = entry && needs_torch(func) ? torch_layout(s, &e) : NULL;
    out = tdb_cxx_args(&v->mem, func, &r, entry, pushed, why, l, -1, err);
    if (out && entry && needs_torch(func) && !l)
        json_object_set_new(out, "tensors_note", json_string(e.msg));
    return out;
}

json_t *tdb_session_stop_args(tdb_session *s)
{
    tdb_view_frame f;
    unsigned flags = tdb_session_stack_flags(s);
    if (s->stop.partial)
        return NULL; /* a Python line: no native function's arguments */
    int index = tdb_stackview_index_of_level(&s->stop_view, flags, 0);
    if (index < 0 || tdb_stackview_frame_at(&s->stop_view, flags, (size_t)index, &f) < 0 ||
        f.kind != TDB_FRAME_NATIVE)
        return NULL;
    tdb_error err = {0};
    return frame_args(s, s->stop.thread, &f, &err);
}

json_t *tdb_session_frame_args(tdb_session *s, int thread, int index, tdb_error *err)
{
    tdb_stackview tmp;
    int own;
    if (thread <= 0 && tdb_session_need_stop(s, err) == 0)
        thread = s->stop.thread;
    const tdb_stackview *v = tdb_session_view_of(s, thread, &tmp, &own, err);
    if (!v)
        return NULL;
    tdb_view_frame f;
    json_t *a = NULL;
    if (tdb_stackview_frame_at(v, tdb_session_stack_flags(s), (size_t)index, &f) < 0)
        tdb_error_set(err, ERANGE, "no frame is selected");
    else if (f.kind != TDB_FRAME_NATIVE)
        tdb_error_set(err, EINVAL, "the selected frame runs Python code: 'py-locals' shows its "
                                   "variables ('args' is for native frames)");
    else
        a = frame_args(s, thread, &f, err);
    if (own)
        tdb_stackview_clear(&tmp);
    return a;
}

/* ---- a tensor anywhere ---- */

json_t *tdb_session_tensor(tdb_session *s, const char *expr, tdb_error *err)
{
    struct tdb_session_values *v = values(s);
    tdb_error e = {0};
    char *type = NULL;
    const char *kind = NULL, *source = NULL;
    json_t *t = NULL, *out = NULL;
    int64_t addr = 0;
    tdb_buf cli = TDB_BUF_INIT, cast = TDB_BUF_INIT;

    if (tdb_session_need_stop(s, err) < 0)
        return NULL;
    tdb_buf_addf(&cli, "whatis %s", expr);
    type = tdb_gdb_console(s->gdb, CMD_TIMEOUT_MS, &e, tdb_buf_str(&cli));
    if (!type) {
        if (!tdb_gdb_alive(s->gdb))
            tdb_error_set(err, e.code, "%s", e.msg);
        else
            tdb_error_set(err, EINVAL, "gdb cannot evaluate '%s': %s ('py-print NAME' shows a "
                                       "Python variable, tensors included)", expr, e.msg);
        goto cleanup;
    }
    type[strcspn(type, "\n")] = '\0';
    const char *ty = strncmp(type, "type = ", 7) == 0 ? type + 7 : type;
    const char *st = tdb_tensor_dwarf_struct(ty);
    /* A pointer or a number is the address; an object (an at::Tensor
     * variable with debug info, a struct tdebug knows) is at its own. */
    char *ptr = tdb_xasprintf("%s *", ty);
    int object = !st && (st = tdb_tensor_dwarf_struct(ptr)) != NULL;
    free(ptr);
    tdb_buf_addf(&cast, object ? "(long)&(%s)" : "(long)(%s)", expr);
    if (tdb_gdb_eval_int(s->gdb, CMD_TIMEOUT_MS, tdb_buf_str(&cast), &addr, &e) < 0) {
        tdb_error_clear(&e);
        tdb_buf_reset(&cast);
        tdb_buf_addf(&cast, "(long)&(%s)", expr);
        if (tdb_gdb_eval_int(s->gdb, CMD_TIMEOUT_MS, tdb_buf_str(&cast), &addr, &e) < 0) {
            tdb_error_set(err, EINVAL, "'%s' (%s) is neither an address nor an object in memory: "
                                       "%s", expr, ty, e.msg);
            goto cleanup;
        }
    }
    if (st) {
        tdb_tensor_layout dw;
        kind = st;
        source = "dwarf";
        if (tdb_tensor_layout_from_dwarf(eval_int, s, st, &dw, &e) == 0)
            t = tdb_tensor_decode_impl(&v->mem, &dw, (uint64_t)addr, -1, &e);
    } else {
        const tdb_tensor_layout *l = torch_layout(s, &e);
        if (l) {
            source = tdb_torch_layout_origin(v->torch, NULL) == 2 ? "calibration" : "cache";
            t = tdb_tensor_decode_any(&v->mem, l, (uint64_t)addr, -1, &kind, &e);
        }
    }
    if (!t) {
        tdb_error_set(err, EINVAL, "'%s' (%s) is not a tensor tdebug can decode: %s", expr, ty,
                      e.msg);
        goto cleanup;
    }
    out = json_pack("{s:s, s:s, s:I, s:s, s:o}", "name", expr, "type", kind ? kind : "?",
                    "address", (json_int_t)addr, "layout", source, "value", t);
cleanup:
    free(type);
    tdb_buf_free(&cli);
    tdb_buf_free(&cast);
    return out;
}

/* ---- Python values ---- */

/* pyvalues' callback for a torch tensor object: the tensor, or -1 (why
 * kept in v->refused, by address, for the caller to say). */
static int py_tensor(void *ctx, uint64_t obj, json_t **out)
{
    tdb_session *s = ctx;
    struct tdb_session_values *v = values(s);
    tdb_error e = {0};
    const tdb_tensor_layout *l = torch_layout(s, &e);
    if (l) {
        tdb_tensor_ctx tc = {.torch = v->torch, .mem = &v->mem, .max_values = -1};
        if (tdb_tensor_from_pyobject(&tc, obj, out, &e) == 0)
            return 0;
    }
    char at[32];
    snprintf(at, sizeof(at), "0x%llx", (unsigned long long)obj);
    if (!v->refused)
        v->refused = json_object();
    json_object_set_new(v->refused, at, json_string(e.msg));
    return -1;
}

/* A value from pyvalues as this session shows it: a tensor's value is its
 * summary, a refused tensor says why. */
static void finish_value(tdb_session *s, json_t *o)
{
    json_t *t = json_object_get(o, "tensor");
    if (t) {
        char *text = tdb_tensor_repr(t);
        json_object_set_new(o, "value", json_string(text));
        free(text);
        return;
    }
    json_t *why = json_object_get(s->values->refused, tdb_mi_str(o, "address") ? tdb_mi_str(o, "address") : "");
    if (why && json_object_get(o, "error"))
        json_object_set(o, "error", why);
}

/* A Python value's read: frame INDEX of THREAD's view into *F (the view
 * owned by *TMP when *OWN), value options into *O.  0, or -1 with ERR. */
static int py_start(tdb_session *s, int thread, int index, tdb_stackview *tmp, int *own,
                    tdb_view_frame *f, tdb_py_value_opts *o, tdb_error *err)
{
    const tdb_stackview *v = tdb_session_frame_view(s, thread, index, tmp, own, err);
    if (!v)
        return -1;
    if (tdb_stackview_frame_at(v, tdb_session_stack_flags(s), (size_t)index, f) < 0 ||
        f->kind != TDB_FRAME_PYTHON) {
        tdb_error_set(err, EINVAL, "%s", s->py_state < 0
                                             ? "tdebug cannot read this interpreter's memory (see "
                                               "the warning above)"
                                             : "no Python frame at or below the selected frame "
                                               "(this thread runs no Python code there)");
        if (*own)
            tdb_stackview_clear(tmp);
        *own = 0;
        return -1;
    }
    struct tdb_session_values *sv = values(s);
    json_decref(sv->refused);
    sv->refused = NULL;
    *o = (tdb_py_value_opts)TDB_PY_VALUE_OPTS_INIT;
    o->tensor = py_tensor;
    o->ctx = s;
    return 0;
}

json_t *tdb_session_py_eval(tdb_session *s, int thread, int index, const char *text,
                            int statements, tdb_error *err)
{
    tdb_stackview tmp;
    tdb_view_frame f;
    tdb_py_value_opts o;
    int own = 0;
    if (thread <= 0 && tdb_session_need_stop(s, err) == 0)
        thread = tdb_session_stop_thread(s);
    if (py_start(s, thread, index, &tmp, &own, &f, &o, err) < 0)
        return NULL;
    uint64_t frame = f.py->addr;
    if (own)
        tdb_stackview_clear(&tmp);
    return tdb_session_python_eval(s, thread, frame, text, statements, err);
}

static json_t *frame_json(const tdb_view_frame *f, int index)
{
    return json_pack("{s:i, s:s, s:s, s:i}", "index", index, "function", f->py->qualname, "file",
                     f->py->filename, "line", f->py->line);
}

json_t *tdb_session_py_locals(tdb_session *s, int thread, int index, tdb_error *err)
{
    tdb_stackview tmp;
    tdb_view_frame f;
    tdb_py_value_opts o;
    int own = 0;
    json_t *locals = NULL, *out = NULL;
    if (py_start(s, thread, index, &tmp, &own, &f, &o, err) < 0)
        return NULL;
    if (tdb_py_frame_locals(s->py, f.py, &o, &locals, err) == 0) {
        size_t i;
        json_t *v;
        json_array_foreach(locals, i, v)
            finish_value(s, v);
        out = json_pack("{s:o, s:o}", "frame", frame_json(&f, index), "locals", locals);
    }
    if (own)
        tdb_stackview_clear(&tmp);
    return out;
}

json_t *tdb_session_py_value(tdb_session *s, int thread, int index, const char *name,
                             tdb_error *err)
{
    tdb_stackview tmp;
    tdb_view_frame f;
    tdb_py_value_opts o;
    int own = 0;
    json_t *v = NULL;
    int ok = *name && !isdigit((unsigned char)*name);
    for (const char *p = name; ok && *p; p++)
        ok = isalnum((unsigned char)*p) || *p == '_' || (unsigned char)*p >= 0x80;
    if (!ok) {
        tdb_error_set(err, EINVAL, "py-print takes a variable's name: tdebug reads the process's "
                                   "memory and evaluates no expression ('py-print x', then what "
                                   "it shows of x)");
        return NULL;
    }
    if (py_start(s, thread, index, &tmp, &own, &f, &o, err) < 0)
        return NULL;
    int rc = tdb_py_lookup_name(s->py, f.py, name, &o, &v, err);
    if (rc == 1)
        tdb_error_set(err, ENOENT, "name '%s' is not defined in %s (its locals, its module's "
                                   "globals, builtins)", name, f.py->qualname);
    if (rc == 0) {
        finish_value(s, v);
        json_object_set_new(v, "frame", frame_json(&f, index));
    }
    if (own)
        tdb_stackview_clear(&tmp);
    return rc == 0 ? v : NULL;
}

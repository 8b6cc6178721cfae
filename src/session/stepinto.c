/*
 * session/stepinto.c: where a step from a Python line into native code
 * stops ('set step-into', --step-into, the DAP's stepInto), and the way back.
 *
 * The hook (session/python.c) stops a step at the first C function the
 * line calls: for a pybind11 extension that is pybind11's dispatcher, for
 * stock torch an unnamed THPVariable_* wrapper in libtorch_python, both
 * binding glue.  From there, unless the mode is 'binding', the step goes
 * on to the first of:
 *   1. the user's own code ('mine'): a breakpoint at the entry of every
 *      function of the entry's library whose source file is under the
 *      user's directories (the program's, the working directory, --my-code,
 *      TDEBUG_MY_CODE), read from its DWARF; then a step past the prologue;
 *   2. torch's operator entry ('mine' and 'operator'): a breakpoint at each
 *      at::_ops::NAME::call the binding calls (read from its instructions),
 *      where the arguments are read as tensors;
 *   3. else the call's return (a breakpoint at the entry's return address):
 *      the hook's step goes on to the next Python line.
 * A Python step that started in the user's code also goes through the
 * Python of others (torch's nn.Module.__call__) to get there.
 * 'finish' (and a step off the end) out of such a frame goes back through
 * the glue to the Python line, by finishing the outermost glue frame.
 */
#include "session/internal.h"

#include "native/dwsource.h"
#include "native/elf.h"
#include "tdebug_pyhook.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The binding glue: native frames between a Python call and the code it
 * means, by the start of their demangled names (gdb's "func").  A step
 * goes through them; 'finish' out of the frame they called returns to the
 * Python line. */
static const struct glue_pattern {
    const char *prefix;
    const char *from; /* where the pattern comes from */
} glue[] = {
    /* pybind11 (pybind11/pybind11.h, pybind11/cast.h): the one C entry of
     * every bound function, the lambda wrapping the user's function, the
     * argument loader and the casters of arguments and results. */
    {"pybind11::cpp_function::dispatcher", "pybind11.h: cpp_function::dispatcher"},
    {"pybind11::cpp_function::initialize", "pybind11.h: cpp_function::initialize's lambdas"},
    {"pybind11::detail::argument_loader", "cast.h: argument_loader::call/call_impl"},
    {"pybind11::detail::type_caster", "cast.h: type casters"},
    {"pybind11::detail::make_caster", "cast.h: casters"},
    {"pybind11::detail::pyobject_caster", "cast.h: casters"},
    {"pybind11::detail::void_caster", "cast.h: casters"},
    {"pybind11::detail::collector", "cast.h: call arguments"},
    {"pybind11::detail::process_attributes", "attr.h"},
    {"pybind11::detail::", "pybind11's other helpers"},
    /* torch's own bindings (torch/csrc/utils/python_arg_parser.h, the
     * generated torch/csrc/autograd/generated/python_*functions.cpp). */
    {"torch::PythonArgParser", "python_arg_parser.h: PythonArgParser::parse"},
    {"torch::PythonArgs", "python_arg_parser.h: PythonArgs"},
    {"torch::FunctionSignature", "python_arg_parser.h"},
    {"torch::FunctionParameter", "python_arg_parser.h"},
    {"torch::autograd::THPVariable_", "python_variable_methods.cpp, python_torch_functions.cpp"},
    {"THPVariable_", "python_variable.cpp"},
    {"torch::autograd::dispatch_", "the generated bindings' dispatch_NAME lambdas"},
    {"torch::autograd::utils::wrap", "torch/csrc/autograd/utils/wrap_outputs.h"},
    {"torch::handle_torch_function", "torch/csrc/utils/python_arg_parser.h"},
    /* std::function's call thunks (libstdc++'s bits/std_function.h). */
    {"std::function", "bits/std_function.h"},
    {"std::_Function_handler", "bits/std_function.h"},
    {"std::__invoke", "bits/invoke.h"},
    /* c10's dispatcher and its boxing/unboxing kernel wrappers
     * (ATen/core/dispatch/Dispatcher.h, ATen/core/boxing/). */
    {"c10::Dispatcher::", "dispatch/Dispatcher.h"},
    {"c10::OperatorHandle", "dispatch/Dispatcher.h"},
    {"c10::TypedOperatorHandle", "dispatch/Dispatcher.h"},
    {"c10::impl::OperatorEntry", "dispatch/OperatorEntry.h"},
    {"c10::KernelFunction", "boxing/KernelFunction.h"},
    {"c10::BoxedKernel", "boxing/BoxedKernel.h"},
    {"c10::impl::BoxedKernelWrapper", "boxing/impl/boxing.h"},
    {"c10::impl::make_boxed_from_unboxed_functor", "boxing/impl/make_boxed_from_unboxed_functor.h"},
    {"c10::impl::call_functor_with_args_from_stack", "make_boxed_from_unboxed_functor.h"},
    {"c10::impl::wrap_kernel_functor_unboxed_", "boxing/impl/WrapFunctionIntoFunctor.h"},
    {"c10::impl::detail::WrapFunctionIntoRuntimeFunctor_", "WrapFunctionIntoRuntimeFunctor.h"},
    {"c10::impl::detail::WrapFunctionIntoFunctor_", "WrapFunctionIntoFunctor.h"},
};

/* Libraries whose unnamed frames are binding glue: torch's Python
 * bindings, stripped (THPVariable_* are not in its dynamic symbols). */
static const char *const glue_libraries[] = {"/libtorch_python.so", NULL};

int tdb_step_is_glue(const char *func, const char *from)
{
    if (func) {
        for (size_t i = 0; i < sizeof(glue) / sizeof(glue[0]); i++)
            if (strncmp(func, glue[i].prefix, strlen(glue[i].prefix)) == 0)
                return 1;
    }
    if (!from)
        return 0;
    for (const char *const *l = glue_libraries; *l; l++)
        if (strstr(from, *l))
            return 1;
    return 0;
}

/* ---- the user's directories ---- */

static void add_dir(tdb_session *s, const char *dir)
{
    char real[PATH_MAX];
    if (!dir || !*dir || !realpath(dir, real) || strcmp(real, "/") == 0)
        return;
    for (size_t i = 0; i < s->step.n_dirs; i++)
        if (strcmp(s->step.dirs[i], real) == 0)
            return;
    tdb_ptrs_push(&s->step.dirs, &s->step.n_dirs, tdb_xstrdup(real));
}

void tdb_session_step_dirs(tdb_session *s, const char *script_dir)
{
    if (s->step.dirs_known)
        return;
    s->step.dirs_known = 1;
    char **dirs = tdb_session_interest_dirs(script_dir);
    for (char **d = dirs; *d; d++)
        add_dir(s, *d);
    tdb_strv_free(dirs);
    for (size_t i = 0; i < s->opts.n_my_code; i++)
        add_dir(s, s->opts.my_code[i]);
    const char *env = getenv("TDEBUG_MY_CODE");
    if (env) {
        char *copy = tdb_xstrdup(env), *save = NULL;
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save))
            add_dir(s, d);
        free(copy);
    }
}

int tdb_session_is_mine(tdb_session *s, const char *path)
{
    tdb_session_step_dirs(s, NULL); /* an attach: the working directory */
    if (!path || path[0] != '/')
        return 0;
    for (size_t i = 0; i < s->step.n_dirs; i++) {
        size_t n = strlen(s->step.dirs[i]);
        if (strncmp(path, s->step.dirs[i], n) == 0 && path[n] == '/')
            return 1;
    }
    return 0;
}

void tdb_session_set_step_into(tdb_session *s, tdb_step_into mode)
{
    s->step.mode = mode;
}

tdb_step_into tdb_session_step_into(const tdb_session *s)
{
    return s->step.mode;
}

int tdb_session_step_policy(const tdb_session *s)
{
    return s->opts.raw ? TDB_STEP_INTO_BINDING : (int)s->step.mode;
}

/* ---- landing breakpoints ---- */

static int insert_bp(tdb_session *s, const char *fmt_loc, int thread, int disabled, tdb_error *err)
{
    json_t *r = NULL;
    char th[32] = "";
    if (thread)
        snprintf(th, sizeof(th), "-p %d ", thread);
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &r, err, "-break-insert %s%s%s", disabled ? "-d " : "",
                    th, fmt_loc) < 0)
        return -1;
    int n = atoi(tdb_mi_str(json_object_get(r, "bkpt"), "number") ?: "0");
    json_decref(r);
    return n;
}

/* The user's functions in LIB, their entries (cached per library). */
static lib_info *scan_mine(tdb_session *s, const char *lib)
{
    lib_info *l = tdb_session_note_lib(s, lib);
    if (!l->mine_scanned) {
        l->mine_scanned = 1;
        tdb_dwarf_functions_under(lib, (const char *const *)s->step.dirs, s->step.n_dirs,
                                  &l->mine, &l->n_mine, NULL);
    }
    return l;
}

/* The load bias of LIB in the process (its real path in the maps). */
static int lib_bias(tdb_session *s, const char *lib, uint64_t *out)
{
    char real[PATH_MAX]; /* the maps name files by their real paths (/lib is /usr/lib) */
    tdb_maps maps = {0};
    int rc = -1;
    if (!realpath(lib, real))
        snprintf(real, sizeof(real), "%s", lib);
    tdb_elf *e = tdb_elf_open_tables(lib, NULL);
    if (e && tdb_maps_read(s->pid, &maps, NULL) == 0)
        for (size_t i = 0; i < maps.n && rc < 0; i++)
            if (maps.v[i].path && strcmp(maps.v[i].path, real) == 0)
                rc = tdb_elf_load_bias(e, maps.v[i].start, maps.v[i].offset, out, NULL);
    tdb_maps_free(&maps);
    tdb_elf_free(e);
    return rc;
}

/* torch's operator entries, at::_ops::NAME::call, by mangled name: read
 * once from libtorch_cpu's dynamic symbols (0: not mapped yet). */
static int operator_table(tdb_session *s)
{
    if (s->step.ops_read)
        return s->step.n_ops > 0;
    const char *lib = NULL;
    for (size_t i = 0; i < s->n_libs && !lib; i++)
        if (strstr(s->libs[i].path, "/libtorch_cpu.so"))
            lib = s->libs[i].path;
    if (!lib)
        return 0; /* not yet: no operator can be called */
    s->step.ops_read = 1;
    uint64_t bias = 0;
    tdb_elf *e = tdb_elf_open(lib, NULL);
    if (e && lib_bias(s, lib, &bias) == 0) {
        s->step.op_names = tdb_elf_exports_values(e, "_ZN2at4_ops", &s->step.op_values,
                                                  &s->step.n_ops, NULL);
        for (size_t i = 0; i < s->step.n_ops; i++)
            s->step.op_values[i] += bias;
    }
    tdb_elf_free(e);
    return s->step.n_ops > 0;
}

/* The runtime address of at::_ops::NAME::call, NAME being the N bytes
 * at NAME, 0 if none.  Each NAME is one overload ("add_Tensor"), one
 * entry: its mangled name starts "_ZN2at4_ops" LEN NAME "4callE". */
static uint64_t operator_entry(tdb_session *s, const char *name, size_t n)
{
    char prefix[160];
    int len = snprintf(prefix, sizeof(prefix), "_ZN2at4_ops%zu%.*s4callE", n, (int)n, name);
    if (len <= 0 || (size_t)len >= sizeof(prefix))
        return 0;
    for (size_t i = 0; i < s->step.n_ops; i++)
        if (strncmp(s->step.op_names[i], prefix, (size_t)len) == 0)
            return s->step.op_values[i];
    return 0;
}

/* In gdb's annotation of a call ("<at::_ops::add_Tensor::call(at::Tensor
 * const&, ...)@plt>", demangled, or "<_ZN2at4_ops10add_Tensor4callE...@plt>"),
 * the operator's NAME: its start, *N its length; NULL when it is none. */
static const char *operator_called(const char *sym, size_t *n)
{
    if (!sym || !strstr(sym, "@plt>"))
        return NULL;
    if (strncmp(sym, "<at::_ops::", 11) == 0) {
        const char *name = sym + 11, *end = strstr(name, "::call(");
        if (!end || memchr(name, ':', (size_t)(end - name)))
            return NULL;
        *n = (size_t)(end - name);
        return name;
    }
    if (strncmp(sym, "<_ZN2at4_ops", 12) == 0) {
        char *end = NULL;
        long len = strtol(sym + 12, &end, 10);
        if (len <= 0 || strncmp(end + len, "4callE", 6) != 0)
            return NULL;
        *n = (size_t)len;
        return end;
    }
    return NULL;
}

static void add_landing(tdb_session *s, int bp)
{
    if (bp <= 0)
        return;
    s->step.bps = tdb_xrealloc(s->step.bps, (s->step.n_bps + 1) * sizeof(int));
    s->step.bps[s->step.n_bps++] = bp;
}

#define CALLEES_MAX 24 /* functions of the binding read, at most */

/* The operator entries the binding at PC (in LIB, load bias BIAS) calls,
 * directly or through its own unnamed helpers (two calls deep): its
 * instructions from gdb (the library has no symbols but its dynamic ones;
 * its call frame information gives each function's bounds), each call to
 * a PLT stub of at::_ops::NAME::call a breakpoint at that entry.  Far
 * cheaper than a breakpoint on each of torch's ~3000 entries, which gdb
 * takes a minute to make. */
static void find_operators(tdb_session *s, const char *lib, uint64_t bias, uint64_t lo_text,
                           uint64_t hi_text)
{
    uint64_t todo[CALLEES_MAX];
    int depth[CALLEES_MAX];
    size_t n_todo = 0;
    todo[n_todo] = s->step.entry_pc;
    depth[n_todo++] = 0;
    for (size_t k = 0; k < n_todo; k++) {
        uint64_t lo, hi;
        int brc = tdb_elf_function_bounds(lib, todo[k] - bias, &lo, &hi, NULL);
        if (brc < 0 || hi <= lo ||
            hi - lo > (1u << 20))
            continue;
        json_t *r = NULL;
        if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &r, NULL, "-data-disassemble -s 0x%llx -e 0x%llx -- 0",
                        (unsigned long long)(lo + bias), (unsigned long long)(hi + bias)) < 0)
            continue;
        json_t *insns = json_object_get(r, "asm_insns"), *in;
        size_t i;
        json_array_foreach(insns, i, in)
        {
            const char *inst = tdb_mi_str(in, "inst");
            if (!inst || (strncmp(inst, "call", 4) != 0 && strncmp(inst, "jmp", 3) != 0))
                continue;
            const char *hex = strstr(inst, "0x");
            const char *sym = strchr(inst, '<');
            if (!hex)
                continue;
            uint64_t target = strtoull(hex, NULL, 16);
            size_t name_len = 0;
            const char *op = operator_called(sym, &name_len);
            if (op) {
                uint64_t entry = operator_entry(s, op, name_len);
                int seen = 0;
                for (size_t j = 0; j < s->step.n_op_addrs && !seen; j++)
                    seen = s->step.op_addrs[j] == entry;
                if (!entry || seen)
                    continue;
                s->step.op_addrs = tdb_xrealloc(s->step.op_addrs,
                                                (s->step.n_op_addrs + 1) * sizeof(uint64_t));
                s->step.op_addrs[s->step.n_op_addrs++] = entry;
            } else if (depth[k] < 2 && n_todo < CALLEES_MAX && target >= lo_text &&
                       target < hi_text && (!sym || strchr(sym, '+')) &&
                       (target < lo + bias || target >= hi + bias)) {
                /* an unnamed function of the binding's own library */
                int dup = 0;
                for (size_t j = 0; j < n_todo && !dup; j++)
                    dup = todo[j] == target;
                if (!dup) {
                    todo[n_todo] = target;
                    depth[n_todo++] = depth[k] + 1;
                }
            }
        }
        json_decref(r);
    }
}

/* The operator entries of the binding at s->step.entry_pc, found once
 * (a step from the same line again costs only its breakpoints), each a
 * landing breakpoint on THREAD. */
static void operator_bps(tdb_session *s, const char *lib, uint64_t bias, uint64_t lo_text,
                         uint64_t hi_text, int thread)
{
    op_cache *c;
    for (c = s->step.cache; c && c->entry != s->step.entry_pc; c = c->next)
        ;
    if (!c) {
        s->step.op_addrs = NULL;
        s->step.n_op_addrs = 0;
        find_operators(s, lib, bias, lo_text, hi_text);
        c = tdb_xcalloc(1, sizeof(*c));
        c->entry = s->step.entry_pc;
        c->ops = s->step.op_addrs;
        c->n = s->step.n_op_addrs;
        c->next = s->step.cache;
        s->step.cache = c;
        s->step.op_addrs = NULL;
        s->step.n_op_addrs = 0;
    }
    for (size_t i = 0; i < c->n; i++) {
        char loc[40];
        snprintf(loc, sizeof(loc), "*0x%llx", (unsigned long long)c->ops[i]);
        int bp = insert_bp(s, loc, thread, 0, NULL);
        add_landing(s, bp);
        if (bp > 0) {
            s->step.ops = tdb_xrealloc(s->step.ops, (s->step.n_ops_bps + 1) * sizeof(int));
            s->step.ops[s->step.n_ops_bps++] = bp;
        }
    }
}

void tdb_session_step_free(tdb_session *s)
{
    while (s->step.cache) {
        op_cache *next = s->step.cache->next;
        free(s->step.cache->ops);
        free(s->step.cache);
        s->step.cache = next;
    }
    tdb_strv_free(s->step.dirs);
    free(s->step.finish_value);
    free(s->step.bps);
    free(s->step.ops);
    free(s->step.op_addrs);
    tdb_strv_free(s->step.op_names);
    free(s->step.op_values);
    free(s->step.target);
    free(s->step.want_target);
}

static int is_landing_bp(const tdb_session *s, int bkptno, int *is_op)
{
    *is_op = 0;
    for (size_t i = 0; i < s->step.n_ops_bps; i++)
        if (s->step.ops[i] == bkptno)
            *is_op = 1;
    for (size_t i = 0; i < s->step.n_bps; i++)
        if (s->step.bps[i] == bkptno)
            return 1;
    return 0;
}

void tdb_session_step_landing_end(tdb_session *s)
{
    if (!s->step.landing)
        return;
    s->step.landing = 0;
    if (!s->gdb || !tdb_gdb_alive(s->gdb))
        return;
    tdb_buf cmd = TDB_BUF_INIT;
    for (size_t i = 0; i < s->step.n_bps; i++)
        tdb_buf_addf(&cmd, " %d", s->step.bps[i]);
    if (s->step.return_bp)
        tdb_buf_addf(&cmd, " %d", s->step.return_bp);
    if (cmd.len)
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-delete%s", tdb_buf_str(&cmd));
    tdb_buf_free(&cmd);
    free(s->step.bps);
    s->step.bps = NULL;
    s->step.n_bps = 0;
    free(s->step.ops);
    s->step.ops = NULL;
    s->step.n_ops_bps = 0;
    s->step.return_bp = 0;
}

int tdb_session_step_land(tdb_session *s, const json_t *frame, int thread, tdb_error *err)
{
    int mode = tdb_session_step_policy(s);
    const char *func = tdb_mi_str(frame, "func"), *from = tdb_mi_str(frame, "from");
    const char *file = tdb_mi_str(frame, "fullname");
    if (mode == TDB_STEP_INTO_BINDING || tdb_session_is_mine(s, file))
        return 0;
    if (!tdb_step_is_glue(func, from) && !(file && strstr(file, "/pybind11/")))
        return 0; /* a native function that is not glue: the first native frame */
    if (!from && file) {
        /* a frame with a line has no from=: its library is the one holding it */
        lib_info *at = tdb_session_lib_at(s, parse_addr(tdb_mi_str(frame, "addr")));
        from = at ? at->path : NULL;
    }
    uint64_t bias;
    if (mode == TDB_STEP_INTO_MINE && from && from[0] == '/' && lib_bias(s, from, &bias) == 0) {
        lib_info *l = scan_mine(s, from);
        for (size_t i = 0; i < l->n_mine; i++) {
            char loc[40];
            snprintf(loc, sizeof(loc), "*0x%llx", (unsigned long long)(l->mine[i] + bias));
            add_landing(s, insert_bp(s, loc, thread, 0, NULL));
        }
    }
    lib_info *l = from ? tdb_session_find_lib(s, from) : NULL;
    s->step.entry_pc = parse_addr(tdb_mi_str(frame, "addr"));
    if (from && l && operator_table(s) && lib_bias(s, from, &bias) == 0)
        operator_bps(s, from, bias, l->lo, l->hi, thread);
    if (!s->step.n_bps)
        return 0;
    /* The call's return: the address on top of the stack at its entry. */
    json_t *r = NULL;
    uint64_t ret = 0, sp = 0;
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &r, NULL,
                    "-data-evaluate-expression \"*(unsigned long *)$sp\"") == 0)
        ret = strtoull(tdb_mi_str(r, "value") ?: "0", NULL, 0);
    json_decref(r);
    r = NULL;
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &r, NULL, "-data-evaluate-expression \"(unsigned long)$sp\"") == 0)
        sp = strtoull(tdb_mi_str(r, "value") ?: "0", NULL, 0);
    json_decref(r);
    s->step.landing = 1;
    s->step.thread = thread;
    if (ret && sp) {
        char loc[96];
        snprintf(loc, sizeof(loc), "-t -c \"$sp > 0x%llx\" *0x%llx", (unsigned long long)sp,
                 (unsigned long long)ret);
        int n = insert_bp(s, loc, thread, 0, NULL);
        s->step.return_bp = n > 0 ? n : 0;
    }
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-exec-continue") < 0)
        return -1;
    tdb_session_note_running(s);
    return 1;
}

int tdb_session_step_landed(tdb_session *s, int bkptno, const json_t *res, tdb_stop_info *st,
                            tdb_error *err)
{
    int is_op = 0;
    if (!s->step.landing)
        return TDB_HOOK_NOT_OURS;
    const char *th = tdb_mi_str(res, "thread-id");
    if (bkptno && bkptno == s->step.return_bp) {
        /* The call came back without reaching the user's code or an
         * operator: the hook's step goes on to the next Python line. */
        s->step.return_bp = 0; /* gdb deleted it (temporary) */
        tdb_session_step_landing_end(s);
        return TDB_HOOK_GO_ON;
    }
    if (!is_landing_bp(s, bkptno, &is_op))
        return TDB_HOOK_NOT_OURS;
    if (th && s->step.thread && atoi(th) != s->step.thread)
        return TDB_HOOK_GO_ON; /* an operator another thread runs */
    tdb_session_step_landing_end(s);
    tdb_session_python_step_done(s);
    s->step.landed = 1;
    /* the user's function goes on past its prologue; an operator (no
     * debug info) stops at its entry, its arguments read there */
    int rc = tdb_session_step_arrived(s, !is_op, st, err);
    if (rc == TDB_HOOK_STOP)
        s->step.args_at_stop = 1;
    return rc;
}

int tdb_session_step_arrived(tdb_session *s, int past_prologue, tdb_stop_info *st,
                             tdb_error *err)
{
    if (past_prologue) {
        /* With debug info, past the prologue to the first line of the body
         * (where gdb's 'break FUNCTION' stops), arguments set. */
        s->hook.native_prologue = 1;
        if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-exec-step") < 0)
            return -1;
        tdb_session_note_running(s);
        return TDB_HOOK_RUNNING;
    }
    st->reason = TDB_STOP_STEP;
    st->compact = 1;
    return TDB_HOOK_STOP;
}

/* ---- the way back ---- */

int tdb_session_step_finish_level(tdb_session *s, int *out_level)
{
    if (tdb_session_step_policy(s) == TDB_STEP_INTO_BINDING || !s->have_stop_view)
        return 0;
    unsigned flags = tdb_session_stack_flags(s);
    size_t n = tdb_stackview_count(&s->stop_view, flags);
    int outer = -1;
    for (size_t i = (size_t)s->selected + 1; i < n; i++) {
        tdb_view_frame f;
        if (tdb_stackview_frame_at(&s->stop_view, flags, i, &f) < 0)
            return 0;
        if (f.kind != TDB_FRAME_NATIVE || f.native->in_interp)
            break; /* the Python caller, or the interpreter calling the glue */
        if (!tdb_step_is_glue(f.native->function, f.native->library))
            return 0;
        outer = f.level;
    }
    if (outer < 0)
        return 0;
    *out_level = outer;
    return 1;
}

int tdb_session_step_off_end(tdb_session *s, const json_t *frame, int thread, tdb_error *err)
{
    if (tdb_session_step_policy(s) == TDB_STEP_INTO_BINDING || !s->step.landed)
        return 0;
    if (!tdb_step_is_glue(tdb_mi_str(frame, "func"), tdb_mi_str(frame, "from")) &&
        !strstr(tdb_mi_str(frame, "fullname") ?: "", "/pybind11/"))
        return 0;
    /* Stepped off the end of the user's function (or the operator) into
     * the glue that called it: out through the glue, to the Python line. */
    json_t *r = NULL;
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &r, err, "-stack-list-frames 0 63") < 0)
        return -1;
    json_t *stack = json_object_get(r, "stack"), *f;
    size_t i;
    int outer = -1, ok = 0;
    tdb_session_make_stop_readers(s);
    json_array_foreach(stack, i, f)
    {
        const char *func = tdb_mi_str(f, "func"), *from = tdb_mi_str(f, "from");
        uint64_t pc = parse_addr(tdb_mi_str(f, "addr"));
        if (s->py && tdb_py_owns_pc(s->py, pc)) {
            ok = outer >= 0;
            break;
        }
        if (!tdb_step_is_glue(func, from) && !strstr(tdb_mi_str(f, "fullname") ?: "", "/pybind11/"))
            break;
        outer = (int)i;
    }
    json_decref(r);
    if (!ok)
        return 0;
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-exec-finish --thread %d --frame %d",
                    thread, outer) < 0)
        return -1;
    tdb_session_note_running(s);
    s->last_resume = TDB_RESUME_FINISH;
    return 1;
}

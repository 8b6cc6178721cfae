/* cpython/runtime.c: the interpreter of a process or core found and opened:
 * _PyRuntime, the version, and the layout to read it with (the generated
 * table, or from 3.13 on the process's own _Py_DebugOffsets); contracts in
 * cpython/frames.h and cpython/offsets.h. */
#include "cpython/read.h"

#include "native/core.h"
#include "native/elf.h"
#include "process/pidns.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The oldest and newest versions tdebug reads (the newest through
 * _Py_DebugOffsets). */
#define OLDEST_MINOR 8
#define NEWEST_MINOR 14

/* --- layouts -------------------------------------------------------------- */

const tdb_py_layout *tdb_py_layout_find(int major, int minor)
{
    for (size_t i = 0; i < tdb_py_n_layouts; i++)
        if (tdb_py_layouts[i].major == major && tdb_py_layouts[i].minor == minor)
            return &tdb_py_layouts[i];
    return NULL;
}

/* Each tdebug field the runtime publishes, and the member that gives it. */
static const struct {
    int field, member;
} published[] = {
    {TDB_PYO_runtime_size, TDB_PYD_runtime_state_size},
    {TDB_PYO_runtime_interpreters_head, TDB_PYD_runtime_state_interpreters_head},
    {TDB_PYO_interp_size, TDB_PYD_interpreter_state_size},
    {TDB_PYO_interp_id, TDB_PYD_interpreter_state_id},
    {TDB_PYO_interp_next, TDB_PYD_interpreter_state_next},
    {TDB_PYO_interp_threads_head, TDB_PYD_interpreter_state_threads_head},
    {TDB_PYO_interp_modules, TDB_PYD_interpreter_state_imports_modules},
    {TDB_PYO_interp_sysdict, TDB_PYD_interpreter_state_sysdict},
    {TDB_PYO_interp_builtins, TDB_PYD_interpreter_state_builtins},
    {TDB_PYO_interp_ceval_gil, TDB_PYD_interpreter_state_ceval_gil},
    {TDB_PYO_tstate_size, TDB_PYD_thread_state_size},
    {TDB_PYO_tstate_prev, TDB_PYD_thread_state_prev},
    {TDB_PYO_tstate_next, TDB_PYD_thread_state_next},
    {TDB_PYO_tstate_interp, TDB_PYD_thread_state_interp},
    {TDB_PYO_tstate_current_frame, TDB_PYD_thread_state_current_frame},
    {TDB_PYO_tstate_thread_id, TDB_PYD_thread_state_thread_id},
    {TDB_PYO_tstate_native_thread_id, TDB_PYD_thread_state_native_thread_id},
    {TDB_PYO_iframe_size, TDB_PYD_interpreter_frame_size},
    {TDB_PYO_iframe_previous, TDB_PYD_interpreter_frame_previous},
    {TDB_PYO_iframe_code, TDB_PYD_interpreter_frame_executable},
    {TDB_PYO_iframe_instr, TDB_PYD_interpreter_frame_instr_ptr},
    {TDB_PYO_iframe_localsplus, TDB_PYD_interpreter_frame_localsplus},
    {TDB_PYO_iframe_owner, TDB_PYD_interpreter_frame_owner},
    {TDB_PYO_code_size, TDB_PYD_code_object_size},
    {TDB_PYO_code_filename, TDB_PYD_code_object_filename},
    {TDB_PYO_code_name, TDB_PYD_code_object_name},
    {TDB_PYO_code_qualname, TDB_PYD_code_object_qualname},
    {TDB_PYO_code_linetable, TDB_PYD_code_object_linetable},
    {TDB_PYO_code_firstlineno, TDB_PYD_code_object_firstlineno},
    {TDB_PYO_code_argcount, TDB_PYD_code_object_argcount},
    {TDB_PYO_code_localsplusnames, TDB_PYD_code_object_localsplusnames},
    {TDB_PYO_code_localspluskinds, TDB_PYD_code_object_localspluskinds},
    {TDB_PYO_code_code_adaptive, TDB_PYD_code_object_co_code_adaptive},
    {TDB_PYO_object_size, TDB_PYD_pyobject_size},
    {TDB_PYO_object_type, TDB_PYD_pyobject_ob_type},
    {TDB_PYO_type_name, TDB_PYD_type_object_tp_name},
    {TDB_PYO_type_flags, TDB_PYD_type_object_tp_flags},
    {TDB_PYO_tuple_item, TDB_PYD_tuple_object_ob_item},
    {TDB_PYO_var_size, TDB_PYD_tuple_object_ob_size},
    {TDB_PYO_list_item, TDB_PYD_list_object_ob_item},
    {TDB_PYO_dict_keys, TDB_PYD_dict_object_ma_keys},
    {TDB_PYO_dict_values, TDB_PYD_dict_object_ma_values},
    {TDB_PYO_float_fval, TDB_PYD_float_object_ob_fval},
    {TDB_PYO_long_tag, TDB_PYD_long_object_lv_tag},
    {TDB_PYO_long_digit, TDB_PYD_long_object_ob_digit},
    {TDB_PYO_bytes_sval, TDB_PYD_bytes_object_ob_sval},
    {TDB_PYO_unicode_state, TDB_PYD_unicode_object_state},
    {TDB_PYO_unicode_length, TDB_PYD_unicode_object_length},
    {TDB_PYO_unicode_ascii_size, TDB_PYD_unicode_object_asciiobject_size},
};

static uint64_t dbg_get(const uint8_t *dbg, const tdb_py_debug_layout *d, int member)
{
    uint64_t v;
    memcpy(&v, dbg + d->at[member], sizeof(v));
    return v;
}

/* Do the numbers DBG holds, read with D, look like a CPython's?  The
 * sizes and offsets every build has in common must come out right, and
 * every offset must lie inside its struct: a wrong guess at the order of
 * the members fails here rather than being believed.  RT_SIZE is the
 * size of _PyRuntime's symbol (0 unknown). */
static int debug_layout_fits(const uint8_t *dbg, size_t len, const tdb_py_debug_layout *d,
                             uint64_t rt_size)
{
    if ((size_t)d->size > len)
        return 0;
#define G(m) dbg_get(dbg, d, TDB_PYD_##m)
    if (G(pyobject_size) != 16 || G(pyobject_ob_type) != 8 || G(type_object_tp_name) != 24 ||
        G(tuple_object_ob_item) != 24 || G(tuple_object_ob_size) != 16 ||
        G(list_object_ob_item) != 24 || G(float_object_ob_fval) != 16 ||
        G(bytes_object_ob_sval) != 32 || G(unicode_object_length) != 16)
        return 0;
    if (rt_size && G(runtime_state_size) != rt_size)
        return 0;
    struct {
        uint64_t off, size;
    } inside[] = {
        {G(runtime_state_interpreters_head), G(runtime_state_size)},
        {G(interpreter_state_threads_head), G(interpreter_state_size)},
        {G(interpreter_state_next), G(interpreter_state_size)},
        {G(interpreter_state_imports_modules), G(interpreter_state_size)},
        {G(interpreter_state_ceval_gil), G(interpreter_state_size)},
        {G(interpreter_state_gil_runtime_state_holder), G(interpreter_state_size)},
        {G(thread_state_next), G(thread_state_size)},
        {G(thread_state_current_frame), G(thread_state_size)},
        {G(thread_state_native_thread_id), G(thread_state_size)},
        {G(interpreter_frame_previous), G(interpreter_frame_size)},
        {G(interpreter_frame_owner), G(interpreter_frame_size)},
        {G(interpreter_frame_localsplus), G(interpreter_frame_size) + 1},
        {G(code_object_co_code_adaptive), G(code_object_size)},
        {G(code_object_linetable), G(code_object_size)},
    };
    for (size_t i = 0; i < sizeof(inside) / sizeof(inside[0]); i++)
        if (inside[i].off >= inside[i].size || inside[i].size > (64u << 20))
            return 0;
    if (G(interpreter_state_gil_runtime_state_locked) < G(interpreter_state_gil_runtime_state) ||
        G(interpreter_state_gil_runtime_state_holder) < G(interpreter_state_gil_runtime_state))
        return 0;
#undef G
    return 1;
}

/* Overlay what DBG publishes onto P's layout.  Everything published is
 * taken from DBG, never from the table. */
static void apply_debug_offsets(tdb_py_process *p, const uint8_t *dbg,
                                const tdb_py_debug_layout *d)
{
    for (size_t i = 0; i < sizeof(published) / sizeof(published[0]); i++)
        p->L.v[published[i].field] = (int32_t)dbg_get(dbg, d, published[i].member);
    uint64_t gil = dbg_get(dbg, d, TDB_PYD_interpreter_state_gil_runtime_state);
    p->L.v[TDB_PYO_gil_locked] =
        (int32_t)(dbg_get(dbg, d, TDB_PYD_interpreter_state_gil_runtime_state_locked) - gil);
    p->L.v[TDB_PYO_gil_last_holder] =
        (int32_t)(dbg_get(dbg, d, TDB_PYD_interpreter_state_gil_runtime_state_holder) - gil);
    p->L.v[TDB_PYO_interp_gc_collecting] =
        (int32_t)(dbg_get(dbg, d, TDB_PYD_interpreter_state_gc) +
                  dbg_get(dbg, d, TDB_PYD_gc_collecting));
}

/* --- opening ------------------------------------------------------------- */

/* What is looked at: a live process or a core file. */
typedef struct target {
    pid_t pid;
    tdb_core *core;
    const tdb_maps *maps;
    const char *exe;   /* the executable's path as mapped, or NULL */
} target;

/* The file to read for a mapped path.  Live: through /proc/PID/root so a
 * process in another mount namespace (a container) works too.  Core: the
 * file when it is still the one the process had (else WHY says so). */
static tdb_elf *open_mapped(const target *t, const char *path, tdb_error *why)
{
    if (t->core) {
        char *local = tdb_core_file(t->core, path, why);
        tdb_elf *e = local ? tdb_elf_open_tables(local, why) : NULL;
        free(local);
        return e;
    }
    char *p = tdb_xasprintf("/proc/%d/root%s", (int)t->pid, path);
    tdb_elf *e = tdb_elf_open_tables(p, NULL);
    free(p);
    if (!e && t->exe && strcmp(path, t->exe) == 0) {
        /* The executable was replaced or deleted since it started. */
        p = tdb_xasprintf("/proc/%d/exe", (int)t->pid);
        e = tdb_elf_open_tables(p, NULL);
        free(p);
    }
    return e;
}

static int lookup_addr(tdb_elf *e, uint64_t bias, const char *name, uint64_t *addr,
                       uint64_t *size)
{
    uint64_t v, s;
    if (tdb_elf_find_symbol(e, name, &v, &s, NULL) < 0)
        return -1;
    *addr = v + bias;
    if (size)
        *size = s;
    return 0;
}

static void format_version(char *out, size_t size, unsigned long hex)
{
    unsigned level = (hex >> 4) & 0xf;
    const char *tag = level == 0xa ? "a" : level == 0xb ? "b" : level == 0xc ? "rc" : "";
    if (*tag)
        snprintf(out, size, "%lu.%lu.%lu%s%lu", (hex >> 24) & 0xff, (hex >> 16) & 0xff,
                 (hex >> 8) & 0xff, tag, hex & 0xf);
    else
        snprintf(out, size, "%lu.%lu.%lu", (hex >> 24) & 0xff, (hex >> 16) & 0xff,
                 (hex >> 8) & 0xff);
}

/* "3.12" from ".../libpython3.12.so.1.0" or ".../python3.12": for an
 * interpreter older than 3.11, which has no Py_Version. */
static int version_from_name(const char *path, int *major, int *minor)
{
    const char *base = tdb_base_name(path);
    const char *v = strstr(base, "python");
    return v && sscanf(v + 6, "%d.%d", major, minor) == 2 ? 0 : -1;
}

/* CPython's gdb helpers for the interpreter in MODULE, when installed
 * beside it (pyenv: bin/python3.7-gdb.py) or where Debian puts them: what
 * reads a version tdebug does not.  New string or NULL. */
static char *gdb_helper(const char *module)
{
    char *cands[3] = {
        tdb_xasprintf("%s-gdb.py", module),
        tdb_xasprintf("/usr/share/gdb/auto-load%s-gdb.py", module),
        NULL,
    };
    /* pyenv's libpython3.7m.so.1.0 sits in lib/, its helper in bin/. */
    const char *lib = strstr(module, "/lib/libpython");
    if (lib) {
        int major, minor;
        if (version_from_name(module, &major, &minor) == 0)
            cands[2] = tdb_xasprintf("%.*s/bin/python%d.%d-gdb.py", (int)(lib - module), module,
                                     major, minor);
    }
    char *found = NULL;
    for (int i = 0; i < 3; i++) {
        if (!found && cands[i] && access(cands[i], R_OK) == 0)
            found = cands[i];
        else
            free(cands[i]);
    }
    return found;
}

/* A version tdebug does not read: say which and what reads it. */
static void refuse_version(tdb_py_process *p, const target *t, const char *what,
                           tdb_error *err)
{
    char *helper = gdb_helper(p->module);
    char who[64];
    if (t->core)
        snprintf(who, sizeof(who), "the core of pid %d", (int)t->pid);
    else
        snprintf(who, sizeof(who), "pid %d", (int)t->pid);
    tdb_buf advice = TDB_BUF_INIT;
    if (helper && t->core)
        tdb_buf_addf(&advice, "gdb reads its Python stacks with CPython's own helpers: gdb -batch "
                     "-ex 'source %s' -ex 'thread apply all py-bt' %s %s",
                     helper, t->exe ? t->exe : "EXE", tdb_core_path(t->core));
    else if (helper)
        tdb_buf_addf(&advice, "gdb reads its Python stacks with CPython's own helpers: gdb -p %d "
                     "-batch -ex 'source %s' -ex 'thread apply all py-bt'",
                     (int)t->pid, helper);
    else
        tdb_buf_adds(&advice, "gdb's py-bt reads it with that interpreter's python-gdb.py");
    tdb_error_set(err, EPROTO,
                  "cannot read the Python stacks of %s: it runs Python %s, %s (tdebug reads "
                  "CPython 3.%d to 3.%d; native stacks only; %s)",
                  who, p->version, what, OLDEST_MINOR, NEWEST_MINOR, tdb_buf_str(&advice));
    tdb_buf_free(&advice);
    free(helper);
}

/* Choose P's layout: the table's entry for its version, with what the
 * runtime publishes in _Py_DebugOffsets (3.13+) taking precedence. */
static int choose_layout(tdb_py_process *p, const target *t, uint64_t rt_size, tdb_error *err)
{
    const tdb_py_layout *tbl = tdb_py_layout_find(p->major, p->minor);
    const tdb_py_layout *base = tbl;
    const char *mode = getenv("TDEBUG_PY_OFFSETS");
    int use_debug = !(mode && strcmp(mode, "table") == 0);

    uint8_t dbg[4096];
    int have_dbg = 0;
    if (p->minor >= 13 && tdb_mem_read_full(&p->mem, p->runtime, dbg, sizeof(dbg)) == 0 &&
        memcmp(dbg, "xdebugpy", 8) == 0)
        have_dbg = 1;
    if (have_dbg) {
        uint64_t free_threaded;
        memcpy(&free_threaded, dbg + 16, sizeof(free_threaded));
        if (free_threaded == 1) {
            refuse_version(p, t, "a free-threaded build (the 't' interpreter, without the GIL), "
                           "whose objects tdebug cannot read: run the program with the same "
                           "version's default build", err);
            return -1;
        }
    }
    if (!base) {
        /* Newer than the table: the newest entry it has, under what the
         * runtime publishes. */
        for (size_t i = 0; i < tdb_py_n_layouts; i++)
            if (tdb_py_layouts[i].major == 3 && tdb_py_layouts[i].minor >= 13 &&
                tdb_py_layouts[i].minor < p->minor &&
                (!base || tdb_py_layouts[i].minor > base->minor))
                base = &tdb_py_layouts[i];
    }
    if (p->major != 3 || p->minor < OLDEST_MINOR) {
        refuse_version(p, t, "older than tdebug knows", err);
        return -1;
    }
    if (!base || (!tbl && !have_dbg)) {
        refuse_version(p, t, "newer than tdebug knows and without offsets it can read", err);
        return -1;
    }
    p->L = *base;
    if (have_dbg && use_debug) {
        const tdb_py_debug_layout *fit = NULL;
        for (size_t i = 0; i < tdb_py_n_debug_layouts && !fit; i++) {
            const tdb_py_debug_layout *d = &tdb_py_debug_layouts[i];
            if (d->major == p->major && d->minor == p->minor &&
                debug_layout_fits(dbg, sizeof(dbg), d, rt_size))
                fit = d;
        }
        if (fit) {
            for (size_t i = 0; i < sizeof(published) / sizeof(published[0]); i++)
                p->L.v[published[i].field] = TDB_PYO_NONE;
            apply_debug_offsets(p, dbg, fit);
            p->layout_source = tdb_xasprintf("_Py_DebugOffsets of the process (%s), %s for the "
                                             "rest", fit->source, base->source);
            return 0;
        }
        if (!tbl) {
            refuse_version(p, t, "newer than tdebug knows, with _Py_DebugOffsets laid out "
                           "differently from any tdebug knows", err);
            return -1;
        }
    }
    if (!tbl) {
        refuse_version(p, t, "newer than tdebug knows ($TDEBUG_PY_OFFSETS=table asks for the "
                       "table alone)", err);
        return -1;
    }
    /* Same version, another layout: a debug build (Py_DEBUG, Py_TRACE_REFS)
     * or a patched interpreter; _PyRuntime's symbol size gives it away. */
    if (rt_size && rt_size != (uint64_t)tbl->v[TDB_PYO_runtime_size]) {
        char what[256];
        snprintf(what, sizeof(what),
                 "but not laid out as CPython %d.%d's release builds are (its _PyRuntime has "
                 "%llu bytes, theirs %d: a debug build?)",
                 p->major, p->minor, (unsigned long long)rt_size,
                 tbl->v[TDB_PYO_runtime_size]);
        refuse_version(p, t, what, err);
        return -1;
    }
    p->layout_source = tdb_xstrdup(tbl->source);
    return 0;
}

/* Check the interpreter in E (mapped with BIAS) and fill P: version,
 * layout, type objects. */
static int check_and_fill(tdb_py_process *p, const target *t, tdb_elf *e, uint64_t bias,
                          uint64_t rt_size, tdb_error *err)
{
    uint64_t vaddr;
    unsigned long hex = 0;
    int major = 0, minor = 0;
    if (lookup_addr(e, bias, "Py_Version", &vaddr, NULL) == 0) {
        uint32_t h;
        if (tdb_mem_read_full(&p->mem, vaddr, &h, sizeof(h)) < 0) {
            tdb_error_errno(err, "cannot read the Python version of pid %d", (int)p->pid);
            return -1;
        }
        hex = h;
        major = (int)((hex >> 24) & 0xff);
        minor = (int)((hex >> 16) & 0xff);
        format_version(p->version, sizeof(p->version), hex);
    } else if (version_from_name(p->module, &major, &minor) == 0) {
        snprintf(p->version, sizeof(p->version), "%d.%d", major, minor);
    } else {
        tdb_error_set(err, EPROTO,
                      "cannot read the Python stacks of pid %d: '%s' has _PyRuntime but no "
                      "version tdebug can tell (its file name has none, it has no Py_Version)",
                      (int)p->pid, p->module);
        return -1;
    }
    p->major = major;
    p->minor = minor;
    if (choose_layout(p, t, rt_size, err) < 0)
        return -1;
    static const struct {
        const char *name;
        size_t off;
    } types[] = {
        {"PyCode_Type", offsetof(tdb_py_types, code)},
        {"PyUnicode_Type", offsetof(tdb_py_types, unicode)},
        {"PyBytes_Type", offsetof(tdb_py_types, bytes)},
        {"PyLong_Type", offsetof(tdb_py_types, long_)},
        {"PyFloat_Type", offsetof(tdb_py_types, float_)},
        {"PyBool_Type", offsetof(tdb_py_types, bool_)},
        {"PyTuple_Type", offsetof(tdb_py_types, tuple)},
        {"PyList_Type", offsetof(tdb_py_types, list)},
        {"PyDict_Type", offsetof(tdb_py_types, dict)},
        {"PyCell_Type", offsetof(tdb_py_types, cell)},
        {"PyModule_Type", offsetof(tdb_py_types, module)},
        {"PyType_Type", offsetof(tdb_py_types, type)},
        {"_Py_NoneStruct", offsetof(tdb_py_types, none)},
        {"_Py_TrueStruct", offsetof(tdb_py_types, true_)},
        {"_Py_FalseStruct", offsetof(tdb_py_types, false_)},
        {"PyFrame_Type", offsetof(tdb_py_types, frame)},
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        uint64_t *slot = (uint64_t *)((char *)&p->t + types[i].off);
        if (lookup_addr(e, bias, types[i].name, slot, NULL) < 0) {
            tdb_error_set(err, EPROTO,
                          "cannot read the Python stacks of pid %d: '%s' lacks %s, of CPython's "
                          "C API (not CPython?)",
                          (int)p->pid, p->module, types[i].name);
            return -1;
        }
    }
    static const struct {
        const char *name;
        size_t off;
        int indirect; /* the symbol is a pointer to the type */
    } optional[] = {
        {"PySet_Type", offsetof(tdb_py_types, set), 0},
        {"PyFrozenSet_Type", offsetof(tdb_py_types, frozenset), 0},
        {"PyMethod_Type", offsetof(tdb_py_types, method), 0},
        {"PyCFunction_Type", offsetof(tdb_py_types, cfunction), 0},
        {"PyExc_BaseException", offsetof(tdb_py_types, base_exception), 1},
    };
    for (size_t i = 0; i < sizeof(optional) / sizeof(optional[0]); i++) {
        uint64_t *slot = (uint64_t *)((char *)&p->t + optional[i].off), at = 0;
        if (lookup_addr(e, bias, optional[i].name, &at, NULL) < 0)
            continue;
        if (optional[i].indirect && tdb_py_rd(p, at, &at, sizeof(at)) < 0)
            continue;
        *slot = at;
    }
    uint64_t eval_size = 0;
    if (lookup_addr(e, bias, "_PyEval_EvalFrameDefault", &p->eval_lo, &eval_size) == 0)
        p->eval_hi = p->eval_lo + eval_size;
    return 0;
}

/* The offset of the kernel's thread id in glibc's struct pthread (what
 * pthread_t points to), from the descriptor glibc keeps for libthread_db
 * (_thread_db_pthread_tid: bits, count, offset).  -1 when unknown. */
static int32_t pthread_tid_offset(tdb_py_process *p, const target *t)
{
    for (size_t i = 0; i < t->maps->n; i++) {
        const tdb_map *m = &t->maps->v[i];
        if (!m->path || m->offset != 0 || strncmp(tdb_base_name(m->path), "libc.so", 7) != 0)
            continue;
        tdb_elf *e = open_mapped(t, m->path, NULL);
        uint64_t bias, addr;
        uint32_t desc[3];
        int32_t off = -1;
        if (e && tdb_elf_load_bias(e, m->start, m->offset, &bias, NULL) == 0 &&
            lookup_addr(e, bias, "_thread_db_pthread_tid", &addr, NULL) == 0 &&
            tdb_mem_read_full(&p->mem, addr, desc, sizeof(desc)) == 0 && desc[0] == 32 &&
            desc[2] < 4096)
            off = (int32_t)desc[2];
        tdb_elf_free(e);
        return off;
    }
    return -1;
}

/* The micro version of a 3.8-3.10 interpreter (no Py_Version), from
 * sys.version ("3.9.18 (main, ...)") when the runtime is up. */
static void full_version(tdb_py_process *p)
{
    uint64_t interp = 0, sysdict = 0;
    if (tdb_py_ptr(p, p->runtime, TDB_PYO_runtime_interpreters_main, &interp) < 0 ||
        tdb_py_ptr(p, interp, TDB_PYO_interp_sysdict, &sysdict) < 0 || !sysdict)
        return;
    char *v = tdb_py_str(p, tdb_py_dict_get(p, sysdict, "version"), 40, 1, NULL, NULL);
    int major, minor, micro;
    char rest[16];
    if (v && sscanf(v, "%d.%d.%d%15[abrc0-9+]", &major, &minor, &micro, rest) >= 3 &&
        major == p->major && minor == p->minor) {
        size_t n = strcspn(v, " ");
        if (n < sizeof(p->version))
            snprintf(p->version, sizeof(p->version), "%.*s", (int)n, v);
    }
    free(v);
}

static int add_text_ranges(tdb_py_process *p, const tdb_maps *maps)
{
    for (size_t i = 0; i < maps->n; i++) {
        const tdb_map *m = &maps->v[i];
        /* A core's map has no permissions for what it did not dump (code):
         * any range of the file then (a pc is never in its data anyway). */
        if (!m->path || strcmp(m->path, p->module) != 0 || (m->perms[2] != 'x' && !p->is_core))
            continue;
        p->text = tdb_xrealloc(p->text, (p->ntext + 1) * 2 * sizeof(*p->text));
        p->text[2 * p->ntext] = m->start;
        p->text[2 * p->ntext + 1] = m->end;
        p->ntext++;
    }
    return 0;
}

static int open_target(const target *t, tdb_py_process *p, tdb_error *err)
{
    /* Candidates: the executable (Debian links libpython statically), then
     * any libpython; other libraries are not searched (a process with 300
     * torch libraries must stay fast to look at). */
    int rc = 1;
    const tdb_maps *maps = t->maps;
    for (size_t i = 0; i < maps->n && rc == 1; i++) {
        const tdb_map *m = &maps->v[i];
        if (!m->path || m->path[0] != '/' || m->offset != 0)
            continue;
        const char *base = tdb_base_name(m->path);
        int is_exe = t->exe && strcmp(m->path, t->exe) == 0;
        if (!is_exe && strncmp(base, "libpython", 9) != 0)
            continue;
        tdb_error why = {0};
        tdb_elf *e = open_mapped(t, m->path, &why);
        uint64_t rt_value, rt_size, bias;
        if (!e) {
            if (t->core && why.set && strncmp(base, "libpython", 9) == 0) {
                tdb_error_set(err, EPROTO, "cannot read the Python stacks of the core: %s",
                              why.msg);
                rc = -1;
            }
            continue;
        }
        if (tdb_elf_find_symbol(e, "_PyRuntime", &rt_value, &rt_size, NULL) == 0 &&
            tdb_elf_load_bias(e, m->start, m->offset, &bias, NULL) == 0) {
            p->module = tdb_xstrdup(m->path);
            p->runtime = rt_value + bias;
            rc = check_and_fill(p, t, e, bias, rt_size, err) < 0 ? -1 : 0;
        }
        tdb_elf_free(e);
    }
    if (rc == 0) {
        add_text_ranges(p, maps);
        p->pthread_tid = p->minor < 11 ? pthread_tid_offset(p, t) : -1;
        if (p->minor < 11)
            full_version(p);
    }
    return rc;
}

int tdb_py_open(pid_t pid, const tdb_maps *maps_in, tdb_py_process **out, tdb_error *err)
{
    tdb_maps own = {NULL, 0, NULL};
    const tdb_maps *maps = maps_in;
    tdb_py_process *p = NULL;
    char *exe = NULL;
    int rc = -1;

    if (!maps) {
        if (tdb_maps_read(pid, &own, err) < 0)
            return -1;
        maps = &own;
    }
    char exebuf[PATH_MAX], link[64];
    snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, exebuf, sizeof(exebuf) - 1);
    if (n > 0) {
        exebuf[n] = '\0';
        exe = tdb_xstrdup(exebuf);
    }
    p = tdb_xcalloc(1, sizeof(*p));
    p->pid = pid;
    p->ns = tdb_pidns_map_new(NULL, pid);
    tdb_mem_init(&p->mem, pid);
    target t = {pid, NULL, maps, exe};
    rc = open_target(&t, p, err);
    if (rc == 0) {
        *out = p;
        p = NULL;
    }
    tdb_py_close(p);
    free(exe);
    tdb_maps_free(&own);
    return rc;
}

int tdb_py_open_core(tdb_core *core, tdb_py_process **out, tdb_error *err)
{
    tdb_py_process *p = tdb_xcalloc(1, sizeof(*p));
    p->pid = tdb_core_pid(core);
    p->is_core = 1;
    tdb_core_mem(core, &p->mem);
    target t = {p->pid, core, tdb_core_maps(core), tdb_core_exe(core)};
    int rc = open_target(&t, p, err);
    if (rc == 0) {
        *out = p;
        p = NULL;
    }
    tdb_py_close(p);
    return rc;
}

void tdb_py_close(tdb_py_process *p)
{
    if (!p)
        return;
    tdb_mem_close(&p->mem);
    tdb_pidns_map_free(p->ns);
    free(p->module);
    free(p->layout_source);
    free(p->text);
    free(p);
}

const char *tdb_py_version(const tdb_py_process *p)
{
    return p->version;
}

const char *tdb_py_layout_source(const tdb_py_process *p)
{
    return p->layout_source;
}

int tdb_py_owns_pc(const tdb_py_process *p, uint64_t pc)
{
    for (size_t i = 0; i < p->ntext; i++)
        if (pc >= p->text[2 * i] && pc < p->text[2 * i + 1])
            return 1;
    return 0;
}

int tdb_py_is_eval_pc(const tdb_py_process *p, uint64_t pc)
{
    return pc >= p->eval_lo && pc < p->eval_hi;
}

unsigned long tdb_py_reads(const tdb_py_process *p)
{
    return p->mem.reads;
}

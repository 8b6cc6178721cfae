/*
 * cpython/frames.c: one snapshot of a CPython process (or core file), for
 * CPython 3.8 to 3.14, whatever Python tdebug was built with: its
 * interpreters, their threads, each thread's chain of frames, the code
 * objects they run and the line each is at, and the threads' names.  The
 * interpreter is found by cpython/runtime.c; objects are read by
 * cpython/objects.c; lines come from cpython/linetable.c.
 *
 * Nothing here includes a CPython header: every offset comes from the
 * layout of the target's version (src/cpython/offsets.h: generated from each
 * version's headers; from 3.13 on, preferably the process's own
 * _Py_DebugOffsets).  Remote structs are read as byte buffers and their
 * fields taken at those offsets.
 */
#include "cpython/read.h"

#include "process/pidns.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

/* Caps on what target memory can make us do. */
#define MAX_INTERPRETERS 256
#define MAX_THREADS 4096   /* per interpreter */
#define MAX_FRAMES 10000   /* per thread: above any sane recursion limit */
#define MAX_LINETABLE (4u << 20)
#define MAX_CODE_CACHE 65536
#define MAX_THREAD_NAMES 4096

/* A decoded code object, cached by address for one snapshot. */
typedef struct code_info {
    uint64_t addr;
    int ok;
    const char *name, *qualname, *filename;
    int first_line;
    uint64_t code_start;  /* address of the first instruction */
    int64_t code_len;     /* bytes of bytecode */
    uint8_t *linetable;
    size_t linetable_len;
} code_info;

/* Owns every string and code record of one snapshot. */
struct tdb_py_strings {
    code_info *codes; /* open addressing, capacity a power of two */
    size_t cap, n;
    char **strs;
    size_t nstrs, capstrs;
};

/* --- strings of a snapshot ------------------------------------------------ */

static const char *keep(struct tdb_py_strings *st, char *s)
{
    TDB_GROW(st->strs, st->nstrs, st->capstrs);
    st->strs[st->nstrs++] = s;
    return s;
}

/* --- code objects -------------------------------------------------------- */

static uint64_t hash_addr(uint64_t a)
{
    a ^= a >> 33;
    a *= 0xff51afd7ed558ccdULL;
    a ^= a >> 33;
    return a;
}

static code_info *code_slot(struct tdb_py_strings *st, uint64_t addr)
{
    if (st->n * 2 >= st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 64;
        code_info *codes = tdb_xcalloc(cap, sizeof(*codes));
        for (size_t i = 0; i < st->cap; i++) {
            if (!st->codes[i].addr)
                continue;
            size_t j = hash_addr(st->codes[i].addr) & (cap - 1);
            while (codes[j].addr)
                j = (j + 1) & (cap - 1);
            codes[j] = st->codes[i];
        }
        free(st->codes);
        st->codes = codes;
        st->cap = cap;
    }
    size_t j = hash_addr(addr) & (st->cap - 1);
    while (st->codes[j].addr && st->codes[j].addr != addr)
        j = (j + 1) & (st->cap - 1);
    return &st->codes[j];
}

static const char *str_or(struct tdb_py_strings *st, char *s)
{
    return s ? keep(st, s) : "?";
}

static const code_info *get_code(tdb_py_process *p, struct tdb_py_strings *st, uint64_t addr)
{
    static const code_info bad = {0, 0, "?", "?", "?", 0, 0, 0, NULL, 0};
    if (!addr || st->n >= MAX_CODE_CACHE)
        return &bad;
    code_info *c = code_slot(st, addr);
    if (c->addr == addr)
        return c;
    c->addr = addr;
    st->n++;
    c->name = c->qualname = c->filename = "?";
    uint8_t co[512];
    size_t len = (size_t)TDB_PY_OFF(p, code_size);
    if (len > sizeof(co))
        len = sizeof(co);
    if (tdb_py_type_of(p, addr) != p->t.code || tdb_py_rd(p, addr, co, len) < 0)
        return c;
#define CO_PTR(f) (TDB_PY_HAS(p, f) ? tdb_py_get_u64(co, TDB_PY_OFF(p, f)) : 0)
    c->ok = 1;
    c->first_line = tdb_py_get_i32(co, TDB_PY_OFF(p, code_firstlineno));
    c->name = str_or(st, tdb_py_str(p, CO_PTR(code_name), 0, 0, NULL, NULL));
    c->qualname = TDB_PY_HAS(p, code_qualname)
                      ? str_or(st, tdb_py_str(p, CO_PTR(code_qualname), 0, 0, NULL, NULL))
                      : c->name;
    c->filename = str_or(st, tdb_py_str(p, CO_PTR(code_filename), 0, 0, NULL, NULL));
    uint64_t table = TDB_PY_HAS(p, code_linetable) ? CO_PTR(code_linetable) : CO_PTR(code_lnotab);
    int64_t full;
    c->linetable = tdb_py_bytes(p, table, MAX_LINETABLE, &c->linetable_len, &full);
    if (c->linetable)
        keep(st, (char *)c->linetable);
    if (TDB_PY_HAS(p, code_code_adaptive)) {
        c->code_start = addr + (uint64_t)TDB_PY_OFF(p, code_code_adaptive);
        c->code_len = (int64_t)tdb_py_get_u64(co, TDB_PY_OFF(p, var_size)) * TDB_PY_OFF(p, codeunit_size);
    } else {
        uint64_t bytes = CO_PTR(code_code);
        int64_t n;
        if (bytes && tdb_py_type_of(p, bytes) == p->t.bytes &&
            tdb_py_i64(p, bytes, TDB_PYO_var_size, &n) == 0) {
            c->code_start = bytes + (uint64_t)TDB_PY_OFF(p, bytes_sval);
            c->code_len = n;
        }
    }
#undef CO_PTR
    return c;
}

/* The line of a 3.11+ frame whose instruction pointer is INSTR. */
static int instr_line(const tdb_py_process *p, const code_info *c, uint64_t instr)
{
    if (!c->ok || !c->linetable || !c->code_start)
        return -1;
    uint64_t first = c->code_start, unit = (uint64_t)p->L.v[TDB_PYO_codeunit_size];
    /* 3.11/3.12 keep the unit before the next instruction: one before the
     * first one in a frame that has not started; beyond the code it is
     * garbage. */
    if (instr + unit < first || instr >= first + (uint64_t)c->code_len || (instr - first) % unit)
        return -1;
    int lasti = (int)(((int64_t)instr - (int64_t)first) / (int64_t)unit);
    return tdb_py_linetable_line(c->linetable, c->linetable_len, c->first_line, lasti);
}

/* The line of a 3.8-3.10 frame at f_lasti LASTI. */
static int lasti_line(const tdb_py_process *p, const code_info *c, int lasti)
{
    if (!c->ok || !c->linetable)
        return -1;
    if (p->minor >= 10)
        return tdb_py_linetable310_line(c->linetable, c->linetable_len, c->first_line,
                                        lasti < 0 ? -1 : lasti * 2);
    return tdb_py_lnotab_line(c->linetable, c->linetable_len, c->first_line, lasti);
}

/* --- reading ------------------------------------------------------------- */

/* Brent's cycle detection over a chain of addresses: a chain that loops
 * (memory being reused under us) is cut after at most twice its length. */
typedef struct cycle {
    uint64_t mark;
    size_t power, since;
} cycle;

static int cycle_loops(cycle *c, uint64_t next)
{
    if (next && next == c->mark)
        return 1;
    if (++c->since == c->power) {
        c->mark = next;
        c->power *= 2;
        c->since = 0;
    }
    return 0;
}

static tdb_py_frame *push_frame(tdb_py_thread *t, size_t *cap, const code_info *c, uint64_t addr)
{
    TDB_GROW(t->frames, t->n_frames, *cap);
    tdb_py_frame *out = &t->frames[t->n_frames++];
    memset(out, 0, sizeof(*out));
    out->code = c->addr;
    out->name = c->name;
    out->qualname = c->qualname;
    out->filename = c->filename;
    out->first_line = c->first_line;
    out->addr = addr;
    return out;
}

/* Read the chain of frames from FRAME (innermost) into T.
 *   3.8-3.10 (FRAME_OBJECTS): a chain of PyFrameObject (f_back).  Each
 *     frame is run by its own _PyEval_EvalFrameDefault call: every one is
 *     an entry frame.
 *   3.11+: a chain of _PyInterpreterFrame.  3.11 marks the frame each
 *     evaluator call was entered with (is_entry); 3.12+ push an entry frame
 *     of their own (owner FRAME_OWNED_BY_CSTACK) under it instead: those
 *     are left out, and the Python frame just above each one is the entry
 *     frame.
 * A chain that cannot be followed to its end leaves T partial, saying why. */
static void read_frames(tdb_py_process *p, struct tdb_py_strings *st, tdb_py_thread *t,
                        uint64_t frame, int frame_objects)
{
    size_t cap = 0;
    cycle cy = {frame, 1, 0};
    int32_t need = frame_objects ? TDB_PY_OFF(p, frame_lasti) + 4 : TDB_PY_OFF(p, iframe_localsplus);
    int32_t shim = frame_objects ? TDB_PYO_NONE : TDB_PY_OFF(p, frame_owned_by_cstack);
    int last_was_python = 0; /* a Python frame since the last shim */
    while (frame) {
        uint8_t f[512];
        if (t->n_frames >= MAX_FRAMES) {
            t->partial = tdb_xasprintf("more than %d frames", MAX_FRAMES);
            return;
        }
        if (frame % 8 || need <= 0 || need > (int32_t)sizeof(f) ||
            tdb_py_rd(p, frame, f, (size_t)need) < 0 ||
            (frame_objects && tdb_py_get_u64(f, TDB_PY_OFF(p, object_type)) != p->t.frame)) {
            t->partial = tdb_xasprintf("frame at 0x%llx is unreadable", (unsigned long long)frame);
            return;
        }
        int owner = frame_objects ? TDB_PY_OWNED_BY_FRAME_OBJECT
                                  : (int8_t)f[TDB_PY_OFF(p, iframe_owner)];
        uint64_t prev = tdb_py_get_u64(f, frame_objects ? TDB_PY_OFF(p, frame_back)
                                                        : TDB_PY_OFF(p, iframe_previous));
        if (shim != TDB_PYO_NONE && owner >= shim) {
            if (last_was_python)
                t->frames[t->n_frames - 1].is_entry = 1;
            last_was_python = 0;
        } else {
            uint64_t code = frame_objects
                                ? tdb_py_get_u64(f, TDB_PY_OFF(p, frame_code))
                                : tdb_py_untag(p, tdb_py_get_u64(f, TDB_PY_OFF(p, iframe_code)));
            const code_info *c = get_code(p, st, code);
            if (!c->ok) {
                t->partial = tdb_xasprintf("frame at 0x%llx does not point to a code object",
                                           (unsigned long long)frame);
                return;
            }
            tdb_py_frame *out = push_frame(t, &cap, c, frame);
            if (frame_objects) {
                out->line = lasti_line(p, c, tdb_py_get_i32(f, TDB_PY_OFF(p, frame_lasti)));
                out->is_entry = 1;
            } else {
                out->line = instr_line(p, c, tdb_py_get_u64(f, TDB_PY_OFF(p, iframe_instr)));
                if (TDB_PY_HAS(p, iframe_is_entry))
                    out->is_entry = f[TDB_PY_OFF(p, iframe_is_entry)] ? 1 : 0;
            }
            out->owner = owner;
            last_was_python = 1;
        }
        if (cycle_loops(&cy, prev)) {
            t->partial = tdb_xasprintf("the frame chain loops back to 0x%llx",
                                       (unsigned long long)prev);
            return;
        }
        frame = prev;
    }
}

/* A thread not holding the GIL is waiting for it when it is blocked in a
 * futex on the GIL's mutex or condition variable (take_gil() in
 * Python/ceval_gil.c): a fact from the kernel, with no symbol needed. */
static int waits_for_gil(tdb_py_process *p, pid_t tid, uint64_t gil)
{
    long nr;
    uint64_t arg0;
    if (p->is_core || !gil || tid <= 0)
        return 0;
    uint64_t hi = gil + (uint64_t)TDB_PY_OFF(p, gil_size);
    return tdb_proc_syscall(p->pid, tid, &nr, &arg0) == 0 && nr == SYS_futex && arg0 >= gil &&
           arg0 < hi;
}

/* The holder of the GIL at address GIL, or 0. */
static uint64_t gil_holder(tdb_py_process *p, uint64_t gil)
{
    int32_t locked = 0;
    uint64_t holder = 0;
    if (!gil || tdb_py_i32(p, gil, TDB_PYO_gil_locked, &locked) < 0 || locked <= 0 ||
        tdb_py_ptr(p, gil, TDB_PYO_gil_last_holder, &holder) < 0)
        return 0;
    return holder;
}

/* The Linux thread id of a thread of 3.8-3.10 (whose thread state has
 * none): its pthread_t points to glibc's struct pthread, which holds it. */
static pid_t tid_from_pthread(tdb_py_process *p, unsigned long thread_id)
{
    int32_t tid = 0;
    if (p->pthread_tid < 0 || !thread_id ||
        tdb_py_rd(p, thread_id + (uint64_t)p->pthread_tid, &tid, sizeof(tid)) < 0 || tid <= 0)
        return 0;
    return tid;
}

typedef struct name_ctx {
    tdb_py_snapshot *s;
    size_t first, last; /* the threads of one interpreter */
    int seen;
} name_ctx;

/* One entry of threading._active: {ident: Thread}. */
static int name_cb(tdb_py_process *p, uint64_t key, uint64_t thread, void *arg)
{
    name_ctx *c = arg;
    if (++c->seen > MAX_THREAD_NAMES)
        return 1;
    uint64_t ident = tdb_py_instance_attr(p, thread, "_ident");
    uint64_t name = tdb_py_instance_attr(p, thread, "_name");
    uint64_t native = tdb_py_instance_attr(p, thread, "_native_id");
    (void)key;
    /* Small ints (the ident is a pointer-sized one: read its digits). */
    uint64_t idv = 0, nv = 0;
    for (int k = 0; k < 2; k++) {
        uint64_t obj = k ? native : ident;
        uint64_t *outv = k ? &nv : &idv;
        if (!obj || tdb_py_type_of(p, obj) != p->t.long_)
            continue;
        int64_t ndigits;
        if (TDB_PY_HAS(p, long_tag)) {
            uint64_t tag;
            if (tdb_py_ptr(p, obj, TDB_PYO_long_tag, &tag) < 0 || (tag & 3) == 2)
                continue; /* negative */
            ndigits = (int64_t)(tag >> TDB_PY_OFF(p, long_nonsize_bits));
        } else if (tdb_py_i64(p, obj, TDB_PYO_var_size, &ndigits) < 0 || ndigits < 0) {
            continue;
        }
        uint32_t d[3] = {0, 0, 0};
        if (ndigits > 3 || tdb_py_rd(p, obj + (uint64_t)TDB_PY_OFF(p, long_digit), d,
                                     (size_t)ndigits * 4) < 0)
            continue;
        unsigned shift = (unsigned)TDB_PY_OFF(p, long_shift);
        *outv = (uint64_t)d[0] | (uint64_t)d[1] << shift | (ndigits > 2 ? (uint64_t)d[2] << (2 * shift) : 0);
    }
    if (!idv)
        return 0;
    for (size_t i = c->first; i < c->last; i++) {
        tdb_py_thread *t = &c->s->threads[i];
        if (t->thread_id != idv)
            continue;
        if (!t->name) {
            char *s = tdb_py_str(p, name, 0, 0, NULL, NULL);
            if (s)
                t->name = keep(c->s->strings, s);
        }
        if (!t->tid && nv && nv <= INT32_MAX)
            t->tid = tdb_pidns_host_tid(p->ns, (pid_t)nv);
    }
    return 0;
}

/* threading._active of interpreter INTERP: the Thread objects by ident.
 * The dict is found once per interpreter (sys.modules is big) and kept:
 * threading never replaces it. */
static void thread_names(tdb_py_process *p, tdb_py_snapshot *s, uint64_t interp, size_t first)
{
    if (first == s->n_threads)
        return;
    uint64_t active = 0;
    size_t slot = 0;
    for (; slot < p->n_active; slot++)
        if (p->active[slot].interp == interp)
            break;
    if (slot < p->n_active && tdb_py_type_of(p, p->active[slot].dict) == p->t.dict) {
        active = p->active[slot].dict;
    } else {
        uint64_t modules = 0, dict = 0;
        if (tdb_py_ptr(p, interp, TDB_PYO_interp_modules, &modules) < 0)
            return;
        uint64_t threading = tdb_py_dict_get(p, modules, "threading");
        if (!threading || tdb_py_ptr(p, threading, TDB_PYO_module_dict, &dict) < 0)
            return;
        active = tdb_py_dict_get(p, dict, "_active");
        if (active && slot == p->n_active && p->n_active < TDB_PY_MAX_ACTIVE)
            p->n_active++;
        if (active && slot < p->n_active) {
            p->active[slot].interp = interp;
            p->active[slot].dict = active;
        }
    }
    name_ctx c = {s, first, s->n_threads, 0};
    if (active)
        tdb_py_dict_walk(p, active, MAX_THREAD_NAMES, name_cb, &c);
}

tdb_py_snapshot *tdb_py_read(tdb_py_process *p, tdb_error *err)
{
    uint64_t interp = 0;
    if (tdb_py_ptr(p, p->runtime, TDB_PYO_runtime_interpreters_head, &interp) < 0) {
        if (errno == ESRCH)
            tdb_error_set(err, ESRCH, "cannot read the Python state of pid %d: no such process",
                          (int)p->pid);
        else
            tdb_error_errno(err, "cannot read _PyRuntime in pid %d", (int)p->pid);
        return NULL;
    }
    tdb_py_snapshot *s = tdb_xcalloc(1, sizeof(*s));
    s->strings = tdb_xcalloc(1, sizeof(*s->strings));
    size_t cap = 0;

    /* One GIL for the process before 3.12; one per interpreter (which may
     * share the main one) after. */
    uint64_t runtime_gil = TDB_PY_HAS(p, runtime_gil) ? p->runtime + (uint64_t)TDB_PY_OFF(p, runtime_gil) : 0;
    int32_t runtime_gc = 0;
    if (TDB_PY_HAS(p, runtime_gc_collecting))
        tdb_py_rd(p, p->runtime + (uint64_t)TDB_PY_OFF(p, runtime_gc_collecting), &runtime_gc, 4);

    for (int ni = 0; interp; ni++) {
        if (ni >= MAX_INTERPRETERS) {
            s->partial = tdb_xasprintf("more than %d interpreters", MAX_INTERPRETERS);
            break;
        }
        int64_t interp_id = 0;
        uint64_t next_interp = 0, ts = 0, gil = runtime_gil;
        int32_t collecting = runtime_gc;
        if (tdb_py_i64(p, interp, TDB_PYO_interp_id, &interp_id) < 0 ||
            tdb_py_ptr(p, interp, TDB_PYO_interp_next, &next_interp) < 0 ||
            tdb_py_ptr(p, interp, TDB_PYO_interp_threads_head, &ts) < 0) {
            s->partial = tdb_xasprintf("interpreter at 0x%llx is unreadable",
                                       (unsigned long long)interp);
            break;
        }
        if (TDB_PY_HAS(p, interp_ceval_gil))
            tdb_py_ptr(p, interp, TDB_PYO_interp_ceval_gil, &gil);
        if (TDB_PY_HAS(p, interp_gc_collecting))
            tdb_py_i32(p, interp, TDB_PYO_interp_gc_collecting, &collecting);
        uint64_t holder = gil_holder(p, gil);
        size_t first = s->n_threads;
        cycle cy = {ts, 1, 0};
        for (int nt = 0; ts; nt++) {
            uint8_t tstate[1024];
            size_t tlen = (size_t)TDB_PY_OFF(p, tstate_size);
            if (tlen > sizeof(tstate))
                tlen = sizeof(tstate);
            if (nt >= MAX_THREADS) {
                s->partial = tdb_xasprintf("more than %d threads", MAX_THREADS);
                break;
            }
            if (tdb_py_rd(p, ts, tstate, tlen) < 0 ||
                tdb_py_get_u64(tstate, TDB_PY_OFF(p, tstate_interp)) != interp) {
                s->partial = tdb_xasprintf("thread state at 0x%llx is unreadable or "
                                           "inconsistent", (unsigned long long)ts);
                break;
            }
            TDB_GROW(s->threads, s->n_threads, cap);
            tdb_py_thread *t = &s->threads[s->n_threads++];
            memset(t, 0, sizeof(*t));
            t->tstate = ts;
            t->thread_id = tdb_py_get_u64(tstate, TDB_PY_OFF(p, tstate_thread_id));
            if (TDB_PY_HAS(p, tstate_native_thread_id)) {
                uint64_t native = tdb_py_get_u64(tstate, TDB_PY_OFF(p, tstate_native_thread_id));
                t->tid = native <= INT32_MAX ? (pid_t)native : 0;
            } else {
                t->tid = tid_from_pthread(p, t->thread_id);
            }
            /* In a container, CPython numbers threads as its namespace
             * does: ours are what /proc, ptrace and gdb know. */
            t->tid = tdb_pidns_host_tid(p->ns, t->tid);
            t->interp_id = interp_id;
            if (holder && holder == ts)
                t->gil = TDB_GIL_HELD;
            else if (waits_for_gil(p, t->tid, gil))
                t->gil = TDB_GIL_WAITING;
            t->gc = collecting > 0 && t->gil == TDB_GIL_HELD;
            if (TDB_PY_HAS(p, tstate_frame)) {
                read_frames(p, s->strings, t, tdb_py_get_u64(tstate, TDB_PY_OFF(p, tstate_frame)), 1);
            } else if (TDB_PY_HAS(p, tstate_current_frame)) {
                read_frames(p, s->strings, t,
                            tdb_py_get_u64(tstate, TDB_PY_OFF(p, tstate_current_frame)), 0);
            } else {
                uint64_t cframe = tdb_py_get_u64(tstate, TDB_PY_OFF(p, tstate_cframe)), cur = 0;
                if (cframe && tdb_py_ptr(p, cframe, TDB_PYO_cframe_current_frame, &cur) == 0)
                    read_frames(p, s->strings, t, cur, 0);
                else if (cframe)
                    t->partial = tdb_xasprintf("its _PyCFrame at 0x%llx is unreadable",
                                               (unsigned long long)cframe);
            }
            uint64_t next = tdb_py_get_u64(tstate, TDB_PY_OFF(p, tstate_next));
            if (next == ts || cycle_loops(&cy, next))
                break;
            ts = next;
        }
        thread_names(p, s, interp, first);
        if (next_interp == interp)
            break;
        interp = next_interp;
    }
    return s;
}

static void strings_free(struct tdb_py_strings *st)
{
    for (size_t i = 0; i < st->nstrs; i++)
        free(st->strs[i]);
    free(st->strs);
    free(st->codes);
}

int tdb_py_frame_object_where(tdb_py_process *p, uint64_t obj, char **file, char **name,
                              int *line)
{
    struct tdb_py_strings st = {0};
    const code_info *c = NULL;
    int at = -1;
    if (!obj || tdb_py_type_of(p, obj) != p->t.frame)
        return -1;
    if (TDB_PY_HAS(p, frameobj_frame)) {
        uint64_t iframe = 0, code = 0, instr = 0;
        if (tdb_py_ptr(p, obj, TDB_PYO_frameobj_frame, &iframe) == 0 && iframe &&
            tdb_py_ptr(p, iframe, TDB_PYO_iframe_code, &code) == 0 &&
            tdb_py_ptr(p, iframe, TDB_PYO_iframe_instr, &instr) == 0) {
            c = get_code(p, &st, tdb_py_untag(p, code));
            at = instr_line(p, c, instr);
        }
    } else {
        uint64_t code = 0;
        int32_t lasti = -1;
        if (tdb_py_ptr(p, obj, TDB_PYO_frame_code, &code) == 0 &&
            tdb_py_i32(p, obj, TDB_PYO_frame_lasti, &lasti) == 0) {
            c = get_code(p, &st, code);
            at = lasti_line(p, c, lasti);
        }
    }
    int rc = -1;
    if (c && c->ok) {
        *file = tdb_xstrdup(c->filename);
        *name = tdb_xstrdup(c->name);
        *line = at;
        rc = 0;
    }
    strings_free(&st);
    return rc;
}

void tdb_py_snapshot_free(tdb_py_snapshot *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_threads; i++) {
        free(s->threads[i].frames);
        free(s->threads[i].partial);
    }
    free(s->threads);
    free(s->partial);
    if (s->strings) {
        strings_free(s->strings);
        free(s->strings);
    }
    free(s);
}

const tdb_py_thread *tdb_py_find_thread(const tdb_py_snapshot *s, pid_t tid)
{
    for (size_t i = 0; s && i < s->n_threads; i++)
        if (s->threads[i].tid == tid && tid > 0)
            return &s->threads[i];
    return NULL;
}

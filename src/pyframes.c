/*
 * pyframes.c: CPython's runtime state read out of another process.
 *
 * Compiled with $(PY_CORE_CFLAGS): Py_BUILD_CORE and CPython's internal
 * headers, so every struct below is the interpreter's own definition.
 * Remote objects are copied into local variables of their real type and
 * read by field name; nothing here hand-types an offset.
 */
#include <Python.h>
#include <pycore_code.h>
#include <pycore_frame.h>
#include <pycore_interp.h>
#include <pycore_runtime.h>

#include "pyframes.h"

#include "elf.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#if PY_VERSION_HEX < 0x030b0000 || PY_VERSION_HEX >= 0x030c0000
#error "src/pyframes.c reads the CPython 3.11 frame layout; build with PYTHON=python3.11"
#endif

/* Caps on what target memory can make us do. */
#define MAX_INTERPRETERS 256
#define MAX_THREADS 4096   /* per interpreter */
#define MAX_FRAMES 10000   /* per thread: above any sane recursion limit */
#define MAX_STR 4096       /* code points of a name or file name */
#define MAX_LINETABLE (4u << 20)
#define MAX_CODE_CACHE 65536

#define BUILT_MAJOR ((PY_VERSION_HEX >> 24) & 0xff)
#define BUILT_MINOR ((PY_VERSION_HEX >> 16) & 0xff)

struct tdb_py_process {
    pid_t pid;
    tdb_mem mem;
    char *module;        /* path of the interpreter file, as in the maps */
    char version[32];
    uint64_t runtime;    /* &_PyRuntime */
    uint64_t code_type, unicode_type, bytes_type;
    uint64_t eval_lo, eval_hi;
    uint64_t *text;      /* [lo, hi) pairs of the interpreter's code */
    size_t ntext;
    _PyRuntimeState *rt; /* local copy (only the prefix we read is valid) */
    PyInterpreterState *is;
};

/* A decoded code object, cached by address for one snapshot. */
typedef struct code_info {
    uint64_t addr;
    int ok;
    const char *name, *qualname, *filename;
    int first_line;
    int64_t ncodeunits;
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

/* --- the location table (Objects/locations.md in CPython 3.11) ---------- */

static int read_varint(const uint8_t *t, size_t len, size_t *pos, unsigned *out)
{
    unsigned val = 0;
    for (int shift = 0;; shift += 6) {
        if (*pos >= len || shift > 30)
            return -1;
        uint8_t b = t[(*pos)++];
        val |= (unsigned)(b & 63) << shift;
        if (!(b & 64))
            break;
    }
    *out = val;
    return 0;
}

static int read_svarint(const uint8_t *t, size_t len, size_t *pos, long *out)
{
    unsigned u;
    if (read_varint(t, len, pos, &u) < 0)
        return -1;
    *out = (u & 1) ? -(long)(u >> 1) : (long)(u >> 1);
    return 0;
}

int tdb_py_linetable_line(const uint8_t *table, size_t len, int first_line, int lasti)
{
    if (lasti < 0)
        return first_line;
    long line = first_line;
    long addr = 0;
    size_t pos = 0;
    while (pos < len) {
        uint8_t first = table[pos++];
        if (!(first & 0x80))
            return -1; /* every entry starts with its top bit set */
        int code = (first >> 3) & 15;
        int length = (first & 7) + 1;
        int has_line = 1;
        unsigned skip;
        long delta;
        switch (code) {
        case 15: /* no location */
            has_line = 0;
            break;
        case 14: /* long form: line delta, end line, column, end column */
            if (read_svarint(table, len, &pos, &delta) < 0 ||
                read_varint(table, len, &pos, &skip) < 0 ||
                read_varint(table, len, &pos, &skip) < 0 ||
                read_varint(table, len, &pos, &skip) < 0)
                return -1;
            line += delta;
            break;
        case 13: /* no columns */
            if (read_svarint(table, len, &pos, &delta) < 0)
                return -1;
            line += delta;
            break;
        case 10: case 11: case 12: /* one line form: two column bytes */
            line += code - 10;
            pos += 2;
            break;
        default: /* short form, same line: one column byte */
            pos += 1;
            break;
        }
        if (pos > len || line < INT_MIN || line > INT_MAX)
            return -1;
        if (lasti < addr + length)
            return has_line && line >= 0 ? (int)line : -1;
        addr += length;
    }
    return -1;
}

/* --- strings ------------------------------------------------------------- */

static const char *keep(struct tdb_py_strings *st, char *s)
{
    TDB_GROW(st->strs, st->nstrs, st->capstrs);
    st->strs[st->nstrs++] = s;
    return s;
}

static void add_utf8(tdb_buf *b, uint32_t c)
{
    /* Surrogates and out-of-range values (a corrupt string, or a lone
     * surrogate Python allows) become U+FFFD so the output stays UTF-8. */
    if ((c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
        c = 0xfffd;
    if (c < 0x20 || c == 0x7f) {
        tdb_buf_addc(b, '?');
    } else if (c < 0x80) {
        tdb_buf_addc(b, (char)c);
    } else if (c < 0x800) {
        tdb_buf_addc(b, (char)(0xc0 | (c >> 6)));
        tdb_buf_addc(b, (char)(0x80 | (c & 0x3f)));
    } else if (c < 0x10000) {
        tdb_buf_addc(b, (char)(0xe0 | (c >> 12)));
        tdb_buf_addc(b, (char)(0x80 | ((c >> 6) & 0x3f)));
        tdb_buf_addc(b, (char)(0x80 | (c & 0x3f)));
    } else {
        tdb_buf_addc(b, (char)(0xf0 | (c >> 18)));
        tdb_buf_addc(b, (char)(0x80 | ((c >> 12) & 0x3f)));
        tdb_buf_addc(b, (char)(0x80 | ((c >> 6) & 0x3f)));
        tdb_buf_addc(b, (char)(0x80 | (c & 0x3f)));
    }
}

/* A str object at ADDR as new UTF-8, or NULL when it is not a readable
 * str. */
static char *read_str(tdb_py_process *p, uint64_t addr)
{
    PyUnicodeObject u;
    memset(&u, 0, sizeof(u));
    if (!addr || tdb_mem_read_full(&p->mem, addr, &u, sizeof(PyASCIIObject)) < 0)
        return NULL;
    PyASCIIObject *a = &u._base._base;
    if ((uint64_t)(uintptr_t)a->ob_base.ob_type != p->unicode_type || a->length < 0)
        return NULL;
    unsigned kind = a->state.kind;
    if (kind != 1 && kind != 2 && kind != 4)
        return NULL;
    uint64_t data;
    if (a->state.compact && a->state.ascii) {
        data = addr + sizeof(PyASCIIObject);
    } else if (a->state.compact) {
        data = addr + sizeof(PyCompactUnicodeObject);
    } else {
        if (tdb_mem_read_full(&p->mem, addr, &u, sizeof(u)) < 0)
            return NULL;
        data = (uint64_t)(uintptr_t)u.data.any;
    }
    size_t n = (size_t)a->length, cut = 0;
    if (n > MAX_STR) {
        n = MAX_STR;
        cut = 1;
    }
    unsigned char *raw = tdb_xmalloc(n * kind + 1);
    if (n && tdb_mem_read_full(&p->mem, data, raw, n * kind) < 0) {
        free(raw);
        return NULL;
    }
    tdb_buf b = TDB_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        uint32_t c;
        if (kind == 1)
            c = raw[i];
        else if (kind == 2)
            c = (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
        else
            c = (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
                (uint32_t)raw[4 * i + 2] << 16 | (uint32_t)raw[4 * i + 3] << 24;
        if (a->state.ascii && c >= 0x80)
            c = '?';
        add_utf8(&b, c);
    }
    free(raw);
    if (cut)
        tdb_buf_adds(&b, "...");
    return tdb_buf_detach(&b);
}

/* A bytes object's contents as a new buffer (length in *LEN), or NULL. */
static uint8_t *read_bytes(tdb_py_process *p, uint64_t addr, size_t *len)
{
    PyBytesObject hdr;
    if (!addr || tdb_mem_read_full(&p->mem, addr, &hdr, offsetof(PyBytesObject, ob_sval)) < 0)
        return NULL;
    if ((uint64_t)(uintptr_t)hdr.ob_base.ob_base.ob_type != p->bytes_type ||
        hdr.ob_base.ob_size < 0 || (size_t)hdr.ob_base.ob_size > MAX_LINETABLE)
        return NULL;
    size_t n = (size_t)hdr.ob_base.ob_size;
    uint8_t *buf = tdb_xmalloc(n + 1);
    if (n && tdb_mem_read_full(&p->mem, addr + offsetof(PyBytesObject, ob_sval), buf, n) < 0) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
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
    static const code_info bad = {0, 0, "?", "?", "?", 0, 0, NULL, 0};
    if (!addr || st->n >= MAX_CODE_CACHE)
        return &bad;
    code_info *c = code_slot(st, addr);
    if (c->addr == addr)
        return c;
    c->addr = addr;
    st->n++;
    c->name = c->qualname = c->filename = "?";
    PyCodeObject co;
    if (tdb_mem_read_full(&p->mem, addr, &co, offsetof(PyCodeObject, co_code_adaptive)) < 0 ||
        (uint64_t)(uintptr_t)co.ob_base.ob_base.ob_type != p->code_type)
        return c;
    c->ok = 1;
    c->ncodeunits = co.ob_base.ob_size;
    c->first_line = co.co_firstlineno;
    c->name = str_or(st, read_str(p, (uint64_t)(uintptr_t)co.co_name));
    c->qualname = str_or(st, read_str(p, (uint64_t)(uintptr_t)co.co_qualname));
    c->filename = str_or(st, read_str(p, (uint64_t)(uintptr_t)co.co_filename));
    c->linetable = read_bytes(p, (uint64_t)(uintptr_t)co.co_linetable, &c->linetable_len);
    if (c->linetable)
        keep(st, (char *)c->linetable);
    return c;
}

static int frame_line(const code_info *c, uint64_t prev_instr)
{
    if (!c->ok || !c->linetable)
        return -1;
    uint64_t first = c->addr + offsetof(PyCodeObject, co_code_adaptive);
    /* prev_instr is one unit before the first instruction in a frame that
     * has not started; beyond the code it is garbage. */
    if (prev_instr + sizeof(_Py_CODEUNIT) < first ||
        prev_instr >= first + (uint64_t)c->ncodeunits * sizeof(_Py_CODEUNIT) ||
        (prev_instr - first) % sizeof(_Py_CODEUNIT))
        return -1;
    int lasti = (int)(((int64_t)prev_instr - (int64_t)first) / (int64_t)sizeof(_Py_CODEUNIT));
    return tdb_py_linetable_line(c->linetable, c->linetable_len, c->first_line, lasti);
}

/* --- opening ------------------------------------------------------------- */

static int add_text_ranges(tdb_py_process *p, const tdb_maps *maps)
{
    for (size_t i = 0; i < maps->n; i++) {
        const tdb_map *m = &maps->v[i];
        if (!m->path || strcmp(m->path, p->module) != 0 || m->perms[2] != 'x')
            continue;
        p->text = tdb_xrealloc(p->text, (p->ntext + 1) * 2 * sizeof(*p->text));
        p->text[2 * p->ntext] = m->start;
        p->text[2 * p->ntext + 1] = m->end;
        p->ntext++;
    }
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
static int version_from_name(const char *path, unsigned *major, unsigned *minor)
{
    const char *base = tdb_base_name(path);
    const char *v = strstr(base, "python");
    return v && sscanf(v + 6, "%u.%u", major, minor) == 2 ? 0 : -1;
}

/* The file to read for a mapped path: through /proc/PID/root so a process
 * in another mount namespace (a container) works too. */
static tdb_elf *open_mapped(pid_t pid, const char *path, const char *exe)
{
    char *p = tdb_xasprintf("/proc/%d/root%s", (int)pid, path);
    tdb_elf *e = tdb_elf_open_tables(p, NULL);
    free(p);
    if (!e && exe && strcmp(path, exe) == 0) {
        /* The executable was replaced or deleted since it started. */
        p = tdb_xasprintf("/proc/%d/exe", (int)pid);
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

/* Check the interpreter in E (mapped with BIAS) is the version and layout
 * our headers describe, and fill P. */
static int check_and_fill(tdb_py_process *p, tdb_elf *e, uint64_t bias,
                          uint64_t runtime_size, tdb_error *err)
{
    uint64_t vaddr;
    unsigned long hex = 0;
    unsigned major, minor;
    if (lookup_addr(e, bias, "Py_Version", &vaddr, NULL) == 0) {
        if (tdb_mem_read_full(&p->mem, vaddr, &hex, sizeof(hex)) < 0) {
            tdb_error_errno(err, "cannot read the Python version of pid %d", (int)p->pid);
            return -1;
        }
        major = (hex >> 24) & 0xff;
        minor = (hex >> 16) & 0xff;
        format_version(p->version, sizeof(p->version), hex);
    } else if (version_from_name(p->module, &major, &minor) == 0) {
        snprintf(p->version, sizeof(p->version), "%u.%u", major, minor);
    } else {
        tdb_error_set(err, EPROTO,
                      "cannot read the Python stacks of pid %d: '%s' has _PyRuntime but no "
                      "version tdebug can read (tdebug reads CPython %d.%d)",
                      (int)p->pid, p->module, BUILT_MAJOR, BUILT_MINOR);
        return -1;
    }
    if (major != BUILT_MAJOR || minor != BUILT_MINOR) {
        tdb_error_set(err, EPROTO,
                      "cannot read the Python stacks of pid %d: it runs Python %s and tdebug was "
                      "built for Python %d.%d (rebuild tdebug with 'make PYTHON=python%u.%u')",
                      (int)p->pid, p->version, BUILT_MAJOR, BUILT_MINOR, major, minor);
        return -1;
    }
    /* Same version but another layout: a debug build (Py_DEBUG, Py_TRACE_REFS)
     * or a patched interpreter.  _PyRuntime's symbol size gives it away. */
    if (runtime_size && runtime_size != sizeof(_PyRuntimeState)) {
        tdb_error_set(err, EPROTO,
                      "cannot read the Python stacks of pid %d: its Python %s ('%s') lays out "
                      "_PyRuntime in %llu bytes, the headers tdebug was built with in %zu (a debug "
                      "or differently configured build; rebuild tdebug with 'make PYTHON=' that "
                      "interpreter)",
                      (int)p->pid, p->version, p->module, (unsigned long long)runtime_size,
                      sizeof(_PyRuntimeState));
        return -1;
    }
    uint64_t eval_size = 0;
    if (lookup_addr(e, bias, "PyCode_Type", &p->code_type, NULL) < 0 ||
        lookup_addr(e, bias, "PyUnicode_Type", &p->unicode_type, NULL) < 0 ||
        lookup_addr(e, bias, "PyBytes_Type", &p->bytes_type, NULL) < 0) {
        tdb_error_set(err, EPROTO,
                      "cannot read the Python stacks of pid %d: '%s' lacks the type objects "
                      "of CPython's C API (not CPython?)",
                      (int)p->pid, p->module);
        return -1;
    }
    if (lookup_addr(e, bias, "_PyEval_EvalFrameDefault", &p->eval_lo, &eval_size) == 0)
        p->eval_hi = p->eval_lo + eval_size;
    return 0;
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
    tdb_mem_init(&p->mem, pid);

    /* Candidates: the executable (Debian links libpython statically), then
     * any libpython; other libraries are not searched (a process with 300
     * torch libraries must stay fast to look at). */
    rc = 1;
    for (size_t i = 0; i < maps->n && rc == 1; i++) {
        const tdb_map *m = &maps->v[i];
        if (!m->path || m->path[0] != '/' || m->offset != 0)
            continue;
        const char *base = tdb_base_name(m->path);
        int is_exe = exe && strcmp(m->path, exe) == 0;
        if (!is_exe && strncmp(base, "libpython", 9) != 0)
            continue;
        tdb_elf *e = open_mapped(pid, m->path, exe);
        uint64_t rt_value, rt_size, bias;
        if (!e)
            continue;
        if (tdb_elf_find_symbol(e, "_PyRuntime", &rt_value, &rt_size, NULL) == 0 &&
            tdb_elf_load_bias(e, m->start, m->offset, &bias, NULL) == 0) {
            p->module = tdb_xstrdup(m->path);
            p->runtime = rt_value + bias;
            rc = check_and_fill(p, e, bias, rt_size, err) < 0 ? -1 : 0;
        }
        tdb_elf_free(e);
    }
    if (rc == 0) {
        add_text_ranges(p, maps);
        p->rt = tdb_xcalloc(1, sizeof(*p->rt));
        p->is = tdb_xcalloc(1, sizeof(*p->is));
        *out = p;
        p = NULL;
    }
    tdb_py_close(p);
    free(exe);
    tdb_maps_free(&own);
    return rc;
}

void tdb_py_close(tdb_py_process *p)
{
    if (!p)
        return;
    tdb_mem_close(&p->mem);
    free(p->module);
    free(p->text);
    free(p->rt);
    free(p->is);
    free(p);
}

const char *tdb_py_version(const tdb_py_process *p)
{
    return p->version;
}

const char *tdb_py_module(const tdb_py_process *p)
{
    return p->module;
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

/* --- reading ------------------------------------------------------------- */

static void thread_frames(tdb_py_process *p, struct tdb_py_strings *st, tdb_py_thread *t,
                          uint64_t frame)
{
    size_t cap = 0;
    /* Brent's cycle detection: a chain that loops (memory being reused
     * under us) is cut after at most twice its length, not at MAX_FRAMES. */
    uint64_t mark = frame;
    size_t power = 1, since = 0;
    while (frame) {
        if (t->n_frames >= MAX_FRAMES) {
            t->partial = tdb_xasprintf("more than %d frames", MAX_FRAMES);
            return;
        }
        _PyInterpreterFrame f;
        if (frame % sizeof(void *) ||
            tdb_mem_read_full(&p->mem, frame, &f, offsetof(_PyInterpreterFrame, localsplus)) < 0) {
            t->partial = tdb_xasprintf("frame at 0x%llx is unreadable", (unsigned long long)frame);
            return;
        }
        const code_info *c = get_code(p, st, (uint64_t)(uintptr_t)f.f_code);
        if (!c->ok) {
            t->partial = tdb_xasprintf("frame at 0x%llx does not point to a code object",
                                       (unsigned long long)frame);
            return;
        }
        TDB_GROW(t->frames, t->n_frames, cap);
        tdb_py_frame *out = &t->frames[t->n_frames++];
        out->name = c->name;
        out->qualname = c->qualname;
        out->filename = c->filename;
        out->first_line = c->first_line;
        out->line = frame_line(c, (uint64_t)(uintptr_t)f.prev_instr);
        out->is_entry = f.is_entry ? 1 : 0;
        out->owner = f.owner;
        out->addr = frame;
        uint64_t prev = (uint64_t)(uintptr_t)f.previous;
        if (prev && prev == mark) {
            t->partial = tdb_xasprintf("the frame chain loops back to 0x%llx",
                                       (unsigned long long)prev);
            return;
        }
        if (++since == power) {
            mark = prev;
            power *= 2;
            since = 0;
        }
        frame = prev;
    }
}

/* A thread not holding the GIL is waiting for it when it is blocked in a
 * futex on the GIL's mutex or condition variable (take_gil() in
 * Python/ceval_gil.h): a fact from the kernel, with no symbol needed. */
static int waits_for_gil(tdb_py_process *p, pid_t tid)
{
    long nr;
    uint64_t arg0;
    uint64_t lo = p->runtime + offsetof(_PyRuntimeState, ceval.gil);
    uint64_t hi = lo + sizeof(struct _gil_runtime_state);
    return tid > 0 && tdb_proc_syscall(p->pid, tid, &nr, &arg0) == 0 && nr == SYS_futex &&
           arg0 >= lo && arg0 < hi;
}

tdb_py_snapshot *tdb_py_read(tdb_py_process *p, tdb_error *err)
{
    /* Only the head of _PyRuntimeState: everything up to the GIL state. */
    size_t rt_len = offsetof(_PyRuntimeState, gilstate) + sizeof(p->rt->gilstate);
    if (tdb_mem_read_full(&p->mem, p->runtime, p->rt, rt_len) < 0) {
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

    uint64_t gil_holder = 0;
    if (_Py_atomic_load_relaxed(&p->rt->ceval.gil.locked) > 0)
        gil_holder = (uint64_t)_Py_atomic_load_relaxed(&p->rt->ceval.gil.last_holder);

    uint64_t interp = (uint64_t)(uintptr_t)p->rt->interpreters.head;
    size_t is_len = offsetof(PyInterpreterState, id) + sizeof(p->is->id);
    for (int ni = 0; interp; ni++) {
        if (ni >= MAX_INTERPRETERS) {
            s->partial = tdb_xasprintf("more than %d interpreters", MAX_INTERPRETERS);
            break;
        }
        if (tdb_mem_read_full(&p->mem, interp, p->is, is_len) < 0) {
            s->partial = tdb_xasprintf("interpreter at 0x%llx is unreadable",
                                       (unsigned long long)interp);
            break;
        }
        int64_t interp_id = p->is->id;
        uint64_t next_interp = (uint64_t)(uintptr_t)p->is->next;
        uint64_t ts = (uint64_t)(uintptr_t)p->is->threads.head;
        for (int nt = 0; ts; nt++) {
            PyThreadState tstate;
            if (nt >= MAX_THREADS) {
                s->partial = tdb_xasprintf("more than %d threads", MAX_THREADS);
                break;
            }
            if (tdb_mem_read_full(&p->mem, ts, &tstate, sizeof(tstate)) < 0 ||
                (uint64_t)(uintptr_t)tstate.interp != interp) {
                s->partial = tdb_xasprintf("thread state at 0x%llx is unreadable or "
                                           "inconsistent", (unsigned long long)ts);
                break;
            }
            TDB_GROW(s->threads, s->n_threads, cap);
            tdb_py_thread *t = &s->threads[s->n_threads++];
            memset(t, 0, sizeof(*t));
            t->tstate = ts;
            t->tid = tstate.native_thread_id <= INT32_MAX ? (pid_t)tstate.native_thread_id : 0;
            t->thread_id = tstate.thread_id;
            t->interp_id = interp_id;
            if (gil_holder && gil_holder == ts)
                t->gil = TDB_GIL_HELD;
            else if (waits_for_gil(p, t->tid))
                t->gil = TDB_GIL_WAITING;
            _PyCFrame cf;
            uint64_t cframe = (uint64_t)(uintptr_t)tstate.cframe;
            if (cframe && tdb_mem_read_full(&p->mem, cframe, &cf, sizeof(cf)) == 0)
                thread_frames(p, s->strings, t, (uint64_t)(uintptr_t)cf.current_frame);
            else if (cframe)
                t->partial = tdb_xasprintf("its _PyCFrame at 0x%llx is unreadable",
                                           (unsigned long long)cframe);
            uint64_t next = (uint64_t)(uintptr_t)tstate.next;
            if (next == ts)
                break;
            ts = next;
        }
        if (next_interp == interp)
            break;
        interp = next_interp;
    }
    return s;
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
        for (size_t i = 0; i < s->strings->nstrs; i++)
            free(s->strings->strs[i]);
        free(s->strings->strs);
        free(s->strings->codes);
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

/*
 * cpython/frames.c: CPython's runtime state read out of another process (or a
 * core file), for CPython 3.8 to 3.14, whatever Python tdebug was built
 * with.
 *
 * Nothing here includes a CPython header: every offset comes from the
 * layout of the target's version (src/cpython/offsets.h: generated from each
 * version's headers; from 3.13 on, preferably the process's own
 * _Py_DebugOffsets).  Remote structs are read as byte buffers and their
 * fields taken at those offsets.
 */
#include "cpython/read.h"

#include "process/pidns.h"
#include "native/core.h"
#include "native/elf.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Caps on what target memory can make us do. */
#define MAX_INTERPRETERS 256
#define MAX_THREADS 4096   /* per interpreter */
#define MAX_FRAMES 10000   /* per thread: above any sane recursion limit */
#define MAX_LINETABLE (4u << 20)
#define MAX_CODE_CACHE 65536
#define MAX_THREAD_NAMES 4096

/* The oldest and newest versions tdebug reads (the newest through
 * _Py_DebugOffsets). */
#define OLDEST_MINOR 8
#define NEWEST_MINOR 14

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

int tdb_py_linetable310_line(const uint8_t *table, size_t len, int first_line, int addr)
{
    if (addr < 0)
        return first_line;
    /* Pairs (bytecode bytes, line delta); a delta of -128 means "no line".
     * Empty ranges only move the line (Objects/lnotab_notes.txt). */
    long line = first_line, start, end = 0;
    for (size_t pos = 0; pos + 1 < len; pos += 2) {
        int ldelta = (int8_t)table[pos + 1];
        start = end;
        end += table[pos];
        int cur = -1;
        if (ldelta != -128) {
            line += ldelta;
            cur = line >= 0 && line <= INT_MAX ? (int)line : -1;
        }
        if (start < end && addr >= start && addr < end)
            return cur;
    }
    return -1;
}

int tdb_py_lnotab_line(const uint8_t *table, size_t len, int first_line, int addr)
{
    /* Pairs (bytecode bytes, signed line delta): PyCode_Addr2Line. */
    long line = first_line, at = 0;
    for (size_t pos = 0; pos + 1 < len; pos += 2) {
        at += table[pos];
        if (at > addr)
            break;
        line += (int8_t)table[pos + 1];
    }
    return line >= 0 && line <= INT_MAX ? (int)line : -1;
}

/* --- memory -------------------------------------------------------------- */

int tdb_py_rd(tdb_py_process *p, uint64_t addr, void *buf, size_t len)
{
    return addr ? tdb_mem_read_full(&p->mem, addr, buf, len) : -1;
}

static uint64_t get_u64(const uint8_t *b, int32_t off)
{
    uint64_t v;
    memcpy(&v, b + off, sizeof(v));
    return v;
}

static int32_t get_i32(const uint8_t *b, int32_t off)
{
    int32_t v;
    memcpy(&v, b + off, sizeof(v));
    return v;
}

int tdb_py_ptr(tdb_py_process *p, uint64_t addr, int field, uint64_t *out)
{
    int32_t off = p->L.v[field];
    return off == TDB_PYO_NONE || !addr ? -1 : tdb_py_rd(p, addr + (int64_t)off, out, 8);
}

int tdb_py_i32(tdb_py_process *p, uint64_t addr, int field, int32_t *out)
{
    int32_t off = p->L.v[field];
    return off == TDB_PYO_NONE || !addr ? -1 : tdb_py_rd(p, addr + (int64_t)off, out, 4);
}

int tdb_py_i64(tdb_py_process *p, uint64_t addr, int field, int64_t *out)
{
    int32_t off = p->L.v[field];
    return off == TDB_PYO_NONE || !addr ? -1 : tdb_py_rd(p, addr + (int64_t)off, out, 8);
}

uint64_t tdb_py_untag(const tdb_py_process *p, uint64_t v)
{
    /* 3.14 keeps _PyStackRef in frames: a pointer with tag bits below its
     * 8-byte alignment. */
    return p->minor >= 14 ? v & ~(uint64_t)7 : v;
}

uint64_t tdb_py_type_of(tdb_py_process *p, uint64_t addr)
{
    uint64_t t = 0;
    if (addr % 8 || tdb_py_ptr(p, addr, TDB_PYO_object_type, &t) < 0)
        return 0;
    return t;
}

int tdb_py_type_is(tdb_py_process *p, uint64_t type, uint64_t t)
{
    for (int depth = 0; type && depth < 64; depth++) {
        if (type == t)
            return 1;
        if (tdb_py_ptr(p, type, TDB_PYO_type_base, &type) < 0)
            return 0;
    }
    return 0;
}

char *tdb_py_type_name(tdb_py_process *p, uint64_t type)
{
    uint64_t name;
    char buf[256];
    if (!type || tdb_py_ptr(p, type, TDB_PYO_type_name, &name) < 0 || !name)
        return NULL;
    ssize_t n = tdb_mem_read(&p->mem, name, buf, sizeof(buf) - 1);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    if (strlen(buf) == (size_t)n)
        return NULL; /* no terminator within reach: not a name */
    for (char *c = buf; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c == 0x7f)
            return NULL;
    return tdb_xstrdup(buf);
}

/* --- strings ------------------------------------------------------------- */

static const char *keep(struct tdb_py_strings *st, char *s)
{
    TDB_GROW(st->strs, st->nstrs, st->capstrs);
    st->strs[st->nstrs++] = s;
    return s;
}

static void add_utf8(tdb_buf *b, uint32_t c, int raw)
{
    /* Python keeps the undecodable bytes of file names and arguments as
     * lone surrogates U+DC80..U+DCFF (surrogateescape): give the bytes back. */
    if (c >= 0xdc80 && c <= 0xdcff) {
        tdb_buf_addc(b, (char)(c - 0xdc00));
        return;
    }
    /* Surrogates and out-of-range values (a corrupt string, or a lone
     * surrogate Python allows) become U+FFFD so the output stays UTF-8. */
    if ((c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
        c = 0xfffd;
    if (!raw && (c < 0x20 || c == 0x7f)) {
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

char *tdb_py_strn(tdb_py_process *p, uint64_t addr, size_t max, int raw, int *trunc,
                 int64_t *len_out, size_t *nbytes)
{
    uint8_t hdr[128];
    int32_t csize = TDB_PY_OFF(p, unicode_compact_size);
    int32_t asize = TDB_PY_OFF(p, unicode_ascii_size);
    int32_t dataoff = TDB_PY_OFF(p, unicode_data);
    size_t need = (size_t)(dataoff != TDB_PYO_NONE && dataoff + 8 > csize ? dataoff + 8 : csize);
    if (!addr || need > sizeof(hdr) || tdb_py_type_of(p, addr) != p->t.unicode ||
        tdb_py_rd(p, addr, hdr, (size_t)asize) < 0)
        return NULL;
    int64_t length = (int64_t)get_u64(hdr, TDB_PY_OFF(p, unicode_length));
    uint32_t state = (uint32_t)get_i32(hdr, TDB_PY_OFF(p, unicode_state));
    unsigned kind = (state >> TDB_PY_OFF(p, unicode_kind_shift)) & 7;
    int compact = (state >> TDB_PY_OFF(p, unicode_compact_shift)) & 1;
    int ascii = (state >> TDB_PY_OFF(p, unicode_ascii_shift)) & 1;
    if (length < 0 || (kind != 1 && kind != 2 && kind != 4))
        return NULL;
    uint64_t data;
    if (compact && ascii) {
        data = addr + (uint64_t)asize;
    } else if (compact) {
        data = addr + (uint64_t)csize;
    } else {
        if (dataoff == TDB_PYO_NONE || tdb_py_rd(p, addr, hdr, need) < 0)
            return NULL;
        data = get_u64(hdr, dataoff);
    }
    if (!max)
        max = TDB_PY_MAX_STR;
    size_t n = (size_t)length, cut = 0;
    if (n > max) {
        n = max;
        cut = 1;
    }
    unsigned char *rawbuf = tdb_xmalloc(n * kind + 1);
    if (n && tdb_py_rd(p, data, rawbuf, n * kind) < 0) {
        free(rawbuf);
        return NULL;
    }
    tdb_buf b = TDB_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        uint32_t c;
        if (kind == 1)
            c = rawbuf[i];
        else if (kind == 2)
            c = (uint32_t)rawbuf[2 * i] | (uint32_t)rawbuf[2 * i + 1] << 8;
        else
            c = (uint32_t)rawbuf[4 * i] | (uint32_t)rawbuf[4 * i + 1] << 8 |
                (uint32_t)rawbuf[4 * i + 2] << 16 | (uint32_t)rawbuf[4 * i + 3] << 24;
        if (ascii && c >= 0x80)
            c = '?';
        add_utf8(&b, c, raw);
    }
    free(rawbuf);
    if (cut && !raw)
        tdb_buf_adds(&b, "...");
    if (trunc)
        *trunc = (int)cut;
    if (len_out)
        *len_out = length;
    if (!b.s)
        tdb_buf_adds(&b, "");
    if (nbytes)
        *nbytes = b.len;
    return tdb_buf_detach(&b);
}

char *tdb_py_str(tdb_py_process *p, uint64_t addr, size_t max, int raw, int *trunc,
                 int64_t *len_out)
{
    return tdb_py_strn(p, addr, max, raw, trunc, len_out, NULL);
}

uint8_t *tdb_py_bytes(tdb_py_process *p, uint64_t addr, size_t max, size_t *len,
                      int64_t *full_len)
{
    int64_t size;
    if (!addr || tdb_py_type_of(p, addr) != p->t.bytes ||
        tdb_py_i64(p, addr, TDB_PYO_var_size, &size) < 0 || size < 0)
        return NULL;
    size_t n = (size_t)size < max ? (size_t)size : max;
    uint8_t *buf = tdb_xmalloc(n + 1);
    if (n && tdb_py_rd(p, addr + (uint64_t)TDB_PY_OFF(p, bytes_sval), buf, n) < 0) {
        free(buf);
        return NULL;
    }
    *len = n;
    if (full_len)
        *full_len = size;
    return buf;
}

/* --- containers ---------------------------------------------------------- */

int64_t tdb_py_seq_len(tdb_py_process *p, uint64_t addr)
{
    int64_t n;
    return tdb_py_i64(p, addr, TDB_PYO_var_size, &n) < 0 || n < 0 ? -1 : n;
}

uint64_t tdb_py_seq_item(tdb_py_process *p, uint64_t addr, int64_t i)
{
    uint64_t t = tdb_py_type_of(p, addr), items = 0, v = 0;
    if (i < 0)
        return 0;
    if (tdb_py_type_is(p, t, p->t.tuple))
        items = addr + (uint64_t)TDB_PY_OFF(p, tuple_item);
    else if (tdb_py_type_is(p, t, p->t.list) && tdb_py_ptr(p, addr, TDB_PYO_list_item, &items) < 0)
        return 0;
    if (!items || tdb_py_rd(p, items + 8 * (uint64_t)i, &v, 8) < 0)
        return 0;
    return v;
}

int64_t tdb_py_dict_len(tdb_py_process *p, uint64_t addr)
{
    int64_t n;
    if (!tdb_py_type_is(p, tdb_py_type_of(p, addr), p->t.dict) ||
        tdb_py_i64(p, addr, TDB_PYO_dict_used, &n) < 0 || n < 0)
        return -1;
    return n;
}

/* The entries of a key table: where they are, how many, how big, where
 * the key and value sit in one. */
typedef struct dict_entries {
    uint64_t at;
    int64_t n;
    int32_t size, key, value;
} dict_entries;

static int dict_keys_entries(tdb_py_process *p, uint64_t keys, dict_entries *e)
{
    uint8_t hdr[64];
    int32_t ioff = TDB_PY_OFF(p, dictkeys_indices);
    if (!keys || ioff <= 0 || ioff > (int32_t)sizeof(hdr) || tdb_py_rd(p, keys, hdr, (size_t)ioff) < 0)
        return -1;
    e->n = (int64_t)get_u64(hdr, TDB_PY_OFF(p, dictkeys_nentries));
    uint64_t index_bytes;
    int general = 1;
    int64_t slots;
    if (TDB_PY_HAS(p, dictkeys_size)) {
        /* 3.8-3.10: dk_size slots, each index 1, 2, 4 or 8 bytes wide. */
        slots = (int64_t)get_u64(hdr, TDB_PY_OFF(p, dictkeys_size));
        if (slots <= 0 || slots > (1 << 30) || (slots & (slots - 1)))
            return -1;
        int w = slots <= 0xff ? 1 : slots <= 0xffff ? 2 : 4;
        index_bytes = (uint64_t)slots * (uint64_t)w;
    } else {
        unsigned log2 = hdr[TDB_PY_OFF(p, dictkeys_log2_size)];
        unsigned log2_index = hdr[TDB_PY_OFF(p, dictkeys_log2_index_bytes)];
        if (log2 > 30 || log2_index > 34)
            return -1;
        slots = (int64_t)1 << log2;
        index_bytes = (uint64_t)1 << log2_index;
        general = hdr[TDB_PY_OFF(p, dictkeys_kind)] == TDB_PY_OFF(p, dictkeys_general);
    }
    if (e->n < 0 || e->n > slots)
        return -1;
    e->at = keys + (uint64_t)ioff + index_bytes;
    if (general) {
        e->size = TDB_PY_OFF(p, dictentry_size);
        e->key = TDB_PY_OFF(p, dictentry_key);
        e->value = TDB_PY_OFF(p, dictentry_value);
    } else {
        e->size = TDB_PY_OFF(p, dictuentry_size);
        e->key = TDB_PY_OFF(p, dictuentry_key);
        e->value = TDB_PY_OFF(p, dictuentry_value);
    }
    return 0;
}

/* Walk the entries of KEYS; VALUES is the array of a split table's values
 * (0 for a combined table, whose values are in the entries). */
static long walk_entries(tdb_py_process *p, uint64_t keys, uint64_t values, size_t max,
                         tdb_py_dict_fn fn, void *ctx)
{
    dict_entries e;
    if (dict_keys_entries(p, keys, &e) < 0)
        return -1;
    long seen = 0;
    uint8_t chunk[64 * 24];
    int64_t per = (int64_t)(sizeof(chunk) / (size_t)e.size);
    for (int64_t i = 0; i < e.n && (size_t)seen < max && i < TDB_PY_MAX_DICT; i += per) {
        int64_t cnt = e.n - i < per ? e.n - i : per;
        if (tdb_py_rd(p, e.at + (uint64_t)(i * e.size), chunk, (size_t)(cnt * e.size)) < 0)
            return seen ? seen : -1;
        uint64_t vals[64];
        if (values && tdb_py_rd(p, values + 8 * (uint64_t)i, vals, (size_t)cnt * 8) < 0)
            return seen ? seen : -1;
        for (int64_t k = 0; k < cnt && (size_t)seen < max; k++) {
            uint64_t key = get_u64(chunk + k * e.size, e.key);
            uint64_t value = values ? vals[k] : get_u64(chunk + k * e.size, e.value);
            if (!key || !value)
                continue; /* a deleted entry (dummy key), or an absent attribute */
            seen++;
            if (fn && fn(p, key, value, ctx))
                return seen;
        }
    }
    return seen;
}

/* The values array of a split table (ma_values), or 0. */
static uint64_t values_array(tdb_py_process *p, uint64_t ma_values)
{
    return ma_values ? ma_values + (uint64_t)TDB_PY_OFF(p, dictvalues_values) : 0;
}

long tdb_py_dict_walk(tdb_py_process *p, uint64_t addr, size_t max, tdb_py_dict_fn fn, void *ctx)
{
    uint64_t keys, values;
    if (!tdb_py_type_is(p, tdb_py_type_of(p, addr), p->t.dict) ||
        tdb_py_ptr(p, addr, TDB_PYO_dict_keys, &keys) < 0 ||
        tdb_py_ptr(p, addr, TDB_PYO_dict_values, &values) < 0)
        return -1;
    return walk_entries(p, keys, values_array(p, values), max, fn, ctx);
}

typedef struct find_ctx {
    const char *name;
    uint64_t value;
} find_ctx;

static int find_cb(tdb_py_process *p, uint64_t key, uint64_t value, void *ctx)
{
    find_ctx *f = ctx;
    /* One read of the key's header first: most keys differ in length (a
     * torch process's sys.modules has a thousand). */
    uint8_t hdr[64];
    int32_t asize = TDB_PY_OFF(p, unicode_ascii_size);
    if (asize <= 0 || asize > (int32_t)sizeof(hdr) || tdb_py_rd(p, key, hdr, (size_t)asize) < 0 ||
        get_u64(hdr, TDB_PY_OFF(p, object_type)) != p->t.unicode ||
        get_u64(hdr, TDB_PY_OFF(p, unicode_length)) != strlen(f->name))
        return 0;
    char *s = tdb_py_str(p, key, strlen(f->name) + 1, 1, NULL, NULL);
    int hit = s && strcmp(s, f->name) == 0;
    free(s);
    if (hit)
        f->value = value;
    return hit;
}

uint64_t tdb_py_dict_get(tdb_py_process *p, uint64_t addr, const char *name)
{
    find_ctx f = {name, 0};
    tdb_py_dict_walk(p, addr, TDB_PY_MAX_DICT, find_cb, &f);
    return f.value;
}

uint64_t tdb_py_instance_attr(tdb_py_process *p, uint64_t obj, const char *name)
{
    uint64_t type = tdb_py_type_of(p, obj), dict = 0;
    int64_t flags = 0;
    find_ctx f = {name, 0};
    if (!type || tdb_py_i64(p, type, TDB_PYO_type_flags, &flags) < 0)
        return 0;
    int32_t managed = TDB_PY_OFF(p, tpflags_managed_dict);
    if (managed != TDB_PYO_NONE && (flags & managed)) {
        uint64_t keys = 0, slot = 0, values = 0;
        tdb_py_ptr(p, type, TDB_PYO_heaptype_cached_keys, &keys);
        if (tdb_py_rd(p, obj + (int64_t)TDB_PY_OFF(p, managed_dict_offset), &slot, 8) < 0)
            return 0;
        if (p->minor == 12 && (slot & 1)) {
            values = slot + 1; /* _PyDictOrValues: the values pointer minus one */
        } else if (slot) {
            dict = slot;
        } else if (p->minor == 11) {
            tdb_py_rd(p, obj + (int64_t)TDB_PY_OFF(p, managed_values_offset), &values, 8);
        } else if (p->minor >= 13 && TDB_PY_HAS(p, tpflags_inline_values) &&
                   (flags & TDB_PY_OFF(p, tpflags_inline_values))) {
            /* Inline values after the object's fixed part; their "valid"
             * byte (the 4th) is cleared once a dict took them over. */
            int64_t basic = 0;
            uint8_t head[4];
            if (tdb_py_i64(p, type, TDB_PYO_type_basicsize, &basic) < 0 || basic <= 0 ||
                tdb_py_rd(p, obj + (uint64_t)basic, head, sizeof(head)) < 0 || !head[3])
                return 0;
            values = obj + (uint64_t)basic;
        }
        if (values && keys) {
            walk_entries(p, keys, values_array(p, values), TDB_PY_MAX_DICT, find_cb, &f);
            return f.value;
        }
    }
    if (!dict) {
        int64_t off = 0;
        if (tdb_py_i64(p, type, TDB_PYO_type_dictoffset, &off) < 0 || off <= 0 || off > 4096)
            return 0;
        if (tdb_py_rd(p, obj + (uint64_t)off, &dict, 8) < 0)
            return 0;
    }
    return dict ? tdb_py_dict_get(p, dict, name) : 0;
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
#define CO_PTR(f) (TDB_PY_HAS(p, f) ? get_u64(co, TDB_PY_OFF(p, f)) : 0)
    c->ok = 1;
    c->first_line = get_i32(co, TDB_PY_OFF(p, code_firstlineno));
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
        c->code_len = (int64_t)get_u64(co, TDB_PY_OFF(p, var_size)) * TDB_PY_OFF(p, codeunit_size);
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

/* --- layouts -------------------------------------------------------------- */

const tdb_py_layout *tdb_py_layout_find(int major, int minor)
{
    for (size_t i = 0; i < tdb_py_n_layouts; i++)
        if (tdb_py_layouts[i].major == major && tdb_py_layouts[i].minor == minor)
            return &tdb_py_layouts[i];
    return NULL;
}

const char *tdb_py_layout_field_name(int i)
{
    static const char *const names[] = {
#define NAME(n) #n,
        TDB_PYO_FIELDS(NAME)
#undef NAME
    };
    return i >= 0 && i < TDB_PYO_COUNT ? names[i] : "?";
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

const char *tdb_py_module(const tdb_py_process *p)
{
    return p->module;
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

/* 3.8-3.10: the chain of PyFrameObject.  Each frame is run by its own
 * _PyEval_EvalFrameDefault call: every one is an entry frame. */
static void frames_310(tdb_py_process *p, struct tdb_py_strings *st, tdb_py_thread *t,
                       uint64_t frame)
{
    size_t cap = 0;
    cycle cy = {frame, 1, 0};
    int32_t need = TDB_PY_OFF(p, frame_lasti) + 4;
    while (frame) {
        uint8_t f[512];
        if (t->n_frames >= MAX_FRAMES) {
            t->partial = tdb_xasprintf("more than %d frames", MAX_FRAMES);
            return;
        }
        if (frame % 8 || need > (int32_t)sizeof(f) || tdb_py_rd(p, frame, f, (size_t)need) < 0 ||
            get_u64(f, TDB_PY_OFF(p, object_type)) != p->t.frame) {
            t->partial = tdb_xasprintf("frame at 0x%llx is unreadable", (unsigned long long)frame);
            return;
        }
        const code_info *c = get_code(p, st, get_u64(f, TDB_PY_OFF(p, frame_code)));
        if (!c->ok) {
            t->partial = tdb_xasprintf("frame at 0x%llx does not point to a code object",
                                       (unsigned long long)frame);
            return;
        }
        tdb_py_frame *out = push_frame(t, &cap, c, frame);
        out->line = lasti_line(p, c, get_i32(f, TDB_PY_OFF(p, frame_lasti)));
        out->is_entry = 1;
        out->owner = TDB_PY_OWNED_BY_FRAME_OBJECT;
        uint64_t prev = get_u64(f, TDB_PY_OFF(p, frame_back));
        if (cycle_loops(&cy, prev)) {
            t->partial = tdb_xasprintf("the frame chain loops back to 0x%llx",
                                       (unsigned long long)prev);
            return;
        }
        frame = prev;
    }
}

/* 3.11+: the chain of _PyInterpreterFrame.  3.11 marks the frame each
 * evaluator call was entered with (is_entry); 3.12+ push an entry frame of
 * their own (owner FRAME_OWNED_BY_CSTACK) under it instead: those are left
 * out, and the Python frame just above each one is the entry frame. */
static void frames_311(tdb_py_process *p, struct tdb_py_strings *st, tdb_py_thread *t,
                       uint64_t frame)
{
    size_t cap = 0;
    cycle cy = {frame, 1, 0};
    int32_t need = TDB_PY_OFF(p, iframe_localsplus);
    int32_t shim = TDB_PY_OFF(p, frame_owned_by_cstack);
    int last_was_python = 0; /* a Python frame since the last shim */
    while (frame) {
        uint8_t f[256];
        if (t->n_frames >= MAX_FRAMES) {
            t->partial = tdb_xasprintf("more than %d frames", MAX_FRAMES);
            return;
        }
        if (frame % 8 || need <= 0 || need > (int32_t)sizeof(f) ||
            tdb_py_rd(p, frame, f, (size_t)need) < 0) {
            t->partial = tdb_xasprintf("frame at 0x%llx is unreadable", (unsigned long long)frame);
            return;
        }
        int owner = (int8_t)f[TDB_PY_OFF(p, iframe_owner)];
        uint64_t prev = get_u64(f, TDB_PY_OFF(p, iframe_previous));
        if (shim != TDB_PYO_NONE && owner >= shim) {
            if (last_was_python)
                t->frames[t->n_frames - 1].is_entry = 1;
            last_was_python = 0;
        } else {
            const code_info *c =
                get_code(p, st, tdb_py_untag(p, get_u64(f, TDB_PY_OFF(p, iframe_code))));
            if (!c->ok) {
                t->partial = tdb_xasprintf("frame at 0x%llx does not point to a code object",
                                           (unsigned long long)frame);
                return;
            }
            tdb_py_frame *out = push_frame(t, &cap, c, frame);
            out->line = instr_line(p, c, get_u64(f, TDB_PY_OFF(p, iframe_instr)));
            if (TDB_PY_HAS(p, iframe_is_entry))
                out->is_entry = f[TDB_PY_OFF(p, iframe_is_entry)] ? 1 : 0;
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
                get_u64(tstate, TDB_PY_OFF(p, tstate_interp)) != interp) {
                s->partial = tdb_xasprintf("thread state at 0x%llx is unreadable or "
                                           "inconsistent", (unsigned long long)ts);
                break;
            }
            TDB_GROW(s->threads, s->n_threads, cap);
            tdb_py_thread *t = &s->threads[s->n_threads++];
            memset(t, 0, sizeof(*t));
            t->tstate = ts;
            t->thread_id = get_u64(tstate, TDB_PY_OFF(p, tstate_thread_id));
            if (TDB_PY_HAS(p, tstate_native_thread_id)) {
                uint64_t native = get_u64(tstate, TDB_PY_OFF(p, tstate_native_thread_id));
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
                frames_310(p, s->strings, t, get_u64(tstate, TDB_PY_OFF(p, tstate_frame)));
            } else if (TDB_PY_HAS(p, tstate_current_frame)) {
                frames_311(p, s->strings, t, get_u64(tstate, TDB_PY_OFF(p, tstate_current_frame)));
            } else {
                uint64_t cframe = get_u64(tstate, TDB_PY_OFF(p, tstate_cframe)), cur = 0;
                if (cframe && tdb_py_ptr(p, cframe, TDB_PYO_cframe_current_frame, &cur) == 0)
                    frames_311(p, s->strings, t, cur);
                else if (cframe)
                    t->partial = tdb_xasprintf("its _PyCFrame at 0x%llx is unreadable",
                                               (unsigned long long)cframe);
            }
            uint64_t next = get_u64(tstate, TDB_PY_OFF(p, tstate_next));
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

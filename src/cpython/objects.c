/* cpython/objects.c: CPython objects read out of another process's memory:
 * fields at the layout's offsets, types, str and bytes, tuples, lists,
 * dicts and instance attributes (contract in cpython/read.h). */
#include "cpython/read.h"

#include <stdlib.h>
#include <string.h>

/* --- memory -------------------------------------------------------------- */

int tdb_py_rd(tdb_py_process *p, uint64_t addr, void *buf, size_t len)
{
    return addr ? tdb_mem_read_full(&p->mem, addr, buf, len) : -1;
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
    int64_t length = (int64_t)tdb_py_get_u64(hdr, TDB_PY_OFF(p, unicode_length));
    uint32_t state = (uint32_t)tdb_py_get_i32(hdr, TDB_PY_OFF(p, unicode_state));
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
        data = tdb_py_get_u64(hdr, dataoff);
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
    e->n = (int64_t)tdb_py_get_u64(hdr, TDB_PY_OFF(p, dictkeys_nentries));
    uint64_t index_bytes;
    int general = 1;
    int64_t slots;
    if (TDB_PY_HAS(p, dictkeys_size)) {
        /* 3.8-3.10: dk_size slots, each index 1, 2, 4 or 8 bytes wide. */
        slots = (int64_t)tdb_py_get_u64(hdr, TDB_PY_OFF(p, dictkeys_size));
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
            uint64_t key = tdb_py_get_u64(chunk + k * e.size, e.key);
            uint64_t value = values ? vals[k] : tdb_py_get_u64(chunk + k * e.size, e.value);
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
        tdb_py_get_u64(hdr, TDB_PY_OFF(p, object_type)) != p->t.unicode ||
        tdb_py_get_u64(hdr, TDB_PY_OFF(p, unicode_length)) != strlen(f->name))
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

long tdb_py_instance_walk(tdb_py_process *p, uint64_t obj, size_t max, tdb_py_dict_fn fn,
                          void *ctx)
{
    uint64_t type = tdb_py_type_of(p, obj), dict = 0;
    int64_t flags = 0;
    if (!type || tdb_py_i64(p, type, TDB_PYO_type_flags, &flags) < 0)
        return -1;
    int32_t managed = TDB_PY_OFF(p, tpflags_managed_dict);
    if (managed != TDB_PYO_NONE && (flags & managed)) {
        uint64_t keys = 0, slot = 0, values = 0;
        tdb_py_ptr(p, type, TDB_PYO_heaptype_cached_keys, &keys);
        if (tdb_py_rd(p, obj + (int64_t)TDB_PY_OFF(p, managed_dict_offset), &slot, 8) < 0)
            return -1;
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
                return -1;
            values = obj + (uint64_t)basic;
        }
        if (values && keys)
            return walk_entries(p, keys, values_array(p, values), max, fn, ctx);
        if (!dict)
            return 0; /* no attribute set yet */
    }
    if (!dict) {
        int64_t off = 0;
        if (tdb_py_i64(p, type, TDB_PYO_type_dictoffset, &off) < 0 || off <= 0 || off > 4096)
            return -1;
        if (tdb_py_rd(p, obj + (uint64_t)off, &dict, 8) < 0)
            return -1;
        if (!dict)
            return 0; /* no attribute set yet */
    }
    return tdb_py_dict_walk(p, dict, max, fn, ctx);
}

uint64_t tdb_py_instance_attr(tdb_py_process *p, uint64_t obj, const char *name)
{
    find_ctx f = {name, 0};
    tdb_py_instance_walk(p, obj, TDB_PY_MAX_DICT, find_cb, &f);
    return f.value;
}

/*
 * native/dwarf.c: compile-unit producers and gdb index headers, read from section
 * bytes with every access bounds-checked (see native/dwarf.h).
 *
 * References: DWARF 5 standard sections 7.5 (unit headers, abbreviations,
 * attribute forms) and 6.1.1 (.debug_names); gdb's manual, "Index Section
 * Format", for .gdb_index.
 */
#include "native/dwarf.h"

#include <string.h>

/* Tags, attributes and forms we need by name; the rest only get skipped. */
enum {
    DW_TAG_compile_unit = 0x11,
    DW_TAG_partial_unit = 0x3c,
    DW_TAG_skeleton_unit = 0x4a,

    DW_AT_name = 0x03,
    DW_AT_producer = 0x25,
    DW_AT_str_offsets_base = 0x72,

    DW_UT_compile = 1,
    DW_UT_type = 2,
    DW_UT_partial = 3,
    DW_UT_skeleton = 4,
    DW_UT_split_compile = 5,
    DW_UT_split_type = 6,

    DW_FORM_addr = 0x01,
    DW_FORM_block2 = 0x03,
    DW_FORM_block4 = 0x04,
    DW_FORM_data2 = 0x05,
    DW_FORM_data4 = 0x06,
    DW_FORM_data8 = 0x07,
    DW_FORM_string = 0x08,
    DW_FORM_block = 0x09,
    DW_FORM_block1 = 0x0a,
    DW_FORM_data1 = 0x0b,
    DW_FORM_flag = 0x0c,
    DW_FORM_sdata = 0x0d,
    DW_FORM_strp = 0x0e,
    DW_FORM_udata = 0x0f,
    DW_FORM_ref_addr = 0x10,
    DW_FORM_ref1 = 0x11,
    DW_FORM_ref2 = 0x12,
    DW_FORM_ref4 = 0x13,
    DW_FORM_ref8 = 0x14,
    DW_FORM_ref_udata = 0x15,
    DW_FORM_indirect = 0x16,
    DW_FORM_sec_offset = 0x17,
    DW_FORM_exprloc = 0x18,
    DW_FORM_flag_present = 0x19,
    DW_FORM_strx = 0x1a,
    DW_FORM_addrx = 0x1b,
    DW_FORM_ref_sup4 = 0x1c,
    DW_FORM_strp_sup = 0x1d,
    DW_FORM_data16 = 0x1e,
    DW_FORM_line_strp = 0x1f,
    DW_FORM_ref_sig8 = 0x20,
    DW_FORM_implicit_const = 0x21,
    DW_FORM_loclistx = 0x22,
    DW_FORM_rnglistx = 0x23,
    DW_FORM_ref_sup8 = 0x24,
    DW_FORM_strx1 = 0x25,
    DW_FORM_strx2 = 0x26,
    DW_FORM_strx3 = 0x27,
    DW_FORM_strx4 = 0x28,
    DW_FORM_addrx1 = 0x29,
    DW_FORM_addrx2 = 0x2a,
    DW_FORM_addrx3 = 0x2b,
    DW_FORM_addrx4 = 0x2c,
    DW_FORM_GNU_addr_index = 0x1f01,
    DW_FORM_GNU_str_index = 0x1f02,
    DW_FORM_GNU_ref_alt = 0x1f20,
    DW_FORM_GNU_strp_alt = 0x1f21,
};

/* A bounds-checked reader.  Reads past the end set BAD and return 0, so a
 * sequence of reads needs one check at the end. */
typedef struct cursor {
    const uint8_t *p;
    const uint8_t *end;
    int big_endian;
    int bad;
} cursor;

static void cursor_init(cursor *c, const uint8_t *data, size_t len, int big_endian)
{
    c->p = data;
    c->end = data + len;
    c->big_endian = big_endian;
    c->bad = data == NULL && len > 0;
}

static int take(cursor *c, size_t n)
{
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = 1;
        c->p = c->end;
        return -1;
    }
    return 0;
}

static void skip(cursor *c, uint64_t n)
{
    if (n > (uint64_t)(c->end - c->p)) {
        c->bad = 1;
        c->p = c->end;
        return;
    }
    c->p += n;
}

static uint64_t read_uint(cursor *c, int n)
{
    uint64_t v = 0;
    if (take(c, (size_t)n) < 0)
        return 0;
    for (int i = 0; i < n; i++) {
        int shift = c->big_endian ? 8 * (n - 1 - i) : 8 * i;
        v |= (uint64_t)c->p[i] << shift;
    }
    c->p += n;
    return v;
}

static uint64_t read_uleb(cursor *c)
{
    uint64_t v = 0;
    int shift = 0;
    for (;;) {
        if (take(c, 1) < 0)
            return 0;
        uint8_t b = *c->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            return v;
    }
}

static int64_t read_sleb(cursor *c)
{
    int64_t v = 0;
    int shift = 0;
    uint8_t b;
    do {
        if (take(c, 1) < 0)
            return 0;
        b = *c->p++;
        if (shift < 64)
            v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= -((int64_t)1 << shift);
    return v;
}

/* A NUL-terminated string at OFF in DATA, or NULL when OFF is out of the
 * section or the string runs off its end. */
static const char *string_at(const uint8_t *data, size_t len, uint64_t off)
{
    if (!data || off >= len)
        return NULL;
    if (!memchr(data + off, '\0', len - (size_t)off))
        return NULL;
    return (const char *)data + off;
}

/* An attribute value as far as we care: a number (offsets, indexes) or an
 * inline string. */
typedef struct value {
    uint64_t u;
    const char *s; /* DW_FORM_string only */
} value;

/* Read one value of FORM.  Returns 0, or -1 for a form we do not know
 * (so cannot skip) or a read past the unit. */
static int read_form(cursor *c, uint64_t form, int offset_size, int addr_size, int version,
                     int64_t implicit, value *v)
{
    v->u = 0;
    v->s = NULL;
    for (int depth = 0; form == DW_FORM_indirect; depth++) {
        if (depth > 4)
            return -1;
        form = read_uleb(c);
    }
    switch (form) {
    case DW_FORM_addr: v->u = read_uint(c, addr_size); break;
    case DW_FORM_block1: skip(c, read_uint(c, 1)); break;
    case DW_FORM_block2: skip(c, read_uint(c, 2)); break;
    case DW_FORM_block4: skip(c, read_uint(c, 4)); break;
    case DW_FORM_block:
    case DW_FORM_exprloc: skip(c, read_uleb(c)); break;
    case DW_FORM_data1:
    case DW_FORM_ref1:
    case DW_FORM_flag:
    case DW_FORM_strx1:
    case DW_FORM_addrx1: v->u = read_uint(c, 1); break;
    case DW_FORM_data2:
    case DW_FORM_ref2:
    case DW_FORM_strx2:
    case DW_FORM_addrx2: v->u = read_uint(c, 2); break;
    case DW_FORM_strx3:
    case DW_FORM_addrx3: v->u = read_uint(c, 3); break;
    case DW_FORM_data4:
    case DW_FORM_ref4:
    case DW_FORM_ref_sup4:
    case DW_FORM_strx4:
    case DW_FORM_addrx4: v->u = read_uint(c, 4); break;
    case DW_FORM_data8:
    case DW_FORM_ref8:
    case DW_FORM_ref_sig8:
    case DW_FORM_ref_sup8: v->u = read_uint(c, 8); break;
    case DW_FORM_data16: skip(c, 16); break;
    case DW_FORM_sdata: v->u = (uint64_t)read_sleb(c); break;
    case DW_FORM_udata:
    case DW_FORM_ref_udata:
    case DW_FORM_strx:
    case DW_FORM_addrx:
    case DW_FORM_loclistx:
    case DW_FORM_rnglistx:
    case DW_FORM_GNU_addr_index:
    case DW_FORM_GNU_str_index: v->u = read_uleb(c); break;
    case DW_FORM_strp:
    case DW_FORM_line_strp:
    case DW_FORM_sec_offset:
    case DW_FORM_strp_sup:
    case DW_FORM_GNU_ref_alt:
    case DW_FORM_GNU_strp_alt: v->u = read_uint(c, offset_size); break;
    case DW_FORM_ref_addr:
        /* DWARF 2 made it address-sized; later versions offset-sized. */
        v->u = read_uint(c, version == 2 ? addr_size : offset_size);
        break;
    case DW_FORM_string: {
        if (c->bad)
            return -1;
        const uint8_t *nul = memchr(c->p, '\0', (size_t)(c->end - c->p));
        if (!nul) {
            c->bad = 1;
            return -1;
        }
        v->s = (const char *)c->p;
        c->p = nul + 1;
        break;
    }
    case DW_FORM_flag_present: break;
    case DW_FORM_implicit_const: v->u = (uint64_t)implicit; break;
    default: return -1;
    }
    return c->bad ? -1 : 0;
}

static int is_strx(uint64_t form)
{
    return form == DW_FORM_strx || form == DW_FORM_strx1 || form == DW_FORM_strx2 ||
           form == DW_FORM_strx3 || form == DW_FORM_strx4 || form == DW_FORM_GNU_str_index;
}

/* A string attribute held until the whole DIE is read: strx forms need
 * DW_AT_str_offsets_base, which may come after them. */
typedef struct pending_str {
    uint64_t form;
    value v;
    int set;
} pending_str;

static const char *resolve_string(const tdb_dwarf_sections *s, const pending_str *ps,
                                  int offset_size, uint64_t str_offsets_base)
{
    if (!ps->set)
        return NULL;
    switch (ps->form) {
    case DW_FORM_string: return ps->v.s;
    case DW_FORM_strp: return string_at(s->str, s->str_len, ps->v.u);
    case DW_FORM_line_strp: return string_at(s->line_str, s->line_str_len, ps->v.u);
    case DW_FORM_strp_sup:
    case DW_FORM_GNU_strp_alt: return string_at(s->alt_str, s->alt_str_len, ps->v.u);
    default: break;
    }
    if (is_strx(ps->form) && s->str_offsets) {
        uint64_t at = str_offsets_base + ps->v.u * (uint64_t)offset_size;
        if (at < str_offsets_base || at > s->str_offsets_len ||
            s->str_offsets_len - at < (uint64_t)offset_size)
            return NULL;
        cursor c;
        cursor_init(&c, s->str_offsets + at, (size_t)offset_size, s->big_endian);
        uint64_t off = read_uint(&c, offset_size);
        return c.bad ? NULL : string_at(s->str, s->str_len, off);
    }
    return NULL;
}

/* Find abbreviation CODE in the table at OFF; leaves *OUT positioned at
 * its children byte.  Returns the tag, or -1. */
static int64_t find_abbrev(const tdb_dwarf_sections *s, uint64_t off, uint64_t code, cursor *out)
{
    cursor c;
    if (off >= s->abbrev_len)
        return -1;
    cursor_init(&c, s->abbrev + off, s->abbrev_len - (size_t)off, s->big_endian);
    for (;;) {
        uint64_t this_code = read_uleb(&c);
        if (c.bad || this_code == 0)
            return -1;
        uint64_t tag = read_uleb(&c);
        if (this_code == code) {
            *out = c;
            return c.bad ? -1 : (int64_t)tag;
        }
        skip(&c, 1); /* children */
        for (;;) {
            uint64_t attr = read_uleb(&c), form = read_uleb(&c);
            if (form == DW_FORM_implicit_const)
                (void)read_sleb(&c);
            if (c.bad)
                return -1;
            if (attr == 0 && form == 0)
                break;
        }
    }
}

long tdb_dwarf_each_unit(const tdb_dwarf_sections *s, tdb_dwarf_unit_fn fn, void *arg,
                         tdb_error *err)
{
    long reported = 0;
    uint64_t pos = 0;

    if (!s->info || !s->abbrev) {
        tdb_error_set(err, 0, "no .debug_info or .debug_abbrev to read");
        return -1;
    }
    while (pos < s->info_len) {
        cursor c;
        uint64_t unit_start = pos;
        int offset_size = 4;

        cursor_init(&c, s->info + pos, s->info_len - (size_t)pos, s->big_endian);
        uint64_t length = read_uint(&c, 4);
        if (length == 0xffffffffu) {
            length = read_uint(&c, 8);
            offset_size = 8;
        } else if (length >= 0xfffffff0u) {
            tdb_error_set(err, 0, "reserved unit length 0x%llx at .debug_info+0x%llx",
                          (unsigned long long)length, (unsigned long long)unit_start);
            return -1;
        }
        size_t header_len = (size_t)(c.p - (s->info + pos));
        if (c.bad || length > (uint64_t)(c.end - c.p)) {
            tdb_error_set(err, 0, "unit at .debug_info+0x%llx runs past the end of the section "
                          "(truncated or corrupt)", (unsigned long long)unit_start);
            return -1;
        }
        pos += header_len + length;
        /* From here on, reads stop at the end of this unit. */
        c.end = c.p + length;

        int version = (int)read_uint(&c, 2);
        if (!c.bad && (version < 2 || version > 5)) {
            tdb_error_set(err, 0, "unsupported DWARF version %d in unit at .debug_info+0x%llx",
                          version, (unsigned long long)unit_start);
            return -1;
        }
        int unit_type = DW_UT_compile, addr_size;
        uint64_t abbrev_off;
        if (version >= 5) {
            unit_type = (int)read_uint(&c, 1);
            addr_size = (int)read_uint(&c, 1);
            abbrev_off = read_uint(&c, offset_size);
            if (unit_type == DW_UT_skeleton || unit_type == DW_UT_split_compile)
                skip(&c, 8); /* dwo_id */
            else if (unit_type == DW_UT_type || unit_type == DW_UT_split_type)
                continue;    /* type units carry no producer worth reading */
            else if (unit_type == DW_UT_partial)
                continue;    /* dwz's shared partial units */
            else if (unit_type != DW_UT_compile) {
                tdb_error_set(err, 0, "unknown unit type %d at .debug_info+0x%llx", unit_type,
                              (unsigned long long)unit_start);
                return -1;
            }
        } else {
            abbrev_off = read_uint(&c, offset_size);
            addr_size = (int)read_uint(&c, 1);
        }
        if (c.bad || (addr_size != 1 && addr_size != 2 && addr_size != 4 && addr_size != 8)) {
            tdb_error_set(err, 0, "malformed unit header at .debug_info+0x%llx",
                          (unsigned long long)unit_start);
            return -1;
        }
        uint64_t code = read_uleb(&c);
        if (c.bad || code == 0)
            continue; /* an empty unit */

        cursor ac;
        int64_t tag = find_abbrev(s, abbrev_off, code, &ac);
        if (tag < 0) {
            tdb_error_set(err, 0, "abbreviation %llu of unit at .debug_info+0x%llx not found "
                          "in .debug_abbrev+0x%llx", (unsigned long long)code,
                          (unsigned long long)unit_start, (unsigned long long)abbrev_off);
            return -1;
        }
        if (tag == DW_TAG_partial_unit)
            continue;
        if (tag != DW_TAG_compile_unit && tag != DW_TAG_skeleton_unit)
            continue;
        skip(&ac, 1); /* children */

        pending_str producer = {0}, name = {0};
        /* DWARF 5 requires DW_AT_str_offsets_base with strx forms; GNU
         * split DWARF (DWARF 4) had none and started at 0. */
        uint64_t str_base = version >= 5 ? (uint64_t)(offset_size == 8 ? 16 : 8) : 0;
        for (;;) {
            uint64_t attr = read_uleb(&ac), form = read_uleb(&ac);
            int64_t implicit = form == DW_FORM_implicit_const ? read_sleb(&ac) : 0;
            if (ac.bad) {
                tdb_error_set(err, 0, "malformed abbreviation at .debug_abbrev+0x%llx",
                              (unsigned long long)abbrev_off);
                return -1;
            }
            if (attr == 0 && form == 0)
                break;
            value v;
            uint64_t real_form = form;
            if (form == DW_FORM_indirect) {
                /* Peek the real form so strings resolve by it. */
                cursor peek = c;
                real_form = read_uleb(&peek);
            }
            if (read_form(&c, form, offset_size, addr_size, version, implicit, &v) < 0) {
                tdb_error_set(err, 0, "cannot read attribute 0x%llx (form 0x%llx) of unit at "
                              ".debug_info+0x%llx", (unsigned long long)attr,
                              (unsigned long long)real_form, (unsigned long long)unit_start);
                return -1;
            }
            if (attr == DW_AT_producer)
                producer = (pending_str){real_form, v, 1};
            else if (attr == DW_AT_name)
                name = (pending_str){real_form, v, 1};
            else if (attr == DW_AT_str_offsets_base)
                str_base = v.u;
        }
        tdb_dwarf_unit u = {
            .offset = unit_start,
            .version = version,
            .producer = resolve_string(s, &producer, offset_size, str_base),
            .name = resolve_string(s, &name, offset_size, str_base),
        };
        reported++;
        if (fn && fn(&u, arg))
            break;
    }
    return reported;
}

/* Producer strings: "GNU C17 12.2.0 -mtune=generic -march=x86-64 -g -O2",
 * "Debian clang version 14.0.6 /usr/bin/clang -O2 -g ..." (with
 * -grecord-command-line), "GNU AS 2.40". */

static int next_token(const char **p, const char **tok, size_t *len)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s)
        return 0;
    *tok = s;
    while (*s && *s != ' ' && *s != '\t')
        s++;
    *len = (size_t)(s - *tok);
    *p = s;
    return 1;
}

static int token_is(const char *tok, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(tok, word, len) == 0;
}

tdb_opt tdb_dwarf_producer_opt(const char *producer, const char **out_flag)
{
    const char *p = producer, *tok, *flag = NULL;
    size_t len;
    int switches = 0;
    tdb_opt opt = TDB_OPT_UNKNOWN;

    if (out_flag)
        *out_flag = NULL;
    if (!producer)
        return TDB_OPT_UNKNOWN;
    if (!strncmp(producer, "GNU AS", 6) || strstr(producer, "NASM"))
        return TDB_OPT_ASSEMBLER;
    while (next_token(&p, &tok, &len)) {
        if (tok[0] != '-')
            continue;
        switches = 1;
        if (len < 2 || tok[1] != 'O')
            continue;
        if (token_is(tok, len, "-O0")) {
            opt = TDB_OPT_NONE, flag = "-O0";
        } else if (token_is(tok, len, "-Og")) {
            opt = TDB_OPT_DEBUG, flag = "-Og";
        } else {
            static const char *const known[] = {"-O", "-O1", "-O2", "-O3", "-Os", "-Oz", "-Ofast"};
            opt = TDB_OPT_ON, flag = "-O(other)";
            for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
                if (token_is(tok, len, known[i]))
                    flag = known[i];
        }
    }
    if (opt == TDB_OPT_UNKNOWN && switches) {
        /* Switches were recorded and none was -O: GCC's and clang's default
         * is -O0. */
        opt = TDB_OPT_NONE;
        flag = "no -O";
    }
    if (out_flag)
        *out_flag = flag;
    return opt;
}

int tdb_dwarf_producer_glevel(const char *producer)
{
    const char *p = producer, *tok;
    size_t len;
    int level = -1;

    if (!producer)
        return -1;
    while (next_token(&p, &tok, &len)) {
        if (len < 2 || tok[0] != '-' || tok[1] != 'g')
            continue;
        if (token_is(tok, len, "-g") || token_is(tok, len, "-ggdb") ||
            token_is(tok, len, "-g2") || token_is(tok, len, "-ggdb2"))
            level = 2;
        else if (token_is(tok, len, "-g3") || token_is(tok, len, "-ggdb3"))
            level = 3;
        else if (token_is(tok, len, "-g1") || token_is(tok, len, "-ggdb1") ||
                 token_is(tok, len, "-gline-tables-only") || token_is(tok, len, "-gmlt"))
            level = 1;
        else if (token_is(tok, len, "-g0") || token_is(tok, len, "-ggdb0"))
            level = 0;
    }
    return level;
}

const char *tdb_opt_name(tdb_opt opt)
{
    switch (opt) {
    case TDB_OPT_NONE: return "unoptimised";
    case TDB_OPT_DEBUG: return "debug-optimised";
    case TDB_OPT_ON: return "optimised";
    case TDB_OPT_ASSEMBLER: return "assembler";
    case TDB_OPT_UNKNOWN: break;
    }
    return "unknown";
}

int tdb_dwarf_parse_gdb_index(const uint8_t *data, size_t len, tdb_dwarf_index *out,
                              tdb_error *err)
{
    cursor c;
    uint32_t off[6];

    /* The index is little-endian whatever the target. */
    cursor_init(&c, data, len, 0);
    for (int i = 0; i < 6; i++)
        off[i] = (uint32_t)read_uint(&c, 4);
    if (c.bad) {
        tdb_error_set(err, 0, ".gdb_index is truncated (%zu bytes)", len);
        return -1;
    }
    uint32_t version = off[0];
    if (version < 4) {
        tdb_error_set(err, 0, ".gdb_index version %u is too old for gdb (4 or newer is read)",
                      version);
        return -1;
    }
    /* off[1..5]: CU list, types CU list, address area, symbol table,
     * constant pool; each after the previous, all within the section. */
    for (int i = 1; i < 6; i++) {
        if (off[i] > len || (i > 1 && off[i] < off[i - 1]) || off[1] < 24) {
            tdb_error_set(err, 0, ".gdb_index header offsets are inconsistent (corrupt)");
            return -1;
        }
    }
    uint32_t symbols = 0;
    uint32_t slots = (off[5] - off[4]) / 8;
    for (uint32_t i = 0; i < slots; i++) {
        cursor s;
        cursor_init(&s, data + off[4] + 8 * (size_t)i, 8, 0);
        uint64_t name = read_uint(&s, 4), vec = read_uint(&s, 4);
        if (name || vec)
            symbols++;
    }
    out->version = version;
    out->units = (off[2] - off[1]) / 16;
    out->symbols = symbols;
    return 0;
}

int tdb_dwarf_parse_debug_names(const uint8_t *data, size_t len, int big_endian,
                                tdb_dwarf_index *out, tdb_error *err)
{
    cursor c;
    cursor_init(&c, data, len, big_endian);
    uint64_t length = read_uint(&c, 4);
    if (length == 0xffffffffu)
        length = read_uint(&c, 8);
    uint32_t version = (uint32_t)read_uint(&c, 2);
    skip(&c, 2); /* padding */
    uint32_t cus = (uint32_t)read_uint(&c, 4);
    skip(&c, 4 + 4 + 4); /* local and foreign type units, buckets */
    uint32_t names = (uint32_t)read_uint(&c, 4);
    if (c.bad || length > len) {
        tdb_error_set(err, 0, ".debug_names is truncated (%zu bytes)", len);
        return -1;
    }
    if (version != 5) {
        tdb_error_set(err, 0, ".debug_names version %u is not 5", version);
        return -1;
    }
    out->version = version;
    out->units = cus;
    out->symbols = names;
    return 0;
}

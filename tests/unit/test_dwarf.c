/*
 * test_dwarf.c: the compile-unit walker and index parsers on DWARF built
 * byte by byte here (DWARF 4 and 5, 32- and 64-bit, both byte orders, every
 * string form), on damaged input (each prefix and each flipped byte of a
 * valid section must give a result or an error, never a read past the
 * end: run under 'make asan'), and the producer classifier on real
 * producer strings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "native/dwarf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A little DWARF assembler. */
typedef struct bytes {
    uint8_t *p;
    size_t n, cap;
    int big;
} bytes;

static void put(bytes *b, const void *data, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 16;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void u8(bytes *b, unsigned v)
{
    uint8_t c = (uint8_t)v;
    put(b, &c, 1);
}

/* V as N bytes in B's byte order (N > 8: zero-extended). */
static void un(bytes *b, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) {
        int shift = 8 * (b->big ? n - 1 - i : i);
        u8(b, shift < 64 ? (unsigned)(v >> shift) & 0xff : 0);
    }
}

static void uleb(bytes *b, uint64_t v)
{
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        u8(b, c | (v ? 0x80 : 0));
    } while (v);
}

static void sleb(bytes *b, int64_t v)
{
    for (;;) {
        uint8_t c = v & 0x7f;
        v >>= 7;
        if ((v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40))) {
            u8(b, c);
            return;
        }
        u8(b, c | 0x80);
    }
}

static void cstr(bytes *b, const char *s)
{
    put(b, s, strlen(s) + 1);
}

static void bfree(bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* Units collected by a walk. */
typedef struct seen {
    int n;
    char producer[8][160];
    char name[8][80];
    int version[8];
} seen;

static int collect(const tdb_dwarf_unit *u, void *arg)
{
    seen *s = arg;
    if (s->n < 8) {
        snprintf(s->producer[s->n], sizeof(s->producer[0]), "%s", u->producer ? u->producer : "(null)");
        snprintf(s->name[s->n], sizeof(s->name[0]), "%s", u->name ? u->name : "(null)");
        s->version[s->n] = u->version;
    }
    s->n++;
    return 0;
}

/* Patch the 32-bit unit length at START once the unit is written. */
static void close_unit(bytes *info, size_t start, int dwarf64)
{
    if (dwarf64) {
        uint64_t len = info->n - start - 12;
        for (int i = 0; i < 8; i++)
            info->p[start + 4 + (info->big ? 7 - i : i)] = (uint8_t)(len >> (8 * i));
    } else {
        uint64_t len = info->n - start - 4;
        for (int i = 0; i < 4; i++)
            info->p[start + (info->big ? 3 - i : i)] = (uint8_t)(len >> (8 * i));
    }
}

static size_t open_unit(bytes *info, int dwarf64)
{
    size_t start = info->n;
    if (dwarf64) {
        un(info, 0xffffffffu, 4);
        un(info, 0, 8);
    } else {
        un(info, 0, 4);
    }
    return start;
}

/* DWARF 4, strp producer, inline name, in either byte order. */
static void dwarf4(int big, seen *out)
{
    bytes info = {.big = big}, abbrev = {.big = big}, str = {0};
    cstr(&str, "");
    size_t producer_off = str.n;
    cstr(&str, "GNU C17 12.2.0 -mtune=generic -g -O2");

    uleb(&abbrev, 1), uleb(&abbrev, 0x11), u8(&abbrev, 1);
    uleb(&abbrev, 0x25), uleb(&abbrev, 0x0e); /* producer strp */
    uleb(&abbrev, 0x13), uleb(&abbrev, 0x0b); /* language data1 */
    uleb(&abbrev, 0x03), uleb(&abbrev, 0x08); /* name string */
    uleb(&abbrev, 0x11), uleb(&abbrev, 0x01); /* low_pc addr */
    uleb(&abbrev, 0), uleb(&abbrev, 0);
    uleb(&abbrev, 0);

    size_t start = open_unit(&info, 0);
    un(&info, 4, 2);  /* version */
    un(&info, 0, 4);  /* abbrev offset */
    u8(&info, 8);     /* address size */
    uleb(&info, 1);
    un(&info, producer_off, 4);
    u8(&info, 0x0c);
    cstr(&info, "big.c");
    un(&info, 0x1000, 8);
    u8(&info, 0);     /* end of children */
    close_unit(&info, start, 0);

    tdb_dwarf_sections s = {info.p, info.n, abbrev.p, abbrev.n, str.p, str.n,
                            NULL, 0, NULL, 0, NULL, 0, big};
    tdb_error err = {0};
    memset(out, 0, sizeof(*out));
    assert_int_equal(tdb_dwarf_each_unit(&s, collect, out, &err), 1);
    bfree(&info), bfree(&abbrev), bfree(&str);
}

static void test_dwarf4_little_and_big_endian(void **state)
{
    (void)state;
    seen s;
    for (int big = 0; big < 2; big++) {
        dwarf4(big, &s);
        assert_int_equal(s.n, 1);
        assert_int_equal(s.version[0], 4);
        assert_string_equal(s.producer[0], "GNU C17 12.2.0 -mtune=generic -g -O2");
        assert_string_equal(s.name[0], "big.c");
    }
}

/* DWARF 5 as clang writes it: strx1 producer before DW_AT_str_offsets_base,
 * line_strp name; preceded by a type unit and a dwz partial unit, which
 * are skipped; 64-bit DWARF when DWARF64. */
static void dwarf5(int dwarf64, bytes *info, bytes *abbrev, bytes *str, bytes *line_str,
                   bytes *offs)
{
    int os = dwarf64 ? 8 : 4;
    cstr(str, "");
    size_t p1 = str->n;
    cstr(str, "Debian clang version 14.0.6");
    size_t p2 = str->n;
    cstr(str, "clang version 14 /usr/bin/clang -O0 -g -grecord-command-line t.c");
    cstr(line_str, "");
    size_t nameoff = line_str->n;
    cstr(line_str, "t.c");
    /* .debug_str_offsets: header then entries; the base points past it. */
    un(offs, 0, dwarf64 ? 12 : 4);
    un(offs, 5, 2), un(offs, 0, 2);
    size_t base = offs->n;
    un(offs, p1, os);
    un(offs, p2, os);

    /* abbrev 1: compile unit; 2: partial unit; 3: type unit's DIE */
    uleb(abbrev, 1), uleb(abbrev, 0x11), u8(abbrev, 0);
    uleb(abbrev, 0x13), uleb(abbrev, 0x21), sleb(abbrev, 0x1d); /* language implicit_const */
    uleb(abbrev, 0x25), uleb(abbrev, 0x25); /* producer strx1 */
    uleb(abbrev, 0x10), uleb(abbrev, 0x16); /* stmt_list indirect */
    uleb(abbrev, 0x03), uleb(abbrev, 0x1f); /* name line_strp */
    uleb(abbrev, 0x55), uleb(abbrev, 0x18); /* ranges as exprloc, to skip a block */
    uleb(abbrev, 0x72), uleb(abbrev, 0x17); /* str_offsets_base sec_offset */
    uleb(abbrev, 0), uleb(abbrev, 0);
    uleb(abbrev, 2), uleb(abbrev, 0x3c), u8(abbrev, 0);
    uleb(abbrev, 0), uleb(abbrev, 0);
    uleb(abbrev, 3), uleb(abbrev, 0x41), u8(abbrev, 0);
    uleb(abbrev, 0), uleb(abbrev, 0);
    uleb(abbrev, 0);

    /* a type unit */
    size_t t = open_unit(info, dwarf64);
    un(info, 5, 2), u8(info, 2), u8(info, 8), un(info, 0, os);
    un(info, 0x1234567890ull, 8), un(info, 0, os);
    uleb(info, 3);
    close_unit(info, t, dwarf64);
    /* a DWARF 5 partial unit (dwz) */
    t = open_unit(info, dwarf64);
    un(info, 5, 2), u8(info, 3), u8(info, 8), un(info, 0, os);
    uleb(info, 2);
    close_unit(info, t, dwarf64);
    /* the compile unit, twice: producers 0 and 1 */
    for (int i = 0; i < 2; i++) {
        t = open_unit(info, dwarf64);
        un(info, 5, 2), u8(info, 1), u8(info, 8), un(info, 0, os);
        uleb(info, 1);
        u8(info, (unsigned)i);                /* producer strx1 */
        uleb(info, 0x17), un(info, 0, os);    /* indirect -> sec_offset */
        un(info, nameoff, os);                /* name */
        uleb(info, 3), u8(info, 1), u8(info, 2), u8(info, 3); /* exprloc */
        un(info, base, os);                   /* str_offsets_base */
        close_unit(info, t, dwarf64);
    }
}

static void test_dwarf5_clang_forms_and_skipped_units(void **state)
{
    (void)state;
    for (int dwarf64 = 0; dwarf64 < 2; dwarf64++) {
        bytes info = {0}, abbrev = {0}, str = {0}, line_str = {0}, offs = {0};
        dwarf5(dwarf64, &info, &abbrev, &str, &line_str, &offs);
        tdb_dwarf_sections s = {info.p, info.n, abbrev.p, abbrev.n, str.p, str.n,
                                line_str.p, line_str.n, offs.p, offs.n, NULL, 0, 0};
        seen got = {0};
        tdb_error err = {0};
        assert_int_equal(tdb_dwarf_each_unit(&s, collect, &got, &err), 2);
        assert_false(err.set);
        assert_string_equal(got.producer[0], "Debian clang version 14.0.6");
        assert_string_equal(got.producer[1],
                            "clang version 14 /usr/bin/clang -O0 -g -grecord-command-line t.c");
        assert_string_equal(got.name[0], "t.c");
        assert_int_equal(got.version[1], 5);

        /* Without .debug_str_offsets the strx producer is unknown, not an error. */
        s.str_offsets = NULL, s.str_offsets_len = 0;
        memset(&got, 0, sizeof(got));
        assert_int_equal(tdb_dwarf_each_unit(&s, collect, &got, &err), 2);
        assert_string_equal(got.producer[0], "(null)");
        bfree(&info), bfree(&abbrev), bfree(&str), bfree(&line_str), bfree(&offs);
    }
}

/* dwz: the producer lives in the supplementary file's .debug_str. */
static void test_dwz_alt_strings(void **state)
{
    (void)state;
    bytes info = {0}, abbrev = {0}, alt = {0};
    cstr(&alt, "xx");
    size_t off = alt.n;
    cstr(&alt, "GNU C17 12.2.0 -g -O0");
    uleb(&abbrev, 1), uleb(&abbrev, 0x11), u8(&abbrev, 0);
    uleb(&abbrev, 0x25), uleb(&abbrev, 0x1f21);
    uleb(&abbrev, 0), uleb(&abbrev, 0), uleb(&abbrev, 0);
    size_t t = open_unit(&info, 0);
    un(&info, 5, 2), u8(&info, 1), u8(&info, 8), un(&info, 0, 4);
    uleb(&info, 1), un(&info, off, 4);
    close_unit(&info, t, 0);

    tdb_dwarf_sections s = {.info = info.p, .info_len = info.n, .abbrev = abbrev.p,
                            .abbrev_len = abbrev.n, .alt_str = alt.p, .alt_str_len = alt.n};
    seen got = {0};
    assert_int_equal(tdb_dwarf_each_unit(&s, collect, &got, NULL), 1);
    assert_string_equal(got.producer[0], "GNU C17 12.2.0 -g -O0");
    s.alt_str = NULL, s.alt_str_len = 0;
    memset(&got, 0, sizeof(got));
    assert_int_equal(tdb_dwarf_each_unit(&s, collect, &got, NULL), 1);
    assert_string_equal(got.producer[0], "(null)");
    bfree(&info), bfree(&abbrev), bfree(&alt);
}

static long walk(const uint8_t *info, size_t n, const bytes *abbrev, const bytes *str,
                 tdb_error *err)
{
    tdb_dwarf_sections s = {info, n, abbrev->p, abbrev->n, str->p, str->n,
                            NULL, 0, NULL, 0, NULL, 0, 0};
    seen got = {0};
    return tdb_dwarf_each_unit(&s, collect, &got, err);
}

static void test_malformed_units_are_errors(void **state)
{
    (void)state;
    bytes info = {0}, abbrev = {0}, str = {0};
    cstr(&str, "GNU C17 -O0");
    uleb(&abbrev, 1), uleb(&abbrev, 0x11), u8(&abbrev, 0);
    uleb(&abbrev, 0x25), uleb(&abbrev, 0x0e);
    uleb(&abbrev, 0), uleb(&abbrev, 0), uleb(&abbrev, 0);
    size_t t = open_unit(&info, 0);
    un(&info, 4, 2), un(&info, 0, 4), u8(&info, 8);
    uleb(&info, 1), un(&info, 0, 4);
    close_unit(&info, t, 0);
    size_t one = info.n;
    tdb_error err = {0};

    assert_int_equal(walk(info.p, info.n, &abbrev, &str, &err), 1);

    /* A unit that claims more than the section holds: the first unit is
     * still reported, then the error. */
    un(&info, 0x1000, 4);
    un(&info, 4, 2);
    assert_int_equal(walk(info.p, info.n, &abbrev, &str, &err), -1);
    assert_non_null(strstr(err.msg, "runs past the end"));

    /* An unsupported version. */
    info.n = one;
    t = open_unit(&info, 0);
    un(&info, 9, 2), un(&info, 0, 4), u8(&info, 8), uleb(&info, 1), un(&info, 0, 4);
    close_unit(&info, t, 0);
    tdb_error_clear(&err);
    assert_int_equal(walk(info.p, info.n, &abbrev, &str, &err), -1);
    assert_non_null(strstr(err.msg, "unsupported DWARF version 9"));

    /* An abbreviation code the table lacks. */
    info.n = one;
    t = open_unit(&info, 0);
    un(&info, 4, 2), un(&info, 0, 4), u8(&info, 8), uleb(&info, 7), un(&info, 0, 4);
    close_unit(&info, t, 0);
    tdb_error_clear(&err);
    assert_int_equal(walk(info.p, info.n, &abbrev, &str, &err), -1);
    assert_non_null(strstr(err.msg, "abbreviation 7"));

    /* A form nobody defined. */
    bytes bad = {0};
    uleb(&bad, 1), uleb(&bad, 0x11), u8(&bad, 0);
    uleb(&bad, 0x25), uleb(&bad, 0x7f);
    uleb(&bad, 0), uleb(&bad, 0), uleb(&bad, 0);
    tdb_error_clear(&err);
    assert_int_equal(walk(info.p, one, &bad, &str, &err), -1);
    assert_non_null(strstr(err.msg, "form 0x7f"));

    /* A strp past .debug_str, or a string without its NUL: no producer,
     * no error, no read past the end. */
    bytes nonul = {0};
    put(&nonul, "GNU C17 -O0", 11);
    seen got = {0};
    tdb_dwarf_sections s = {info.p, one, abbrev.p, abbrev.n, nonul.p, nonul.n,
                            NULL, 0, NULL, 0, NULL, 0, 0};
    assert_int_equal(tdb_dwarf_each_unit(&s, collect, &got, NULL), 1);
    assert_string_equal(got.producer[0], "(null)");

    /* Nothing to read is zero units; no sections at all is an error. */
    assert_int_equal(walk(info.p, 0, &abbrev, &str, NULL), 0);
    tdb_dwarf_sections none = {0};
    assert_int_equal(tdb_dwarf_each_unit(&none, collect, &got, NULL), -1);
    bfree(&info), bfree(&abbrev), bfree(&str), bfree(&bad), bfree(&nonul);
}

/* Every prefix, and every single-byte corruption, of a valid DWARF 5
 * section: a count or an error, never a crash (ASan checks the reads). */
static void test_damaged_sections_never_crash(void **state)
{
    (void)state;
    bytes info = {0}, abbrev = {0}, str = {0}, line_str = {0}, offs = {0};
    dwarf5(0, &info, &abbrev, &str, &line_str, &offs);
    for (size_t n = 0; n <= info.n; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, info.p, n);
        tdb_dwarf_sections s = {copy, n, abbrev.p, abbrev.n, str.p, str.n,
                                line_str.p, line_str.n, offs.p, offs.n, NULL, 0, 0};
        seen got = {0};
        long r = tdb_dwarf_each_unit(&s, collect, &got, NULL);
        assert_true(r >= -1 && r <= 2);
        free(copy);
    }
    for (size_t i = 0; i < info.n + abbrev.n; i++) {
        for (int flip = 0; flip < 3; flip++) {
            static const uint8_t masks[] = {0xff, 0x80, 0x01};
            uint8_t *ci = malloc(info.n), *ca = malloc(abbrev.n);
            memcpy(ci, info.p, info.n);
            memcpy(ca, abbrev.p, abbrev.n);
            if (i < info.n)
                ci[i] ^= masks[flip];
            else
                ca[i - info.n] ^= masks[flip];
            tdb_dwarf_sections s = {ci, info.n, ca, abbrev.n, str.p, str.n,
                                    line_str.p, line_str.n, offs.p, offs.n, NULL, 0, 0};
            seen got = {0};
            tdb_error err = {0};
            long r = tdb_dwarf_each_unit(&s, collect, &got, &err);
            assert_true(r >= -1);
            assert_true(r >= 0 || err.set);
            free(ci);
            free(ca);
        }
    }
    bfree(&info), bfree(&abbrev), bfree(&str), bfree(&line_str), bfree(&offs);
}

static void test_producer_optimisation(void **state)
{
    (void)state;
    static const struct { const char *producer; tdb_opt opt; const char *flag; } cases[] = {
        {"GNU C17 12.2.0 -mtune=generic -march=x86-64 -g -O2", TDB_OPT_ON, "-O2"},
        /* setuptools: Python's -O2 first, the profile's -O0 last */
        {"GNU C17 12.2.0 -g -fwrapv -O2 -g -fwrapv -O2 -O0 -g3 -fno-omit-frame-pointer",
         TDB_OPT_NONE, "-O0"},
        {"GNU C17 12.2.0 -mtune=generic -march=x86-64 -g -fPIC", TDB_OPT_NONE, "no -O"},
        {"GNU C++17 12.2.0 -g -Og", TDB_OPT_DEBUG, "-Og"},
        {"GNU C11 12.2.0 -g -O3 -Os", TDB_OPT_ON, "-Os"},
        {"GNU C11 12.2.0 -g -O", TDB_OPT_ON, "-O"},
        {"GNU C11 12.2.0 -g -Ofast", TDB_OPT_ON, "-Ofast"},
        {"GNU GIMPLE 12.2.0 -g -O3 -O3 -fltrans", TDB_OPT_ON, "-O3"},
        {"GNU C17 12.2.0 -O2 -O0", TDB_OPT_NONE, "-O0"},
        {"GNU C17 12.2.0 -O5", TDB_OPT_ON, "-O(other)"},
        {"Debian clang version 14.0.6", TDB_OPT_UNKNOWN, NULL},
        {"clang version 14.0.6 /usr/bin/clang -O2 -g -grecord-command-line a.c", TDB_OPT_ON, "-O2"},
        {"GNU C17 12.2.0", TDB_OPT_UNKNOWN, NULL},
        {"GNU AS 2.40", TDB_OPT_ASSEMBLER, NULL},
        {"", TDB_OPT_UNKNOWN, NULL},
        {NULL, TDB_OPT_UNKNOWN, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *flag = "unset";
        tdb_opt got = tdb_dwarf_producer_opt(cases[i].producer, &flag);
        if (got != cases[i].opt)
            fail_msg("'%s': got %s, want %s", cases[i].producer ? cases[i].producer : "NULL",
                     tdb_opt_name(got), tdb_opt_name(cases[i].opt));
        if (cases[i].flag)
            assert_string_equal(flag, cases[i].flag);
        else
            assert_null(flag);
    }
    assert_string_equal(tdb_opt_name(TDB_OPT_NONE), "unoptimised");
    assert_string_equal(tdb_opt_name(TDB_OPT_ON), "optimised");
}

static void test_producer_glevel(void **state)
{
    (void)state;
    assert_int_equal(tdb_dwarf_producer_glevel("GNU C17 -g -O2"), 2);
    assert_int_equal(tdb_dwarf_producer_glevel("GNU C17 -g -g3"), 3);
    assert_int_equal(tdb_dwarf_producer_glevel("GNU C17 -g3 -g1"), 1);
    assert_int_equal(tdb_dwarf_producer_glevel("clang x -gline-tables-only"), 1);
    assert_int_equal(tdb_dwarf_producer_glevel("GNU C17 -ggdb3 -ggnu-pubnames"), 3);
    assert_int_equal(tdb_dwarf_producer_glevel("GNU C17 -O2"), -1);
    assert_int_equal(tdb_dwarf_producer_glevel(NULL), -1);
}

/* A .gdb_index: header, CU list, (no type units), address area, a symbol
 * table of SLOTS with USED filled, a constant pool. */
static void gdb_index(bytes *b, uint32_t version, int cus, int slots, int used)
{
    uint32_t cu = 24, types = cu + 16 * (uint32_t)cus, addr = types, sym = addr + 20;
    uint32_t pool = sym + 8 * (uint32_t)slots;
    un(b, version, 4), un(b, cu, 4), un(b, types, 4), un(b, addr, 4), un(b, sym, 4),
        un(b, pool, 4);
    for (int i = 0; i < cus; i++)
        un(b, (uint64_t)i * 0x100, 8), un(b, 0x100, 8);
    for (int i = 0; i < 20; i++)
        u8(b, 0);
    for (int i = 0; i < slots; i++) {
        un(b, i < used ? 8u * (unsigned)i + 1 : 0, 4);
        un(b, i < used ? 4u : 0, 4);
    }
    cstr(b, "main");
}

static void test_gdb_index(void **state)
{
    (void)state;
    bytes b = {0};
    tdb_dwarf_index ix;
    tdb_error err = {0};

    gdb_index(&b, 8, 2, 16, 3);
    assert_int_equal(tdb_dwarf_parse_gdb_index(b.p, b.n, &ix, &err), 0);
    assert_int_equal(ix.version, 8);
    assert_int_equal(ix.units, 2);
    assert_int_equal(ix.symbols, 3);
    bfree(&b);

    /* lld --gdb-index without -ggnu-pubnames: an index with no symbols. */
    gdb_index(&b, 7, 1, 1024, 0);
    assert_int_equal(tdb_dwarf_parse_gdb_index(b.p, b.n, &ix, &err), 0);
    assert_int_equal(ix.symbols, 0);

    assert_int_equal(tdb_dwarf_parse_gdb_index(b.p, 20, &ix, &err), -1);
    assert_non_null(strstr(err.msg, "truncated"));
    /* offsets past the end */
    tdb_error_clear(&err);
    assert_int_equal(tdb_dwarf_parse_gdb_index(b.p, 100, &ix, &err), -1);
    assert_non_null(strstr(err.msg, "inconsistent"));
    bfree(&b);

    gdb_index(&b, 3, 1, 4, 1);
    tdb_error_clear(&err);
    assert_int_equal(tdb_dwarf_parse_gdb_index(b.p, b.n, &ix, &err), -1);
    assert_non_null(strstr(err.msg, "version 3"));
    bfree(&b);
}

static void test_debug_names(void **state)
{
    (void)state;
    bytes b = {0};
    tdb_dwarf_index ix;
    tdb_error err = {0};
    un(&b, 0, 4);                     /* length, patched below */
    un(&b, 5, 2), un(&b, 0, 2);       /* version, padding */
    un(&b, 3, 4);                     /* compile units */
    un(&b, 0, 4), un(&b, 0, 4);       /* local and foreign type units */
    un(&b, 4, 4), un(&b, 9, 4);       /* buckets, names */
    un(&b, 0, 4);                     /* augmentation size */
    b.p[0] = (uint8_t)(b.n - 4);
    assert_int_equal(tdb_dwarf_parse_debug_names(b.p, b.n, 0, &ix, &err), 0);
    assert_int_equal(ix.units, 3);
    assert_int_equal(ix.symbols, 9);
    assert_int_equal(tdb_dwarf_parse_debug_names(b.p, 10, 0, &ix, &err), -1);
    b.p[4] = 4;
    tdb_error_clear(&err);
    assert_int_equal(tdb_dwarf_parse_debug_names(b.p, b.n, 0, &ix, &err), -1);
    assert_non_null(strstr(err.msg, "version 4"));
    bfree(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dwarf4_little_and_big_endian),
        cmocka_unit_test(test_dwarf5_clang_forms_and_skipped_units),
        cmocka_unit_test(test_dwz_alt_strings),
        cmocka_unit_test(test_malformed_units_are_errors),
        cmocka_unit_test(test_damaged_sections_never_crash),
        cmocka_unit_test(test_producer_optimisation),
        cmocka_unit_test(test_producer_glevel),
        cmocka_unit_test(test_gdb_index),
        cmocka_unit_test(test_debug_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

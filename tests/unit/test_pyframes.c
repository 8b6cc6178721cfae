/*
 * test_pyframes.c: the line-table decoders against tables and lines
 * CPython itself produced (tests/fixtures/linetable/cases*.json, written
 * by generate.py beside it with each version: 3.8/3.9 co_lnotab, 3.10's
 * PEP 626 table, the location tables of 3.11-3.13), and against truncated
 * and random tables, which must give -1 and never read out of bounds
 * (make asan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "cpython/frames.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FIXTURES
#define FIXTURES "tests/fixtures/linetable"
#endif

static json_t *cases;

static uint8_t *unhex(const char *hex, size_t *len)
{
    size_t n = strlen(hex) / 2;
    uint8_t *out = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
    *len = n;
    return out;
}

/* Case C's table (new buffer, length *LEN), first line and expected lines. */
static uint8_t *case_table(const json_t *c, size_t *len, int *first, json_t **lines)
{
    *first = (int)json_integer_value(json_object_get(c, "first_line"));
    *lines = json_object_get(c, "lines");
    return unhex(json_string_value(json_object_get(c, "linetable")), len);
}

static int load_cases(void **state)
{
    json_error_t e;
    json_t *doc = json_load_file(FIXTURES "/cases.json", 0, &e);
    if (!doc) {
        fprintf(stderr, "cannot load %s/cases.json: %s\n", FIXTURES, e.text);
        return -1;
    }
    cases = json_incref(json_object_get(doc, "cases"));
    json_decref(doc);
    return json_array_size(cases) > 0 ? 0 : -1;
}

static int free_cases(void **state)
{
    json_decref(cases);
    return 0;
}

/* Every code unit of every code object gives CPython's own line. */
static void test_matches_cpython(void **state)
{
    size_t i, units = 0;
    json_t *c;
    json_array_foreach(cases, i, c) {
        size_t len;
        int first;
        json_t *lines;
        uint8_t *t = case_table(c, &len, &first, &lines);
        for (size_t k = 0; k < json_array_size(lines); k++) {
            int want = (int)json_integer_value(json_array_get(lines, k));
            int got = tdb_py_linetable_line(t, len, first, (int)k);
            if (got != want)
                fail_msg("%s (%s) code unit %zu: line %d, CPython says %d",
                         json_string_value(json_object_get(c, "qualname")),
                         json_string_value(json_object_get(c, "source")), k, got, want);
            units++;
        }
        /* A frame that has not started (prev_instr before the code) is at
         * its first line; past the end there is no line. */
        assert_int_equal(tdb_py_linetable_line(t, len, first, -1), first);
        assert_int_equal(tdb_py_linetable_line(t, len, first, (int)json_array_size(lines)), -1);
        free(t);
    }
    assert_true(units > 500);
}

/* Cut anywhere, a table gives either CPython's line (the entry was whole)
 * or -1, never a read past its end. */
static void test_truncated_tables(void **state)
{
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        size_t len;
        int first;
        json_t *lines;
        uint8_t *t = case_table(c, &len, &first, &lines);
        for (size_t cut = 0; cut < len; cut++) {
            uint8_t *copy = malloc(cut ? cut : 1); /* exact size: ASan sees overreads */
            memcpy(copy, t, cut);
            for (size_t k = 0; k < json_array_size(lines); k++) {
                int got = tdb_py_linetable_line(copy, cut, first, (int)k);
                int want = (int)json_integer_value(json_array_get(lines, k));
                if (got != -1 && got != want)
                    fail_msg("cut at %zu: code unit %zu gives %d, not %d or -1", cut, k, got,
                             want);
            }
            free(copy);
        }
        free(t);
    }
}

static void test_random_bytes(void **state)
{
    uint32_t x = 12345;
    for (int round = 0; round < 20000; round++) {
        size_t len = (size_t)(round % 40);
        uint8_t *t = malloc(len ? len : 1);
        for (size_t k = 0; k < len; k++) {
            x = x * 1103515245u + 12345u;
            t[k] = (uint8_t)(x >> 16);
        }
        int got = tdb_py_linetable_line(t, len, 10, round % 64);
        assert_true(got >= -1);
        free(t);
    }
}

static void test_hand_made(void **state)
{
    /* One entry, long form: line +2 (svarint 4), end line 0, columns 1, 2;
     * covering 3 code units.  Then "no location" for 1 unit. */
    const uint8_t t[] = {0x80 | (14 << 3) | 2, 4, 0, 1, 2, 0x80 | (15 << 3) | 0};
    assert_int_equal(tdb_py_linetable_line(t, sizeof(t), 7, 0), 9);
    assert_int_equal(tdb_py_linetable_line(t, sizeof(t), 7, 2), 9);
    assert_int_equal(tdb_py_linetable_line(t, sizeof(t), 7, 3), -1);
    assert_int_equal(tdb_py_linetable_line(t, sizeof(t), 7, 4), -1);
    /* A multi-byte negative delta: -100 is svarint 201 = 0b11_001001 ->
     * chunks 9 | 64, 3. */
    const uint8_t neg[] = {0x80 | (13 << 3) | 0, 9 | 64, 3};
    assert_int_equal(tdb_py_linetable_line(neg, sizeof(neg), 150, 0), 50);
    /* An entry that does not start with the top bit set is malformed. */
    const uint8_t bad[] = {0x05};
    assert_int_equal(tdb_py_linetable_line(bad, sizeof(bad), 1, 0), -1);
    assert_int_equal(tdb_py_linetable_line(NULL, 0, 1, 0), -1);
}

/* Every version's fixture: each instruction's line is CPython's. */
static void test_every_version(void **state)
{
    static const char *const versions[] = {"3.8", "3.9", "3.10", "3.12", "3.13"};
    size_t units = 0;
    for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
        char path[256];
        snprintf(path, sizeof(path), FIXTURES "/cases-%s.json", versions[v]);
        json_error_t e;
        json_t *doc = json_load_file(path, 0, &e);
        if (!doc)
            fail_msg("cannot load %s: %s", path, e.text);
        const char *fmt = json_string_value(json_object_get(doc, "format"));
        assert_non_null(fmt);
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(doc, "cases"), i, c) {
            size_t len;
            int first;
            json_t *lines;
            uint8_t *t = case_table(c, &len, &first, &lines);
            for (size_t k = 0; k < json_array_size(lines); k++) {
                int want = (int)json_integer_value(json_array_get(lines, k));
                int got;
                if (strcmp(fmt, "lnotab") == 0)
                    got = tdb_py_lnotab_line(t, len, first, (int)(2 * k));
                else if (strcmp(fmt, "linetable310") == 0)
                    got = tdb_py_linetable310_line(t, len, first, (int)(2 * k));
                else
                    got = tdb_py_linetable_line(t, len, first, (int)k);
                if (got != want)
                    fail_msg("%s %s (%s) unit %zu: line %d, CPython says %d", versions[v],
                             json_string_value(json_object_get(c, "qualname")),
                             json_string_value(json_object_get(c, "source")), k, got, want);
                units++;
            }
            /* Truncated anywhere: CPython's line or -1 (3.10, 3.11+), never
             * a read past the end (make asan). */
            for (size_t cut = 0; cut < len; cut += 1 + len / 16) {
                uint8_t *copy = malloc(cut ? cut : 1);
                memcpy(copy, t, cut);
                for (size_t k = 0; k < json_array_size(lines); k++) {
                    if (strcmp(fmt, "lnotab") == 0)
                        tdb_py_lnotab_line(copy, cut, first, (int)(2 * k));
                    else if (strcmp(fmt, "linetable310") == 0)
                        tdb_py_linetable310_line(copy, cut, first, (int)(2 * k));
                    else
                        tdb_py_linetable_line(copy, cut, first, (int)k);
                }
                free(copy);
            }
            free(t);
        }
        json_decref(doc);
    }
    assert_true(units > 2000);
}

static void test_old_formats_by_hand(void **state)
{
    /* lnotab: +6 bytes +1 line, +4 bytes -2 lines (signed). */
    const uint8_t lnotab[] = {6, 1, 4, 0xfe};
    assert_int_equal(tdb_py_lnotab_line(lnotab, sizeof(lnotab), 10, -1), 10);
    assert_int_equal(tdb_py_lnotab_line(lnotab, sizeof(lnotab), 10, 4), 10);
    assert_int_equal(tdb_py_lnotab_line(lnotab, sizeof(lnotab), 10, 6), 11);
    assert_int_equal(tdb_py_lnotab_line(lnotab, sizeof(lnotab), 10, 12), 9);
    /* 3.10: 4 bytes on line +1, 2 bytes with no line (-128), 2 on +2. */
    const uint8_t t310[] = {4, 1, 2, 0x80, 2, 2};
    assert_int_equal(tdb_py_linetable310_line(t310, sizeof(t310), 5, -1), 5);
    assert_int_equal(tdb_py_linetable310_line(t310, sizeof(t310), 5, 2), 6);
    assert_int_equal(tdb_py_linetable310_line(t310, sizeof(t310), 5, 4), -1);
    assert_int_equal(tdb_py_linetable310_line(t310, sizeof(t310), 5, 6), 8);
    assert_int_equal(tdb_py_linetable310_line(t310, sizeof(t310), 5, 8), -1);
    assert_int_equal(tdb_py_linetable310_line(t310, 1, 5, 0), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_version),
        cmocka_unit_test(test_old_formats_by_hand),
        cmocka_unit_test(test_matches_cpython),
        cmocka_unit_test(test_truncated_tables),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_hand_made),
    };
    return cmocka_run_group_tests_name("pyframes", tests, load_cases, free_cases);
}

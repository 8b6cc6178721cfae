/*
 * test_pyframes.c: the CPython 3.11 location-table decoder against tables
 * and lines CPython itself produced (tests/fixtures/linetable/cases.json,
 * written by generate.py beside it), and against truncated and random
 * tables, which must give -1 and never read out of bounds (make asan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"
#include "pyframes.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_cpython),
        cmocka_unit_test(test_truncated_tables),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_hand_made),
    };
    return cmocka_run_group_tests_name("pyframes", tests, load_cases, free_cases);
}

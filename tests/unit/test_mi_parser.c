/*
 * test_mi_parser.c: the MI parser against recorded gdb 13 output.
 *
 * Each tests/fixtures/mi/NAME.mi is real gdb output (see the README there);
 * NAME.json beside it holds the expected records, one JSON object a line.
 * Every fixture is fed whole, byte by byte and in odd-sized chunks, so
 * lines split across reads are covered everywhere.  A new gdb quirk is a
 * new pair of files, not new code:
 *
 *   build/tests/test_mi_parser --dump tests/fixtures/mi/NAME.mi > NAME.json
 *
 * then read NAME.json before committing it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "gdb/mi_parser.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FIXTURES
#define FIXTURES "tests/fixtures/mi"
#endif

/* Parse LEN bytes from a heap block of exactly LEN bytes, with no NUL
 * after them: a parser that reads past its length is an ASan error
 * ('make asan'), not a silent read of a terminator. */
static tdb_mi_record *parse_exact(const char *bytes, size_t len)
{
    char *copy = tdb_xmalloc(len);
    memcpy(copy, bytes, len);
    tdb_mi_record *r = tdb_mi_parse_line(copy, len);
    free(copy);
    return r;
}

/* Each line of BUF parsed on its own from an exact-size copy: a JSON
 * array of the records, as parse_chunked() gives them. */
static json_t *parse_lines_exact(const char *buf, size_t len)
{
    json_t *out = json_array();
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;
        tdb_mi_record *r = parse_exact(buf + pos, n);
        json_array_append_new(out, tdb_mi_record_to_json(r));
        tdb_mi_record_free(r);
        pos += n + 1;
    }
    return out;
}

/* Parse BUF fed in chunks of CHUNK bytes (0: all at once); returns a JSON
 * array of the records. */
static json_t *parse_chunked(const char *buf, size_t len, size_t chunk)
{
    tdb_mi_parser *p = tdb_mi_parser_new();
    json_t *out = json_array();
    size_t pos = 0;
    assert_non_null(p);
    while (pos < len) {
        size_t n = chunk && len - pos > chunk ? chunk : len - pos;
        tdb_mi_parser_push(p, buf + pos, n);
        pos += n;
        tdb_mi_record *r;
        while ((r = tdb_mi_parser_pop(p))) {
            json_array_append_new(out, tdb_mi_record_to_json(r));
            tdb_mi_record_free(r);
        }
    }
    tdb_mi_parser_finish(p);
    tdb_mi_record *r;
    while ((r = tdb_mi_parser_pop(p))) {
        json_array_append_new(out, tdb_mi_record_to_json(r));
        tdb_mi_record_free(r);
    }
    tdb_mi_parser_free(p);
    return out;
}

static json_t *load_expected(const char *path)
{
    size_t len;
    char *text = tdb_read_file(path, &len, NULL);
    json_t *arr = json_array();
    if (!text)
        fail_msg("missing expected file %s", path);
    char *line = text;
    while (line && *line) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (*line) {
            json_error_t jerr;
            json_t *v = json_loads(line, 0, &jerr);
            if (!v)
                fail_msg("%s: bad JSON: %s", path, jerr.text);
            json_array_append_new(arr, v);
        }
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    return arr;
}

static void check_fixture(const char *name)
{
    char mi[512], expected_path[512];
    snprintf(mi, sizeof(mi), "%s/%s", FIXTURES, name);
    snprintf(expected_path, sizeof(expected_path), "%.*s.json", (int)(strlen(mi) - 3), mi);

    size_t len;
    char *buf = tdb_read_file(mi, &len, NULL);
    assert_non_null(buf);
    json_t *expected = load_expected(expected_path);
    static const size_t chunks[] = {0, 1, 2, 3, 7, 64, 4093};
    for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
        json_t *got = parse_chunked(buf, len, chunks[i]);
        if (!json_equal(got, expected)) {
            size_t n = json_array_size(got) > json_array_size(expected) ? json_array_size(got)
                                                                       : json_array_size(expected);
            for (size_t k = 0; k < n; k++) {
                json_t *a = json_array_get(got, k), *b = json_array_get(expected, k);
                if (!a || !b || !json_equal(a, b)) {
                    char *sa = a ? json_dumps(a, JSON_COMPACT) : NULL;
                    char *sb = b ? json_dumps(b, JSON_COMPACT) : NULL;
                    fail_msg("%s (chunk %zu): record %zu differs\n got:      %s\n expected: %s",
                             name, chunks[i], k, sa ? sa : "(none)", sb ? sb : "(none)");
                }
            }
        }
        json_decref(got);
    }
    json_t *lines = parse_lines_exact(buf, len);
    if (!json_equal(lines, expected))
        fail_msg("%s: parsing each line from an exact-size buffer differs from pushing them", name);
    json_decref(lines);
    json_decref(expected);
    free(buf);
}

static void test_all_fixtures(void **state)
{
    DIR *d = opendir(FIXTURES);
    struct dirent *e;
    int n = 0;
    assert_non_null(d);
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 3 && strcmp(e->d_name + len - 3, ".mi") == 0) {
            check_fixture(e->d_name);
            n++;
        }
    }
    closedir(d);
    assert_true(n >= 15);
}

static tdb_mi_record *one(const char *line)
{
    return parse_exact(line, strlen(line));
}

static void test_token_and_class(void **state)
{
    tdb_mi_record *r = one("42^done,value=\"1\"");
    assert_int_equal(r->kind, TDB_MI_RESULT);
    assert_int_equal(r->token, 42);
    assert_string_equal(r->klass, "done");
    assert_string_equal(tdb_mi_str(r->results, "value"), "1");
    tdb_mi_record_free(r);

    r = one("^connected");
    assert_int_equal(r->kind, TDB_MI_RESULT);
    assert_int_equal(r->token, -1);
    assert_string_equal(r->klass, "connected");
    assert_int_equal(json_object_size(r->results), 0);
    tdb_mi_record_free(r);

    r = one("7+download,{section=\".text\"}");
    /* An unnamed tuple right after the class is not valid MI. */
    assert_int_equal(r->kind, TDB_MI_ERROR);
    tdb_mi_record_free(r);

    r = one("7+download,section=\".text\",section-size=\"1\"");
    assert_int_equal(r->kind, TDB_MI_STATUS);
    assert_int_equal(r->token, 7);
    tdb_mi_record_free(r);
}

static void test_escapes(void **state)
{
    tdb_mi_record *r = one("~\"a\\\"b\\\\c\\n\\t\\101\\e\\0x\"");
    assert_int_equal(r->kind, TDB_MI_CONSOLE);
    assert_int_equal(r->text_len, 11);
    assert_memory_equal(r->text, "a\"b\\c\n\tA\033\0x", 11);
    tdb_mi_record_free(r);

    /* Octal-escaped UTF-8 decodes to UTF-8; a lone invalid byte becomes
     * U+FFFD in JSON so the record always serialises. */
    r = one("^error,msg=\"\\303\\251 \\377\"");
    const char *msg = tdb_mi_str(r->results, "msg");
    assert_non_null(msg);
    assert_string_equal(msg, "\xc3\xa9 \xef\xbf\xbd");
    tdb_mi_record_free(r);
}

static void test_repeated_names_and_lists(void **state)
{
    tdb_mi_record *r = one("^done,a={x=\"1\",x=\"2\",y=[\"3\"]},l=[f={n=\"1\"},f={n=\"2\"}],e=[],t={}");
    json_t *a = json_object_get(r->results, "a");
    assert_true(json_is_array(json_object_get(a, "x")));
    assert_int_equal(json_array_size(json_object_get(a, "x")), 2);
    assert_true(json_is_array(json_object_get(a, "y")));
    json_t *l = json_object_get(r->results, "l");
    assert_int_equal(json_array_size(l), 2);
    assert_string_equal(tdb_mi_str(json_array_get(l, 1), "n"), "2");
    assert_int_equal(json_array_size(json_object_get(r->results, "e")), 0);
    assert_true(json_is_object(json_object_get(r->results, "t")));
    tdb_mi_record_free(r);
}

static void test_prompt_and_crlf(void **state)
{
    tdb_mi_record *r = one("(gdb) ");
    assert_int_equal(r->kind, TDB_MI_PROMPT);
    tdb_mi_record_free(r);
    r = one("^done\r");
    assert_int_equal(r->kind, TDB_MI_RESULT);
    assert_string_equal(r->klass, "done");
    tdb_mi_record_free(r);
}

static void test_partial_lines(void **state)
{
    tdb_mi_parser *p = tdb_mi_parser_new();
    tdb_mi_parser_push(p, "^do", 3);
    assert_null(tdb_mi_parser_pop(p));
    tdb_mi_parser_push(p, "ne,v=\"\\", 7);
    assert_null(tdb_mi_parser_pop(p));
    tdb_mi_parser_push(p, "n\"\n~\"x\"\n(gdb) \nlast", 19);
    tdb_mi_record *r = tdb_mi_parser_pop(p);
    assert_string_equal(tdb_mi_str(r->results, "v"), "\n");
    tdb_mi_record_free(r);
    r = tdb_mi_parser_pop(p);
    assert_int_equal(r->kind, TDB_MI_CONSOLE);
    tdb_mi_record_free(r);
    r = tdb_mi_parser_pop(p);
    assert_int_equal(r->kind, TDB_MI_PROMPT);
    tdb_mi_record_free(r);
    assert_null(tdb_mi_parser_pop(p));
    tdb_mi_parser_finish(p); /* the unterminated "last" */
    r = tdb_mi_parser_pop(p);
    assert_int_equal(r->kind, TDB_MI_ERROR);
    assert_string_equal(r->line, "last");
    tdb_mi_record_free(r);
    tdb_mi_parser_free(p);
}

static void test_line_of_digits_honours_its_length(void **state)
{
    /* A token and nothing else: the parser must stop at LEN (it once
     * called strtol() here, which reads to a NUL). */
    static const char *const lines[] = {"1", "42", "123456789012345678", "1234567890123456789",
                                        "7\r", "007"};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        tdb_mi_record *r = one(lines[i]);
        assert_int_equal(r->kind, TDB_MI_ERROR);
        assert_int_equal(strlen(r->line), strlen(lines[i]) - (strchr(lines[i], '\r') ? 1 : 0));
        tdb_mi_record_free(r);
    }
    /* Digits followed by more digits in memory are not part of the line. */
    tdb_mi_record *r = tdb_mi_parse_line("123^done", 2);
    assert_int_equal(r->kind, TDB_MI_ERROR);
    assert_string_equal(r->line, "12");
    tdb_mi_record_free(r);
    r = tdb_mi_parse_line("12^done,x=\"1\"", 7);
    assert_int_equal(r->kind, TDB_MI_RESULT);
    assert_int_equal(r->token, 12);
    assert_int_equal(json_object_size(r->results), 0);
    tdb_mi_record_free(r);
    r = one("123456789012345678^done");
    assert_int_equal(r->token, 123456789012345678L);
    tdb_mi_record_free(r);
}

static void test_deep_nesting_is_an_error(void **state)
{
    tdb_buf b = TDB_BUF_INIT;
    tdb_buf_adds(&b, "^done,a=");
    for (int i = 0; i < 100000; i++)
        tdb_buf_addc(&b, '[');
    tdb_mi_record *r = parse_exact(b.s, b.len);
    assert_int_equal(r->kind, TDB_MI_ERROR);
    assert_non_null(strstr(r->text, "nested too deeply"));
    tdb_mi_record_free(r);
    tdb_buf_free(&b);
}

static void test_random_bytes_never_crash(void **state)
{
    /* Garbage of every shape: each line gives exactly one record. */
    unsigned seed = 12345;
    const char alphabet[] = "^*+=~@&{}[]\",=\\0123456789abcdefgh\r\x80\xff \t";
    for (int round = 0; round < 3000; round++) {
        char line[200]; /* parse_exact() copies the N bytes to the heap */
        size_t n = (size_t)(seed % sizeof(line));
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            line[i] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
        }
        tdb_mi_record *r = parse_exact(line, n);
        assert_non_null(r);
        json_t *j = tdb_mi_record_to_json(r);
        char *s = json_dumps(j, 0);
        assert_non_null(s); /* always serialisable */
        free(s);
        json_decref(j);
        tdb_mi_record_free(r);
        seed = seed * 1103515245u + 12345u;
    }
}

static void test_quote_round_trip(void **state)
{
    const char *nasty = "a \"b\" \\c\n\td\x01 \xc3\xa9";
    tdb_buf b = TDB_BUF_INIT;
    tdb_buf_adds(&b, "~");
    tdb_mi_quote(&b, nasty);
    tdb_mi_record *r = parse_exact(b.s, b.len);
    assert_int_equal(r->kind, TDB_MI_CONSOLE);
    assert_string_equal(r->text, nasty);
    tdb_mi_record_free(r);
    tdb_buf_free(&b);
}

static int dump(const char *path)
{
    size_t len;
    tdb_error err = {0};
    char *buf = tdb_read_file(path, &len, &err);
    if (!buf) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    json_t *all = parse_chunked(buf, len, 0);
    size_t i;
    json_t *v;
    json_array_foreach(all, i, v)
    {
        char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
        puts(s);
        free(s);
    }
    json_decref(all);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--dump") == 0)
        return dump(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_fixtures),
        cmocka_unit_test(test_token_and_class),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_repeated_names_and_lists),
        cmocka_unit_test(test_prompt_and_crlf),
        cmocka_unit_test(test_partial_lines),
        cmocka_unit_test(test_line_of_digits_honours_its_length),
        cmocka_unit_test(test_deep_nesting_is_an_error),
        cmocka_unit_test(test_random_bytes_never_crash),
        cmocka_unit_test(test_quote_round_trip),
    };
    return cmocka_run_group_tests_name("mi_parser", tests, NULL, NULL);
}

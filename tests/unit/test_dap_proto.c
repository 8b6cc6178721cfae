/*
 * test_dap_proto.c: the Debug Adapter Protocol's wire format
 * (src/dap/proto.c): frames split anywhere, several in one read, lax
 * headers, and every kind of bad input reported once and skipped with the
 * reader going on; strings that are not UTF-8; messages built right.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dap/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *frame_of(const char *body)
{
    return tdb_xasprintf("Content-Length: %zu\r\n\r\n%s", strlen(body), body);
}

/* Every message READER gives for DATA, pushed in pieces of STEP bytes:
 * the "command" of each, or "ERR" for each malformed frame, joined by
 * spaces. */
static char *messages(const char *data, size_t len, size_t step, size_t max_body)
{
    tdb_dap_reader *r = tdb_dap_reader_new(max_body);
    tdb_buf out = TDB_BUF_INIT;
    for (size_t off = 0; off < len; off += step) {
        size_t n = len - off < step ? len - off : step;
        tdb_dap_reader_push(r, data + off, n);
        for (;;) {
            json_t *m = NULL;
            tdb_error err = {0};
            int rc = tdb_dap_reader_next(r, &m, &err);
            if (rc == 0)
                break;
            if (out.len)
                tdb_buf_addc(&out, ' ');
            if (rc < 0) {
                assert_true(err.set);
                tdb_buf_adds(&out, "ERR");
                continue;
            }
            const char *c = json_string_value(json_object_get(m, "command"));
            tdb_buf_adds(&out, c ? c : "?");
            json_decref(m);
        }
    }
    tdb_dap_reader_free(r);
    return tdb_buf_detach(&out);
}

static void test_split_anywhere(void **state)
{
    (void)state;
    char *a = frame_of("{\"seq\":1,\"type\":\"request\",\"command\":\"initialize\"}");
    char *b = frame_of("{\"seq\":2,\"type\":\"request\",\"command\":\"launch\",\"arguments\":{\"program\":\"\xc3\xa9t\xc3\xa9.py\"}}");
    char *both = tdb_xasprintf("%s%s", a, b);
    for (size_t step = 1; step <= strlen(both); step++) {
        char *got = messages(both, strlen(both), step, 0);
        assert_string_equal(got, "initialize launch");
        free(got);
    }
    free(a);
    free(b);
    free(both);
}

static void test_lax_headers(void **state)
{
    (void)state;
    /* Other fields, any case, LF line ends, blank lines between frames. */
    const char *data = "content-length:13\nContent-Type: application/json\n\n{\"command\":1}"
                       "\r\n\r\nContent-Type: x\r\nCONTENT-LENGTH:   16  \r\n\r\n{\"command\":\"go\"}";
    char *got = messages(data, strlen(data), 1, 0);
    assert_string_equal(got, "? go");
    free(got);
}

static void test_bad_frames_are_skipped(void **state)
{
    (void)state;
    char *good = frame_of("{\"command\":\"ok\"}");
    char *bad_json = frame_of("{\"command\": nope}");
    char *bad_utf8 = frame_of("{\"command\":\"\xff\xfe\"}");
    char *nul = frame_of("{\"command\":\"a\\u0000b\"}");
    char *data = tdb_xasprintf("%s"
                               "X-Nothing: 1\r\n\r\n"              /* no Content-Length */
                               "%s"
                               "Content-Length: twelve\r\n\r\n"    /* not a number */
                               "%s%s%s"
                               "Content-Length: 99999999999999999\r\n\r\n" /* absurd */
                               "%s",
                               good, good, bad_json, bad_utf8, nul, good);
    for (size_t step = 1; step <= 7; step += 3) {
        char *got = messages(data, strlen(data), step, 0);
        assert_string_equal(got, "ok ERR ok ERR ERR ERR ERR ERR ok");
        free(got);
    }
    free(good);
    free(bad_json);
    free(bad_utf8);
    free(nul);
    free(data);
}

static void test_oversized_body_is_skipped_exactly(void **state)
{
    (void)state;
    /* A body over the limit is dropped byte for byte: the frame after it
     * is read as it should be, even when the body holds what looks like
     * frames (in a JSON string, where line breaks are escaped: a raw
     * "Content-Length: N" line is never part of a body, see
     * test_lengths_that_lie). */
    char *inner = tdb_xasprintf("{\"text\":\"%s\"}",
                                "Content-Length: 20\\r\\n\\r\\n{\\\"command\\\":\\\"hidden\\\"}");
    char *big = tdb_xasprintf("Content-Length: %zu\r\n\r\n%s%s", strlen(inner) + 40, inner,
                              "........................................");
    char *after = frame_of("{\"command\":\"after\"}");
    char *data = tdb_xasprintf("%s%s", big, after);
    char *got = messages(data, strlen(data), 5, 30);
    assert_string_equal(got, "ERR after");
    free(got);
    free(inner);
    free(big);
    free(after);
    free(data);
}

/* Every error READER gives for DATA (pushed at once), one a line. */
static char *errors_of(const char *data)
{
    tdb_dap_reader *r = tdb_dap_reader_new(0);
    tdb_buf out = TDB_BUF_INIT;
    json_t *m = NULL;
    tdb_error err = {0};
    int rc;
    tdb_dap_reader_push(r, data, strlen(data));
    while ((rc = tdb_dap_reader_next(r, &m, &err)) != 0) {
        if (rc > 0)
            json_decref(m);
        else
            tdb_buf_addf(&out, "%s\n", err.msg);
        tdb_error_clear(&err);
    }
    tdb_dap_reader_free(r);
    return tdb_buf_detach(&out);
}

/* DATA, then a good frame: one error, then the good frame, however the
 * bytes are split; the error says WHAT. */
static void expect_refused_then_ok(const char *data, const char *what)
{
    char *good = frame_of("{\"command\":\"ok\"}");
    char *all = tdb_xasprintf("%s%s", data, good);
    for (size_t step = 1; step <= 9; step++) {
        char *got = messages(all, strlen(all), step, 0);
        if (strcmp(got, "ERR ok") != 0)
            fail_msg("'%s' in pieces of %zu: %s", data, step, got);
        free(got);
    }
    char *errors = errors_of(all);
    if (!strstr(errors, what))
        fail_msg("'%s': the error '%s' does not say '%s'", data, errors, what);
    free(errors);
    free(all);
    free(good);
}

static void test_two_content_lengths_are_refused(void **state)
{
    (void)state;
    /* Which one is the body's length is unknown, whichever comes first
     * (the adapter used to wait for 200 bytes that never came), and even
     * when they agree. */
    const char *body = "{\"command\":\"hidden\"}";
    static const char *const pairs[][2] = {{"5", "200"}, {"200", "5"}, {"20", "20"}};
    for (size_t i = 0; i < 3; i++) {
        char *data = tdb_xasprintf("Content-Length: %s\r\nContent-Length: %s\r\n\r\n%s",
                                   pairs[i][0], pairs[i][1], body);
        char *what = tdb_xasprintf("two Content-Length fields (%s and %s)", pairs[i][0],
                                   pairs[i][1]);
        expect_refused_then_ok(data, what);
        free(data);
        free(what);
    }
}

static void test_lengths_that_lie(void **state)
{
    (void)state;
    /* Too long: the next frame's header comes where the body should go on
     * (a "Content-Length: N" line is never part of JSON: a raw line break
     * cannot be in a string, a letter cannot be outside one). */
    expect_refused_then_ok("Content-Length: 500\r\n\r\n{\"command\":\"short\"}",
                           "the next frame began after 19 of its 500 bytes");
    /* Too short: the rest of the body is no frame, dropped up to the next. */
    expect_refused_then_ok("Content-Length: 5\r\n\r\n{\"command\":\"long\"}",
                           "malformed DAP message");
    /* Negative, empty, absurd, or no number at all. */
    expect_refused_then_ok("Content-Length: -5\r\n\r\n{\"command\":\"x\"}",
                           "Content-Length is not a number ('-5')");
    expect_refused_then_ok("Content-Length:\r\n\r\n{\"command\":\"x\"}",
                           "Content-Length is not a number ('')");
    expect_refused_then_ok("Content-Length: 99999999999999999\r\n\r\n",
                           "Content-Length 99999999999999999 is too large");
    /* Over the limit, and the bytes never come: the skip ends where the
     * next frame's header begins. */
    expect_refused_then_ok("Content-Length: 1000000000\r\n\r\n",
                           "is over tdebug's limit");
    /* A length line longer than a header may be: no header (it once made
     * the reader go round for ever, a header to the junk search, junk to
     * the header reader). */
    char *spaces = malloc(TDB_DAP_MAX_HEADER + 2);
    memset(spaces, ' ', TDB_DAP_MAX_HEADER + 1);
    spaces[TDB_DAP_MAX_HEADER + 1] = '\0';
    char *long_line = tdb_xasprintf("Content-Length:%s5\r\n\r\n{\"command\":\"x\"}", spaces);
    expect_refused_then_ok(long_line, "is no 'Content-Length: N' field");
    free(long_line);
    free(spaces);
    /* A header without its colon, a header without its blank line. */
    expect_refused_then_ok("Content-Length 20\r\n\r\n{\"command\":\"hidden\"}",
                           "'Content-Length 20' is no 'Content-Length: N' field");
    expect_refused_then_ok("Content-Length: 20\r\n{\"command\":\"hidden\"}\r\n",
                           "no blank line after its fields");
}

/* Bad frames after a body that is junk (a refused frame's), read whole and
 * in pieces: the same messages and errors (fuzz_dap found a header after a
 * refused body read as junk whole, as a header when split before it). */
static void test_same_however_split(void **state)
{
    (void)state;
    const char *body = "{\"command\":\"x\"}";
    char *good = frame_of("{\"command\":\"ok\"}");
    char *data = tdb_xasprintf("Content-Type: none\r\n\r\n%s"
                               "Content-Length: twelve\r\n\r\n%s"
                               "Content-Length: -5\r\n\r\n%s%s"
                               "Content-Length: 500\r\n\r\n%s%s",
                               body, body, body, good, body, good);
    char *whole = messages(data, strlen(data), strlen(data), 0);
    assert_string_equal(whole, "ERR ERR ok ERR ok");
    for (size_t step = 1; step <= 13; step++) {
        char *got = messages(data, strlen(data), step, 0);
        assert_string_equal(got, whole);
        free(got);
    }
    free(whole);
    free(data);
    free(good);
}

static void test_header_without_end(void **state)
{
    (void)state;
    size_t n = TDB_DAP_MAX_HEADER * 3;
    char *junk = malloc(n + 200);
    memset(junk, 'x', n);
    for (size_t i = 100; i < n; i += 100)
        junk[i] = '\n';
    char *good = frame_of("{\"command\":\"ok\"}");
    memcpy(junk + n, good, strlen(good) + 1);
    char *got = messages(junk, strlen(junk), 4096, 0);
    /* Reported (at least once), then the frame after the junk is read. */
    assert_non_null(strstr(got, "ERR"));
    assert_non_null(strstr(got, "ok"));
    assert_int_equal(strncmp(got + strlen(got) - 2, "ok", 2), 0);
    free(got);
    free(junk);
    free(good);
}

static void test_pending(void **state)
{
    (void)state;
    tdb_dap_reader *r = tdb_dap_reader_new(0);
    json_t *m = NULL;
    tdb_error err = {0};
    tdb_dap_reader_push(r, "Content-Length: 9\r\n\r\n{\"a\"", 25);
    assert_int_equal(tdb_dap_reader_next(r, &m, &err), 0);
    assert_true(tdb_dap_reader_pending(r) > 0);
    tdb_dap_reader_push(r, ":123}", 5);
    assert_int_equal(tdb_dap_reader_next(r, &m, &err), 1);
    assert_int_equal(json_integer_value(json_object_get(m, "a")), 123);
    assert_int_equal(tdb_dap_reader_pending(r), 0);
    json_decref(m);
    tdb_dap_reader_free(r);
}

static void test_frame_round_trip(void **state)
{
    (void)state;
    json_t *msg = tdb_dap_event("output", json_pack("{s:s, s:o}", "category", "stdout", "output",
                                                    tdb_dap_string("a\"b\\\n\xe2\x82\xac", 8)));
    tdb_buf b = TDB_BUF_INIT;
    tdb_dap_frame(msg, &b);
    assert_int_equal(strncmp(b.s, "Content-Length: ", 16), 0);
    tdb_dap_reader *r = tdb_dap_reader_new(0);
    tdb_dap_reader_push(r, b.s, b.len);
    json_t *back = NULL;
    tdb_error err = {0};
    assert_int_equal(tdb_dap_reader_next(r, &back, &err), 1);
    assert_true(json_equal(msg, back));
    json_decref(back);
    json_decref(msg);
    tdb_buf_free(&b);
    tdb_dap_reader_free(r);
}

static void test_strings_that_are_not_utf8(void **state)
{
    (void)state;
    /* Stray bytes, a sequence cut short, an overlong form, a surrogate. */
    json_t *s = tdb_dap_string("/tmp/\xff" "x\xc3" "\xc0\xaf" "\xed\xa0\x80" "\xe2\x82\xac", 16);
    assert_non_null(s);
    assert_string_equal(json_string_value(s), "/tmp/\xef\xbf\xbdx\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                                              "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xe2\x82\xac");
    char *text = json_dumps(s, JSON_ENCODE_ANY);
    assert_non_null(text); /* it serialises */
    free(text);
    json_decref(s);
    /* NUL is kept (json_stringn), and serialised escaped. */
    s = tdb_dap_string("a\0b", 3);
    assert_int_equal(json_string_length(s), 3);
    json_decref(s);
}

static void test_utf8_whole(void **state)
{
    (void)state;
    const char *euro = "ab\xe2\x82\xac";
    assert_int_equal(tdb_dap_utf8_whole(euro, 5), 5);
    assert_int_equal(tdb_dap_utf8_whole(euro, 4), 2); /* cut after 2 of 3 */
    assert_int_equal(tdb_dap_utf8_whole(euro, 3), 2);
    assert_int_equal(tdb_dap_utf8_whole(euro, 2), 2);
    assert_int_equal(tdb_dap_utf8_whole("\xf0\x9f\x98", 3), 0);
    /* Bytes that can never be valid are not held back. */
    assert_int_equal(tdb_dap_utf8_whole("ab\xff", 3), 3);
    assert_int_equal(tdb_dap_utf8_whole("ab\x80", 3), 3);
    assert_int_equal(tdb_dap_utf8_whole("", 0), 0);
}

static void test_request_parts(void **state)
{
    (void)state;
    int seq;
    const char *cmd;
    const json_t *args;
    tdb_error err = {0};
    json_t *m = json_loads("{\"seq\":7,\"type\":\"request\",\"command\":\"next\","
                           "\"arguments\":{\"threadId\":1}}", 0, NULL);
    assert_int_equal(tdb_dap_request_parts(m, &seq, &cmd, &args, &err), 0);
    assert_int_equal(seq, 7);
    assert_string_equal(cmd, "next");
    assert_int_equal(json_integer_value(json_object_get(args, "threadId")), 1);
    json_decref(m);

    /* What is wrong is said, and what can be answered is kept. */
    static const struct {
        const char *json;
        int seq;
        const char *command;
    } bad[] = {
        {"[1,2]", -1, NULL},
        {"{\"seq\":3,\"command\":\"x\"}", 3, "x"},
        {"{\"seq\":3,\"type\":\"event\",\"command\":\"x\"}", 3, "x"},
        {"{\"type\":\"request\",\"command\":\"x\"}", -1, "x"},
        {"{\"seq\":-4,\"type\":\"request\",\"command\":\"x\"}", -1, "x"},
        {"{\"seq\":1e3,\"type\":\"request\",\"command\":\"x\"}", -1, "x"},
        {"{\"seq\":4,\"type\":\"request\",\"command\":5}", 4, NULL},
        {"{\"seq\":4,\"type\":\"request\",\"command\":\"x\",\"arguments\":[]}", 4, "x"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        tdb_error e = {0};
        m = json_loads(bad[i].json, JSON_DECODE_ANY, NULL);
        assert_non_null(m);
        assert_int_equal(tdb_dap_request_parts(m, &seq, &cmd, &args, &e), -1);
        assert_true(e.set);
        assert_int_equal(seq, bad[i].seq);
        if (bad[i].command)
            assert_string_equal(cmd, bad[i].command);
        else
            assert_null(cmd);
        json_decref(m);
    }
}

static void test_responses(void **state)
{
    (void)state;
    json_t *r = tdb_dap_error_response(5, "fr\xffob", "tdebug does not support the request '%s'",
                                       "fr\xffob");
    assert_false(json_is_true(json_object_get(r, "success")));
    assert_int_equal(json_integer_value(json_object_get(r, "request_seq")), 5);
    assert_string_equal(json_string_value(json_object_get(r, "command")), "fr\xef\xbf\xbdob");
    assert_non_null(strstr(json_string_value(json_object_get(r, "message")), "'fr\xef\xbf\xbdob'"));
    json_decref(r);
    r = tdb_dap_response(6, "threads", NULL);
    assert_true(json_is_true(json_object_get(r, "success")));
    assert_null(json_object_get(r, "body"));
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_anywhere),
        cmocka_unit_test(test_lax_headers),
        cmocka_unit_test(test_bad_frames_are_skipped),
        cmocka_unit_test(test_oversized_body_is_skipped_exactly),
        cmocka_unit_test(test_two_content_lengths_are_refused),
        cmocka_unit_test(test_lengths_that_lie),
        cmocka_unit_test(test_same_however_split),
        cmocka_unit_test(test_header_without_end),
        cmocka_unit_test(test_pending),
        cmocka_unit_test(test_frame_round_trip),
        cmocka_unit_test(test_strings_that_are_not_utf8),
        cmocka_unit_test(test_utf8_whole),
        cmocka_unit_test(test_request_parts),
        cmocka_unit_test(test_responses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

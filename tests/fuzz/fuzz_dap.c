/*
 * fuzz_dap.c: the DAP framing reader (src/dap/proto.c) against arbitrary
 * bytes taken as what a client writes to 'tdebug dap'.
 *
 * FUZZ_SOURCES: src/dap/proto.c src/base/common.c
 * FUZZ_SEEDS: tests/fixtures/dap *.dap
 *
 * What must hold for any input:
 *  - the reader gives the same messages, and the same number of errors,
 *    whether the bytes come at once or in pieces of 1, 7, 61 or 509 bytes
 *    (the small ones for short inputs): a frame split anywhere reads the
 *    same;
 *  - every error says what was malformed ("malformed DAP ..." or "DAP
 *    message of N bytes is over ..."), and every message serialises;
 *  - the reader always goes on: a well-formed frame written after the
 *    input and a blank line is read, whatever state the input left the
 *    reader in (a frame with two lengths once made it wait for ever);
 *  - it holds nothing back (tdb_dap_reader_pending) once that last frame
 *    is read.
 */
#include "fuzz.h"

#include "dap/proto.h"

#include <string.h>

static const char last_body[] = "{\"seq\":424242,\"type\":\"request\",\"command\":\"fuzz-end\"}";

/* Push DATA in pieces of CHUNK bytes (0: at once) and read every message:
 * each serialised, one a line, into a new string; *ERRORS gets how many
 * errors were reported. */
static char *read_all(const uint8_t *data, size_t size, size_t chunk, int *errors)
{
    tdb_dap_reader *r = tdb_dap_reader_new(1 << 16);
    tdb_buf out = TDB_BUF_INIT;
    size_t pos = 0;
    *errors = 0;
    do {
        size_t n = chunk && size - pos > chunk ? chunk : size - pos;
        tdb_dap_reader_push(r, (const char *)data + pos, n);
        pos += n;
        json_t *m;
        tdb_error err = {0};
        int rc;
        while ((rc = tdb_dap_reader_next(r, &m, &err)) != 0) {
            if (rc < 0) {
                TDB_FUZZ_CHECK(err.set && (!strncmp(err.msg, "malformed DAP ", 14) ||
                                           !strncmp(err.msg, "DAP message of ", 15)),
                               "an error that does not say what was malformed");
                (*errors)++;
                tdb_error_clear(&err);
                continue;
            }
            char *s = json_dumps(m, JSON_COMPACT | JSON_ENCODE_ANY);
            TDB_FUZZ_CHECK(s != NULL, "a message that does not serialise");
            tdb_buf_addf(&out, "%s\n", s);
            free(s);
            json_decref(m);
        }
    } while (pos < size);
    tdb_dap_reader_free(r);
    return tdb_buf_detach(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int e0, e1;
    char *whole = read_all(data, size, 0, &e0);
    static const size_t chunks[] = {1, 7, 61, 509};
    for (size_t i = 0; i < sizeof(chunks) / sizeof(*chunks); i++) {
        /* Small pieces of a long input cost the reader a pass over its
         * header each: long inputs are split coarser (still anywhere). */
        if (size > chunks[i] * 512 || (chunks[i] == 509 && size <= 4096))
            continue;
        char *pieces = read_all(data, size, chunks[i], &e1);
        TDB_FUZZ_CHECK(!strcmp(whole, pieces), "pieces read as other messages than the whole");
        TDB_FUZZ_CHECK(e0 == e1, "pieces read with another number of errors than the whole");
        free(pieces);
    }
    free(whole);

    /* The input, a blank line, then a well-formed frame: that frame is
     * read, and last. */
    tdb_buf more = TDB_BUF_INIT;
    tdb_buf_add(&more, (const char *)data, size);
    tdb_buf_addf(&more, "\r\n\r\nContent-Length: %zu\r\n\r\n%s", strlen(last_body), last_body);
    tdb_dap_reader *r = tdb_dap_reader_new(1 << 16);
    tdb_dap_reader_push(r, more.s, more.len);
    json_t *m, *last = NULL;
    tdb_error err = {0};
    int rc;
    while ((rc = tdb_dap_reader_next(r, &m, &err)) != 0) {
        tdb_error_clear(&err);
        if (rc > 0) {
            json_decref(last);
            last = m;
        }
    }
    TDB_FUZZ_CHECK(last && json_integer_value(json_object_get(last, "seq")) == 424242,
                   "a well-formed frame after the input was not read");
    TDB_FUZZ_CHECK(tdb_dap_reader_pending(r) == 0, "bytes held after the last frame");
    json_decref(last);
    tdb_dap_reader_free(r);
    tdb_buf_free(&more);
    return 0;
}

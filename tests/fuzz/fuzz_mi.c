/*
 * fuzz_mi.c: the MI parser (src/gdb/mi_parser.c) against arbitrary bytes.
 *
 * FUZZ_SOURCES: src/gdb/mi_parser.c src/base/common.c
 * FUZZ_SEEDS: tests/fixtures/mi *.mi
 *
 * What must hold for any input, taken as lines:
 *  - tdb_mi_parse_line() reads only its LEN bytes (each line is copied to a
 *    heap block of exactly its length, so ASan sees any read past it) and
 *    always returns a record, which always serialises to JSON;
 *  - the push interface gives the same records whether the bytes come at
 *    once or in pieces (a line split anywhere parses the same).
 */
#include "fuzz.h"

#include "gdb/mi_parser.h"

#include <stdlib.h>
#include <string.h>

/* Every record of the push parser fed DATA in pieces of CHUNK bytes (0:
 * at once), serialised into one string (new; free it). */
static char *push_all(const uint8_t *data, size_t size, size_t chunk)
{
    tdb_mi_parser *p = tdb_mi_parser_new();
    json_t *all = json_array();
    size_t pos = 0;
    tdb_mi_record *r;

    while (pos < size) {
        size_t n = chunk && size - pos > chunk ? chunk : size - pos;
        tdb_mi_parser_push(p, (const char *)data + pos, n);
        pos += n;
        while ((r = tdb_mi_parser_pop(p))) {
            json_array_append_new(all, tdb_mi_record_to_json(r));
            tdb_mi_record_free(r);
        }
    }
    tdb_mi_parser_finish(p);
    while ((r = tdb_mi_parser_pop(p))) {
        json_array_append_new(all, tdb_mi_record_to_json(r));
        tdb_mi_record_free(r);
    }
    tdb_mi_parser_free(p);
    char *s = json_dumps(all, JSON_COMPACT);
    TDB_FUZZ_CHECK(s != NULL, "a record does not serialise");
    json_decref(all);
    return s;
}

/* One line through tdb_mi_parse_line(), from a heap block of exactly its
 * length. */
static void parse_one(const uint8_t *line, size_t len)
{
    char *copy = malloc(len ? len : 1);
    memcpy(copy, line, len);
    tdb_mi_record *r = tdb_mi_parse_line(copy, len);
    TDB_FUZZ_CHECK(r != NULL, "tdb_mi_parse_line() returned NULL");
    json_t *j = tdb_mi_record_to_json(r);
    char *s = json_dumps(j, JSON_COMPACT);
    TDB_FUZZ_CHECK(s != NULL, "a record does not serialise");
    free(s);
    json_decref(j);
    tdb_mi_record_free(r);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The input as the lines gdb would send, each parsed on its own... */
    size_t pos = 0;
    do {
        const uint8_t *nl = memchr(data + pos, '\n', size - pos);
        size_t n = nl ? (size_t)(nl - (data + pos)) : size - pos;
        parse_one(data + pos, n);
        pos += n + 1;
    } while (pos < size);
    /* ...and as the pipe delivers them, whole or in pieces. */
    char *whole = push_all(data, size, 0);
    char *pieces = push_all(data, size, size <= 1024 ? 1 : 61);
    TDB_FUZZ_CHECK(!strcmp(whole, pieces), "pushing in pieces parses differently");
    free(whole);
    free(pieces);
    return 0;
}

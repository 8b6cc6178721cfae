/*
 * dap/proto.h: the Debug Adapter Protocol's wire format and message
 * shapes, and nothing else: no I/O, no session (the MI parser's way: bytes
 * in, messages out).  src/dap/dap.c owns the transport and the session.
 *
 * A frame is "Content-Length: N\r\n\r\n" followed by N bytes of JSON (other
 * header fields are allowed and ignored).  The reader never aborts and
 * never stops: a frame it cannot use (no Content-Length or two of them, a
 * length that is not a number or is over the limit, a header without its
 * blank line, a body that is not JSON) is reported once and skipped, and
 * reading goes on with the next frame.  A length is never waited on past
 * the next frame's header: a line "Content-Length: N" cannot be part of a
 * JSON body, so where one comes the body before it was cut short.
 *
 *     tdb_dap_reader *r = tdb_dap_reader_new(0);
 *     tdb_dap_reader_push(r, buf, n);                  // whatever read() gave
 *     while ((rc = tdb_dap_reader_next(r, &msg, &err)) != 0)
 *         rc > 0 ? handle(msg) : complain(err.msg);
 */
#ifndef TDB_DAP_PROTO_H
#define TDB_DAP_PROTO_H

#include "base/common.h"

#include <jansson.h>
#include <stddef.h>

/* The largest body the reader accepts when asked for the default (0). */
#define TDB_DAP_MAX_BODY (64u << 20)
/* The longest header block: a frame whose blank line does not come by
 * then is malformed. */
#define TDB_DAP_MAX_HEADER 8192

typedef struct tdb_dap_reader tdb_dap_reader;

/* A reader taking bodies up to MAX_BODY bytes (0: TDB_DAP_MAX_BODY). */
tdb_dap_reader *tdb_dap_reader_new(size_t max_body);
void tdb_dap_reader_free(tdb_dap_reader *r); /* accepts NULL */

/* Add N bytes (split anywhere: inside a header, a body, a UTF-8 sequence). */
void tdb_dap_reader_push(tdb_dap_reader *r, const char *data, size_t n);

/* The next message: 1 with *OUT (new reference: the body, any JSON value),
 * 0 when more bytes are needed, -1 when a frame was malformed: ERR says how
 * ("malformed DAP header: no Content-Length", "malformed DAP message:
 * ..."), the frame is skipped, and the next call goes on after it. */
int tdb_dap_reader_next(tdb_dap_reader *r, json_t **out, tdb_error *err);

/* Bytes held that are not yet a whole message (a client that closes with
 * this nonzero ended mid-message). */
size_t tdb_dap_reader_pending(const tdb_dap_reader *r);

/* Append MSG's frame to OUT: the header, then MSG as compact JSON. */
void tdb_dap_frame(const json_t *msg, tdb_buf *out);

/* Messages, without "seq" (the writer numbers what it sends).  BODY is
 * stolen and may be NULL.  New references. */
json_t *tdb_dap_response(int request_seq, const char *command, json_t *body);
/* success: false, with MESSAGE shown to the user. */
json_t *tdb_dap_error_response(int request_seq, const char *command, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
json_t *tdb_dap_event(const char *event, json_t *body);

/* What a message asks, checked: 0 with the request's seq, command and
 * arguments (borrowed; NULL when absent: jansson's getters take NULL), or -1 with ERR set
 * to what is wrong ("a request needs ...") and *SEQ (-1 when unknown) and
 * *COMMAND (NULL when unknown) filled as far as they could be, so that an
 * error response can still answer it. */
int tdb_dap_request_parts(const json_t *msg, int *seq, const char **command,
                          const json_t **arguments, tdb_error *err);

/* LEN bytes of S as a JSON string that always serialises: bytes that are
 * not part of valid UTF-8 become U+FFFD (a path or output that is not
 * UTF-8 stays readable).  New reference. */
json_t *tdb_dap_string(const char *s, size_t len);
/* The number of the LEN bytes of S that end on a whole UTF-8 sequence: a
 * stream is sent up to there and the last 1-3 bytes wait for the next
 * read, so a character split across reads is not broken in two. */
size_t tdb_dap_utf8_whole(const char *s, size_t len);
/* LEN bytes of DATA in base64 (readMemory's data): a new JSON string. */
json_t *tdb_dap_base64(const void *data, size_t len);
/* Append the bytes TEXT (base64) encodes to OUT: 0, or -1 when TEXT is
 * not base64. */
int tdb_dap_base64_decode(const char *text, tdb_buf *out);

#endif

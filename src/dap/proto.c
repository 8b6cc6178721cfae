/* dap/proto.c: the Debug Adapter Protocol's wire format (see dap/proto.h). */
#include "dap/proto.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct tdb_dap_reader {
    tdb_buf buf;      /* bytes not consumed yet, from OFF */
    size_t off;
    size_t max_body;
    long body;        /* the current frame's length once its header was read; -1 before */
    size_t scanned;   /* bytes of that body known to hold no frame header */
    size_t skip;      /* bytes of an over-long body still to drop */
    int in_junk;      /* dropping bytes up to the next header */
    size_t junk;      /* bytes dropped since the last header */
    int junk_said;    /* and reported */
};

tdb_dap_reader *tdb_dap_reader_new(size_t max_body)
{
    tdb_dap_reader *r = tdb_xcalloc(1, sizeof(*r));
    r->max_body = max_body ? max_body : TDB_DAP_MAX_BODY;
    r->body = -1;
    return r;
}

void tdb_dap_reader_free(tdb_dap_reader *r)
{
    if (!r)
        return;
    tdb_buf_free(&r->buf);
    free(r);
}

void tdb_dap_reader_push(tdb_dap_reader *r, const char *data, size_t n)
{
    /* Drop what was consumed before growing: a long session keeps its
     * buffer as big as one message. */
    if (r->off && r->off == r->buf.len) {
        tdb_buf_reset(&r->buf);
        r->off = 0;
    } else if (r->off > 65536 && r->off * 2 > r->buf.len) {
        memmove(r->buf.s, r->buf.s + r->off, r->buf.len - r->off);
        r->buf.len -= r->off;
        r->buf.s[r->buf.len] = '\0';
        r->off = 0;
    }
    tdb_buf_add(&r->buf, data, n);
}

size_t tdb_dap_reader_pending(const tdb_dap_reader *r)
{
    return r->buf.len - r->off + r->skip;
}

/* Why a frame is not trusted, as the reader sees its bytes (DAP's base
 * protocol is LSP's: header fields "Name: value" CRLF, a blank line, then
 * Content-Length bytes of JSON):
 *  - its header has no Content-Length, or two (which one is the body's?),
 *    or one that is no number of bytes: the bytes after it are no body to
 *    trust, and are dropped up to the next frame's header;
 *  - its length lies: a line "Content-Length: N" can never be part of a
 *    JSON body (a letter cannot stand outside a string, a raw line break
 *    inside one), so where one comes before the body's end the body ended
 *    there, and the next frame starts at it;
 *  - bytes that start no header (junk before a frame) are dropped up to
 *    the next one, said once they pass TDB_DAP_MAX_HEADER bytes. */

#define FRAME_HELP "(a frame is 'Content-Length: N' CRLF CRLF, then N bytes of JSON)"

/* Does a line "Content-Length: N" (any case, CRLF or LF) start at P, with
 * N bytes available?  1 yes, 0 no, -1 cannot tell yet (P ends where one
 * could still be).  A line longer than TDB_DAP_MAX_HEADER is none, as it
 * is no header field (field_line_at()): however the bytes come, the junk
 * search and the header reader agree on what starts a frame. */
static int length_line_at(const char *p, size_t n)
{
    static const char name[] = "content-length";
    int unknown = -1;
    size_t k = 0;
    if (n > TDB_DAP_MAX_HEADER + 1) { /* room for the line and its '\n' */
        n = TDB_DAP_MAX_HEADER + 1;
        unknown = 0; /* what runs past the limit is no header line */
    }
    for (; k < sizeof(name) - 1; k++) {
        if (k >= n)
            return unknown;
        if (tolower((unsigned char)p[k]) != name[k])
            return 0;
    }
    while (k < n && (p[k] == ' ' || p[k] == '\t'))
        k++;
    if (k < n && p[k] != ':')
        return 0;
    for (k++; k < n && (p[k] == ' ' || p[k] == '\t'); k++)
        ;
    if (k < n && !isdigit((unsigned char)p[k]))
        return 0;
    while (k < n && isdigit((unsigned char)p[k]))
        k++;
    while (k < n && (p[k] == ' ' || p[k] == '\t'))
        k++;
    if (k < n && p[k] == '\r')
        k++;
    if (k >= n)
        return unknown;
    return p[k] == '\n';
}

/* The first position in [FROM, TO) of P (N bytes) where a "Content-Length:
 * N" line starts, or where one may start but the bytes end first (*MAYBE
 * set then); TO when there is none. */
static size_t next_length_line(const char *p, size_t n, size_t from, size_t to, int *maybe)
{
    *maybe = 0;
    for (size_t i = from; i < to; i++) {
        if (p[i] != 'c' && p[i] != 'C')
            continue;
        int r = length_line_at(p + i, n - i);
        if (r) {
            *maybe = r < 0;
            return i;
        }
    }
    return to;
}

/* Is the line at P a header field: a token, optional blanks, then ':'?
 * N bytes of it are there, all of it when WHOLE (its '\n' follows).  1
 * yes, 0 no, -1 cannot tell yet.  What a line is does not depend on how
 * much of it has come: one that runs past TDB_DAP_MAX_HEADER bytes is
 * none. */
static int field_line_at(const char *p, size_t n, int whole)
{
    static const char tchar[] = "!#$%&'*+-.^_`|~";
    size_t k = 0;
    if (n > TDB_DAP_MAX_HEADER)
        return 0;
    while (k < n && (isalnum((unsigned char)p[k]) || (p[k] && strchr(tchar, p[k]))))
        k++;
    while (k > 0 && k < n && (p[k] == ' ' || p[k] == '\t'))
        k++;
    if (k < n)
        return k > 0 && p[k] == ':';
    return whole ? 0 : -1;
}

/* The first "content-length" (any case) within P's LEN bytes, or NULL. */
static const char *length_name(const char *p, size_t len)
{
    for (size_t i = 0; i + 14 <= len; i++)
        if (!strncasecmp(p + i, "content-length", 14))
            return p + i;
    return NULL;
}

/* The header at P (N bytes available, starting with a field line): 1 with
 * *OUT_LEN its length in bytes and *OUT_BODY the body's length, 0 when
 * more bytes are needed, -1 with ERR set (*OUT_LEN: the bytes to drop). */
static int read_header(const char *p, size_t n, size_t *out_len, long *out_body, tdb_error *err)
{
    long length = -1;
    int count = 0;
    char first[24] = "", second[24] = "", bad[40] = "";
    size_t pos = 0;
    for (;;) {
        /* The limit is on positions, not on what has come: the same bytes
         * are read the same however they arrive. */
        size_t look = n < TDB_DAP_MAX_HEADER + 1 ? n : TDB_DAP_MAX_HEADER + 1;
        const char *nl = memchr(p + pos, '\n', look > pos ? look - pos : 0);
        if (!nl) {
            if (n <= TDB_DAP_MAX_HEADER)
                return 0;
            *out_len = pos; /* the first line is a field, so POS > 0 */
            tdb_error_set(err, EPROTO, "malformed DAP header: no blank line within %d bytes "
                          FRAME_HELP, TDB_DAP_MAX_HEADER);
            return -1;
        }
        size_t eol = (size_t)(nl - p), end = eol;
        if (end > pos && p[end - 1] == '\r')
            end--;
        if (end == pos) { /* the blank line */
            pos = eol + 1;
            break;
        }
        if (field_line_at(p + pos, end - pos, 1) != 1) {
            /* A line that is no field before the blank line: the blank
             * line is missing, and the header ends before this line. */
            *out_len = pos;
            tdb_error_set(err, EPROTO, "malformed DAP header: no blank line after its fields "
                          FRAME_HELP);
            return -1;
        }
        size_t colon = (size_t)((const char *)memchr(p + pos, ':', end - pos) - p);
        size_t name_end = colon;
        while (name_end > pos && (p[name_end - 1] == ' ' || p[name_end - 1] == '\t'))
            name_end--;
        if (name_end - pos == 14 && !strncasecmp(p + pos, "content-length", 14)) {
            size_t v = colon + 1, ve = end;
            while (v < ve && (p[v] == ' ' || p[v] == '\t'))
                v++;
            while (ve > v && (p[ve - 1] == ' ' || p[ve - 1] == '\t'))
                ve--;
            snprintf(count ? second : first, sizeof(first), "%.*s", (int)(ve - v), p + v);
            count++;
            long val = 0;
            int digits = ve > v;
            for (size_t d = v; d < ve && digits; d++) {
                digits = isdigit((unsigned char)p[d]) != 0;
                if (digits && val <= (1L << 40))
                    val = val * 10 + (p[d] - '0');
            }
            if (!digits && !bad[0])
                snprintf(bad, sizeof(bad), "%.*s", (int)(ve - v), p + v);
            length = digits ? val : length;
        }
        pos = eol + 1;
    }
    *out_len = pos;
    if (count == 0) {
        tdb_error_set(err, EPROTO, "malformed DAP header: no Content-Length " FRAME_HELP);
        return -1;
    }
    if (count > 1) {
        tdb_error_set(err, EPROTO, "malformed DAP header: %s Content-Length fields (%s and %s%s): "
                      "which one is the body's length is unknown, the frame was skipped",
                      count == 2 ? "two" : "several", first, second, count == 2 ? "" : ", ...");
        return -1;
    }
    if (bad[0] || !first[0]) {
        tdb_error_set(err, EPROTO, "malformed DAP header: Content-Length is not a number ('%s')",
                      bad);
        return -1;
    }
    if (length > (1L << 40)) {
        tdb_error_set(err, EPROTO, "malformed DAP header: Content-Length %s is too large", first);
        return -1;
    }
    *out_body = length;
    return 1;
}

int tdb_dap_reader_next(tdb_dap_reader *r, json_t **out, tdb_error *err)
{
    for (;;) {
        const char *p = r->buf.s ? r->buf.s + r->off : "";
        size_t avail = r->buf.len - r->off;
        int maybe;
        if (r->skip) {
            /* An over-long body: dropped byte for byte, up to where the
             * next frame's header shows its length was a lie. */
            size_t n = avail < r->skip ? avail : r->skip;
            size_t h = next_length_line(p, avail, 0, n, &maybe);
            r->off += h;
            r->skip = h < n && !maybe ? 0 : r->skip - h;
            if (r->skip)
                return 0;
            continue;
        }
        if (r->body >= 0) {
            size_t upto = avail < (size_t)r->body ? avail : (size_t)r->body;
            size_t h = next_length_line(p, avail, r->scanned, upto, &maybe);
            if (h < upto && !maybe) {
                tdb_error_set(err, EPROTO, "malformed DAP message: its Content-Length is %ld "
                              "bytes, but the next frame began after %zu of its %ld bytes",
                              r->body, h, r->body);
                r->off += h;
                r->body = -1;
                return -1;
            }
            r->scanned = h;
            /* A body that ends where a header line may begin waits for the
             * bytes that tell (no JSON body ends so). */
            if (avail < (size_t)r->body || maybe)
                return 0;
            json_error_t jerr;
            json_t *msg = json_loadb(p, (size_t)r->body, JSON_DECODE_ANY, &jerr);
            r->off += (size_t)r->body;
            r->body = -1;
            if (!msg) {
                tdb_error_set(err, EPROTO, "malformed DAP message: %s (at byte %d of the body)",
                              jerr.text, jerr.position);
                return -1;
            }
            *out = msg;
            return 1;
        }
        if (!r->in_junk) {
            /* Blank lines between frames are tolerated. */
            size_t lead = 0;
            while (lead < avail && (p[lead] == '\r' || p[lead] == '\n'))
                lead++;
            r->off += lead;
            p += lead;
            avail -= lead;
            if (!avail)
                return 0;
        }
        const char *nl = memchr(p, '\n', avail);
        int field = r->in_junk ? 0 : field_line_at(p, nl ? (size_t)(nl - p) : avail, nl != NULL);
        if (field == 0) {
            /* No header starts here: drop up to the next "Content-Length:
             * N" line (junk a client wrote before a frame, or the body of
             * a frame whose length was not to be trusted), however the
             * bytes come: where a line may start one but has not all come,
             * wait, still dropping. */
            size_t h = next_length_line(p, avail, 0, avail, &maybe);
            const char *name = length_name(p, h);
            r->in_junk = h == avail || maybe;
            r->off += h;
            r->junk += h;
            /* Said once a run: a header that is none, or too much junk. */
            if (!r->junk_said && (name || r->junk > TDB_DAP_MAX_HEADER)) {
                size_t len = name ? strcspn(name, "\r\n") : 0;
                if (name)
                    tdb_error_set(err, EPROTO, "malformed DAP header: '%.*s' is no "
                                  "'Content-Length: N' field " FRAME_HELP,
                                  (int)(len < 40 ? len : 40), name);
                else
                    tdb_error_set(err, EPROTO, "malformed DAP stream: more than %d bytes that "
                                  "start no frame were skipped " FRAME_HELP, TDB_DAP_MAX_HEADER);
                r->junk_said = 1;
                return -1;
            }
            if (r->in_junk)
                return 0;
            continue;
        }
        if (field < 0)
            return 0;
        size_t hlen = 0;
        long body = -1;
        int rc = read_header(p, avail, &hlen, &body, err);
        if (rc == 0)
            return 0;
        r->off += hlen;
        r->junk = 0;
        r->junk_said = 0;
        if (rc < 0)
            return -1;
        if ((size_t)body > r->max_body) {
            r->skip = (size_t)body;
            tdb_error_set(err, EMSGSIZE, "DAP message of %ld bytes is over tdebug's limit of %zu "
                          "bytes: skipped", body, r->max_body);
            return -1;
        }
        r->body = body;
        r->scanned = 0;
    }
}

void tdb_dap_frame(const json_t *msg, tdb_buf *out)
{
    char *body = json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t n = body ? strlen(body) : 0;
    tdb_buf_addf(out, "Content-Length: %zu\r\n\r\n", n);
    tdb_buf_add(out, body ? body : "", n);
    free(body);
}

json_t *tdb_dap_response(int request_seq, const char *command, json_t *body)
{
    json_t *m = json_pack("{s:s, s:i, s:b, s:s}", "type", "response", "request_seq", request_seq,
                          "success", 1, "command", command);
    if (body)
        json_object_set_new(m, "body", body);
    return m;
}

json_t *tdb_dap_error_response(int request_seq, const char *command, const char *fmt, ...)
{
    tdb_buf b = TDB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    tdb_buf_vaddf(&b, fmt, ap);
    va_end(ap);
    /* The schema's ErrorResponse has a body; its optional 'error' would be
     * a format string, and the message is no format. */
    json_t *m = json_pack("{s:s, s:i, s:b, s:o, s:o, s:{}}", "type", "response", "request_seq",
                          request_seq, "success", 0, "command",
                          tdb_dap_string(command, strlen(command)), "message",
                          tdb_dap_string(tdb_buf_str(&b), b.len), "body");
    tdb_buf_free(&b);
    return m;
}

json_t *tdb_dap_event(const char *event, json_t *body)
{
    json_t *m = json_pack("{s:s, s:s}", "type", "event", "event", event);
    if (body)
        json_object_set_new(m, "body", body);
    return m;
}

int tdb_dap_request_parts(const json_t *msg, int *seq, const char **command,
                          const json_t **arguments, tdb_error *err)
{
    json_t *s = json_object_get(msg, "seq"), *c = json_object_get(msg, "command");
    json_t *t = json_object_get(msg, "type"), *a = json_object_get(msg, "arguments");
    *seq = json_is_integer(s) && json_integer_value(s) >= 0 && json_integer_value(s) <= 0x7fffffff
               ? (int)json_integer_value(s) : -1;
    *command = json_is_string(c) ? json_string_value(c) : NULL;
    *arguments = NULL;
    if (!json_is_object(msg)) {
        tdb_error_set(err, EPROTO, "a DAP message is a JSON object");
        return -1;
    }
    if (!json_is_string(t)) {
        tdb_error_set(err, EPROTO, "a DAP message needs a \"type\"");
        return -1;
    }
    if (strcmp(json_string_value(t), "request") != 0) {
        /* A response to one of ours (runInTerminal) is the caller's to
         * match; an event from a client is not in the protocol. */
        tdb_error_set(err, EPROTO, "a client sends requests, not \"%s\" messages",
                      json_string_value(t));
        return -1;
    }
    if (*seq < 0) {
        tdb_error_set(err, EPROTO, "a request needs a \"seq\" (a number)");
        return -1;
    }
    if (!*command) {
        tdb_error_set(err, EPROTO, "a request needs a \"command\" (a string)");
        return -1;
    }
    if (a && !json_is_object(a)) {
        tdb_error_set(err, EPROTO, "the \"arguments\" of '%s' must be an object", *command);
        return -1;
    }
    *arguments = a;
    return 0;
}

/* The length of the valid UTF-8 sequence at S (N bytes available), 0 when
 * the bytes there are not one, or -1 when they may be one cut short. */
static int utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    int need;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        need = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        need = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        need = 4, min = 0x10000;
    else
        return 0;
    unsigned cp = c & (0x7f >> need);
    for (int k = 1; k < need; k++) {
        if ((size_t)k >= n)
            return -1;
        if ((s[k] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return need;
}

json_t *tdb_dap_string(const char *s, size_t len)
{
    tdb_buf b = TDB_BUF_INIT;
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        int n = utf8_seq(u + i, len - i);
        if (n > 0) {
            tdb_buf_add(&b, s + i, (size_t)n);
            i += (size_t)n;
        } else {
            tdb_buf_adds(&b, "\xef\xbf\xbd"); /* U+FFFD */
            i++;
        }
    }
    json_t *j = json_stringn(tdb_buf_str(&b), b.len);
    tdb_buf_free(&b);
    return j ? j : json_string("");
}

size_t tdb_dap_utf8_whole(const char *s, size_t len)
{
    /* A sequence cut short can only start in the last three bytes. */
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        const unsigned char *u = (const unsigned char *)s + len - back;
        if ((*u & 0xc0) == 0x80)
            continue; /* a continuation byte: look further back */
        return utf8_seq(u, back) < 0 ? len - back : len;
    }
    return len;
}

/* ---- base64 (readMemory, writeMemory) ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

json_t *tdb_dap_base64(const void *data, size_t len)
{
    const unsigned char *p = data;
    tdb_buf b = TDB_BUF_INIT;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        char q[4] = {b64[v >> 18 & 63], b64[v >> 12 & 63], i + 1 < len ? b64[v >> 6 & 63] : '=',
                     i + 2 < len ? b64[v & 63] : '='};
        tdb_buf_add(&b, q, 4);
    }
    json_t *j = json_stringn(b.s ? b.s : "", b.len);
    tdb_buf_free(&b);
    return j;
}

int tdb_dap_base64_decode(const char *text, tdb_buf *out)
{
    unsigned v = 0;
    int bits = 0;
    for (const char *c = text; *c; c++) {
        if (*c == '=')
            break;
        const char *at = strchr(b64, *c);
        if (!at || !*c)
            return -1;
        v = (v << 6) | (unsigned)(at - b64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            char byte = (char)(v >> bits & 0xff);
            tdb_buf_add(out, &byte, 1);
        }
    }
    return 0;
}

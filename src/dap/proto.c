/* dap/proto.c: the Debug Adapter Protocol's wire format (see dap/proto.h). */
#include "dap/proto.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct tdb_dap_reader {
    tdb_buf buf;      /* bytes not consumed yet, from OFF */
    size_t off;
    size_t max_body;
    long body;        /* the current frame's length once its header was read; -1 before */
    size_t skip;      /* bytes of an over-long body still to drop */
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

/* The end of the header block starting at P (N bytes): the offset past its
 * blank line (CRLF CRLF, or LF LF from a lax client), or 0. */
static size_t header_end(const char *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (p[i] != '\n')
            continue;
        if (p[i + 1] == '\n')
            return i + 2;
        if (p[i + 1] == '\r' && i + 2 < n && p[i + 2] == '\n')
            return i + 3;
    }
    return 0;
}

/* Content-Length from the header block P (LEN bytes): the length, -1 when
 * absent, -2 when it is not a number. */
static long content_length(const char *p, size_t len)
{
    static const char name[] = "content-length";
    long found = -1;
    size_t i = 0;
    while (i < len) {
        size_t eol = i;
        while (eol < len && p[eol] != '\n')
            eol++;
        size_t n = sizeof(name) - 1;
        /* The name may follow junk on its line (bytes a client wrote
         * before the frame): read it wherever it starts. */
        size_t at = i;
        while (at + n < eol && strncasecmp(p + at, name, n) != 0)
            at++;
        if (at + n < eol) {
            size_t k = at + n;
            while (k < eol && (p[k] == ' ' || p[k] == '\t'))
                k++;
            if (k < eol && p[k] == ':') {
                k++;
                while (k < eol && (p[k] == ' ' || p[k] == '\t'))
                    k++;
                size_t end = eol;
                while (end > k && (p[end - 1] == '\r' || p[end - 1] == ' ' || p[end - 1] == '\t'))
                    end--;
                long v = 0;
                if (end == k)
                    return -2;
                for (size_t d = k; d < end; d++) {
                    if (!isdigit((unsigned char)p[d]) || v > (1L << 40))
                        return -2;
                    v = v * 10 + (p[d] - '0');
                }
                found = v;
            }
        }
        i = eol + 1;
    }
    return found;
}

int tdb_dap_reader_next(tdb_dap_reader *r, json_t **out, tdb_error *err)
{
    for (;;) {
        const char *p = r->buf.s ? r->buf.s + r->off : "";
        size_t avail = r->buf.len - r->off;
        if (r->skip) {
            size_t n = avail < r->skip ? avail : r->skip;
            r->off += n;
            r->skip -= n;
            if (r->skip)
                return 0;
            continue;
        }
        if (r->body < 0) {
            /* Blank lines between frames are tolerated. */
            size_t lead = 0;
            while (lead < avail && (p[lead] == '\r' || p[lead] == '\n'))
                lead++;
            r->off += lead;
            p += lead;
            avail -= lead;
            if (!avail)
                return 0;
            size_t end = header_end(p, avail);
            if (!end) {
                if (avail <= TDB_DAP_MAX_HEADER)
                    return 0;
                /* No header ends here: drop it up to the next line that
                 * could start one. */
                const char *nl = memchr(p + TDB_DAP_MAX_HEADER / 2, '\n',
                                        avail - TDB_DAP_MAX_HEADER / 2);
                r->off += nl ? (size_t)(nl - p) + 1 : avail;
                tdb_error_set(err, EPROTO, "malformed DAP header: no blank line within %d bytes "
                                           "(a frame is 'Content-Length: N' CRLF CRLF, then N "
                                           "bytes of JSON)",
                              TDB_DAP_MAX_HEADER);
                return -1;
            }
            long len = content_length(p, end);
            r->off += end;
            if (len == -1) {
                tdb_error_set(err, EPROTO, "malformed DAP header: no Content-Length");
                return -1;
            }
            if (len == -2) {
                tdb_error_set(err, EPROTO, "malformed DAP header: Content-Length is not a number");
                return -1;
            }
            if ((size_t)len > r->max_body) {
                r->skip = (size_t)len;
                tdb_error_set(err, EMSGSIZE, "DAP message of %ld bytes is over tdebug's limit of %zu "
                                             "bytes: skipped",
                              len, r->max_body);
                return -1;
            }
            r->body = len;
            continue;
        }
        if (avail < (size_t)r->body)
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

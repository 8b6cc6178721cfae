/*
 * gdb/mi_parser.c: gdb MI3 output -> tdb_mi_record (see gdb/mi_parser.h).
 *
 * A recursive-descent parser over one complete line at a time; the push
 * interface only splits input into lines.  Nesting is bounded so a hostile
 * or corrupt line cannot exhaust the stack.
 */
#include "gdb/mi_parser.h"

#include "base/common.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 256

struct tdb_mi_parser {
    tdb_buf partial;     /* bytes of the current, unterminated line */
    int overlong;        /* dropping the rest of a line past TDB_MI_MAX_LINE */
    tdb_mi_record *head; /* complete records, oldest first */
    tdb_mi_record *tail;
};

typedef struct cursor {
    const char *s;
    size_t len;
    size_t pos;
    const char *error; /* first problem found; parsing stops there */
    size_t error_pos;
} cursor;

static json_t *parse_value(cursor *c, int depth);

static void fail(cursor *c, const char *what)
{
    if (!c->error) {
        c->error = what;
        c->error_pos = c->pos;
    }
}

static int peek(const cursor *c)
{
    return c->pos < c->len ? (unsigned char)c->s[c->pos] : -1;
}

json_t *tdb_mi_json_bytes(const char *s, size_t n)
{
    tdb_buf b = TDB_BUF_INIT;
    size_t i = 0;

    while (i < n) {
        size_t need = tdb_utf8_seq_len(s + i, n - i);
        if (need) {
            tdb_buf_add(&b, s + i, need);
            i += need;
        } else {
            tdb_buf_adds(&b, "\xef\xbf\xbd");
            i++;
        }
    }
    json_t *v = json_stringn(tdb_buf_str(&b), b.len);
    tdb_buf_free(&b);
    return v;
}

/* c-string: '"' chars with C escapes '"'.  Decoded bytes go to OUT. */
static int parse_cstring_raw(cursor *c, tdb_buf *out)
{
    if (peek(c) != '"') {
        fail(c, "expected '\"'");
        return -1;
    }
    c->pos++;
    while (c->pos < c->len) {
        char ch = c->s[c->pos++];
        if (ch == '"')
            return 0;
        if (ch != '\\') {
            tdb_buf_addc(out, ch);
            continue;
        }
        if (c->pos >= c->len)
            break;
        ch = c->s[c->pos++];
        switch (ch) {
        case 'n': tdb_buf_addc(out, '\n'); break;
        case 't': tdb_buf_addc(out, '\t'); break;
        case 'r': tdb_buf_addc(out, '\r'); break;
        case 'b': tdb_buf_addc(out, '\b'); break;
        case 'f': tdb_buf_addc(out, '\f'); break;
        case 'v': tdb_buf_addc(out, '\v'); break;
        case 'a': tdb_buf_addc(out, '\a'); break;
        case 'e': tdb_buf_addc(out, '\033'); break; /* gdb's printchar uses \e */
        case 'x': {
            int v = 0, digits = 0;
            while (digits < 2 && c->pos < c->len && isxdigit((unsigned char)c->s[c->pos])) {
                char d = c->s[c->pos++];
                v = v * 16 + (isdigit((unsigned char)d) ? d - '0' : (tolower((unsigned char)d) - 'a' + 10));
                digits++;
            }
            if (!digits) {
                fail(c, "bad \\x escape");
                return -1;
            }
            tdb_buf_addc(out, (char)v);
            break;
        }
        default:
            if (ch >= '0' && ch <= '7') {
                int v = ch - '0', digits = 1;
                while (digits < 3 && c->pos < c->len && c->s[c->pos] >= '0' && c->s[c->pos] <= '7') {
                    v = v * 8 + (c->s[c->pos++] - '0');
                    digits++;
                }
                tdb_buf_addc(out, (char)(v & 0xff));
            } else {
                /* \" \\ \' \? and anything unknown stand for themselves. */
                tdb_buf_addc(out, ch);
            }
        }
    }
    fail(c, "unterminated c-string");
    return -1;
}

static json_t *parse_cstring(cursor *c)
{
    tdb_buf b = TDB_BUF_INIT;
    json_t *v = NULL;

    if (parse_cstring_raw(c, &b) == 0)
        v = tdb_mi_json_bytes(tdb_buf_str(&b), b.len);
    tdb_buf_free(&b);
    return v;
}

/* variable: gdb's result names are [A-Za-z0-9_-]+ (e.g. "thread-id"). */
static char *parse_name(cursor *c)
{
    size_t start = c->pos;
    while (c->pos < c->len) {
        unsigned char ch = (unsigned char)c->s[c->pos];
        if (isalnum(ch) || ch == '_' || ch == '-' || ch == '.')
            c->pos++;
        else
            break;
    }
    if (c->pos == start) {
        fail(c, "expected a result name");
        return NULL;
    }
    return tdb_xstrndup(c->s + start, c->pos - start);
}

/* Add NAME=VALUE to OBJ; a name repeated within one tuple collects its
 * values into an array.  REPEATED remembers which names were turned into
 * arrays that way, to tell them from a name whose own value is an array.
 * Steals VALUE. */
static void add_result(json_t *obj, json_t *repeated, const char *name, json_t *value)
{
    json_t *old = json_object_get(obj, name);
    if (!old) {
        json_object_set_new(obj, name, value);
    } else if (json_object_get(repeated, name)) {
        json_array_append_new(old, value);
    } else {
        json_t *arr = json_array();
        json_array_append(arr, old);
        json_array_append_new(arr, value);
        json_object_set_new(obj, name, arr);
        json_object_set_new(repeated, name, json_true());
    }
}

/* results: result ("," result)*, up to END (a closing '}' or end of line).
 * Unnamed values after a result (the MI2 bkpt={..},{..} quirk) fold into
 * the previous name. */
static int parse_results(cursor *c, json_t *obj, int end, int depth)
{
    char *last = NULL;
    json_t *repeated = json_object();
    for (;;) {
        int ch = peek(c);
        if (ch == end)
            break;
        json_t *v;
        if (last && (ch == '{' || ch == '[' || ch == '"')) {
            v = parse_value(c, depth + 1);
            if (!v)
                goto fail;
            add_result(obj, repeated, last, v);
        } else {
            char *name = parse_name(c);
            if (!name)
                goto fail;
            if (peek(c) != '=') {
                free(name);
                fail(c, "expected '='");
                goto fail;
            }
            c->pos++;
            v = parse_value(c, depth + 1);
            if (!v) {
                free(name);
                goto fail;
            }
            add_result(obj, repeated, name, v);
            free(last);
            last = name;
        }
        if (peek(c) == ',') {
            c->pos++;
            continue;
        }
        if (peek(c) != end) {
            fail(c, end == '}' ? "expected ',' or '}'" : "expected ',' or end of line");
            goto fail;
        }
        break;
    }
    free(last);
    json_decref(repeated);
    return 0;
fail:
    free(last);
    json_decref(repeated);
    return -1;
}

static json_t *parse_tuple(cursor *c, int depth)
{
    json_t *obj = json_object();
    c->pos++; /* '{' */
    if (parse_results(c, obj, '}', depth) < 0) {
        json_decref(obj);
        return NULL;
    }
    c->pos++; /* '}' */
    return obj;
}

static json_t *parse_list(cursor *c, int depth)
{
    json_t *arr = json_array();
    c->pos++; /* '[' */
    if (peek(c) == ']') {
        c->pos++;
        return arr;
    }
    for (;;) {
        int ch = peek(c);
        json_t *v;
        if (ch == '{' || ch == '[' || ch == '"') {
            v = parse_value(c, depth + 1);
        } else {
            /* A list of results: keep the values, drop the names. */
            char *name = parse_name(c);
            if (!name)
                goto fail;
            free(name);
            if (peek(c) != '=') {
                fail(c, "expected '='");
                goto fail;
            }
            c->pos++;
            v = parse_value(c, depth + 1);
        }
        if (!v)
            goto fail;
        json_array_append_new(arr, v);
        if (peek(c) == ',') {
            c->pos++;
            continue;
        }
        if (peek(c) == ']') {
            c->pos++;
            return arr;
        }
        fail(c, "expected ',' or ']'");
        goto fail;
    }
fail:
    json_decref(arr);
    return NULL;
}

static json_t *parse_value(cursor *c, int depth)
{
    if (depth > MAX_DEPTH) {
        fail(c, "values nested too deeply");
        return NULL;
    }
    switch (peek(c)) {
    case '"': return parse_cstring(c);
    case '{': return parse_tuple(c, depth);
    case '[': return parse_list(c, depth);
    default:
        fail(c, "expected a value ('\"', '{' or '[')");
        return NULL;
    }
}

static tdb_mi_record *record_new(tdb_mi_kind kind, const char *line, size_t len)
{
    tdb_mi_record *r = tdb_xcalloc(1, sizeof(*r));
    r->kind = kind;
    r->token = -1;
    r->line = tdb_xstrndup(line, len);
    return r;
}

static tdb_mi_record *error_record(const char *line, size_t len, const cursor *c)
{
    tdb_mi_record *r = record_new(TDB_MI_ERROR, line, len);
    r->text = tdb_xasprintf("%s at column %zu", c->error ? c->error : "not an MI record",
                            c->error_pos + 1);
    r->text_len = strlen(r->text);
    return r;
}

static int is_prompt(const char *s, size_t len)
{
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    return len == 5 && memcmp(s, "(gdb)", 5) == 0;
}

tdb_mi_record *tdb_mi_parse_line(const char *line, size_t len)
{
    cursor c = {line, len, 0, NULL, 0};
    long token = -1;
    tdb_mi_record *r;

    if (len && line[len - 1] == '\r') /* tolerate "\r\n" */
        c.len = --len;
    if (is_prompt(line, len))
        return record_new(TDB_MI_PROMPT, line, len);

    if (c.pos < c.len && isdigit((unsigned char)line[c.pos])) {
        size_t start = c.pos;
        while (c.pos < c.len && isdigit((unsigned char)line[c.pos]))
            c.pos++;
        if (c.pos - start > 18) {
            fail(&c, "token too long");
            return error_record(line, len, &c);
        }
        /* By hand: LINE need not be NUL-terminated at LEN (strtol would
         * read on past an all-digit line), and 18 digits fit a long. */
        token = 0;
        for (size_t i = start; i < c.pos; i++)
            token = token * 10 + (line[i] - '0');
    }

    int ch = peek(&c);
    tdb_mi_kind kind;
    switch (ch) {
    case '^': kind = TDB_MI_RESULT; break;
    case '*': kind = TDB_MI_EXEC; break;
    case '+': kind = TDB_MI_STATUS; break;
    case '=': kind = TDB_MI_NOTIFY; break;
    case '~': kind = TDB_MI_CONSOLE; break;
    case '@': kind = TDB_MI_TARGET; break;
    case '&': kind = TDB_MI_LOG; break;
    default:
        fail(&c, "not an MI record");
        return error_record(line, len, &c);
    }
    c.pos++;

    if (kind == TDB_MI_CONSOLE || kind == TDB_MI_TARGET || kind == TDB_MI_LOG) {
        tdb_buf text = TDB_BUF_INIT;
        if (parse_cstring_raw(&c, &text) < 0 || (c.pos != c.len && !c.error)) {
            fail(&c, "junk after the c-string");
            tdb_buf_free(&text);
            return error_record(line, len, &c);
        }
        r = record_new(kind, line, len);
        r->token = token;
        r->text_len = text.len;
        r->text = tdb_buf_detach(&text);
        return r;
    }

    /* result-class / async-class */
    size_t start = c.pos;
    while (c.pos < c.len && (isalnum((unsigned char)line[c.pos]) || line[c.pos] == '-' ||
                             line[c.pos] == '_'))
        c.pos++;
    size_t class_len = c.pos - start;
    if (class_len == 0) {
        fail(&c, "missing record class");
        return error_record(line, len, &c);
    }
    json_t *results = json_object();
    if (peek(&c) == ',') {
        c.pos++;
        if (parse_results(&c, results, -1, 0) < 0) {
            json_decref(results);
            return error_record(line, len, &c);
        }
    } else if (c.pos != c.len) {
        fail(&c, "expected ',' or end of line");
        json_decref(results);
        return error_record(line, len, &c);
    }
    r = record_new(kind, line, len);
    r->token = token;
    r->klass = tdb_xstrndup(line + start, class_len);
    r->results = results;
    return r;
}

void tdb_mi_record_free(tdb_mi_record *r)
{
    if (!r)
        return;
    free(r->klass);
    json_decref(r->results);
    free(r->text);
    free(r->line);
    free(r);
}

tdb_mi_parser *tdb_mi_parser_new(void)
{
    return calloc(1, sizeof(tdb_mi_parser));
}

void tdb_mi_parser_free(tdb_mi_parser *p)
{
    if (!p)
        return;
    tdb_mi_record *r = p->head;
    while (r) {
        tdb_mi_record *next = r->next;
        tdb_mi_record_free(r);
        r = next;
    }
    tdb_buf_free(&p->partial);
    free(p);
}

static void enqueue(tdb_mi_parser *p, tdb_mi_record *r)
{
    r->next = NULL;
    if (p->tail)
        p->tail->next = r;
    else
        p->head = r;
    p->tail = r;
}

static void complete_line(tdb_mi_parser *p)
{
    if (p->overlong) {
        tdb_mi_record *r = record_new(TDB_MI_ERROR, "", 0);
        r->text = tdb_xasprintf("line longer than %u bytes dropped", TDB_MI_MAX_LINE);
        r->text_len = strlen(r->text);
        enqueue(p, r);
        p->overlong = 0;
    } else if (p->partial.len || p->partial.s) {
        const char *s = tdb_buf_str(&p->partial);
        size_t n = p->partial.len;
        if (n && s[n - 1] == '\r')
            n--;
        if (n) /* gdb never prints empty lines; skip them quietly */
            enqueue(p, tdb_mi_parse_line(s, n));
    }
    tdb_buf_reset(&p->partial);
}

void tdb_mi_parser_push(tdb_mi_parser *p, const char *data, size_t len)
{
    while (len) {
        const char *nl = memchr(data, '\n', len);
        size_t n = nl ? (size_t)(nl - data) : len;
        if (!p->overlong) {
            if (p->partial.len + n > TDB_MI_MAX_LINE) {
                p->overlong = 1;
                tdb_buf_free(&p->partial);
            } else {
                tdb_buf_add(&p->partial, data, n);
            }
        }
        if (!nl)
            return;
        complete_line(p);
        data = nl + 1;
        len -= n + 1;
    }
}

void tdb_mi_parser_finish(tdb_mi_parser *p)
{
    if (p->partial.len || p->overlong)
        complete_line(p);
}

tdb_mi_record *tdb_mi_parser_pop(tdb_mi_parser *p)
{
    tdb_mi_record *r = p->head;
    if (!r)
        return NULL;
    p->head = r->next;
    if (!p->head)
        p->tail = NULL;
    r->next = NULL;
    return r;
}

const char *tdb_mi_kind_name(tdb_mi_kind k)
{
    static const char *const names[] = {"result", "exec", "status", "notify", "console",
                                        "target", "log", "prompt", "error"};
    return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

json_t *tdb_mi_record_to_json(const tdb_mi_record *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string(tdb_mi_kind_name(r->kind)));
    if (r->token >= 0)
        json_object_set_new(o, "token", json_integer(r->token));
    switch (r->kind) {
    case TDB_MI_RESULT:
    case TDB_MI_EXEC:
    case TDB_MI_STATUS:
    case TDB_MI_NOTIFY:
        json_object_set_new(o, "class", json_string(r->klass));
        json_object_set(o, "results", r->results);
        break;
    case TDB_MI_CONSOLE:
    case TDB_MI_TARGET:
    case TDB_MI_LOG:
        json_object_set_new(o, "text", tdb_mi_json_bytes(r->text, r->text_len));
        break;
    case TDB_MI_ERROR:
        json_object_set_new(o, "line", tdb_mi_json_bytes(r->line, strlen(r->line)));
        json_object_set_new(o, "message", json_string(r->text));
        break;
    case TDB_MI_PROMPT:
        break;
    }
    return o;
}

const char *tdb_mi_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

void tdb_mi_quote(tdb_buf *b, const char *s)
{
    tdb_buf_addc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': tdb_buf_adds(b, "\\\""); break;
        case '\\': tdb_buf_adds(b, "\\\\"); break;
        case '\n': tdb_buf_adds(b, "\\n"); break;
        case '\t': tdb_buf_adds(b, "\\t"); break;
        case '\r': tdb_buf_adds(b, "\\r"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                tdb_buf_addf(b, "\\%03o", *p);
            else
                tdb_buf_addc(b, (char)*p);
        }
    }
    tdb_buf_addc(b, '"');
}

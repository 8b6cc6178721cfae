/*
 * vscode/jsonc.c: the JSONC reader, keeping every node's byte span (see
 * vscode/jsonc.h for the rules); the editor is vscode/jsonc_edit.c.
 */
#include "vscode/jsonc_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 256

/* ------------------------------------------------------------------ */
/* Positions */

static void position_of(const char *text, size_t len, size_t bom, size_t offset,
                        int *out_line, int *out_column)
{
    int line = 1, column = 1;
    if (offset > len)
        offset = len;
    for (size_t i = bom; i < offset; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n' || (c == '\r' && !(i + 1 < len && text[i + 1] == '\n'))) {
            line++;
            column = 1;
        } else if (c == '\r') {
            /* the \r of a \r\n: the \n ends the line */
        } else if ((c & 0xC0) != 0x80) {
            column++; /* one per character, not per UTF-8 byte */
        }
    }
    *out_line = line;
    *out_column = column;
}

void tdb_jsonc_position(const tdb_jsonc_doc *doc, size_t offset, int *out_line, int *out_column)
{
    position_of(doc->text, doc->len, doc->bom, offset, out_line, out_column);
}

/* ------------------------------------------------------------------ */
/* The reader */

typedef struct parser {
    const char *s;
    size_t len, pos;
    size_t bom;
    int depth;
    const char *name;
    tdb_error *err;
    int failed;
} parser;

static void node_free(tdb_jsonc_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n_items; i++)
        node_free(n->items[i]);
    free(n->items);
    free(n->key);
    free(n->string);
    free(n);
}

static void syntax_error(parser *p, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void syntax_error(parser *p, size_t at, const char *fmt, ...)
{
    char what[256];
    int line, column;
    va_list ap;

    if (p->failed)
        return;
    p->failed = 1;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    position_of(p->s, p->len, p->bom, at, &line, &column);
    tdb_error_set_exit(p->err, TDB_EXIT_FAIL, 0, "cannot parse '%s': line %d, column %d: %s",
                       p->name, line, column, what);
}

/* Describe the character at AT for a message: 'x', or "end of file". */
static const char *describe(parser *p, size_t at, char *buf, size_t size)
{
    if (at >= p->len)
        return "the end of the file";
    unsigned char c = (unsigned char)p->s[at];
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, size, "'%c'", c);
    else if (c == '\n' || c == '\r')
        snprintf(buf, size, "the end of the line");
    else if (c >= 0x80) {
        size_t n = 1;
        while (at + n < p->len && n < 4 && ((unsigned char)p->s[at + n] & 0xC0) == 0x80)
            n++;
        snprintf(buf, size, "'%.*s'", (int)n, p->s + at);
    } else
        snprintf(buf, size, "byte 0x%02x", c);
    return buf;
}

/* Skip whitespace and comments.  -1 on an unterminated block comment. */
static int skip_space(parser *p)
{
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
            p->pos++;
        } else if (c == '/' && p->pos + 1 < p->len && p->s[p->pos + 1] == '/') {
            while (p->pos < p->len && p->s[p->pos] != '\n' && p->s[p->pos] != '\r')
                p->pos++;
        } else if (c == '/' && p->pos + 1 < p->len && p->s[p->pos + 1] == '*') {
            size_t start = p->pos;
            p->pos += 2;
            for (;;) {
                if (p->pos + 1 >= p->len) {
                    syntax_error(p, start, "unterminated comment (a '/*' without '*/')");
                    return -1;
                }
                if (p->s[p->pos] == '*' && p->s[p->pos + 1] == '/') {
                    p->pos += 2;
                    break;
                }
                p->pos++;
            }
        } else {
            break;
        }
    }
    return 0;
}

static void utf8_put(tdb_buf *b, unsigned long cp)
{
    char out[4];
    size_t n;
    if (cp < 0x80) {
        out[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    tdb_buf_add(b, out, n);
}

static int hex4(const char *s, unsigned long *out)
{
    unsigned long v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned long)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned long)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned long)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

/* Parse the string at p->pos (a '"'); the decoded bytes go to OUT. */
static int parse_string(parser *p, tdb_buf *out)
{
    size_t start = p->pos;
    p->pos++;
    for (;;) {
        if (p->pos >= p->len || p->s[p->pos] == '\n' || p->s[p->pos] == '\r') {
            syntax_error(p, start, "unterminated string (a '\"' without its closing quote on the same line)");
            return -1;
        }
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '"') {
            p->pos++;
            return 0;
        }
        if (c < 0x20) {
            char d[32];
            syntax_error(p, p->pos, "%s inside a string (write it as an escape such as \\t)",
                         describe(p, p->pos, d, sizeof(d)));
            return -1;
        }
        if (c != '\\') {
            tdb_buf_addc(out, (char)c);
            p->pos++;
            continue;
        }
        size_t esc = p->pos;
        if (p->pos + 1 >= p->len) {
            syntax_error(p, start, "unterminated string (a '\"' without its closing quote on the same line)");
            return -1;
        }
        char e = p->s[p->pos + 1];
        p->pos += 2;
        switch (e) {
        case '"': tdb_buf_addc(out, '"'); break;
        case '\\': tdb_buf_addc(out, '\\'); break;
        case '/': tdb_buf_addc(out, '/'); break;
        case 'b': tdb_buf_addc(out, '\b'); break;
        case 'f': tdb_buf_addc(out, '\f'); break;
        case 'n': tdb_buf_addc(out, '\n'); break;
        case 'r': tdb_buf_addc(out, '\r'); break;
        case 't': tdb_buf_addc(out, '\t'); break;
        case 'u': {
            unsigned long cp, lo;
            if (p->pos + 4 > p->len || hex4(p->s + p->pos, &cp) < 0) {
                syntax_error(p, esc, "invalid escape in a string ('\\u' takes four hex digits)");
                return -1;
            }
            p->pos += 4;
            /* A surrogate pair is one character; a lone surrogate is kept
             * as its own code point rather than refused. */
            if (cp >= 0xD800 && cp < 0xDC00 && p->pos + 6 <= p->len && p->s[p->pos] == '\\' &&
                p->s[p->pos + 1] == 'u' && hex4(p->s + p->pos + 2, &lo) == 0 && lo >= 0xDC00 &&
                lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p->pos += 6;
            }
            utf8_put(out, cp);
            break;
        }
        default:
            if (e > 0x20 && e < 0x7f)
                syntax_error(p, esc, "invalid escape '\\%c' in a string", e);
            else
                syntax_error(p, esc, "invalid escape in a string");
            return -1;
        }
    }
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int parse_number(parser *p)
{
    size_t start = p->pos, i = p->pos;
    if (i < p->len && p->s[i] == '-')
        i++;
    if (i < p->len && p->s[i] == '0') {
        i++;
    } else if (i < p->len && is_digit(p->s[i])) {
        while (i < p->len && is_digit(p->s[i]))
            i++;
    } else {
        syntax_error(p, start, "invalid number");
        return -1;
    }
    if (i < p->len && p->s[i] == '.') {
        i++;
        if (i >= p->len || !is_digit(p->s[i])) {
            syntax_error(p, start, "invalid number (a digit must follow '.')");
            return -1;
        }
        while (i < p->len && is_digit(p->s[i]))
            i++;
    }
    if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
        i++;
        if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
            i++;
        if (i >= p->len || !is_digit(p->s[i])) {
            syntax_error(p, start, "invalid number (a digit must follow the exponent)");
            return -1;
        }
        while (i < p->len && is_digit(p->s[i]))
            i++;
    }
    p->pos = i;
    return 0;
}

static int is_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

static tdb_jsonc_node *parse_value(parser *p);

static tdb_jsonc_node *new_node(tdb_jsonc_type type, size_t start)
{
    tdb_jsonc_node *n = tdb_xcalloc(1, sizeof(*n));
    n->type = type;
    n->start = n->key_start = start;
    n->comma = TDB_JSONC_NONE;
    return n;
}

static void node_push(tdb_jsonc_node *parent, tdb_jsonc_node *child)
{
    parent->items = tdb_xrealloc(parent->items, (parent->n_items + 1) * sizeof(*parent->items));
    parent->items[parent->n_items++] = child;
}

/* Arrays and objects share the loop: elements or "key": value members,
 * separated by commas, a trailing comma allowed. */
static tdb_jsonc_node *parse_container(parser *p, int is_object)
{
    char close = is_object ? '}' : ']';
    tdb_jsonc_node *n = new_node(is_object ? TDB_JSONC_OBJECT : TDB_JSONC_ARRAY, p->pos);
    char d[32];

    if (++p->depth > MAX_DEPTH) {
        syntax_error(p, p->pos, "nesting deeper than %d levels", MAX_DEPTH);
        goto fail;
    }
    p->pos++;
    if (skip_space(p) < 0)
        goto fail;
    for (;;) {
        if (p->pos < p->len && p->s[p->pos] == close)
            break; /* empty, or after a trailing comma */
        tdb_jsonc_node *item;
        if (is_object) {
            size_t key_start = p->pos;
            tdb_buf key = TDB_BUF_INIT;
            if (p->pos >= p->len || p->s[p->pos] != '"') {
                syntax_error(p, p->pos, "expected a property name in double quotes, found %s",
                             describe(p, p->pos, d, sizeof(d)));
                goto fail;
            }
            if (parse_string(p, &key) < 0) {
                tdb_buf_free(&key);
                goto fail;
            }
            if (skip_space(p) < 0) {
                tdb_buf_free(&key);
                goto fail;
            }
            if (p->pos >= p->len || p->s[p->pos] != ':') {
                syntax_error(p, p->pos, "expected ':' after the property name, found %s",
                             describe(p, p->pos, d, sizeof(d)));
                tdb_buf_free(&key);
                goto fail;
            }
            p->pos++;
            if (skip_space(p) < 0) {
                tdb_buf_free(&key);
                goto fail;
            }
            item = parse_value(p);
            if (!item) {
                tdb_buf_free(&key);
                goto fail;
            }
            item->key_start = key_start;
            item->key_len = key.len;
            item->key = tdb_buf_detach(&key);
        } else {
            item = parse_value(p);
            if (!item)
                goto fail;
        }
        node_push(n, item);
        if (skip_space(p) < 0)
            goto fail;
        if (p->pos < p->len && p->s[p->pos] == ',') {
            item->comma = p->pos++;
            if (skip_space(p) < 0)
                goto fail;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == close)
            break;
        syntax_error(p, p->pos, "expected ',' or '%c' after %s, found %s", close,
                     is_object ? "a property value" : "an array element",
                     describe(p, p->pos, d, sizeof(d)));
        goto fail;
    }
    p->pos++;
    n->end = p->pos;
    p->depth--;
    return n;
fail:
    node_free(n);
    return NULL;
}

static tdb_jsonc_node *parse_value(parser *p)
{
    char d[32];
    if (p->pos >= p->len) {
        syntax_error(p, p->pos, "expected a value, found the end of the file");
        return NULL;
    }
    char c = p->s[p->pos];
    size_t start = p->pos;
    if (c == '{' || c == '[')
        return parse_container(p, c == '{');
    if (c == '"') {
        tdb_buf s = TDB_BUF_INIT;
        if (parse_string(p, &s) < 0) {
            tdb_buf_free(&s);
            return NULL;
        }
        tdb_jsonc_node *n = new_node(TDB_JSONC_STRING, start);
        n->string_len = s.len;
        n->string = tdb_buf_detach(&s);
        n->end = p->pos;
        return n;
    }
    if (c == '-' || is_digit(c)) {
        if (parse_number(p) < 0)
            return NULL;
        tdb_jsonc_node *n = new_node(TDB_JSONC_NUMBER, start);
        n->end = p->pos;
        return n;
    }
    if (is_word(c)) {
        size_t i = p->pos;
        while (i < p->len && is_word(p->s[i]))
            i++;
        size_t n_word = i - p->pos;
        tdb_jsonc_node *n = NULL;
        if (n_word == 4 && !memcmp(p->s + start, "true", 4)) {
            n = new_node(TDB_JSONC_BOOL, start);
            n->boolean = 1;
        } else if (n_word == 5 && !memcmp(p->s + start, "false", 5)) {
            n = new_node(TDB_JSONC_BOOL, start);
        } else if (n_word == 4 && !memcmp(p->s + start, "null", 4)) {
            n = new_node(TDB_JSONC_NULL, start);
        } else {
            syntax_error(p, start, "expected a value, found '%.*s'",
                         (int)(n_word > 40 ? 40 : n_word), p->s + start);
            return NULL;
        }
        p->pos = i;
        n->end = i;
        return n;
    }
    syntax_error(p, start, "expected a value, found %s", describe(p, start, d, sizeof(d)));
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Documents */

tdb_jsonc_doc *tdb_jsonc_parse(const char *text, size_t len, const char *name, tdb_error *err)
{
    tdb_jsonc_doc *doc = tdb_xcalloc(1, sizeof(*doc));
    parser p = {0};

    doc->text = tdb_xmalloc(len + 1);
    memcpy(doc->text, text, len);
    doc->text[len] = '\0';
    doc->len = len;
    doc->name = tdb_xstrdup(name);
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
        doc->bom = 3;
    p.s = doc->text;
    p.len = len;
    p.pos = p.bom = doc->bom;
    p.name = name;
    p.err = err;
    if (skip_space(&p) < 0)
        goto fail;
    if (p.pos < len) {
        doc->root = parse_value(&p);
        if (!doc->root)
            goto fail;
        if (skip_space(&p) < 0)
            goto fail;
        if (p.pos < len) {
            char d[32];
            syntax_error(&p, p.pos, "expected the end of the file after the top-level value, found %s",
                         describe(&p, p.pos, d, sizeof(d)));
            goto fail;
        }
    }
    tdb_jsonc_detect_layout(doc);
    return doc;
fail:
    tdb_jsonc_doc_free(doc);
    return NULL;
}

tdb_jsonc_doc *tdb_jsonc_load(const char *path, const char *name, tdb_error *err)
{
    size_t len = 0;
    tdb_error local = {0};
    tdb_jsonc_doc *doc;

    if (!name)
        name = path;
    char *text = tdb_read_regular_file(path, name, &len, &local);
    if (!text) {
        if (local.code != ENOENT) {
            if (err && !err->set)
                *err = local;
            return NULL;
        }
        doc = tdb_jsonc_parse("", 0, name, err);
        return doc;
    }
    doc = tdb_jsonc_parse(text, len, name, err);
    free(text);
    if (doc)
        doc->existed = 1;
    return doc;
}

void tdb_jsonc_doc_free(tdb_jsonc_doc *doc)
{
    if (!doc)
        return;
    node_free(doc->root);
    tdb_jsonc_edits_free(&doc->edits);
    json_decref(doc->new_members);
    free(doc->text);
    free(doc->name);
    free(doc);
}

const tdb_jsonc_node *tdb_jsonc_root(const tdb_jsonc_doc *doc)
{
    return doc->root;
}

const char *tdb_jsonc_text(const tdb_jsonc_doc *doc, size_t *out_len)
{
    if (out_len)
        *out_len = doc->len;
    return doc->text;
}

int tdb_jsonc_existed(const tdb_jsonc_doc *doc)
{
    return doc->existed;
}

const tdb_jsonc_node *tdb_jsonc_get(const tdb_jsonc_node *obj, const char *key)
{
    if (!obj || obj->type != TDB_JSONC_OBJECT)
        return NULL;
    size_t len = strlen(key);
    for (size_t i = obj->n_items; i > 0; i--) {
        const tdb_jsonc_node *m = obj->items[i - 1];
        if (m->key_len == len && !memcmp(m->key, key, len))
            return m;
    }
    return NULL;
}

json_t *tdb_jsonc_to_json(const tdb_jsonc_doc *doc, const tdb_jsonc_node *n)
{
    switch (n->type) {
    case TDB_JSONC_NULL:
        return json_null();
    case TDB_JSONC_BOOL:
        return json_boolean(n->boolean);
    case TDB_JSONC_STRING:
        return json_stringn_nocheck(n->string, n->string_len);
    case TDB_JSONC_NUMBER: {
        json_t *v = json_loadb(doc->text + n->start, n->end - n->start, JSON_DECODE_ANY, NULL);
        if (!v) { /* an integer too large for jansson */
            char *s = tdb_xstrndup(doc->text + n->start, n->end - n->start);
            v = json_real(strtod(s, NULL));
            free(s);
        }
        return v;
    }
    case TDB_JSONC_ARRAY: {
        json_t *a = json_array();
        for (size_t i = 0; i < n->n_items; i++)
            json_array_append_new(a, tdb_jsonc_to_json(doc, n->items[i]));
        return a;
    }
    case TDB_JSONC_OBJECT: {
        json_t *o = json_object();
        for (size_t i = 0; i < n->n_items; i++)
            json_object_setn_new_nocheck(o, n->items[i]->key, n->items[i]->key_len,
                                         tdb_jsonc_to_json(doc, n->items[i]));
        return o;
    }
    }
    return NULL;
}

/*
 * vscode/jsonc_edit.c: the splicing editor of JSONC documents (contract in
 * vscode/jsonc.h): the layout of the existing text (line ending,
 * indentation unit), new values rendered in that layout, and the edits
 * the update calls queue, applied in one pass by tdb_jsonc_render().
 */
#include "vscode/jsonc_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Arrays of scalars no longer than this are written on one line. */
#define INLINE_ARRAY_MAX 72

/* ------------------------------------------------------------------ */
/* Layout of the existing text */

static size_t line_start(const tdb_jsonc_doc *doc, size_t pos)
{
    while (pos > doc->bom && doc->text[pos - 1] != '\n' && doc->text[pos - 1] != '\r')
        pos--;
    return pos;
}

/* Nonzero when only spaces and tabs precede POS on its line. */
static int starts_line(const tdb_jsonc_doc *doc, size_t pos)
{
    for (size_t i = line_start(doc, pos); i < pos; i++)
        if (doc->text[i] != ' ' && doc->text[i] != '\t')
            return 0;
    return 1;
}

/* The spaces and tabs that start POS's line (new string). */
static char *line_indent(const tdb_jsonc_doc *doc, size_t pos)
{
    size_t s = line_start(doc, pos), e = s;
    while (e < doc->len && (doc->text[e] == ' ' || doc->text[e] == '\t'))
        e++;
    return tdb_xstrndup(doc->text + s, e - s);
}

/* The position of the line end (the \r or \n, or the text's end) at or
 * after POS. */
static size_t line_end(const tdb_jsonc_doc *doc, size_t pos)
{
    while (pos < doc->len && doc->text[pos] != '\n' && doc->text[pos] != '\r')
        pos++;
    return pos;
}

/* Past the line ending at POS (a line_end() result). */
static size_t past_eol(const tdb_jsonc_doc *doc, size_t pos)
{
    if (pos < doc->len && doc->text[pos] == '\r')
        pos++;
    if (pos < doc->len && doc->text[pos] == '\n')
        pos++;
    return pos;
}

/* From POS, skip spaces, tabs and comments that stay on this line (a line
 * comment runs to the end of the line).  Returns where that stops: a line
 * end, the text's end, or the next token on this line. */
static size_t skip_same_line(const tdb_jsonc_doc *doc, size_t pos)
{
    const char *s = doc->text;
    for (;;) {
        while (pos < doc->len && (s[pos] == ' ' || s[pos] == '\t'))
            pos++;
        if (pos + 1 < doc->len && s[pos] == '/' && s[pos + 1] == '/')
            return line_end(doc, pos);
        if (pos + 1 < doc->len && s[pos] == '/' && s[pos + 1] == '*') {
            size_t e = pos + 2;
            while (e + 1 < doc->len && !(s[e] == '*' && s[e + 1] == '/')) {
                if (s[e] == '\n' || s[e] == '\r')
                    return pos; /* runs onto the next line: a token of its own */
                e++;
            }
            pos = e + 2;
            continue;
        }
        return pos;
    }
}

static int at_line_end(const tdb_jsonc_doc *doc, size_t pos)
{
    return pos >= doc->len || doc->text[pos] == '\n' || doc->text[pos] == '\r';
}

void tdb_jsonc_detect_layout(tdb_jsonc_doc *doc)
{
    const char *nl = memchr(doc->text, '\n', doc->len);
    strcpy(doc->eol, nl && nl > doc->text && nl[-1] == '\r' ? "\r\n" : "\n");
    strcpy(doc->unit, "    "); /* what VS Code writes by default */
    const tdb_jsonc_node *r = doc->root;
    if (!r || (r->type != TDB_JSONC_OBJECT && r->type != TDB_JSONC_ARRAY))
        return;
    /* The first item that starts a line, against its container's line. */
    for (size_t i = 0; i < r->n_items; i++) {
        size_t at = r->items[i]->key_start;
        if (!starts_line(doc, at))
            continue;
        char *outer = line_indent(doc, r->start), *inner = line_indent(doc, at);
        size_t lo = strlen(outer), li = strlen(inner);
        if (li > lo && li - lo < sizeof(doc->unit) && !strncmp(outer, inner, lo))
            strcpy(doc->unit, inner + lo);
        free(outer);
        free(inner);
        return;
    }
}

/* ------------------------------------------------------------------ */
/* Writing JSON text */

static void render_string(tdb_buf *b, const char *s, size_t n)
{
    tdb_buf_addc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': tdb_buf_adds(b, "\\\""); break;
        case '\\': tdb_buf_adds(b, "\\\\"); break;
        case '\b': tdb_buf_adds(b, "\\b"); break;
        case '\f': tdb_buf_adds(b, "\\f"); break;
        case '\n': tdb_buf_adds(b, "\\n"); break;
        case '\r': tdb_buf_adds(b, "\\r"); break;
        case '\t': tdb_buf_adds(b, "\\t"); break;
        default:
            if (c < 0x20)
                tdb_buf_addf(b, "\\u%04x", c);
            else
                tdb_buf_addc(b, (char)c);
        }
    }
    tdb_buf_addc(b, '"');
}

static int is_scalar(json_t *v)
{
    return !json_is_object(v) && !json_is_array(v);
}

static void render_scalar(tdb_buf *b, json_t *v)
{
    if (json_is_string(v)) {
        render_string(b, json_string_value(v), json_string_length(v));
    } else if (json_is_integer(v)) {
        tdb_buf_addf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    } else {
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
        tdb_buf_adds(b, s ? s : "null");
        free(s);
    }
}

void tdb_jsonc_render_json(tdb_buf *b, json_t *v, const char *indent, const char *unit,
                           const char *eol)
{
    if (is_scalar(v)) {
        render_scalar(b, v);
        return;
    }
    size_t n = json_is_array(v) ? json_array_size(v) : json_object_size(v);
    if (n == 0) {
        tdb_buf_adds(b, json_is_array(v) ? "[]" : "{}");
        return;
    }
    if (json_is_array(v)) {
        /* Short arrays of scalars read best on one line. */
        tdb_buf line = TDB_BUF_INIT;
        size_t i;
        json_t *item;
        int inline_ok = 1;
        json_array_foreach(v, i, item) {
            if (!is_scalar(item)) {
                inline_ok = 0;
                break;
            }
            tdb_buf_adds(&line, i ? ", " : "[");
            render_scalar(&line, item);
        }
        tdb_buf_addc(&line, ']');
        if (inline_ok && line.len <= INLINE_ARRAY_MAX) {
            tdb_buf_add(b, line.s, line.len);
            tdb_buf_free(&line);
            return;
        }
        tdb_buf_free(&line);
    }
    char *inner = tdb_xasprintf("%s%s", indent, unit);
    tdb_buf_addc(b, json_is_array(v) ? '[' : '{');
    if (json_is_array(v)) {
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item) {
            tdb_buf_adds(b, i ? "," : "");
            tdb_buf_addf(b, "%s%s", eol, inner);
            tdb_jsonc_render_json(b, item, inner, unit, eol);
        }
    } else {
        const char *key;
        size_t key_len;
        json_t *item;
        int first = 1;
        json_object_keylen_foreach(v, key, key_len, item) {
            tdb_buf_adds(b, first ? "" : ",");
            first = 0;
            tdb_buf_addf(b, "%s%s", eol, inner);
            render_string(b, key, key_len);
            tdb_buf_adds(b, ": ");
            tdb_jsonc_render_json(b, item, inner, unit, eol);
        }
    }
    tdb_buf_addf(b, "%s%s%c", eol, indent, json_is_array(v) ? ']' : '}');
    free(inner);
}

/* ------------------------------------------------------------------ */
/* The editor */

static void edits_add(tdb_jsonc_edit_list *l, size_t at, size_t del, char *ins)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = tdb_xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    tdb_jsonc_edit *s = &l->v[l->n];
    s->at = at;
    s->del = del;
    s->ins = ins ? ins : tdb_xstrdup("");
    s->seq = l->n++;
}

/* Drop the tdb_jsonc_edit_list from index MARK on (a call that failed). */
static void edits_truncate(tdb_jsonc_edit_list *l, size_t mark)
{
    while (l->n > mark)
        free(l->v[--l->n].ins);
}

void tdb_jsonc_edits_free(tdb_jsonc_edit_list *l)
{
    edits_truncate(l, 0);
    free(l->v);
    l->v = NULL;
    l->cap = 0;
}

static void update_error(const tdb_jsonc_doc *doc, tdb_error *err, size_t at, const char *what)
{
    int line, column;
    tdb_jsonc_position(doc, at, &line, &column);
    tdb_error_set_exit(err, TDB_EXIT_FAIL, 0, "cannot update '%s': line %d, column %d: %s",
                       doc->name, line, column, what);
}

/* The indentation for items of container C. */
static char *item_indent(const tdb_jsonc_doc *doc, const tdb_jsonc_node *c)
{
    if (c->n_items && starts_line(doc, c->items[0]->key_start))
        return line_indent(doc, c->items[0]->key_start);
    char *outer = line_indent(doc, c->start);
    char *s = tdb_xasprintf("%s%s", outer, doc->unit);
    free(outer);
    return s;
}

/* Splices appending the N rendered ITEMS (each laid out for INDENT) at the
 * end of container C: each on a line of its own after the last item (and
 * after a comment ending that item's line), the comma style kept. */
static void append_items(const tdb_jsonc_doc *doc, tdb_jsonc_edit_list *out, const tdb_jsonc_node *c,
                         char **items, size_t n, const char *indent)
{
    tdb_buf ins = TDB_BUF_INIT;
    char *outer = line_indent(doc, c->start);
    size_t close = c->end - 1;

    if (n == 0)
        goto done;
    if (c->n_items == 0) {
        size_t i = c->start + 1;
        while (i < close && strchr(" \t\r\n\v\f", doc->text[i]))
            i++;
        if (i == close) { /* "[]" or blank lines: lay it out anew */
            for (size_t k = 0; k < n; k++)
                tdb_buf_addf(&ins, "%s%s%s%s", k ? "," : "", doc->eol, indent, items[k]);
            tdb_buf_addf(&ins, "%s%s", doc->eol, outer);
            edits_add(out, c->start + 1, close - (c->start + 1), tdb_buf_detach(&ins));
        } else if (starts_line(doc, close)) {
            /* only comments inside: the items go below them */
            for (size_t k = 0; k < n; k++)
                tdb_buf_addf(&ins, "%s%s%s%s", indent, items[k], k + 1 < n ? "," : "", doc->eol);
            edits_add(out, line_start(doc, close), 0, tdb_buf_detach(&ins));
        } else {
            for (size_t k = 0; k < n; k++)
                tdb_buf_addf(&ins, "%s%s%s%s", k ? "," : "", doc->eol, indent, items[k]);
            tdb_buf_addf(&ins, "%s%s", doc->eol, outer);
            edits_add(out, close, 0, tdb_buf_detach(&ins));
        }
        goto done;
    }

    const tdb_jsonc_node *last = c->items[c->n_items - 1];
    int trailing = last->comma != TDB_JSONC_NONE;
    size_t after = trailing ? last->comma + 1 : last->end;
    size_t stop = skip_same_line(doc, after);
    size_t at = after, del = 0;
    int own_line_for_close = 0;

    if (!trailing)
        edits_add(out, last->end, 0, tdb_xstrdup(","));
    if (at_line_end(doc, stop)) {
        at = stop; /* after a comment that ends the last item's line */
    } else if (stop == close) {
        /* "...}]" on one line: the bracket moves to a line of its own */
        own_line_for_close = 1;
        at = close;
        while (at > after && (doc->text[at - 1] == ' ' || doc->text[at - 1] == '\t'))
            at--;
        del = close - at;
    }
    for (size_t k = 0; k < n; k++)
        tdb_buf_addf(&ins, "%s%s%s%s", k ? "," : "", doc->eol, indent, items[k]);
    if (trailing)
        tdb_buf_addc(&ins, ',');
    if (own_line_for_close)
        tdb_buf_addf(&ins, "%s%s", doc->eol, outer);
    edits_add(out, at, del, tdb_buf_detach(&ins));
done:
    tdb_buf_free(&ins);
    free(outer);
}

/* Splices removing item I of container C; REMOVED flags every item being
 * removed. */
static void remove_item(const tdb_jsonc_doc *doc, tdb_jsonc_edit_list *out, const tdb_jsonc_node *c, size_t i,
                        const unsigned char *removed)
{
    const tdb_jsonc_node *it = c->items[i];
    size_t s = it->key_start, e = it->end;

    if (it->comma != TDB_JSONC_NONE) {
        /* Whatever sits between the item and its comma (a comment) is the
         * user's: the comma goes on its own then, and the comment stays. */
        size_t gap = it->comma - it->end;
        if (strspn(doc->text + it->end, " \t\r\n\v\f") >= gap)
            e = it->comma + 1;
        else
            edits_add(out, it->comma, 1, NULL);
    } else {
        /* The last item, no trailing comma: the comma before it goes too,
         * unless the item before it goes (and takes its comma along). */
        size_t k = i;
        while (k > 0 && removed[k - 1])
            k--;
        if (k > 0)
            edits_add(out, c->items[k - 1]->comma, 1, NULL);
    }
    /* An item on lines of its own takes those lines with it. */
    size_t rest = e + strspn(doc->text + e, " \t");
    if (starts_line(doc, s) && at_line_end(doc, rest)) {
        s = line_start(doc, s);
        e = past_eol(doc, rest);
    } else if (it->comma != TDB_JSONC_NONE) {
        e = rest; /* "a, X, b" -> "a, b" */
    }
    edits_add(out, s, e - s, NULL);
}

/* The identity of a new entry (borrowed), or NULL. */
static json_t *entry_id(json_t *entry, const char *id_key)
{
    json_t *id = json_object_get(entry, id_key);
    return json_is_string(id) ? id : NULL;
}

/* The identity of an existing element, or NULL. */
static const tdb_jsonc_node *node_id(const tdb_jsonc_node *n, const char *id_key)
{
    const tdb_jsonc_node *v = n->type == TDB_JSONC_OBJECT ? tdb_jsonc_get(n, id_key) : NULL;
    return v && v->type == TDB_JSONC_STRING ? v : NULL;
}

/* Byte for byte: a name with a NUL byte in it is another name. */
static int same_id(const tdb_jsonc_node *id, json_t *eid)
{
    return id && eid && id->string_len == json_string_length(eid) &&
           !memcmp(id->string, json_string_value(eid), id->string_len);
}

static int listed(const tdb_jsonc_node *id, const char *const *list)
{
    for (; id && list && *list; list++)
        if (id->string_len == strlen(*list) && !memcmp(id->string, *list, id->string_len))
            return 1;
    return 0;
}

static json_t *pending_members(tdb_jsonc_doc *doc)
{
    if (!doc->new_members)
        doc->new_members = json_object();
    return doc->new_members;
}

static int root_is_object(const tdb_jsonc_doc *doc, tdb_error *err)
{
    if (doc->root && doc->root->type != TDB_JSONC_OBJECT) {
        update_error(doc, err, doc->root->start,
                     "the top-level value is not an object (VS Code expects { ... })");
        return 0;
    }
    return 1;
}

int tdb_jsonc_ensure_member(tdb_jsonc_doc *doc, const char *key, json_t *value, tdb_error *err)
{
    if (!root_is_object(doc, err))
        return -1;
    if (tdb_jsonc_get(doc->root, key) || json_object_get(pending_members(doc), key))
        return 0;
    json_object_set(doc->new_members, key, value);
    return 0;
}

/* Render ENTRY laid out for the line of existing item IT, as a tdb_jsonc_edit
 * replacing IT. */
static void replace_item(const tdb_jsonc_doc *doc, tdb_jsonc_edit_list *out, const tdb_jsonc_node *it,
                         json_t *entry)
{
    tdb_buf b = TDB_BUF_INIT;
    char *ind = line_indent(doc, it->start);
    tdb_jsonc_render_json(&b, entry, ind, doc->unit, doc->eol);
    free(ind);
    edits_add(out, it->start, it->end - it->start, tdb_buf_detach(&b));
}

int tdb_jsonc_update_array(tdb_jsonc_doc *doc, const char *array_key, const char *id_key,
                           json_t *entries, const char *const *remove, tdb_error *err)
{
    const tdb_jsonc_node *arr;
    size_t mark = doc->edits.n;
    size_t n_entries = json_array_size(entries);
    unsigned char *used = NULL, *removed = NULL;
    char **pending = NULL, *indent = NULL;
    size_t n_pending = 0;
    int rc = -1;

    if (!root_is_object(doc, err))
        return -1;
    arr = tdb_jsonc_get(doc->root, array_key);
    if (!arr && n_entries == 0)
        return 0; /* nothing to add, nothing to remove */
    if (!arr) {
        json_t *pm = pending_members(doc);
        json_t *a = json_object_get(pm, array_key);
        if (!a) {
            a = json_array();
            json_object_set_new(pm, array_key, a);
        }
        json_array_extend(a, entries);
        return 0;
    }
    if (arr->type != TDB_JSONC_ARRAY) {
        char what[128];
        snprintf(what, sizeof(what), "\"%s\" is not an array", array_key);
        update_error(doc, err, arr->start, what);
        return -1;
    }

    used = tdb_xcalloc(n_entries + 1, 1);
    removed = tdb_xcalloc(arr->n_items + 1, 1);
    pending = tdb_xcalloc(n_entries + 1, sizeof(*pending));

    /* 1. Same identity: replace the first, remove later duplicates. */
    for (size_t i = 0; i < arr->n_items; i++) {
        const tdb_jsonc_node *it = arr->items[i];
        const tdb_jsonc_node *id = node_id(it, id_key);
        size_t j;
        if (!id)
            continue;
        for (j = 0; j < n_entries; j++)
            if (same_id(id, entry_id(json_array_get(entries, j), id_key)))
                break;
        if (j < n_entries && !used[j]) {
            used[j] = 1;
            replace_item(doc, &doc->edits, it, json_array_get(entries, j));
        } else if (j < n_entries || listed(id, remove)) {
            removed[i] = 1;
        }
    }
    /* 2. New entries take the places of removed items first, so that a
     * removal and an addition make one replacement in place; 3. the rest
     * are appended; 4. removed items left over go. */
    indent = item_indent(doc, arr);
    size_t slot = 0;
    for (size_t j = 0; j < n_entries; j++) {
        if (used[j])
            continue;
        json_t *e = json_array_get(entries, j);
        while (slot < arr->n_items && !removed[slot])
            slot++;
        if (slot < arr->n_items) {
            removed[slot] = 0;
            replace_item(doc, &doc->edits, arr->items[slot], e);
            slot++;
        } else {
            tdb_buf b = TDB_BUF_INIT;
            tdb_jsonc_render_json(&b, e, indent, doc->unit, doc->eol);
            pending[n_pending++] = tdb_buf_detach(&b);
        }
    }
    append_items(doc, &doc->edits, arr, pending, n_pending, indent);
    for (size_t i = 0; i < arr->n_items; i++)
        if (removed[i])
            remove_item(doc, &doc->edits, arr, i, removed);

    /* Splices must not overlap: check, so that a bug shows as an error
     * rather than as a damaged file. */
    for (size_t a = mark; a < doc->edits.n; a++)
        for (size_t b = mark; b < doc->edits.n; b++) {
            const tdb_jsonc_edit *x = &doc->edits.v[a], *y = &doc->edits.v[b];
            if (a != b && x->at < y->at && y->at < x->at + x->del) {
                update_error(doc, err, y->at, "internal error: overlapping edits (please report)");
                goto cleanup;
            }
        }
    rc = 0;
cleanup:
    if (rc < 0)
        edits_truncate(&doc->edits, mark);
    for (size_t i = 0; i < n_pending; i++)
        free(pending[i]);
    free(pending);
    free(indent);
    free(removed);
    free(used);
    return rc;
}

static int splice_cmp(const void *a, const void *b)
{
    const tdb_jsonc_edit *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    if ((x->del == 0) != (y->del == 0)) /* an insert before a replacement at one offset */
        return x->del == 0 ? -1 : 1;
    return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

char *tdb_jsonc_render(const tdb_jsonc_doc *doc, size_t *out_len)
{
    tdb_jsonc_edit_list all = {0};
    tdb_buf out = TDB_BUF_INIT;
    size_t pos = 0;

    for (size_t i = 0; i < doc->edits.n; i++)
        edits_add(&all, doc->edits.v[i].at, doc->edits.v[i].del, tdb_xstrdup(doc->edits.v[i].ins));
    /* New members of the root object: appended to it, or a new document
     * after whatever comments the file holds. */
    if (doc->new_members && json_object_size(doc->new_members)) {
        if (doc->root) {
            size_t nm = json_object_size(doc->new_members), k = 0;
            char **items = tdb_xcalloc(nm, sizeof(*items));
            char *indent = item_indent(doc, doc->root);
            const char *key;
            json_t *v;
            json_object_foreach(doc->new_members, key, v) {
                tdb_buf b = TDB_BUF_INIT;
                render_string(&b, key, strlen(key));
                tdb_buf_adds(&b, ": ");
                tdb_jsonc_render_json(&b, v, indent, doc->unit, doc->eol);
                items[k++] = tdb_buf_detach(&b);
            }
            append_items(doc, &all, doc->root, items, nm, indent);
            for (k = 0; k < nm; k++)
                free(items[k]);
            free(items);
            free(indent);
        } else {
            tdb_buf b = TDB_BUF_INIT;
            if (doc->len > doc->bom && doc->text[doc->len - 1] != '\n' &&
                doc->text[doc->len - 1] != '\r')
                tdb_buf_adds(&b, doc->eol);
            tdb_jsonc_render_json(&b, doc->new_members, "", doc->unit, doc->eol);
            tdb_buf_adds(&b, doc->eol);
            edits_add(&all, doc->len, 0, tdb_buf_detach(&b));
        }
    }
    if (all.n) /* qsort(NULL, 0, ...) is undefined */
        qsort(all.v, all.n, sizeof(*all.v), splice_cmp);
    for (size_t i = 0; i < all.n; i++) {
        const tdb_jsonc_edit *sp = &all.v[i];
        if (sp->at > pos)
            tdb_buf_add(&out, doc->text + pos, sp->at - pos);
        tdb_buf_adds(&out, sp->ins);
        if (sp->at + sp->del > pos)
            pos = sp->at + sp->del;
    }
    if (pos < doc->len)
        tdb_buf_add(&out, doc->text + pos, doc->len - pos);
    tdb_jsonc_edits_free(&all);
    if (out_len)
        *out_len = out.len;
    if (!out.s)
        return tdb_xstrdup("");
    return tdb_buf_detach(&out);
}

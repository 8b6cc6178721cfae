/*
 * fuzz_jsonc.c: the JSONC reader and editor (src/vscode/jsonc*.c) against
 * arbitrary bytes taken as a launch.json.
 *
 * FUZZ_SOURCES: src/vscode/jsonc.c src/vscode/jsonc_edit.c src/base/common.c
 * FUZZ_SEEDS: tests/fixtures/vscode *.json
 *
 * What must hold for any input (in a heap block of exactly its size, so
 * ASan sees a read past it):
 *  - parsing either fails with a "cannot parse" message or gives nodes
 *    whose spans lie inside the text, keys at a '"', commas at a ',';
 *  - rendering without edits gives the input back, byte for byte;
 *  - editing as 'tdebug vscode' does (replace and add entries, remove
 *    stale ones) either refuses with a message or gives text that parses,
 *    that a second identical edit leaves unchanged, and that still holds,
 *    byte for byte, every element of "configurations" and "compounds" that
 *    is not tdebug's to replace or remove.
 */
#include "fuzz.h"

#include "base/common.h"
#include "vscode/jsonc.h"

#include <string.h>

static const char *const stale[] = {"tdebug: stale entry", NULL};

static void check_spans(const tdb_jsonc_node *n, const char *text, size_t len)
{
    TDB_FUZZ_CHECK(n->start <= n->end && n->end <= len, "a span outside the text");
    TDB_FUZZ_CHECK(n->key_start <= n->start, "a key after its value");
    if (n->key)
        TDB_FUZZ_CHECK(text[n->key_start] == '"', "a key that does not start at a quote");
    if (n->comma != TDB_JSONC_NONE)
        TDB_FUZZ_CHECK(n->comma < len && text[n->comma] == ',', "a comma that is not one");
    if (n->type == TDB_JSONC_STRING)
        TDB_FUZZ_CHECK(n->string && n->string[n->string_len] == '\0', "an unterminated string");
    for (size_t i = 0; i < n->n_items; i++)
        check_spans(n->items[i], text, len);
}

/* The entries 'tdebug vscode' would write, in miniature (new references). */
static json_t *entries(const char *what)
{
    if (!strcmp(what, "configurations"))
        return json_pack("[{s:s, s:s, s:s, s:[s, s]}, {s:s, s:s, s:s, s:{s:s, s:i}}]", "name",
                         "tdebug: a.py (C++, gdb)", "type", "cppdbg", "request", "launch", "args",
                         "-c", "x\"y\\z\u00e9", "name", "tdebug: a.py (Python, debugpy)", "type",
                         "debugpy", "request", "attach", "connect", "host", "127.0.0.1", "port",
                         5678);
    return json_pack("[{s:s, s:[s, s], s:b}]", "name", "tdebug: a.py (Python + C++)",
                     "configurations", "tdebug: a.py (C++, gdb)", "tdebug: a.py (Python, debugpy)",
                     "stopAll", 1);
}

/* Apply the edits to TEXT; the new text (new) or NULL when refused. */
static char *edit(const char *text, size_t len, size_t *out_len)
{
    static const char *const arrays[] = {"configurations", "compounds"};
    tdb_error err = {0};
    tdb_jsonc_doc *doc = tdb_jsonc_parse(text, len, "launch.json", &err);
    json_t *version = json_string("0.2.0");
    char *out = NULL;
    int ok = doc != NULL;

    if (doc && tdb_jsonc_ensure_member(doc, "version", version, &err) < 0)
        ok = 0;
    for (size_t a = 0; ok && a < 2; a++) {
        json_t *e = entries(arrays[a]);
        if (tdb_jsonc_update_array(doc, arrays[a], "name", e, stale, &err) < 0)
            ok = 0;
        json_decref(e);
    }
    if (ok)
        out = tdb_jsonc_render(doc, out_len);
    else if (doc)
        TDB_FUZZ_CHECK(strstr(err.msg, "cannot update") == err.msg, "a refusal without its message");
    json_decref(version);
    tdb_jsonc_doc_free(doc);
    return out;
}

/* Is item IT of an edited array tdebug's to replace or remove? */
static int tdebugs(const tdb_jsonc_node *it)
{
    const tdb_jsonc_node *id = tdb_jsonc_get(it, "name");
    if (!id || id->type != TDB_JSONC_STRING)
        return 0;
    static const char *const own[] = {"tdebug: a.py (C++, gdb)", "tdebug: a.py (Python, debugpy)",
                                      "tdebug: a.py (Python + C++)", "tdebug: stale entry"};
    for (size_t i = 0; i < sizeof(own) / sizeof(*own); i++)
        if (id->string_len == strlen(own[i]) && !memcmp(id->string, own[i], id->string_len))
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    tdb_error err = {0};
    tdb_jsonc_doc *doc = tdb_jsonc_parse(text, size, "launch.json", &err);
    size_t out_len = 0, again_len = 0;
    char *out = NULL, *again = NULL;

    if (!doc) {
        TDB_FUZZ_CHECK(strstr(err.msg, "cannot parse 'launch.json': line ") == err.msg,
                       "a parse error without its position");
        return 0;
    }
    const tdb_jsonc_node *root = tdb_jsonc_root(doc);
    if (root) {
        check_spans(root, text, size);
        json_decref(tdb_jsonc_to_json(doc, root));
    }
    size_t same_len;
    char *same = tdb_jsonc_render(doc, &same_len);
    TDB_FUZZ_CHECK(same_len == size && !memcmp(same, text, size), "rendering changed the text");
    free(same);

    out = edit(text, size, &out_len);
    if (out) {
        tdb_error perr = {0};
        tdb_jsonc_doc *edited = tdb_jsonc_parse(out, out_len, "launch.json", &perr);
        TDB_FUZZ_CHECK(edited != NULL, "the edited text does not parse");
        tdb_jsonc_doc_free(edited);
        again = edit(out, out_len, &again_len);
        TDB_FUZZ_CHECK(again && again_len == out_len && !memcmp(again, out, out_len),
                       "a second identical edit changed the text");
        /* Every element that is not tdebug's is still there, byte for byte. */
        static const char *const arrays[] = {"configurations", "compounds"};
        for (size_t a = 0; a < 2; a++) {
            const tdb_jsonc_node *arr = tdb_jsonc_get(root, arrays[a]);
            for (size_t i = 0; arr && arr->type == TDB_JSONC_ARRAY && i < arr->n_items; i++) {
                const tdb_jsonc_node *it = arr->items[i];
                if (tdebugs(it) || it->end == it->start)
                    continue;
                TDB_FUZZ_CHECK(memmem(out, out_len, text + it->start, it->end - it->start),
                               "an element that is not tdebug's was lost");
            }
        }
    }
    free(out);
    free(again);
    tdb_jsonc_doc_free(doc);
    return 0;
}

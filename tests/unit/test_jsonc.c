/*
 * test_jsonc.c: the JSONC reader and editor against the files in
 * tests/fixtures/vscode/.
 *
 * Fixtures are data.  Every NAME.json there is read as a launch.json (or, for
 * tasks-*.json, a tasks.json) and edited with edits-launch.jsonc (or
 * edits-tasks.jsonc; remove-*.json get edits-remove.jsonc, which only
 * removes); the result must equal NAME.expected.json byte for
 * byte, or, when NAME.err exists, reading or editing must fail with exactly
 * the message in it.  On top of that, for every fixture: a second run
 * changes nothing, everything that is not tdebug's (other entries, inputs,
 * comments, formatting) is still there in order, and the span of every
 * value, re-read on its own, gives the same value.  A new case is a new
 * file:
 *
 *   build/tests/test_jsonc --dump tests/fixtures/vscode/NAME.json > NAME.expected.json
 *
 * then read the result before committing it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "vscode/jsonc.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef FIXTURES
#define FIXTURES "tests/fixtures/vscode"
#endif

#define OWN_PREFIX "tdebug: "

static int has_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static int has_prefix(const char *path, const char *prefix)
{
    const char *base = strrchr(path, '/');
    return !strncmp(base ? base + 1 : path, prefix, strlen(prefix));
}

static int is_tasks(const char *path)
{
    return has_prefix(path, "tasks-");
}

static const char *display_name(const char *path)
{
    return is_tasks(path) ? ".vscode/tasks.json" : ".vscode/launch.json";
}

static char *read_or_fail(const char *path, size_t *len)
{
    tdb_error err = {0};
    char *s = tdb_read_file(path, len, &err);
    if (!s)
        fail_msg("%s", err.msg);
    return s;
}

/* The edit set for PATH, as JSON (new reference). */
static json_t *load_edits(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *file = tdb_xasprintf("%.*s%s", slash ? (int)(slash - path + 1) : 0, path,
                               is_tasks(path) ? "edits-tasks.jsonc"
                               : has_prefix(path, "remove-") ? "edits-remove.jsonc"
                                                             : "edits-launch.jsonc");
    size_t len;
    char *text = read_or_fail(file, &len);
    tdb_error err = {0};
    tdb_jsonc_doc *doc = tdb_jsonc_parse(text, len, file, &err);
    if (!doc)
        fail_msg("%s", err.msg);
    json_t *edits = tdb_jsonc_to_json(doc, tdb_jsonc_root(doc));
    tdb_jsonc_doc_free(doc);
    free(text);
    free(file);
    return edits;
}

static int apply_edits(tdb_jsonc_doc *doc, json_t *edits, tdb_error *err)
{
    static const char *arrays[] = {"configurations", "compounds", "tasks"};
    const char *remove[16] = {0};
    const char *key;
    json_t *v;
    size_t i, n = 0;

    json_array_foreach(json_object_get(edits, "remove"), i, v) if (n < 15) remove[n++] =
        json_string_value(v);
    json_object_foreach(json_object_get(edits, "ensure"), key, v) if (tdb_jsonc_ensure_member(doc, key, v, err) < 0) return -1;
    for (i = 0; i < 3; i++) {
        json_t *entries = json_object_get(edits, arrays[i]);
        if (entries && tdb_jsonc_update_array(doc, arrays[i], i == 2 ? "label" : "name", entries,
                                              remove, err) < 0)
            return -1;
    }
    return 0;
}

/* Parse TEXT, apply the edits for PATH; the new text, or NULL with ERR. */
static char *edit_text(const char *path, const char *text, size_t len, size_t *out_len,
                       tdb_error *err)
{
    json_t *edits = load_edits(path);
    tdb_jsonc_doc *doc = tdb_jsonc_parse(text, len, display_name(path), err);
    char *out = NULL;
    if (doc && apply_edits(doc, edits, err) == 0)
        out = tdb_jsonc_render(doc, out_len);
    tdb_jsonc_doc_free(doc);
    json_decref(edits);
    return out;
}

static int is_own(const tdb_jsonc_node *item, const char *id_key)
{
    const tdb_jsonc_node *id = tdb_jsonc_get(item, id_key);
    return id && id->type == TDB_JSONC_STRING && !strncmp(id->string, OWN_PREFIX, strlen(OWN_PREFIX));
}

/* TEXT without tdebug's own entries, without the root members in CUT
 * (members the edit added) or the whole root when DROP_ROOT (the edit made
 * it), without whitespace and commas: what must be the same before and
 * after an edit. */
static char *skeleton(const char *text, size_t len, const char *const *cut, int drop_root,
                      const char *name)
{
    tdb_error err = {0};
    tdb_jsonc_doc *doc = tdb_jsonc_parse(text, len, name, &err);
    unsigned char *drop = tdb_xcalloc(len + 1, 1);
    static const char *arrays[] = {"configurations", "compounds", "tasks"};
    tdb_buf out = TDB_BUF_INIT;

    if (!doc)
        fail_msg("%s", err.msg);
    const tdb_jsonc_node *root = tdb_jsonc_root(doc);
    for (size_t a = 0; root && a < 3; a++) {
        const tdb_jsonc_node *arr = tdb_jsonc_get(root, arrays[a]);
        for (size_t i = 0; arr && i < arr->n_items; i++)
            if (is_own(arr->items[i], a == 2 ? "label" : "name"))
                memset(drop + arr->items[i]->start, 1, arr->items[i]->end - arr->items[i]->start);
    }
    if (root && drop_root)
        memset(drop + root->start, 1, root->end - root->start);
    for (size_t i = 0; root && i < root->n_items; i++)
        for (const char *const *c = cut; *c; c++)
            if (!strcmp(root->items[i]->key, *c))
                memset(drop + root->items[i]->key_start, 1, root->items[i]->end - root->items[i]->key_start);
    for (size_t i = 0; i < len; i++)
        if (!drop[i] && !strchr(" \t\r\n,", text[i]))
            tdb_buf_addc(&out, text[i]);
    tdb_jsonc_doc_free(doc);
    free(drop);
    return tdb_buf_detach(&out);
}

/* Every value's span, re-read on its own, gives the same value; keys and
 * commas are where the nodes say. */
static void check_spans(const tdb_jsonc_doc *doc, const tdb_jsonc_node *n, const char *path)
{
    size_t len;
    const char *text = tdb_jsonc_text(doc, &len);
    tdb_error err = {0};
    tdb_jsonc_doc *alone = tdb_jsonc_parse(text + n->start, n->end - n->start, "span", &err);

    if (!alone)
        fail_msg("%s: span %zu-%zu does not parse alone: %s", path, n->start, n->end, err.msg);
    /* Compared as rendered text: jansson's json_equal() looks keys up by
     * C string, and "a\u0000b" is not "a". */
    json_t *a = tdb_jsonc_to_json(doc, n), *b = tdb_jsonc_to_json(alone, tdb_jsonc_root(alone));
    tdb_buf ta = TDB_BUF_INIT, tb = TDB_BUF_INIT;
    tdb_jsonc_render_json(&ta, a, "", " ", "\n");
    tdb_jsonc_render_json(&tb, b, "", " ", "\n");
    if (ta.len != tb.len || memcmp(tdb_buf_str(&ta), tdb_buf_str(&tb), ta.len))
        fail_msg("%s: span %zu-%zu differs from its value", path, n->start, n->end);
    tdb_buf_free(&ta);
    tdb_buf_free(&tb);
    json_decref(a);
    json_decref(b);
    tdb_jsonc_doc_free(alone);
    if (n->key)
        assert_int_equal(text[n->key_start], '"');
    if (n->comma != TDB_JSONC_NONE)
        assert_int_equal(text[n->comma], ',');
    for (size_t i = 0; i < n->n_items; i++)
        check_spans(doc, n->items[i], path);
}

static void check_fixture(const char *path)
{
    size_t len, out_len, again_len;
    if (!path)
        return; /* never: fixtures have names (and gcc -O1 -fsanitize asks) */
    char *text = read_or_fail(path, &len);
    char *errfile = tdb_xasprintf("%.*s.err", (int)(strlen(path) - 5), path);
    char *expfile = tdb_xasprintf("%.*s.expected.json", (int)(strlen(path) - 5), path);
    tdb_error err = {0};
    char *out = edit_text(path, text, len, &out_len, &err);

    if (access(errfile, F_OK) == 0) {
        size_t elen;
        char *expected = read_or_fail(errfile, &elen);
        expected[strcspn(expected, "\n")] = '\0';
        if (out)
            fail_msg("%s: edited, but should fail with: %s", path, expected);
        if (strcmp(err.msg, expected))
            fail_msg("%s: wrong error\n  got:      %s\n  expected: %s", path, err.msg, expected);
        assert_int_equal(err.exit_code, TDB_EXIT_FAIL);
        free(expected);
        goto done;
    }
    if (!out)
        fail_msg("%s: %s", path, err.msg);

    size_t exp_len;
    char *expected = read_or_fail(expfile, &exp_len);
    if (exp_len != out_len || memcmp(expected, out, out_len))
        fail_msg("%s: differs from %s; got:\n%s", path, expfile, out);
    free(expected);

    /* A second run changes nothing. */
    tdb_error_clear(&err);
    char *again = edit_text(path, out, out_len, &again_len, &err);
    if (!again)
        fail_msg("%s: the edited text does not edit again: %s", path, err.msg);
    if (again_len != out_len || memcmp(again, out, out_len))
        fail_msg("%s: a second run changed the file:\n%s", path, again);
    free(again);

    /* Nothing of the user's is lost or reordered. */
    tdb_jsonc_doc *before = tdb_jsonc_parse(text, len, path, &err);
    assert_non_null(before);
    const char *cut[8] = {0};
    size_t n_cut = 0;
    static const char *maybe_added[] = {"version", "configurations", "compounds", "tasks"};
    for (size_t i = 0; i < 4; i++)
        if (!tdb_jsonc_get(tdb_jsonc_root(before), maybe_added[i]))
            cut[n_cut++] = maybe_added[i];
    int new_root = tdb_jsonc_root(before) == NULL;
    char *sk_before = skeleton(text, len, cut, 0, path);
    char *sk_after = skeleton(out, out_len, cut, new_root, path);
    if (strcmp(sk_before, sk_after))
        fail_msg("%s: something not tdebug's changed:\n  before: %s\n  after:  %s", path, sk_before,
                 sk_after);
    free(sk_before);
    free(sk_after);
    if (tdb_jsonc_root(before))
        check_spans(before, tdb_jsonc_root(before), path);
    tdb_jsonc_doc_free(before);

    /* The BOM and line endings stay. */
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
        assert_memory_equal(out, "\xEF\xBB\xBF", 3);
    if (strstr(text, "\r\n")) {
        for (size_t i = 0; i < out_len; i++)
            if (out[i] == '\n' && (i == 0 || out[i - 1] != '\r'))
                fail_msg("%s: a bare LF in a CRLF file at byte %zu", path, i);
    }
done:
    free(out);
    free(text);
    free(errfile);
    free(expfile);
}

static void test_fixtures(void **state)
{
    DIR *d = opendir(FIXTURES);
    struct dirent *de;
    int n = 0;
    (void)state;
    assert_non_null(d);
    while ((de = readdir(d))) {
        if (!has_suffix(de->d_name, ".json") || has_suffix(de->d_name, ".expected.json"))
            continue;
        char *path = tdb_xasprintf("%s/%s", FIXTURES, de->d_name);
        check_fixture(path);
        free(path);
        n++;
    }
    closedir(d);
    assert_true(n >= 30);
}

/* The spans of configurations, compounds and inputs, by hand on one file. */
static void test_spans_of_entries(void **state)
{
    size_t len;
    char *text = read_or_fail(FIXTURES "/user-entries.json", &len);
    tdb_error err = {0};
    tdb_jsonc_doc *doc = tdb_jsonc_parse(text, len, "x", &err);
    (void)state;
    assert_non_null(doc);
    const tdb_jsonc_node *root = tdb_jsonc_root(doc);
    const tdb_jsonc_node *conf = tdb_jsonc_get(root, "configurations");
    const tdb_jsonc_node *comp = tdb_jsonc_get(root, "compounds");
    const tdb_jsonc_node *inputs = tdb_jsonc_get(root, "inputs");
    assert_int_equal(conf->n_items, 5);
    assert_int_equal(comp->n_items, 1);
    assert_int_equal(inputs->n_items, 1);
    const tdb_jsonc_node *first = conf->items[0];
    assert_int_equal(text[first->start], '{');
    assert_int_equal(text[first->end - 1], '}');
    assert_true(!strncmp(text + first->start, "{\n            \"name\": \"Attach to gdbserver\"", 42));
    assert_string_equal(tdb_jsonc_get(inputs->items[0], "id")->string, "port");
    assert_true(!strncmp(text + comp->items[0]->start, "{\"name\": \"mine\"", 15));
    int line, column;
    tdb_jsonc_position(doc, inputs->items[0]->start, &line, &column);
    assert_int_equal(line, 41);
    assert_int_equal(column, 9);
    tdb_jsonc_doc_free(doc);
    free(text);
}

static void test_render_layout(void **state)
{
    json_error_t jerr;
    json_t *v = json_loads("{\"a\": [1, \"x\"], \"b\": {}, \"c\": [], \"d\": \"\\u00e9\\t\\\"\\u0001\","
                           " \"e\": [\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\","
                           " \"ccc\"], \"f\": [{\"g\": true}], \"h\": 2.5, \"i\": null}", 0, &jerr);
    tdb_buf b = TDB_BUF_INIT;
    (void)state;
    assert_non_null(v);
    tdb_jsonc_render_json(&b, v, "  ", "\t", "\r\n");
    assert_string_equal(b.s,
        "{\r\n"
        "  \t\"a\": [1, \"x\"],\r\n"
        "  \t\"b\": {},\r\n"
        "  \t\"c\": [],\r\n"
        "  \t\"d\": \"\xC3\xA9\\t\\\"\\u0001\",\r\n"
        "  \t\"e\": [\r\n"
        "  \t\t\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\r\n"
        "  \t\t\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\",\r\n"
        "  \t\t\"ccc\"\r\n"
        "  \t],\r\n"
        "  \t\"f\": [\r\n"
        "  \t\t{\r\n"
        "  \t\t\t\"g\": true\r\n"
        "  \t\t}\r\n"
        "  \t],\r\n"
        "  \t\"h\": 2.5,\r\n"
        "  \t\"i\": null\r\n"
        "  }");
    tdb_buf_free(&b);
    json_decref(v);
}

static void test_load_missing_file_is_empty(void **state)
{
    tdb_error err = {0};
    tdb_jsonc_doc *doc = tdb_jsonc_load("/nonexistent/dir/launch.json", "launch.json", &err);
    (void)state;
    assert_non_null(doc);
    assert_null(tdb_jsonc_root(doc));
    assert_int_equal(tdb_jsonc_existed(doc), 0);
    tdb_jsonc_doc_free(doc);
}

static int dump(const char *path)
{
    size_t len, out_len;
    tdb_error err = {0};
    char *text = tdb_read_file(path, &len, &err);
    if (!text) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    char *out = edit_text(path, text, len, &out_len, &err);
    if (!out) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    fwrite(out, 1, out_len, stdout);
    free(out);
    free(text);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--dump"))
        return dump(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_spans_of_entries),
        cmocka_unit_test(test_render_layout),
        cmocka_unit_test(test_load_missing_file_is_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

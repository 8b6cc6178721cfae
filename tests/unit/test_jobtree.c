/*
 * test_jobtree.c: rank sets and the ranks' stacks merged into one tree
 * (src/stacks/jobtree.c).  tests/fixtures/jobtree/rankN.json are what
 * 'tdebug stacks --json PID' printed for the four ranks of a gloo job
 * (tests/fixtures/jobtree/README.md), rank 2 a straggler still loading its
 * batch while the others wait in all_reduce; expected.txt is the tree as
 * text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "stacks/jobtree.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIR "tests/fixtures/jobtree"

static char *set_text(const long *v, size_t n, int label)
{
    tdb_buf b = TDB_BUF_INIT;
    if (label)
        tdb_rank_set_label(&b, v, n);
    else
        tdb_rank_set_format(&b, v, n);
    return tdb_buf_detach(&b);
}

static void check_set(const long *v, size_t n, const char *want)
{
    char *s = set_text(v, n, 0);
    assert_string_equal(s, want);
    free(s);
}

static void test_rank_sets(void **state)
{
    (void)state;
    long a[] = {5, 0, 2, 1};
    check_set(a, 4, "0-2,5");
    long b[] = {0, 1, 3};
    check_set(b, 3, "0,1,3");
    long c[] = {7, 7, 7};
    check_set(c, 3, "7");
    long d[] = {9, 3, 4, 5, 6, 1, 11, 12};
    check_set(d, 8, "1,3-6,9,11,12");
    check_set(NULL, 0, "");
    char *s = set_text(c, 3, 1);
    assert_string_equal(s, "rank 7");
    free(s);
    s = set_text(b, 3, 1);
    assert_string_equal(s, "ranks 0,1,3");
    free(s);
    s = set_text(NULL, 0, 1);
    assert_string_equal(s, "no rank");
    free(s);
}

static json_t *load(const char *name)
{
    char path[256];
    json_error_t jerr;
    snprintf(path, sizeof(path), "%s/%s", DIR, name);
    json_t *v = json_load_file(path, 0, &jerr);
    if (!v)
        fail_msg("%s: %s", path, jerr.text);
    return v;
}

static tdb_jobtree *job_tree(void)
{
    tdb_jobtree *t = tdb_jobtree_new();
    for (long r = 0; r < 4; r++) {
        char name[32];
        snprintf(name, sizeof(name), "rank%ld.json", r);
        json_t *p = load(name);
        tdb_jobtree_add(t, r, p);
        json_decref(p); /* the tree keeps what it needs */
    }
    return t;
}

static const char *last_python_function(const json_t *frames)
{
    const char *fn = NULL;
    size_t i;
    json_t *f;
    json_array_foreach(frames, i, f)
        if (!strcmp(json_string_value(json_object_get(f, "kind")), "python"))
            fn = json_string_value(json_object_get(f, "function"));
    return fn;
}

static void test_tree_json(void **state)
{
    (void)state;
    tdb_jobtree *t = job_tree();
    json_t *tree = tdb_jobtree_json(t);
    /* The main threads first: all four ranks at <module> and main, then
     * parting in step(): ranks 0,1,3 into all_reduce, rank 2 alone in
     * load_batch. */
    json_t *main = json_array_get(tree, 0);
    assert_string_equal(json_string_value(json_object_get(main, "thread")), "main");
    assert_true(json_is_true(json_object_get(main, "main")));
    assert_string_equal(json_string_value(json_object_get(main, "rank_set")), "0-3");
    assert_int_equal(json_integer_value(json_object_get(main, "threads")), 4);
    assert_string_equal(last_python_function(json_object_get(main, "frames")), "main");
    json_t *kids = json_object_get(main, "children");
    assert_int_equal(json_array_size(kids), 2);
    json_t *waiting = json_array_get(kids, 0), *straggler = json_array_get(kids, 1);
    assert_string_equal(json_string_value(json_object_get(waiting, "rank_set")), "0,1,3");
    assert_string_equal(last_python_function(json_object_get(waiting, "frames")), "all_reduce");
    assert_int_equal(json_array_size(json_object_get(waiting, "children")), 0);
    assert_string_equal(json_string_value(json_object_get(straggler, "rank_set")), "2");
    assert_string_equal(last_python_function(json_object_get(straggler, "frames")),
                        "load_batch");
    json_t *r = json_object_get(straggler, "ranks");
    assert_int_equal(json_array_size(r), 1);
    assert_int_equal(json_integer_value(json_array_get(r, 0)), 2);
    /* The other threads, merged by name: every group covers the four
     * ranks. */
    for (size_t i = 1; i < json_array_size(tree); i++) {
        json_t *g = json_array_get(tree, i);
        assert_false(json_is_true(json_object_get(g, "main")));
        assert_non_null(json_object_get(g, "frames"));
    }
    json_decref(tree);
    tdb_jobtree_free(t);
}

static char *read_text(const char *name)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", DIR, name);
    char *s = tdb_read_file(path, NULL, NULL);
    if (!s)
        fail_msg("cannot read %s", path);
    return s;
}

static void test_tree_text(void **state)
{
    (void)state;
    tdb_jobtree *t = job_tree();
    tdb_buf b = TDB_BUF_INIT;
    tdb_jobtree_render(&b, t);
    char *want = read_text("expected.txt");
    if (getenv("TDEBUG_FIXTURE_WRITE")) { /* after a reviewed change of the format */
        FILE *f = fopen(DIR "/expected.txt", "w");
        fputs(tdb_buf_str(&b), f);
        fclose(f);
    }
    assert_string_equal(tdb_buf_str(&b), want);
    free(want);
    tdb_buf_free(&b);
    tdb_jobtree_free(t);
}

/* A stack that is a prefix of the others' ends at a fork: said. */
static void test_stack_ending_early(void **state)
{
    (void)state;
    json_t *a = json_loads("{\"pid\": 10, \"threads\": [{\"tid\": 10, \"frames\": ["
                           "{\"kind\": \"python\", \"function\": \"inner\", \"file\": \"x.py\", \"line\": 3},"
                           "{\"kind\": \"python\", \"function\": \"outer\", \"file\": \"x.py\", \"line\": 9}]}]}",
                           0, NULL);
    json_t *b = json_loads("{\"pid\": 20, \"threads\": [{\"tid\": 20, \"frames\": ["
                           "{\"kind\": \"python\", \"function\": \"outer\", \"file\": \"x.py\", \"line\": 9}]}]}",
                           0, NULL);
    assert_non_null(a);
    assert_non_null(b);
    tdb_jobtree *t = tdb_jobtree_new();
    tdb_jobtree_add(t, 0, a);
    tdb_jobtree_add(t, 1, b);
    tdb_buf out = TDB_BUF_INIT;
    tdb_jobtree_render(&out, t);
    assert_string_equal(tdb_buf_str(&out),
                        "Main thread, ranks 0,1:\n"
                        "  File \"x.py\", line 9, in outer\n"
                        "  [rank 0]\n"
                        "    File \"x.py\", line 3, in inner\n"
                        "  [rank 1: the stack ends here]\n");
    json_t *j = tdb_jobtree_json(t);
    json_t *ends = json_object_get(json_array_get(j, 0), "ends");
    assert_int_equal(json_array_size(ends), 1);
    assert_int_equal(json_integer_value(json_array_get(ends, 0)), 1);
    json_decref(j);
    tdb_buf_free(&out);
    tdb_jobtree_free(t);
    json_decref(a);
    json_decref(b);
}

/* --full renders a rank read elsewhere from its JSON as 'stacks' would. */
static void test_process_from_json(void **state)
{
    (void)state;
    json_t *p = load("rank2.json");
    tdb_buf b = TDB_BUF_INIT;
    tdb_process_json_render(&b, p, "  ");
    const char *s = tdb_buf_str(&b);
    assert_non_null(strstr(s, "  Thread "));
    assert_non_null(strstr(s, ", threading \"MainThread\""));
    assert_non_null(strstr(s, "in load_batch\n"));
    assert_non_null(strstr(s, " (no Python):\n"));
    assert_non_null(strstr(s, "    0x0000"));
    tdb_buf_free(&b);
    json_decref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_sets),
        cmocka_unit_test(test_tree_json),
        cmocka_unit_test(test_tree_text),
        cmocka_unit_test(test_stack_ending_early),
        cmocka_unit_test(test_process_from_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_tour_support.c: what 'tdebug tour' stands on besides the session:
 * the tours' data (src/tour/data.c) is complete, and a marked source line
 * is found through a binary's DWARF (src/native/dwsource.c), here this test's own.
 * The handout's writing is tdb_write_file_keeping's (test_common.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "native/dwsource.h"
#include "tmp_tree.h"
#include "tour/tour.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the tours ---- */

static void test_tours_are_complete(void **state)
{
    assert_true(tdb_n_tours >= 2);
    assert_string_equal(tdb_tours[0].name, "torch"); /* the default */
    for (size_t i = 0; i < tdb_n_tours; i++) {
        const tdb_tour *t = &tdb_tours[i];
        assert_ptr_equal(tdb_find_tour(t->name), t);
        assert_non_null(t->title);
        assert_non_null(t->summary);
        assert_non_null(t->module);
        assert_non_null(t->code);
        assert_non_null(t->intro);
        assert_non_null(t->outro);
        assert_true(t->n_stops >= 5); /* tinytensor: 5, the others 6 */
        if (t->instead)
            assert_non_null(tdb_find_tour(t->instead));
        for (size_t k = 0; k < t->n_stops; k++) {
            const tdb_tour_stop *s = &t->stops[k];
            assert_non_null(s->target);
            assert_non_null(s->title);
            assert_non_null(s->what);
            assert_non_null(s->where);
            assert_non_null(s->where[0].path);
            assert_non_null(s->try_next);
            assert_non_null(s->try_next[0].command);
            /* Breakpoint stops say which function they must be in. */
            if (s->trigger != TDB_TOUR_LOADED)
                assert_non_null(s->function);
            if (s->trigger == TDB_TOUR_MARKED_LINE) {
                assert_non_null(s->file);
                /* its library, or the tour's module as the interpreter
                 * imports it (any EXT_SUFFIX) */
                assert_true(s->library || t->module);
                assert_non_null(t->package);
            }
            for (const tdb_tour_try *x = s->try_next; x->command; x++)
                assert_non_null(x->shows);
            /* A program's line is one of its lines, whole. */
            if (s->trigger == TDB_TOUR_PY_LINE) {
                char *line = tdb_xasprintf("\n%s\n", s->target);
                char *code = tdb_xasprintf("\n%s", t->code);
                assert_non_null(strstr(code, line));
                free(line);
                free(code);
            }
            /* A step's end follows the stop that makes it, and only one. */
            if (s->trigger == TDB_TOUR_STEPPED) {
                assert_true(k > 0);
                assert_int_not_equal(t->stops[k - 1].then, TDB_TOUR_THEN_CONTINUE);
            } else if (k > 0) {
                assert_int_equal(t->stops[k - 1].then, TDB_TOUR_THEN_CONTINUE);
            }
        }
        assert_int_equal(t->stops[t->n_stops - 1].then, TDB_TOUR_THEN_CONTINUE);
        assert_true(t->code[strlen(t->code) - 1] == '\n');
    }
    assert_null(tdb_find_tour("nosuch"));
}

/* The torch tour stops where its explanation says, in this order: its
 * Python line steps to the operator's entry. */
static void test_torch_tour_stops(void **state)
{
    const tdb_tour *t = tdb_find_tour("torch");
    static const char *const functions[] = {NULL,
                                            "PyInit__C",
                                            "initModule",
                                            "<module>",
                                            "at::_ops::add_Tensor::call",
                                            "at::native::structured_ufunc_add_CPU::impl"};
    assert_int_equal(t->n_stops, 6);
    assert_int_equal(t->stops[0].trigger, TDB_TOUR_LOADED);
    assert_string_equal(t->stops[0].target, "torch._C");
    assert_int_equal(t->stops[1].trigger, TDB_TOUR_IMPORT);
    assert_int_equal(t->stops[3].trigger, TDB_TOUR_PY_LINE);
    assert_string_equal(t->stops[3].target, "x = a + 1");
    assert_int_equal(t->stops[3].then, TDB_TOUR_THEN_STEP);
    assert_int_equal(t->stops[4].trigger, TDB_TOUR_STEPPED);
    for (size_t k = 1; k < 6; k++) {
        assert_string_equal(t->stops[k].function, functions[k]);
        if (k == 3)
            continue; /* a Python line has its source */
        assert_non_null(t->stops[k].no_debug); /* stock torch has none */
        if (k > 1)
            assert_string_equal(t->stops[k].target, functions[k]);
    }
}

/* The extension tour walks the op as a user would: the Python line, step,
 * a line of the op, next, finish back to the Python line. */
static void test_extension_tour_steps(void **state)
{
    const tdb_tour *t = tdb_find_tour("extension");
    static const tdb_tour_trigger triggers[] = {TDB_TOUR_IMPORT, TDB_TOUR_PY_LINE,
                                                TDB_TOUR_STEPPED, TDB_TOUR_MARKED_LINE,
                                                TDB_TOUR_STEPPED, TDB_TOUR_STEPPED};
    static const tdb_tour_then thens[] = {TDB_TOUR_THEN_CONTINUE, TDB_TOUR_THEN_STEP,
                                          TDB_TOUR_THEN_CONTINUE, TDB_TOUR_THEN_NEXT,
                                          TDB_TOUR_THEN_FINISH, TDB_TOUR_THEN_CONTINUE};
    static const char *const functions[] = {"PyInit_myop", "<module>",   "scaled_add",
                                            "scaled_add",  "scaled_add", "<module>"};
    assert_int_equal(t->n_stops, 6);
    for (size_t k = 0; k < 6; k++) {
        assert_int_equal(t->stops[k].trigger, triggers[k]);
        assert_int_equal(t->stops[k].then, thens[k]);
        assert_string_equal(t->stops[k].function, functions[k]);
    }
    /* the finish lands back on the line the step left */
    assert_string_equal(t->stops[5].target, t->stops[1].target);
}

/* ---- sources through DWARF ---- */


static void test_marked_line(void **state)
{
    char *path = tdb_xasprintf("%s/src.c", tmp_tree);
    tdb_error err = {0};
    int line = 0;
    const char text[] = "int a;\n/* TOUR: here */\nint b; /* TOUR: twice */\n/* TOUR: twice */\n";

    tmp_tree_write("/src.c", text);
    assert_int_equal(tdb_marked_line(path, "TOUR: here", &line, &err), 0);
    assert_int_equal(line, 2);
    line = 0;
    assert_int_equal(tdb_marked_line(path, "TOUR: twice", &line, &err), -1);
    assert_int_equal(line, 0);
    assert_non_null(strstr(err.msg, "has 2 lines marked 'TOUR: twice'"));
    tdb_error_clear(&err);
    assert_int_equal(tdb_marked_line(path, "TOUR: none", &line, &err), -1);
    assert_non_null(strstr(err.msg, "has 0 lines marked"));
    free(path);
}

static void test_dwarf_source_path_of_this_test(void **state)
{
    tdb_error err = {0};
    char *self = realpath("/proc/self/exe", NULL);
    char *src = tdb_dwarf_source_path(self, "test_tour_support.c", &err);
    const char *tail = "/tests/unit/test_tour_support.c";
    int line;

    if (!src) {
        /* Built without -g: nothing to read; say so rather than pass. */
        print_message("skipped: %s\n", err.msg);
        free(self);
        exit(77);
    }
    assert_true(src[0] == '/');
    assert_true(strlen(src) > strlen(tail));
    assert_string_equal(src + strlen(src) - strlen(tail), tail);
    /* The tour's way to a line: the file from DWARF, then the marker. */
    assert_int_equal(tdb_marked_line(src, "TOUR" ": test marker", &line, &err), 0);
    assert_int_equal(line, __LINE__); /* TOUR: test marker */
    tdb_error_clear(&err);
    assert_null(tdb_dwarf_source_path(self, "no_such_file.c", &err));
    assert_non_null(strstr(err.msg, "has no compilation unit for 'no_such_file.c'"));
    /* A name must match whole path components. */
    tdb_error_clear(&err);
    assert_null(tdb_dwarf_source_path(self, "our_support.c", &err));
    tdb_error_clear(&err);
    assert_null(tdb_dwarf_source_path("/nonexistent", "x.c", &err));
    assert_non_null(strstr(err.msg, "cannot open '/nonexistent'"));
    free(self);
    free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tours_are_complete),
        cmocka_unit_test(test_torch_tour_stops),
        cmocka_unit_test(test_extension_tour_steps),
        cmocka_unit_test(test_marked_line),
        cmocka_unit_test(test_dwarf_source_path_of_this_test),
    };
    return cmocka_run_group_tests(tests, tmp_tree_setup, tmp_tree_teardown);
}

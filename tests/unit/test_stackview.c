/*
 * test_stackview.c: the stack a session shows at a stop, from gdb's frames
 * (as the MI parser gives them) and a hand-made Python snapshot: the
 * merged order, gdb's frame numbers and source lines kept, and a stack
 * whose evaluator and entry frames disagree shown apart, never merged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gdb/mi_parser.h"
#include "stacks/view.h"

#include <string.h>
#include <unistd.h>

/* gdb's -stack-list-frames value for the frames in LINE ("stack=[...]"). */
static json_t *mi_stack(const char *results)
{
    tdb_mi_record *r = tdb_mi_parse_line(results, strlen(results));
    assert_int_equal(r->kind, TDB_MI_RESULT);
    json_t *stack = json_incref(json_object_get(r->results, "stack"));
    tdb_mi_record_free(r);
    assert_non_null(stack);
    return stack;
}

static const char two_evals[] =
    "^done,stack=[frame={level=\"0\",addr=\"0x00007f0000001000\",func=\"tt_native_add\","
    "file=\"csrc/core/tt_native_cpu.c\",fullname=\"/src/csrc/core/tt_native_cpu.c\",line=\"52\","
    "from=\"/lib/libtt_core.so\"},"
    "frame={level=\"1\",addr=\"0x0000000000500000\",func=\"_PyEval_EvalFrameDefault\"},"
    "frame={level=\"2\",addr=\"0x0000000000400100\",func=\"call_python\"},"
    "frame={level=\"3\",addr=\"0x0000000000500100\",func=\"_PyEval_EvalFrameDefault\"},"
    "frame={level=\"4\",addr=\"0x0000000000400000\",func=\"main\"}]";

static tdb_py_frame frames[] = {
    {.name = "inner", .qualname = "Model.inner", .filename = "/app/model.py", .line = 12,
     .first_line = 10, .is_entry = 1, .addr = 0x1000},
    {.name = "<module>", .qualname = "<module>", .filename = "/app/train.py", .line = 3,
     .first_line = 1, .is_entry = 1, .addr = 0x2000},
};

static void snapshot(tdb_py_snapshot *snap, tdb_py_thread *thread, size_t n_frames)
{
    memset(thread, 0, sizeof(*thread));
    thread->tid = getpid();
    thread->frames = frames;
    thread->n_frames = n_frames;
    memset(snap, 0, sizeof(*snap));
    snap->threads = thread;
    snap->n_threads = 1;
}

static void test_merged_in_order_with_gdb_numbers_and_lines(void **state)
{
    tdb_py_snapshot snap;
    tdb_py_thread thread;
    snapshot(&snap, &thread, 2);
    json_t *mi = mi_stack(two_evals);
    tdb_stackview v;
    tdb_stackview_init(&v, getpid(), getpid(), mi, NULL, NULL, NULL, &snap);
    assert_string_equal(tdb_stackview_merge_name(&v), "ok");

    json_t *stack = tdb_stackview_json(&v, TDB_STACK_RAW);
    const char *want[][2] = {
        {"native", "tt_native_add"}, {"python", "Model.inner"},
        {"native", "_PyEval_EvalFrameDefault"}, {"native", "call_python"},
        {"python", "<module>"}, {"native", "_PyEval_EvalFrameDefault"}, {"native", "main"},
    };
    assert_int_equal(json_array_size(stack), 7);
    for (size_t i = 0; i < 7; i++) {
        json_t *f = json_array_get(stack, i);
        assert_string_equal(tdb_mi_str(f, "kind"), want[i][0]);
        assert_string_equal(tdb_mi_str(f, "function"), want[i][1]);
    }
    json_t *top = json_array_get(stack, 0);
    assert_int_equal(json_integer_value(json_object_get(top, "level")), 0);
    assert_string_equal(tdb_mi_str(top, "file"), "/src/csrc/core/tt_native_cpu.c");
    assert_string_equal(tdb_mi_str(top, "source"), "csrc/core/tt_native_cpu.c");
    assert_int_equal(json_integer_value(json_object_get(top, "line")), 52);

    tdb_buf b = TDB_BUF_INIT;
    tdb_stackview_render(&b, &v, TDB_STACK_RAW);
    assert_non_null(strstr(tdb_buf_str(&b),
                           "#0  0x00007f0000001000 in tt_native_add () at "
                           "csrc/core/tt_native_cpu.c:52\n"
                           "    File \"/app/model.py\", line 12, in Model.inner\n"
                           "#1  0x0000000000500000 in _PyEval_EvalFrameDefault ()\n"));
    tdb_buf_free(&b);
    json_decref(stack);

    json_t *py = tdb_stackview_python_json(&v);
    assert_int_equal(json_array_size(py), 2);
    assert_string_equal(tdb_mi_str(json_array_get(py, 1), "file"), "/app/train.py");
    json_decref(py);
    tdb_stackview_clear(&v);
    json_decref(mi);
}

static void test_disagreeing_counts_are_shown_apart(void **state)
{
    /* Two evaluator frames, one Python entry frame: no guess. */
    tdb_py_snapshot snap;
    tdb_py_thread thread;
    snapshot(&snap, &thread, 1);
    json_t *mi = mi_stack(two_evals);
    tdb_stackview v;
    tdb_stackview_init(&v, getpid(), getpid(), mi, NULL, NULL, NULL, &snap);
    assert_string_equal(tdb_stackview_merge_name(&v), "mismatch");

    tdb_buf b = TDB_BUF_INIT;
    tdb_stackview_render(&b, &v, 0);
    const char *text = tdb_buf_str(&b);
    assert_non_null(strstr(text, "note: 2 evaluator frames but 1 Python entry frames: the stacks "
                                 "are shown apart rather than merged wrongly\n"));
    /* Every native frame, then the Python stack under its heading. */
    assert_non_null(strstr(text, "#4  0x0000000000400000 in main ()\n"
                                 "Python stack (most recent call first):\n"
                                 "    File \"/app/model.py\", line 12, in Model.inner\n"));
    tdb_buf_free(&b);

    json_t *stack = tdb_stackview_json(&v, 0);
    assert_int_equal(json_array_size(stack), 5); /* the native frames alone */
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(tdb_mi_str(json_array_get(stack, i), "kind"), "native");
    json_decref(stack);
    tdb_stackview_clear(&v);
    json_decref(mi);
}

static void test_thread_without_python(void **state)
{
    json_t *mi = mi_stack(two_evals);
    tdb_stackview v;
    tdb_stackview_init(&v, getpid(), getpid(), mi, NULL, NULL, NULL, NULL);
    assert_string_equal(tdb_stackview_merge_name(&v), "native-only");
    assert_null(tdb_stackview_python_json(&v));
    json_t *native = tdb_stackview_native_json(&v);
    assert_int_equal(json_array_size(native), 5);
    assert_null(json_object_get(json_array_get(native, 0), "kind"));
    json_decref(native);
    tdb_stackview_clear(&v);
    json_decref(mi);
}

/* A Python file and a native library whose names are not UTF-8: kept in
 * the session's JSON, escaped and flagged, not dropped. */
static void test_names_that_are_not_utf8(void **state)
{
    static tdb_py_frame odd[] = {
        {.name = "f", .qualname = "f", .filename = "/tmp/odd-\xff.py", .line = 3,
         .first_line = 1, .is_entry = 1, .addr = 0x1000},
    };
    tdb_py_snapshot snap;
    tdb_py_thread thread;
    snapshot(&snap, &thread, 0);
    thread.frames = odd;
    thread.n_frames = 1;
    json_t *mi = mi_stack(
        "^done,stack=[frame={level=\"0\",addr=\"0x00007f0000001000\",func=\"read\","
        "from=\"/lib/odd-\\377/libc.so.6\"},"
        "frame={level=\"1\",addr=\"0x0000000000500000\",func=\"_PyEval_EvalFrameDefault\"}]");
    tdb_stackview v;
    tdb_stackview_init(&v, getpid(), getpid(), mi, NULL, NULL, NULL, &snap);
    json_t *py = tdb_stackview_python_json(&v);
    assert_string_equal(json_string_value(json_object_get(json_array_get(py, 0), "file")),
                        "/tmp/odd-\\xff.py");
    assert_true(json_is_true(json_object_get(json_array_get(py, 0), "file_escaped")));
    json_decref(py);
    json_t *native = tdb_stackview_native_json(&v);
    const char *lib = json_string_value(json_object_get(json_array_get(native, 0), "library"));
    assert_non_null(lib);
    json_decref(native);
    tdb_stackview_clear(&v);
    json_decref(mi);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merged_in_order_with_gdb_numbers_and_lines),
        cmocka_unit_test(test_disagreeing_counts_are_shown_apart),
        cmocka_unit_test(test_thread_without_python),
        cmocka_unit_test(test_names_that_are_not_utf8),
    };
    return cmocka_run_group_tests_name("stackview", tests, NULL, NULL);
}

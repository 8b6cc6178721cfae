/*
 * test_stackmerge.c: the merge of native and Python frames on synthetic
 * stacks (interleaving, folding, mismatches), its JSON and text forms,
 * gdb's recorded -stack-list-frames turned into native frames, and the
 * symbol-name clean-up and demangling.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "gdb/mi_parser.h"
#include "stacks/merge.h"
#include "stacks/stacks.h"
#include "native/unwind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef MI_FIXTURES
#define MI_FIXTURES "tests/fixtures/mi"
#endif

/* A native frame: FUNC in LIB; kind 'e' evaluator, 'i' in CPython, 'n'
 * anything else. */
static tdb_native_frame nat(char kind, const char *func, const char *lib)
{
    tdb_native_frame f;
    static uint64_t pc = 0x1000;
    memset(&f, 0, sizeof(f));
    f.pc = pc += 0x10;
    f.function = func ? tdb_xstrdup(func) : NULL;
    f.library = lib ? tdb_xstrdup(lib) : NULL;
    f.is_eval = kind == 'e';
    f.in_interp = kind == 'e' || kind == 'i';
    return f;
}

static tdb_py_frame pyf(const char *name, int line, int entry)
{
    tdb_py_frame f;
    memset(&f, 0, sizeof(f));
    f.name = f.qualname = name;
    f.filename = "/src/app.py";
    f.line = line;
    f.first_line = line - 1;
    f.is_entry = entry;
    return f;
}

/* The merged stack as "py:NAME" / "c:FUNC" words, plumbing included only
 * with RAW, e.g. "c:read py:inner c:stackfix_call py:outer". */
static char *words(const tdb_merged_stack *m, unsigned flags)
{
    tdb_buf b = TDB_BUF_INIT;
    json_t *a = tdb_stack_json(m, flags);
    size_t i;
    json_t *f;
    json_array_foreach(a, i, f) {
        const char *kind = json_string_value(json_object_get(f, "kind"));
        const char *fn = json_string_value(json_object_get(f, "function"));
        if (b.len)
            tdb_buf_addc(&b, ' ');
        tdb_buf_addf(&b, "%s:%s", strcmp(kind, "python") == 0 ? "py" : "c", fn ? fn : "??");
    }
    json_decref(a);
    return tdb_buf_detach(&b);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void free_natives(tdb_native_frame *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].function);
        free(v[i].library);
    }
}

/* Python -> C -> Python -> C: each evaluator gets its own frames. */
static void test_interleaving(void **state)
{
    tdb_native_frame native[] = {
        nat('n', "read", "/lib/libc.so.6"),
        nat('n', "stackfix_block", "/t/stackfix.so"),
        nat('i', "cfunction_call", "/usr/bin/python3.11"),
        nat('e', "_PyEval_EvalFrameDefault", "/usr/bin/python3.11"),
        nat('i', "_PyFunction_Vectorcall", "/usr/bin/python3.11"),
        nat('n', "stackfix_call", "/t/stackfix.so"),
        nat('i', "cfunction_vectorcall_O", "/usr/bin/python3.11"),
        nat('e', "_PyEval_EvalFrameDefault", "/usr/bin/python3.11"),
        nat('i', "PyEval_EvalCode", "/usr/bin/python3.11"),
        nat('i', "Py_RunMain", "/usr/bin/python3.11"),
        nat('n', "__libc_start_main", "/lib/libc.so.6"),
    };
    tdb_py_frame py[] = {
        pyf("inner", 5, 1),
        pyf("middle", 8, 0),
        pyf("outer", 10, 0),
        pyf("<module>", 12, 1),
    };
    tdb_merged_stack m;
    tdb_stack_merge(native, N(native), py, N(py), &m);
    assert_int_equal(m.status, TDB_MERGE_OK);
    assert_int_equal(m.n_eval, 2);
    assert_int_equal(m.n_entry, 2);

    char *w = words(&m, 0);
    assert_string_equal(w, "c:read c:stackfix_block py:inner c:stackfix_call py:middle "
                           "py:outer py:<module> c:__libc_start_main");
    free(w);
    /* --raw: everything, evaluator frames after the Python frames they run. */
    w = words(&m, TDB_STACK_RAW);
    assert_string_equal(w, "c:read c:stackfix_block c:cfunction_call py:inner "
                           "c:_PyEval_EvalFrameDefault c:_PyFunction_Vectorcall c:stackfix_call "
                           "c:cfunction_vectorcall_O py:middle py:outer py:<module> "
                           "c:_PyEval_EvalFrameDefault c:PyEval_EvalCode c:Py_RunMain "
                           "c:__libc_start_main");
    free(w);
    w = words(&m, TDB_STACK_NATIVE_ONLY);
    assert_true(starts_with(w, "c:read c:stackfix_block c:cfunction_call c:_PyEval"));
    free(w);
    w = words(&m, TDB_STACK_PYTHON_ONLY);
    assert_string_equal(w, "py:inner py:middle py:outer py:<module>");
    free(w);

    tdb_buf b = TDB_BUF_INIT;
    tdb_stack_render(&b, &m, 0, "  ");
    assert_non_null(strstr(tdb_buf_str(&b), "  File \"/src/app.py\", line 5, in inner\n"));
    assert_non_null(strstr(tdb_buf_str(&b), " stackfix_block+0x0 (stackfix.so)\n"));
    assert_null(strstr(tdb_buf_str(&b), "_PyEval_EvalFrameDefault"));
    tdb_buf_free(&b);
    tdb_merged_stack_free(&m);
    free_natives(native, N(native));
}

/* What the thread is doing right now stays visible, even inside CPython:
 * named functions above the innermost evaluator are kept, the calling
 * machinery and unnamed CPython frames there are folded. */
static void test_leaf_frames(void **state)
{
    tdb_native_frame native[] = {
        nat('n', "futex_wait", "/lib/libc.so.6"),
        nat('i', "take_gil", "/usr/bin/python3.11"),
        nat('i', "PyEval_RestoreThread", "/usr/bin/python3.11"),
        nat('i', NULL, "/usr/bin/python3.11"),
        nat('i', "PyObject_Vectorcall", "/usr/bin/python3.11"),
        nat('e', "_PyEval_EvalFrameDefault.cold", "/usr/bin/python3.11"),
        nat('i', "Py_BytesMain", "/usr/bin/python3.11"),
    };
    tdb_py_frame py[] = {pyf("main", 3, 1)};
    tdb_merged_stack m;
    tdb_stack_merge(native, N(native), py, N(py), &m);
    char *w = words(&m, 0);
    assert_string_equal(w, "c:futex_wait c:take_gil c:PyEval_RestoreThread py:main");
    free(w);
    tdb_merged_stack_free(&m);
    free_natives(native, N(native));
}

/* Different counts: no merge is guessed, both stacks are kept whole. */
static void test_mismatch(void **state)
{
    tdb_native_frame native[] = {
        nat('n', "work", "/t/ext.so"),
        nat('e', "_PyEval_EvalFrameDefault", "/usr/bin/python3.11"),
        nat('e', "_PyEval_EvalFrameDefault", "/usr/bin/python3.11"),
    };
    tdb_py_frame py[] = {pyf("f", 2, 0), pyf("g", 4, 1)};
    tdb_merged_stack m;
    tdb_stack_merge(native, N(native), py, N(py), &m);
    assert_int_equal(m.status, TDB_MERGE_MISMATCH);
    assert_int_equal(m.n_eval, 2);
    assert_int_equal(m.n_entry, 1);
    tdb_buf b = TDB_BUF_INIT;
    tdb_stack_render(&b, &m, 0, "");
    const char *s = tdb_buf_str(&b);
    assert_non_null(strstr(s, "do not line up: 2 native evaluator frames, 1 Python entry frame"));
    const char *pys = strstr(s, "Python stack:\n  File \"/src/app.py\", line 2, in f\n");
    const char *nats = strstr(s, "Native stack:\n  0x");
    assert_non_null(pys);
    assert_non_null(nats);
    assert_non_null(strstr(nats, "_PyEval_EvalFrameDefault"));
    tdb_buf_free(&b);
    /* The JSON form of a mismatch is the native stack, unmerged. */
    char *w = words(&m, 0);
    assert_string_equal(w, "c:work c:_PyEval_EvalFrameDefault c:_PyEval_EvalFrameDefault");
    free(w);
    tdb_merged_stack_free(&m);

    /* A Python chain cut short (its last frame is no entry frame) counts
     * as one more evaluator call: two evaluators, one entry + one cut. */
    tdb_py_frame cut[] = {pyf("f", 2, 1), pyf("g", 4, 0)};
    tdb_stack_merge(native, N(native), cut, N(cut), &m);
    assert_int_equal(m.status, TDB_MERGE_OK);
    assert_int_equal(m.n_entry, 2);
    tdb_merged_stack_free(&m);
    free_natives(native, N(native));
}

static void test_one_side_only(void **state)
{
    tdb_native_frame native[] = {nat('n', "poll", "/lib/libc.so.6"),
                                 nat('i', "Py_RunMain", "/usr/bin/python3.11")};
    tdb_py_frame py[] = {pyf("f", 2, 1)};
    tdb_merged_stack m;
    tdb_stack_merge(native, N(native), NULL, 0, &m);
    assert_int_equal(m.status, TDB_MERGE_NATIVE_ONLY);
    char *w = words(&m, 0);
    assert_string_equal(w, "c:poll c:Py_RunMain");
    free(w);
    tdb_merged_stack_free(&m);
    tdb_stack_merge(NULL, 0, py, N(py), &m);
    assert_int_equal(m.status, TDB_MERGE_PYTHON_ONLY);
    w = words(&m, 0);
    assert_string_equal(w, "py:f");
    free(w);
    tdb_merged_stack_free(&m);
    tdb_stack_merge(NULL, 0, NULL, 0, &m);
    assert_int_equal(m.n, 0);
    tdb_merged_stack_free(&m);
    free_natives(native, N(native));
}

static void test_json_fields(void **state)
{
    tdb_native_frame native[] = {nat('n', "at::native::add(at::Tensor const&)", "/l/libtorch_cpu.so"),
                                 nat('e', "_PyEval_EvalFrameDefault", "/usr/bin/python3.11"),
                                 nat('n', NULL, NULL)};
    native[0].offset = 0x2e;
    tdb_py_frame py[] = {pyf("forward", 7, 1)};
    py[0].qualname = "Linear.forward";
    py[0].line = -1;
    tdb_merged_stack m;
    tdb_stack_merge(native, N(native), py, N(py), &m);
    json_t *a = tdb_stack_json(&m, 0);
    assert_int_equal(json_array_size(a), 3);
    json_t *c = json_array_get(a, 0), *p = json_array_get(a, 1), *u = json_array_get(a, 2);
    assert_string_equal(json_string_value(json_object_get(c, "kind")), "native");
    assert_string_equal(json_string_value(json_object_get(c, "library")), "/l/libtorch_cpu.so");
    assert_int_equal(json_integer_value(json_object_get(c, "offset")), 0x2e);
    char pc[32];
    snprintf(pc, sizeof(pc), "0x%016llx", (unsigned long long)native[0].pc);
    assert_string_equal(json_string_value(json_object_get(c, "pc")), pc);
    assert_string_equal(json_string_value(json_object_get(p, "kind")), "python");
    assert_string_equal(json_string_value(json_object_get(p, "function")), "Linear.forward");
    assert_string_equal(json_string_value(json_object_get(p, "name")), "forward");
    assert_true(json_is_null(json_object_get(p, "line")));
    assert_true(json_is_null(json_object_get(u, "function")));
    assert_true(json_is_null(json_object_get(u, "library")));
    assert_null(json_object_get(u, "offset"));
    json_decref(a);
    a = tdb_stack_json(&m, TDB_STACK_RAW);
    assert_int_equal(json_array_size(a), 4);
    assert_true(json_is_true(json_object_get(json_array_get(a, 2), "plumbing")));
    json_decref(a);
    tdb_buf b = TDB_BUF_INIT;
    tdb_stack_render(&b, &m, 0, "");
    assert_non_null(strstr(tdb_buf_str(&b), "File \"/src/app.py\", line ?, in Linear.forward\n"));
    assert_non_null(strstr(tdb_buf_str(&b), " at::native::add(at::Tensor const&)+0x2e (libtorch_cpu.so)\n"));
    assert_non_null(strstr(tdb_buf_str(&b), " ??\n"));
    tdb_buf_free(&b);
    tdb_merged_stack_free(&m);
    free_natives(native, N(native));
}

/* gdb's own frames at PyInit__C (recorded), through the helpers the
 * debugging session uses. */
static void test_frames_from_gdb(void **state)
{
    char *text = tdb_read_file(MI_FIXTURES "/stack-list-frames.mi", NULL, NULL);
    assert_non_null(text);
    tdb_mi_record *r = tdb_mi_parse_line(text, strcspn(text, "\n"));
    free(text);
    assert_non_null(r);
    tdb_native_frame *f;
    size_t n;
    assert_int_equal(tdb_native_frames_from_mi(json_object_get(r->results, "stack"), &f, &n), 0);
    tdb_mi_record_free(r);
    assert_true(n > 10);
    assert_string_equal(f[0].function, "PyInit__C");
    assert_int_equal(f[0].pc, 0x7ffff774f110ULL);
    assert_non_null(strstr(f[0].library, "torch/_C.cpython-311"));
    assert_null(f[1].library); /* the executable: gdb names no library */
    tdb_native_frames_classify(f, n, NULL);
    size_t evals = 0;
    for (size_t i = 0; i < n; i++)
        evals += f[i].is_eval;
    assert_true(evals >= 1);

    tdb_map map = {0x400000, 0x900000, 0, "r-xp", "/usr/bin/python3.11"};
    tdb_maps maps = {&map, 1, NULL};
    tdb_native_frames_fill_libraries(f, n, &maps);
    assert_string_equal(f[1].library, "/usr/bin/python3.11");
    tdb_native_frames_free(f, n);

    json_t *bad = json_pack("[{s:s}]", "func", "f");
    assert_int_equal(tdb_native_frames_from_mi(bad, &f, &n), -1);
    json_decref(bad);
    json_t *str = json_string("x");
    assert_int_equal(tdb_native_frames_from_mi(str, &f, &n), -1);
    json_decref(str);
}

/* 'bt' in a debugging session: gdb's recorded frames at PyInit__C (four
 * evaluator frames) with a thread's Python frames, through the one call a
 * session makes per thread. */
static void test_session_bt(void **state)
{
    char *text = tdb_read_file(MI_FIXTURES "/stack-list-frames.mi", NULL, NULL);
    assert_non_null(text);
    tdb_mi_record *r = tdb_mi_parse_line(text, strcspn(text, "\n"));
    free(text);
    json_t *stack = json_object_get(r->results, "stack");

    tdb_py_frame py[] = {pyf("create_module", 1233, 1), pyf("_find_and_load", 1178, 1),
                         pyf("<module>", 218, 1), pyf("_load_unlocked", 690, 0),
                         pyf("<module>", 1, 1)};
    tdb_py_thread th;
    memset(&th, 0, sizeof(th));
    th.tid = 4242;
    th.gil = TDB_GIL_HELD;
    th.frames = py;
    th.n_frames = N(py);
    tdb_py_snapshot snap;
    memset(&snap, 0, sizeof(snap));
    snap.threads = &th;
    snap.n_threads = 1;

    tdb_thread_stacks t;
    assert_int_equal(tdb_thread_stacks_from_mi(&t, getpid(), 4242, stack, NULL, NULL, &snap), 0);
    assert_ptr_equal(t.py, &th);
    assert_int_equal(t.merged.status, TDB_MERGE_OK);
    tdb_buf b = TDB_BUF_INIT;
    tdb_thread_stacks_render(&b, &t, 0);
    const char *out = tdb_buf_str(&b);
    assert_true(starts_with(out, "Thread 4242 (holds the GIL):\n  0x00007ffff774f110 PyInit__C+0x0 "
                                 "(_C.cpython-311-x86_64-linux-gnu.so)\n"));
    const char *create = strstr(out, "line 1233, in create_module");
    const char *loader = strstr(out, " _PyImport_LoadDynamicModuleWithSpec+0x0");
    assert_non_null(create);
    assert_non_null(loader);
    assert_true(loader < create); /* the C loader runs inside the Python frame */
    tdb_buf_free(&b);
    json_t *j = tdb_thread_stacks_json(&t, 0);
    assert_string_equal(json_string_value(json_object_get(j, "gil")), "held");
    assert_string_equal(json_string_value(json_object_get(j, "merge")), "ok");
    json_decref(j);
    tdb_thread_stacks_clear(&t);

    /* Another thread: no Python state; not a frame list: said so. */
    assert_int_equal(tdb_thread_stacks_from_mi(&t, getpid(), 4243, stack, NULL, NULL, &snap), 0);
    assert_null(t.py);
    assert_int_equal(t.merged.status, TDB_MERGE_NATIVE_ONLY);
    b = (tdb_buf)TDB_BUF_INIT;
    tdb_thread_stacks_render(&b, &t, 0);
    assert_true(starts_with(tdb_buf_str(&b), "Thread 4243 (no Python):\n  0x00007ffff774f110 "));
    tdb_buf_free(&b);
    tdb_thread_stacks_clear(&t);
    json_t *junk = json_string("junk");
    assert_int_equal(tdb_thread_stacks_from_mi(&t, getpid(), 4242, junk, NULL, NULL, &snap), -1);
    json_decref(junk);
    assert_int_equal(t.merged.status, TDB_MERGE_PYTHON_ONLY);
    tdb_thread_stacks_clear(&t);
    tdb_mi_record_free(r);
}

static void test_names(void **state)
{
    char a[] = "clock_nanosleep@GLIBC_2.2.5", b[] = "dlopen@@GLIBC_2.34",
         c[] = "time_sleep.lto_priv.0", d[] = "_PyEval_EvalFrameDefault.cold",
         e[] = "_ZN2at6native3addERKNS_6TensorE.cold", f[] = "foo.bar", g[] = ".hidden";
    tdb_native_name_clean(a);
    tdb_native_name_clean(b);
    tdb_native_name_clean(c);
    tdb_native_name_clean(d);
    tdb_native_name_clean(e);
    tdb_native_name_clean(f);
    tdb_native_name_clean(g);
    tdb_native_name_clean(NULL);
    assert_string_equal(a, "clock_nanosleep");
    assert_string_equal(b, "dlopen");
    assert_string_equal(c, "time_sleep");
    assert_string_equal(d, "_PyEval_EvalFrameDefault");
    assert_string_equal(e, "_ZN2at6native3addERKNS_6TensorE.cold");
    assert_string_equal(f, "foo.bar");
    assert_string_equal(g, ".hidden");

    char *s = tdb_demangle("_ZN2at4_ops10add_Tensor4callERKNS_6TensorES4_RKN3c106ScalarE");
    assert_string_equal(s, "at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, "
                           "c10::Scalar const&)");
    free(s);
    s = tdb_demangle("PyObject_Call");
    assert_string_equal(s, "PyObject_Call");
    free(s);
    s = tdb_demangle("_Znot-a-mangled-name");
    assert_string_equal(s, "_Znot-a-mangled-name");
    free(s);

    /* The ".cold" part of the evaluator is an evaluator frame too. */
    tdb_native_frame fr[2] = {nat('n', "_PyEval_EvalFrameDefault.cold", NULL),
                              nat('n', "_PyEval_EvalFrameDefaultX", NULL)};
    tdb_native_frames_classify(fr, 2, NULL);
    assert_true(fr[0].is_eval);
    assert_false(fr[1].is_eval);
    free_natives(fr, 2);
}

/* 3.8-3.10: every Python frame has its own evaluator call (every frame is
 * an entry frame), the C function between two is kept. */
static void test_one_evaluator_per_frame(void **state)
{
    tdb_native_frame nf[] = {
        nat('n', "select", "libc.so.6"), nat('i', "time_sleep", "libpython3.9.so.1.0"),
        nat('e', "_PyEval_EvalFrameDefault", "libpython3.9.so.1.0"),
        nat('i', "_PyFunction_Vectorcall", "libpython3.9.so.1.0"),
        nat('e', "_PyEval_EvalFrameDefault", "libpython3.9.so.1.0"),
        nat('n', "stackfix_call", "stackfix.so"),
        nat('e', "_PyEval_EvalFrameDefault", "libpython3.9.so.1.0"),
        nat('n', "main", "python3.9"),
    };
    tdb_py_frame py[] = {pyf("leaf", 4, 1), pyf("middle", 6, 1), pyf("<module>", 9, 1)};
    tdb_merged_stack m;
    tdb_stack_merge(nf, N(nf), py, N(py), &m);
    assert_int_equal(m.status, TDB_MERGE_OK);
    char *w = words(&m, 0);
    assert_string_equal(w, "c:select c:time_sleep py:leaf py:middle c:stackfix_call py:<module> "
                           "c:main");
    free(w);
    tdb_merged_stack_free(&m);
    for (size_t i = 0; i < N(nf); i++) {
        free(nf[i].function);
        free(nf[i].library);
    }
}

/* 3.12/3.13: Python-to-Python calls are inlined; the reader marks the
 * frame above each evaluator's own entry frame, so a generator resumed
 * from C (next()) starts a run of its own. */
static void test_inlined_calls_and_a_generator(void **state)
{
    tdb_native_frame nf[] = {
        nat('n', "read", "libc.so.6"),
        nat('e', "_PyEval_EvalFrameDefault", "libpython3.12.so.1.0"),
        nat('i', "gen_iternext", "libpython3.12.so.1.0"),
        nat('i', "builtin_next", "libpython3.12.so.1.0"),
        nat('e', "_PyEval_EvalFrameDefault", "libpython3.12.so.1.0"),
        nat('n', "main", "python3.12"),
    };
    tdb_py_frame py[] = {pyf("produce", 3, 1), pyf("consume", 8, 0), pyf("run", 11, 0),
                         pyf("<module>", 14, 1)};
    tdb_merged_stack m;
    tdb_stack_merge(nf, N(nf), py, N(py), &m);
    assert_int_equal(m.status, TDB_MERGE_OK);
    char *w = words(&m, 0);
    assert_string_equal(w, "c:read py:produce py:consume py:run py:<module> c:main");
    free(w);
    w = words(&m, TDB_STACK_RAW);
    assert_string_equal(w, "c:read py:produce c:_PyEval_EvalFrameDefault c:gen_iternext "
                           "c:builtin_next py:consume py:run py:<module> "
                           "c:_PyEval_EvalFrameDefault c:main");
    free(w);
    tdb_merged_stack_free(&m);
    for (size_t i = 0; i < N(nf); i++) {
        free(nf[i].function);
        free(nf[i].library);
    }
}

/* The marks of a thread: collecting garbage, in a signal handler, waiting
 * for the GIL, from its native frames when its thread state says nothing. */
static void test_thread_marks(void **state)
{
    tdb_thread_stacks t;
    memset(&t, 0, sizeof(t));
    tdb_native_frame nf[] = {
        nat('n', "futex_wait", "libc.so.6"), nat('i', "take_gil", "python3.11"),
        nat('i', "gc_collect_main", "python3.11"), nat('n', "__restore_rt", "libc.so.6"),
    };
    tdb_py_thread th;
    memset(&th, 0, sizeof(th));
    t.py = &th;
    t.python_process = 1;
    t.native = nf;
    t.n_native = 2;
    tdb_thread_stacks_marks(&t);
    assert_int_equal(t.gil, TDB_GIL_WAITING);
    assert_false(t.gc);
    assert_false(t.in_signal);
    t.n_native = N(nf);
    tdb_thread_stacks_marks(&t);
    assert_true(t.gc);
    assert_true(t.in_signal);
    th.gil = TDB_GIL_HELD;
    tdb_thread_stacks_marks(&t);
    assert_int_equal(t.gil, TDB_GIL_HELD);
    tdb_buf b = TDB_BUF_INIT;
    t.n_native = 0;
    t.python_name = "loader-\xc3\xa9";
    th.interp_id = 2;
    tdb_thread_stacks_marks(&t);
    t.tid = 77;
    t.gc = 1;
    tdb_thread_stacks_render(&b, &t, 0);
    assert_string_equal(tdb_buf_str(&b), "Thread 77, threading \"loader-\xc3\xa9\", interpreter 2 "
                                         "(holds the GIL, collecting garbage):\n");
    tdb_buf_free(&b);
    for (size_t i = 0; i < N(nf); i++) {
        free(nf[i].function);
        free(nf[i].library);
    }
}

/* JSON keeps bytes that are not UTF-8, escaped and flagged. */
static void test_json_bytes(void **state)
{
    json_t *o = json_object();
    tdb_json_set_str(o, "name", "ok-\xc3\xa9");
    tdb_json_set_str(o, "path", "/tmp/a\xff\\b\x80");
    tdb_json_set_str(o, "none", NULL);
    assert_string_equal(json_string_value(json_object_get(o, "name")), "ok-\xc3\xa9");
    assert_null(json_object_get(o, "name_escaped"));
    assert_string_equal(json_string_value(json_object_get(o, "path")), "/tmp/a\\xff\\\\b\\x80");
    assert_true(json_is_true(json_object_get(o, "path_escaped")));
    assert_true(json_is_null(json_object_get(o, "none")));
    json_decref(o);
    /* NUL is valid UTF-8: kept (JSON writes it \u0000), not escaped. */
    int esc = -1;
    json_t *s = tdb_json_bytes("a\0b", 3, 0, &esc);
    assert_int_equal(esc, 0);
    assert_int_equal(json_string_length(s), 3);
    json_decref(s);
    /* Overlong forms and surrogates are not UTF-8. */
    assert_false(tdb_utf8_valid("\xc0\xaf", 2));
    assert_false(tdb_utf8_valid("\xed\xa0\x80", 3));
    assert_true(tdb_utf8_valid("\xf0\x9f\x98\x80", 4));
    assert_false(tdb_utf8_valid("\xf0\x9f\x98", 3));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interleaving),  cmocka_unit_test(test_leaf_frames),
        cmocka_unit_test(test_mismatch),      cmocka_unit_test(test_one_side_only),
        cmocka_unit_test(test_json_fields),   cmocka_unit_test(test_frames_from_gdb),
        cmocka_unit_test(test_session_bt),    cmocka_unit_test(test_names),
        cmocka_unit_test(test_one_evaluator_per_frame),
        cmocka_unit_test(test_inlined_calls_and_a_generator),
        cmocka_unit_test(test_thread_marks),  cmocka_unit_test(test_json_bytes),
    };
    return cmocka_run_group_tests_name("stackmerge", tests, NULL, NULL);
}

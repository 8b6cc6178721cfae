/*
 * test_session_opts.c: the options 'run' and 'attach' share, and what a
 * --break LOCATION names: gdb's own locations pass to gdb; Python ones
 * (FILE.py:LINE, torch.add) are answered with what to write instead,
 * never with the advice for native names that never bind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "cmd/cmd.h"
#include "cmd/options.h"
#include "session/session.h"
#include "tdebug_pyhook.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The usage errors tdb_session_option() prints, kept for the assertions
 * (main.c's own prints them to stderr). */
static char last_usage[2048];

int tdb_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(last_usage, sizeof(last_usage), "tdebug %s: ", cmd);
    va_start(ap, fmt);
    vsnprintf(last_usage + n, sizeof(last_usage) - (size_t)n, fmt, ap);
    va_end(ap);
    return TDB_EXIT_USAGE;
}

int tdb_print_usage(const char *cmd)
{
    return TDB_EXIT_OK;
}

static void test_kinds(void **state)
{
    static const struct {
        const char *loc;
        tdb_break_kind kind;
    } cases[] = {
        {"at::native::add", TDB_BREAK_NATIVE},
        {"at::_ops::add_Tensor::call", TDB_BREAK_NATIVE},
        {"mycore.c:42", TDB_BREAK_NATIVE},
        {"src/ops.cpp:7", TDB_BREAK_NATIVE},
        {"*0x401000", TDB_BREAK_NATIVE},
        {"PyInit__C", TDB_BREAK_NATIVE},
        {"tt_native_add.cold", TDB_BREAK_NATIVE},         /* GCC clones */
        {"foo.part.0", TDB_BREAK_NATIVE},
        {"foo.constprop.0.isra.0", TDB_BREAK_NATIVE},
        {"mycore.c", TDB_BREAK_NATIVE},
        {"kernel.cu", TDB_BREAK_NATIVE},
        {"libfoo.so:bar", TDB_BREAK_NATIVE},
        {"add.py:4", TDB_BREAK_PYTHON_FILE},
        {"pkg/train.py:main", TDB_BREAK_PYTHON_FILE},
        {"/abs/path/x.py:120", TDB_BREAK_PYTHON_FILE},
        {"add.py", TDB_BREAK_PYTHON_FILE},
        {"torch.add", TDB_BREAK_PYTHON_NAME},
        {"torch.nn.functional.relu", TDB_BREAK_PYTHON_NAME},
        {"numpy.add", TDB_BREAK_PYTHON_NAME},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tdb_break_kind k = tdb_break_location_kind(cases[i].loc);
        if (k != cases[i].kind)
            fail_msg("'%s' classified %d, expected %d", cases[i].loc, k, cases[i].kind);
    }
}

static void test_break_option(void **state)
{
    tdb_session_options o = {0};

    assert_int_equal(tdb_session_option("run", 'b', "at::native::add", &o), 1);
    assert_int_equal(o.n_breaks, 1);

    /* a Python place is a breakpoint like any */
    assert_int_equal(tdb_session_option("run", 'b', "add.py:4", &o), 1);
    assert_int_equal(o.n_breaks, 2);

    last_usage[0] = '\0';
    assert_int_equal(tdb_session_option("run", 'b', "add.py", &o), -TDB_EXIT_USAGE);
    assert_int_equal(o.n_breaks, 2);
    assert_non_null(strstr(last_usage, "'add.py' names a Python file but no place in it"));
    assert_null(strstr(last_usage, "--symbols")); /* not the advice for native names */

    last_usage[0] = '\0';
    assert_int_equal(tdb_session_option("attach", 'b', "torch.add", &o), -TDB_EXIT_USAGE);
    assert_non_null(strstr(last_usage, "tdebug attach: --break 'torch.add' is a Python name"));
    assert_non_null(strstr(last_usage, "at::_ops::add_Tensor::call"));
    assert_non_null(strstr(last_usage, "FILE.py:FUNCTION"));

    last_usage[0] = '\0';
    assert_int_equal(tdb_session_option("run", 'b', "numpy.add", &o), -TDB_EXIT_USAGE);
    assert_null(strstr(last_usage, "at::_ops")); /* torch's advice is for torch */
    assert_non_null(strstr(last_usage, "FILE.py:FUNCTION"));
    tdb_session_options_release(&o);
}

/* 'LOCATION if CONDITION', as gdb's break takes it, and hit conditions. */
static void test_break_conditions(void **state)
{
    tdb_session_options o = {0};
    const char *cond;
    char *loc;

    assert_int_equal(tdb_session_option("run", 'b', "train.py:42 if loss > 10", &o), 1);
    assert_int_equal(tdb_session_option("run", 'b', "mycore.c:42 if n == 0", &o), 1);
    last_usage[0] = '\0';
    assert_int_equal(tdb_session_option("run", 'b', "train.py:42 if ", &o), -TDB_EXIT_USAGE);
    assert_non_null(strstr(last_usage, "has 'if' but no condition after it"));
    last_usage[0] = '\0';
    assert_int_equal(tdb_session_option("run", 'b', "train.py if x", &o), -TDB_EXIT_USAGE);
    assert_non_null(strstr(last_usage, "names a Python file but no place in it"));
    assert_int_equal(o.n_breaks, 2);
    tdb_session_options_release(&o);

    loc = tdb_break_split("train.py:42 if loss > 10 if x", &cond);
    assert_string_equal(loc, "train.py:42");
    assert_string_equal(cond, "loss > 10 if x"); /* the first 'if' */
    free(loc);
    loc = tdb_break_split("f(int, char const*) if a == 1", &cond);
    assert_string_equal(loc, "f(int, char const*)");
    assert_string_equal(cond, "a == 1");
    free(loc);
    loc = tdb_break_split("at::native::add", &cond);
    assert_string_equal(loc, "at::native::add");
    assert_null(cond);
    free(loc);
    loc = tdb_break_split("verify_iffy.py:3", &cond); /* 'if' inside a word */
    assert_null(cond);
    free(loc);

    static const struct {
        const char *text;
        int op, value;
        unsigned long long stops[3]; /* hits 1..10 that stop: the first three */
    } hits[] = {
        {"5", TDB_PYHOOK_HIT_EQ, 5, {5, 0, 0}},     {"==5", TDB_PYHOOK_HIT_EQ, 5, {5, 0, 0}},
        {">=8", TDB_PYHOOK_HIT_GE, 8, {8, 9, 10}},  {"> 8", TDB_PYHOOK_HIT_GT, 8, {9, 10, 0}},
        {"<3", TDB_PYHOOK_HIT_LT, 3, {1, 2, 0}},    {"%4", TDB_PYHOOK_HIT_MOD, 4, {4, 8, 0}},
        {"", TDB_PYHOOK_HIT_ANY, 0, {1, 2, 3}},
    };
    for (size_t i = 0; i < sizeof(hits) / sizeof(hits[0]); i++) {
        int op = -1, value = -1;
        assert_int_equal(tdb_session_parse_hit_condition(hits[i].text, &op, &value, NULL), 0);
        assert_int_equal(op, hits[i].op);
        assert_int_equal(value, hits[i].value);
        size_t k = 0;
        for (unsigned long long n = 1; n <= 10 && k < 3; n++)
            if (tdb_pyhook_hit_passes(op, n, value))
                assert_int_equal(n, hits[i].stops[k++]);
        assert_true(k == 3 || hits[i].stops[k] == 0);
    }
    static const char *const bad[] = {"five", "%0", ">", "=5", "5x", "-1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int op, value;
        tdb_error err = {0};
        if (tdb_session_parse_hit_condition(bad[i], &op, &value, &err) == 0)
            fail_msg("'%s' taken as a hit condition", bad[i]);
        assert_non_null(strstr(err.msg, "is not a hit condition"));
    }
}

static void test_catch_throw_option(void **state)
{
    tdb_session_options o = {0};

    assert_int_equal(tdb_session_option("run", TDB_OPT_CATCH_THROW, NULL, &o), 1);
    assert_int_equal(tdb_session_option("attach", TDB_OPT_CATCH_THROW, "c10::Error", &o), 1);
    assert_int_equal(tdb_session_option("run", TDB_OPT_CATCH_THROW,
                                        "std::vector<int, std::allocator<int> >", &o), 1);
    assert_int_equal(o.n_catch_throw, 3);
    assert_string_equal(o.catch_throw[0], ""); /* every throw */
    assert_string_equal(o.catch_throw[1], "c10::Error");

    last_usage[0] = '\0';
    assert_int_equal(tdb_session_option("run", TDB_OPT_CATCH_THROW, "c10::.*", &o), -TDB_EXIT_USAGE);
    assert_non_null(strstr(last_usage, "tdebug run: --catch-throw=c10::.*: 'c10::.*' is not a C++ "
                                       "class name"));
    assert_non_null(strstr(last_usage, "not a regex"));
    assert_int_equal(o.n_catch_throw, 3);

    static const char *const refused[] = {"", "Error|IndexError", "(c10::Error)", "3d",
                                          "c10::Error\n", "a.b"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        if (!tdb_catch_type_refusal(refused[i], NULL))
            fail_msg("'%s' taken as a class name", refused[i]);
    assert_int_equal(tdb_catch_type_refusal("::std::out_of_range", NULL), 0);
    tdb_session_options_release(&o);
    assert_int_equal(o.n_catch_throw, 0);
}

static void test_step_into_options(void **state)
{
    (void)state;
    tdb_session_options o = {0};
    assert_int_equal(o.step_into, TDB_STEP_INTO_MINE); /* the default */
    assert_int_equal(tdb_session_option("run", TDB_OPT_STEP_INTO, "binding", &o), 1);
    assert_int_equal(o.step_into, TDB_STEP_INTO_BINDING);
    assert_int_equal(tdb_session_option("attach", TDB_OPT_STEP_INTO, "operator", &o), 1);
    assert_int_equal(o.step_into, TDB_STEP_INTO_OPERATOR);
    last_usage[0] = '\0';
    assert_int_equal(tdb_session_option("run", TDB_OPT_STEP_INTO, "Mine", &o), -TDB_EXIT_USAGE);
    assert_non_null(strstr(last_usage, "--step-into 'Mine' is not where a step stops"));
    assert_int_equal(o.step_into, TDB_STEP_INTO_OPERATOR);
    for (int i = 0; i < 3; i++)
        assert_int_equal(tdb_step_into_parse(tdb_step_into_words[i], NULL), i);

    assert_int_equal(tdb_session_option("run", TDB_OPT_MY_CODE, "/src/mine", &o), 1);
    assert_int_equal(tdb_session_option("run", TDB_OPT_MY_CODE, "lib", &o), 1);
    assert_int_equal(o.n_my_code, 2);
    assert_string_equal(o.my_code[1], "lib");
    assert_int_equal(tdb_session_option("run", TDB_OPT_MY_CODE, "", &o), -TDB_EXIT_USAGE);
    tdb_session_options_release(&o);
    assert_int_equal(o.n_my_code, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_break_option),
        cmocka_unit_test(test_break_conditions),
        cmocka_unit_test(test_catch_throw_option),
        cmocka_unit_test(test_step_into_options),
    };
    return cmocka_run_group_tests_name("session_opts", tests, NULL, NULL);
}

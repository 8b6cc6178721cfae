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

#include <stdio.h>
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
        cmocka_unit_test(test_catch_throw_option),
        cmocka_unit_test(test_step_into_options),
    };
    return cmocka_run_group_tests_name("session_opts", tests, NULL, NULL);
}

/* test_common.c: what src/common.c decides for every command. */
#include "common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- tdb_target_python ---- */

static void test_target_python_rule(void **state)
{
    (void)state;
    unsetenv("TDEBUG_PYTHON");
    assert_string_equal(tdb_target_python(NULL), tdb_default_python());
    setenv("TDEBUG_PYTHON", "", 1); /* set but empty: as if unset */
    assert_string_equal(tdb_target_python(NULL), tdb_default_python());
    setenv("TDEBUG_PYTHON", "/opt/py/bin/python3", 1);
    assert_string_equal(tdb_target_python(NULL), "/opt/py/bin/python3");
    /* The option wins, even an empty one (the command refuses it). */
    assert_string_equal(tdb_target_python("python3.11"), "python3.11");
    assert_string_equal(tdb_target_python(""), "");
    unsetenv("TDEBUG_PYTHON");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target_python_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

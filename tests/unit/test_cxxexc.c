/*
 * test_cxxexc.c: the exception at a __cxa_throw, from objects laid out in
 * this process's memory (fake_cxx.h): c10::Error and a subclass (the
 * message found without knowing where the class keeps it, in two different
 * layouts), std::out_of_range's copy-on-write message, classes whose
 * message cannot be read, a thrown int, hostile messages in JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "native/cxxexc.h"
#include "fake_cxx.h"
#include "process/procfs.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tdb_mem mem;
static uint64_t t_exception, t_error, t_index;

static int setup(void **state)
{
    tdb_mem_init(&mem, getpid());
    t_exception = fake_class("St9exception");
    t_error = fake_si_class("N3c105ErrorE", t_exception);
    t_index = fake_si_class("N3c1010IndexErrorE", t_error);
    return 0;
}

static int teardown(void **state)
{
    fake_reset();
    tdb_mem_close(&mem);
    return 0;
}

/* A c10::Error as torch 1.13 lays it out: vptr, msg_, context_ (a
 * vector), backtrace_, what_, what_without_backtrace_, caller_.  LEAD
 * extra words come first (another layout of the same members). */
static uint64_t fake_c10_error(uint64_t type, const char *msg, const char *context, int lead)
{
    char *obj = fake_alloc(8 + 8 * (size_t)lead + 32 + 24 + 32 * 3 + 8);
    uint64_t *w = (uint64_t *)obj;
    char bt[] = "Exception raised from addmm_impl_cpu_ at ../aten/src/ATen/native/LinearAlgebra.cpp:1309 "
                "(most recent call first):\nframe #0: c10::Error::Error(...)";
    char what[1024], wwb[512];
    w[0] = fake_vtable(type, 3);
    for (int i = 0; i < lead; i++)
        w[1 + i] = 0x1234 + (uint64_t)i;
    char *p = obj + 8 + 8 * lead;
    fake_string(p, msg, strlen(msg));
    uint64_t *vec = (uint64_t *)(p + 32);
    vec[0] = vec[1] = vec[2] = context ? addr_of(fake_alloc(32)) : 0;
    snprintf(wwb, sizeof(wwb), "%s%s%s%s", msg, context ? " (" : "", context ? context : "", context ? ")" : "");
    snprintf(what, sizeof(what), "%s\n%s", wwb, bt);
    fake_string(p + 56, bt, strlen(bt));
    fake_string(p + 88, what, strlen(what));
    fake_string(p + 120, wwb, strlen(wwb));
    return addr_of(obj);
}

static void assert_exception(json_t *e, const char *type, const char *message)
{
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "type")), type);
    if (message)
        assert_string_equal(json_string_value(json_object_get(e, "message")), message);
    else
        assert_true(json_is_null(json_object_get(e, "message")));
}

static void test_c10_error(void **state)
{
    const char *msg = "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)";
    uint64_t obj = fake_c10_error(t_error, msg, NULL, 0);
    json_t *e = tdb_cxx_exception(&mem, obj, t_error, NULL);
    assert_exception(e, "c10::Error", msg);
    char *text = tdb_cxx_exception_text(e);
    assert_string_equal(text, "C++ exception 'c10::Error': mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
    free(text);
    json_decref(e);
}

static void test_subclass_other_layout_and_context(void **state)
{
    /* A subclass, the members three words further: the same message, and
     * with context the text Python shows (message and context). */
    uint64_t obj = fake_c10_error(t_index, "index 5 is out of bounds", "while indexing", 3);
    json_t *e = tdb_cxx_exception(&mem, obj, t_index, NULL);
    assert_exception(e, "c10::IndexError", "index 5 is out of bounds (while indexing)");
    json_decref(e);
    /* A short message, kept in the string's own buffer. */
    obj = fake_c10_error(t_error, "short", NULL, 1);
    e = tdb_cxx_exception(&mem, obj, t_error, NULL);
    assert_exception(e, "c10::Error", "short");
    json_decref(e);
}

static void test_c10_error_without_strings(void **state)
{
    /* Nothing that validates as a std::string: no message, and why. */
    uint64_t *obj = fake_alloc(200);
    obj[0] = fake_vtable(t_error, 3);
    for (int i = 1; i < 25; i++)
        obj[i] = (uint64_t)i * 3;
    json_t *e = tdb_cxx_exception(&mem, addr_of(obj), t_error, NULL);
    assert_exception(e, "c10::Error", NULL);
    assert_non_null(strstr(json_string_value(json_object_get(e, "note")), "no message found"));
    json_decref(e);
}

static void test_type_filter(void **state)
{
    /* 'catch throw c10::Error' stops for its subclasses too. */
    uint64_t obj = fake_c10_error(t_index, "index 5", NULL, 0);
    assert_int_equal(tdb_cxx_exception_is(&mem, obj, t_index, "c10::Error", NULL), 1);
    assert_int_equal(tdb_cxx_exception_is(&mem, obj, t_index, "c10::IndexError", NULL), 1);
    assert_int_equal(tdb_cxx_exception_is(&mem, obj, t_index, "std::exception", NULL), 1);
    assert_int_equal(tdb_cxx_exception_is(&mem, obj, t_error, "c10::IndexError", NULL), 0);
    assert_int_equal(tdb_cxx_exception_is(&mem, obj, t_index, "std::runtime_error", NULL), 0);
    tdb_error e = {0};
    assert_int_equal(tdb_cxx_exception_is(&mem, obj, obj, "c10::Error", &e), -1);
    assert_true(e.set);
}

static void test_std_exceptions(void **state)
{
    uint64_t logic = fake_si_class("St11logic_error", t_exception);
    uint64_t oor = fake_si_class("St12out_of_range", logic);
    uint64_t runtime = fake_si_class("St13runtime_error", t_exception);
    uint64_t *obj = fake_alloc(16);
    obj[0] = fake_vtable(oor, 2);
    obj[1] = fake_cow_chars("stoi");
    json_t *e = tdb_cxx_exception(&mem, addr_of(obj), oor, NULL);
    assert_exception(e, "std::out_of_range", "stoi");
    json_decref(e);
    obj[0] = fake_vtable(runtime, 2);
    obj[1] = fake_cow_chars("shape '[-1, 7]' is invalid for input of size 3");
    e = tdb_cxx_exception(&mem, addr_of(obj), runtime, NULL);
    assert_exception(e, "std::runtime_error", "shape '[-1, 7]' is invalid for input of size 3");
    json_decref(e);
    /* A corrupt message: said, not guessed. */
    obj[1] = 16;
    e = tdb_cxx_exception(&mem, addr_of(obj), runtime, NULL);
    assert_exception(e, "std::runtime_error", NULL);
    assert_non_null(strstr(json_string_value(json_object_get(e, "note")), "cannot read the message"));
    json_decref(e);
}

static void test_cannot_read(void **state)
{
    uint64_t bad_alloc = fake_si_class("St9bad_alloc", t_exception);
    uint64_t *obj = fake_alloc(8);
    obj[0] = fake_vtable(bad_alloc, 2);
    json_t *e = tdb_cxx_exception(&mem, addr_of(obj), bad_alloc, NULL);
    assert_exception(e, "std::bad_alloc", NULL);
    assert_string_equal(json_string_value(json_object_get(e, "note")),
                        "cannot read the message of a 'std::bad_alloc' without calling its what() in "
                        "the process, which tdebug does not do");
    char *text = tdb_cxx_exception_text(e);
    assert_non_null(strstr(text, "C++ exception 'std::bad_alloc' (cannot read"));
    free(text);
    json_decref(e);

    /* throw 42: the type_info of int is no class. */
    static const char int_name[] = "i";
    uint64_t meta[2] = {0, addr_of("N10__cxxabiv123__fundamental_type_infoE")};
    uint64_t *ti = fake_alloc(16);
    ti[0] = fake_vtable(addr_of(meta), 0);
    ti[1] = addr_of(int_name);
    int *v = fake_alloc(4);
    *v = 42;
    e = tdb_cxx_exception(&mem, addr_of(v), addr_of(ti), NULL);
    assert_exception(e, "int", NULL);
    json_decref(e);

    /* Registers that were no __cxa_throw arguments: an error. */
    tdb_error err = {0};
    assert_null(tdb_cxx_exception(&mem, addr_of(v), addr_of(v), &err));
    assert_true(err.set);
}

static void test_hostile_messages(void **state)
{
    /* Not UTF-8, quotes and control characters: the JSON still dumps. */
    const char *msg = "bad \xff\xfe bytes \"quoted\" \n\t and more than fifteen";
    uint64_t obj = fake_c10_error(t_error, msg, NULL, 0);
    json_t *e = tdb_cxx_exception(&mem, obj, t_error, NULL);
    char *dump = json_dumps(e, JSON_COMPACT);
    assert_non_null(dump);
    /* kept, escaped (tdebug(1), JSON OUTPUT), and flagged */
    assert_non_null(strstr(dump, "bad \\\\xff\\\\xfe bytes \\\"quoted\\\" \\n\\t"));
    assert_true(json_is_true(json_object_get(e, "message_escaped")));
    free(dump);
    json_decref(e);

    /* Very long: cut, and marked. */
    size_t n = 3 * TDB_CXX_MESSAGE_MAX;
    char *big = malloc(n + 1);
    memset(big, 'm', n);
    big[n] = '\0';
    obj = fake_c10_error(t_error, big, NULL, 0);
    e = tdb_cxx_exception(&mem, obj, t_error, NULL);
    const char *m = json_string_value(json_object_get(e, "message"));
    assert_int_equal(strlen(m), TDB_CXX_MESSAGE_MAX + 3);
    assert_string_equal(m + TDB_CXX_MESSAGE_MAX, "...");
    json_decref(e);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_c10_error),
        cmocka_unit_test(test_subclass_other_layout_and_context),
        cmocka_unit_test(test_c10_error_without_strings),
        cmocka_unit_test(test_type_filter),
        cmocka_unit_test(test_std_exceptions),
        cmocka_unit_test(test_cannot_read),
        cmocka_unit_test(test_hostile_messages),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

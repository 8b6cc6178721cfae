/*
 * test_cxxabi.c: Itanium C++ ABI type information and libstdc++ strings
 * read through tdb_mem, from objects laid out in this process's memory
 * (fake_cxx.h): kinds of type_info, base walks (single, multiple, virtual),
 * dynamic types, strings short, long, corrupt and unreadable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "native/cxxabi.h"
#include "fake_cxx.h"
#include "process/procfs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tdb_mem mem;

static int setup(void **state)
{
    tdb_mem_init(&mem, getpid());
    return 0;
}

static int teardown(void **state)
{
    fake_reset();
    tdb_mem_close(&mem);
    return 0;
}

static void test_kinds_and_names(void **state)
{
    uint64_t exc = fake_class("St9exception");
    uint64_t err = fake_si_class("N3c105ErrorE", exc);
    uint64_t local = fake_class("*N12_GLOBAL__N_13FooE");
    tdb_rtti t;
    tdb_error e = {0};

    assert_int_equal(tdb_rtti_read(&mem, exc, &t, &e), 0);
    assert_int_equal(t.kind, TDB_RTTI_CLASS);
    assert_int_equal(t.n_bases, 0);
    char *name = tdb_rtti_name(&t);
    assert_string_equal(name, "std::exception");
    free(name);

    assert_int_equal(tdb_rtti_read(&mem, err, &t, &e), 0);
    assert_int_equal(t.kind, TDB_RTTI_SI_CLASS);
    assert_int_equal(t.n_bases, 1);
    assert_int_equal(t.bases[0].type, exc);
    name = tdb_rtti_name(&t);
    assert_string_equal(name, "c10::Error");
    free(name);

    /* GCC marks types local to a unit with '*': not part of the name. */
    assert_int_equal(tdb_rtti_read(&mem, local, &t, &e), 0);
    assert_string_equal(t.mangled, "N12_GLOBAL__N_13FooE");
}

static void test_not_type_info(void **state)
{
    tdb_rtti t;
    tdb_error e = {0};
    uint64_t *junk = fake_alloc(32);
    junk[0] = 12345; /* no vptr */
    assert_int_equal(tdb_rtti_read(&mem, addr_of(junk), &t, &e), -1);
    assert_true(e.set);

    /* A name that is no mangled name. */
    static const char bad_name[] = "hello world";
    uint64_t bad = fake_class(bad_name);
    tdb_error_clear(&e);
    assert_int_equal(tdb_rtti_read(&mem, bad, &t, &e), -1);
    assert_non_null(strstr(e.msg, "not a mangled type name"));

    /* The type_info's own vtable leads to a class outside __cxxabiv1. */
    static const char meta_name[] = "N3foo3BarE";
    uint64_t meta[2] = {0, addr_of(meta_name)};
    uint64_t *ti = fake_alloc(16);
    ti[0] = fake_vtable(addr_of(meta), 0);
    ti[1] = addr_of("N3c105ErrorE");
    tdb_error_clear(&e);
    assert_int_equal(tdb_rtti_read(&mem, addr_of(ti), &t, &e), -1);
    assert_non_null(strstr(e.msg, "N3foo3BarE"));

    tdb_error_clear(&e);
    assert_int_equal(tdb_rtti_read(&mem, fake_unreadable(), &t, &e), -1);
    assert_non_null(strstr(e.msg, "cannot read memory"));
}

static void test_find_base(void **state)
{
    /* IndexError -> Error -> exception, and a class with two bases, the
     * second at offset 16: the offsets add up along the path. */
    uint64_t exc = fake_class("St9exception");
    uint64_t err = fake_si_class("N3c105ErrorE", exc);
    uint64_t idx = fake_si_class("N3c1010IndexErrorE", err);
    uint64_t other = fake_class("N3foo5OtherE");
    uint64_t bases[2] = {other, idx};
    int64_t offs[2] = {0, 16};
    uint64_t multi = fake_vmi_class("N3foo5MultiE", 2, bases, offs, NULL);
    int64_t off = -1;

    assert_int_equal(tdb_rtti_find_base(&mem, idx, "N3c105ErrorE", 0, &off, NULL), 1);
    assert_int_equal(off, 0);
    assert_int_equal(tdb_rtti_find_base(&mem, multi, "N3c105ErrorE", 0, &off, NULL), 1);
    assert_int_equal(off, 16);
    assert_int_equal(tdb_rtti_find_base(&mem, multi, "St9exception", 0, &off, NULL), 1);
    assert_int_equal(off, 16);
    assert_int_equal(tdb_rtti_find_base(&mem, multi, "St13runtime_error", 0, &off, NULL), 0);
    assert_int_equal(tdb_rtti_find_base_named(&mem, multi, "c10::IndexError", 0, &off, NULL), 1);
    assert_int_equal(off, 16);
    assert_int_equal(tdb_rtti_find_base_named(&mem, multi, "foo::Multi", 0, &off, NULL), 1);
    assert_int_equal(off, 0);
}

static void test_virtual_base(void **state)
{
    /* A virtual base's place is in the object's vtable, at the offset the
     * type_info gives (negative: before the vptr's target). */
    uint64_t vb = fake_class("N3foo5VBaseE");
    uint64_t bases[1] = {vb};
    int64_t offs[1] = {-24};
    int flags[1] = {1};
    uint64_t derived = fake_vmi_class("N3foo7DerivedE", 1, bases, offs, flags);
    uint64_t *vt = fake_alloc(8 * 6);
    vt[0] = 40;   /* at vptr - 24: the virtual base is 40 bytes in */
    vt[1] = 0;    /* offset to top */
    vt[2] = derived;
    uint64_t *obj = fake_alloc(64);
    obj[0] = addr_of(&vt[3]);
    int64_t off = -1;
    assert_int_equal(tdb_rtti_find_base(&mem, derived, "N3foo5VBaseE", addr_of(obj), &off, NULL), 1);
    assert_int_equal(off, 40);
    /* Without the object the path cannot be followed. */
    assert_int_equal(tdb_rtti_find_base(&mem, derived, "N3foo5VBaseE", 0, &off, NULL), 0);
}

static void test_too_many_bases_and_loops(void **state)
{
    uint64_t bases[1] = {0};
    int64_t offs[1] = {0};
    uint64_t ti = fake_vmi_class("N3foo4LoopE", 1, bases, offs, NULL);
    /* Make the class its own base: the walk must stop. */
    ((uint64_t *)(uintptr_t)ti)[3] = ti;
    tdb_error e = {0};
    assert_int_equal(tdb_rtti_find_base(&mem, ti, "N3foo5NeverE", 0, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "too deeply"));

    uint64_t many = fake_vmi_class("N3foo4ManyE", 1, bases, offs, NULL);
    uint32_t hdr[2] = {0, 1000};
    memcpy(&((uint64_t *)(uintptr_t)many)[2], hdr, sizeof(hdr));
    tdb_rtti t;
    tdb_error_clear(&e);
    assert_int_equal(tdb_rtti_read(&mem, many, &t, &e), -1);
    assert_non_null(strstr(e.msg, "1000 bases"));
}

static void test_dynamic_type(void **state)
{
    uint64_t ti = fake_class("N3c1010TensorImplE");
    uint64_t *obj = fake_alloc(32);
    obj[0] = fake_vtable(ti, 4);
    uint64_t type;
    tdb_rtti t;
    tdb_error e = {0};
    assert_int_equal(tdb_cxx_dynamic_type(&mem, addr_of(obj), &type, &t, &e), 0);
    assert_int_equal(type, ti);
    assert_string_equal(t.mangled, "N3c1010TensorImplE");

    /* Data, not a vptr. */
    obj[0] = 42;
    assert_int_equal(tdb_cxx_dynamic_type(&mem, addr_of(obj), &type, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "not a C++ object"));
    /* A vptr of a subobject (non-zero offset to top) is not a whole object. */
    uint64_t *vt = fake_alloc(8 * 3);
    vt[0] = (uint64_t)-16;
    vt[1] = ti;
    obj[0] = addr_of(&vt[2]);
    assert_int_equal(tdb_cxx_dynamic_type(&mem, addr_of(obj), &type, NULL, NULL), -1);
    assert_int_equal(tdb_cxx_dynamic_type(&mem, fake_unreadable(), &type, NULL, NULL), -1);
}

static void test_strings(void **state)
{
    void *s = fake_alloc(32);
    size_t len = 0;
    tdb_error e = {0};

    fake_string(s, "short", 5);
    char *v = tdb_cxx_read_string(&mem, addr_of(s), 100, &len, &e);
    assert_non_null(v);
    assert_string_equal(v, "short");
    assert_int_equal(len, 5);
    free(v);

    const char *longer = "a message longer than fifteen bytes, with \"quotes\"";
    fake_string(s, longer, strlen(longer));
    v = tdb_cxx_read_string(&mem, addr_of(s), 100, &len, &e);
    assert_string_equal(v, longer);
    free(v);
    /* Longer than the caller's bound: refused, not cut. */
    assert_null(tdb_cxx_read_string(&mem, addr_of(s), 10, NULL, &e));
    assert_non_null(strstr(e.msg, "more than 10"));

    /* Embedded NUL and bytes that are not UTF-8 are kept. */
    fake_string(s, "a\0b\xff", 4);
    v = tdb_cxx_read_string(&mem, addr_of(s), 100, &len, NULL);
    assert_int_equal(len, 4);
    assert_memory_equal(v, "a\0b\xff", 4);
    free(v);

    /* Corruptions: a short length with a heap pointer bigger than its
     * capacity; a local string claiming 20 bytes; no NUL; unreadable. */
    uint64_t *w = s;
    fake_string(s, longer, strlen(longer));
    w[2] = 3; /* capacity below length */
    tdb_error_clear(&e);
    assert_null(tdb_cxx_read_string(&mem, addr_of(s), 100, NULL, &e));
    assert_non_null(strstr(e.msg, "no std::string"));
    fake_string(s, "short", 5);
    w[1] = 20;
    assert_null(tdb_cxx_read_string(&mem, addr_of(s), 100, NULL, NULL));
    fake_string(s, "short", 5);
    ((char *)&w[2])[5] = 'x'; /* the NUL overwritten */
    tdb_error_clear(&e);
    assert_null(tdb_cxx_read_string(&mem, addr_of(s), 100, NULL, &e));
    assert_non_null(strstr(e.msg, "no NUL"));
    w[0] = fake_unreadable();
    w[1] = 20;
    w[2] = 30;
    tdb_error_clear(&e);
    assert_null(tdb_cxx_read_string(&mem, addr_of(s), 100, NULL, &e));
    assert_non_null(strstr(e.msg, "unreadable"));
}

static void test_cow_string(void **state)
{
    uint64_t *holder = fake_alloc(8);
    size_t len;
    holder[0] = fake_cow_chars("vector::_M_range_check: __n (which is 5) >= this->size() (which is 3)");
    char *v = tdb_cxx_read_cow_string(&mem, addr_of(holder), 1000, &len, NULL);
    assert_string_equal(v, "vector::_M_range_check: __n (which is 5) >= this->size() (which is 3)");
    free(v);
    /* A header whose length exceeds its capacity is no string. */
    uint64_t *rep = (uint64_t *)(uintptr_t)(holder[0] - 24);
    rep[0] = rep[1] + 1;
    assert_null(tdb_cxx_read_cow_string(&mem, addr_of(holder), 1000, NULL, NULL));
    holder[0] = 8;
    assert_null(tdb_cxx_read_cow_string(&mem, addr_of(holder), 1000, NULL, NULL));
}

static void test_peek(void **state)
{
    uint64_t *w = fake_alloc(16);
    uint64_t v;
    w[1] = 0x1122334455667788ULL;
    assert_int_equal(tdb_peek_u64(&mem, addr_of(&w[1]), &v, NULL), 0);
    assert_int_equal(v, 0x1122334455667788ULL);
    tdb_error e = {0};
    assert_int_equal(tdb_peek_u64(&mem, fake_unreadable(), &v, &e), -1);
    assert_non_null(strstr(e.msg, "cannot read memory at 0x"));

    char *c = fake_alloc(300);
    memset(c, 'x', 299);
    assert_null(tdb_peek_cstring(&mem, addr_of(c), 100, NULL));
    c[50] = '\0';
    char *s = tdb_peek_cstring(&mem, addr_of(c), 100, NULL);
    assert_int_equal(strlen(s), 50);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds_and_names), cmocka_unit_test(test_not_type_info),
        cmocka_unit_test(test_find_base),       cmocka_unit_test(test_virtual_base),
        cmocka_unit_test(test_too_many_bases_and_loops), cmocka_unit_test(test_dynamic_type),
        cmocka_unit_test(test_strings),         cmocka_unit_test(test_cow_string),
        cmocka_unit_test(test_peek),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

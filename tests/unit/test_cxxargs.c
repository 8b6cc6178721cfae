/*
 * test_cxxargs.c: arguments from demangled signatures and the x86-64
 * System V convention.  Registers come from a recorded gdb answer
 * (tests/fixtures/nativevals/registers-add-tensor.mi, gdb 13 at
 * at::_ops::add_Tensor::call) or are set by hand over objects laid out in
 * this process's memory (fake_cxx.h, fake_tensor.h): signatures as the
 * demangler prints torch's, the entry check on real prologue bytes, each
 * interpretation (hidden result pointer, this) chosen by validation,
 * registers and stack slots, every decoded type, the debug-info path.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "torch/cxxargs.h"
#include "fake_cxx.h"
#include "fake_tensor.h"
#include "gdb/mi_parser.h"
#include "process/procfs.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FIXTURES
#define FIXTURES "tests/fixtures/nativevals"
#endif

/* --- registers ---------------------------------------------------------- */

static void test_regs_from_recorded_mi(void **state)
{
    FILE *f = fopen(FIXTURES "/registers-add-tensor.mi", "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    tdb_mi_record *rec[2] = {NULL, NULL};
    assert_non_null(f);
    for (int i = 0; i < 2 && (n = getline(&line, &cap, f)) > 0; i++)
        rec[i] = tdb_mi_parse_line(line, (size_t)n - 1);
    fclose(f);
    free(line);
    tdb_regs r;
    tdb_error e = {0};
    assert_non_null(rec[0]);
    assert_non_null(rec[1]);
    int rc = tdb_regs_from_mi(rec[0]->results, rec[1]->results, &r, &e);
    if (rc < 0)
        fprintf(stderr, "%s\n", e.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(r.gpr[0], 0x7fffffffdde8ULL); /* rdi */
    assert_int_equal(r.gpr[1], 0x7fffffffddd8ULL);
    assert_int_equal(r.gpr[2], 0x7fffffffdde0ULL);
    assert_int_equal(r.gpr[3], 0x7fffffffde20ULL); /* rcx */
    assert_int_equal(r.rsp, 0x7fffffffdda8ULL);
    assert_int_equal(r.rip, 0x7ffff69a6430ULL);
    assert_int_equal(r.xmm[0][0], 0x4004000000000000ULL); /* alpha=2.5 on its way */
    assert_int_equal(r.xmm[3][0], 0x4abbe60ULL);
    assert_int_equal(r.have, TDB_REGS_GPR | TDB_REGS_XMM | TDB_REGS_SP | TDB_REGS_PC);

    /* Without rip the registers are no use. */
    json_t *names = json_deep_copy(rec[0]->results);
    json_array_set_new(json_object_get(names, "register-names"), 16, json_string("notrip"));
    assert_int_equal(tdb_regs_from_mi(names, rec[1]->results, &r, &e), -1);
    assert_non_null(strstr(e.msg, "rip"));
    json_decref(names);
    tdb_mi_record_free(rec[0]);
    tdb_mi_record_free(rec[1]);
}

static void test_regs_vector_halves(void **state)
{
    json_t *names = json_pack("{s:[ssssssssss]}", "register-names", "rdi", "rsi", "rdx", "rcx", "r8",
                              "r9", "rsp", "rip", "xmm0", "xmm1");
    json_t *values = json_pack(
        "{s:[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s}]}",
        "register-values", "number", "0", "value", "0x1", "number", "1", "value", "0x2", "number", "2",
        "value", "0x3", "number", "3", "value", "0x4", "number", "4", "value", "0x5", "number", "5",
        "value", "0x6", "number", "6", "value", "0x7000", "number", "7", "value", "0x8000", "number",
        "8", "value", "{v4_float = {0x1, 0x2}, uint128 = 0x112233445566778899aabbccddeeff00}",
        "number", "9", "value", "{uint128 = 0x0}");
    tdb_regs r;
    assert_int_equal(tdb_regs_from_mi(names, values, &r, NULL), 0);
    assert_int_equal(r.gpr[5], 6);
    assert_int_equal(r.xmm[0][0], 0x99aabbccddeeff00ULL);
    assert_int_equal(r.xmm[0][1], 0x1122334455667788ULL);
    /* not every vector register: the others are usable, xmm is not */
    assert_int_equal(r.have & TDB_REGS_XMM, 0);
    json_decref(names);
    json_decref(values);
}

static void test_at_entry(void **state)
{
    /* endbr64; push %rbp; mov %rsp,%rbp; push %r15; push %rbx; sub $0x10,%rsp */
    static const unsigned char code[] = "\xf3\x0f\x1e\xfa\x55\x48\x89\xe5\x41\x57\x53\x48\x83\xec\x10";
    unsigned char *fn = fake_alloc(sizeof(code));
    memcpy(fn, code, sizeof(code));
    tdb_regs r = {0};
    int pushed = -1;
    const char *why = NULL;
    uint64_t start = addr_of(fn);
    static const struct {
        int at, entry, pushed;
    } cases[] = {{0, 1, 0}, {4, 1, 0}, {5, 1, 8}, {8, 1, 8}, {10, 1, 16}, {11, 1, 24}, {15, 0, 0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        r.rip = start + (uint64_t)cases[i].at;
        why = NULL;
        assert_int_equal(tdb_regs_at_entry(&mem, &r, start, &pushed, &why, NULL), cases[i].entry);
        if (cases[i].entry)
            assert_int_equal(pushed, cases[i].pushed);
        else
            assert_non_null(strstr(why, "no longer hold the arguments"));
    }
    r.rip = start - 1;
    assert_int_equal(tdb_regs_at_entry(&mem, &r, start, &pushed, &why, NULL), 0);
    r.rip = start + 4096;
    assert_int_equal(tdb_regs_at_entry(&mem, &r, start, &pushed, &why, NULL), 0);
    tdb_error e = {0};
    r.rip = fake_unreadable() + 4;
    assert_int_equal(tdb_regs_at_entry(&mem, &r, fake_unreadable(), &pushed, &why, &e), -1);
    assert_non_null(strstr(e.msg, "cannot read the code"));
}

/* --- signatures --------------------------------------------------------- */

static void test_signatures(void **state)
{
    static const struct {
        const char *in, *ret, *scope, *name;
        int n;
        const char *first;
        int is_const;
    } cases[] = {
        {"at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar const&)@plt", NULL,
         "at::_ops::add_Tensor", "call", 3, "at::Tensor const&", 0},
        {"at::native::sum(at::Tensor const&, c10::OptionalArrayRef<long>, bool, c10::optional<c10::ScalarType>)",
         NULL, "at::native", "sum", 4, "at::Tensor const&", 0},
        {"at::Tensor at::detail::tensor_cpu<signed char>(c10::ArrayRef<signed char>, c10::TensorOptions const&)",
         "at::Tensor", "at::detail", "tensor_cpu<signed char>", 2, "c10::ArrayRef<signed char>", 0},
        {"at::NoTF32Guard::~NoTF32Guard()", NULL, "at::NoTF32Guard", "~NoTF32Guard", 0, NULL, 0},
        {"at::show_config[abi:cxx11]()", NULL, "at", "show_config[abi:cxx11]", 0, NULL, 0},
        {"std::__detail::_AnyMatcher<std::__cxx11::regex_traits<char>, false, false, false>::operator()(char) const",
         NULL, "std::__detail::_AnyMatcher<std::__cxx11::regex_traits<char>, false, false, false>", "operator()", 1,
         "char", 1},
        {"ao::sparse::PackedLinearWeightQnnp::deserialize(std::tuple<long, c10::optional<at::Tensor>, long> const&)",
         NULL, "ao::sparse::PackedLinearWeightQnnp", "deserialize", 1,
         "std::tuple<long, c10::optional<at::Tensor>, long> const&", 0},
        {"at::native::(anonymous namespace)::foo(long) [clone .cold]", NULL,
         "at::native::(anonymous namespace)", "foo", 1, "long", 0},
        {"{lambda(at::Tensor const&)#1}::operator()(at::Tensor const&) const", NULL,
         "{lambda(at::Tensor const&)#1}", "operator()", 1, "at::Tensor const&", 1},
        {"bool at::native::is_same<float>(float, void (*)(int, long))", "bool", "at::native", "is_same<float>", 2,
         "float", 0},
        {"tt_native_add(void)", NULL, "", "tt_native_add", 0, NULL, 0},
        {"printf(char const*, ...)", NULL, "", "printf", 1, "char const*", 0},
        {"c10::Foo::operator<(c10::Foo const&) const &", NULL, "c10::Foo", "operator<", 1, "c10::Foo const&", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tdb_cxx_sig s;
        tdb_error e = {0};
        int rc = tdb_cxx_sig_parse(cases[i].in, &s, &e);
        if (rc < 0)
            fprintf(stderr, "%s: %s\n", cases[i].in, e.msg);
        assert_int_equal(rc, 0);
        if (cases[i].ret)
            assert_string_equal(s.return_type, cases[i].ret);
        else
            assert_null(s.return_type);
        assert_string_equal(s.scope, cases[i].scope);
        assert_string_equal(s.name, cases[i].name);
        assert_int_equal(s.n_params, cases[i].n);
        if (cases[i].first)
            assert_string_equal(s.params[0], cases[i].first);
        assert_null(s.params[s.n_params]);
        assert_int_equal(s.is_const, cases[i].is_const);
        tdb_cxx_sig_free(&s);
    }
    tdb_cxx_sig s;
    tdb_error e = {0};
    assert_int_equal(tdb_cxx_sig_parse("PyInit__C", &s, &e), -1);
    assert_string_equal(e.msg, "'PyInit__C' carries no parameter list");
    assert_int_equal(tdb_cxx_sig_parse("", &s, NULL), -1);
    assert_int_equal(tdb_cxx_sig_parse("x)", &s, NULL), -1);
}

/* --- arguments ---------------------------------------------------------- */

/* An at::Tensor object (a pointer to the impl) for a small float32 tensor. */
static uint64_t tensor_obj(float first)
{
    float *data = fake_alloc(8);
    data[0] = first, data[1] = first + 1;
    int64_t sizes[] = {2}, strides[] = {1};
    uint64_t *obj = fake_alloc(8);
    obj[0] = addr_of(make(1, sizes, strides, 0, "float32", data, 8));
    return addr_of(obj);
}

static const json_t *arg(const json_t *out, size_t i)
{
    return json_object_get(json_array_get(json_object_get(out, "args"), i), "value");
}

static void test_add_tensor(void **state)
{
    tdb_regs r = {0};
    unsigned char *scalar = fake_alloc(48);
    double alpha = 2.5;
    memcpy(scalar + 16, &alpha, 8); /* tag 0: double */
    r.gpr[0] = addr_of(fake_alloc(8)); /* the result's place, uninitialized */
    r.gpr[1] = tensor_obj(1);
    r.gpr[2] = tensor_obj(10);
    r.gpr[3] = addr_of(scalar);
    r.have = TDB_REGS_GPR | TDB_REGS_SP | TDB_REGS_PC;
    json_t *out = tdb_cxx_args(&mem, "at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar const&)",
                               &r, 1, 0, NULL, &L, -1, NULL);
    assert_non_null(out);
    assert_true(json_is_true(json_object_get(out, "certain")));
    assert_non_null(strstr(json_string_value(json_object_get(out, "convention")), "returning its result in memory"));
    assert_null(json_object_get(out, "note"));
    assert_int_equal(json_array_size(json_object_get(out, "args")), 3);
    const json_t *a1 = json_array_get(json_object_get(out, "args"), 0);
    assert_string_equal(json_string_value(json_object_get(a1, "name")), "arg1");
    assert_string_equal(json_string_value(json_object_get(a1, "type")), "at::Tensor const&");
    assert_true(json_real_value(json_array_get(json_object_get(arg(out, 0), "values"), 1)) == 2.0);
    assert_true(json_real_value(json_array_get(json_object_get(arg(out, 1), "values"), 0)) == 10.0);
    assert_true(json_real_value(arg(out, 2)) == 2.5);
    char *text = tdb_cxx_args_text(out, "  ");
    assert_string_equal(text, "  (read as a function, returning its result in memory (a hidden pointer before the arguments))\n"
                              "  arg1 (at::Tensor const&) = float32 [2] strides [1] cpu values [1, 2]\n"
                              "  arg2 (at::Tensor const&) = float32 [2] strides [1] cpu values [10, 11]\n"
                              "  arg3 (c10::Scalar const&) = 2.5\n");
    free(text);
    json_decref(out);

    /* Without torch's layout the tensors are still told apart from other
     * memory by their type information. */
    out = tdb_cxx_args(&mem, "at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar const&)",
                       &r, 1, 0, NULL, NULL, -1, NULL);
    assert_string_equal(json_string_value(json_object_get(arg(out, 0), "impl_type")), "c10::TensorImpl");
    assert_non_null(strstr(json_string_value(arg(out, 2)), "0x"));
    json_decref(out);
}

static void test_registers_and_stack(void **state)
{
    /* at::native::foo(Tensor const&, long, bool, double, optional<long>,
     * ArrayRef<long>, optional<ScalarType>, optional<double>, Device,
     * float, long, long): six integer registers run out at the ArrayRef,
     * which goes to the stack with everything integer after it; the
     * floating-point ones take xmm0, xmm1. */
    const char *fn = "at::native::foo(at::Tensor const&, long, bool, double, c10::optional<long>, "
                     "c10::ArrayRef<long>, c10::optional<c10::ScalarType>, c10::optional<double>, "
                     "c10::Device, float, long, long)";
    int64_t *list = fake_alloc(24);
    list[0] = 1, list[1] = 2, list[2] = 3;
    uint64_t *stack = fake_alloc(8 * 16);
    int pushed = 8; /* as if stopped after push %rbp */
    uint64_t *slots = stack + 1 + pushed / 8;
    double half = 0.5, one_q = 1.25;
    float quarter = 0.25f;
    slots[0] = addr_of(list), slots[1] = 3;       /* ArrayRef<long> */
    slots[2] = 1 | 6 << 8;                        /* optional<ScalarType> = float32 */
    slots[3] = 1;                                 /* optional<double>: engaged */
    memcpy(&slots[4], &one_q, 8);
    slots[5] = 0 | 0xff << 8;                     /* Device cpu, index -1 */
    slots[6] = (uint64_t)-5;
    slots[7] = 9;
    tdb_regs r = {0};
    r.rsp = addr_of(stack);
    r.gpr[0] = addr_of(fake_alloc(8)); /* result */
    r.gpr[1] = tensor_obj(3);
    r.gpr[2] = 7;
    r.gpr[3] = 0xabcd01; /* bool true: only the low byte counts */
    r.gpr[4] = 1;        /* optional<long>: flag */
    r.gpr[5] = 42;       /* ... and value */
    memcpy(&r.xmm[0][0], &half, 8);
    memcpy(&r.xmm[1][0], &quarter, 4);
    r.have = TDB_REGS_GPR | TDB_REGS_XMM | TDB_REGS_SP | TDB_REGS_PC;
    tdb_error e = {0};
    json_t *out = tdb_cxx_args(&mem, fn, &r, 1, pushed, NULL, &L, -1, &e);
    assert_non_null(out);
    assert_true(json_is_true(json_object_get(out, "certain")));
    assert_int_equal(json_integer_value(arg(out, 1)), 7);
    assert_true(json_is_true(arg(out, 2)));
    assert_true(json_real_value(arg(out, 3)) == 0.5);
    assert_int_equal(json_integer_value(arg(out, 4)), 42);
    assert_int_equal(json_array_size(arg(out, 5)), 3);
    assert_int_equal(json_integer_value(json_array_get(arg(out, 5), 2)), 3);
    assert_string_equal(json_string_value(arg(out, 6)), "float32");
    assert_true(json_real_value(arg(out, 7)) == 1.25);
    assert_string_equal(json_string_value(arg(out, 8)), "cpu");
    assert_true(json_real_value(arg(out, 9)) == 0.25);
    assert_int_equal(json_integer_value(arg(out, 10)), -5);
    assert_int_equal(json_integer_value(arg(out, 11)), 9);
    json_decref(out);

    /* Without the vector registers, what they hold is said to be unknown. */
    r.have &= ~TDB_REGS_XMM;
    out = tdb_cxx_args(&mem, fn, &r, 1, pushed, NULL, &L, -1, &e);
    assert_non_null(strstr(json_string_value(arg(out, 3)), "vector registers were not read"));
    json_decref(out);
}

static void test_member_function(void **state)
{
    /* A member function: this is recognised by its type information. */
    uint64_t *self = fake_alloc(16);
    self[0] = fake_vtable(fake_class("N2at6native14structured_fooE"), 4);
    tdb_regs r = {0};
    r.gpr[0] = addr_of(self);
    r.gpr[1] = tensor_obj(0);
    r.gpr[2] = 5;
    r.have = TDB_REGS_GPR | TDB_REGS_SP | TDB_REGS_PC;
    json_t *out = tdb_cxx_args(&mem, "at::native::structured_foo::impl(at::Tensor const&, long)", &r, 1, 0,
                               NULL, &L, -1, NULL);
    assert_true(json_is_true(json_object_get(out, "certain")));
    assert_non_null(strstr(json_string_value(json_object_get(out, "convention")), "member function"));
    const json_t *first = json_array_get(json_object_get(out, "args"), 0);
    assert_string_equal(json_string_value(json_object_get(first, "name")), "this");
    assert_string_equal(json_string_value(json_object_get(json_object_get(first, "value"), "dynamic_type")),
                        "at::native::structured_foo");
    assert_int_equal(json_integer_value(arg(out, 2)), 5);
    json_decref(out);
}

static void test_ambiguous_and_invalid(void **state)
{
    /* foo::bar(long, long): nothing tells the readings apart; the likelier
     * is shown and said to be uncertain. */
    tdb_regs r = {0};
    r.gpr[0] = addr_of(fake_alloc(8));
    r.gpr[1] = 1, r.gpr[2] = 2, r.gpr[3] = 3;
    r.have = TDB_REGS_GPR | TDB_REGS_SP | TDB_REGS_PC;
    json_t *out = tdb_cxx_args(&mem, "foo::bar(long, long)", &r, 1, 0, NULL, &L, -1, NULL);
    assert_true(json_is_false(json_object_get(out, "certain")));
    assert_non_null(strstr(json_string_value(json_object_get(out, "note")), "not certain"));
    json_decref(out);

    /* No reading validates: shown, with a warning. */
    r.gpr[0] = 7, r.gpr[1] = 8;
    out = tdb_cxx_args(&mem, "baz(bool)", &r, 1, 0, NULL, &L, -1, NULL);
    assert_non_null(strstr(json_string_value(json_object_get(out, "note")), "may be wrong"));
    assert_non_null(strstr(json_string_value(arg(out, 0)), "not a bool"));
    json_decref(out);

    /* A tensor reference that leads nowhere is refused. */
    r.gpr[0] = addr_of(fake_alloc(8));
    r.gpr[1] = fake_unreadable();
    out = tdb_cxx_args(&mem, "at::native::neg(at::Tensor const&)", &r, 1, 0, NULL, &L, -1, NULL);
    assert_non_null(strstr(json_string_value(json_object_get(out, "note")), "may be wrong"));
    json_decref(out);
}

static void test_not_at_entry_and_unknown_types(void **state)
{
    tdb_regs r = {0};
    json_t *out = tdb_cxx_args(&mem, "at::native::add(at::Tensor const&, at::Tensor const&, c10::Scalar const&)",
                               &r, 0, 0, "the program has run past the start of the function", &L, -1, NULL);
    assert_true(json_is_false(json_object_get(out, "at_entry")));
    assert_int_equal(json_array_size(json_object_get(out, "args")), 3);
    assert_true(json_is_null(arg(out, 0)));
    assert_non_null(strstr(json_string_value(json_object_get(out, "note")), "run past the start"));
    char *text = tdb_cxx_args_text(out, "");
    assert_non_null(strstr(text, "arg1 (at::Tensor const&) = ?\n"));
    assert_non_null(strstr(text, "(the program has run past the start of the function)\n"));
    free(text);
    json_decref(out);

    r.gpr[0] = addr_of(fake_alloc(8));
    r.gpr[1] = tensor_obj(0);
    r.have = TDB_REGS_GPR | TDB_REGS_SP | TDB_REGS_PC;
    out = tdb_cxx_args(&mem, "at::native::f(at::Tensor const&, some::Unknown, long)", &r, 1, 0, NULL, &L, -1, NULL);
    assert_non_null(json_object_get(arg(out, 0), "sizes"));
    assert_true(json_is_null(arg(out, 1)) && json_is_null(arg(out, 2)));
    assert_non_null(strstr(json_string_value(json_object_get(out, "note")),
                           "how a 'some::Unknown' is passed is unknown without debug info"));
    json_decref(out);

    tdb_error e = {0};
    assert_null(tdb_cxx_args(&mem, "PyInit__C", &r, 1, 0, NULL, &L, -1, &e));
    assert_true(e.set);
}

static void test_values_in_memory(void **state)
{
    tdb_error e = {0};
    json_t *v;
    /* optional<Tensor>: a flag, then the Tensor */
    uint64_t *opt = fake_alloc(16);
    opt[0] = 1;
    opt[1] = ((uint64_t *)(uintptr_t)tensor_obj(4))[0];
    v = tdb_cxx_value_at(&mem, "c10::optional<at::Tensor>", addr_of(opt), &L, -1, &e);
    assert_non_null(json_object_get(v, "sizes"));
    json_decref(v);
    opt[0] = 0;
    v = tdb_cxx_value_at(&mem, "c10::optional<at::Tensor> const", addr_of(opt), &L, -1, &e);
    assert_true(json_is_null(v));
    json_decref(v);
    opt[0] = 9;
    assert_null(tdb_cxx_value_at(&mem, "c10::optional<at::Tensor>", addr_of(opt), &L, -1, &e));
    assert_non_null(strstr(e.msg, "not a c10::optional"));
    /* ArrayRef<Tensor> */
    uint64_t *tensors = fake_alloc(16), *ar = fake_alloc(16);
    tensors[0] = ((uint64_t *)(uintptr_t)tensor_obj(1))[0];
    tensors[1] = ((uint64_t *)(uintptr_t)tensor_obj(2))[0];
    ar[0] = addr_of(tensors), ar[1] = 2;
    v = tdb_cxx_value_at(&mem, "c10::ArrayRef<at::Tensor>", addr_of(ar), &L, -1, NULL);
    assert_int_equal(json_array_size(v), 2);
    assert_non_null(json_object_get(json_array_get(v, 1), "dtype"));
    json_decref(v);
    /* std::vector<Tensor>: {start, finish, end of storage}, by its whole
     * name and behind a const& as a signature spells it */
    uint64_t *vec = fake_alloc(24);
    vec[0] = addr_of(tensors), vec[1] = addr_of(tensors) + 16, vec[2] = addr_of(tensors) + 16;
    v = tdb_cxx_value_at(&mem, "std::vector<at::Tensor, std::allocator<at::Tensor> >",
                         addr_of(vec), &L, -1, &e);
    assert_int_equal(json_array_size(v), 2);
    assert_non_null(json_object_get(json_array_get(v, 0), "sizes"));
    json_decref(v);
    uint64_t *pvec = fake_alloc(8);
    pvec[0] = addr_of(vec);
    v = tdb_cxx_value_at(&mem, "std::vector<at::Tensor, std::allocator<at::Tensor> > const&",
                         addr_of(pvec), &L, -1, &e);
    assert_int_equal(json_array_size(v), 2);
    json_decref(v);
    vec[0] = vec[1] = vec[2] = 0; /* an empty vector never allocated */
    v = tdb_cxx_value_at(&mem, "std::vector<at::Tensor>", addr_of(vec), &L, -1, &e);
    assert_int_equal(json_array_size(v), 0);
    json_decref(v);
    vec[0] = addr_of(tensors) + 16, vec[1] = addr_of(tensors); /* finish before start */
    tdb_error_clear(&e);
    assert_null(tdb_cxx_value_at(&mem, "std::vector<at::Tensor>", addr_of(vec), &L, -1, &e));
    assert_non_null(strstr(e.msg, "not a std::vector"));
    tdb_error_clear(&e);
    /* OptionalArrayRef: {NULL, 1} is empty; {NULL, 0} an empty list */
    ar[0] = 0, ar[1] = 1;
    v = tdb_cxx_value_at(&mem, "c10::OptionalArrayRef<long>", addr_of(ar), &L, -1, NULL);
    assert_true(json_is_null(v));
    json_decref(v);
    ar[1] = 0;
    v = tdb_cxx_value_at(&mem, "c10::OptionalArrayRef<long>", addr_of(ar), &L, -1, NULL);
    assert_int_equal(json_array_size(v), 0);
    json_decref(v);
    /* a long list is cut */
    int64_t *many = fake_alloc(8 * 100);
    ar[0] = addr_of(many), ar[1] = 100;
    v = tdb_cxx_value_at(&mem, "c10::IntArrayRef", addr_of(ar), &L, -1, NULL);
    assert_int_equal(json_array_size(v), 65);
    assert_string_equal(json_string_value(json_array_get(v, 64)), "...");
    json_decref(v);
    ar[0] = fake_unreadable();
    assert_null(tdb_cxx_value_at(&mem, "c10::ArrayRef<long>", addr_of(ar), &L, -1, &e));
    /* string_view, std::array<bool, 3>, char const*, optional<Scalar> */
    const char *text = "floor";
    ar[0] = addr_of(text), ar[1] = 5;
    v = tdb_cxx_value_at(&mem, "c10::basic_string_view<char>", addr_of(ar), &L, -1, NULL);
    assert_string_equal(json_string_value(v), "floor");
    json_decref(v);
    unsigned char *bools = fake_alloc(3);
    bools[0] = 1;
    v = tdb_cxx_value_at(&mem, "std::array<bool, 3ul>", addr_of(bools), &L, -1, NULL);
    assert_true(json_is_true(json_array_get(v, 0)) && json_is_false(json_array_get(v, 2)));
    json_decref(v);
    uint64_t *pc = fake_alloc(8);
    pc[0] = addr_of(text);
    v = tdb_cxx_value_at(&mem, "char const*", addr_of(pc), &L, -1, NULL);
    assert_string_equal(json_string_value(v), "floor");
    json_decref(v);
    unsigned char *os = fake_alloc(48);
    int64_t three = 3;
    os[0] = 1;
    os[16] = 1; /* tag int */
    memcpy(os + 32, &three, 8);
    v = tdb_cxx_value_at(&mem, "c10::optional<c10::Scalar>", addr_of(os), &L, -1, NULL);
    assert_int_equal(json_integer_value(v), 3);
    json_decref(v);
    /* an opaque class is shown by address; unreadable memory refused */
    v = tdb_cxx_value_at(&mem, "at::Generator", addr_of(os), &L, -1, NULL);
    assert_non_null(strstr(json_string_value(v), "(a 'at::Generator', not decoded)"));
    json_decref(v);
    assert_null(tdb_cxx_value_at(&mem, "long", fake_unreadable(), &L, -1, &e));
}

static void test_args_from_gdb(void **state)
{
    /* gdb's own list at tt_native_add in a tinytensor built with -g. */
    double v0 = 1.5, v1 = 2.5;
    uint64_t t = fake_tt_tensor(0 /* TT_FLOAT64 */, &v0, &v1);
    char self[32];
    snprintf(self, sizeof(self), "0x%llx", (unsigned long long)t);
    json_t *args = json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s},{s:s,s:s,s:s}]", "name", "self", "type",
                             "const tt_tensor *", "value", self, "name", "other", "type", "const tt_tensor *",
                             "value", "0x0", "name", "alpha", "type", "tt_scalar", "name", "err", "type",
                             "tt_error *", "value", "0x7ffe0010");
    int asked = 0;
    json_t *out = tdb_args_from_gdb(&mem, "tt_native_add", args, scripted, &asked, NULL, -1);
    assert_true(json_is_true(json_object_get(out, "debug_info")));
    assert_true(json_real_value(json_array_get(json_object_get(arg(out, 0), "values"), 1)) == 2.5);
    assert_true(json_is_null(arg(out, 1)));
    assert_true(json_is_null(arg(out, 2)));
    assert_string_equal(json_string_value(arg(out, 3)), "0x7ffe0010");
    json_decref(out);
    json_decref(args);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regs_from_recorded_mi),
        cmocka_unit_test(test_regs_vector_halves),
        cmocka_unit_test(test_at_entry),
        cmocka_unit_test(test_signatures),
        cmocka_unit_test(test_add_tensor),
        cmocka_unit_test(test_registers_and_stack),
        cmocka_unit_test(test_member_function),
        cmocka_unit_test(test_ambiguous_and_invalid),
        cmocka_unit_test(test_not_at_entry_and_unknown_types),
        cmocka_unit_test(test_values_in_memory),
        cmocka_unit_test(test_args_from_gdb),
    };
    return cmocka_run_group_tests(tests, fake_tensor_group_setup, fake_tensor_group_teardown);
}

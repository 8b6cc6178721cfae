/*
 * test_cxxnames.c: the short form of C++ names, on names as gdb and the
 * demangler spell them in real stacks: pybind11's binding glue around a
 * torch.utils.cpp_extension op (samples/myop), torch's own operator
 * entries, libstdc++'s strings and vectors, operators, C names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "native/cxxnames.h"

#include <stdlib.h>
#include <string.h>

#define ELL "\xe2\x80\xa6"

static void check(const char *name, const char *want)
{
    char *got = tdb_cxx_short_name(name);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* The frames between pybind11's dispatcher and myop's scaled_add, as gdb
 * 13 names them (Debian's pybind11 2.10, g++ 12). */
static void test_pybind11_glue(void **state)
{
    check("pybind11::detail::argument_loader<at::Tensor const&, at::Tensor const&, double>::"
          "call_impl<at::Tensor, at::Tensor (*&)(at::Tensor const&, at::Tensor const&, double), "
          "0ul, 1ul, 2ul, pybind11::detail::void_type>(at::Tensor (*&)(at::Tensor const&, "
          "at::Tensor const&, double), std::integer_sequence<unsigned long, 0ul, 1ul, 2ul>, "
          "pybind11::detail::void_type&&) &&",
          "pybind11::detail::argument_loader<" ELL ">::call_impl<" ELL ">(" ELL ") &&");
    check("pybind11::cpp_function::initialize<at::Tensor (*&)(at::Tensor const&, at::Tensor "
          "const&, double), at::Tensor, at::Tensor const&, at::Tensor const&, double, "
          "pybind11::name, pybind11::scope, pybind11::sibling, char [14], pybind11::arg, "
          "pybind11::arg, pybind11::arg_v>(at::Tensor (*&)(at::Tensor const&, at::Tensor const&, "
          "double), at::Tensor (*)(at::Tensor const&, at::Tensor const&, double), pybind11::name "
          "const&, pybind11::scope const&, pybind11::sibling const&, char const (&) [14], "
          "pybind11::arg const&, pybind11::arg const&, pybind11::arg_v const&)::{lambda("
          "pybind11::detail::function_call&)#3}::operator()(pybind11::detail::function_call&) "
          "const",
          "pybind11::cpp_function::initialize<" ELL ">(" ELL ")::{lambda(" ELL ")#3}::"
          "operator()(pybind11::detail::function_call&) const");
    check("pybind11::cpp_function::dispatcher(_object*, _object*, _object*)",
          "pybind11::cpp_function::dispatcher(_object*, _object*, _object*)");
}

static void test_torch_names(void **state)
{
    check("at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar const&)",
          "at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar const&)");
    check("c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::retain_()",
          "c10::intrusive_ptr<" ELL ">::retain_()");
    check("c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<"
          "c10::CompileTimeFunctionPointer<at::Tensor (at::Tensor const&, at::Tensor const&, "
          "c10::Scalar const&), &at::(anonymous namespace)::wrapper_add_Tensor>, at::Tensor, "
          "c10::guts::typelist::typelist<at::Tensor const&, at::Tensor const&, c10::Scalar "
          "const&> >, at::Tensor (at::Tensor const&, at::Tensor const&, c10::Scalar const&)>::"
          "call(c10::OperatorKernel*, c10::DispatchKeySet, at::Tensor const&, at::Tensor const&, "
          "c10::Scalar const&)",
          "c10::impl::wrap_kernel_functor_unboxed_<" ELL ">::call(" ELL ")");
}

static void test_std_spelled_as_written(void **state)
{
    check("c10::Error::Error(c10::SourceLocation, std::__cxx11::basic_string<char, "
          "std::char_traits<char>, std::allocator<char> >)",
          "c10::Error::Error(c10::SourceLocation, std::string)");
    check("f(std::vector<at::Tensor, std::allocator<at::Tensor> > const&)",
          "f(std::vector<at::Tensor> const&)");
    check("g(std::vector<std::vector<long, std::allocator<long> >, "
          "std::allocator<std::vector<long, std::allocator<long> > > >&)",
          "g(std::vector<" ELL ">&)");
    check("std::__cxx11::list<int, std::allocator<int> >::size() const",
          "std::list<int>::size() const");
}

static void test_operators_and_plain_names(void **state)
{
    check("std::ostream& operator<< <int>(std::ostream&, int)",
          "std::ostream& operator<< <int>(std::ostream&, int)");
    check("c10::operator<<(std::ostream&, c10::Device)", "c10::operator<<(std::ostream&, c10::Device)");
    check("a::b::operator<(a::b const&) const", "a::b::operator<(a::b const&) const");
    check("std::unique_ptr<c10::AutogradMetaInterface, "
          "std::default_delete<c10::AutogradMetaInterface> >::operator->() const",
          "std::unique_ptr<" ELL ">::operator->() const");
    check("tt_native_add", "tt_native_add");
    check("scaled_add", "scaled_add");
    check("??", "??");
    check("(anonymous namespace)::helper(int)", "(anonymous namespace)::helper(int)");
    assert_null(tdb_cxx_short_name(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pybind11_glue),
        cmocka_unit_test(test_torch_names),
        cmocka_unit_test(test_std_spelled_as_written),
        cmocka_unit_test(test_operators_and_plain_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * native/cxxnames.h: C++ names as a person reads them.  A demangled name
 * as gdb and the demangler spell it is exact and long: pybind11's frames
 * run to 300 characters of template arguments, and libstdc++'s types are
 * spelled as no one writes them in source.  Stacks, stop lines and the
 * DAP's frame names show the short form; 'bt full', --raw, JSON's
 * "function_full" and the DAP frame's tooltip keep the whole name.
 *
 * Pure: a string in, a string out.
 */
#ifndef TDB_CXXNAMES_H
#define TDB_CXXNAMES_H

/* The short form of the demangled C++ name NAME:
 *  - std:: types spelled as in source: "std::__cxx11::basic_string<char,
 *    std::char_traits<char>, std::allocator<char> >" is "std::string",
 *    "std::__cxx11::" is "std::", a container's default allocator
 *    (", std::allocator<T> ") is left out;
 *  - template arguments that are long or nested folded:
 *    "pybind11::detail::argument_loader<at::Tensor const&, ...>::call_impl<...>"
 *    is "pybind11::detail::argument_loader<…>::call_impl<…>" (short ones
 *    stay: "std::vector<at::Tensor>");
 *  - a lambda's parameters folded ("{lambda(…)#3}"), and a parameter list
 *    still long after that folded to "(…)".
 * Operators ("operator<<", "operator()", "operator->") are kept whole.  A
 * name that is not C++ (a C function, "??") comes back unchanged.  New
 * string (NULL for NULL). */
char *tdb_cxx_short_name(const char *name);

#endif

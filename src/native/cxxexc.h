/*
 * native/cxxexc.h: the C++ exception being thrown, read from memory at the entry
 * of __cxa_throw(void *obj, std::type_info *tinfo, void (*dest)(void *)).
 *
 * The type comes from TINFO (its mangled name, demangled).  The message:
 *  - for c10::Error and every class derived from it (c10::IndexError,
 *    c10::NotImplementedError, ...; found by walking the type_info's base
 *    classes in memory), the text torch stored in the object;
 *  - for std::logic_error, std::runtime_error and what derives from them
 *    (std::out_of_range, std::system_error, ...), libstdc++'s message
 *    string;
 *  - for anything else, no message: what() is code that only a call into
 *    the process could run, and tdebug never calls into it; the result
 *    says so.
 * Nothing is called in the process; every read is bounded (native/cxxabi.h).
 *
 * Use at a stop on __cxa_throw's first instruction (registers from gdb):
 *
 *     json_t *e = tdb_cxx_exception(&mem, rdi, rsi, &err);
 *     char *line = tdb_cxx_exception_text(e);   // for the text front-end
 */
#ifndef TDB_CXXEXC_H
#define TDB_CXXEXC_H

#include "base/common.h"
#include "process/procfs.h"

#include <jansson.h>
#include <stdint.h>

/* The longest message returned; longer ones are cut and end with "...". */
#define TDB_CXX_MESSAGE_MAX 4096

/* Describe the exception object OBJ of type TINFO (the first two
 * arguments of __cxa_throw).  New reference: {"type": "c10::Error",
 * "message": "..."}, where message is null when it cannot be read, with
 * "note" saying why ("cannot read the message of a 'std::bad_alloc'
 * without calling into the process").  NULL with ERR set only when TINFO
 * is not readable type information (then the registers did not hold
 * __cxa_throw's arguments). */
json_t *tdb_cxx_exception(tdb_mem *m, uint64_t obj, uint64_t tinfo, tdb_error *err);

/* Is the exception of type TINFO a TYPE (demangled: "c10::Error"), or of
 * a class derived from it?  What 'catch throw TYPE' filters on: a
 * c10::IndexError is a c10::Error.  1 yes, 0 no, -1 with ERR set when
 * TINFO is no type information. */
int tdb_cxx_exception_is(tdb_mem *m, uint64_t obj, uint64_t tinfo, const char *type, tdb_error *err);

/* One line for the text front-end, from tdb_cxx_exception()'s result:
 * "C++ exception 'c10::Error': mat1 and mat2 shapes cannot be ..." or
 * "C++ exception 'std::bad_alloc' (cannot read ...)".  New string. */
char *tdb_cxx_exception_text(const json_t *exc);

/* The message kept in a c10::Error, at C10 (the address of the c10::Error
 * subobject): see native/cxxexc.c for how it is found without the class's
 * layout.  New string, or NULL with ERR set when no message validates. */
char *tdb_c10_error_message(tdb_mem *m, uint64_t c10, tdb_error *err);

#endif

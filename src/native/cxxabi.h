/*
 * native/cxxabi.h: C++ objects in another process's memory, read by the rules of
 * the Itanium C++ ABI (type_info objects, vtables) and of libstdc++'s two
 * string layouts, without debug info and without calling into the process.
 *
 * These are public, stable ABIs (what every x86-64 Linux C++ compiler and
 * libstdc++ since GCC 5 emit), not the layout of any one library's class:
 *  - a polymorphic object starts with its vptr; vptr[-1] is the type_info
 *    of its dynamic type, vptr[-2] the offset to the top of the object;
 *  - a std::type_info is {vptr, const char *name}, the name being the
 *    mangled type without "_Z" ('*' first for types local to a unit);
 *    what kind of type_info it is shows in its own vptr's type_info name
 *    (__cxxabiv1::__class_type_info, __si_class_type_info: + one base at
 *    offset 0, __vmi_class_type_info: + flags, base count, then
 *    {base type_info, offset_flags} pairs: offset << 8 | virtual 1 | public 2);
 *  - a std::string (the C++11 ABI) is {char *p, size_t length, union {char
 *    local[16]; size_t capacity}}, p pointing at its own local buffer for
 *    short strings; the copy-on-write string of std::runtime_error and
 *    std::logic_error (__cow_string) is one pointer to characters preceded
 *    by {size_t length, size_t capacity, int refcount}.
 * Every read is bounded and checked; anything that does not fit these
 * shapes is refused, never guessed.
 */
#ifndef TDB_CXXABI_H
#define TDB_CXXABI_H

#include "base/common.h"
#include "process/procfs.h"

#include <stddef.h>
#include <stdint.h>

/* What kind of std::type_info an object is. */
typedef enum tdb_rtti_kind {
    TDB_RTTI_OTHER = 0, /* a fundamental, pointer, enum... type: no bases */
    TDB_RTTI_CLASS,     /* __class_type_info: a class without bases */
    TDB_RTTI_SI_CLASS,  /* __si_class_type_info: one public non-virtual base at 0 */
    TDB_RTTI_VMI_CLASS  /* __vmi_class_type_info: any other bases */
} tdb_rtti_kind;

#define TDB_RTTI_MAX_BASES 32

typedef struct tdb_rtti_base {
    uint64_t type;   /* the base's type_info */
    int64_t offset;  /* its offset in the object; for a virtual base, the
                      * (negative) offset in the vtable where it is kept */
    int is_virtual;
    int is_public;
} tdb_rtti_base;

/* One std::type_info as read from memory. */
typedef struct tdb_rtti {
    uint64_t addr;          /* the type_info object */
    char mangled[512];      /* name() without a leading '*': "N3c105ErrorE" */
    tdb_rtti_kind kind;
    tdb_rtti_base bases[TDB_RTTI_MAX_BASES];
    size_t n_bases;
} tdb_rtti;

/* Read the type_info at ADDR into *OUT.  -1 with ERR set when ADDR does
 * not hold one (unreadable, no vptr leading to type information, a name
 * that is not a mangled name). */
int tdb_rtti_read(tdb_mem *m, uint64_t addr, tdb_rtti *out, tdb_error *err);

/* The demangled name of a type_info's mangled name ("N3c105ErrorE" ->
 * "c10::Error"), a new string; the mangled name itself when it does not
 * demangle. */
char *tdb_rtti_name(const tdb_rtti *t);

/* Does the class whose type_info is at TYPE have the class named MANGLED
 * (a type_info name, "N3c105ErrorE") as itself or as a base, at any
 * depth?  1 and *OUT_OFFSET (may be NULL) the offset of that base in an
 * object of TYPE; 0 when not; -1 with ERR set when the type information
 * is unreadable.  A virtual base's offset is read from the vtable of the
 * object at OBJ, so OBJ must be given (non-zero) for classes with virtual
 * bases; without it such a path is not followed. */
int tdb_rtti_find_base(tdb_mem *m, uint64_t type, const char *mangled, uint64_t obj,
                       int64_t *out_offset, tdb_error *err);

/* The same with NAME demangled ("c10::Error"). */
int tdb_rtti_find_base_named(tdb_mem *m, uint64_t type, const char *name, uint64_t obj,
                             int64_t *out_offset, tdb_error *err);

/* The dynamic type of the polymorphic object at OBJ: the address of its
 * type_info in *OUT_TYPE (and *OUT, when given, the type_info read).  -1
 * with ERR set when OBJ does not look like a complete polymorphic object
 * (unreadable, a first word that is no vptr, a non-zero offset-to-top). */
int tdb_cxx_dynamic_type(tdb_mem *m, uint64_t obj, uint64_t *out_type, tdb_rtti *out,
                         tdb_error *err);

/* The std::string (C++11 ABI) at ADDR, checked: a pointer to its own
 * buffer (length < 16) or to readable memory, a length not above the
 * capacity, a NUL after the last character, at most MAX bytes (a longer
 * string is refused: the caller asked for a bound).  A new NUL-terminated
 * string and *OUT_LEN (may be NULL); NULL with ERR set otherwise.  The
 * text may hold any bytes, including NULs. */
char *tdb_cxx_read_string(tdb_mem *m, uint64_t addr, size_t max, size_t *out_len,
                          tdb_error *err);

/* The copy-on-write string whose character pointer is stored at ADDR
 * (libstdc++'s __cow_string, the message of std::logic_error and
 * std::runtime_error), checked as above against its header.  New string,
 * or NULL with ERR set. */
char *tdb_cxx_read_cow_string(tdb_mem *m, uint64_t addr, size_t max, size_t *out_len,
                              tdb_error *err);

/* Read a NUL-terminated C string of at most MAX bytes at ADDR (a type
 * name, a symbol): a new string, or NULL with ERR set when unreadable or
 * unterminated within MAX. */
char *tdb_peek_cstring(tdb_mem *m, uint64_t addr, size_t max, tdb_error *err);

/* Read one little-endian 64-bit word at ADDR: 0 and *OUT, or -1 with ERR
 * set ("cannot read memory at 0x...: ..."). */
int tdb_peek_u64(tdb_mem *m, uint64_t addr, uint64_t *out, tdb_error *err);

#endif

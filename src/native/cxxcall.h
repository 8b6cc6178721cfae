/*
 * native/cxxcall.h: a call into a C++ function, seen at its first
 * instruction: the registers that hold its arguments (x86-64 System V),
 * whether they still hold them, and its parameter types taken from the
 * demangled name.
 *
 * What these arguments are is decided above, where the types are known
 * (torch/cxxargs.h); nothing here reads an argument's value.
 */
#ifndef TDB_CXXCALL_H
#define TDB_CXXCALL_H

#include "base/common.h"
#include "process/procfs.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The registers that matter at a function's entry. */
typedef struct tdb_regs {
    uint64_t gpr[6];     /* rdi, rsi, rdx, rcx, r8, r9 */
    uint64_t xmm[8][2];  /* xmm0..xmm7: low and high eightbytes */
    uint64_t rsp, rip;
    unsigned have;       /* TDB_REGS_* bits of what was filled */
} tdb_regs;

enum { TDB_REGS_GPR = 1, TDB_REGS_XMM = 2, TDB_REGS_SP = 4, TDB_REGS_PC = 8 };

/* Fill *OUT from gdb's answers to -data-list-register-names (NAMES: its
 * results, {"register-names": [...]}) and -data-list-register-values x
 * (VALUES: {"register-values": [{"number", "value"}, ...]}; a vector
 * register's value is the union gdb prints, whose "uint128" is used).
 * 0, or -1 with ERR set when rdi..r9, rsp or rip are missing. */
int tdb_regs_from_mi(const json_t *names, const json_t *values, tdb_regs *out, tdb_error *err);

/* Do the registers still hold the arguments?  FUNC_START is the address
 * of the function's (or PLT stub's) first instruction.  1 when the pc is
 * there, or past instructions that leave every argument register alone
 * (endbr64, pushes of rbp/rbx/r12-r15, mov %rsp,%rbp: gdb places a
 * breakpoint on a function without debug info after such a prologue);
 * *OUT_PUSHED then gets the bytes pushed since entry (the stack arguments
 * are that much further from rsp).  0 when the pc is elsewhere in the
 * function, with *OUT_WHY saying so (a static string).  -1 with ERR set
 * when the code cannot be read. */
int tdb_regs_at_entry(tdb_mem *m, const tdb_regs *r, uint64_t func_start, int *out_pushed,
                      const char **out_why, tdb_error *err);

/* A demangled C++ function name, taken apart. */
typedef struct tdb_cxx_sig {
    char *return_type; /* shown only for template functions, else NULL */
    char *scope;       /* "at::_ops::add_Tensor", "" for a global function */
    char *name;        /* "call" */
    char **params;     /* parameter types, NULL-terminated */
    size_t n_params;
    int is_const;      /* "... ) const": certainly a member function */
} tdb_cxx_sig;

/* Parse NAME as the demangler prints it (a trailing "@plt" or
 * " [clone .cold]" ignored).  0 and *OUT (free with tdb_cxx_sig_free), or
 * -1 with ERR set when NAME has no parameter list (a plain C name, or a
 * name without its signature). */
int tdb_cxx_sig_parse(const char *name, tdb_cxx_sig *out, tdb_error *err);
void tdb_cxx_sig_free(tdb_cxx_sig *s); /* accepts NULL; clears *S */

/* The N bytes at S without the white space around them (a new string). */
char *tdb_cxx_trim(const char *s, size_t n);
/* TYPE as a demangled signature spells it, without a "const" or "volatile"
 * before or after ("at::Tensor const" -> "at::Tensor").  New string. */
char *tdb_cxx_unqualified(const char *type);

#endif

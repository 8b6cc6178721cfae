/*
 * torch/cxxargs.h: the arguments of a native frame without debug info, from the
 * function's demangled name and the x86-64 System V calling convention,
 * read at the function's entry.
 *
 * torch's exported C++ functions carry their full signature in their
 * (mangled) symbol names: at::_ops::add_Tensor::call(at::Tensor const&,
 * at::Tensor const&, c10::Scalar const&).  At the first instruction of
 * the function (or of its PLT stub), before it changes any argument
 * register, the parameters are where the ABI puts them:
 *  - integers, pointers, references, enums, bool, and small trivially
 *    copyable classes (c10::ArrayRef, c10::OptionalArrayRef,
 *    c10::optional<trivially copyable>, c10::string_view, c10::Device)
 *    in rdi, rsi, rdx, rcx, r8, r9 (one per eightbyte), then on the stack;
 *  - double and float in xmm0..xmm7 (an eightbyte of a class that holds
 *    only floating point goes there too: c10::optional<double>'s second);
 *  - classes that are not trivially copyable (at::Tensor, c10::Scalar,
 *    c10::SymInt, c10::optional<at::Tensor>, ...) by invisible reference:
 *    a pointer in the next integer register;
 *  - classes bigger than 16 bytes that are trivially copyable, copied on
 *    the stack;
 *  - a member function's this first, except that a result returned in
 *    memory (any class that is not trivially copyable or is bigger than 16
 *    bytes: at::Tensor, std::tuple...) takes rdi as a hidden pointer before
 *    everything, this included.
 * What the demangled name does not say (is it a member function? does it
 * return in memory? the return type is not in the name of a non-template
 * function) is decided by trying each interpretation and validating every
 * argument it gives (a Tensor reference must lead to a TensorImpl by its
 * type information, a bool must be 0 or 1, a reference must point to
 * readable memory...): the interpretation that validates, with the most
 * strongly validated arguments, is used, and the result says which, or
 * that several fit.
 */
#ifndef TDB_CXXARGS_H
#define TDB_CXXARGS_H

#include "base/common.h"
#include "process/procfs.h"
#include "torch/tensor.h"

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

/* The arguments of the function FUNCTION (demangled, with its parameter
 * list) at a stop whose registers are R.  AT_ENTRY: 1 when
 * tdb_regs_at_entry() said so (PUSHED its bytes), 0 when not (WHY: its
 * reason): the parameters are then listed with null values.  LAYOUT
 * decodes tensors and scalars (NULL: torch's layout is unknown; tensors
 * are then only checked by their type information and shown by address).
 * New reference:
 *   {"function": "...", "at_entry": true,
 *    "convention": "a function returning its result in memory (rdi)",
 *    "certain": true,            // false: several interpretations fit
 *    "note": "...",              // when something is worth saying
 *    "args": [{"name": "arg1", "type": "at::Tensor const&",
 *              "value": {...tensor...}}, ...]}
 * Unreadable or invalid arguments have a string value saying why, e.g.
 * "<cannot read memory at 0x10: Input/output error>".  NULL with ERR
 * set when FUNCTION has no parameter list. */
json_t *tdb_cxx_args(tdb_mem *m, const char *function, const tdb_regs *r, int at_entry, int pushed,
                     const char *why, const tdb_tensor_layout *layout, int max_values,
                     tdb_error *err);

/* With debug info: the arguments gdb itself lists for the frame
 * (FRAME_ARGS: the "args" of -stack-list-arguments --simple-values, an
 * array of {"name", "type", "value"}), with tensors decoded: pointers to a
 * tensor struct tdebug has a DWARF description of (torch/tensor.h; its layout
 * asked of EVAL once per call), and at::Tensor references ("@0x...")
 * with TORCH_LAYOUT when given.  New reference, shaped as tdb_cxx_args()'s
 * result with "debug_info": true; a value tdebug does not decode stays
 * gdb's text. */
json_t *tdb_args_from_gdb(tdb_mem *m, const char *function, const json_t *frame_args,
                          tdb_eval_int_fn eval, void *ctx, const tdb_tensor_layout *torch_layout,
                          int max_values);

/* The text front-end's lines for tdb_cxx_args()'s or
 * tdb_args_from_gdb()'s result: "arg1 (at::Tensor const&) = float32 [2, 3]
 * strides [3, 1] cpu values [...]", one per argument, INDENT before each,
 * then the note when there is one.  New string. */
char *tdb_cxx_args_text(const json_t *args, const char *indent);

/* The value of one object of C++ type TYPE (as spelled in a demangled
 * signature: "at::Tensor", "c10::optional<c10::Scalar>", "long", ...)
 * kept in memory at ADDR: what 'tensor EXPR' and the arguments passed by
 * reference show.  New reference (a JSON value), or NULL with ERR set. */
json_t *tdb_cxx_value_at(tdb_mem *m, const char *type, uint64_t addr,
                         const tdb_tensor_layout *layout, int max_values, tdb_error *err);

#endif

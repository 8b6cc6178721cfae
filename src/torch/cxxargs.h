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
 *
 * The registers at the entry and the parameter types taken from the name
 * are native/cxxcall.h's; this file knows the types torch passes.
 */
#ifndef TDB_CXXARGS_H
#define TDB_CXXARGS_H

#include "base/common.h"
#include "native/cxxcall.h"
#include "process/procfs.h"
#include "torch/tensor.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

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

/* Append {"name": NAME, "type": TYPE, "value": VALUE} to ARGS, the
 * "args" array of the results above (VALUE is stolen). */
void tdb_cxx_args_add(json_t *args, const char *name, const char *type, json_t *value);

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

/*
 * native/dwsource.h: where a shared object's debug info (DWARF) says its source
 * files are, the way gdb finds them: a compilation unit's DW_AT_name joined
 * to its DW_AT_comp_dir.  For tools that need a source line before the
 * program runs (a breakpoint on a marked line of a sample).
 */
#ifndef TDB_DWSOURCE_H
#define TDB_DWSOURCE_H

#include "base/common.h"

#include <jansson.h>
#include <stdint.h>

#include <stdint.h>

/* The absolute path of the source of the compilation unit in ELF_PATH whose
 * name is NAME or ends with "/" NAME ("tt_native_cpu.c").  New string, or
 * NULL with ERR set when the file cannot be read, has no DWARF, or has no
 * such unit. */
char *tdb_dwarf_source_path(const char *elf_path, const char *name, tdb_error *err);

/* Does ELF_PATH carry debug info of its own (a compilation unit in its
 * .debug_info, not a separate debug file)?  1 or 0 (0 too when the file
 * cannot be read). */
int tdb_dwarf_present(const char *elf_path);

/* Add to DIRS (a JSON object used as a set: each key a directory) where
 * the sources of ELF_PATH's compilation units are: a unit's DW_AT_comp_dir
 * when its DW_AT_name is relative (the build ran there: its headers are
 * there too), else the directory of its absolute DW_AT_name.  Returns the
 * number of units read, or -1 with ERR set when the file cannot be read or
 * has no DWARF. */
long tdb_dwarf_source_dirs(const char *elf_path, json_t *dirs, tdb_error *err);

/* The entries (link-time DW_AT_low_pc) of the functions of ELF_PATH whose
 * source file (DW_AT_decl_file) is under one of the N_DIRS directories
 * DIRS (absolute), each once: 0 with a new array in *OUT_ADDRS (NULL when
 * none) and its length in *OUT_N; -1 with ERR set when the file cannot be
 * read or has no DWARF.  Functions only inlined have no entry of their own
 * and are left out. */
int tdb_dwarf_functions_under(const char *elf_path, const char *const *dirs, size_t n_dirs,
                              uint64_t **out_addrs, size_t *out_n, tdb_error *err);

/* The bounds [*OUT_LO, *OUT_HI) of the function of ELF_PATH holding the
 * link-time address ADDR, from the table of its call frame information
 * (.eh_frame_hdr: a stripped object has it too): from the start of its
 * entry to the next one's (padding included).  0, or -1 with ERR set. */
int tdb_elf_function_bounds(const char *elf_path, uint64_t addr, uint64_t *out_lo,
                            uint64_t *out_hi, tdb_error *err);

/* The number of the one line of the text file PATH containing MARKER.
 * Returns 0 and writes *OUT_LINE, or -1 with ERR set when the file cannot
 * be read or MARKER is on no line or on more than one. */
int tdb_marked_line(const char *path, const char *marker, int *out_line, tdb_error *err);

/* Where gdb puts a breakpoint on the function that starts at ADDR in
 * ELF_PATH (a file address, unrelocated), so that its arguments and
 * locals are valid there: with debug info, after the prologue, by gdb
 * 13's rules on x86-64 (symtab.c skip_prologue_sal, amd64-tdep.c):
 *  - a line-table row marked prologue_end inside the function wins;
 *  - else, when the function opens with 'push %rbp' (after an endbr64;
 *    'mov %rsp,%rbp' may follow), the stop is the address of the first
 *    line-table row after that one's line entry, if it is still inside
 *    the function;
 *  - else (a frameless function, no line table for it) ADDR itself.
 * 0 and *OUT_ADDR, or -1 with ERR set when the file cannot be read; a
 * file without DWARF gives ADDR. */
int tdb_dwarf_after_prologue(const char *elf_path, uint64_t addr, uint64_t *out_addr,
                             tdb_error *err);

#endif

/*
 * native/dwarf.h: just enough DWARF to tell how an object was compiled, and
 * whether gdb has an index for it.
 *
 * Pure, like the MI parser: section bytes in, facts out; no I/O and no
 * libbfd (src/native/elf.c finds, decompresses and relocates the sections).  Every
 * read is bounds-checked: a corrupt or truncated section gives an error,
 * never a read past its end.
 *
 * What is read of .debug_info is the header and the first DIE of each
 * compile unit (DW_AT_producer, DW_AT_name, DW_AT_str_offsets_base), so a
 * walk over a multi-gigabyte section touches only a few bytes per unit.
 * DWARF 2 to 5, 32- and 64-bit DWARF, either byte order; strings through
 * DW_FORM_string, strp, line_strp, strx* (DWARF 5 and GNU split DWARF) and
 * the dwz supplementary file's strp_sup/GNU_strp_alt.
 */
#ifndef TDB_DWARF_H
#define TDB_DWARF_H

#include "base/common.h"

#include <stddef.h>
#include <stdint.h>

/* The sections a walk reads.  Any may be NULL/0 except info and abbrev;
 * a string form whose section is missing yields a NULL string. */
typedef struct tdb_dwarf_sections {
    const uint8_t *info;
    size_t info_len;
    const uint8_t *abbrev;
    size_t abbrev_len;
    const uint8_t *str;         /* .debug_str */
    size_t str_len;
    const uint8_t *line_str;    /* .debug_line_str (DWARF 5) */
    size_t line_str_len;
    const uint8_t *str_offsets; /* .debug_str_offsets (DWARF 5 strx) */
    size_t str_offsets_len;
    const uint8_t *alt_str;     /* .debug_str of the dwz file, if any */
    size_t alt_str_len;
    int big_endian;
} tdb_dwarf_sections;

/* One compile unit as a walk reports it.  Strings point into the
 * sections (NUL-terminated inside them) and live as long as they do;
 * NULL when the attribute is absent or its string cannot be resolved. */
typedef struct tdb_dwarf_unit {
    uint64_t offset;      /* of the unit header in .debug_info */
    int version;          /* 2..5 */
    const char *producer; /* DW_AT_producer: "GNU C17 12.2.0 -mtune=generic -g -O2" */
    const char *name;     /* DW_AT_name: the primary source file */
} tdb_dwarf_unit;

/* Called for each compile unit; a nonzero return stops the walk. */
typedef int (*tdb_dwarf_unit_fn)(const tdb_dwarf_unit *unit, void *arg);

/* Walk the compile units of S->info (type units and dwz partial units are
 * skipped).  Returns the number of units reported, or -1 with ERR set at
 * the first malformed unit (the units before it were reported). */
long tdb_dwarf_each_unit(const tdb_dwarf_sections *s, tdb_dwarf_unit_fn fn, void *arg,
                         tdb_error *err);

/* How a compile unit was optimised, from its producer string. */
typedef enum tdb_opt {
    TDB_OPT_UNKNOWN = 0, /* no switches recorded (clang without -grecord-command-line) */
    TDB_OPT_NONE,        /* -O0, or no -O at all with switches recorded */
    TDB_OPT_DEBUG,       /* -Og: optimised, but for debugging */
    TDB_OPT_ON,          /* -O1 and up, -Os, -Oz, -Ofast */
    TDB_OPT_ASSEMBLER    /* an assembler's unit ("GNU AS 2.40"): not compiled code */
} tdb_opt;

/* Classify PRODUCER (may be NULL: unknown).  The last -O switch wins, as
 * it does for the compiler.  *OUT_FLAG, when given, gets a static string
 * naming the deciding switch ("-O2", "-O0", "no -O") or NULL. */
tdb_opt tdb_dwarf_producer_opt(const char *producer, const char **out_flag);

/* The -g level PRODUCER records: 0..3 (-g is 2, -gline-tables-only and
 * -g1 are 1), or -1 when it records none. */
int tdb_dwarf_producer_glevel(const char *producer);

/* A short stable name for an optimisation class: "unoptimised",
 * "debug-optimised", "optimised", "unknown", "assembler". */
const char *tdb_opt_name(tdb_opt opt);

/* What a gdb index holds. */
typedef struct tdb_dwarf_index {
    uint32_t version; /* .gdb_index 4..9, .debug_names 5 */
    uint32_t units;   /* compile units it covers */
    uint32_t symbols; /* names in its symbol table */
} tdb_dwarf_index;

/* Parse a .gdb_index section.  gdb ignores an index whose symbol table is
 * empty (what lld --gdb-index writes without -ggnu-pubnames; measured with
 * gdb 13.1), so callers should check OUT->symbols.  Returns 0, or -1 with
 * ERR set when the header is malformed or the version unsupported (<4). */
int tdb_dwarf_parse_gdb_index(const uint8_t *data, size_t len, tdb_dwarf_index *out,
                              tdb_error *err);

/* Parse the header of the first name index in a .debug_names section. */
int tdb_dwarf_parse_debug_names(const uint8_t *data, size_t len, int big_endian,
                                tdb_dwarf_index *out, tdb_error *err);

#endif

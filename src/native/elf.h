/*
 * Folder native/: the native side of a process or core file, read without
 * gdb: ELF objects (libbfd, the file's own tables) and their DWARF, native
 * frames and unwinding (libdw), the C++ ABI (type_info, strings, thrown
 * exceptions, a call's registers and signature), core files.  It knows
 * nothing of Python or torch, never prints and never exits; a damaged or
 * hostile file is an error, never a crash.
 * May include: base, process
 *
 * native/elf.h: ELF objects through libbfd: exported symbols, build-id, separate
 * debug files, DWARF presence and how the code was compiled, gdb indexes;
 * symbol sizes and load biases, which libbfd does not tell, from the file's
 * own tables.  The one ELF reader of src/ (lib/ keeps a tiny one of its own:
 * the preloaded library links nothing).
 *
 * Two levels:
 *  - tdb_elf: one open object, for quick questions ("where is PyInit__C?",
 *    "what is _PyRuntime's address?").  Opening libtorch_cpu (120 MB, 35k
 *    dynamic symbols) and reading its dynamic symbols takes ~11 ms.
 *  - tdb_elf_report: everything 'tdebug inspect' says about one object,
 *    following .gnu_debuglink/build-id to the separate debug file and
 *    .gnu_debugaltlink to the dwz file, with a JSON form.
 *
 * libbfd facts this file is built on (binutils 2.40): bfd_check_format()
 * must come before any query, and fills abfd->build_id; the dynamic symtab
 * upper bound is in bytes; versioned dynamic symbols appear once per
 * version under their plain name; .symtab is not a BFD section;
 * BFD_DECOMPRESS must be set before bfd_check_format() for debug sections
 * to be decompressed on read.  libbfd has no stable ABI: link the system one.
 */
#ifndef TDB_ELF_H
#define TDB_ELF_H

#include "base/common.h"
#include "native/dwarf.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tdb_elf tdb_elf;

typedef enum tdb_elf_kind {
    TDB_ELF_EXECUTABLE,  /* ET_EXEC */
    TDB_ELF_PIE,         /* ET_DYN with an interpreter */
    TDB_ELF_SHARED,      /* ET_DYN: a shared library or extension module */
    TDB_ELF_RELOCATABLE, /* ET_REL: an object file */
    TDB_ELF_CORE,
    TDB_ELF_OTHER
} tdb_elf_kind;

/* Open PATH and check it is an ELF object.  Returns NULL with ERR set
 * ("cannot inspect 'PATH': ...") when it does not exist, is a directory,
 * cannot be read, or is not an ELF object libbfd recognises (also for
 * truncated and corrupt headers).  Free with tdb_elf_free(). */
tdb_elf *tdb_elf_open(const char *path, tdb_error *err);
/* Open PATH for tdb_elf_find_symbol() and tdb_elf_load_bias() only (and
 * tdb_elf_free()): the file is mapped and must start like
 * ELF, without libbfd, whose check costs twice the rest (~30 us a file):
 * for questions put to every executable of the machine ('tdebug ps') or to
 * every process ('tdebug stacks').  The other calls need tdb_elf_open(). */
tdb_elf *tdb_elf_open_tables(const char *path, tdb_error *err);
void tdb_elf_free(tdb_elf *elf);

/* libbfd's target name: "elf64-x86-64". */
const char *tdb_elf_format(const tdb_elf *elf);
tdb_elf_kind tdb_elf_get_kind(const tdb_elf *elf);
/* "executable", "pie executable", "shared object", "relocatable object",
 * "core file", "other". */
const char *tdb_elf_kind_name(tdb_elf_kind kind);

/* The GNU build-id as lower-case hex, a new string; NULL when none. */
char *tdb_elf_build_id(const tdb_elf *elf);
/* The .gnu_debuglink file name (new string) and its CRC; NULL when none. */
char *tdb_elf_debuglink(tdb_elf *elf, uint32_t *out_crc);
/* 1 when the object keeps a .symtab (is not stripped), else 0. */
int tdb_elf_has_symtab(tdb_elf *elf);

/* The number of dynamic symbols libbfd lists (each version of a versioned
 * symbol counts), 0 for none, -1 with ERR set when the table is corrupt. */
long tdb_elf_dynsym_count(tdb_elf *elf, tdb_error *err);

/* The link-time value (st_value, the address for ET_EXEC, the offset
 * from the load address for ET_DYN) of the defined dynamic symbol NAME.
 * NAME may carry a version ("dlopen@GLIBC_2.34"); without one the default
 * version is preferred.  Returns 0 and writes *OUT_VALUE, or -1 with ERR
 * set (exit code TDB_EXIT_FAIL when the symbol is simply not there). */
int tdb_elf_find_dynsym(tdb_elf *elf, const char *name, uint64_t *out_value, tdb_error *err);

/* Open PATH, look NAME up as tdb_elf_find_dynsym() does, close.  E.g.
 * tdb_elf_dynsym_value(".../_C.cpython-311-x86_64-linux-gnu.so",
 * "PyInit__C", &v, err) gives 0x1110. */
int tdb_elf_dynsym_value(const char *path, const char *name, uint64_t *out_value,
                         tdb_error *err);

/* The defined symbol NAME, of any binding, from the dynamic symbol table,
 * else .symtab: its link-time value (as tdb_elf_find_dynsym) and, when
 * OUT_SIZE is not NULL, its size (st_size: a function's bytes, an object's
 * sizeof).  No versions: the first one found.  Returns 0, or -1 with ERR
 * set (exit code TDB_EXIT_FAIL when the symbol is simply not there; another
 * for an object that is not 64-bit little-endian ELF). */
int tdb_elf_find_symbol(tdb_elf *elf, const char *name, uint64_t *out_value, uint64_t *out_size,
                        tdb_error *err);

/* The link-time values of the functions called NAME: a C function's
 * exact name, or a C++ qualified name ("at::native::add", overloads and
 * const members all match; a parameter list in NAME is ignored), from the
 * dynamic symbol table and .symtab, each address once.  Returns 0 with a
 * new array in *OUT_VALUES (may be empty: *OUT_N 0), or -1 with ERR set.
 * Works on tdb_elf_open_tables() objects. */
int tdb_elf_functions_named(tdb_elf *elf, const char *name, uint64_t **out_values, size_t *out_n,
                            tdb_error *err);

/* The load bias of ELF in a process (the runtime address minus the
 * link-time address), from the mapping of it that starts at address
 * MAP_START with file offset MAP_OFFSET (a line of /proc/PID/maps) and the
 * object's PT_LOAD program headers.  Returns 0, or -1 with ERR set when no
 * loadable segment holds that offset. */
int tdb_elf_load_bias(tdb_elf *elf, uint64_t map_start, uint64_t map_offset, uint64_t *out_bias,
                      tdb_error *err);

/* What the dynamic loader reads of an object: its dynamic section and
 * program interpreter. */
typedef struct tdb_elf_dynamic {
    char **needed;    /* DT_NEEDED names in order, NULL-terminated (never NULL) */
    size_t n_needed;
    char *soname;     /* DT_SONAME, or NULL */
    char *runpath;    /* DT_RUNPATH, or NULL */
    char *rpath;      /* DT_RPATH, or NULL */
    char *interp;     /* PT_INTERP ("/lib64/ld-linux-x86-64.so.2"), or NULL */
} tdb_elf_dynamic;

/* Read ELF's dynamic section (through PT_DYNAMIC, as the loader does, so a
 * stripped object or one without section headers works) into *OUT.  Works
 * on an object from tdb_elf_open_tables() too.  An object with no dynamic
 * section (static, relocatable) gives an empty *OUT.  Returns 0, or -1 with
 * ERR set for an object that is not 64-bit little-endian ELF or whose
 * dynamic section is damaged.  Release with tdb_elf_dynamic_release(). */
int tdb_elf_read_dynamic(tdb_elf *elf, tdb_elf_dynamic *out, tdb_error *err);
void tdb_elf_dynamic_release(tdb_elf_dynamic *d);

/* The names of the defined global dynamic symbols starting with PREFIX
 * ("PyInit_"), each once, in table order: a new NULL-terminated array
 * (free with tdb_strv_free), *OUT_N its length.  NULL with ERR set when the
 * table is corrupt. */
char **tdb_elf_exports(tdb_elf *elf, const char *prefix, size_t *out_n, tdb_error *err);
/* The same, and when OUT_VALUES is not NULL each one's link-time value (as
 * tdb_elf_find_dynsym()) in a new array *OUT_VALUES (NULL when none). */
char **tdb_elf_exports_values(tdb_elf *elf, const char *prefix, uint64_t **out_values,
                              size_t *out_n, tdb_error *err);

/* Where separate debug files are looked for: gdb's debug-file-directory. */
#define TDB_DEBUG_DIR_DEFAULT "/usr/lib/debug"

/* Where gdb looks for the separate debug file of the object whose build-id
 * is BUILD_ID (hex, at least two digits) under DEBUG_DIR:
 * "DEBUG_DIR/.build-id/c5/61f3aa....debug".  A new string. */
char *tdb_build_id_path(const char *debug_dir, const char *build_id);

/* --- The whole report ---------------------------------------------------- */

typedef struct tdb_elf_options {
    /* Debug-file directories, as gdb's 'set debug-file-directory' (a
     * colon-separated list); NULL means TDB_DEBUG_DIR_DEFAULT. */
    const char *debug_dirs;
    /* Nonzero: do not walk the compile units (no producers). */
    int skip_units;
} tdb_elf_options;

/* A DWARF section as found. */
typedef struct tdb_elf_section {
    int present;             /* with contents (not NOBITS) */
    const char *compression; /* NULL, "zlib", "zlib-gnu" (.zdebug_*) or "zstd" */
    uint64_t size;           /* uncompressed bytes */
} tdb_elf_section;

/* Distinct DW_AT_producer strings, with how many units each. */
typedef struct tdb_elf_producer {
    char *producer;
    size_t units;
    tdb_opt opt;
    const char *flag; /* the deciding -O switch, static, or NULL */
} tdb_elf_producer;

#define TDB_ELF_MAX_PRODUCERS 16
#define TDB_ELF_MAX_EXAMPLES 8

typedef struct tdb_elf_report {
    char *path;     /* as given */
    char *realpath; /* symlinks resolved */
    char *format;
    tdb_elf_kind kind;
    char *build_id;
    int has_symtab;
    long dynamic_symbols;
    char **pyinit; /* exported PyInit_* (NULL-terminated) */
    uint64_t *pyinit_values; /* their link-time values, as tdb_elf_find_dynsym() */
    size_t n_pyinit;

    char *debuglink; /* .gnu_debuglink name, or NULL */
    uint32_t debuglink_crc;
    char *debug_file;           /* the separate debug file found, or NULL */
    const char *debug_file_via; /* "build-id", "beside", ".debug", "debug-dir" */
    char **searched;            /* every candidate path looked at (NULL-terminated) */
    size_t n_searched;
    char **rejected;            /* "PATH: why" for candidates that did not match */
    size_t n_rejected;
    char *altlink;              /* .gnu_debugaltlink (dwz) of the DWARF file */
    char *alt_file;             /* where it was found, or NULL */

    const char *dwarf_in; /* "object", "debug file", or NULL: no DWARF */
    tdb_elf_section debug_info;
    tdb_elf_section debug_line;
    unsigned versions;    /* bit N set: units of DWARF version N */
    size_t units;         /* compile units read */
    size_t n_opt[TDB_OPT_ASSEMBLER + 1]; /* units per tdb_opt */
    size_t line_tables_only;             /* units built -g1 / -gline-tables-only */
    tdb_elf_producer producers[TDB_ELF_MAX_PRODUCERS];
    size_t n_producers;
    size_t more_producers;               /* distinct producers not kept */
    char *optimised_examples[TDB_ELF_MAX_EXAMPLES]; /* "name (-O2)" */
    size_t n_optimised_examples;
    char *dwarf_error;    /* why reading the units stopped early, or NULL */

    const char *index_section; /* ".gdb_index", ".debug_names" or NULL */
    const char *index_in;      /* "object" or "debug file" */
    tdb_dwarf_index index;
    char *index_error;         /* a malformed index, or NULL */
} tdb_elf_report;

/* Inspect PATH.  OPT may be NULL.  Returns a new report, or NULL with ERR
 * set when PATH cannot be opened as an ELF object (see tdb_elf_open).
 * Problems further in (a corrupt debug file, a malformed unit) are kept in
 * the report, not returned as errors. */
tdb_elf_report *tdb_elf_inspect(const char *path, const tdb_elf_options *opt, tdb_error *err);
void tdb_elf_report_free(tdb_elf_report *r);

/* What the report means for a debugger. */
typedef struct tdb_elf_verdict {
    int dwarf;         /* .debug_info and .debug_line were found */
    tdb_opt opt;       /* the worst unit: ON > DEBUG > NONE; UNKNOWN when no unit tells */
    int indexed;       /* a gdb index with symbols sits with the DWARF */
    int debuggable;    /* dwarf, opt == NONE and indexed */
} tdb_elf_verdict;
void tdb_elf_get_verdict(const tdb_elf_report *r, tdb_elf_verdict *out);

/* The report as JSON (new reference); the format is documented in
 * tdebug(1), 'tdebug inspect', and only grows. */
json_t *tdb_elf_report_json(const tdb_elf_report *r);

#endif

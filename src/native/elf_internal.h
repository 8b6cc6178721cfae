/*
 * native/elf_internal.h: what the three files of the ELF reader share:
 * native/elf.c (opening, libbfd's symbols), native/elf_tables.c (the
 * file's own tables: symbol sizes, program headers, the dynamic section)
 * and native/elf_report.c (debug info, separate debug files, the report).
 * Not a public interface: native/elf.h is.
 */
#ifndef TDB_ELF_INTERNAL_H
#define TDB_ELF_INTERNAL_H

#include "native/elf.h"

#include <bfd.h>
#include <stdint.h>
#include <sys/stat.h>

struct tdb_elf {
    char *path;
    bfd *abfd;          /* NULL when opened by tdb_elf_open_tables() */
    int fd;
    struct stat st;
    const uint8_t *map; /* the whole file, read-only; NULL if mmap failed */
    size_t map_len;
    asymbol **dynsyms;  /* loaded on first use */
    long n_dynsyms;
    int dynsyms_loaded;
};

typedef enum tdb_elf_open_mode {
    TDB_ELF_OPEN_BFD,        /* libbfd, for everything */
    TDB_ELF_OPEN_DECOMPRESS, /* libbfd, inflating compressed debug sections */
    TDB_ELF_OPEN_TABLES      /* the mapping alone (tdb_elf_open_tables) */
} tdb_elf_open_mode;

/* Open PATH as MODE says (tdb_elf_open() is TDB_ELF_OPEN_BFD). */
tdb_elf *tdb_elf_open_as(const char *path, tdb_elf_open_mode mode, tdb_error *err);
/* Why libbfd's last call failed (a static string). */
const char *tdb_bfd_why(void);

#endif

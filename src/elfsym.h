/*
 * elfsym.h: the smallest ELF reader that finds a symbol's address by name
 * in a mapped executable or shared library (.dynsym, then .symtab), and
 * where that file is loaded in a process.
 *
 * Used by the CPython reader to find _PyRuntime and friends before libbfd
 * is involved; it reads 64-bit ELF only and bounds every table against the
 * file size, so a truncated or hostile file gives "not found", never a
 * crash.  Kept small so that src/elf.c (libbfd) can replace it.
 */
#ifndef TDB_ELFSYM_H
#define TDB_ELFSYM_H

#include "common.h"
#include "procfs.h"

#include <stdint.h>

typedef struct tdb_elfsym tdb_elfsym;

/* Map PATH read-only.  NULL with ERR set when it cannot be opened or is
 * not a 64-bit ELF file. */
tdb_elfsym *tdb_elfsym_open(const char *path, tdb_error *err);
void tdb_elfsym_close(tdb_elfsym *e); /* accepts NULL */

/* Look NAME up among the defined symbols (.dynsym first, then .symtab).
 * 0 with *VALUE (the link-time address) and *SIZE written when found, -1
 * when not. */
int tdb_elfsym_lookup(const tdb_elfsym *e, const char *name, uint64_t *value, uint64_t *size);

/* The load bias of the file in a process: runtime address minus link-time
 * address, found from the first mapping in MAPS whose path is MAP_PATH and
 * the file's PT_LOAD headers.  0 and *BIAS on success, -1 when the file is
 * not mapped. */
int tdb_elfsym_bias(const tdb_elfsym *e, const tdb_maps *maps, const char *map_path,
                    uint64_t *bias);

#endif

/*
 * preload_elf.h: does a mapped object export a symbol?  Answered from the
 * object's own dynamic section in memory (GNU hash, else SysV hash), with
 * no dlopen/dlsym (which would take the loader's lock and search
 * dependencies too) and no file access.  Internal to lib/.
 */
#ifndef TDP_ELF_H
#define TDP_ELF_H

#include <link.h>

/* Nonzero when the object loaded at L_ADDR with dynamic section DYN (a
 * link_map's l_addr and l_ld) defines NAME in its dynamic symbol table.
 * Works before the object is relocated, from la_objopen(). */
int tdp_exports(ElfW(Addr) l_addr, const ElfW(Dyn) *dyn, const char *name);

#endif

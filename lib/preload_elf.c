/*
 * preload_elf.c: symbol lookup in a mapped object's dynamic symbol table.
 *
 * la_objopen() runs after the loader has mapped the object and read its
 * dynamic section, before relocation.  glibc rewrites the address entries of
 * a writable .dynamic in place (adding l_addr) at that point, and leaves a
 * read-only one alone: an entry below l_addr is therefore still a file
 * address and needs l_addr added, one at or above it already has it.  This
 * costs a bloom-filter test for most objects, so watching every object of
 * an 'import torch' (~300) is within noise.
 */
#include "preload_elf.h"

#include <stdint.h>
#include <string.h>

struct dynview {
    const ElfW(Sym) *symtab;
    const char *strtab;
    const uint32_t *gnu_hash;
    const uint32_t *sysv_hash;
};

static const void *dyn_ptr(ElfW(Addr) l_addr, ElfW(Addr) p)
{
    if (p && l_addr && p < l_addr)
        p += l_addr;
    return (const void *)p;
}

static int defined(const ElfW(Sym) *s)
{
    unsigned bind = ELF64_ST_BIND(s->st_info); /* the same macro for ELF32 */
    return s->st_shndx != SHN_UNDEF && (bind == STB_GLOBAL || bind == STB_WEAK);
}

static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = h * 33 + *p;
    return h;
}

static uint32_t sysv_hash(const char *s)
{
    uint32_t h = 0, g;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h = (h << 4) + *p;
        g = h & 0xf0000000u;
        if (g)
            h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

static int gnu_lookup(const struct dynview *d, const char *name)
{
    const uint32_t *ht = d->gnu_hash;
    uint32_t nbuckets = ht[0], symoffset = ht[1], bloom_size = ht[2], shift = ht[3];
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)(ht + 4);
    const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    const unsigned bits = sizeof(ElfW(Addr)) * 8;
    uint32_t h = gnu_hash(name);

    if (!nbuckets || !bloom_size)
        return 0;
    ElfW(Addr) word = bloom[(h / bits) % bloom_size];
    ElfW(Addr) mask = ((ElfW(Addr))1 << (h % bits)) | ((ElfW(Addr))1 << ((h >> shift) % bits));
    if ((word & mask) != mask)
        return 0;
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset)
        return 0;
    for (;; i++) {
        uint32_t h2 = chain[i - symoffset];
        if ((h | 1) == (h2 | 1) && defined(&d->symtab[i]) &&
            strcmp(name, d->strtab + d->symtab[i].st_name) == 0)
            return 1;
        if (h2 & 1)
            return 0;
    }
}

static int sysv_lookup(const struct dynview *d, const char *name)
{
    uint32_t nbucket = d->sysv_hash[0];
    const uint32_t *bucket = d->sysv_hash + 2, *chain = bucket + nbucket;

    if (!nbucket)
        return 0;
    for (uint32_t i = bucket[sysv_hash(name) % nbucket]; i != STN_UNDEF; i = chain[i])
        if (defined(&d->symtab[i]) && strcmp(name, d->strtab + d->symtab[i].st_name) == 0)
            return 1;
    return 0;
}

int tdp_exports(ElfW(Addr) l_addr, const ElfW(Dyn) *dyn, const char *name)
{
    struct dynview d = {0};

    if (!dyn)
        return 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB: d.symtab = dyn_ptr(l_addr, dyn->d_un.d_ptr); break;
        case DT_STRTAB: d.strtab = dyn_ptr(l_addr, dyn->d_un.d_ptr); break;
        case DT_GNU_HASH: d.gnu_hash = dyn_ptr(l_addr, dyn->d_un.d_ptr); break;
        case DT_HASH: d.sysv_hash = dyn_ptr(l_addr, dyn->d_un.d_ptr); break;
        }
    }
    if (!d.symtab || !d.strtab)
        return 0;
    if (d.gnu_hash)
        return gnu_lookup(&d, name);
    if (d.sysv_hash)
        return sysv_lookup(&d, name);
    return 0;
}

/* elfsym.c: symbol lookup by name in one ELF file, with <elf.h> only. */
#include "elfsym.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct tdb_elfsym {
    const unsigned char *data;
    size_t size;
    const Elf64_Ehdr *eh;
};

/* Is [off, off + len) inside the file? */
static int in_file(const tdb_elfsym *e, uint64_t off, uint64_t len)
{
    return off <= e->size && len <= e->size - off;
}

tdb_elfsym *tdb_elfsym_open(const char *path, tdb_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tdb_error_errno(err, "cannot open '%s'", path);
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        tdb_error_set(err, ENOEXEC, "cannot read '%s': not an ELF file", path);
        close(fd);
        return NULL;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        tdb_error_errno(err, "cannot map '%s'", path);
        return NULL;
    }
    const Elf64_Ehdr *eh = p;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != ELFDATA2LSB) {
        tdb_error_set(err, ENOEXEC, "cannot read '%s': not a 64-bit little-endian ELF file", path);
        munmap(p, (size_t)st.st_size);
        return NULL;
    }
    tdb_elfsym *e = tdb_xcalloc(1, sizeof(*e));
    e->data = p;
    e->size = (size_t)st.st_size;
    e->eh = eh;
    return e;
}

void tdb_elfsym_close(tdb_elfsym *e)
{
    if (!e)
        return;
    munmap((void *)e->data, e->size);
    free(e);
}

static const Elf64_Shdr *section(const tdb_elfsym *e, size_t i)
{
    const Elf64_Ehdr *eh = e->eh;
    if (eh->e_shentsize != sizeof(Elf64_Shdr) || i >= eh->e_shnum ||
        !in_file(e, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        return NULL;
    return (const Elf64_Shdr *)(e->data + eh->e_shoff) + i;
}

static int lookup_in(const tdb_elfsym *e, uint32_t type, const char *name, uint64_t *value,
                     uint64_t *size)
{
    size_t namelen = strlen(name);
    for (size_t i = 0; i < e->eh->e_shnum; i++) {
        const Elf64_Shdr *sh = section(e, i);
        if (!sh)
            return -1;
        if (sh->sh_type != type || sh->sh_entsize != sizeof(Elf64_Sym) ||
            !in_file(e, sh->sh_offset, sh->sh_size))
            continue;
        const Elf64_Shdr *strsh = section(e, sh->sh_link);
        if (!strsh || !in_file(e, strsh->sh_offset, strsh->sh_size))
            continue;
        const char *strtab = (const char *)e->data + strsh->sh_offset;
        const Elf64_Sym *syms = (const Elf64_Sym *)(e->data + sh->sh_offset);
        size_t n = sh->sh_size / sizeof(Elf64_Sym);
        for (size_t s = 0; s < n; s++) {
            const Elf64_Sym *sym = &syms[s];
            if (sym->st_shndx == SHN_UNDEF || sym->st_name >= strsh->sh_size)
                continue;
            if (strsh->sh_size - sym->st_name <= namelen)
                continue;
            const char *sname = strtab + sym->st_name;
            if (memcmp(sname, name, namelen) == 0 && sname[namelen] == '\0') {
                *value = sym->st_value;
                *size = sym->st_size;
                return 0;
            }
        }
    }
    return -1;
}

int tdb_elfsym_lookup(const tdb_elfsym *e, const char *name, uint64_t *value, uint64_t *size)
{
    if (lookup_in(e, SHT_DYNSYM, name, value, size) == 0)
        return 0;
    return lookup_in(e, SHT_SYMTAB, name, value, size);
}

int tdb_elfsym_bias(const tdb_elfsym *e, const tdb_maps *maps, const char *map_path,
                    uint64_t *bias)
{
    const Elf64_Ehdr *eh = e->eh;
    if (eh->e_phentsize != sizeof(Elf64_Phdr) ||
        !in_file(e, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)))
        return -1;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(e->data + eh->e_phoff);
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < maps->n; i++) {
        const tdb_map *m = &maps->v[i];
        if (!m->path || strcmp(m->path, map_path) != 0)
            continue;
        /* The segment whose file bytes this mapping starts in; the kernel
         * maps segments at page granularity, so compare page-aligned
         * offsets (p_offset and p_vaddr agree modulo the page size). */
        for (size_t j = 0; j < eh->e_phnum; j++) {
            if (ph[j].p_type != PT_LOAD)
                continue;
            uint64_t seg_off = ph[j].p_offset & ~(page - 1);
            uint64_t seg_vaddr = ph[j].p_vaddr & ~(page - 1);
            uint64_t seg_end = ph[j].p_offset + ph[j].p_filesz;
            if (m->offset >= seg_off && m->offset < seg_end) {
                *bias = m->start - (seg_vaddr + (m->offset - seg_off));
                return 0;
            }
        }
    }
    return -1;
}

/*
 * native/elf_tables.c: what libbfd does not tell, read from the file's own
 * tables through our mapping of it: symbol sizes, the functions of a name,
 * program headers and load biases, the dynamic section (contract in
 * native/elf.h).
 */
#include "native/elf_internal.h"

#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --- Symbol sizes and program headers ------------------------------------
 * libbfd's public interface gives neither a symbol's size (st_size) nor the
 * program headers, so these are read from our mapping of the file, every
 * offset bounded by its size: a truncated or hostile file gives "not
 * found", never a crash.  64-bit little-endian ELF only (x86-64, arm64). */

/* Is [off, off + len) inside the mapped file? */
static int in_map(const tdb_elf *e, uint64_t off, uint64_t len)
{
    return off <= e->map_len && len <= e->map_len - off;
}

static const Elf64_Ehdr *raw_header(const tdb_elf *e, tdb_error *err)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)e->map;
    const char *why = !eh                        ? "it cannot be mapped"
                      : !in_map(e, 0, sizeof(*eh)) ? "its ELF header is cut short"
                      : eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB
                          ? "not a 64-bit little-endian ELF object"
                          : NULL;
    if (why) {
        tdb_error_set(err, ENOEXEC, "cannot read the symbols of '%s': %s", e->path, why);
        return NULL;
    }
    return eh;
}

static const Elf64_Shdr *raw_section(const tdb_elf *e, const Elf64_Ehdr *eh, size_t i)
{
    if (eh->e_shentsize != sizeof(Elf64_Shdr) || i >= eh->e_shnum ||
        !in_map(e, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        return NULL;
    return (const Elf64_Shdr *)(e->map + eh->e_shoff) + i;
}

/* NAME among the defined symbols of the tables of TYPE (SHT_DYNSYM,
 * SHT_SYMTAB): 0 with *VALUE and *SIZE, or -1. */
static int raw_lookup(const tdb_elf *e, const Elf64_Ehdr *eh, uint32_t type, const char *name,
                      uint64_t *value, uint64_t *size)
{
    size_t namelen = strlen(name);
    for (size_t i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = raw_section(e, eh, i);
        if (!sh)
            return -1;
        if (sh->sh_type != type || sh->sh_entsize != sizeof(Elf64_Sym) ||
            !in_map(e, sh->sh_offset, sh->sh_size))
            continue;
        const Elf64_Shdr *strsh = raw_section(e, eh, sh->sh_link);
        if (!strsh || !in_map(e, strsh->sh_offset, strsh->sh_size))
            continue;
        const char *strtab = (const char *)e->map + strsh->sh_offset;
        const Elf64_Sym *syms = (const Elf64_Sym *)(e->map + sh->sh_offset);
        size_t n = sh->sh_size / sizeof(Elf64_Sym);
        for (size_t k = 0; k < n; k++) {
            const Elf64_Sym *sym = &syms[k];
            if (sym->st_shndx == SHN_UNDEF || sym->st_name >= strsh->sh_size ||
                strsh->sh_size - sym->st_name <= namelen)
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

/* The mangled-name prefixes of the C++ function NAME ("at::native::add"):
 * "_ZN2at6native3addE" and its const-member form "_ZNK2at6native3addE", or
 * "_Z3addE"-less "_Z3add" for a top-level function; 0 when NAME is not a
 * plain qualified name (an operator, a template, a parameter list). */
static int mangled_prefixes(const char *name, size_t len, tdb_buf *plain, tdb_buf *konst)
{
    tdb_buf parts = TDB_BUF_INIT;
    int n = 0;
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && (isalnum((unsigned char)name[j]) || name[j] == '_'))
            j++;
        if (j == i || isdigit((unsigned char)name[i]))
            goto bad;
        tdb_buf_addf(&parts, "%zu", j - i);
        tdb_buf_add(&parts, name + i, j - i);
        n++;
        if (j == len)
            break;
        if (j + 1 >= len || name[j] != ':' || name[j + 1] != ':')
            goto bad;
        i = j + 2;
        if (i == len)
            goto bad;
    }
    if (!n)
        goto bad;
    if (n == 1) {
        tdb_buf_addf(plain, "_Z%s", tdb_buf_str(&parts));
    } else {
        tdb_buf_addf(plain, "_ZN%sE", tdb_buf_str(&parts));
        tdb_buf_addf(konst, "_ZNK%sE", tdb_buf_str(&parts));
    }
    tdb_buf_free(&parts);
    return 1;
bad:
    tdb_buf_free(&parts);
    return 0;
}

/* Does SNAME (a symbol's name) name function NAME: equal (C), or a
 * mangled C++ name whose qualified name is NAME (any parameters). */
static int names_function(const char *sname, const char *name, size_t len, const tdb_buf *plain,
                          const tdb_buf *konst)
{
    if (strncmp(sname, name, len) == 0 && (sname[len] == '\0' || sname[len] == '@'))
        return 1;
    if (plain->len && strncmp(sname, plain->s, plain->len) == 0) {
        /* _Z3add must be followed by the parameters, not more name:
         * "_Z3addi" yes, "_Z3add2" (a longer name "add2"?) cannot happen
         * since lengths prefix names; for N...E forms E ends the name. */
        return 1;
    }
    return konst->len && strncmp(sname, konst->s, konst->len) == 0;
}

int tdb_elf_functions_named(tdb_elf *e, const char *name, uint64_t **out_values, size_t *out_n,
                            tdb_error *err)
{
    const Elf64_Ehdr *eh = raw_header(e, err);
    if (!eh)
        return -1;
    size_t len = strcspn(name, "(");
    while (len && name[len - 1] == ' ')
        len--;
    tdb_buf plain = TDB_BUF_INIT, konst = TDB_BUF_INIT;
    if (!mangled_prefixes(name, len, &plain, &konst))
        tdb_buf_reset(&plain);
    uint64_t *v = NULL;
    size_t n = 0, cap = 0;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t type = pass == 0 ? SHT_DYNSYM : SHT_SYMTAB;
        for (size_t i = 0; i < eh->e_shnum; i++) {
            const Elf64_Shdr *sh = raw_section(e, eh, i);
            if (!sh)
                break;
            if (sh->sh_type != type || sh->sh_entsize != sizeof(Elf64_Sym) ||
                !in_map(e, sh->sh_offset, sh->sh_size))
                continue;
            const Elf64_Shdr *strsh = raw_section(e, eh, sh->sh_link);
            if (!strsh || !in_map(e, strsh->sh_offset, strsh->sh_size) || !strsh->sh_size)
                continue;
            const char *strtab = (const char *)e->map + strsh->sh_offset;
            if (strtab[strsh->sh_size - 1] != '\0')
                continue;
            const Elf64_Sym *syms = (const Elf64_Sym *)(e->map + sh->sh_offset);
            size_t count = sh->sh_size / sizeof(Elf64_Sym);
            for (size_t k = 0; k < count; k++) {
                const Elf64_Sym *sym = &syms[k];
                int t = ELF64_ST_TYPE(sym->st_info);
                if (sym->st_shndx == SHN_UNDEF || sym->st_name >= strsh->sh_size ||
                    (t != STT_FUNC && t != STT_GNU_IFUNC) || !sym->st_value)
                    continue;
                if (!names_function(strtab + sym->st_name, name, len, &plain, &konst))
                    continue;
                int seen = 0;
                for (size_t m = 0; m < n && !seen; m++)
                    seen = v[m] == sym->st_value;
                if (!seen) {
                    TDB_GROW(v, n, cap);
                    v[n++] = sym->st_value;
                }
            }
        }
    }
    tdb_buf_free(&plain);
    tdb_buf_free(&konst);
    *out_values = v;
    *out_n = n;
    return 0;
}

int tdb_elf_find_symbol(tdb_elf *e, const char *name, uint64_t *out_value, uint64_t *out_size,
                        tdb_error *err)
{
    const Elf64_Ehdr *eh = raw_header(e, err);
    uint64_t value, size;
    if (!eh)
        return -1;
    if (raw_lookup(e, eh, SHT_DYNSYM, name, &value, &size) < 0 &&
        raw_lookup(e, eh, SHT_SYMTAB, name, &value, &size) < 0) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, 0, "'%s' has no symbol '%s'", e->path, name);
        return -1;
    }
    *out_value = value;
    if (out_size)
        *out_size = size;
    return 0;
}

/* The program headers of E (*OUT_N of them), or NULL with ERR set. */
static const Elf64_Phdr *raw_phdrs(const tdb_elf *e, size_t *out_n, tdb_error *err)
{
    const Elf64_Ehdr *eh = raw_header(e, err);
    if (!eh)
        return NULL;
    if (eh->e_phentsize != sizeof(Elf64_Phdr) ||
        !in_map(e, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr))) {
        tdb_error_set(err, ENOEXEC, "cannot read the program headers of '%s'", e->path);
        return NULL;
    }
    *out_n = eh->e_phnum;
    return (const Elf64_Phdr *)(e->map + eh->e_phoff);
}

int tdb_elf_load_bias(tdb_elf *e, uint64_t map_start, uint64_t map_offset, uint64_t *out_bias,
                      tdb_error *err)
{
    size_t n_ph;
    const Elf64_Phdr *ph = raw_phdrs(e, &n_ph, err);
    if (!ph)
        return -1;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    /* The segment whose file bytes the mapping starts in; the kernel maps
     * segments at page granularity, so compare page-aligned offsets
     * (p_offset and p_vaddr agree modulo the page size). */
    for (size_t j = 0; j < n_ph; j++) {
        if (ph[j].p_type != PT_LOAD)
            continue;
        uint64_t seg_off = ph[j].p_offset & ~(page - 1);
        uint64_t seg_vaddr = ph[j].p_vaddr & ~(page - 1);
        uint64_t seg_end = ph[j].p_offset + ph[j].p_filesz;
        if (map_offset >= seg_off && map_offset < seg_end) {
            *out_bias = map_start - (seg_vaddr + (map_offset - seg_off));
            return 0;
        }
    }
    tdb_error_set(err, ENOEXEC, "'%s' has no loadable segment at file offset %#llx", e->path,
                  (unsigned long long)map_offset);
    return -1;
}

/* --- The dynamic section ------------------------------------------------- */

/* The file offset of link-time address ADDR, through the PT_LOAD segments;
 * -1 when no segment's file bytes hold it. */
static int64_t vaddr_offset(const Elf64_Phdr *ph, size_t n, uint64_t addr)
{
    for (size_t i = 0; i < n; i++)
        if (ph[i].p_type == PT_LOAD && addr >= ph[i].p_vaddr &&
            addr - ph[i].p_vaddr < ph[i].p_filesz)
            return (int64_t)(addr - ph[i].p_vaddr + ph[i].p_offset);
    return -1;
}

/* A copy of the NUL-terminated string at OFF of the string table [STR, STR
 * + SIZE) in the mapping, or NULL when it runs out of the table. */
static char *table_string(const tdb_elf *e, uint64_t str, uint64_t size, uint64_t off)
{
    if (off >= size || !in_map(e, str, size))
        return NULL;
    const char *s = (const char *)e->map + str + off;
    const char *end = memchr(s, '\0', size - off);
    return end ? tdb_xstrndup(s, (size_t)(end - s)) : NULL;
}

int tdb_elf_read_dynamic(tdb_elf *e, tdb_elf_dynamic *out, tdb_error *err)
{
    tdb_elf_dynamic d = {0};
    const Elf64_Dyn *dyn = NULL;
    size_t n_dyn = 0, n_ph;
    uint64_t strtab = 0, strsz = 0;
    int have_strtab = 0;
    const Elf64_Phdr *ph = raw_phdrs(e, &n_ph, err);

    if (!ph)
        return -1;
    for (size_t i = 0; i < n_ph; i++) {
        if (ph[i].p_type == PT_INTERP && in_map(e, ph[i].p_offset, ph[i].p_filesz) &&
            ph[i].p_filesz > 1)
            d.interp = tdb_xstrndup((const char *)e->map + ph[i].p_offset,
                                    strnlen((const char *)e->map + ph[i].p_offset,
                                            ph[i].p_filesz));
        if (ph[i].p_type == PT_DYNAMIC) {
            if (!in_map(e, ph[i].p_offset, ph[i].p_filesz)) {
                tdb_error_set(err, ENOEXEC, "the dynamic section of '%s' lies past its end "
                              "(a truncated file?)", e->path);
                goto fail;
            }
            dyn = (const Elf64_Dyn *)(e->map + ph[i].p_offset);
            n_dyn = ph[i].p_filesz / sizeof(Elf64_Dyn);
        }
    }
    for (size_t i = 0; i < n_dyn && dyn[i].d_tag != DT_NULL; i++) {
        if (dyn[i].d_tag == DT_STRTAB) {
            int64_t off = vaddr_offset(ph, n_ph, dyn[i].d_un.d_ptr);
            have_strtab = off >= 0;
            strtab = have_strtab ? (uint64_t)off : 0;
        } else if (dyn[i].d_tag == DT_STRSZ) {
            strsz = dyn[i].d_un.d_val;
        }
    }
    if (n_dyn && !have_strtab) {
        tdb_error_set(err, ENOEXEC, "the dynamic section of '%s' has no string table the file "
                      "holds", e->path);
        goto fail;
    }
    d.needed = tdb_xcalloc(1, sizeof(char *));
    for (size_t i = 0; i < n_dyn && dyn[i].d_tag != DT_NULL; i++) {
        int64_t tag = dyn[i].d_tag;
        if (tag != DT_NEEDED && tag != DT_SONAME && tag != DT_RUNPATH && tag != DT_RPATH)
            continue;
        char *str = table_string(e, strtab, strsz, dyn[i].d_un.d_val);
        if (!str) {
            tdb_error_set(err, ENOEXEC, "a name in the dynamic section of '%s' lies outside "
                          "its string table (a damaged file?)", e->path);
            goto fail;
        }
        char **slot = tag == DT_SONAME ? &d.soname : tag == DT_RUNPATH ? &d.runpath
                    : tag == DT_RPATH ? &d.rpath : NULL;
        if (slot) {
            free(*slot);
            *slot = str;
        } else {
            tdb_ptrs_push(&d.needed, &d.n_needed, str);
        }
    }
    if (!d.needed)
        d.needed = tdb_xcalloc(1, sizeof(char *));
    *out = d;
    return 0;
fail:
    tdb_elf_dynamic_release(&d);
    return -1;
}

void tdb_elf_dynamic_release(tdb_elf_dynamic *d)
{
    tdb_strv_free(d->needed);
    free(d->soname);
    free(d->runpath);
    free(d->rpath);
    free(d->interp);
    memset(d, 0, sizeof(*d));
}

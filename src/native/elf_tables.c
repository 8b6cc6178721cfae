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

/* The file's bytes have no alignment (a damaged or crafted file puts a
 * table at any offset): every struct is copied out of the mapping, never
 * read through a cast pointer into it. */
static void copy_out(const tdb_elf *e, uint64_t off, void *out, size_t len)
{
    memcpy(out, e->map + off, len);
}

/* The ELF header of E into *EH: 0, or -1 with ERR set. */
static int raw_header(const tdb_elf *e, Elf64_Ehdr *eh, tdb_error *err)
{
    const char *why = !e->map                     ? "it cannot be mapped"
                      : !in_map(e, 0, sizeof(*eh)) ? "its ELF header is cut short"
                                                   : NULL;
    if (!why) {
        copy_out(e, 0, eh, sizeof(*eh));
        if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB)
            why = "not a 64-bit little-endian ELF object";
    }
    if (why) {
        tdb_error_set(err, ENOEXEC, "cannot read the symbols of '%s': %s", e->path, why);
        return -1;
    }
    return 0;
}

/* Section header I into *OUT: 0, or -1 when the table is not in the file. */
static int raw_section(const tdb_elf *e, const Elf64_Ehdr *eh, size_t i, Elf64_Shdr *out)
{
    if (eh->e_shentsize != sizeof(Elf64_Shdr) || i >= eh->e_shnum ||
        !in_map(e, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        return -1;
    copy_out(e, eh->e_shoff + i * sizeof(Elf64_Shdr), out, sizeof(*out));
    return 0;
}

/* Call FN(symbol, its name, CTX) for each defined symbol of the tables of
 * TYPE (SHT_DYNSYM, SHT_SYMTAB) whose name lies within its string table,
 * until FN returns nonzero (then returns that).  A table or string table
 * that is not in the file is passed over; a section header table that is
 * not stops the walk. */
static int walk_symbols(const tdb_elf *e, const Elf64_Ehdr *eh, uint32_t type,
                        int (*fn)(const Elf64_Sym *sym, const char *name, void *ctx), void *ctx)
{
    for (size_t i = 0; i < eh->e_shnum; i++) {
        Elf64_Shdr sh, strsh;
        if (raw_section(e, eh, i, &sh) < 0)
            return 0;
        if (sh.sh_type != type || sh.sh_entsize != sizeof(Elf64_Sym) ||
            !in_map(e, sh.sh_offset, sh.sh_size) || raw_section(e, eh, sh.sh_link, &strsh) < 0 ||
            !in_map(e, strsh.sh_offset, strsh.sh_size))
            continue;
        const char *strtab = (const char *)e->map + strsh.sh_offset;
        size_t n = sh.sh_size / sizeof(Elf64_Sym);
        for (size_t k = 0; k < n; k++) {
            Elf64_Sym sym;
            copy_out(e, sh.sh_offset + k * sizeof(Elf64_Sym), &sym, sizeof(sym));
            if (sym.st_shndx == SHN_UNDEF || sym.st_name >= strsh.sh_size ||
                !memchr(strtab + sym.st_name, '\0', strsh.sh_size - sym.st_name))
                continue;
            int r = fn(&sym, strtab + sym.st_name, ctx);
            if (r)
                return r;
        }
    }
    return 0;
}

typedef struct lookup {
    const char *name;
    uint64_t value, size;
} lookup;

static int lookup_one(const Elf64_Sym *sym, const char *name, void *ctx)
{
    lookup *l = ctx;
    if (strcmp(name, l->name) != 0)
        return 0;
    l->value = sym->st_value;
    l->size = sym->st_size;
    return 1;
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

typedef struct named {
    const char *name;
    size_t len;
    tdb_buf plain, konst;
    uint64_t *v;
    size_t n, cap;
} named;

static int add_named(const Elf64_Sym *sym, const char *sname, void *ctx)
{
    named *f = ctx;
    int t = ELF64_ST_TYPE(sym->st_info);
    if ((t != STT_FUNC && t != STT_GNU_IFUNC) || !sym->st_value ||
        !names_function(sname, f->name, f->len, &f->plain, &f->konst))
        return 0;
    for (size_t m = 0; m < f->n; m++)
        if (f->v[m] == sym->st_value)
            return 0;
    TDB_GROW(f->v, f->n, f->cap);
    f->v[f->n++] = sym->st_value;
    return 0;
}

int tdb_elf_functions_named(tdb_elf *e, const char *name, uint64_t **out_values, size_t *out_n,
                            tdb_error *err)
{
    Elf64_Ehdr eh;
    if (raw_header(e, &eh, err) < 0)
        return -1;
    named f = {.name = name, .plain = TDB_BUF_INIT, .konst = TDB_BUF_INIT};
    f.len = strcspn(name, "(");
    while (f.len && name[f.len - 1] == ' ')
        f.len--;
    if (!mangled_prefixes(name, f.len, &f.plain, &f.konst))
        tdb_buf_reset(&f.plain);
    walk_symbols(e, &eh, SHT_DYNSYM, add_named, &f);
    walk_symbols(e, &eh, SHT_SYMTAB, add_named, &f);
    tdb_buf_free(&f.plain);
    tdb_buf_free(&f.konst);
    *out_values = f.v;
    *out_n = f.n;
    return 0;
}

int tdb_elf_find_symbol(tdb_elf *e, const char *name, uint64_t *out_value, uint64_t *out_size,
                        tdb_error *err)
{
    Elf64_Ehdr eh;
    lookup l = {.name = name};
    if (raw_header(e, &eh, err) < 0)
        return -1;
    if (!walk_symbols(e, &eh, SHT_DYNSYM, lookup_one, &l) &&
        !walk_symbols(e, &eh, SHT_SYMTAB, lookup_one, &l)) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, 0, "'%s' has no symbol '%s'", e->path, name);
        return -1;
    }
    *out_value = l.value;
    if (out_size)
        *out_size = l.size;
    return 0;
}

/* A copy of the program headers of E (*OUT_N of them; free it), or NULL
 * with ERR set. */
static Elf64_Phdr *raw_phdrs(const tdb_elf *e, size_t *out_n, tdb_error *err)
{
    Elf64_Ehdr eh;
    if (raw_header(e, &eh, err) < 0)
        return NULL;
    if (eh.e_phentsize != sizeof(Elf64_Phdr) ||
        !in_map(e, eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr))) {
        tdb_error_set(err, ENOEXEC, "cannot read the program headers of '%s'", e->path);
        return NULL;
    }
    Elf64_Phdr *ph = tdb_xcalloc(eh.e_phnum ? eh.e_phnum : 1, sizeof(*ph));
    copy_out(e, eh.e_phoff, ph, (size_t)eh.e_phnum * sizeof(*ph));
    *out_n = eh.e_phnum;
    return ph;
}

int tdb_elf_load_bias(tdb_elf *e, uint64_t map_start, uint64_t map_offset, uint64_t *out_bias,
                      tdb_error *err)
{
    size_t n_ph;
    Elf64_Phdr *ph = raw_phdrs(e, &n_ph, err);
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
            free(ph);
            return 0;
        }
    }
    free(ph);
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

/* Entry I of the dynamic section at file offset DYN (copied out). */
static Elf64_Dyn dyn_entry(const tdb_elf *e, uint64_t dyn, size_t i)
{
    Elf64_Dyn d;
    copy_out(e, dyn + i * sizeof(d), &d, sizeof(d));
    return d;
}

int tdb_elf_read_dynamic(tdb_elf *e, tdb_elf_dynamic *out, tdb_error *err)
{
    tdb_elf_dynamic d = {0};
    uint64_t dyn = 0;
    size_t n_dyn = 0, n_ph;
    uint64_t strtab = 0, strsz = 0;
    int have_strtab = 0;
    Elf64_Phdr *ph = raw_phdrs(e, &n_ph, err);

    if (!ph)
        return -1;
    for (size_t i = 0; i < n_ph; i++) {
        if (ph[i].p_type == PT_INTERP && in_map(e, ph[i].p_offset, ph[i].p_filesz) &&
            ph[i].p_filesz > 1) {
            free(d.interp);
            d.interp = tdb_xstrndup((const char *)e->map + ph[i].p_offset,
                                    strnlen((const char *)e->map + ph[i].p_offset,
                                            ph[i].p_filesz));
        }
        if (ph[i].p_type == PT_DYNAMIC) {
            if (!in_map(e, ph[i].p_offset, ph[i].p_filesz)) {
                tdb_error_set(err, ENOEXEC, "the dynamic section of '%s' lies past its end "
                              "(a truncated file?)", e->path);
                goto fail;
            }
            dyn = ph[i].p_offset;
            n_dyn = ph[i].p_filesz / sizeof(Elf64_Dyn);
        }
    }
    for (size_t i = 0; i < n_dyn; i++) {
        Elf64_Dyn en = dyn_entry(e, dyn, i);
        if (en.d_tag == DT_NULL)
            break;
        if (en.d_tag == DT_STRTAB) {
            int64_t off = vaddr_offset(ph, n_ph, en.d_un.d_ptr);
            have_strtab = off >= 0;
            strtab = have_strtab ? (uint64_t)off : 0;
        } else if (en.d_tag == DT_STRSZ) {
            strsz = en.d_un.d_val;
        }
    }
    if (n_dyn && !have_strtab) {
        tdb_error_set(err, ENOEXEC, "the dynamic section of '%s' has no string table the file "
                      "holds", e->path);
        goto fail;
    }
    d.needed = tdb_xcalloc(1, sizeof(char *));
    for (size_t i = 0; i < n_dyn; i++) {
        Elf64_Dyn en = dyn_entry(e, dyn, i);
        int64_t tag = en.d_tag;
        if (tag == DT_NULL)
            break;
        if (tag != DT_NEEDED && tag != DT_SONAME && tag != DT_RUNPATH && tag != DT_RPATH)
            continue;
        char *str = table_string(e, strtab, strsz, en.d_un.d_val);
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
    free(ph);
    *out = d;
    return 0;
fail:
    free(ph);
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

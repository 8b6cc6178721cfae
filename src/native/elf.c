/*
 * native/elf.c: libbfd for the object, native/dwarf.c for what its debug sections say
 * (see native/elf.h for the libbfd facts this relies on).
 *
 * Section bytes come from our own read-only mapping of the file when they
 * are stored plainly (so walking a multi-gigabyte .debug_info touches only
 * the unit headers), from libbfd when they are compressed (it inflates
 * them whole) or need relocating (ET_REL objects).
 */
#include "native/elf.h"

#include <bfd.h>
#include <elf.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* libbfd reports problems in corrupt files through an error handler that
 * prints to stderr by default; we report them ourselves, as errors. */
static void quiet_bfd_handler(const char *fmt, va_list ap)
{
    (void)fmt;
    (void)ap;
}

static void bfd_setup(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    bfd_init();
    bfd_set_error_handler(quiet_bfd_handler);
}

static unsigned long long read_field(const unsigned char *p, int len, int big)
{
    unsigned long long v = 0;
    for (int i = 0; i < len; i++)
        v |= (unsigned long long)p[big ? len - 1 - i : i] << (8 * i);
    return v;
}

static const char *bfd_why(void)
{
    bfd_error_type e = bfd_get_error();
    if (e == bfd_error_system_call)
        return strerror(errno);
    return bfd_errmsg(e);
}

/* When libbfd refuses a file that starts like ELF, say what is wrong with
 * it: a new string, or NULL when it does not even look like ELF. */
static char *elf_damage(const tdb_elf *e)
{
    unsigned char h[64];
    long long size = (long long)e->st.st_size;
    ssize_t n = pread(e->fd, h, sizeof(h), 0);
    if (n < 4 || memcmp(h, "\177ELF", 4) != 0)
        return NULL;
    int is64 = n > 4 && h[4] == 2, big = n > 5 && h[5] == 2;
    long long header = is64 ? 64 : 52;
    if (n < header)
        return tdb_xasprintf("truncated: %lld bytes, shorter than an ELF header (%lld)", size,
                             header);
#define FIELD(off, len) read_field(h + (off), (len), big)
    unsigned long long shoff = is64 ? FIELD(0x28, 8) : FIELD(0x20, 4);
    unsigned long long shentsize = is64 ? FIELD(0x3a, 2) : FIELD(0x2e, 2);
    unsigned long long shnum = is64 ? FIELD(0x3c, 2) : FIELD(0x30, 2);
#undef FIELD
    if (shoff > (unsigned long long)size || shnum * shentsize > (unsigned long long)size - shoff)
        return tdb_xasprintf("truncated or corrupt: its section headers (%llu at offset %#llx) "
                             "lie past the end of the file (%lld bytes)", shnum, shoff, size);
    return tdb_xstrdup("an ELF header libbfd cannot read (corrupt, or for a machine this "
                       "libbfd does not support)");
}

enum open_mode {
    OPEN_BFD,            /* libbfd, for everything */
    OPEN_BFD_DECOMPRESS, /* libbfd, inflating compressed debug sections */
    OPEN_TABLES          /* the mapping alone (tdb_elf_open_tables) */
};

static tdb_elf *elf_open(const char *path, enum open_mode mode, tdb_error *err)
{
    tdb_elf *e = tdb_xcalloc(1, sizeof(*e));
    int bfd_fd = -1;

    e->path = tdb_xstrdup(path);
    e->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (e->fd < 0) {
        tdb_error_errno(err, "cannot inspect '%s'", path);
        goto fail;
    }
    if (fstat(e->fd, &e->st) < 0) {
        tdb_error_errno(err, "cannot inspect '%s': fstat", path);
        goto fail;
    }
    if (S_ISDIR(e->st.st_mode)) {
        tdb_error_set(err, EISDIR, "cannot inspect '%s': it is a directory (give an ELF file, "
                      "a Python module name or --pid)", path);
        goto fail;
    }
    if (!S_ISREG(e->st.st_mode)) {
        tdb_error_set(err, EINVAL, "cannot inspect '%s': not a regular file", path);
        goto fail;
    }
    if (e->st.st_size == 0) {
        tdb_error_set(err, 0, "cannot inspect '%s': not an ELF object (the file is empty)", path);
        goto fail;
    }
    if (mode == OPEN_TABLES)
        goto opened;
    bfd_setup();
    bfd_fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0);
    if (bfd_fd < 0) {
        tdb_error_errno(err, "cannot inspect '%s': dup", path);
        goto fail;
    }
    e->abfd = bfd_fdopenr(path, NULL, bfd_fd); /* owns bfd_fd from here */
    if (!e->abfd) {
        close(bfd_fd);
        tdb_error_set(err, 0, "cannot inspect '%s': %s", path, bfd_why());
        goto fail;
    }
    if (mode == OPEN_BFD_DECOMPRESS)
        e->abfd->flags |= BFD_DECOMPRESS;
    if (!bfd_check_format(e->abfd, bfd_object)) {
        bfd_error_type why = bfd_get_error();
        char *damage = why == bfd_error_file_ambiguously_recognized ? NULL : elf_damage(e);
        if (damage) {
            tdb_error_set(err, 0, "cannot inspect '%s': %s", path, damage);
            free(damage);
        } else if (why == bfd_error_file_not_recognized || why == bfd_error_wrong_format ||
                   why == bfd_error_file_ambiguously_recognized)
            tdb_error_set(err, 0, "cannot inspect '%s': not an ELF object (%s)", path,
                          bfd_errmsg(why));
        else if (bfd_check_format(e->abfd, bfd_core))
            goto opened; /* a core file: little to say, but not an error */
        else
            tdb_error_set(err, 0, "cannot inspect '%s': not a readable ELF object (%s)", path,
                          bfd_errmsg(why));
        goto fail;
    }
    if (bfd_get_flavour(e->abfd) != bfd_target_elf_flavour) {
        tdb_error_set(err, 0, "cannot inspect '%s': not an ELF object (it is %s)", path,
                      bfd_get_target(e->abfd));
        goto fail;
    }
opened:
    if ((uint64_t)e->st.st_size <= SIZE_MAX) {
        void *m = mmap(NULL, (size_t)e->st.st_size, PROT_READ, MAP_PRIVATE, e->fd, 0);
        if (m != MAP_FAILED) {
            e->map = m;
            e->map_len = (size_t)e->st.st_size;
        }
    }
    if (mode == OPEN_TABLES && (!e->map || e->map_len < 4 || memcmp(e->map, "\177ELF", 4))) {
        if (e->map)
            tdb_error_set(err, 0, "cannot inspect '%s': not an ELF object", path);
        else
            tdb_error_errno(err, "cannot inspect '%s': mmap", path);
        goto fail;
    }
    return e;
fail:
    tdb_elf_free(e);
    return NULL;
}

tdb_elf *tdb_elf_open(const char *path, tdb_error *err)
{
    return elf_open(path, OPEN_BFD, err);
}

tdb_elf *tdb_elf_open_tables(const char *path, tdb_error *err)
{
    return elf_open(path, OPEN_TABLES, err);
}

void tdb_elf_free(tdb_elf *e)
{
    if (!e)
        return;
    free(e->dynsyms);
    if (e->abfd)
        bfd_close(e->abfd);
    if (e->map)
        munmap((void *)e->map, e->map_len);
    if (e->fd >= 0)
        close(e->fd);
    free(e->path);
    free(e);
}

const char *tdb_elf_path(const tdb_elf *e)
{
    return e->path;
}

const char *tdb_elf_format(const tdb_elf *e)
{
    return bfd_get_target(e->abfd);
}

tdb_elf_kind tdb_elf_get_kind(const tdb_elf *e)
{
    bfd *b = e->abfd;
    if (bfd_get_format(b) == bfd_core)
        return TDB_ELF_CORE;
    if (b->flags & EXEC_P)
        return TDB_ELF_EXECUTABLE;
    if (b->flags & DYNAMIC)
        /* libbfd calls a PIE DYNAMIC, like a library; the interpreter
         * request tells them apart. */
        return bfd_get_section_by_name(b, ".interp") ? TDB_ELF_PIE : TDB_ELF_SHARED;
    if (bfd_get_format(b) == bfd_object && !(b->flags & (EXEC_P | DYNAMIC)))
        return TDB_ELF_RELOCATABLE;
    return TDB_ELF_OTHER;
}

const char *tdb_elf_kind_name(tdb_elf_kind kind)
{
    switch (kind) {
    case TDB_ELF_EXECUTABLE: return "executable";
    case TDB_ELF_PIE: return "pie executable";
    case TDB_ELF_SHARED: return "shared object";
    case TDB_ELF_RELOCATABLE: return "relocatable object";
    case TDB_ELF_CORE: return "core file";
    case TDB_ELF_OTHER: break;
    }
    return "other";
}

static char *hex(const unsigned char *data, size_t n)
{
    char *s = tdb_xmalloc(2 * n + 1);
    for (size_t i = 0; i < n; i++)
        snprintf(s + 2 * i, 3, "%02x", data[i]);
    s[2 * n] = '\0';
    return s;
}

char *tdb_elf_build_id(const tdb_elf *e)
{
    const struct bfd_build_id *id = e->abfd->build_id;
    if (!id || id->size == 0)
        return NULL;
    return hex(id->data, id->size);
}

char *tdb_elf_debuglink(tdb_elf *e, uint32_t *out_crc)
{
    unsigned long crc = 0;
    if (bfd_get_format(e->abfd) != bfd_object)
        return NULL;
    char *name = bfd_get_debug_link_info(e->abfd, &crc);
    if (!name)
        return NULL;
    char *copy = tdb_xstrdup(name);
    free(name);
    if (out_crc)
        *out_crc = (uint32_t)crc;
    return copy;
}

int tdb_elf_has_symtab(tdb_elf *e)
{
    if (bfd_get_format(e->abfd) != bfd_object)
        return 0;
    /* The upper bound comes from the section header alone: nothing is
     * read.  An empty table still has its null entry, hence > 1 slot. */
    long ub = bfd_get_symtab_upper_bound(e->abfd);
    return ub > (long)(2 * sizeof(asymbol *));
}

static int load_dynsyms(tdb_elf *e, tdb_error *err)
{
    if (e->dynsyms_loaded)
        return 0;
    if (bfd_get_format(e->abfd) != bfd_object) {
        e->dynsyms_loaded = 1;
        return 0; /* core files */
    }
    long bytes = bfd_get_dynamic_symtab_upper_bound(e->abfd);
    if (bytes < 0) {
        if (bfd_get_error() == bfd_error_invalid_operation) {
            e->dynsyms_loaded = 1; /* no .dynsym at all */
            return 0;
        }
        tdb_error_set(err, 0, "cannot inspect '%s': its dynamic symbol table is unreadable "
                      "(%s; a corrupt file?)", e->path, bfd_why());
        return -1;
    }
    /* The upper bound is in bytes, not entries. */
    e->dynsyms = tdb_xmalloc((size_t)bytes);
    long n = bfd_canonicalize_dynamic_symtab(e->abfd, e->dynsyms);
    if (n < 0) {
        tdb_error_set(err, 0, "cannot inspect '%s': its dynamic symbol table is unreadable "
                      "(%s; a corrupt file?)", e->path, bfd_why());
        free(e->dynsyms);
        e->dynsyms = NULL;
        return -1;
    }
    e->n_dynsyms = n;
    e->dynsyms_loaded = 1;
    return 0;
}

long tdb_elf_dynsym_count(tdb_elf *e, tdb_error *err)
{
    if (load_dynsyms(e, err) < 0)
        return -1;
    return e->n_dynsyms;
}

static int is_defined_export(const asymbol *s)
{
    if (bfd_is_und_section(s->section) || bfd_is_com_section(s->section))
        return 0;
    return (s->flags & (BSF_GLOBAL | BSF_WEAK | BSF_GNU_UNIQUE)) != 0;
}

int tdb_elf_find_dynsym(tdb_elf *e, const char *name, uint64_t *out_value, tdb_error *err)
{
    const char *at = strchr(name, '@');
    size_t base_len = at ? (size_t)(at - name) : strlen(name);
    const char *want_version = at ? at + 1 + (at[1] == '@') : NULL;
    int found = 0;
    uint64_t value = 0;

    if (load_dynsyms(e, err) < 0)
        return -1;
    for (long i = 0; i < e->n_dynsyms; i++) {
        asymbol *s = e->dynsyms[i];
        if (strncmp(s->name, name, base_len) != 0 || s->name[base_len] != '\0')
            continue;
        if (!is_defined_export(s))
            continue;
        bool hidden = false;
        const char *version = bfd_get_symbol_version_string(e->abfd, s, true, &hidden);
        if (want_version) {
            if (!version || strcmp(version, want_version) != 0)
                continue;
        } else if (hidden && found) {
            continue; /* an old version: keep the default one */
        }
        value = bfd_asymbol_value(s);
        found = 1;
        if (want_version || !hidden)
            break;
    }
    if (!found) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, 0, "'%s' does not export '%s'", e->path, name);
        return -1;
    }
    *out_value = value;
    return 0;
}

int tdb_elf_dynsym_value(const char *path, const char *name, uint64_t *out_value,
                         tdb_error *err)
{
    tdb_elf *e = tdb_elf_open(path, err);
    if (!e)
        return -1;
    int rc = tdb_elf_find_dynsym(e, name, out_value, err);
    tdb_elf_free(e);
    return rc;
}

char **tdb_elf_exports(tdb_elf *e, const char *prefix, size_t *out_n, tdb_error *err)
{
    size_t n = 0, plen = strlen(prefix);
    char **v;

    if (load_dynsyms(e, err) < 0)
        return NULL;
    v = tdb_xcalloc(1, sizeof(*v));
    for (long i = 0; i < e->n_dynsyms; i++) {
        asymbol *s = e->dynsyms[i];
        if (strncmp(s->name, prefix, plen) != 0 || !is_defined_export(s))
            continue;
        int dup = 0;
        for (size_t j = 0; j < n && !dup; j++)
            dup = strcmp(v[j], s->name) == 0;
        if (dup)
            continue; /* the same symbol under another version */
        tdb_ptrs_push(&v, &n, tdb_xstrdup(s->name));
    }
    if (out_n)
        *out_n = n;
    return v;
}

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

/* --- Section bytes ------------------------------------------------------- */

typedef struct secbuf {
    const uint8_t *data;
    size_t len;
    uint8_t *owned;  /* malloc'd by libbfd, or NULL when DATA is in the mapping */
    asection *sec;
    const char *compression;
} secbuf;

static void secbuf_free(secbuf *b)
{
    free(b->owned);
    memset(b, 0, sizeof(*b));
}

/* NAME (".debug_info") or its old GNU-compressed twin (".zdebug_info"). */
static asection *find_debug_section(bfd *b, const char *name, int *gnu_compressed)
{
    asection *s = bfd_get_section_by_name(b, name);
    *gnu_compressed = 0;
    if (!s && !strncmp(name, ".debug_", 7)) {
        char z[64];
        snprintf(z, sizeof(z), ".z%s", name + 1);
        s = bfd_get_section_by_name(b, z);
        *gnu_compressed = s != NULL;
    }
    if (s && !(bfd_section_flags(s) & SEC_HAS_CONTENTS))
        return NULL; /* NOBITS: stripped into a debug file */
    return s;
}

static void describe_section(bfd *b, const char *name, tdb_elf_section *out)
{
    int gnu;
    asection *s = find_debug_section(b, name, &gnu);
    memset(out, 0, sizeof(*out));
    if (!s)
        return;
    out->present = 1;
    out->size = bfd_section_size(s);
    if (s->compress_status == DECOMPRESS_SECTION_ZSTD)
        out->compression = "zstd";
    else if (s->compress_status == DECOMPRESS_SECTION_ZLIB)
        out->compression = gnu ? "zlib-gnu" : "zlib";
}

/* The contents of section NAME into OUT; 0 when absent (OUT zeroed), -1
 * with ERR set when it cannot be read. */
static int get_section(tdb_elf *e, const char *name, secbuf *out, tdb_error *err)
{
    int gnu;
    bfd *b = e->abfd;
    asection *s = find_debug_section(b, name, &gnu);

    memset(out, 0, sizeof(*out));
    if (!s)
        return 0;
    out->sec = s;
    uint64_t size = bfd_section_size(s);
    if (size == 0)
        return 0;
    if (s->reloc_count > 0 && !(b->flags & (EXEC_P | DYNAMIC))) {
        /* An object file: the offsets in its debug sections are only right
         * once relocated. */
        bfd_byte *data = bfd_simple_get_relocated_section_contents(b, s, NULL, NULL);
        if (!data) {
            tdb_error_set(err, 0, "cannot relocate %s of '%s': %s", name, e->path, bfd_why());
            return -1;
        }
        out->owned = data;
    } else if (s->compress_status != COMPRESS_SECTION_NONE || !e->map) {
        bfd_byte *data = NULL;
        if (!bfd_malloc_and_get_section(b, s, &data)) {
            free(data);
            tdb_error_set(err, 0, "cannot read %s of '%s': %s", name, e->path, bfd_why());
            return -1;
        }
        out->owned = data;
    } else {
        uint64_t pos = (uint64_t)s->filepos;
        if (s->filepos < 0 || pos > e->map_len || size > e->map_len - pos) {
            tdb_error_set(err, 0, "%s of '%s' extends past the end of the file (truncated?)",
                          name, e->path);
            return -1;
        }
        out->data = e->map + pos;
    }
    if (out->owned)
        out->data = out->owned;
    out->len = (size_t)size;
    return 0;
}

/* --- Separate debug files ------------------------------------------------ */

typedef struct strv {
    char **v; /* NULL-terminated (tdb_ptrs_push) */
    size_t n;
} strv;

static void strv_push(strv *sv, char *s)
{
    tdb_ptrs_push(&sv->v, &sv->n, s);
}

static char **strv_finish(strv *sv, size_t *out_n)
{
    *out_n = sv->n;
    if (!sv->v)
        return tdb_xcalloc(1, sizeof(char *));
    return sv->v;
}

/* The gnu_debuglink CRC of the file at FD (the whole file's CRC-32). */
static int file_crc(const char *path, uint32_t *out)
{
    unsigned char buf[1 << 16];
    unsigned long crc = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            close(fd);
            return -1;
        }
        if (n == 0)
            break;
        crc = bfd_calc_gnu_debuglink_crc32(crc, buf, (bfd_size_type)n);
    }
    close(fd);
    *out = (uint32_t)crc;
    return 0;
}

typedef struct search {
    const tdb_elf *obj;
    const char *build_id;     /* hex, or NULL */
    int have_crc;
    uint32_t crc;
    strv searched, rejected;
} search;

/* Try CANDIDATE; returns the opened debug file when it exists and belongs
 * to the object. */
static tdb_elf *try_candidate(search *s, const char *candidate, int by_build_id)
{
    struct stat st;
    strv_push(&s->searched, tdb_xstrdup(candidate));
    if (stat(candidate, &st) < 0 || !S_ISREG(st.st_mode))
        return NULL;
    if (st.st_dev == s->obj->st.st_dev && st.st_ino == s->obj->st.st_ino)
        return NULL; /* a debuglink naming the object itself */
    tdb_error oerr = {0};
    tdb_elf *d = elf_open(candidate, OPEN_BFD_DECOMPRESS, &oerr);
    if (!d) {
        const char *why = strstr(oerr.msg, "': ");
        strv_push(&s->rejected, tdb_xasprintf("%s: %s", candidate, why ? why + 3 : oerr.msg));
        return NULL;
    }
    char *id = tdb_elf_build_id(d);
    if (s->build_id && id) {
        int same = strcmp(id, s->build_id) == 0;
        if (!same)
            strv_push(&s->rejected, tdb_xasprintf("%s: build-id %s is not the object's %s",
                                                  candidate, id, s->build_id));
        free(id);
        if (!same) {
            tdb_elf_free(d);
            return NULL;
        }
        return d;
    }
    free(id);
    if (!by_build_id && s->have_crc) {
        uint32_t crc = 0;
        if (file_crc(candidate, &crc) < 0) {
            strv_push(&s->rejected, tdb_xasprintf("%s: cannot read it: %s", candidate,
                                                  strerror(errno)));
            tdb_elf_free(d);
            return NULL;
        }
        if (crc != s->crc) {
            strv_push(&s->rejected, tdb_xasprintf("%s: CRC 0x%08x is not the debuglink's 0x%08x",
                                                  candidate, crc, s->crc));
            tdb_elf_free(d);
            return NULL;
        }
    }
    return d;
}

/* Split a colon-separated directory list into a new strv. */
static void split_dirs(const char *dirs, strv *out)
{
    const char *p = dirs ? dirs : TDB_DEBUG_DIR_DEFAULT;
    while (*p) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (n > 0) {
            while (n > 1 && p[n - 1] == '/')
                n--;
            strv_push(out, tdb_xstrndup(p, n));
        }
        if (!colon)
            break;
        p = colon + 1;
    }
}

/* Look for the debug file where gdb does: by build-id in each debug
 * directory, then by debuglink beside the object, in its .debug/, and
 * under each debug directory. */
static tdb_elf *find_debug_file(tdb_elf_report *r, tdb_elf *obj, const strv *dirs)
{
    search s = {.obj = obj, .build_id = r->build_id};
    tdb_elf *d = NULL;

    if (r->build_id && strlen(r->build_id) > 2) {
        for (size_t i = 0; i < dirs->n && !d; i++) {
            char *c = tdb_xasprintf("%s/.build-id/%.2s/%s.debug", dirs->v[i], r->build_id,
                                    r->build_id + 2);
            d = try_candidate(&s, c, 1);
            if (d)
                r->debug_file_via = "build-id";
            free(c);
        }
    }
    if (!d && r->debuglink && !strchr(r->debuglink, '/')) {
        char *dir = tdb_xstrdup(r->realpath);
        char *slash = strrchr(dir, '/');
        if (slash)
            slash[slash == dir ? 1 : 0] = '\0';
        else
            strcpy(dir, ".");
        const char *sep = strcmp(dir, "/") ? "/" : "";
        s.have_crc = 1;
        s.crc = r->debuglink_crc;
        struct { const char *fmt; const char *via; } places[] = {
            {"%s%s%s", "beside"},
            {"%s%s.debug/%s", ".debug"},
        };
        for (size_t i = 0; i < 2 && !d; i++) {
            char *c = tdb_xasprintf(places[i].fmt, dir, sep, r->debuglink);
            d = try_candidate(&s, c, 0);
            if (d)
                r->debug_file_via = places[i].via;
            free(c);
        }
        for (size_t i = 0; i < dirs->n && !d; i++) {
            char *c = tdb_xasprintf("%s%s%s%s", dirs->v[i], dir, sep, r->debuglink);
            d = try_candidate(&s, c, 0);
            if (d)
                r->debug_file_via = "debug-dir";
            free(c);
        }
        free(dir);
    }
    if (d)
        r->debug_file = tdb_xstrdup(d->path);
    r->searched = strv_finish(&s.searched, &r->n_searched);
    r->rejected = strv_finish(&s.rejected, &r->n_rejected);
    return d;
}

/* The dwz file named by DWARF_FILE's .gnu_debugaltlink: as written
 * (absolute, or relative to the DWARF file), else by its build-id. */
static tdb_elf *find_alt_file(tdb_elf_report *r, tdb_elf *dwarf_file, const strv *dirs)
{
    bfd_size_type id_len = 0;
    bfd_byte *id = NULL;
    char *name = bfd_get_alt_debug_link_info(dwarf_file->abfd, &id_len, &id);
    tdb_elf *alt = NULL;
    tdb_error ignored = {0};

    if (!name) {
        free(id);
        return NULL;
    }
    r->altlink = tdb_xstrdup(name);
    char *path;
    if (name[0] == '/') {
        path = tdb_xstrdup(name);
    } else {
        /* Relative to the directory of the file that names it. */
        char resolved[PATH_MAX];
        char *dir = tdb_xstrdup(realpath(dwarf_file->path, resolved) ? resolved
                                                                      : dwarf_file->path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        path = slash ? tdb_xasprintf("%s/%s", dir, name) : tdb_xstrdup(name);
        free(dir);
    }
    alt = elf_open(path, OPEN_BFD_DECOMPRESS, &ignored);
    free(path);
    if (!alt && id && id_len > 1) {
        char *idhex = hex(id, (size_t)id_len);
        for (size_t i = 0; i < dirs->n && !alt; i++) {
            char *c = tdb_xasprintf("%s/.build-id/%.2s/%s.debug", dirs->v[i], idhex, idhex + 2);
            tdb_error_clear(&ignored);
            alt = elf_open(c, OPEN_BFD_DECOMPRESS, &ignored);
            free(c);
        }
        free(idhex);
    }
    if (alt)
        r->alt_file = tdb_xstrdup(alt->path);
    free(name);
    free(id);
    return alt;
}

/* --- Compile units ------------------------------------------------------- */

static int note_unit(const tdb_dwarf_unit *u, void *arg)
{
    tdb_elf_report *r = arg;
    const char *flag = NULL;
    tdb_opt opt = tdb_dwarf_producer_opt(u->producer, &flag);

    r->units++;
    r->n_opt[opt]++;
    if (u->version >= 0 && u->version < 32)
        r->versions |= 1u << u->version;
    if (opt != TDB_OPT_ASSEMBLER && tdb_dwarf_producer_glevel(u->producer) == 1)
        r->line_tables_only++;
    /* A few optimised units by name, to say which files to rebuild; LTO
     * partitions are all called "<artificial>" and name nothing. */
    if (opt == TDB_OPT_ON && r->n_optimised_examples < TDB_ELF_MAX_EXAMPLES && u->name &&
        strcmp(u->name, "<artificial>") != 0)
        r->optimised_examples[r->n_optimised_examples++] =
            tdb_xasprintf("%s (%s)", u->name, flag ? flag : "-O");

    const char *p = u->producer ? u->producer : "";
    for (size_t i = 0; i < r->n_producers; i++) {
        if (strcmp(r->producers[i].producer, p) == 0) {
            r->producers[i].units++;
            return 0;
        }
    }
    if (r->n_producers < TDB_ELF_MAX_PRODUCERS) {
        tdb_elf_producer *pr = &r->producers[r->n_producers++];
        pr->producer = tdb_xstrdup(p);
        pr->units = 1;
        pr->opt = opt;
        pr->flag = flag;
    } else {
        r->more_producers++;
    }
    return 0;
}

static void read_units(tdb_elf_report *r, tdb_elf *df, tdb_elf *alt)
{
    secbuf info, abbrev, str, line_str, str_off, alt_str = {0};
    tdb_error err = {0};

    /* Each get_section() zeroes its buffer first, so all can be freed. */
    if (get_section(df, ".debug_info", &info, &err) < 0 ||
        get_section(df, ".debug_abbrev", &abbrev, &err) < 0 ||
        get_section(df, ".debug_str", &str, &err) < 0 ||
        get_section(df, ".debug_line_str", &line_str, &err) < 0 ||
        get_section(df, ".debug_str_offsets", &str_off, &err) < 0 ||
        (alt && get_section(alt, ".debug_str", &alt_str, &err) < 0)) {
        r->dwarf_error = tdb_xstrdup(err.msg);
        goto cleanup;
    }
    if (!info.data || !abbrev.data) {
        r->dwarf_error = tdb_xasprintf("'%s' has .debug_info but no .debug_abbrev", df->path);
        goto cleanup;
    }
    tdb_dwarf_sections s = {
        .info = info.data, .info_len = info.len,
        .abbrev = abbrev.data, .abbrev_len = abbrev.len,
        .str = str.data, .str_len = str.len,
        .line_str = line_str.data, .line_str_len = line_str.len,
        .str_offsets = str_off.data, .str_offsets_len = str_off.len,
        .alt_str = alt_str.data, .alt_str_len = alt_str.len,
        .big_endian = bfd_big_endian(df->abfd),
    };
    if (tdb_dwarf_each_unit(&s, note_unit, r, &err) < 0)
        r->dwarf_error = tdb_xasprintf("in '%s': %s", df->path, err.msg);
cleanup:
    secbuf_free(&info);
    secbuf_free(&abbrev);
    secbuf_free(&str);
    secbuf_free(&line_str);
    secbuf_free(&str_off);
    secbuf_free(&alt_str);
}

static void read_index(tdb_elf_report *r, tdb_elf *f, const char *where)
{
    static const char *const names[] = {".gdb_index", ".debug_names"};
    for (size_t i = 0; i < 2 && !r->index_section; i++) {
        secbuf b;
        tdb_error err = {0};
        if (get_section(f, names[i], &b, &err) < 0) {
            r->index_section = names[i];
            r->index_in = where;
            r->index_error = tdb_xstrdup(err.msg);
            continue;
        }
        if (!b.sec)
            continue;
        r->index_section = names[i];
        r->index_in = where;
        int rc = i == 0 ? tdb_dwarf_parse_gdb_index(b.data, b.len, &r->index, &err)
                        : tdb_dwarf_parse_debug_names(b.data, b.len, bfd_big_endian(f->abfd),
                                                      &r->index, &err);
        if (rc < 0)
            r->index_error = tdb_xstrdup(err.msg);
        secbuf_free(&b);
    }
}

static int has_dwarf(tdb_elf *e)
{
    int gnu;
    return e && bfd_get_format(e->abfd) == bfd_object &&
           find_debug_section(e->abfd, ".debug_info", &gnu) != NULL;
}

tdb_elf_report *tdb_elf_inspect(const char *path, const tdb_elf_options *opt, tdb_error *err)
{
    tdb_elf_options defaults = {0};
    tdb_elf *obj = NULL, *dbg = NULL, *alt = NULL;
    tdb_elf_report *r = NULL;
    strv dirs = {0};
    char resolved[PATH_MAX];

    if (!opt)
        opt = &defaults;
    obj = elf_open(path, OPEN_BFD_DECOMPRESS, err);
    if (!obj)
        return NULL;
    r = tdb_xcalloc(1, sizeof(*r));
    r->path = tdb_xstrdup(path);
    r->realpath = tdb_xstrdup(realpath(path, resolved) ? resolved : path);
    r->format = tdb_xstrdup(tdb_elf_format(obj));
    r->kind = tdb_elf_get_kind(obj);
    r->build_id = tdb_elf_build_id(obj);
    r->has_symtab = tdb_elf_has_symtab(obj);
    r->debuglink = tdb_elf_debuglink(obj, &r->debuglink_crc);
    r->dynamic_symbols = tdb_elf_dynsym_count(obj, err);
    if (r->dynamic_symbols < 0)
        goto fail;
    r->pyinit = tdb_elf_exports(obj, "PyInit_", &r->n_pyinit, err);
    if (!r->pyinit)
        goto fail;
    r->pyinit_values = tdb_xcalloc(r->n_pyinit + 1, sizeof(uint64_t));
    for (size_t i = 0; i < r->n_pyinit; i++)
        if (tdb_elf_find_dynsym(obj, r->pyinit[i], &r->pyinit_values[i], err) < 0)
            goto fail;

    split_dirs(opt->debug_dirs, &dirs);
    dbg = find_debug_file(r, obj, &dirs);

    tdb_elf *dwarf_file = has_dwarf(obj) ? obj : has_dwarf(dbg) ? dbg : NULL;
    if (dwarf_file) {
        r->dwarf_in = dwarf_file == obj ? "object" : "debug file";
        describe_section(dwarf_file->abfd, ".debug_info", &r->debug_info);
        describe_section(dwarf_file->abfd, ".debug_line", &r->debug_line);
        alt = find_alt_file(r, dwarf_file, &dirs);
        if (!opt->skip_units)
            read_units(r, dwarf_file, alt);
        read_index(r, dwarf_file, r->dwarf_in);
    }
    /* An index without DWARF beside it is still worth reporting. */
    if (!r->index_section)
        read_index(r, obj, "object");
    if (!r->index_section && dbg && dbg != dwarf_file)
        read_index(r, dbg, "debug file");
    goto cleanup;
fail:
    tdb_elf_report_free(r);
    r = NULL;
cleanup:
    tdb_elf_free(obj);
    tdb_elf_free(dbg);
    tdb_elf_free(alt);
    tdb_strv_free(dirs.v);
    return r;
}

void tdb_elf_report_free(tdb_elf_report *r)
{
    if (!r)
        return;
    free(r->path);
    free(r->realpath);
    free(r->format);
    free(r->build_id);
    tdb_strv_free(r->pyinit);
    free(r->pyinit_values);
    free(r->debuglink);
    free(r->debug_file);
    tdb_strv_free(r->searched);
    tdb_strv_free(r->rejected);
    free(r->altlink);
    free(r->alt_file);
    for (size_t i = 0; i < r->n_producers; i++)
        free(r->producers[i].producer);
    for (size_t i = 0; i < r->n_optimised_examples; i++)
        free(r->optimised_examples[i]);
    free(r->dwarf_error);
    free(r->index_error);
    free(r);
}

void tdb_elf_get_verdict(const tdb_elf_report *r, tdb_elf_verdict *out)
{
    memset(out, 0, sizeof(*out));
    out->dwarf = r->debug_info.present && r->debug_line.present;
    if (r->n_opt[TDB_OPT_ON])
        out->opt = TDB_OPT_ON;
    else if (r->n_opt[TDB_OPT_DEBUG])
        out->opt = TDB_OPT_DEBUG;
    else if (r->n_opt[TDB_OPT_NONE])
        out->opt = TDB_OPT_NONE;
    else
        out->opt = TDB_OPT_UNKNOWN;
    out->indexed = r->index_section && !r->index_error && r->index.symbols > 0 &&
                   r->dwarf_in && r->index_in && strcmp(r->index_in, r->dwarf_in) == 0;
    out->debuggable = out->dwarf && out->opt == TDB_OPT_NONE && out->indexed;
}

/* --- JSON ---------------------------------------------------------------- */

/* Every string of a report comes from the file or its paths: bytes, kept
 * whole by tdb_json_set_str() (escaped and flagged when not UTF-8). */
static void set_strv(json_t *o, const char *key, char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    tdb_json_set_strv(o, key, v, n);
}

static json_t *section_json(const tdb_elf_section *s)
{
    if (!s->present)
        return json_null();
    json_t *o = json_pack("{s:I}", "size", (json_int_t)s->size);
    tdb_json_set_str(o, "compression", s->compression);
    return o;
}

json_t *tdb_elf_report_json(const tdb_elf_report *r)
{
    tdb_elf_verdict v;
    tdb_elf_get_verdict(r, &v);

    json_t *o = json_object();
    tdb_json_set_str(o, "path", r->path);
    tdb_json_set_str(o, "realpath", r->realpath);
    tdb_json_set_str(o, "format", r->format);
    json_object_set_new(o, "kind", json_string(tdb_elf_kind_name(r->kind)));
    tdb_json_set_str(o, "build_id", r->build_id);
    json_object_set_new(o, "stripped", json_boolean(!r->has_symtab));
    json_object_set_new(o, "dynamic_symbols", json_integer(r->dynamic_symbols));
    json_t *pyinit = json_array();
    for (size_t i = 0; i < r->n_pyinit; i++) {
        char value[32];
        snprintf(value, sizeof(value), "0x%llx", (unsigned long long)r->pyinit_values[i]);
        json_t *e = json_object();
        tdb_json_set_str(e, "name", r->pyinit[i]);
        json_object_set_new(e, "value", json_string(value));
        json_array_append_new(pyinit, e);
    }
    json_object_set_new(o, "pyinit", pyinit);

    json_t *link = json_null();
    if (r->debuglink) {
        char crc[16];
        snprintf(crc, sizeof(crc), "0x%08x", r->debuglink_crc);
        link = json_object();
        tdb_json_set_str(link, "name", r->debuglink);
        json_object_set_new(link, "crc", json_string(crc));
    }
    json_object_set_new(o, "debuglink", link);
    json_t *df = json_null();
    if (r->debug_file) {
        df = json_object();
        tdb_json_set_str(df, "path", r->debug_file);
        json_object_set_new(df, "found_by", json_string(r->debug_file_via));
    }
    json_object_set_new(o, "debug_file", df);
    set_strv(o, "debug_file_searched", r->searched);
    set_strv(o, "debug_file_rejected", r->rejected);

    json_t *dw = json_null();
    if (r->dwarf_in) {
        json_t *versions = json_array();
        for (int i = 2; i <= 5; i++)
            if (r->versions & (1u << i))
                json_array_append_new(versions, json_integer(i));
        json_t *producers = json_array();
        for (size_t i = 0; i < r->n_producers; i++) {
            const tdb_elf_producer *p = &r->producers[i];
            json_t *e = json_object();
            tdb_json_set_str(e, "producer", p->producer);
            json_object_set_new(e, "units", json_integer((json_int_t)p->units));
            json_object_set_new(e, "optimisation", json_string(tdb_opt_name(p->opt)));
            tdb_json_set_str(e, "flag", p->flag);
            json_array_append_new(producers, e);
        }
        json_t *alt = json_null();
        if (r->altlink) {
            alt = json_object();
            tdb_json_set_str(alt, "name", r->altlink);
            tdb_json_set_str(alt, "path", r->alt_file);
        }
        dw = json_object();
        json_object_set_new(dw, "in", json_string(r->dwarf_in));
        json_object_set_new(dw, "debug_info", section_json(&r->debug_info));
        json_object_set_new(dw, "debug_line", section_json(&r->debug_line));
        json_object_set_new(dw, "versions", versions);
        json_object_set_new(dw, "units", json_integer((json_int_t)r->units));
        json_object_set_new(dw, "unoptimised", json_integer((json_int_t)r->n_opt[TDB_OPT_NONE]));
        json_object_set_new(dw, "debug_optimised", json_integer((json_int_t)r->n_opt[TDB_OPT_DEBUG]));
        json_object_set_new(dw, "optimised", json_integer((json_int_t)r->n_opt[TDB_OPT_ON]));
        json_object_set_new(dw, "unknown", json_integer((json_int_t)r->n_opt[TDB_OPT_UNKNOWN]));
        json_object_set_new(dw, "assembler", json_integer((json_int_t)r->n_opt[TDB_OPT_ASSEMBLER]));
        json_object_set_new(dw, "line_tables_only", json_integer((json_int_t)r->line_tables_only));
        json_object_set_new(dw, "producers", producers);
        json_object_set_new(dw, "more_producers", json_integer((json_int_t)r->more_producers));
        tdb_json_set_strv(dw, "optimised_examples", (char *const *)r->optimised_examples,
                          r->n_optimised_examples);
        json_object_set_new(dw, "dwz", alt);
        tdb_json_set_str(dw, "error", r->dwarf_error);
    }
    json_object_set_new(o, "dwarf", dw);

    json_t *ix = json_null();
    if (r->index_section) {
        ix = json_object();
        json_object_set_new(ix, "section", json_string(r->index_section));
        json_object_set_new(ix, "in", json_string(r->index_in));
        if (r->index_error) {
            tdb_json_set_str(ix, "error", r->index_error);
        } else {
            json_object_set_new(ix, "version", json_integer(r->index.version));
            json_object_set_new(ix, "units", json_integer(r->index.units));
            json_object_set_new(ix, "symbols", json_integer(r->index.symbols));
        }
        json_object_set_new(ix, "usable", json_boolean(v.indexed));
    }
    json_object_set_new(o, "gdb_index", ix);

    json_object_set_new(o, "verdict",
        json_pack("{s:b, s:s, s:b, s:b}", "dwarf", v.dwarf, "optimisation", tdb_opt_name(v.opt),
                  "indexed", v.indexed, "debuggable", v.debuggable));
    return o;
}

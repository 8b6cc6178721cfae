/*
 * native/elf.c: an ELF object opened (libbfd for it, and our own read-only
 * mapping of the file beside) and what libbfd says of it: its kind,
 * build-id, .gnu_debuglink and dynamic symbols (see native/elf.h for the
 * libbfd facts this relies on).
 */
#include "native/elf_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

const char *tdb_bfd_why(void)
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

tdb_elf *tdb_elf_open_as(const char *path, tdb_elf_open_mode mode, tdb_error *err)
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
    if (mode == TDB_ELF_OPEN_TABLES)
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
        tdb_error_set(err, 0, "cannot inspect '%s': %s", path, tdb_bfd_why());
        goto fail;
    }
    if (mode == TDB_ELF_OPEN_DECOMPRESS)
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
    if (mode == TDB_ELF_OPEN_TABLES && (!e->map || e->map_len < 4 || memcmp(e->map, "\177ELF", 4))) {
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
    return tdb_elf_open_as(path, TDB_ELF_OPEN_BFD, err);
}

tdb_elf *tdb_elf_open_tables(const char *path, tdb_error *err)
{
    return tdb_elf_open_as(path, TDB_ELF_OPEN_TABLES, err);
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

char *tdb_build_id_path(const char *debug_dir, const char *build_id)
{
    return tdb_xasprintf("%s/.build-id/%.2s/%s.debug", debug_dir, build_id, build_id + 2);
}

char *tdb_elf_build_id(const tdb_elf *e)
{
    const struct bfd_build_id *id = e->abfd->build_id;
    if (!id || id->size == 0)
        return NULL;
    return tdb_hex(id->data, id->size);
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
                      "(%s; a corrupt file?)", e->path, tdb_bfd_why());
        return -1;
    }
    /* The upper bound is in bytes, not entries. */
    e->dynsyms = tdb_xmalloc((size_t)bytes);
    long n = bfd_canonicalize_dynamic_symtab(e->abfd, e->dynsyms);
    if (n < 0) {
        tdb_error_set(err, 0, "cannot inspect '%s': its dynamic symbol table is unreadable "
                      "(%s; a corrupt file?)", e->path, tdb_bfd_why());
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

char **tdb_elf_exports_values(tdb_elf *e, const char *prefix, uint64_t **out_values,
                             size_t *out_n, tdb_error *err)
{
    size_t n = 0, plen = strlen(prefix);
    char **v;
    uint64_t *values = NULL;

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
        if (out_values) {
            values = tdb_xrealloc(values, (n + 1) * sizeof(*values));
            values[n] = bfd_asymbol_value(s);
        }
        tdb_ptrs_push(&v, &n, tdb_xstrdup(s->name));
    }
    if (out_n)
        *out_n = n;
    if (out_values)
        *out_values = values;
    return v;
}

char **tdb_elf_exports(tdb_elf *e, const char *prefix, size_t *out_n, tdb_error *err)
{
    return tdb_elf_exports_values(e, prefix, NULL, out_n, err);
}

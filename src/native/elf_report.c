/*
 * native/elf_report.c: everything 'tdebug inspect' says about one object:
 * its debug sections (bytes from our mapping when stored plainly, from
 * libbfd when compressed or to be relocated), the separate debug file
 * (.gnu_debuglink, build-id) and the dwz file (.gnu_debugaltlink), what
 * its compile units say (native/dwarf.c), gdb indexes, and the report's
 * JSON (contract in native/elf.h).
 */
#include "native/elf_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
            tdb_error_set(err, 0, "cannot relocate %s of '%s': %s", name, e->path, tdb_bfd_why());
            return -1;
        }
        out->owned = data;
    } else if (s->compress_status != COMPRESS_SECTION_NONE || !e->map) {
        bfd_byte *data = NULL;
        if (!bfd_malloc_and_get_section(b, s, &data)) {
            free(data);
            tdb_error_set(err, 0, "cannot read %s of '%s': %s", name, e->path, tdb_bfd_why());
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
    tdb_elf *d = tdb_elf_open_as(candidate, TDB_ELF_OPEN_DECOMPRESS, &oerr);
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
            char *c = tdb_build_id_path(dirs->v[i], r->build_id);
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
    alt = tdb_elf_open_as(path, TDB_ELF_OPEN_DECOMPRESS, &ignored);
    free(path);
    if (!alt && id && id_len > 1) {
        char *idhex = tdb_hex(id, (size_t)id_len);
        for (size_t i = 0; i < dirs->n && !alt; i++) {
            char *c = tdb_build_id_path(dirs->v[i], idhex);
            tdb_error_clear(&ignored);
            alt = tdb_elf_open_as(c, TDB_ELF_OPEN_DECOMPRESS, &ignored);
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
    obj = tdb_elf_open_as(path, TDB_ELF_OPEN_DECOMPRESS, err);
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

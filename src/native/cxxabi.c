/* native/cxxabi.c: Itanium C++ ABI type information and libstdc++ strings read
 * from another process's memory (see native/cxxabi.h). */
#include "native/cxxabi.h"

#include "native/unwind.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Bounds on what target memory may make us do. */
#define NAME_MAX_BYTES 511      /* a mangled type name */
#define BASES_MAX_DEPTH 16      /* nesting of base classes */
#define STRING_HARD_MAX (1u << 26)

int tdb_peek_u64(tdb_mem *m, uint64_t addr, uint64_t *out, tdb_error *err)
{
    uint64_t v;
    if (tdb_mem_read_full(m, addr, &v, sizeof(v)) < 0) {
        tdb_error_errno(err, "cannot read memory at 0x%llx", (unsigned long long)addr);
        return -1;
    }
    *out = v;
    return 0;
}

char *tdb_peek_cstring(tdb_mem *m, uint64_t addr, size_t max, tdb_error *err)
{
    char *buf = tdb_xmalloc(max + 1);
    size_t got = 0;
    /* Read in small chunks: a short string may sit just before an
     * unmapped page, which a large read would run into. */
    while (got < max + 1) {
        size_t want = max + 1 - got < 64 ? max + 1 - got : 64;
        ssize_t r = tdb_mem_read(m, addr + got, buf + got, want);
        if (r <= 0)
            break;
        void *nul = memchr(buf + got, '\0', (size_t)r);
        if (nul)
            return buf;
        got += (size_t)r;
    }
    if (got == 0)
        tdb_error_errno(err, "cannot read memory at 0x%llx", (unsigned long long)addr);
    else
        tdb_error_set(err, EINVAL, "no string at 0x%llx: no end within %zu bytes",
                      (unsigned long long)addr, max);
    free(buf);
    return NULL;
}

/* A mangled type name: what the compiler puts in type_info::__name. */
static int plausible_mangled(const char *s)
{
    if (!*s)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '.' || *p == '$'))
            return 0;
    return 1;
}

/* The mangled name of the type_info at ADDR (its second word), into OUT. */
static int read_name(tdb_mem *m, uint64_t addr, char *out, size_t size, tdb_error *err)
{
    uint64_t name_ptr;
    if (tdb_peek_u64(m, addr + 8, &name_ptr, err) < 0)
        return -1;
    char *name = tdb_peek_cstring(m, name_ptr, NAME_MAX_BYTES, NULL);
    const char *n = name && name[0] == '*' ? name + 1 : name;
    if (!n || !plausible_mangled(n) || strlen(n) >= size) {
        tdb_error_set(err, EINVAL, "no C++ type information at 0x%llx: its name is not a mangled type name",
                      (unsigned long long)addr);
        free(name);
        return -1;
    }
    strcpy(out, n);
    free(name);
    return 0;
}

int tdb_rtti_read(tdb_mem *m, uint64_t addr, tdb_rtti *out, tdb_error *err)
{
    tdb_rtti t;
    uint64_t vptr, meta;
    char meta_name[NAME_MAX_BYTES + 1];

    memset(&t, 0, sizeof(t));
    t.addr = addr;
    if (tdb_peek_u64(m, addr, &vptr, err) < 0 || read_name(m, addr, t.mangled, sizeof(t.mangled), err) < 0)
        return -1;
    /* The type_info's own class, from its vtable's type information. */
    if (tdb_peek_u64(m, vptr - 8, &meta, err) < 0 ||
        read_name(m, meta, meta_name, sizeof(meta_name), err) < 0) {
        tdb_error_set(err, EINVAL, "no C++ type information at 0x%llx", (unsigned long long)addr);
        return -1;
    }
    if (strcmp(meta_name, "N10__cxxabiv117__class_type_infoE") == 0) {
        t.kind = TDB_RTTI_CLASS;
    } else if (strcmp(meta_name, "N10__cxxabiv120__si_class_type_infoE") == 0) {
        t.kind = TDB_RTTI_SI_CLASS;
        if (tdb_peek_u64(m, addr + 16, &t.bases[0].type, err) < 0)
            return -1;
        t.bases[0].is_public = 1;
        t.n_bases = 1;
    } else if (strcmp(meta_name, "N10__cxxabiv121__vmi_class_type_infoE") == 0) {
        uint32_t hdr[2]; /* __flags, __base_count */
        t.kind = TDB_RTTI_VMI_CLASS;
        if (tdb_mem_read_full(m, addr + 16, hdr, sizeof(hdr)) < 0) {
            tdb_error_errno(err, "cannot read memory at 0x%llx", (unsigned long long)addr + 16);
            return -1;
        }
        if (hdr[1] > TDB_RTTI_MAX_BASES) {
            tdb_error_set(err, EINVAL, "type information at 0x%llx claims %u bases",
                          (unsigned long long)addr, hdr[1]);
            return -1;
        }
        for (uint32_t i = 0; i < hdr[1]; i++) {
            uint64_t pair[2];
            if (tdb_mem_read_full(m, addr + 24 + 16 * i, pair, sizeof(pair)) < 0) {
                tdb_error_errno(err, "cannot read memory at 0x%llx", (unsigned long long)addr + 24);
                return -1;
            }
            int64_t flags = (int64_t)pair[1];
            t.bases[i].type = pair[0];
            t.bases[i].offset = flags >> 8; /* arithmetic: a vtable offset is negative */
            t.bases[i].is_virtual = (flags & 1) != 0;
            t.bases[i].is_public = (flags & 2) != 0;
        }
        t.n_bases = hdr[1];
    } else if (strncmp(meta_name, "N10__cxxabiv1", 13) == 0) {
        t.kind = TDB_RTTI_OTHER;
    } else {
        tdb_error_set(err, EINVAL, "no C++ type information at 0x%llx: its class is '%s'",
                      (unsigned long long)addr, meta_name);
        return -1;
    }
    *out = t;
    return 0;
}

char *tdb_rtti_name(const tdb_rtti *t)
{
    char *d = tdb_demangle_type(t->mangled);
    return d ? d : tdb_xstrdup(t->mangled);
}

/* NAME is a mangled name, or a demangled one when DEMANGLED. */
static int find_base(tdb_mem *m, uint64_t type, const char *name, int demangled, uint64_t obj,
                     int64_t here, int depth, int64_t *out_offset, tdb_error *err)
{
    tdb_rtti t;
    if (depth > BASES_MAX_DEPTH) {
        tdb_error_set(err, ELOOP, "type information at 0x%llx nests bases too deeply",
                      (unsigned long long)type);
        return -1;
    }
    if (tdb_rtti_read(m, type, &t, err) < 0)
        return -1;
    int same;
    if (demangled) {
        char *d = tdb_rtti_name(&t);
        same = strcmp(d, name) == 0;
        free(d);
    } else {
        same = strcmp(t.mangled, name) == 0;
    }
    if (same) {
        if (out_offset)
            *out_offset = here;
        return 1;
    }
    for (size_t i = 0; i < t.n_bases; i++) {
        int64_t off = here + t.bases[i].offset;
        if (t.bases[i].is_virtual) {
            /* The base's place is in the vtable of this subobject. */
            uint64_t vptr, v;
            if (!obj || tdb_peek_u64(m, obj + (uint64_t)here, &vptr, NULL) < 0 ||
                tdb_peek_u64(m, vptr + (uint64_t)t.bases[i].offset, &v, NULL) < 0)
                continue;
            off = here + (int64_t)v;
        }
        int r = find_base(m, t.bases[i].type, name, demangled, obj, off, depth + 1, out_offset, err);
        if (r != 0)
            return r;
    }
    return 0;
}

int tdb_rtti_find_base(tdb_mem *m, uint64_t type, const char *mangled, uint64_t obj,
                       int64_t *out_offset, tdb_error *err)
{
    return find_base(m, type, mangled, 0, obj, 0, 0, out_offset, err);
}

int tdb_rtti_find_base_named(tdb_mem *m, uint64_t type, const char *name, uint64_t obj,
                             int64_t *out_offset, tdb_error *err)
{
    return find_base(m, type, name, 1, obj, 0, 0, out_offset, err);
}

int tdb_cxx_dynamic_type(tdb_mem *m, uint64_t obj, uint64_t *out_type, tdb_rtti *out,
                         tdb_error *err)
{
    uint64_t vptr, top, type;
    tdb_rtti t;
    if (tdb_peek_u64(m, obj, &vptr, err) < 0)
        return -1;
    if (vptr < 4096 || (vptr & 7) || tdb_peek_u64(m, vptr - 16, &top, NULL) < 0 ||
        tdb_peek_u64(m, vptr - 8, &type, NULL) < 0 || top != 0 ||
        tdb_rtti_read(m, type, &t, NULL) < 0 || t.kind == TDB_RTTI_OTHER) {
        tdb_error_set(err, EINVAL,
                      "0x%llx is not a C++ object with type information (its first word "
                      "is no pointer to a vtable)",
                      (unsigned long long)obj);
        return -1;
    }
    *out_type = type;
    if (out)
        *out = t;
    return 0;
}

/* Read LEN bytes of string text at P, which must be followed by a NUL. */
static char *read_text(tdb_mem *m, uint64_t p, size_t len, uint64_t where, tdb_error *err)
{
    char *s = tdb_xmalloc(len + 1);
    if (tdb_mem_read_full(m, p, s, len + 1) < 0) {
        tdb_error_errno(err, "no string at 0x%llx: its characters at 0x%llx are unreadable",
                        (unsigned long long)where, (unsigned long long)p);
        free(s);
        return NULL;
    }
    if (s[len] != '\0') {
        tdb_error_set(err, EINVAL, "no string at 0x%llx: no NUL after its %zu characters",
                      (unsigned long long)where, len);
        free(s);
        return NULL;
    }
    return s;
}

char *tdb_cxx_read_string(tdb_mem *m, uint64_t addr, size_t max, size_t *out_len,
                          tdb_error *err)
{
    uint64_t w[4]; /* p, length, local buffer / capacity */
    if (tdb_mem_read_full(m, addr, w, sizeof(w)) < 0) {
        tdb_error_errno(err, "cannot read memory at 0x%llx", (unsigned long long)addr);
        return NULL;
    }
    uint64_t p = w[0], len = w[1];
    int local = p == addr + 16;
    if ((local && len >= 16) || (!local && (len > w[2] || p < 4096 || w[2] > STRING_HARD_MAX))) {
        tdb_error_set(err, EINVAL, "no std::string at 0x%llx", (unsigned long long)addr);
        return NULL;
    }
    if (len > max) {
        tdb_error_set(err, EFBIG, "the std::string at 0x%llx is %llu bytes long (more than %zu)",
                      (unsigned long long)addr, (unsigned long long)len, max);
        return NULL;
    }
    char *s = read_text(m, p, (size_t)len, addr, err);
    if (s && out_len)
        *out_len = (size_t)len;
    return s;
}

char *tdb_cxx_read_cow_string(tdb_mem *m, uint64_t addr, size_t max, size_t *out_len,
                              tdb_error *err)
{
    uint64_t p;
    struct {
        uint64_t length, capacity;
        int32_t refcount;
    } rep;
    if (tdb_peek_u64(m, addr, &p, err) < 0)
        return NULL;
    if (p < 4096 + 24 || tdb_mem_read_full(m, p - 24, &rep, sizeof(rep)) < 0 ||
        rep.length > rep.capacity || rep.capacity > STRING_HARD_MAX || rep.refcount < -1) {
        tdb_error_set(err, EINVAL, "no copy-on-write string at 0x%llx", (unsigned long long)addr);
        return NULL;
    }
    if (rep.length > max) {
        tdb_error_set(err, EFBIG, "the string at 0x%llx is %llu bytes long (more than %zu)",
                      (unsigned long long)addr, (unsigned long long)rep.length, max);
        return NULL;
    }
    char *s = read_text(m, p, (size_t)rep.length, addr, err);
    if (s && out_len)
        *out_len = (size_t)rep.length;
    return s;
}

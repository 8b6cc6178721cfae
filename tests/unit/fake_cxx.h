/*
 * fake_cxx.h: C++ objects laid out by hand in the test's own memory, for
 * the readers of another process's memory (native/cxxabi.h, native/cxxexc.h, torch/tensor.h,
 * torch/cxxargs.h) to read through a tdb_mem on our own pid: Itanium ABI
 * type_info objects and vtables, libstdc++ strings, and a page nobody can
 * read.  Everything is allocated from one arena freed by fake_reset().
 * (Included by the tests that need it; static, so each binary has its own.)
 */
#ifndef TDB_FAKE_CXX_H
#define TDB_FAKE_CXX_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FAKE_MAX 1024
static void *fake_blocks[FAKE_MAX];
static int fake_n;

/* Zeroed memory, 16-byte aligned, freed by fake_reset(). */
static void *fake_alloc(size_t n)
{
    void *p = NULL;
    if (fake_n == FAKE_MAX || posix_memalign(&p, 16, n ? n : 1) != 0)
        abort();
    memset(p, 0, n);
    fake_blocks[fake_n++] = p;
    return p;
}

static __attribute__((unused)) void fake_reset(void)
{
    while (fake_n)
        free(fake_blocks[--fake_n]);
}

static uint64_t addr_of(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

/* A page that cannot be read: its address, for "unreadable" cases. */
static __attribute__((unused)) uint64_t fake_unreadable(void)
{
    static void *page;
    if (!page)
        page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return addr_of(page);
}

/* A vtable whose [-1] is TYPE_INFO: returns the vptr value.  SLOTS
 * virtual functions follow (zero). */
static uint64_t fake_vtable(uint64_t type_info, int slots)
{
    uint64_t *v = fake_alloc(sizeof(uint64_t) * (size_t)(2 + slots + 1));
    v[0] = 0;         /* offset to top */
    v[1] = type_info; /* the type information */
    return addr_of(&v[2]);
}

/* A type_info whose own class is META_NAME (a __cxxabiv1 class). */
static uint64_t *fake_type_info_of(const char *meta_name, const char *name, size_t words)
{
    static uint64_t metas[3][2];
    static const char *meta_names[3];
    int k;
    for (k = 0; k < 3 && meta_names[k] && strcmp(meta_names[k], meta_name); k++)
        ;
    if (k == 3)
        abort();
    if (!meta_names[k]) {
        /* The type_info describing the type_info class itself. */
        meta_names[k] = meta_name;
        metas[k][0] = 0;
        metas[k][1] = addr_of(meta_name);
    }
    uint64_t *ti = fake_alloc(sizeof(uint64_t) * words);
    ti[0] = fake_vtable(addr_of(metas[k]), 0);
    ti[1] = addr_of(name);
    return ti;
}

/* A class without bases. */
static __attribute__((unused)) uint64_t fake_class(const char *name)
{
    return addr_of(fake_type_info_of("N10__cxxabiv117__class_type_infoE", name, 2));
}

/* A class with one public base at offset 0. */
static __attribute__((unused)) uint64_t fake_si_class(const char *name, uint64_t base)
{
    uint64_t *ti = fake_type_info_of("N10__cxxabiv120__si_class_type_infoE", name, 3);
    ti[2] = base;
    return addr_of(ti);
}

/* A class with N bases: BASES[i] at OFFSETS[i] (for a virtual base,
 * FLAGS bit 1 and the offset is where the vtable keeps its place). */
static __attribute__((unused)) uint64_t fake_vmi_class(const char *name, int n, const uint64_t *bases,
                                                       const int64_t *offsets, const int *flags)
{
    uint64_t *ti = fake_type_info_of("N10__cxxabiv121__vmi_class_type_infoE", name, (size_t)(3 + 2 * n));
    uint32_t hdr[2] = {0, (uint32_t)n};
    memcpy(&ti[2], hdr, sizeof(hdr));
    for (int i = 0; i < n; i++) {
        ti[3 + 2 * i] = bases[i];
        ti[4 + 2 * i] = (uint64_t)(offsets[i] * 256) | (uint64_t)(2 | (flags ? flags[i] : 0));
    }
    return addr_of(ti);
}

/* A libstdc++ std::string (the C++11 ABI, 32 bytes) at DST holding TEXT
 * (LEN bytes), in its own buffer when short, else on the heap. */
static __attribute__((unused)) void fake_string(void *dst, const char *text, size_t len)
{
    uint64_t *w = dst;
    char *chars;
    if (len < 16) {
        chars = (char *)&w[2];
        w[2] = w[3] = 0;
    } else {
        chars = fake_alloc(len + 1);
        w[2] = len; /* capacity */
    }
    memcpy(chars, text, len);
    chars[len] = '\0';
    w[0] = addr_of(chars);
    w[1] = len;
}

/* A copy-on-write string's character pointer (its header before it). */
static __attribute__((unused)) uint64_t fake_cow_chars(const char *text)
{
    size_t len = strlen(text);
    uint64_t *rep = fake_alloc(24 + len + 1);
    rep[0] = len; /* length */
    rep[1] = len; /* capacity */
    rep[2] = 0;   /* refcount */
    memcpy((char *)&rep[3], text, len + 1);
    return addr_of(&rep[3]);
}

#endif

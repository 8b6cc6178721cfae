/*
 * native/core.c: an ELF core file read with libelf: its notes, its segments, and
 * the process's memory from the core or from the files it had mapped.
 */
#include "native/core.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef NT_FILE
#define NT_FILE 0x46494c45
#endif

#define MAX_FILES 100000

typedef struct segment {
    uint64_t vaddr, memsz, offset, filesz;
    uint32_t flags;
} segment;

/* A file the process had mapped, as NT_FILE lists it (one entry per
 * range), and what we found on disk. */
typedef struct mapped_file {
    char *path;
    int checked;      /* the build-id comparison was made */
    char *local;      /* the file to read (path, or --exe), or NULL */
    char *problem;    /* why it is not read, or NULL */
    int fd;           /* open on LOCAL once read from, else -1 */
} mapped_file;

struct tdb_core {
    char *path;
    int fd;
    Elf *elf;
    char *exe_override;
    pid_t pid;
    int signal;
    char *cmdline, *exe;
    uint64_t entry;          /* AT_ENTRY */
    segment *segs;
    size_t nsegs;
    tdb_core_thread *threads;
    size_t nthreads, threads_cap; /* a core may have several PT_NOTE segments */
    tdb_maps maps;           /* from NT_FILE; maps.v[i].path points into files */
    size_t *map_file;        /* index in FILES of each map */
    size_t maps_cap;         /* of both (a core may have several NT_FILE notes) */
    mapped_file *files;      /* distinct paths */
    size_t nfiles;
    char **problems;         /* NULL-terminated */
    size_t nproblems;
};

static int seg_cmp(const void *a, const void *b)
{
    const segment *x = a, *y = b;
    return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

static size_t file_index(tdb_core *c, const char *path)
{
    for (size_t i = 0; i < c->nfiles; i++)
        if (strcmp(c->files[i].path, path) == 0)
            return i;
    c->files = tdb_xrealloc(c->files, (c->nfiles + 1) * sizeof(*c->files));
    mapped_file *f = &c->files[c->nfiles];
    memset(f, 0, sizeof(*f));
    f->path = tdb_xstrdup(path);
    f->fd = -1;
    return c->nfiles++;
}

static void parse_nt_file(tdb_core *c, const uint8_t *d, size_t len)
{
    if (len < 16)
        return;
    uint64_t count, page;
    memcpy(&count, d, 8);
    memcpy(&page, d + 8, 8);
    if (count > MAX_FILES || 16 + count * 24 > len)
        return;
    const char *names = (const char *)d + 16 + count * 24;
    const char *end = (const char *)d + len;
    for (uint64_t i = 0; i < count && names < end; i++) {
        uint64_t r[3];
        memcpy(r, d + 16 + i * 24, sizeof(r));
        size_t nlen = strnlen(names, (size_t)(end - names));
        if (names + nlen >= end)
            break;
        if (c->maps.n >= c->maps_cap) {
            TDB_GROW(c->maps.v, c->maps.n, c->maps_cap);
            c->map_file = tdb_xrealloc(c->map_file, c->maps_cap * sizeof(*c->map_file));
        }
        tdb_map *m = &c->maps.v[c->maps.n];
        memset(m, 0, sizeof(*m));
        m->start = r[0];
        m->end = r[1];
        m->offset = r[2] * page;
        strcpy(m->perms, "r--p");
        c->map_file[c->maps.n] = file_index(c, names);
        c->maps.n++;
        names += nlen + 1;
    }
}

typedef struct map_at {
    tdb_map map;
    size_t file;
} map_at;

static int map_at_cmp(const void *a, const void *b)
{
    const map_at *x = a, *y = b;
    return x->map.start < y->map.start ? -1 : x->map.start > y->map.start;
}

/* The kernel writes NT_FILE's ranges in address order, none empty, none
 * overlapping, and tdb_maps_find() searches them by halves: a core that
 * says otherwise keeps, in order, the ranges that fit. */
static void tidy_maps(tdb_core *c)
{
    size_t n = c->maps.n, kept = 0;
    if (!n)
        return;
    map_at *v = tdb_xcalloc(n, sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = (map_at){c->maps.v[i], c->map_file[i]};
    qsort(v, n, sizeof(*v), map_at_cmp);
    for (size_t i = 0; i < n; i++) {
        if (v[i].map.start >= v[i].map.end ||
            (kept && v[i].map.start < c->maps.v[kept - 1].end))
            continue;
        c->maps.v[kept] = v[i].map;
        c->map_file[kept++] = v[i].file;
    }
    c->maps.n = kept;
    free(v);
}

static void parse_notes(tdb_core *c, const uint8_t *data, size_t size)
{
    Elf_Data d = {.d_buf = (void *)data, .d_size = size, .d_type = ELF_T_NHDR,
                  .d_version = EV_CURRENT};
    size_t off = 0, name_off, desc_off;
    GElf_Nhdr nh;
    while ((off = gelf_getnote(&d, off, &nh, &name_off, &desc_off)) > 0) {
        const uint8_t *desc = data + desc_off;
        if (nh.n_type == NT_PRSTATUS && nh.n_descsz >= sizeof(struct elf_prstatus)) {
            struct elf_prstatus st;
            memcpy(&st, desc, sizeof(st));
            TDB_GROW(c->threads, c->nthreads, c->threads_cap);
            tdb_core_thread *t = &c->threads[c->nthreads++];
            memset(t, 0, sizeof(*t));
            t->tid = st.pr_pid;
            t->signal = st.pr_cursig;
            size_t n = sizeof(st.pr_reg) < sizeof(t->regs) ? sizeof(st.pr_reg) : sizeof(t->regs);
            memcpy(t->regs, &st.pr_reg, n);
#if defined(__x86_64__)
            t->fs_base = t->regs[21]; /* user_regs_struct.fs_base */
#endif
            if (c->nthreads == 1)
                c->signal = st.pr_cursig;
        } else if (nh.n_type == NT_PRPSINFO && nh.n_descsz >= sizeof(struct elf_prpsinfo)) {
            struct elf_prpsinfo ps;
            memcpy(&ps, desc, sizeof(ps));
            c->pid = ps.pr_pid; /* the last NT_PRPSINFO, should a core have several */
            free(c->cmdline);
            size_t n = strnlen(ps.pr_psargs, sizeof(ps.pr_psargs));
            while (n && ps.pr_psargs[n - 1] == ' ')
                n--;
            c->cmdline = tdb_xstrndup(ps.pr_psargs, n);
        } else if (nh.n_type == NT_FILE) {
            parse_nt_file(c, desc, nh.n_descsz);
        } else if (nh.n_type == NT_AUXV) {
            for (size_t i = 0; i + 16 <= nh.n_descsz; i += 16) {
                uint64_t a[2];
                memcpy(a, desc + i, sizeof(a));
                if (a[0] == AT_ENTRY)
                    c->entry = a[1];
            }
        }
    }
}

/* Read from the core's own segments only: the bytes the process had,
 * dumped.  Returns how many were read from ADDR on, or -1. */
static ssize_t read_core_only(tdb_core *c, uint64_t addr, void *buf, size_t len)
{
    size_t lo = 0, hi = c->nsegs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->segs[mid].vaddr + c->segs[mid].memsz <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == c->nsegs || c->segs[lo].vaddr > addr)
        return -1;
    const segment *s = &c->segs[lo];
    uint64_t in = addr - s->vaddr;
    if (in >= s->filesz)
        return -1;
    size_t n = len < s->filesz - in ? len : (size_t)(s->filesz - in);
    ssize_t r = pread(c->fd, buf, n, (off_t)(s->offset + in));
    return r > 0 ? r : -1;
}

static int read_core_full(tdb_core *c, uint64_t addr, void *buf, size_t len)
{
    return read_core_only(c, addr, buf, len) == (ssize_t)len ? 0 : -1;
}

/* The GNU build-id (hex, new string) in the notes of the ELF image whose
 * first bytes are HDR (LEN of them), or NULL. */
static char *build_id_of_image(const uint8_t *hdr, size_t len)
{
    if (len < sizeof(Elf64_Ehdr) || memcmp(hdr, ELFMAG, SELFMAG) != 0 ||
        hdr[EI_CLASS] != ELFCLASS64)
        return NULL;
    Elf64_Ehdr eh;
    memcpy(&eh, hdr, sizeof(eh));
    for (unsigned i = 0; i < eh.e_phnum && i < 64; i++) {
        Elf64_Phdr ph;
        uint64_t at = eh.e_phoff + (uint64_t)i * sizeof(ph);
        if (at + sizeof(ph) > len)
            return NULL;
        memcpy(&ph, hdr + at, sizeof(ph));
        if (ph.p_type != PT_NOTE || ph.p_offset + ph.p_filesz > len)
            continue;
        size_t off = (size_t)ph.p_offset, end = off + (size_t)ph.p_filesz;
        while (off + 12 <= end) {
            uint32_t nh[3];
            memcpy(nh, hdr + off, sizeof(nh));
            size_t name = off + 12, desc = name + ((nh[0] + 3) & ~3u);
            size_t next = desc + ((nh[1] + 3) & ~3u);
            if (next > end || next <= off)
                break;
            if (nh[2] == NT_GNU_BUILD_ID && nh[0] == 4 && memcmp(hdr + name, "GNU", 4) == 0 &&
                nh[1] > 0 && nh[1] <= 64) {
                return tdb_hex(hdr + desc, nh[1]);
            }
            off = next;
        }
    }
    return NULL;
}

static char *build_id_of_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    uint8_t hdr[8192];
    ssize_t n = pread(fd, hdr, sizeof(hdr), 0);
    close(fd);
    return n > 0 ? build_id_of_image(hdr, (size_t)n) : NULL;
}

static void add_problem(tdb_core *c, char *msg)
{
    tdb_ptrs_push(&c->problems, &c->nproblems, msg);
}

/* Compare file F with what the core recorded of it (the build-id in the
 * ELF headers the core kept of its first mapping). */
static void check_file(tdb_core *c, size_t fi)
{
    mapped_file *f = &c->files[fi];
    if (f->checked)
        return;
    f->checked = 1;
    const char *local = f->path;
    if (c->exe_override && c->exe && strcmp(f->path, c->exe) == 0)
        local = c->exe_override;
    struct stat st;
    if (stat(local, &st) < 0) {
        f->problem = tdb_xasprintf("'%s' is gone since the core was written", local);
        return;
    }
    if (!S_ISREG(st.st_mode)) { /* a FIFO would block the open below */
        f->problem = tdb_xasprintf("'%s' is %s, not the file the process had mapped",
                                   local, tdb_file_kind(st.st_mode));
        return;
    }
    /* The core's copy of its first page. */
    char *want = NULL;
    for (size_t i = 0; i < c->maps.n && !want; i++) {
        if (c->map_file[i] != fi || c->maps.v[i].offset != 0)
            continue;
        uint8_t hdr[4096];
        if (read_core_full(c, c->maps.v[i].start, hdr, sizeof(hdr)) == 0)
            want = build_id_of_image(hdr, sizeof(hdr));
    }
    if (want) {
        char *have = build_id_of_file(local);
        if ((!have || strcmp(have, want) != 0) && local == c->exe_override)
            f->problem = tdb_xasprintf("'%s' (--exe) is not this core's executable (build-id %s "
                                       "there, %s in the core): give the file the process ran "
                                       "as '%s'",
                                       local, have ? have : "none", want, f->path);
        else if (!have || strcmp(have, want) != 0)
            f->problem = tdb_xasprintf("'%s' changed since the core was written (build-id %s "
                                       "there, %s in the core)",
                                       local, have ? have : "none", want);
        free(have);
    }
    free(want);
    if (!f->problem)
        f->local = tdb_xstrdup(local);
}

static ssize_t read_mapped(tdb_core *c, uint64_t addr, void *buf, size_t len)
{
    const tdb_map *m = tdb_maps_find(&c->maps, addr);
    if (!m)
        return -1;
    size_t fi = c->map_file[m - c->maps.v];
    check_file(c, fi);
    mapped_file *f = &c->files[fi];
    if (!f->local)
        return -1;
    if (f->fd < 0 && (f->fd = open(f->local, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
        return -1;
    size_t n = len < m->end - addr ? len : (size_t)(m->end - addr);
    ssize_t r = pread(f->fd, buf, n, (off_t)(m->offset + (addr - m->start)));
    return r > 0 ? r : -1;
}

static ssize_t core_reader(void *ctx, uint64_t addr, void *buf, size_t len)
{
    tdb_core *c = ctx;
    size_t done = 0;
    while (done < len) {
        ssize_t r = read_core_only(c, addr + done, (char *)buf + done, len - done);
        if (r <= 0)
            r = read_mapped(c, addr + done, (char *)buf + done, len - done);
        if (r <= 0)
            break;
        done += (size_t)r;
    }
    if (!done) {
        errno = EFAULT;
        return -1;
    }
    return (ssize_t)done;
}

int tdb_core_open(const char *path, const char *exe, tdb_core **out, tdb_error *err)
{
    tdb_core *c = tdb_xcalloc(1, sizeof(*c));
    c->fd = -1;
    c->path = tdb_xstrdup(path);
    c->exe_override = exe ? tdb_xstrdup(exe) : NULL;
    GElf_Ehdr eh;
    size_t phnum = 0;
    elf_version(EV_CURRENT);
    /* A FIFO would block the open until a writer comes (for ever), a
     * device may not be opened without effect: stat() first, and
     * O_NONBLOCK and fstat() for what may have taken the path's place. */
    struct stat st;
    if (stat(path, &st) < 0) {
        tdb_error_errno(err, "cannot open the core file '%s'", path);
        goto fail;
    }
    if (S_ISREG(st.st_mode) && (c->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0) {
        tdb_error_errno(err, "cannot open the core file '%s'", path);
        goto fail;
    }
    if (!S_ISREG(st.st_mode) || fstat(c->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        tdb_error_set(err, EINVAL, "cannot read the core file '%s': it is %s, not a regular "
                      "file (give the file gcore or the kernel wrote)", path,
                      tdb_file_kind(st.st_mode));
        goto fail;
    }
    c->elf = elf_begin(c->fd, ELF_C_READ_MMAP, NULL);
    if (!c->elf || !gelf_getehdr(c->elf, &eh) || eh.e_type != ET_CORE) {
        tdb_error_set(err, EINVAL, "cannot read '%s': not a core file (%s)", path,
                      c->elf ? (gelf_getehdr(c->elf, &eh) ? "another kind of ELF file"
                                                          : elf_errmsg(-1))
                             : elf_errmsg(-1));
        goto fail;
    }
#if defined(__x86_64__)
    if (eh.e_machine != EM_X86_64 || eh.e_ident[EI_CLASS] != ELFCLASS64) {
        tdb_error_set(err, EINVAL, "cannot read '%s': a core of another architecture "
                      "(tdebug reads x86-64 cores)", path);
        goto fail;
    }
#endif
    if (elf_getphdrnum(c->elf, &phnum) < 0) {
        tdb_error_set(err, EINVAL, "cannot read '%s': %s", path, elf_errmsg(-1));
        goto fail;
    }
    size_t segcap = 0;
    /* e_phnum: libelf counts no header that the file does not hold whole. */
    uint64_t expected = eh.e_phoff + (uint64_t)eh.e_phnum * eh.e_phentsize;
    size_t n_whole = 0, n_part = 0, n_none = 0;
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(c->elf, (int)i, &ph))
            continue;
        if (ph.p_offset + ph.p_filesz > expected)
            expected = ph.p_offset + ph.p_filesz;
        if (ph.p_type == PT_LOAD && ph.p_filesz) {
            uint64_t end = ph.p_offset + ph.p_filesz;
            if (end <= (uint64_t)st.st_size)
                n_whole++;
            else if (ph.p_offset < (uint64_t)st.st_size)
                n_part++;
            else
                n_none++;
        }
        if (ph.p_type == PT_LOAD) {
            TDB_GROW(c->segs, c->nsegs, segcap);
            segment *s = &c->segs[c->nsegs++];
            s->vaddr = ph.p_vaddr;
            s->memsz = ph.p_memsz;
            s->offset = ph.p_offset;
            /* A truncated core (a crash that ran out of disk) keeps less. */
            uint64_t avail = ph.p_offset < (uint64_t)st.st_size ? (uint64_t)st.st_size - ph.p_offset : 0;
            s->filesz = ph.p_filesz < avail ? ph.p_filesz : avail;
            s->flags = ph.p_flags;
        } else if (ph.p_type == PT_NOTE) {
            Elf_Data *d = elf_getdata_rawchunk(c->elf, (int64_t)ph.p_offset, ph.p_filesz,
                                               ELF_T_NHDR);
            if (d)
                parse_notes(c, d->d_buf, d->d_size);
        }
    }
    if (c->nsegs) /* qsort's array may not be NULL, even empty */
        qsort(c->segs, c->nsegs, sizeof(*c->segs), seg_cmp);
    tidy_maps(c);
    char *short_by = NULL;
    if (expected > (uint64_t)st.st_size) {
        /* Cut by a core size limit (RLIMIT_CORE) or a full disk: the
         * kernel writes the notes first, then memory in address order. */
        uint64_t have = (uint64_t)st.st_size, missing = expected - have;
        short_by = tdb_xasprintf(
            "the core is truncated: %llu bytes of the %s%llu its headers describe, "
            "%llu bytes (%.1f%%) short (a core size limit, 'ulimit -c', or a full disk cut it)",
            (unsigned long long)have, phnum < eh.e_phnum ? "at least " : "",
            (unsigned long long)expected,
            (unsigned long long)missing, 100.0 * (double)missing / (double)expected);
    }
    if (!c->nthreads) {
        if (short_by)
            tdb_error_set(err, EINVAL, "cannot read '%s': %s; its notes were cut, so not even "
                          "its threads were kept (NT_PRSTATUS)", path, short_by);
        else
            tdb_error_set(err, EINVAL, "cannot read '%s': the core has no thread (NT_PRSTATUS)",
                          path);
        free(short_by);
        goto fail;
    }
    if (short_by) {
        add_problem(c, tdb_xasprintf("'%s': %s; read: its notes (%zu thread%s, %zu mapped file%s) and "
                                     "%zu of %zu memory segments whole, %zu in part, %zu not at "
                                     "all: what lay in the rest (stacks, heap, libraries' data) "
                                     "reads as unreadable memory",
                                     path, short_by, c->nthreads, c->nthreads == 1 ? "" : "s",
                                     c->nfiles, c->nfiles == 1 ? "" : "s", n_whole,
                                     n_whole + n_part + n_none, n_part, n_none));
        free(short_by);
    }
    for (size_t i = 0; i < c->maps.n; i++) {
        tdb_map *m = &c->maps.v[i];
        m->path = c->files[c->map_file[i]].path;
        for (size_t k = 0; k < c->nsegs; k++) {
            const segment *s = &c->segs[k];
            if (m->start >= s->vaddr && m->start < s->vaddr + s->memsz) {
                m->perms[0] = s->flags & PF_R ? 'r' : '-';
                m->perms[1] = s->flags & PF_W ? 'w' : '-';
                m->perms[2] = s->flags & PF_X ? 'x' : '-';
                break;
            }
        }
        if (c->entry && c->entry >= m->start && c->entry < m->end && !c->exe)
            c->exe = tdb_xstrdup(m->path);
    }
    if (!c->exe && exe)
        c->exe = tdb_xstrdup(exe);
    for (size_t i = 0; i < c->nfiles; i++) {
        check_file(c, i);
        /* Only ELF objects matter (a mapped data file that changed is
         * not read as code). */
        if (c->files[i].problem)
            add_problem(c, tdb_xstrdup(c->files[i].problem));
    }
    *out = c;
    return 0;
fail:
    tdb_core_free(c);
    return -1;
}

void tdb_core_free(tdb_core *c)
{
    if (!c)
        return;
    if (c->elf)
        elf_end(c->elf);
    if (c->fd >= 0)
        close(c->fd);
    for (size_t i = 0; i < c->nfiles; i++) {
        free(c->files[i].path);
        free(c->files[i].local);
        free(c->files[i].problem);
        if (c->files[i].fd >= 0)
            close(c->files[i].fd);
    }
    free(c->files);
    free(c->maps.v);
    free(c->map_file);
    free(c->segs);
    free(c->threads);
    free(c->path);
    free(c->exe_override);
    free(c->cmdline);
    free(c->exe);
    tdb_strv_free(c->problems);
    free(c);
}

const char *tdb_core_path(const tdb_core *c) { return c->path; }
pid_t tdb_core_pid(const tdb_core *c) { return c->pid; }
const char *tdb_core_cmdline(const tdb_core *c) { return c->cmdline; }
const char *tdb_core_exe(const tdb_core *c) { return c->exe; }
int tdb_core_signal(const tdb_core *c) { return c->signal; }
size_t tdb_core_n_threads(const tdb_core *c) { return c->nthreads; }
const tdb_maps *tdb_core_maps(const tdb_core *c) { return &c->maps; }
char *const *tdb_core_problems(const tdb_core *c) { return c->problems; }
struct Elf *tdb_core_elf(const tdb_core *c) { return c->elf; }

const tdb_core_thread *tdb_core_thread_at(const tdb_core *c, size_t i)
{
    return i < c->nthreads ? &c->threads[i] : NULL;
}

void tdb_core_mem(tdb_core *c, tdb_mem *m)
{
    tdb_mem_init_image(m, core_reader, c);
}

char *tdb_core_file(tdb_core *c, const char *mapped, tdb_error *err)
{
    for (size_t i = 0; i < c->nfiles; i++) {
        if (strcmp(c->files[i].path, mapped) != 0)
            continue;
        check_file(c, i);
        if (c->files[i].local)
            return tdb_xstrdup(c->files[i].local);
        tdb_error_set(err, ESTALE, "%s", c->files[i].problem);
        return NULL;
    }
    tdb_error_set(err, ENOENT, "'%s' is not among the files of the core", mapped);
    return NULL;
}

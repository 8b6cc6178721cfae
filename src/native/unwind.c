/*
 * native/unwind.c: registers and stack copies taken during a pause, unwound with
 * libdw afterwards through our own Dwfl_Thread_Callbacks (libdw's
 * dwfl_linux_proc_attach would ptrace-attach by itself, with a SIGSTOP-
 * style stop, and hold the process while it unwinds).
 */
#include "native/unwind.h"

#include "native/core.h"
#include "native/elf.h"

#include <bfd.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <unistd.h>

/* libiberty's demangler options (demangle.h is not installed with
 * binutils-dev; the values are part of its ABI). */
#ifndef DMGL_PARAMS
#define DMGL_PARAMS (1 << 0)
#define DMGL_ANSI (1 << 1)
#endif
#ifndef DMGL_TYPES
#define DMGL_TYPES (1 << 4)
#endif

/* The System V x86-64 ABI keeps 128 bytes below the stack pointer (the red
 * zone) that a leaf function may use: copy them too. */
#define RED_ZONE 128

static int setup_dwfl(tdb_capture *c);

typedef struct thread_cap {
    pid_t tid;
    char *error;          /* why this thread has no registers, or NULL */
#if defined(__x86_64__)
    struct user_regs_struct regs;
#endif
    uint64_t stack_lo;    /* the copy holds [stack_lo, stack_lo + stack_len) */
    uint8_t *stack;
    size_t stack_len;
    int stack_cut;        /* the copy ends before the stack mapping does */
} thread_cap;

struct tdb_capture {
    pid_t pid;
    thread_cap *t;
    size_t n;
    size_t bytes;
    tdb_mem mem;
    char *maps_text;      /* /proc/PID/maps as read before the pause */
    Dwfl *dwfl;
    char *dwfl_error;     /* set once setting libdw up failed */
    size_t next;          /* next_thread's iterator */
    tdb_symcache *own_symbols; /* when the caller gives none */
    tdb_core *core;       /* a core file's capture, or NULL */
};

/* One function symbol, file-relative. */
typedef struct fsym {
    uint64_t lo, size;
    uint32_t name;        /* offset in the file's name arena */
    uint8_t rank;         /* 0 global, 1 weak, 2 local: the name to prefer */
} fsym;

typedef struct symfile {
    char *key;            /* path, then the build-id in hex */
    fsym *v;
    size_t n;
    char *names;
} symfile;

struct tdb_symcache {
    symfile *files;
    size_t n, cap;
};

char *tdb_demangle(const char *name)
{
    if (name[0] == '_' && name[1] == 'Z') {
        char *d = bfd_demangle(NULL, name, DMGL_PARAMS | DMGL_ANSI);
        if (d)
            return d;
    }
    return tdb_xstrdup(name);
}

char *tdb_demangle_type(const char *mangled)
{
    return bfd_demangle(NULL, mangled, DMGL_PARAMS | DMGL_ANSI | DMGL_TYPES);
}

/* Copy the live top of T's stack (its registers are set): from the red
 * zone below the stack pointer to the end of its mapping, at most
 * STACK_MAX bytes.  MAPS may be stale (a thread started since): *FRESH is
 * read once then.  Sets T's error when the stack cannot be copied. */
static void copy_stack(tdb_capture *c, thread_cap *t, const tdb_maps *maps, tdb_maps *fresh,
                       size_t stack_max)
{
#if defined(__x86_64__)
    uint64_t sp = t->regs.rsp;
    const tdb_map *m = maps ? tdb_maps_find(maps, sp) : NULL;
    if (!m) {
        /* A thread started after MAPS was read: its stack is new. */
        if (!fresh->n)
            tdb_maps_read(c->pid, fresh, NULL);
        m = fresh->n ? tdb_maps_find(fresh, sp) : NULL;
    }
    if (!m) {
        t->error = tdb_xasprintf("its stack pointer 0x%llx is not in mapped memory",
                                 (unsigned long long)sp);
        return;
    }
    uint64_t lo = sp - RED_ZONE >= m->start ? sp - RED_ZONE : m->start;
    uint64_t hi = m->end - lo > stack_max ? lo + stack_max : m->end;
    t->stack_cut = hi < m->end;
    t->stack = tdb_xmalloc(hi - lo);
    ssize_t r = tdb_mem_read(&c->mem, lo, t->stack, hi - lo);
    if (r <= 0) {
        t->error = tdb_xasprintf("cannot read its stack at 0x%llx: %s", (unsigned long long)lo,
                                 strerror(errno));
        free(t->stack);
        t->stack = NULL;
        return;
    }
    t->stack_lo = lo;
    t->stack_len = (size_t)r;
    c->bytes += (size_t)r;
#else
    (void)c, (void)t, (void)maps, (void)fresh, (void)stack_max;
#endif
}

tdb_capture *tdb_capture_take(tdb_pause *p, const tdb_maps *maps, size_t stack_max,
                              tdb_error *err)
{
#if !defined(__x86_64__)
    tdb_error_set(err, ENOSYS, "native stacks are only supported on x86-64 so far");
    return NULL;
#else
    tdb_capture *c = tdb_xcalloc(1, sizeof(*c));
    tdb_maps fresh = {NULL, 0, NULL};
    c->pid = p->pid;
    c->maps_text = maps->text ? tdb_xstrdup(maps->text) : NULL;
    tdb_mem_init(&c->mem, p->pid);
    c->t = tdb_xcalloc(p->n ? p->n : 1, sizeof(*c->t));
    for (size_t i = 0; i < p->n; i++) {
        const tdb_pause_thread *pt = &p->threads[i];
        thread_cap *t = &c->t[c->n++];
        t->tid = pt->tid;
        if (!pt->stopped) {
            t->error = tdb_xstrdup(pt->gone ? "the thread exited" : "the thread did not stop "
                                                                  "(uninterruptible sleep?)");
            continue;
        }
        if (ptrace(PTRACE_GETREGS, pt->tid, NULL, &t->regs) < 0) {
            t->error = tdb_xasprintf("ptrace(GETREGS): %s", strerror(errno));
            continue;
        }
        copy_stack(c, t, maps, &fresh, stack_max);
    }
    tdb_maps_free(&fresh);
    return c;
#endif
}

tdb_capture *tdb_capture_from_regs(pid_t pid, pid_t tid, const uint64_t regs[17],
                                   const tdb_maps *maps, size_t stack_max, tdb_error *err)
{
#if !defined(__x86_64__)
    (void)pid, (void)tid, (void)regs, (void)maps, (void)stack_max;
    tdb_error_set(err, ENOSYS, "native stacks are only supported on x86-64 so far");
    return NULL;
#else
    tdb_capture *c = tdb_xcalloc(1, sizeof(*c));
    tdb_maps fresh = {NULL, 0, NULL};
    c->pid = pid;
    c->maps_text = maps && maps->text ? tdb_xstrdup(maps->text) : NULL;
    tdb_mem_init(&c->mem, pid);
    c->t = tdb_xcalloc(1, sizeof(*c->t));
    thread_cap *t = &c->t[c->n++];
    t->tid = tid;
    struct user_regs_struct *r = &t->regs;
    r->rax = regs[0], r->rdx = regs[1], r->rcx = regs[2], r->rbx = regs[3];
    r->rsi = regs[4], r->rdi = regs[5], r->rbp = regs[6], r->rsp = regs[7];
    r->r8 = regs[8], r->r9 = regs[9], r->r10 = regs[10], r->r11 = regs[11];
    r->r12 = regs[12], r->r13 = regs[13], r->r14 = regs[14], r->r15 = regs[15];
    r->rip = regs[16];
    copy_stack(c, t, maps, &fresh, stack_max);
    tdb_maps_free(&fresh);
    if (t->error) {
        tdb_error_set(err, 0, "cannot unwind thread %d: %s", (int)tid, t->error);
        tdb_capture_free(c);
        return NULL;
    }
    return c;
#endif
}

int tdb_capture_own_debug_info(tdb_capture *c, uint64_t pc)
{
    if (setup_dwfl(c) < 0)
        return 0;
    Dwfl_Module *mod = dwfl_addrmodule(c->dwfl, pc);
    GElf_Addr bias;
    Elf *elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;
    size_t shstrndx;
    if (!elf || elf_getshdrstrndx(elf, &shstrndx) < 0)
        return 0;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr shdr;
        const char *name = gelf_getshdr(scn, &shdr) ? elf_strptr(elf, shstrndx, shdr.sh_name)
                                                   : NULL;
        if (name && strcmp(name, ".debug_info") == 0 && shdr.sh_type != SHT_NOBITS)
            return 1;
    }
    return 0;
}

int tdb_capture_debug_file(tdb_capture *c, uint64_t pc, const char *debug_dir)
{
    if (setup_dwfl(c) < 0)
        return 0;
    Dwfl_Module *mod = dwfl_addrmodule(c->dwfl, pc);
    GElf_Addr bias, vaddr;
    const unsigned char *bits = NULL;
    if (!mod || !dwfl_module_getelf(mod, &bias))
        return 0;
    int n = dwfl_module_build_id(mod, &bits, &vaddr);
    if (n < 2 || n > 64)
        return 0;
    char *id = tdb_hex(bits, (size_t)n);
    char *path = tdb_build_id_path(debug_dir, id);
    int found = access(path, R_OK) == 0;
    free(path);
    free(id);
    return found;
}

size_t tdb_capture_bytes(const tdb_capture *c)
{
    return c->bytes;
}

void tdb_capture_free(tdb_capture *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->t[i].error);
        free(c->t[i].stack);
    }
    free(c->t);
    if (c->dwfl)
        dwfl_end(c->dwfl);
    free(c->dwfl_error);
    free(c->maps_text);
    tdb_symcache_free(c->own_symbols);
    tdb_mem_close(&c->mem);
    free(c);
}

tdb_symcache *tdb_symcache_new(void)
{
    return tdb_xcalloc(1, sizeof(tdb_symcache));
}

void tdb_symcache_free(tdb_symcache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->files[i].key);
        free(c->files[i].v);
        free(c->files[i].names);
    }
    free(c->files);
    free(c);
}

static int fsym_cmp(const void *a, const void *b)
{
    const fsym *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    /* At one address: sized before sizeless, then global, weak, local. */
    if ((x->size != 0) != (y->size != 0))
        return x->size ? -1 : 1;
    return (int)x->rank - (int)y->rank;
}

/* The symbols of MOD (whose main file is loaded at BIAS), from the cache
 * or read now. */
static const symfile *module_symbols(tdb_symcache *cache, Dwfl_Module *mod, const char *path,
                                     GElf_Addr bias)
{
    const unsigned char *id = NULL;
    GElf_Addr id_vaddr;
    int idlen = dwfl_module_build_id(mod, &id, &id_vaddr);
    tdb_buf key = TDB_BUF_INIT;
    tdb_buf_adds(&key, path ? path : "?");
    tdb_buf_addc(&key, '\n');
    if (idlen > 0) {
        char *hex = tdb_hex(id, (size_t)idlen);
        tdb_buf_adds(&key, hex);
        free(hex);
    }
    for (size_t i = 0; i < cache->n; i++) {
        if (strcmp(cache->files[i].key, tdb_buf_str(&key)) == 0) {
            tdb_buf_free(&key);
            return &cache->files[i];
        }
    }
    TDB_GROW(cache->files, cache->n, cache->cap);
    symfile *f = &cache->files[cache->n++];
    memset(f, 0, sizeof(*f));
    f->key = tdb_buf_detach(&key);
    tdb_buf names = TDB_BUF_INIT;
    size_t cap = 0;
    int count = dwfl_module_getsymtab(mod);
    for (int i = 1; i < count; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, NULL, NULL);
        int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
        if (!name || !*name || shndx == SHN_UNDEF || shndx == (GElf_Word)-1 ||
            (type != STT_FUNC && type != STT_NOTYPE && type != STT_GNU_IFUNC) || addr < bias)
            continue;
        TDB_GROW(f->v, f->n, cap);
        fsym *s = &f->v[f->n++];
        s->lo = addr - bias;
        s->size = sym.st_size;
        s->rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
        s->name = (uint32_t)names.len;
        tdb_buf_add(&names, name, strlen(name) + 1);
    }
    f->names = tdb_buf_detach(&names);
    if (f->n) /* a module without function symbols has no array to sort */
        qsort(f->v, f->n, sizeof(*f->v), fsym_cmp);
    return f;
}

/* The function holding file-relative address REL: the closest symbol at or
 * below it that contains it, or a sizeless one there (assembly, the
 * closest name libdw would give too); NULL when REL is in no function we
 * know (a stripped static function). */
static const fsym *symbol_at(const symfile *f, uint64_t rel)
{
    size_t lo = 0, hi = f->n;
    while (lo < hi) { /* first symbol above REL */
        size_t mid = lo + (hi - lo) / 2;
        if (f->v[mid].lo <= rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    size_t k = lo - 1;
    while (k > 0 && f->v[k - 1].lo == f->v[k].lo)
        k--; /* the best name at that address */
    if (!f->v[k].size)
        return &f->v[k];
    /* A sized symbol ending below REL; an enclosing one may start lower. */
    for (size_t back = 0; back < 8; back++, k--) {
        if (rel - f->v[k].lo < f->v[k].size)
            return &f->v[k];
        if (k == 0)
            break;
    }
    return NULL;
}

static thread_cap *find_cap(tdb_capture *c, pid_t tid)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->t[i].tid == tid)
            return &c->t[i];
    return NULL;
}

/* --- libdw's view of the captured process -------------------------------- */


static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
    tdb_capture *c = arg;
    while (c->next < c->n && c->t[c->next].error)
        c->next++;
    if (c->next >= c->n)
        return 0;
    *thread_argp = &c->t[c->next];
    return c->t[c->next++].tid;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
    thread_cap *t = find_cap(arg, tid);
    if (!t || t->error)
        return false;
    *thread_argp = t;
    return true;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    tdb_capture *c = arg;
    for (size_t i = 0; i < c->n; i++) {
        const thread_cap *t = &c->t[i];
        if (t->stack && addr >= t->stack_lo && addr - t->stack_lo + sizeof(*result) <= t->stack_len) {
            memcpy(result, t->stack + (addr - t->stack_lo), sizeof(*result));
            return true;
        }
    }
    /* Not on a copied stack: code, data or a stack beyond the cap.  The
     * process runs again, but what the unwinder reads there (CFI
     * expressions, signal frames) rarely changes. */
    return tdb_mem_read_full(&c->mem, addr, result, sizeof(*result)) == 0;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
#if defined(__x86_64__)
    const struct user_regs_struct *r = &((const thread_cap *)thread_arg)->regs;
    /* DWARF register numbers 0-16 of the x86-64 psABI; 16 is the return
     * address column, which holds rip for the innermost frame. */
    Dwarf_Word regs[17] = {
        r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi, r->rbp, r->rsp,
        r->r8,  r->r9,  r->r10, r->r11, r->r12, r->r13, r->r14, r->r15, r->rip,
    };
    return dwfl_thread_state_registers(thread, 0, 17, regs);
#else
    return false;
#endif
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
    .next_thread = cb_next_thread,
    .get_thread = cb_get_thread,
    .memory_read = cb_memory_read,
    .set_initial_registers = cb_set_initial_registers,
};

static char *no_debuginfo_path = NULL;

/* Separate debug files are looked up by build-id only (Debian's -dbg and
 * -dbgsym packages): no .gnu_debuglink directory walk per library. */
static const Dwfl_Callbacks proc_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_build_id_find_debuginfo,
    .debuginfo_path = &no_debuginfo_path,
};

/* Cores: the files by build-id first (Debian's debug packages), else by
 * the path the core names, which libdw takes only when the build-id
 * matches. */
static const Dwfl_Callbacks core_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_build_id_find_debuginfo,
    .debuginfo_path = &no_debuginfo_path,
};

tdb_capture *tdb_capture_from_core(tdb_core *core, tdb_error *err)
{
    tdb_capture *c = tdb_xcalloc(1, sizeof(*c));
    c->core = core;
    c->pid = tdb_core_pid(core);
    tdb_core_mem(core, &c->mem);
    size_t n = tdb_core_n_threads(core);
    c->t = tdb_xcalloc(n ? n : 1, sizeof(*c->t));
    for (size_t i = 0; i < n; i++) {
        const tdb_core_thread *ct = tdb_core_thread_at(core, i);
        thread_cap *t = &c->t[c->n++];
        t->tid = ct->tid;
#if defined(__x86_64__)
        memcpy(&t->regs, ct->regs, sizeof(t->regs) < sizeof(ct->regs) ? sizeof(t->regs)
                                                                      : sizeof(ct->regs));
#endif
    }
    c->dwfl = dwfl_begin(&core_callbacks);
    Elf *elf = tdb_core_elf(core);
    const char *exe = tdb_core_exe(core);
    char *local_exe = exe ? tdb_core_file(core, exe, NULL) : NULL;
    /* The threads are ours (the core's registers, its memory through
     * tdb_core_mem), as for a live process: libdw's own core threads
     * (dwfl_core_file_attach) leak 16 bytes a thread each time
     * dwfl_getthread_frames() looks for one (elfutils 0.188). */
    if (!c->dwfl || dwfl_core_file_report(c->dwfl, elf, local_exe) < 0 ||
        dwfl_report_end(c->dwfl, NULL, NULL) != 0 ||
        !dwfl_attach_state(c->dwfl, elf, c->pid, &thread_callbacks, c)) {
        tdb_error_set(err, 0, "libdw cannot read the core '%s': %s", tdb_core_path(core),
                      dwfl_errmsg(-1));
        free(local_exe);
        tdb_capture_free(c);
        return NULL;
    }
    free(local_exe);
    return c;
}

/* Report the modules of memory map TEXT of PID.  The vDSO, which
 * dwfl_linux_proc_report() finds through the process's auxv and
 * dwfl_linux_proc_maps_report() does not, is reported under the name by
 * which dwfl_linux_proc_find_elf() reads it from the process's memory. */
static int report_maps_text(Dwfl *dwfl, const char *text, pid_t pid)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    if (!f)
        return errno;
    dwfl_report_begin(dwfl);
    int rc = dwfl_linux_proc_maps_report(dwfl, f);
    fclose(f);
    const char *vdso = strstr(text, " [vdso]\n");
    if (rc == 0 && vdso) {
        while (vdso > text && vdso[-1] != '\n')
            vdso--;
        unsigned long long lo, hi;
        char name[32];
        snprintf(name, sizeof(name), "[vdso: %d]", (int)pid);
        if (sscanf(vdso, "%llx-%llx", &lo, &hi) == 2)
            dwfl_report_module(dwfl, name, lo, hi);
    }
    return rc;
}

static int setup_dwfl(tdb_capture *c)
{
    if (c->dwfl)
        return 0;
    if (c->dwfl_error)
        return -1;
    c->dwfl = dwfl_begin(&proc_callbacks);
    if (!c->dwfl) {
        c->dwfl_error = tdb_xasprintf("libdw: %s", dwfl_errmsg(-1));
        return -1;
    }
    /* The memory map read just before the pause, rather than /proc/PID/maps
     * again: the kernel writing and libdw's sscanf() reading some 1700
     * lines (a process with torch) were a third of the time of each more
     * process 'stacks --job' reads.  It also serves when the process has
     * exited since. */
    int rc = c->maps_text ? report_maps_text(c->dwfl, c->maps_text, c->pid)
                          : dwfl_linux_proc_report(c->dwfl, c->pid);
    if (rc != 0 || dwfl_report_end(c->dwfl, NULL, NULL) != 0) {
        if (rc > 0)
            c->dwfl_error = tdb_xasprintf("cannot read the libraries of pid %d: %s", (int)c->pid,
                                          strerror(rc));
        else
            c->dwfl_error = tdb_xasprintf("libdw: %s", dwfl_errmsg(-1));
    } else if (!dwfl_attach_state(c->dwfl, NULL, c->pid, &thread_callbacks, c)) {
        c->dwfl_error = tdb_xasprintf("libdw cannot unwind pid %d: %s", (int)c->pid,
                                      dwfl_errmsg(-1));
    }
    if (c->dwfl_error) {
        dwfl_end(c->dwfl);
        c->dwfl = NULL;
        return -1;
    }
    return 0;
}

typedef struct walk {
    Dwarf_Addr *pcs;
    bool *activation;
    size_t n, max;
    int truncated;
} walk;

static int frame_cb(Dwfl_Frame *state, void *arg)
{
    walk *w = arg;
    Dwarf_Addr pc;
    bool act;
    if (w->n >= w->max) {
        w->truncated = 1;
        return DWARF_CB_ABORT;
    }
    if (!dwfl_frame_pc(state, &pc, &act))
        return DWARF_CB_ABORT;
    w->pcs[w->n] = pc;
    w->activation[w->n] = act;
    w->n++;
    return DWARF_CB_OK;
}

/* Fill what F lacks of its library, function and offset for PC, through
 * DWFL's modules and CACHE's symbol tables.  ACTIVATION: PC is where the
 * thread is (the innermost frame), not a return address. */
static void name_pc(Dwfl *dwfl, tdb_symcache *cache, Dwarf_Addr pc, bool activation,
                    tdb_native_frame *f)
{
    /* A return address may be one past the end of its caller's function:
     * look the call instruction up instead. */
    Dwarf_Addr at = activation || pc == 0 ? pc : pc - 1;
    Dwfl_Module *mod = dwfl_addrmodule(dwfl, at);
    if (!mod)
        return;
    const char *modname = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    if (modname && !f->library)
        f->library = tdb_xstrdup(modname); /* a path, or "[vdso]" */
    GElf_Addr bias = 0;
    if (f->function || !dwfl_module_getelf(mod, &bias))
        return;
    const symfile *file = module_symbols(cache, mod, modname, bias);
    const fsym *sym = at >= bias ? symbol_at(file, at - bias) : NULL;
    if (sym) {
        char *raw = tdb_xstrdup(file->names + sym->name);
        tdb_native_name_clean(raw);
        f->function = tdb_demangle(raw);
        free(raw);
        f->offset = pc - (bias + sym->lo);
    }
}

static void symbolize(Dwfl *dwfl, tdb_symcache *cache, Dwarf_Addr pc, bool activation,
                      tdb_native_frame *f)
{
    memset(f, 0, sizeof(*f));
    f->pc = pc;
    name_pc(dwfl, cache, pc, activation, f);
}

struct tdb_symbolizer {
    Dwfl *dwfl;
    tdb_symcache *cache;
};

tdb_symbolizer *tdb_symbolizer_new(pid_t pid, tdb_symcache *cache, tdb_error *err)
{
    Dwfl *dwfl = dwfl_begin(&proc_callbacks);
    if (!dwfl) {
        tdb_error_set(err, 0, "libdw: %s", dwfl_errmsg(-1));
        return NULL;
    }
    int rc = dwfl_linux_proc_report(dwfl, pid);
    if (rc != 0 || dwfl_report_end(dwfl, NULL, NULL) != 0) {
        if (rc > 0)
            tdb_error_set(err, rc, "cannot read the libraries of pid %d: %s", (int)pid,
                          strerror(rc));
        else
            tdb_error_set(err, 0, "libdw: %s", dwfl_errmsg(-1));
        dwfl_end(dwfl);
        return NULL;
    }
    tdb_symbolizer *s = tdb_xcalloc(1, sizeof(*s));
    s->dwfl = dwfl;
    s->cache = cache;
    return s;
}

void tdb_symbolizer_name(tdb_symbolizer *s, tdb_native_frame *frames, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!frames[i].function || !frames[i].library)
            name_pc(s->dwfl, s->cache, frames[i].pc, i == 0, &frames[i]);
}

void tdb_symbolizer_free(tdb_symbolizer *s)
{
    if (!s)
        return;
    dwfl_end(s->dwfl);
    free(s);
}

int tdb_capture_unwind(tdb_capture *c, pid_t tid, size_t max_frames, tdb_symcache *symbols,
                       tdb_native_frame **out, size_t *n, char **note, tdb_error *err)
{
    thread_cap *t = find_cap(c, tid);
    if (!t) {
        tdb_error_set(err, ESRCH, "thread %d was not captured", (int)tid);
        return -1;
    }
    if (t->error) {
        tdb_error_set(err, 0, "%s", t->error);
        return -1;
    }
    if (setup_dwfl(c) < 0) {
        tdb_error_set(err, 0, "%s", c->dwfl_error);
        return -1;
    }
    walk w = {tdb_xcalloc(max_frames, sizeof(Dwarf_Addr)), tdb_xcalloc(max_frames, sizeof(bool)),
              0, max_frames, 0};
    int rc = dwfl_getthread_frames(c->dwfl, tid, frame_cb, &w);
    const char *why = rc == -1 ? dwfl_errmsg(-1) : NULL;
    if (w.n == 0) {
        tdb_error_set(err, 0, "cannot unwind thread %d: %s", (int)tid, why ? why : "no frames");
        free(w.pcs);
        free(w.activation);
        return -1;
    }
    tdb_native_frame *frames = tdb_xcalloc(w.n, sizeof(*frames));
    if (!symbols && !c->own_symbols)
        c->own_symbols = tdb_symcache_new();
    for (size_t i = 0; i < w.n; i++)
        symbolize(c->dwfl, symbols ? symbols : c->own_symbols, w.pcs[i], w.activation[i],
                  &frames[i]);
    *note = NULL;
    if (w.truncated)
        *note = tdb_xasprintf("more than %zu native frames", max_frames);
    else if (why && t->stack_cut &&
             w.pcs[w.n - 1] != 0)
        *note = tdb_xasprintf("the stack is deeper than the %zu bytes copied; unwinding stopped: %s",
                              t->stack_len, why);
    else if (why)
        *note = tdb_xasprintf("unwinding stopped: %s", why);
    *out = frames;
    *n = w.n;
    free(w.pcs);
    free(w.activation);
    return 0;
}

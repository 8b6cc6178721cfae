/* native/dwsource.c: source files of a shared object from its DWARF (see native/dwsource.h). */
#include "native/dwsource.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdbool.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Does the unit name UNIT (as the compiler recorded it: "csrc/core/x.c",
 * "/abs/x.c", "./x.c") name the file NAME? */
static int unit_names(const char *unit, const char *name)
{
    size_t lu = strlen(unit), ln = strlen(name);
    if (lu < ln || strcmp(unit + lu - ln, name) != 0)
        return 0;
    return lu == ln || unit[lu - ln - 1] == '/';
}

/* ELF_PATH's debug info, its file open as *OUT_FD; NULL with ERR set
 * (ERR->code an errno when the file itself cannot be opened). */
static Dwarf *dwarf_open(const char *elf_path, int *out_fd, tdb_error *err)
{
    int fd = open(elf_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tdb_error_errno(err, "cannot open '%s'", elf_path);
        return NULL;
    }
    Dwarf *dbg = dwarf_begin(fd, DWARF_C_READ);
    if (!dbg) {
        tdb_error_set(err, 0, "cannot read debug info in '%s': %s (was it built with -g?)",
                      elf_path, dwarf_errmsg(-1));
        close(fd);
        return NULL;
    }
    *out_fd = fd;
    return dbg;
}

static void dwarf_close(Dwarf *dbg, int fd)
{
    dwarf_end(dbg);
    close(fd);
}

/* Call FN(unit's DIE, its name, its DW_AT_comp_dir, CTX) for each
 * compilation unit of DBG (name and dir may be NULL), until FN returns
 * nonzero.  The number of units seen. */
static long each_unit(Dwarf *dbg,
                      int (*fn)(Dwarf_Die *cu, const char *unit, const char *dir, void *ctx),
                      void *ctx)
{
    long units = 0;
    Dwarf_Off off = 0, next;
    size_t header;
    while (dwarf_nextcu(dbg, off, &next, &header, NULL, NULL, NULL) == 0) {
        Dwarf_Die die;
        Dwarf_Attribute attr;
        if (dwarf_offdie(dbg, off + header, &die)) {
            units++;
            if (fn(&die, dwarf_diename(&die),
                   dwarf_formstring(dwarf_attr(&die, DW_AT_comp_dir, &attr)), ctx))
                break;
        }
        off = next;
    }
    return units;
}

/* each_unit() over ELF_PATH's debug info; -1 with ERR set when the file or
 * its debug info cannot be read. */
static long walk_units(const char *elf_path,
                       int (*fn)(Dwarf_Die *cu, const char *unit, const char *dir, void *ctx),
                       void *ctx, tdb_error *err)
{
    int fd;
    Dwarf *dbg = dwarf_open(elf_path, &fd, err);
    if (!dbg)
        return -1;
    long units = each_unit(dbg, fn, ctx);
    dwarf_close(dbg, fd);
    return units;
}

typedef struct find_unit {
    const char *name;
    char *found;
} find_unit;

static int find_source(Dwarf_Die *cu, const char *unit, const char *dir, void *ctx)
{
    (void)cu;
    find_unit *f = ctx;
    if (!unit || !unit_names(unit, f->name))
        return 0;
    f->found = unit[0] == '/' || !dir ? tdb_xstrdup(unit) : tdb_xasprintf("%s/%s", dir, unit);
    return 1;
}

char *tdb_dwarf_source_path(const char *elf_path, const char *name, tdb_error *err)
{
    find_unit f = {name, NULL};
    if (walk_units(elf_path, find_source, &f, err) >= 0 && !f.found)
        tdb_error_set(err, 0, "'%s' has no compilation unit for '%s' in its debug info", elf_path,
                      name);
    return f.found;
}

static int add_source_dir(Dwarf_Die *cu, const char *unit, const char *dir, void *ctx)
{
    (void)cu;
    json_t *dirs = ctx;
    if (unit && unit[0] == '/') {
        const char *slash = strrchr(unit, '/');
        char *d = tdb_xstrndup(unit, slash > unit ? (size_t)(slash - unit) : 1);
        json_object_set_new(dirs, d, json_true());
        free(d);
    } else if (unit && dir && dir[0] == '/') {
        json_object_set_new(dirs, dir, json_true());
    }
    return 0;
}

long tdb_dwarf_source_dirs(const char *elf_path, json_t *dirs, tdb_error *err)
{
    return walk_units(elf_path, add_source_dir, dirs, err);
}

static int first_unit(Dwarf_Die *cu, const char *unit, const char *dir, void *ctx)
{
    (void)cu, (void)unit, (void)dir, (void)ctx;
    return 1;
}

int tdb_dwarf_present(const char *elf_path)
{
    return walk_units(elf_path, first_unit, NULL, NULL) > 0;
}

int tdb_marked_line(const char *path, const char *marker, int *out_line, tdb_error *err)
{
    char *text = tdb_read_file(path, NULL, err);
    int line = 1, hit = 0, hits = 0;

    if (!text)
        return -1;
    for (char *p = text; *p;) {
        char *end = strchr(p, '\n');
        if (end)
            *end = '\0';
        if (strstr(p, marker)) {
            hit = line;
            hits++;
        }
        if (!end)
            break;
        p = end + 1;
        line++;
    }
    free(text);
    if (hits != 1) {
        tdb_error_set(err, 0, "'%s' has %d lines marked '%s' (expected one)", path, hits, marker);
        return -1;
    }
    *out_line = hit;
    return 0;
}

/* ---- after the prologue ---- */

/* The first bytes of the code at file address ADDR of ELF, into BUF. */
static int code_at(Elf *elf, uint64_t addr, uint8_t *buf, size_t len)
{
    size_t n;
    if (elf_getphdrnum(elf, &n) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || addr < ph.p_vaddr ||
            addr + len > ph.p_vaddr + ph.p_filesz)
            continue;
        Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)(ph.p_offset + (addr - ph.p_vaddr)),
                                           len, ELF_T_BYTE);
        if (!d || d->d_size < len)
            return -1;
        memcpy(buf, d->d_buf, len);
        return 0;
    }
    return -1;
}

/* Where amd64_analyze_prologue() leaves gdb at a function starting with
 * CODE: after 'push %rbp' and 'mov %rsp,%rbp' (an endbr64 before them
 * skipped), or 0 for a frameless function (gdb then stays at its start). */
static size_t frame_setup_len(const uint8_t *code)
{
    static const uint8_t endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
    size_t k = memcmp(code, endbr64, sizeof(endbr64)) == 0 ? sizeof(endbr64) : 0;
    if (code[k] != 0x55) /* push %rbp */
        return 0;
    k++;
    if ((code[k] == 0x48 && code[k + 1] == 0x89 && code[k + 2] == 0xe5) ||
        (code[k] == 0x48 && code[k + 1] == 0x8b && code[k + 2] == 0xec)) /* mov %rsp,%rbp */
        k += 3;
    return k;
}

/* each_unit()'s search for the unit whose ranges hold ADDR. */
typedef struct unit_at {
    uint64_t addr;
    Dwarf_Die cu;
    bool found;
} unit_at;

static int unit_holding(Dwarf_Die *cu, const char *unit, const char *dir, void *ctx)
{
    (void)unit, (void)dir;
    unit_at *u = ctx;
    if (dwarf_haspc(cu, u->addr) != 1)
        return 0;
    u->cu = *cu;
    u->found = true;
    return 1;
}

int tdb_dwarf_after_prologue(const char *elf_path, uint64_t addr, uint64_t *out_addr,
                             tdb_error *err)
{
    tdb_error why = {0};
    int fd = -1;
    Dwarf *dbg = dwarf_open(elf_path, &fd, &why);
    uint64_t at = addr;
    if (!dbg && why.code) {
        tdb_error_set(err, why.code, "%s", why.msg);
        return -1;
    }
    Dwarf_Die cu, *found = NULL;
    Dwarf_Lines *lines = NULL;
    size_t n_lines = 0;
    if (!dbg)
        goto done; /* no DWARF: gdb has no line table either */
    found = dwarf_addrdie(dbg, addr, &cu);
    if (!found) {
        /* No .debug_aranges: the units' own ranges. */
        unit_at u = {.addr = addr};
        each_unit(dbg, unit_holding, &u);
        if (u.found) {
            cu = u.cu;
            found = &cu;
        }
    }
    if (!found || dwarf_getsrclines(&cu, &lines, &n_lines) != 0)
        goto done;
    /* The function's end: the subprogram's high pc, else the next row's
     * address bounds nothing (the whole unit). */
    uint64_t end = UINT64_MAX;
    Dwarf_Die *scopes = NULL;
    int n_scopes = dwarf_getscopes(&cu, addr, &scopes);
    for (int k = 0; k < n_scopes; k++) {
        Dwarf_Addr lo, hi;
        if (dwarf_tag(&scopes[k]) == DW_TAG_subprogram && dwarf_lowpc(&scopes[k], &lo) == 0 &&
            dwarf_highpc(&scopes[k], &hi) == 0 && lo == addr) {
            end = hi;
            break;
        }
    }
    free(scopes);
    /* gdb 13: a prologue_end row inside the function wins. */
    uint64_t marked = UINT64_MAX;
    for (size_t i = 0; i < n_lines; i++) {
        Dwarf_Line *l = dwarf_onesrcline(lines, i);
        Dwarf_Addr a;
        bool pe = false;
        if (l && dwarf_lineaddr(l, &a) == 0 && a > addr && a < end && a < marked &&
            dwarf_lineprologueend(l, &pe) == 0 && pe)
            marked = a;
    }
    if (marked != UINT64_MAX) {
        at = marked;
        goto done;
    }
    Elf *elf = dwarf_getelf(dbg);
    uint8_t code[16];
    size_t setup = elf && code_at(elf, addr, code, sizeof(code)) == 0 ? frame_setup_len(code) : 0;
    if (!setup)
        goto done;
    /* The line entry holding addr + setup: from the last row at or before
     * it to the next row after it (gdb's find_pc_sect_line()); the stop is
     * that next row, unless the entry starts exactly there. */
    uint64_t pc = addr + setup, start = 0, next_row = UINT64_MAX;
    for (size_t i = 0; i < n_lines; i++) {
        Dwarf_Line *l = dwarf_onesrcline(lines, i);
        Dwarf_Addr a;
        bool seq_end = false;
        if (!l || dwarf_lineaddr(l, &a) != 0 || dwarf_lineendsequence(l, &seq_end) != 0)
            continue;
        if (a <= pc && a >= addr && a > start && !seq_end)
            start = a;
        if (a > pc && a < next_row)
            next_row = a;
    }
    if (start && start != pc && next_row != UINT64_MAX && next_row < end)
        at = next_row;
done:
    if (dbg)
        dwarf_close(dbg, fd);
    *out_addr = at;
    return 0;
}

/* Is PATH DIR itself or under it? */
static int path_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

typedef struct own_functions {
    const char *const *dirs;
    size_t n_dirs;
    const char *comp_dir;
    uint64_t *v;
    size_t n;
} own_functions;

static int own_function(Dwarf_Die *die, void *arg)
{
    own_functions *o = arg;
    Dwarf_Addr lo;
    const char *file = dwarf_decl_file(die);
    if (!file || dwarf_lowpc(die, &lo) != 0)
        return DWARF_CB_OK; /* a declaration, or inlined only: nothing to break at */
    char *abs = file[0] == '/' || !o->comp_dir ? tdb_xstrdup(file)
                                               : tdb_xasprintf("%s/%s", o->comp_dir, file);
    int mine = 0;
    for (size_t i = 0; i < o->n_dirs && !mine; i++)
        mine = path_under(abs, o->dirs[i]);
    for (size_t i = 0; mine && i < o->n; i++)
        mine = o->v[i] != lo;
    if (mine) {
        o->v = tdb_xrealloc(o->v, (o->n + 1) * sizeof(*o->v));
        o->v[o->n++] = lo;
    }
    free(abs);
    return DWARF_CB_OK;
}

static int unit_functions(Dwarf_Die *cu, const char *unit, const char *dir, void *ctx)
{
    (void)unit;
    own_functions *o = ctx;
    o->comp_dir = dir;
    dwarf_getfuncs(cu, own_function, o, 0);
    return 0;
}

int tdb_dwarf_functions_under(const char *elf_path, const char *const *dirs, size_t n_dirs,
                              uint64_t **out_addrs, size_t *out_n, tdb_error *err)
{
    own_functions o = {.dirs = dirs, .n_dirs = n_dirs};
    if (walk_units(elf_path, unit_functions, &o, err) < 0)
        return -1;
    *out_addrs = o.v;
    *out_n = o.n;
    return 0;
}

int tdb_elf_function_bounds(const char *elf_path, uint64_t addr, uint64_t *out_lo,
                            uint64_t *out_hi, tdb_error *err)
{
    /* .eh_frame_hdr's table, sorted by start address, as GCC and the
     * linkers write it: version 1, pointers pc-relative sdata4, count
     * udata4, table datarel sdata4 pairs (start, FDE).  A function runs
     * from its start to the next one's. */
    int rc = -1;
    Elf *elf = NULL;
    int fd = open(elf_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tdb_error_errno(err, "cannot open '%s'", elf_path);
        return -1;
    }
    elf_version(EV_CURRENT);
    elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    size_t shstrndx;
    Elf_Scn *scn = NULL;
    Elf_Data *data = NULL;
    GElf_Shdr sh;
    if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0)
        while ((scn = elf_nextscn(elf, scn))) {
            const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
            if (name && strcmp(name, ".eh_frame_hdr") == 0) {
                data = elf_getdata(scn, NULL);
                break;
            }
        }
    const unsigned char *h = data ? data->d_buf : NULL;
    if (!h || data->d_size < 12 || h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b) {
        tdb_error_set(err, 0, "'%s' has no .eh_frame_hdr table tdebug reads", elf_path);
        goto cleanup;
    }
    uint32_t count;
    memcpy(&count, h + 8, 4);
    if (12 + (uint64_t)count * 8 > data->d_size || !count) {
        tdb_error_set(err, 0, "'%s': its .eh_frame_hdr is cut short", elf_path);
        goto cleanup;
    }
    size_t lo = 0, hi = count; /* the last entry starting at or before ADDR */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        int32_t start;
        memcpy(&start, h + 12 + mid * 8, 4);
        if (sh.sh_addr + (int64_t)start <= addr)
            lo = mid;
        else
            hi = mid;
    }
    int32_t start, next = 0;
    memcpy(&start, h + 12 + lo * 8, 4);
    if (lo + 1 < count)
        memcpy(&next, h + 12 + (lo + 1) * 8, 4);
    if (sh.sh_addr + (int64_t)start > addr || lo + 1 >= count) {
        tdb_error_set(err, 0, "no function at 0x%llx in '%s'", (unsigned long long)addr, elf_path);
        goto cleanup;
    }
    *out_lo = sh.sh_addr + (int64_t)start;
    *out_hi = sh.sh_addr + (int64_t)next;
    rc = 0;
cleanup:
    if (elf)
        elf_end(elf);
    close(fd);
    return rc;
}

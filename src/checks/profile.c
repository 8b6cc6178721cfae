/* checks/profile.c: the debug-build profile (see checks/profile.h). */
#include "checks/profile.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GIB (1024ull * 1024 * 1024)

/* --- The machine --------------------------------------------------------- */

static char *read_under(const char *root, const char *path)
{
    char *p = tdb_xasprintf("%s%s", root, path);
    char *text = tdb_read_file(p, NULL, NULL);
    free(p);
    return text;
}

static int read_u64_under(const char *root, const char *path, uint64_t *out)
{
    char *text = read_under(root, path);
    if (!text)
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    int ok = !errno && end != text && (*end == '\n' || *end == '\0');
    free(text);
    if (!ok)
        return -1;
    *out = v;
    return 0;
}

/* LIMIT - USAGE from two files under DIR (cgroup v1 or v2 names), or 0
 * when either is missing or the limit is "none" (v1 writes a huge
 * number, v2 "max", which does not parse). */
static uint64_t room_in(const char *root, const char *dir, const char *limit_name,
                        const char *usage_name)
{
    char *lp = tdb_xasprintf("%s/%s", dir, limit_name), *up = tdb_xasprintf("%s/%s", dir, usage_name);
    uint64_t limit = 0, used = 0, room = 0;
    if (read_u64_under(root, lp, &limit) == 0 && limit < (1ull << 60) &&
        read_u64_under(root, up, &used) == 0 && limit > used)
        room = limit - used;
    free(lp);
    free(up);
    return room;
}

/* Memory left under this process's cgroup limit, v2 or v1; 0 when there
 * is no limit to speak of. */
static uint64_t cgroup_room(const char *root)
{
    char *cg = read_under(root, "/proc/self/cgroup");
    uint64_t room = 0;
    if (!cg)
        return 0;
    char *save = NULL;
    for (char *line = strtok_r(cg, "\n", &save); line && !room; line = strtok_r(NULL, "\n", &save)) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        char *dir = NULL;
        if (!strncmp(line, "0::", 3)) {
            dir = tdb_xasprintf("/sys/fs/cgroup%s", c2 + 1);
            room = room_in(root, dir, "memory.max", "memory.current");
        } else if ((size_t)(c2 - c1 - 1) == 6 && !strncmp(c1 + 1, "memory", 6)) {
            dir = tdb_xasprintf("/sys/fs/cgroup/memory%s", c2 + 1);
            room = room_in(root, dir, "memory.limit_in_bytes", "memory.usage_in_bytes");
        }
        free(dir);
    }
    free(cg);
    return room;
}

/* CPUs: the affinity mask, capped by a cgroup v2 cpu.max quota. */
static long usable_cores(const char *root)
{
    cpu_set_t set;
    long cores = 0;
    if (*root == '\0' && sched_getaffinity(0, sizeof(set), &set) == 0)
        cores = CPU_COUNT(&set);
    if (cores <= 0)
        cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores <= 0)
        cores = 1;
    char *cg = read_under(root, "/proc/self/cgroup");
    char *line = cg ? strstr(cg, "0::") : NULL;
    if (line && (line == cg || line[-1] == '\n')) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *p = tdb_xasprintf("/sys/fs/cgroup%s/cpu.max", line + 3);
        char *text = read_under(root, p);
        long long quota, period;
        if (text && sscanf(text, "%lld %lld", &quota, &period) == 2 && quota > 0 && period > 0) {
            long q = (long)((quota + period - 1) / period);
            if (q > 0 && q < cores)
                cores = q;
        }
        free(text);
        free(p);
    }
    free(cg);
    return cores;
}

void tdb_machine_probe(const char *root, tdb_machine *m)
{
    memset(m, 0, sizeof(*m));
    m->cores = usable_cores(root);
    char *meminfo = read_under(root, "/proc/meminfo");
    const char *p = meminfo ? strstr(meminfo, "MemAvailable:") : NULL;
    unsigned long long kb = 0;
    if (p && sscanf(p, "MemAvailable: %llu kB", &kb) == 1)
        m->mem_available = kb * 1024;
    free(meminfo);
    uint64_t room = cgroup_room(root);
    if (room && (!m->mem_available || room < m->mem_available))
        m->mem_available = room;
    m->ccache = tdb_which("ccache");
    char *mold = tdb_which("mold"), *lld = tdb_which("ld.lld");
    /* mold links fastest; lld is nearly as fast; both write .gdb_index. */
    m->linker = mold ? tdb_xstrdup("mold") : lld ? tdb_xstrdup("lld") : NULL;
    free(mold);
    free(lld);
    char *gai = tdb_which("gdb-add-index");
    m->gdb_add_index = gai != NULL;
    free(gai);
}

void tdb_machine_free(tdb_machine *m)
{
    free(m->ccache);
    free(m->linker);
    m->ccache = m->linker = NULL;
}

long tdb_profile_max_jobs(long cores, uint64_t mem_bytes)
{
    uint64_t reserved = TDB_PROFILE_GIB_RESERVED * GIB;
    uint64_t by_mem = mem_bytes > reserved ? (mem_bytes - reserved) / (TDB_PROFILE_GIB_PER_JOB * GIB)
                                           : 0;
    long jobs = cores;
    if ((uint64_t)jobs > by_mem)
        jobs = (long)by_mem;
    return jobs < 1 ? 1 : jobs;
}

/* --- Building the profile ------------------------------------------------ */

typedef struct strlist {
    char **v; /* NULL-terminated (tdb_ptrs_push) */
    size_t n;
} strlist;

static void list_add(strlist *l, char *s)
{
    tdb_ptrs_push(&l->v, &l->n, s);
}

static void add_var(tdb_profile *p, const char *name, char *value, int append, char *why)
{
    p->vars = tdb_xrealloc(p->vars, (p->n_vars + 1) * sizeof(tdb_profile_var));
    tdb_profile_var *v = &p->vars[p->n_vars++];
    v->name = tdb_xstrdup(name);
    v->value = value;
    v->append = append;
    v->why = why;
}

/* The flags that give a gdb index: the linker's --gdb-index, which builds
 * it from .debug_gnu_pubnames (without -ggnu-pubnames the index has no
 * symbols and gdb 13 ignores it: measured). */
static const char *index_ldflags(const tdb_machine *m)
{
    if (!m->linker)
        return NULL;
    return !strcmp(m->linker, "mold") ? "-fuse-ld=mold -Wl,--gdb-index"
                                      : "-fuse-ld=lld -Wl,--gdb-index";
}

/* No linker writes the index: say how to get one, and add it after the
 * build with gdb-add-index (COMMAND) when that is installed. */
static void index_afterwards(const tdb_machine *m, strlist *notes, strlist *post,
                             const char *command)
{
    list_add(notes, tdb_xstrdup("no linker that writes a gdb index (lld or mold): apt-get "
                                "install lld, or add the index after the build (below)"));
    if (m->gdb_add_index)
        list_add(post, tdb_xstrdup(command));
}

/* "a.cpp" relative to SRC, checked to exist; absolute paths inside SRC
 * are made relative. */
static char *checked_debinfo(const char *src, const char *file, tdb_error *err)
{
    char resolved_src[PATH_MAX];
    const char *rel = file;
    if (!realpath(src, resolved_src)) {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, errno, "cannot use --torch-src '%s': %s", src,
                           strerror(errno));
        return NULL;
    }
    if (file[0] == '/') {
        size_t n = strlen(resolved_src);
        char resolved[PATH_MAX];
        if (!realpath(file, resolved) || strncmp(resolved, resolved_src, n) || resolved[n] != '/') {
            tdb_error_set_exit(err, TDB_EXIT_USAGE, 0, "cannot use --debinfo '%s': not a file "
                               "inside the PyTorch checkout '%s' (--torch-src DIR)", file,
                               resolved_src);
            return NULL;
        }
        return tdb_xstrdup(resolved + n + 1);
    }
    while (!strncmp(rel, "./", 2))
        rel += 2;
    char *full = tdb_xasprintf("%s/%s", resolved_src, rel);
    struct stat st;
    int ok = stat(full, &st) == 0 && S_ISREG(st.st_mode);
    free(full);
    if (!ok) {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, ENOENT, "cannot use --debinfo '%s': no such "
                           "file under '%s' (paths are relative to the PyTorch checkout; "
                           "--torch-src DIR)", file, resolved_src);
        return NULL;
    }
    return tdb_xstrdup(rel);
}

/* --- What a PyTorch build costs, and its submodules -------------------- */

/* Nonzero when directory PATH holds anything (a checked-out submodule);
 * an uninitialised one is an empty directory, or none. */
static int dir_has_entries(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d)))
        found = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return found;
}

void tdb_profile_read_submodules(const char *dir, tdb_profile_submodules *out)
{
    memset(out, 0, sizeof(*out));
    char *gm = tdb_xasprintf("%s/.gitmodules", dir), *setup = tdb_xasprintf("%s/setup.py", dir);
    char *text = access(setup, F_OK) == 0 ? tdb_read_file(gm, NULL, NULL) : NULL;
    if (text) {
        out->checkout = tdb_xstrdup(dir);
        out->missing = tdb_xcalloc(1, sizeof(char *));
        /* "\tpath = third_party/pybind11" lines, one per submodule. */
        for (char *line = text; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            char *k = line + strspn(line, " \t");
            if (!strncmp(k, "path", 4) && (k[4] == ' ' || k[4] == '\t' || k[4] == '=')) {
                char *v = strchr(k, '=');
                v = v ? v + 1 + strspn(v + 1, " \t") : NULL;
                size_t len = v ? strlen(v) : 0;
                while (len && isspace((unsigned char)v[len - 1]))
                    len--;
                if (len) {
                    char *rel = tdb_xstrndup(v, len), *full = tdb_xasprintf("%s/%s", dir, rel);
                    out->total++;
                    if (!dir_has_entries(full))
                        tdb_ptrs_push(&out->missing, &out->n_missing, rel);
                    else
                        free(rel);
                    free(full);
                }
            }
            line = nl ? nl + 1 : NULL;
        }
    }
    free(text);
    free(gm);
    free(setup);
}

void tdb_profile_submodules_release(tdb_profile_submodules *s)
{
    free(s->checkout);
    tdb_strv_free(s->missing);
    memset(s, 0, sizeof(*s));
}

static void add_cost(tdb_profile *p, const char *what, char *estimate, char *basis)
{
    p->costs = tdb_xrealloc(p->costs, (p->n_costs + 1) * sizeof(*p->costs));
    p->costs[p->n_costs++] = (tdb_profile_cost){what, estimate, basis};
}

/* Sources, disk and time of a PyTorch build in mode O->torch with JOBS
 * compile jobs. */
static void torch_costs(const tdb_profile_options *o, long jobs, tdb_profile *p)
{
    static const char clone_basis[] =
        "conda-forge/pytorch-cpu-feedstock#52 (2021): 2.4 GB of a 7.3 GB release build with "
        "CUDA was the clone";
    add_cost(p, "sources",
             tdb_xstrdup("about 2.4 GB for a clone with its submodules (more for today's "
                         "tree): git clone --recursive, or in a clone 'git submodule sync && "
                         "git submodule update --init --recursive'"),
             tdb_xstrdup(clone_basis));
    if (o->torch == TDB_TORCH_SELECTIVE)
        add_cost(p, "disk",
                 tdb_xstrdup("about a release build's: a few GB for build/ (7.3 GB with CUDA "
                             "and the clone), plus the debug info of the --debinfo files"),
                 tdb_xstrdup(clone_basis));
    else
        add_cost(p, "disk",
                 tdb_xstrdup("tens of GB for build/: every object file and library carries its "
                             "debug info, libtorch_cpu.so alone passes 4 GB and the objects it "
                             "is linked from hold it again; ccache keeps a copy of the objects "
                             "besides"),
                 tdb_xstrdup("pytorch/pytorch#61261 (2021): libtorch_cpu.so over 4 GB in a "
                             "build with debug info; PyTorch's CONTRIBUTING.md gives ccache "
                             "25 GiB; a release build with CUDA took 7.3 GB with its clone "
                             "(conda-forge/pytorch-cpu-feedstock#52)"));
    double hours = TDB_PROFILE_TORCH_CORE_HOURS / (double)jobs;
    add_cost(p, "time",
             tdb_xasprintf("up to about %.0f %s of compiling at MAX_JOBS=%ld (less without "
                           "CUDA and with the switches above; -O0 compiles faster than -O2, "
                           "linking -g libraries is slower); with ccache a rebuild after "
                           "'python setup.py clean' takes minutes",
                           hours < 1.5 ? hours * 60 : hours, hours < 1.5 ? "min" : "h", jobs),
             tdb_xasprintf("10 cores took 1 h 20 min for a release build with CUDA "
                           "(conda-forge/pytorch-cpu-feedstock#52, 2021): %.1f core-hours, "
                           "divided by MAX_JOBS",
                           TDB_PROFILE_TORCH_CORE_HOURS));
}

/* The checkout's submodules, said before anything else: a build without
 * them fails. */
static void torch_submodules(const tdb_profile_options *o, tdb_profile *p, strlist *notes)
{
    tdb_profile_read_submodules(o->torch_src ? o->torch_src : ".", &p->submodules);
    const tdb_profile_submodules *sm = &p->submodules;
    if (!sm->checkout) {
        list_add(notes, tdb_xstrdup("in the PyTorch checkout, first: git submodule sync && git "
                                    "submodule update --init --recursive (third_party/ holds "
                                    "libraries the build needs; again after a pull or a branch "
                                    "switch)"));
    } else if (sm->n_missing) {
        tdb_buf b = TDB_BUF_INIT;
        tdb_buf_addf(&b, "%zu of the %zu submodules of %s are not checked out (", sm->n_missing,
                     sm->total, sm->checkout);
        for (size_t i = 0; i < sm->n_missing && i < 3; i++)
            tdb_buf_addf(&b, "%s%s", i ? ", " : "", sm->missing[i]);
        tdb_buf_addf(&b, "%s): the build fails without them; run there first: git submodule "
                         "sync && git submodule update --init --recursive",
                     sm->n_missing > 3 ? ", ..." : "");
        list_add(notes, tdb_buf_detach(&b));
    } else {
        list_add(notes, tdb_xasprintf("the %zu submodules of %s are checked out (after a pull "
                                      "or a branch switch: git submodule update --init "
                                      "--recursive)",
                                      sm->total, sm->checkout));
    }
}

static int build_torch(const tdb_profile_options *o, const tdb_machine *m, tdb_profile *p,
                       strlist *notes, strlist *post, tdb_error *err)
{
    torch_submodules(o, p, notes);
    switch (o->torch) {
    case TDB_TORCH_DEBUG:
        p->kind = "torch-debug";
        add_var(p, "DEBUG", tdb_xstrdup("1"), 0,
                tdb_xstrdup("-O0 -g everywhere (CMake Debug): every local visible, stepping "
                            "follows the source; torch runs several times slower"));
        break;
    case TDB_TORCH_RELWITHDEBINFO:
        p->kind = "torch-relwithdebinfo";
        add_var(p, "REL_WITH_DEB_INFO", tdb_xstrdup("1"), 0,
                tdb_xstrdup("optimised with -g: full speed, source lines and backtraces, but "
                            "<optimized out> locals"));
        break;
    case TDB_TORCH_SELECTIVE: {
        p->kind = "torch-selective";
        tdb_buf files = TDB_BUF_INIT;
        for (char **f = o->debinfo; f && *f; f++) {
            char *rel = checked_debinfo(o->torch_src ? o->torch_src : ".", *f, err);
            if (!rel) {
                tdb_buf_free(&files);
                return -1;
            }
            if (files.len)
                tdb_buf_addc(&files, ';');
            tdb_buf_adds(&files, rel);
            free(rel);
        }
        add_var(p, "USE_CUSTOM_DEBINFO", tdb_buf_detach(&files), 0,
                tdb_xstrdup("debug info for these files only, the rest a release build: quick "
                            "to build, fast to run, lines and locals where you look"));
        break;
    }
    default:
        break;
    }

    long jobs = o->jobs > 0 ? o->jobs : tdb_profile_max_jobs(m->cores, m->mem_available);
    if (o->jobs > 0)
        add_var(p, "MAX_JOBS", tdb_xasprintf("%ld", jobs), 0, tdb_xstrdup("as asked (--jobs)"));
    else
        add_var(p, "MAX_JOBS", tdb_xasprintf("%ld", jobs), 0,
                tdb_xasprintf("%ld CPUs, %.1f GiB available: a -g compile of a big ATen file "
                              "takes up to %d GiB, %d GiB kept back; out of memory is the usual "
                              "way these builds fail (--jobs N to override)",
                              m->cores, m->mem_available / (double)GIB, TDB_PROFILE_GIB_PER_JOB,
                              TDB_PROFILE_GIB_RESERVED));
    if (!o->cuda)
        add_var(p, "USE_CUDA", tdb_xstrdup("0"), 0,
                tdb_xstrdup("no CUDA kernels: the longest part of the build (--cuda keeps them)"));
    if (!o->full) {
        static const struct { const char *name, *why; } cuts[] = {
            {"BUILD_TEST", "no C++ test binaries"},
            {"USE_DISTRIBUTED", "no c10d/gloo/MPI"},
            {"USE_MKLDNN", "no oneDNN kernels"},
            {"USE_FBGEMM", "no FBGEMM (quantized server kernels)"},
            {"USE_NNPACK", "no NNPACK"},
            {"USE_QNNPACK", "no QNNPACK (quantized mobile kernels)"},
            {"USE_XNNPACK", "no XNNPACK"},
            {"USE_FLASH_ATTENTION", "no flash-attention kernels"},
            {"USE_MEM_EFF_ATTENTION", "no memory-efficient attention kernels"},
        };
        for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
            add_var(p, cuts[i].name, tdb_xstrdup("0"), 0,
                    tdb_xasprintf("%s: a shorter build (--full keeps it)", cuts[i].why));
    }
    if (m->ccache) {
        add_var(p, "CMAKE_C_COMPILER_LAUNCHER", tdb_xstrdup("ccache"), 0,
                tdb_xstrdup("rebuilds after a clean or a branch switch come from the cache"));
        add_var(p, "CMAKE_CXX_COMPILER_LAUNCHER", tdb_xstrdup("ccache"), 0,
                tdb_xstrdup("the same for C++, which is nearly all of it"));
        if (o->cuda)
            add_var(p, "CMAKE_CUDA_COMPILER_LAUNCHER", tdb_xstrdup("ccache"), 0,
                    tdb_xstrdup("the same for CUDA"));
    } else {
        list_add(notes, tdb_xstrdup("ccache is not installed: with it (apt-get install ccache) "
                                    "this profile uses it as the compiler launcher"));
    }
    const char *ld = index_ldflags(m);
    if (ld) {
        add_var(p, "CFLAGS", tdb_xstrdup("-ggnu-pubnames"), 1,
                tdb_xasprintf("the name tables %s builds its gdb index from (setup.py: CFLAGS "
                              "applies to C and C++ unless CXXFLAGS is set)", m->linker));
        static const char *const kinds[] = {"SHARED", "MODULE", "EXE"};
        for (size_t i = 0; i < 3; i++) {
            char name[64];
            snprintf(name, sizeof(name), "CMAKE_%s_LINKER_FLAGS", kinds[i]);
            add_var(p, name, tdb_xstrdup(ld), 1,
                    i == 0 ? tdb_xasprintf("link with %s and write a .gdb_index: gdb starts in "
                                           "seconds on libtorch_cpu instead of minutes", m->linker)
                           : tdb_xasprintf("the same for %s", i == 1 ? "extension modules"
                                                                     : "executables"));
        }
    } else {
        index_afterwards(m, notes, post, "for f in build/lib/*.so torch/lib/*.so "
                                         "torch/_C*.so; do [ -f \"$f\" ] && gdb-add-index "
                                         "\"$f\"; done");
    }
    add_var(p, "CMAKE_EXPORT_COMPILE_COMMANDS", tdb_xstrdup("ON"), 0,
            tdb_xstrdup("build/compile_commands.json: the exact flags of every file, for "
                        "editors and for checking what really got -g"));
    list_add(notes, tdb_xstrdup("variables from PyTorch's setup.py header and CONTRIBUTING.md "
                                "(BUILD_*, USE_*, CMAKE_* go to CMake as they are); for PyTorch "
                                "2.1 or newer"));
    list_add(notes, tdb_xstrdup("they count on the first configure: after a build, 'python "
                                "setup.py clean' (or remove build/CMakeCache.txt) to change them"));
    list_add(notes, tdb_xstrdup("then: python setup.py develop (or pip install -e . -v "
                                "--no-build-isolation); check with: tdebug profile --check "
                                "torch._C"));
    torch_costs(o, jobs, p);
    return 0;
}

static void build_setuptools(const tdb_machine *m, tdb_profile *p, strlist *notes, strlist *post)
{
    const char *ld = index_ldflags(m);
    const char *cflags = ld ? "-O0 -g3 -fno-omit-frame-pointer -ggnu-pubnames"
                            : "-O0 -g3 -fno-omit-frame-pointer";
    p->kind = "setuptools";
    add_var(p, "CFLAGS", tdb_xstrdup(cflags), 1,
            tdb_xasprintf("setuptools adds these after Python's own -O2, so -O0 wins: locals "
                          "and steps as written, -g3 keeps macros, frame pointers keep "
                          "backtraces whole%s", ld ? ", pubnames feed the gdb index" : ""));
    add_var(p, "CXXFLAGS", tdb_xstrdup(cflags), 1,
            tdb_xstrdup("the same for C++ (newer setuptools and CMake read CXXFLAGS; older "
                        "setuptools use CFLAGS for C++ too)"));
    if (ld) {
        add_var(p, "LDFLAGS", tdb_xstrdup(ld), 1,
                tdb_xasprintf("link with %s and write a .gdb_index: gdb reads the index, not "
                              "all the DWARF, when it starts", m->linker));
    } else {
        index_afterwards(m, notes, post, "find build -name '*.so' -exec gdb-add-index {} \\;");
    }
    list_add(notes, tdb_xstrdup("then build as usual (pip install -e . --no-build-isolation, or "
                                "python setup.py build_ext --inplace; a clean build: old objects "
                                "keep their flags); check with: tdebug profile --check MODULE"));
}

/* A torch.utils.cpp_extension op: what setuptools needs, and how to say
 * it to torch's two ways of building (setup.py with CppExtension and
 * BuildExtension; the JIT, load() and load_inline(), which read no CFLAGS
 * but their extra_cflags, and cache builds by name in
 * TORCH_EXTENSIONS_DIR). */
static void build_torch_extension(const tdb_machine *m, tdb_profile *p, strlist *notes,
                                  strlist *post)
{
    const char *ld = index_ldflags(m);
    /* The variables' flags, as Python lists. */
    const char *flags = ld ? "['-O0', '-g3', '-fno-omit-frame-pointer', '-ggnu-pubnames']"
                           : "['-O0', '-g3', '-fno-omit-frame-pointer']";
    char *ldlist = ld ? tdb_xasprintf(", extra_link_args=['-fuse-ld=%s', '-Wl,--gdb-index']",
                                      m->linker)
                      : tdb_xstrdup("");
    char *jitld = ld ? tdb_xasprintf(", extra_ldflags=['-fuse-ld=%s', '-Wl,--gdb-index']",
                                     m->linker)
                     : tdb_xstrdup("");
    build_setuptools(m, p, notes, post);
    p->kind = "torch-extension";
    char cwd[4096];
    if (getcwd(cwd, sizeof(cwd)))
        add_var(p, "TORCH_EXTENSIONS_DIR", tdb_xasprintf("%s/build/torch_extensions", cwd), 0,
                tdb_xstrdup("where the JIT (load(), load_inline()) builds and caches: a debug "
                            "build of its own, not a release build cached under the same "
                            "name in ~/.cache/torch_extensions"));
    free(notes->v[--notes->n]); /* setuptools' "then build as usual": said below */
    notes->v[notes->n] = NULL;
    list_add(notes, tdb_xasprintf("setup.py: CppExtension('NAME', ['op.cpp'], "
                                  "extra_compile_args=%s%s) with cmdclass={'build_ext': "
                                  "BuildExtension}; BuildExtension adds these after its own "
                                  "flags, so they hold even where CFLAGS is not read", flags,
                                  ldlist));
    list_add(notes, tdb_xasprintf("the JIT reads no CFLAGS: torch.utils.cpp_extension.load("
                                  "name, sources, extra_cflags=%s%s) or load_inline(..., the "
                                  "same); CUDA sources: extra_cuda_cflags=['-G', '-g']", flags,
                                  jitld));
    list_add(notes, tdb_xstrdup("needs the headers torch was built with: Debian's "
                                "libtorch-dev and pybind11-dev (tools/deps.sh installs them)"));
    list_add(notes, tdb_xstrdup("then build (python setup.py build_ext --inplace, or run the "
                                "script that calls load()); check with: tdebug profile --check "
                                "--no-deps path/to/NAME*.so; debug with: tdebug run -b "
                                "YOUR_FUNCTION -- python script.py"));
    free(ldlist);
    free(jitld);
}

int tdb_profile_build(const tdb_profile_options *o, const tdb_machine *m, tdb_profile *p,
                      tdb_error *err)
{
    strlist notes = {0}, post = {0};
    memset(p, 0, sizeof(*p));
    if (o->torch != TDB_TORCH_NONE) {
        if (build_torch(o, m, p, &notes, &post, err) < 0) {
            p->notes = notes.v;
            p->post_build = post.v;
            tdb_profile_free(p);
            return -1;
        }
    } else if (o->torch_extension) {
        build_torch_extension(m, p, &notes, &post);
    } else {
        build_setuptools(m, p, &notes, &post);
    }
    p->notes = notes.v ? notes.v : tdb_xcalloc(1, sizeof(char *));
    p->post_build = post.v ? post.v : tdb_xcalloc(1, sizeof(char *));
    return 0;
}

void tdb_profile_free(tdb_profile *p)
{
    for (size_t i = 0; i < p->n_vars; i++) {
        free(p->vars[i].name);
        free(p->vars[i].value);
        free(p->vars[i].why);
    }
    free(p->vars);
    tdb_strv_free(p->notes);
    tdb_strv_free(p->post_build);
    for (size_t i = 0; i < p->n_costs; i++) {
        free(p->costs[i].estimate);
        free(p->costs[i].basis);
    }
    free(p->costs);
    tdb_profile_submodules_release(&p->submodules);
    memset(p, 0, sizeof(*p));
}

void tdb_profile_format_sh(const tdb_profile *p, tdb_buf *b)
{
    tdb_buf_addf(b, "# tdebug profile (%s): a debuggable build; source it:\n", p->kind);
    tdb_buf_addf(b, "#   eval \"$(tdebug profile %s)\"\n",
                 !strcmp(p->kind, "setuptools") ? "--setuptools"
                 : !strcmp(p->kind, "torch-extension") ? "--torch-extension"
                 : !strcmp(p->kind, "torch-debug") ? "--torch=debug"
                 : !strcmp(p->kind, "torch-relwithdebinfo") ? "--torch=relwithdebinfo"
                                                            : "--torch=selective --debinfo ...");
    for (char **n = p->notes; n && *n; n++)
        tdb_buf_addf(b, "# %s\n", *n);
    for (size_t i = 0; i < p->n_vars; i++) {
        const tdb_profile_var *v = &p->vars[i];
        tdb_buf_addf(b, "export %s=", v->name);
        if (v->append)
            tdb_buf_addf(b, "\"${%s:+$%s }\"", v->name, v->name);
        tdb_shell_quote(b, v->value);
        tdb_buf_addf(b, "  # %s\n", v->why);
    }
    for (char **c = p->post_build; c && *c; c++)
        tdb_buf_addf(b, "# after the build: %s\n", *c);
    for (size_t i = 0; i < p->n_costs; i++)
        tdb_buf_addf(b, "# %s: %s [%s]\n", p->costs[i].what, p->costs[i].estimate,
                     p->costs[i].basis);
}

static size_t strv_len(char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

json_t *tdb_profile_json(const tdb_profile *p)
{
    json_t *vars = json_array();
    for (size_t i = 0; i < p->n_vars; i++) {
        const tdb_profile_var *v = &p->vars[i];
        json_t *o = json_pack("{s:s}", "name", v->name);
        tdb_json_set_str(o, "value", v->value); /* paths, file names: bytes */
        json_object_set_new(o, "append", json_boolean(v->append));
        tdb_json_set_str(o, "why", v->why);
        json_array_append_new(vars, o);
    }
    json_t *doc = json_pack("{s:s, s:o}", "kind", p->kind, "variables", vars);
    tdb_json_set_strv(doc, "notes", p->notes, strv_len(p->notes));
    tdb_json_set_strv(doc, "post_build", p->post_build, strv_len(p->post_build));
    if (p->n_costs) {
        json_t *costs = json_array();
        for (size_t i = 0; i < p->n_costs; i++)
            json_array_append_new(costs, json_pack("{s:s, s:s, s:s}", "what", p->costs[i].what,
                                                   "estimate", p->costs[i].estimate, "basis",
                                                   p->costs[i].basis));
        json_object_set_new(doc, "costs", costs);
        json_t *sm = json_null();
        if (p->submodules.checkout) {
            sm = json_pack("{s:I}", "total", (json_int_t)p->submodules.total);
            tdb_json_set_str(sm, "checkout", p->submodules.checkout);
            tdb_json_set_strv(sm, "missing", p->submodules.missing, p->submodules.n_missing);
        }
        json_object_set_new(doc, "submodules", sm);
    }
    return tdb_json_versioned(doc);
}

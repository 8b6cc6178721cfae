/*
 * checks/profile.h: the debug-build profile: the environment that makes a
 * PyTorch source build, or any setuptools C/C++ extension, come out
 * debuggable (DWARF, unoptimised, with a gdb index), each variable with
 * the reason for it.
 *
 * The PyTorch variables are the ones its setup.py header and
 * CONTRIBUTING.md document, plus CMAKE_* variables, which
 * tools/setup_helpers/cmake.py passes to CMake as they are (as it does
 * every BUILD_* and USE_* variable).  Valid for PyTorch 2.1 and newer
 * (USE_CUSTOM_DEBINFO, USE_FLASH_ATTENTION and USE_MEM_EFF_ATTENTION are
 * not read by older releases, which pass them to CMake unused).
 */
#ifndef TDB_PROFILE_H
#define TDB_PROFILE_H

#include "base/common.h"

#include <jansson.h>
#include <stdint.h>

/* Memory one compile job may take: a debug (-g) compile of one of ATen's
 * big generated files (RegisterCPU.cpp, Functions.cpp, the
 * VariableType_N.cpp files) peaks at several GiB of cc1plus. */
#define TDB_PROFILE_GIB_PER_JOB 4
/* Kept back for the system, the linker and whatever else runs. */
#define TDB_PROFILE_GIB_RESERVED 2

typedef enum tdb_torch_mode {
    TDB_TORCH_NONE = 0,
    TDB_TORCH_DEBUG,          /* DEBUG=1: -O0 -g everywhere */
    TDB_TORCH_RELWITHDEBINFO, /* REL_WITH_DEB_INFO=1: optimised, with -g */
    TDB_TORCH_SELECTIVE       /* USE_CUSTOM_DEBINFO: -g for the named files only */
} tdb_torch_mode;

/* What the machine has, as tdb_profile_probe() finds it (tests fill it
 * themselves). */
typedef struct tdb_machine {
    long cores;             /* CPUs this process may use */
    uint64_t mem_available; /* bytes: MemAvailable, or less under a cgroup limit */
    char *ccache;           /* path, or NULL */
    char *linker;           /* "lld" or "mold" (one that writes --gdb-index), or NULL */
    int gdb_add_index;      /* gdb-add-index is on PATH */
} tdb_machine;

/* Probe this machine.  ROOT prefixes /proc and /sys reads ("" normally). */
void tdb_machine_probe(const char *root, tdb_machine *out);
void tdb_machine_free(tdb_machine *m);

/* Compile jobs that fit: min(CORES, (MEM - reserved) / per-job), at least 1. */
long tdb_profile_max_jobs(long cores, uint64_t mem_bytes);

typedef struct tdb_profile_options {
    tdb_torch_mode torch;     /* TDB_TORCH_NONE with setuptools */
    int setuptools;
    int torch_extension;      /* torch.utils.cpp_extension: setup.py and the JIT */
    const char *torch_src;    /* the PyTorch checkout (selective mode) */
    char **debinfo;           /* files for USE_CUSTOM_DEBINFO, NULL-terminated */
    long jobs;                /* 0: computed */
    int cuda;
    int full;                 /* keep every optional component */
} tdb_profile_options;

typedef struct tdb_profile_var {
    char *name;
    char *value;
    int append;  /* added to what the variable already holds */
    char *why;
} tdb_profile_var;

/* What a build costs, and what the estimate rests on: numbers others
 * measured and published, with where (tdebug cannot build PyTorch to time
 * it), scaled to this machine where that is honest. */
typedef struct tdb_profile_cost {
    const char *what; /* "sources", "disk", "time" */
    char *estimate;
    char *basis;      /* where the numbers come from */
} tdb_profile_cost;

/* The git submodules of a PyTorch checkout (its .gitmodules). */
typedef struct tdb_profile_submodules {
    char *checkout;   /* the checkout looked at; NULL when none was found */
    size_t total;     /* submodules .gitmodules lists */
    char **missing;   /* paths of those not checked out (empty), NULL-terminated */
    size_t n_missing;
} tdb_profile_submodules;

typedef struct tdb_profile {
    const char *kind;  /* "torch-debug", "torch-relwithdebinfo", "torch-selective", "setuptools",
                        * "torch-extension" */
    tdb_profile_var *vars;
    size_t n_vars;
    char **notes;      /* comment lines (NULL-terminated) */
    char **post_build; /* shell commands to run after the build (NULL-terminated) */
    tdb_profile_cost *costs; /* --torch: sources, disk, time */
    size_t n_costs;
    tdb_profile_submodules submodules; /* --torch */
} tdb_profile;

/* The submodules of the PyTorch checkout DIR (".": the current directory):
 * which of those its .gitmodules lists are not checked out.  OUT->checkout
 * is NULL when DIR is not a PyTorch checkout (no .gitmodules beside a
 * setup.py).  Release with tdb_profile_submodules_release(). */
void tdb_profile_read_submodules(const char *dir, tdb_profile_submodules *out);
void tdb_profile_submodules_release(tdb_profile_submodules *s);

/* The compile work of a PyTorch build, in core-hours, that the time
 * estimate scales by the jobs: 10 cores took 1 h 20 min for a release
 * build with CUDA (conda-forge/pytorch-cpu-feedstock#52, 2021). */
#define TDB_PROFILE_TORCH_CORE_HOURS 13.3

/* Build the profile for OPT on machine M.  Returns 0, or -1 with ERR set
 * (exit code TDB_EXIT_USAGE) for a selective file that does not exist
 * under OPT->torch_src. */
int tdb_profile_build(const tdb_profile_options *opt, const tdb_machine *m, tdb_profile *out,
                      tdb_error *err);
void tdb_profile_free(tdb_profile *p);

/* As shell: 'export NAME=value  # why' lines, appends written as
 * NAME="${NAME:+$NAME }"'value', notes and post-build steps as comments. */
void tdb_profile_format_sh(const tdb_profile *p, tdb_buf *b);
/* {"version":1, "kind", "variables":[{"name","value","append","why"}],
 *  "notes":[], "post_build":[], and with --torch "costs":[{"what",
 *  "estimate","basis"}], "submodules":{"checkout","total","missing"} or
 *  null}: a new reference. */
json_t *tdb_profile_json(const tdb_profile *p);

#endif

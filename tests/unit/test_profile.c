/*
 * test_profile.c: the debug-build profile on described machines (cores,
 * memory, ccache, linker), the MAX_JOBS arithmetic, selective-mode file
 * checks, and the machine probe against fake /proc and cgroup trees.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "checks/profile.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tmp_tree.h"

#define GIB (1024ull * 1024 * 1024)

static void test_max_jobs(void **state)
{
    (void)state;
    /* min(cores, (memory - 2 GiB) / 4 GiB), at least 1 */
    assert_int_equal(tdb_profile_max_jobs(2, 23 * GIB), 2);
    assert_int_equal(tdb_profile_max_jobs(16, 16 * GIB), 3);
    assert_int_equal(tdb_profile_max_jobs(64, 64 * GIB), 15);
    assert_int_equal(tdb_profile_max_jobs(8, 6 * GIB), 1);
    assert_int_equal(tdb_profile_max_jobs(8, 1 * GIB), 1);
    assert_int_equal(tdb_profile_max_jobs(8, 0), 1);
    assert_int_equal(tdb_profile_max_jobs(4, 200 * GIB), 4);
}

static const tdb_profile_var *var(const tdb_profile *p, const char *name)
{
    for (size_t i = 0; i < p->n_vars; i++)
        if (!strcmp(p->vars[i].name, name))
            return &p->vars[i];
    return NULL;
}

static int has_note(char **notes, const char *phrase)
{
    for (char **n = notes; n && *n; n++)
        if (strstr(*n, phrase))
            return 1;
    return 0;
}

static void test_torch_debug_profile(void **state)
{
    (void)state;
    tdb_machine m = {.cores = 8, .mem_available = 20 * GIB, .ccache = "/usr/bin/ccache",
                     .linker = "lld", .gdb_add_index = 1};
    tdb_profile_options o = {.torch = TDB_TORCH_DEBUG};
    tdb_profile p;
    tdb_error err = {0};

    assert_int_equal(tdb_profile_build(&o, &m, &p, &err), 0);
    assert_string_equal(p.kind, "torch-debug");
    assert_string_equal(var(&p, "DEBUG")->value, "1");
    assert_null(var(&p, "REL_WITH_DEB_INFO"));
    assert_string_equal(var(&p, "MAX_JOBS")->value, "4");
    assert_non_null(strstr(var(&p, "MAX_JOBS")->why, "4 GiB"));
    assert_string_equal(var(&p, "USE_CUDA")->value, "0");
    static const char *const cuts[] = {"BUILD_TEST", "USE_DISTRIBUTED", "USE_MKLDNN",
                                       "USE_FBGEMM", "USE_NNPACK", "USE_QNNPACK", "USE_XNNPACK",
                                       "USE_FLASH_ATTENTION", "USE_MEM_EFF_ATTENTION"};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
        assert_string_equal(var(&p, cuts[i])->value, "0");
    assert_string_equal(var(&p, "CMAKE_C_COMPILER_LAUNCHER")->value, "ccache");
    assert_string_equal(var(&p, "CMAKE_CXX_COMPILER_LAUNCHER")->value, "ccache");
    assert_null(var(&p, "CMAKE_CUDA_COMPILER_LAUNCHER"));
    assert_string_equal(var(&p, "CMAKE_SHARED_LINKER_FLAGS")->value,
                        "-fuse-ld=lld -Wl,--gdb-index");
    assert_true(var(&p, "CMAKE_SHARED_LINKER_FLAGS")->append);
    assert_string_equal(var(&p, "CFLAGS")->value, "-ggnu-pubnames");
    assert_string_equal(var(&p, "CMAKE_EXPORT_COMPILE_COMMANDS")->value, "ON");
    assert_null(p.post_build[0]);
    assert_true(has_note(p.notes, "PyTorch 2.1 or newer"));
    for (size_t i = 0; i < p.n_vars; i++)
        assert_true(p.vars[i].why && *p.vars[i].why);
    tdb_profile_free(&p);

    /* --cuda --full --jobs 3: CUDA kept and cached, nothing cut. */
    o = (tdb_profile_options){.torch = TDB_TORCH_RELWITHDEBINFO, .cuda = 1, .full = 1, .jobs = 3};
    assert_int_equal(tdb_profile_build(&o, &m, &p, &err), 0);
    assert_string_equal(var(&p, "REL_WITH_DEB_INFO")->value, "1");
    assert_null(var(&p, "DEBUG"));
    assert_null(var(&p, "USE_CUDA"));
    assert_null(var(&p, "BUILD_TEST"));
    assert_string_equal(var(&p, "MAX_JOBS")->value, "3");
    assert_string_equal(var(&p, "CMAKE_CUDA_COMPILER_LAUNCHER")->value, "ccache");
    tdb_profile_free(&p);
}

static const tdb_profile_cost *cost(const tdb_profile *p, const char *what)
{
    for (size_t i = 0; i < p->n_costs; i++)
        if (!strcmp(p->costs[i].what, what))
            return &p->costs[i];
    return NULL;
}

static void test_torch_costs_say_where_numbers_come_from(void **state)
{
    (void)state;
    tdb_machine m = {.cores = 2, .mem_available = 20 * GIB};
    tdb_profile_options o = {.torch = TDB_TORCH_DEBUG};
    tdb_profile p;
    tdb_error err = {0};

    assert_int_equal(tdb_profile_build(&o, &m, &p, &err), 0);
    assert_int_equal(p.n_costs, 3);
    assert_non_null(strstr(cost(&p, "sources")->estimate, "git submodule update --init --recursive"));
    assert_non_null(strstr(cost(&p, "disk")->estimate, "tens of GB"));
    assert_non_null(strstr(cost(&p, "disk")->basis, "pytorch/pytorch#61261"));
    /* 13.3 core-hours over MAX_JOBS=2. */
    assert_non_null(strstr(cost(&p, "time")->estimate, "up to about 7 h of compiling at MAX_JOBS=2"));
    assert_non_null(strstr(cost(&p, "time")->basis, "conda-forge/pytorch-cpu-feedstock#52"));
    tdb_buf b = TDB_BUF_INIT;
    tdb_profile_format_sh(&p, &b);
    assert_non_null(strstr(tdb_buf_str(&b), "\n# disk: tens of GB"));
    tdb_buf_free(&b);
    json_t *j = tdb_profile_json(&p);
    assert_int_equal(json_array_size(json_object_get(j, "costs")), 3);
    json_decref(j);
    tdb_profile_free(&p);

    tmp_tree_write("/src/aten/Linear.cpp", "");
    char *files[] = {"aten/Linear.cpp", NULL};
    o = (tdb_profile_options){.torch = TDB_TORCH_SELECTIVE, .jobs = 40, .torch_src = tmp_tree,
                              .debinfo = files};
    char src[128];
    snprintf(src, sizeof(src), "%s/src", tmp_tree);
    o.torch_src = src;
    assert_int_equal(tdb_profile_build(&o, &m, &p, &err), 0);
    assert_non_null(strstr(cost(&p, "disk")->estimate, "about a release build's"));
    assert_non_null(strstr(cost(&p, "time")->estimate, "up to about 20 min"));
    tdb_profile_free(&p);

    /* Extensions cost nothing worth saying. */
    o = (tdb_profile_options){.setuptools = 1};
    assert_int_equal(tdb_profile_build(&o, &m, &p, &err), 0);
    assert_int_equal(p.n_costs, 0);
    tdb_profile_free(&p);
}

static void test_submodules_of_a_checkout(void **state)
{
    (void)state;
    tdb_profile_submodules sm;
    char dir[128];

    /* Not a checkout: nothing known, and the profile says what to run. */
    snprintf(dir, sizeof(dir), "%s/none", tmp_tree);
    tdb_profile_read_submodules(dir, &sm);
    assert_null(sm.checkout);
    tdb_profile_submodules_release(&sm);

    tmp_tree_write("/pt/setup.py", "");
    tmp_tree_write("/pt/.gitmodules",
                   "[submodule \"third_party/pybind11\"]\n"
                   "\tpath = third_party/pybind11\n"
                   "\turl = https://github.com/pybind/pybind11.git\n"
                   "[submodule \"android/libs/fbjni\"]\n"
                   "\tignore = dirty\n"
                   "\tpath=android/libs/fbjni  \n"
                   "[submodule \"third_party/fmt\"]\n"
                   "    path = third_party/fmt\n");
    tmp_tree_write("/pt/third_party/pybind11/CMakeLists.txt", "");
    tmp_tree_write("/pt/third_party/fmt/.keep", ""); /* any entry counts */
    snprintf(dir, sizeof(dir), "%s/pt", tmp_tree);
    tdb_profile_read_submodules(dir, &sm);
    assert_string_equal(sm.checkout, dir);
    assert_int_equal(sm.total, 3);
    assert_int_equal(sm.n_missing, 1);
    assert_string_equal(sm.missing[0], "android/libs/fbjni");
    tdb_profile_submodules_release(&sm);

    tdb_machine m = {.cores = 2, .mem_available = 20 * GIB};
    tdb_profile_options o = {.torch = TDB_TORCH_DEBUG, .torch_src = dir};
    tdb_profile p;
    tdb_error err = {0};
    assert_int_equal(tdb_profile_build(&o, &m, &p, &err), 0);
    assert_true(has_note(p.notes, "1 of the 3 submodules of"));
    assert_true(has_note(p.notes, "(android/libs/fbjni): the build fails without them; run "
                                  "there first: git submodule sync && git submodule update "
                                  "--init --recursive"));
    assert_non_null(strstr(p.notes[0], "submodules")); /* said first */
    tdb_profile_free(&p);
}

static void test_machine_without_ccache_or_index_linker(void **state)
{
    (void)state;
    tdb_machine m = {.cores = 2, .mem_available = 3 * GIB, .gdb_add_index = 1};
    tdb_profile_options o = {.torch = TDB_TORCH_DEBUG};
    tdb_profile p;
    assert_int_equal(tdb_profile_build(&o, &m, &p, NULL), 0);
    assert_string_equal(var(&p, "MAX_JOBS")->value, "1");
    assert_null(var(&p, "CMAKE_C_COMPILER_LAUNCHER"));
    assert_null(var(&p, "CMAKE_SHARED_LINKER_FLAGS"));
    assert_null(var(&p, "CFLAGS"));
    assert_true(has_note(p.notes, "apt-get install ccache"));
    assert_true(has_note(p.notes, "apt-get install lld"));
    assert_non_null(p.post_build[0]);
    assert_non_null(strstr(p.post_build[0], "gdb-add-index"));
    tdb_profile_free(&p);

    o = (tdb_profile_options){.setuptools = 1};
    assert_int_equal(tdb_profile_build(&o, &m, &p, NULL), 0);
    assert_string_equal(p.kind, "setuptools");
    assert_string_equal(var(&p, "CFLAGS")->value, "-O0 -g3 -fno-omit-frame-pointer");
    assert_null(var(&p, "LDFLAGS"));
    assert_non_null(strstr(p.post_build[0], "gdb-add-index"));
    tdb_profile_free(&p);

    m.linker = "mold";
    assert_int_equal(tdb_profile_build(&o, &m, &p, NULL), 0);
    assert_string_equal(var(&p, "CFLAGS")->value,
                        "-O0 -g3 -fno-omit-frame-pointer -ggnu-pubnames");
    assert_string_equal(var(&p, "CXXFLAGS")->value, var(&p, "CFLAGS")->value);
    assert_string_equal(var(&p, "LDFLAGS")->value, "-fuse-ld=mold -Wl,--gdb-index");
    assert_null(p.post_build[0]);
    tdb_profile_free(&p);
}

static void test_selective_files_must_exist(void **state)
{
    (void)state;
    tdb_machine m = {.cores = 4, .mem_available = 16 * GIB, .linker = "lld"};
    tmp_tree_write("/pytorch/aten/src/ATen/native/Linear.cpp", "// x\n");
    tmp_tree_write("/pytorch/torch/csrc/Module.cpp", "// y\n");
    char *src = tdb_xasprintf("%s/pytorch", tmp_tree);
    char *abs = tdb_xasprintf("%s/torch/csrc/Module.cpp", src);
    char *files[] = {"aten/src/ATen/native/Linear.cpp", "./torch/csrc/Module.cpp", abs, NULL};
    tdb_profile_options o = {.torch = TDB_TORCH_SELECTIVE, .torch_src = src, .debinfo = files};
    tdb_profile p;
    tdb_error err = {0};

    assert_int_equal(tdb_profile_build(&o, &m, &p, &err), 0);
    assert_string_equal(p.kind, "torch-selective");
    assert_string_equal(var(&p, "USE_CUSTOM_DEBINFO")->value,
                        "aten/src/ATen/native/Linear.cpp;torch/csrc/Module.cpp;"
                        "torch/csrc/Module.cpp");
    assert_null(var(&p, "DEBUG"));
    tdb_profile_free(&p);

    char *missing[] = {"aten/src/ATen/native/Nope.cpp", NULL};
    o.debinfo = missing;
    assert_int_equal(tdb_profile_build(&o, &m, &p, &err), -1);
    assert_int_equal(err.exit_code, TDB_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "cannot use --debinfo 'aten/src/ATen/native/Nope.cpp': "
                                    "no such file under"));

    char *outside[] = {"/etc/hostname", NULL};
    o.debinfo = outside;
    tdb_error_clear(&err);
    assert_int_equal(tdb_profile_build(&o, &m, &p, &err), -1);
    assert_non_null(strstr(err.msg, "not a file inside the PyTorch checkout"));

    o.torch_src = "/nonexistent-pytorch";
    o.debinfo = files;
    tdb_error_clear(&err);
    assert_int_equal(tdb_profile_build(&o, &m, &p, &err), -1);
    assert_non_null(strstr(err.msg, "cannot use --torch-src '/nonexistent-pytorch'"));
    free(abs);
    free(src);
}

static void test_shell_and_json_forms(void **state)
{
    (void)state;
    tdb_machine m = {.cores = 4, .mem_available = 16 * GIB, .linker = "lld"};
    tdb_profile_options o = {.setuptools = 1};
    tdb_profile p;
    assert_int_equal(tdb_profile_build(&o, &m, &p, NULL), 0);
    tdb_buf b = TDB_BUF_INIT;
    tdb_profile_format_sh(&p, &b);
    const char *s = tdb_buf_str(&b);
    assert_non_null(strstr(s, "export CFLAGS=\"${CFLAGS:+$CFLAGS }\"'-O0 -g3 "
                              "-fno-omit-frame-pointer -ggnu-pubnames'  # "));
    /* every line is a comment or an export with one */
    char *copy = tdb_xstrdup(s), *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        assert_true(line[0] == '#' || (strncmp(line, "export ", 7) == 0 && strstr(line, "  # ")));
    free(copy);
    tdb_buf_free(&b);

    json_t *j = tdb_profile_json(&p);
    assert_string_equal(json_string_value(json_object_get(j, "kind")), "setuptools");
    json_t *v0 = json_array_get(json_object_get(j, "variables"), 0);
    assert_string_equal(json_string_value(json_object_get(v0, "name")), "CFLAGS");
    assert_true(json_is_true(json_object_get(v0, "append")));
    json_decref(j);
    tdb_profile_free(&p);
}

static void test_machine_probe_reads_cgroup_limits(void **state)
{
    (void)state;
    tdb_machine m;
    char *root = tdb_xasprintf("%s/v1", tmp_tree);
    tmp_tree_write("/v1/proc/meminfo", "MemTotal: 33554432 kB\nMemAvailable: 10485760 kB\n");
    tmp_tree_write("/v1/proc/self/cgroup", "4:memory:/job\n0::/\n");
    tmp_tree_write("/v1/sys/fs/cgroup/memory/job/memory.limit_in_bytes", "3221225472\n");
    tmp_tree_write("/v1/sys/fs/cgroup/memory/job/memory.usage_in_bytes", "1073741824\n");
    tdb_machine_probe(root, &m);
    assert_true(m.mem_available == 2 * GIB);
    assert_true(m.cores >= 1);
    tdb_machine_free(&m);
    free(root);

    /* cgroup v1's "no limit" is a huge number: MemAvailable stands. */
    root = tdb_xasprintf("%s/v1b", tmp_tree);
    tmp_tree_write("/v1b/proc/meminfo", "MemAvailable: 10485760 kB\n");
    tmp_tree_write("/v1b/proc/self/cgroup", "4:memory:/job\n");
    tmp_tree_write("/v1b/sys/fs/cgroup/memory/job/memory.limit_in_bytes", "9223372036854771712\n");
    tmp_tree_write("/v1b/sys/fs/cgroup/memory/job/memory.usage_in_bytes", "1073741824\n");
    tdb_machine_probe(root, &m);
    assert_true(m.mem_available == 10 * GIB);
    tdb_machine_free(&m);
    free(root);

    root = tdb_xasprintf("%s/v2", tmp_tree);
    tmp_tree_write("/v2/proc/meminfo", "MemAvailable: 10485760 kB\n");
    tmp_tree_write("/v2/proc/self/cgroup", "0::/user.slice/build\n");
    tmp_tree_write("/v2/sys/fs/cgroup/user.slice/build/memory.max", "5368709120\n");
    tmp_tree_write("/v2/sys/fs/cgroup/user.slice/build/memory.current", "1073741824\n");
    tmp_tree_write("/v2/sys/fs/cgroup/user.slice/build/cpu.max", "100000 100000\n");
    tdb_machine_probe(root, &m);
    assert_true(m.mem_available == 4 * GIB);
    assert_int_equal(m.cores, 1);
    tdb_machine_free(&m);
    free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_jobs),
        cmocka_unit_test(test_torch_debug_profile),
        cmocka_unit_test(test_torch_costs_say_where_numbers_come_from),
        cmocka_unit_test(test_submodules_of_a_checkout),
        cmocka_unit_test(test_machine_without_ccache_or_index_linker),
        cmocka_unit_test(test_selective_files_must_exist),
        cmocka_unit_test(test_shell_and_json_forms),
        cmocka_unit_test(test_machine_probe_reads_cgroup_limits),
    };
    return cmocka_run_group_tests(tests, tmp_tree_setup, tmp_tree_teardown);
}

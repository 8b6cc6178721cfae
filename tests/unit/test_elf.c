/*
 * test_elf.c: the libbfd layer on the fixtures in tests/fixtures/elf (see
 * make-fixtures.py there): bad files give clear errors, versioned dynamic
 * symbols resolve to the right version, symbols have their sizes and this
 * test's own load bias is found, reports read DWARF through dwz files, and
 * debug files are found by build-id under a debug directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "native/elf.h"
#include "process/procfs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef FIXTURES
#define FIXTURES "tests/fixtures/elf"
#endif

static void expect_open_error(const char *name, const char *phrase)
{
    char *path = tdb_xasprintf("%s/%s", FIXTURES, name);
    tdb_error err = {0};
    tdb_elf *e = tdb_elf_open(path, &err);
    if (e)
        fail_msg("%s opened", path);
    assert_true(err.set);
    if (!strstr(err.msg, phrase))
        fail_msg("%s: '%s' lacks '%s'", path, err.msg, phrase);
    char *head = tdb_xasprintf("cannot inspect '%s': ", path);
    assert_true(strncmp(err.msg, head, strlen(head)) == 0);
    /* The report API fails the same way. */
    tdb_error err2 = {0};
    assert_null(tdb_elf_inspect(path, NULL, &err2));
    assert_string_equal(err.msg, err2.msg);
    free(head);
    free(path);
}

static void test_bad_files_are_clear_errors(void **state)
{
    (void)state;
    expect_open_error("not-elf.txt", "not an ELF object (file format not recognized)");
    expect_open_error("empty", "not an ELF object (the file is empty)");
    expect_open_error("bad-magic.elf", "truncated or corrupt");
    expect_open_error("truncated-header.so", "truncated: 40 bytes, shorter than an ELF header");
    expect_open_error("truncated.so", "lie past the end of the file (2000 bytes)");
    expect_open_error("corrupt-shoff.so", "section headers");
    expect_open_error("no-such-file", "No such file or directory");
    expect_open_error("", "it is a directory");
}

static tdb_elf *open_fixture(const char *name)
{
    char *path = tdb_xasprintf("%s/%s", FIXTURES, name);
    tdb_error err = {0};
    tdb_elf *e = tdb_elf_open(path, &err);
    if (!e)
        fail_msg("%s", err.msg);
    free(path);
    return e;
}

static void test_versioned_symbols(void **state)
{
    (void)state;
    tdb_elf *e = open_fixture("libversioned.so");
    tdb_error err = {0};
    uint64_t plain = 0, v1 = 0, v2 = 0, v2b = 0, pyinit = 0;

    assert_int_equal(tdb_elf_get_kind(e), TDB_ELF_SHARED);
    assert_string_equal(tdb_elf_format(e), "elf64-x86-64");
    assert_int_equal(tdb_elf_has_symtab(e), 1);
    char *id = tdb_elf_build_id(e);
    assert_non_null(id);
    assert_int_equal(strlen(id), 40); /* --build-id=sha1 */
    free(id);
    assert_null(tdb_elf_debuglink(e, NULL));

    assert_int_equal(tdb_elf_find_dynsym(e, "answer", &plain, &err), 0);
    assert_int_equal(tdb_elf_find_dynsym(e, "answer@V1", &v1, &err), 0);
    assert_int_equal(tdb_elf_find_dynsym(e, "answer@V2", &v2, &err), 0);
    assert_int_equal(tdb_elf_find_dynsym(e, "answer@@V2", &v2b, &err), 0);
    assert_true(v1 != 0 && v2 != 0 && v1 != v2);
    assert_true(plain == v2); /* without a version: the default one */
    assert_true(v2b == v2);
    assert_int_equal(tdb_elf_find_dynsym(e, "PyInit_fake", &pyinit, &err), 0);
    assert_true(pyinit != 0);

    /* Local and missing symbols are not exports. */
    assert_int_equal(tdb_elf_find_dynsym(e, "unused_local", &plain, &err), -1);
    assert_int_equal(err.exit_code, TDB_EXIT_FAIL);
    assert_non_null(strstr(err.msg, "does not export 'unused_local'"));
    tdb_error_clear(&err);
    assert_int_equal(tdb_elf_find_dynsym(e, "answer@V3", &plain, &err), -1);

    size_t n = 0;
    char **v = tdb_elf_exports(e, "PyInit_", &n, &err);
    assert_non_null(v);
    assert_int_equal(n, 1);
    assert_string_equal(v[0], "PyInit_fake");
    assert_null(v[1]);
    tdb_strv_free(v);
    /* answer is listed once although libbfd lists it per version. */
    v = tdb_elf_exports(e, "answer", &n, &err);
    assert_int_equal(n, 1);
    tdb_strv_free(v);
    assert_true(tdb_elf_dynsym_count(e, &err) >= 4);
    tdb_elf_free(e);

    uint64_t again = 0;
    char *path = tdb_xasprintf("%s/libversioned.so", FIXTURES);
    assert_int_equal(tdb_elf_dynsym_value(path, "PyInit_fake", &again, &err), 0);
    assert_true(again == pyinit);
    tdb_error_clear(&err);
    assert_int_equal(tdb_elf_dynsym_value("/nonexistent", "x", &again, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent"));
    free(path);
}

static void test_dynamic_section(void **state)
{
    (void)state;
    tdb_elf_dynamic d;
    tdb_error err = {0};

    /* Linked -nostdlib: a dynamic section that needs nothing. */
    tdb_elf *e = open_fixture("libversioned.so");
    assert_int_equal(tdb_elf_read_dynamic(e, &d, &err), 0);
    assert_int_equal(d.n_needed, 0);
    assert_null(d.needed[0]);
    assert_null(d.soname);
    assert_null(d.interp); /* a library has no program interpreter */
    tdb_elf_dynamic_release(&d);
    tdb_elf_free(e);

    /* This test binary: the interpreter, and the libraries it links. */
    e = tdb_elf_open_tables("/proc/self/exe", &err);
    assert_non_null(e);
    assert_int_equal(tdb_elf_read_dynamic(e, &d, &err), 0);
    assert_non_null(d.interp);
    assert_true(strstr(d.interp, "ld-linux") != NULL);
    int libc = 0, jansson = 0;
    for (size_t i = 0; i < d.n_needed; i++) {
        libc |= !strcmp(d.needed[i], "libc.so.6");
        jansson |= !strncmp(d.needed[i], "libjansson.so", 13);
    }
    assert_true(libc && jansson);
    assert_null(d.soname);
    tdb_elf_dynamic_release(&d);
    tdb_elf_free(e);

    /* dwz-one, a library linked with libc. */
    e = open_fixture("dwz-one");
    assert_int_equal(tdb_elf_read_dynamic(e, &d, &err), 0);
    assert_int_equal(d.n_needed, 1);
    assert_string_equal(d.needed[0], "libc.so.6");
    tdb_elf_dynamic_release(&d);
    tdb_elf_free(e);
}

static void test_symbols_with_sizes(void **state)
{
    (void)state;
    tdb_elf *e = open_fixture("libversioned.so");
    tdb_error err = {0};
    uint64_t value = 0, size = 0, exported = 0;

    /* An export: the value libbfd gives, and its size. */
    assert_int_equal(tdb_elf_find_symbol(e, "PyInit_fake", &value, &size, &err), 0);
    assert_int_equal(tdb_elf_find_dynsym(e, "PyInit_fake", &exported, &err), 0);
    assert_true(value == exported);
    assert_true(size > 0);
    /* Not exported, but in .symtab: found there. */
    assert_int_equal(tdb_elf_find_symbol(e, "unused_local", &value, &size, &err), 0);
    assert_true(value != 0);
    assert_int_equal(size, sizeof(int));
    assert_int_equal(tdb_elf_find_symbol(e, "no_such_symbol", &value, NULL, &err), -1);
    assert_int_equal(err.exit_code, TDB_EXIT_FAIL);
    assert_non_null(strstr(err.msg, "has no symbol 'no_such_symbol'"));
    tdb_elf_free(e);

    /* The same without libbfd. */
    char *path = tdb_xasprintf("%s/libversioned.so", FIXTURES);
    e = tdb_elf_open_tables(path, &err);
    assert_non_null(e);
    assert_int_equal(tdb_elf_find_symbol(e, "unused_local", &value, &size, &err), 0);
    assert_int_equal(size, sizeof(int));
    tdb_elf_free(e);
    free(path);
    const char *bad[] = {"not-elf.txt", "empty", "truncated-header.so", "no-such-file", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        path = tdb_xasprintf("%s/%s", FIXTURES, bad[i]);
        tdb_error_clear(&err);
        e = tdb_elf_open_tables(path, &err);
        if (e) { /* a header cut short opens, and answers nothing */
            assert_int_equal(tdb_elf_find_symbol(e, "answer", &value, NULL, &err), -1);
            assert_int_not_equal(err.exit_code, TDB_EXIT_FAIL);
            tdb_elf_free(e);
        }
        assert_true(err.set);
        free(path);
    }
}

/* What a file's own tables say does not depend on where in the file they
 * lie: odd-offsets.so is libversioned.so with its program headers, section
 * headers, .symtab and dynamic section at odd offsets (make-fixtures.py).
 * Read as structs cast from the mapping they were misaligned (UBSan, which
 * 'make asan' runs this under); read with memcpy they give the same answers
 * as the original. */
static void test_tables_at_odd_offsets(void **state)
{
    (void)state;
    static const char *const names[] = {"libversioned.so", "odd-offsets.so"};
    uint64_t value[2][2] = {{0}}, size[2][2] = {{0}}, bias[2] = {0}, *fns[2] = {NULL};
    size_t n_fns[2] = {0};
    tdb_elf_dynamic d[2];
    for (int i = 0; i < 2; i++) {
        char *path = tdb_xasprintf("%s/%s", FIXTURES, names[i]);
        tdb_error err = {0};
        for (int mode = 0; mode < 2; mode++) {
            tdb_elf *e = mode ? tdb_elf_open_tables(path, &err) : tdb_elf_open(path, &err);
            if (!e)
                fail_msg("%s: %s", path, err.msg);
            assert_int_equal(tdb_elf_find_symbol(e, "unused_local", &value[i][mode],
                                                 &size[i][mode], &err), 0);
            if (mode == 0) {
                assert_int_equal(tdb_elf_functions_named(e, "answer", &fns[i], &n_fns[i], &err), 0);
                assert_int_equal(tdb_elf_read_dynamic(e, &d[i], &err), 0);
                assert_int_equal(tdb_elf_load_bias(e, 0x7f0000000000ULL, 0, &bias[i], &err), 0);
            }
            tdb_elf_free(e);
        }
        free(path);
    }
    assert_true(value[0][0] != 0 && size[0][0] != 0);
    for (int mode = 0; mode < 2; mode++) {
        assert_true(value[1][mode] == value[0][0]);
        assert_true(size[1][mode] == size[0][0]);
    }
    assert_int_equal(n_fns[1], n_fns[0]);
    assert_true(n_fns[0] >= 1);
    for (size_t k = 0; k < n_fns[0]; k++)
        assert_true(fns[1][k] == fns[0][k]);
    assert_int_equal(d[1].n_needed, d[0].n_needed);
    assert_true((d[1].soname == NULL) == (d[0].soname == NULL));
    assert_true(bias[1] == bias[0]);
    for (int i = 0; i < 2; i++) {
        free(fns[i]);
        tdb_elf_dynamic_release(&d[i]);
    }
}

static void test_load_bias_of_this_test(void **state)
{
    (void)state;
    tdb_maps maps = {NULL, 0, NULL};
    tdb_error err = {0};
    char *self = realpath("/proc/self/exe", NULL);
    tdb_elf *e = tdb_elf_open_tables(self, &err);
    uint64_t value = 0, bias = 1;

    assert_non_null(e);
    assert_int_equal(tdb_maps_read(getpid(), &maps, &err), 0);
    /* This very function, through its symbol and the mapping of the file. */
    assert_int_equal(tdb_elf_find_symbol(e, "test_load_bias_of_this_test", &value, NULL, &err),
                     0);
    const tdb_map *m = tdb_maps_find(&maps, (uint64_t)(uintptr_t)&test_load_bias_of_this_test);
    assert_non_null(m);
    assert_string_equal(m->path, self);
    assert_int_equal(tdb_elf_load_bias(e, m->start, m->offset, &bias, &err), 0);
    assert_true(value + bias == (uint64_t)(uintptr_t)&test_load_bias_of_this_test);
    /* An offset past every segment. */
    assert_int_equal(tdb_elf_load_bias(e, m->start, 1ULL << 40, &bias, &err), -1);
    assert_non_null(strstr(err.msg, "no loadable segment"));
    tdb_maps_free(&maps);
    tdb_elf_free(e);
    free(self);
}

static tdb_elf_report *inspect_fixture(const char *name, const char *debug_dirs)
{
    char *path = tdb_xasprintf("%s/%s", FIXTURES, name);
    tdb_elf_options opt = {.debug_dirs = debug_dirs};
    tdb_error err = {0};
    tdb_elf_report *r = tdb_elf_inspect(path, &opt, &err);
    if (!r)
        fail_msg("%s", err.msg);
    free(path);
    return r;
}

static void test_report_of_a_debug_build(void **state)
{
    (void)state;
    tdb_elf_report *r = inspect_fixture("libversioned.so", "/nonexistent-debug-dir");
    tdb_elf_verdict v;

    assert_int_equal(r->n_pyinit, 1);
    assert_string_equal(r->dwarf_in, "object");
    assert_true(r->debug_info.present && r->debug_line.present);
    assert_null(r->debug_info.compression);
    assert_int_equal(r->units, 1);
    assert_int_equal(r->n_opt[TDB_OPT_NONE], 1);
    assert_int_equal(r->n_producers, 1);
    assert_non_null(strstr(r->producers[0].producer, "-O0"));
    assert_true(r->versions & (1u << 5));
    assert_null(r->dwarf_error);
    assert_null(r->index_section);
    /* The build-id path was tried under the given debug directory only. */
    assert_int_equal(r->n_searched, 1);
    assert_true(strncmp(r->searched[0], "/nonexistent-debug-dir/.build-id/", 33) == 0);
    tdb_elf_get_verdict(r, &v);
    assert_true(v.dwarf);
    assert_int_equal(v.opt, TDB_OPT_NONE);
    assert_false(v.indexed);
    assert_false(v.debuggable);

    json_t *j = tdb_elf_report_json(r);
    assert_string_equal(json_string_value(json_object_get(j, "kind")), "shared object");
    assert_true(json_is_false(json_object_get(j, "stripped")));
    json_t *dw = json_object_get(j, "dwarf");
    assert_int_equal(json_integer_value(json_object_get(dw, "unoptimised")), 1);
    assert_true(json_is_null(json_object_get(j, "gdb_index")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "verdict"),
                                                          "optimisation")), "unoptimised");
    json_decref(j);
    tdb_elf_report_free(r);
}

static void test_damaged_dwarf_is_reported_not_fatal(void **state)
{
    (void)state;
    tdb_elf_report *r = inspect_fixture("corrupt-dwarf.so", NULL);
    assert_non_null(r->dwarf_error);
    assert_non_null(strstr(r->dwarf_error, "reserved unit length 0xfffffff5"));
    assert_int_equal(r->units, 0);
    assert_int_equal(r->n_pyinit, 1); /* the rest of the report stands */
    tdb_elf_report_free(r);

    r = inspect_fixture("corrupt-abbrev.so", NULL);
    assert_non_null(r->dwarf_error);
    assert_non_null(strstr(r->dwarf_error, "not found in .debug_abbrev"));
    tdb_elf_report_free(r);
}

static char *make_temp_dir(void)
{
    char tmpl[] = "/tmp/tdebug-test-elf-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return tdb_xstrdup(d);
}

static void copy_file(const char *from, const char *to)
{
    size_t n = 0;
    char *data = tdb_read_file(from, &n, NULL);
    assert_non_null(data);
    FILE *f = fopen(to, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
    free(data);
}

static void remove_tree(const char *dir)
{
    char *cmd = tdb_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

static void test_dwz_strings_come_from_the_alt_file(void **state)
{
    (void)state;
    tdb_elf_report *r = inspect_fixture("dwz-one", NULL);
    assert_string_equal(r->altlink, "dwz-common.debug");
    assert_non_null(r->alt_file);
    assert_non_null(strstr(r->alt_file, "/dwz-common.debug"));
    assert_int_equal(r->units, 1);
    assert_int_equal(r->n_opt[TDB_OPT_NONE], 1);
    tdb_elf_report_free(r);

    /* Without the dwz file the producer is unknown, and said so. */
    char *dir = make_temp_dir();
    char *from = tdb_xasprintf("%s/dwz-one", FIXTURES), *to = tdb_xasprintf("%s/dwz-one", dir);
    copy_file(from, to);
    tdb_error err = {0};
    r = tdb_elf_inspect(to, NULL, &err);
    assert_non_null(r);
    assert_null(r->alt_file);
    assert_int_equal(r->n_opt[TDB_OPT_UNKNOWN], 1);
    tdb_elf_report_free(r);
    remove_tree(dir);
    free(from);
    free(to);
    free(dir);
}

static void test_debug_file_by_build_id(void **state)
{
    (void)state;
    char *dir = make_temp_dir();
    tdb_elf *e = open_fixture("libversioned.so");
    char *id = tdb_elf_build_id(e);
    tdb_elf_free(e);
    char *sub = tdb_xasprintf("%s/.build-id", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    char *sub2 = tdb_xasprintf("%s/%.2s", sub, id);
    assert_int_equal(mkdir(sub2, 0755), 0);
    char *debug = tdb_xasprintf("%s/%s.debug", sub2, id + 2);

    /* A file of another build under the right name is rejected... */
    char *other = tdb_xasprintf("%s/dwz-one", FIXTURES);
    copy_file(other, debug);
    char *dirs = tdb_xasprintf("/nonexistent:%s", dir);
    tdb_elf_report *r = inspect_fixture("libversioned.so", dirs);
    assert_null(r->debug_file);
    assert_int_equal(r->n_searched, 2);
    assert_int_equal(r->n_rejected, 1);
    assert_non_null(strstr(r->rejected[0], "is not the object's"));
    tdb_elf_report_free(r);

    /* ...the right one is found. */
    char *same = tdb_xasprintf("%s/libversioned.so", FIXTURES);
    copy_file(same, debug);
    r = inspect_fixture("libversioned.so", dirs);
    assert_non_null(r->debug_file);
    assert_string_equal(r->debug_file, debug);
    assert_string_equal(r->debug_file_via, "build-id");
    assert_int_equal(r->n_rejected, 0);
    tdb_elf_report_free(r);

    remove_tree(dir);
    free(same);
    free(dirs);
    free(other);
    free(debug);
    free(sub2);
    free(sub);
    free(id);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_files_are_clear_errors),
        cmocka_unit_test(test_versioned_symbols),
        cmocka_unit_test(test_symbols_with_sizes),
        cmocka_unit_test(test_dynamic_section),
        cmocka_unit_test(test_load_bias_of_this_test),
        cmocka_unit_test(test_tables_at_odd_offsets),
        cmocka_unit_test(test_report_of_a_debug_build),
        cmocka_unit_test(test_damaged_dwarf_is_reported_not_fatal),
        cmocka_unit_test(test_dwz_strings_come_from_the_alt_file),
        cmocka_unit_test(test_debug_file_by_build_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

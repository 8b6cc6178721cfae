/*
 * fuzz_elf.c: the ELF reader (src/native/elf*.c, with native/dwarf.c)
 * against arbitrary bytes taken as an object file: what 'tdebug inspect'
 * and 'profile --check' do with one.
 *
 * FUZZ_SOURCES: src/native/elf.c src/native/elf_tables.c src/native/elf_report.c src/native/dwarf.c src/base/common.c
 * FUZZ_LIBS: -lbfd
 * FUZZ_SEEDS: tests/fixtures/elf *
 *
 * The input is written to a memory file and opened by its /proc/self/fd
 * path, as a file on disk is.  What must hold for any input:
 *  - opening fails with a message naming the file, or gives an object
 *    whose every answer is well formed: a build-id of hex digit pairs,
 *    export names that start with the prefix asked, dynamic-section names
 *    that are strings of the file, a report that serialises to JSON;
 *  - the file's own tables read the same through either way of opening it
 *    (libbfd's, and the mapping alone): the same symbol, value and size,
 *    the same load bias;
 *  - nothing reads outside the file or misaligned (ASan, UBSan).
 */
#include "fuzz.h"

#include "native/elf.h"

#include <ctype.h>
#include <string.h>
#include <unistd.h>

/* What the mapping-only reader and libbfd's reader must agree on. */
typedef struct tables {
    int found;
    uint64_t value, size;
    int have_bias;
    uint64_t bias;
} tables;

static void read_tables(tdb_elf *e, tables *t)
{
    tdb_error err = {0};
    memset(t, 0, sizeof(*t));
    t->found = tdb_elf_find_symbol(e, "answer", &t->value, &t->size, &err) == 0;
    TDB_FUZZ_CHECK(t->found || err.set, "a symbol not found without a reason");
    tdb_error_clear(&err);
    t->have_bias = tdb_elf_load_bias(e, 0x7f0000000000ULL, 0, &t->bias, &err) == 0;
    TDB_FUZZ_CHECK(t->have_bias || err.set, "no load bias without a reason");
    uint64_t *v = NULL;
    size_t n = 0;
    tdb_error_clear(&err);
    if (tdb_elf_functions_named(e, "at::native::add", &v, &n, &err) == 0)
        free(v);
}

static void check_dynamic(tdb_elf *e, size_t size)
{
    tdb_elf_dynamic d;
    tdb_error err = {0};
    if (tdb_elf_read_dynamic(e, &d, &err) < 0) {
        TDB_FUZZ_CHECK(err.set && err.msg[0], "a dynamic section refused without a reason");
        return;
    }
    TDB_FUZZ_CHECK(d.needed && !d.needed[d.n_needed], "the needed list is not NULL-terminated");
    for (size_t i = 0; i < d.n_needed; i++)
        TDB_FUZZ_CHECK(strlen(d.needed[i]) < size, "a needed name longer than the file");
    tdb_elf_dynamic_release(&d);
}

static void check_bfd(tdb_elf *e)
{
    tdb_error err = {0};
    char *id = tdb_elf_build_id(e);
    if (id) {
        size_t n = strlen(id);
        TDB_FUZZ_CHECK(n % 2 == 0, "a build-id of an odd number of hex digits");
        for (size_t i = 0; i < n; i++)
            TDB_FUZZ_CHECK(isxdigit((unsigned char)id[i]) && !isupper((unsigned char)id[i]),
                           "a build-id that is not lower-case hex");
        free(id);
    }
    uint32_t crc;
    free(tdb_elf_debuglink(e, &crc));
    tdb_elf_has_symtab(e);
    tdb_elf_kind_name(tdb_elf_get_kind(e));
    size_t n = 0;
    char **names = tdb_elf_exports(e, "PyInit_", &n, &err);
    for (size_t i = 0; names && i < n; i++)
        TDB_FUZZ_CHECK(!strncmp(names[i], "PyInit_", 7), "an export without the prefix asked");
    tdb_strv_free(names);
    uint64_t value;
    tdb_error_clear(&err);
    tdb_elf_find_dynsym(e, "answer", &value, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = tdb_fuzz_file(data, size);

    tdb_error err = {0};
    tables by_map = {0}, by_bfd = {0};
    tdb_elf *e = tdb_elf_open_tables(path, &err);
    if (e) {
        read_tables(e, &by_map);
        tdb_elf_free(e);
    } else {
        TDB_FUZZ_CHECK(strstr(err.msg, path) != NULL, "an open refused without naming the file");
    }
    tdb_error_clear(&err);
    e = tdb_elf_open(path, &err);
    if (!e) {
        TDB_FUZZ_CHECK(strstr(err.msg, path) != NULL, "an open refused without naming the file");
        return 0;
    }
    if (tdb_elf_get_kind(e) != TDB_ELF_OTHER) {
        read_tables(e, &by_bfd);
        TDB_FUZZ_CHECK(by_map.found == by_bfd.found && by_map.value == by_bfd.value &&
                           by_map.size == by_bfd.size,
                       "the two ways of opening read another symbol");
        TDB_FUZZ_CHECK(by_map.have_bias == by_bfd.have_bias && by_map.bias == by_bfd.bias,
                       "the two ways of opening read another load bias");
    }
    check_dynamic(e, size);
    check_bfd(e);
    tdb_elf_free(e);

    /* The whole report, as 'tdebug inspect' makes it (no debug directory:
     * nothing is looked for outside the input). */
    tdb_elf_options opt = {.debug_dirs = "/nonexistent-fuzz-debug-dir"};
    tdb_error_clear(&err);
    tdb_elf_report *r = tdb_elf_inspect(path, &opt, &err);
    if (r) {
        tdb_elf_verdict v;
        tdb_elf_get_verdict(r, &v);
        json_t *j = tdb_elf_report_json(r);
        char *s = json_dumps(j, JSON_COMPACT);
        TDB_FUZZ_CHECK(s != NULL, "a report that does not serialise");
        free(s);
        json_decref(j);
        tdb_elf_report_free(r);
    }
    return 0;
}

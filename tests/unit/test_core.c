/*
 * test_core.c: the core-file reader (native/core.c) and unwinding a core
 * (native/unwind.c) on tests/fixtures/core/tiny.core (see make-core.py
 * there), on variants of it made here, and on files that are no core.
 *
 * Run under 'make asan' too, where UBSan stops at the first report and
 * LeakSanitizer fails the test for any byte left allocated.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "native/core.h"
#include "native/unwind.h"
#include "tmp_tree.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TINY "tests/fixtures/core/tiny.core"
#define PT_LOAD_TYPE 1

/* A test that would block (a FIFO opened for reading waits for a writer)
 * fails instead, with the reason. */
static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_core: blocked for 60 s (opening a FIFO?)\n";
    if (write(2, msg, sizeof(msg) - 1) < 0)
        _exit(2);
    _exit(1);
}

static tdb_core *open_ok(const char *path)
{
    tdb_core *c = NULL;
    tdb_error err = {0};
    if (tdb_core_open(path, NULL, &c, &err) < 0)
        fail_msg("%s: %s", path, err.msg);
    return c;
}

static void test_tiny_core_is_read_and_unwound(void **state)
{
    (void)state;
    tdb_core *c = open_ok(TINY);
    assert_int_equal(tdb_core_n_threads(c), 1);
    const tdb_core_thread *t = tdb_core_thread_at(c, 0);
    assert_int_equal(t->tid, tdb_core_pid(c));
    assert_int_equal(tdb_core_signal(c), 0); /* gcore, not a crash */
    assert_non_null(strstr(tdb_core_cmdline(c), "/tiny"));
    assert_true(tdb_core_maps(c)->n >= 1);
    /* The executable is gone: said, and the core is read alone. */
    char *const *problems = tdb_core_problems(c);
    assert_non_null(problems);
    assert_non_null(strstr(problems[0], "is gone since the core was written"));

    /* Its stack, from the core's own segment. */
    tdb_mem m;
    uint64_t word, rsp = t->regs[19]; /* user_regs_struct.rsp */
    tdb_core_mem(c, &m);
    assert_int_equal(tdb_mem_read_full(&m, rsp, &word, sizeof(word)), 0);
    tdb_mem_close(&m);

    /* Unwound from the core's registers and memory (frame pointers: no
     * file has CFI here); twice, so a leak per unwind would show. */
    tdb_error err = {0};
    tdb_capture *cap = tdb_capture_from_core(c, &err);
    if (!cap)
        fail_msg("%s", err.msg);
    for (int round = 0; round < 2; round++) {
        tdb_native_frame *f = NULL;
        size_t n = 0;
        char *note = NULL;
        if (tdb_capture_unwind(cap, t->tid, 64, NULL, &f, &n, &note, &err) < 0)
            fail_msg("%s", err.msg);
        assert_true(n >= 3);
        assert_true(f[0].pc == t->regs[16]); /* rip */
        tdb_native_frames_free(f, n);
        free(note);
    }
    tdb_capture_free(cap);
    tdb_core_free(c);
}

/* tiny.core with each PT_LOAD turned into PT_NULL, at tmp_tree/NAME. */
static char *without_segments(const char *name)
{
    char *path = tdb_xasprintf("%s/%s", tmp_tree, name);
    size_t len = 0;
    char *data = tdb_read_file(TINY, &len, NULL);
    assert_non_null(data);
    uint64_t phoff;
    uint16_t phentsize, phnum;
    memcpy(&phoff, data + 0x20, 8);
    memcpy(&phentsize, data + 0x36, 2);
    memcpy(&phnum, data + 0x38, 2);
    for (uint16_t i = 0; i < phnum; i++) {
        uint32_t type;
        memcpy(&type, data + phoff + (uint64_t)i * phentsize, 4);
        if (type == PT_LOAD_TYPE) {
            type = 0;
            memcpy(data + phoff + (uint64_t)i * phentsize, &type, 4);
        }
    }
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
    free(data);
    return path;
}

/* A core with no memory at all (every segment dropped): its threads are
 * still read, reading memory fails cleanly, and nothing sorts a NULL
 * array (qsort(NULL, 0): UBSan). */
static void test_core_without_segments(void **state)
{
    (void)state;
    char *path = without_segments("no-segments.core");
    tdb_core *c = open_ok(path);
    assert_int_equal(tdb_core_n_threads(c), 1);
    tdb_mem m;
    uint64_t word;
    tdb_core_mem(c, &m);
    assert_int_equal(tdb_mem_read_full(&m, tdb_core_thread_at(c, 0)->regs[19], &word, 8), -1);
    tdb_mem_close(&m);
    tdb_error err = {0};
    tdb_capture *cap = tdb_capture_from_core(c, &err);
    if (cap) {
        tdb_native_frame *f = NULL;
        size_t n = 0;
        char *note = NULL;
        if (tdb_capture_unwind(cap, tdb_core_pid(c), 64, NULL, &f, &n, &note, &err) == 0) {
            tdb_native_frames_free(f, n);
            free(note);
        }
        tdb_capture_free(cap);
    }
    tdb_core_free(c);
    free(path);
}

static void expect_refused(const char *path, const char *kind)
{
    tdb_core *c = NULL;
    tdb_error err = {0};
    alarm(60);
    assert_int_equal(tdb_core_open(path, NULL, &c, &err), -1);
    alarm(0);
    assert_null(c);
    char *want = tdb_xasprintf("cannot read the core file '%s': it is %s, not a regular file",
                               path, kind);
    if (strncmp(err.msg, want, strlen(want)) != 0)
        fail_msg("'%s' is not '%s...'", err.msg, want);
    free(want);
}

/* What is no regular file is refused at once: a FIFO would block the
 * open for ever (no writer comes), a device is never opened. */
static void test_not_a_regular_file_is_refused(void **state)
{
    (void)state;
    char *fifo = tdb_xasprintf("%s/fifo", tmp_tree);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    signal(SIGALRM, on_alarm);
    expect_refused(fifo, "a FIFO");
    expect_refused(tmp_tree, "a directory");
    expect_refused("/dev/null", "a character device");
    free(fifo);

    tdb_core *c = NULL;
    tdb_error err = {0};
    assert_int_equal(tdb_core_open("/nonexistent/core", NULL, &c, &err), -1);
    assert_non_null(strstr(err.msg, "cannot open the core file '/nonexistent/core'"));
}

/* Cores the fuzz target (tests/fuzz/fuzz_core.c) found wrong, kept as
 * tests/fixtures/core/fuzz-NAME.core: each is read and unwound as
 * 'tdebug stacks --core' does, cleanly (under 'make asan': no UBSan
 * report, no leak).
 *   fuzz-inverted-mapping.core  an NT_FILE range that ends before it
 *                               starts (the map must stay sorted, its
 *                               ranges proper, for tdb_maps_find())
 *   fuzz-symbolless-module.core a module without function symbols
 *                               (qsort(NULL, 0) in the symbol cache)
 *   fuzz-two-prpsinfo.core      two NT_PRPSINFO notes (the first one's
 *                               strings leaked)
 *   fuzz-two-nt-file.core       several NT_FILE notes: the map's array grew
 *                               from a capacity of 0 again (a heap buffer
 *                               overflow; so did the threads' array with
 *                               several PT_NOTE segments) */
static void test_cores_the_fuzzer_found(void **state)
{
    (void)state;
    static const char *const names[] = {"fuzz-inverted-mapping.core",
                                        "fuzz-symbolless-module.core",
                                        "fuzz-two-prpsinfo.core", "fuzz-two-nt-file.core"};
    for (size_t k = 0; k < sizeof(names) / sizeof(*names); k++) {
        char *path = tdb_xasprintf("tests/fixtures/core/%s", names[k]);
        tdb_core *c = NULL;
        tdb_error err = {0};
        if (tdb_core_open(path, NULL, &c, &err) < 0) {
            assert_non_null(strstr(err.msg, path));
            free(path);
            continue;
        }
        const tdb_maps *maps = tdb_core_maps(c);
        for (size_t i = 0; i < maps->n; i++)
            if (maps->v[i].start >= maps->v[i].end || (i && maps->v[i - 1].end > maps->v[i].start))
                fail_msg("%s: mapping %zu is empty, out of order or overlapping", path, i);
        tdb_capture *cap = tdb_capture_from_core(c, &err);
        for (size_t i = 0; cap && i < tdb_core_n_threads(c); i++) {
            tdb_native_frame *f = NULL;
            size_t n = 0;
            char *note = NULL;
            if (tdb_capture_unwind(cap, tdb_core_thread_at(c, i)->tid, 16, NULL, &f, &n, &note,
                                   &err) == 0) {
                tdb_native_frames_free(f, n);
                free(note);
            }
        }
        tdb_capture_free(cap);
        tdb_core_free(c);
        free(path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_core_is_read_and_unwound),
        cmocka_unit_test(test_core_without_segments),
        cmocka_unit_test(test_not_a_regular_file_is_refused),
        cmocka_unit_test(test_cores_the_fuzzer_found),
    };
    return cmocka_run_group_tests(tests, tmp_tree_setup, tmp_tree_teardown);
}

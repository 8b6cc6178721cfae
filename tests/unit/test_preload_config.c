/*
 * test_preload_config.c: the preloaded library's TDEBUG_* settings
 * (lib/preload_config.c): defaults, every variable, and garbage giving one
 * warning and the default.  Also the symbol lookup of lib/preload_elf.c on
 * objects this test has loaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "preload_config.h"
#include "tdebug_preload.h"

/* The lookup is not part of libtdebug.a (only the library needs it). */
#include "../../lib/preload_elf.c"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

/* A fake environment: NULL-terminated NAME, VALUE pairs. */
static const char *const *fake_env;
static int n_warnings;
static char last_warning[512];

static const char *fake_get(const char *name)
{
    for (const char *const *p = fake_env; p && *p; p += 2)
        if (!strcmp(p[0], name))
            return p[1];
    return NULL;
}

static void count_warning(const char *name, const char *value, const char *why,
                          const char *dflt)
{
    n_warnings++;
    tdp_format_warning(last_warning, sizeof(last_warning), name, value, why, dflt);
}

static void load(struct tdp_config *c, const char *const *env)
{
    fake_env = env;
    n_warnings = 0;
    last_warning[0] = '\0';
    tdp_config_load(c, fake_get, count_warning, 1000);
}

static void test_defaults(void **state)
{
    struct tdp_config c;

    load(&c, NULL);
    assert_int_equal(n_warnings, 0);
    assert_int_equal(c.n_syms, 1);
    assert_string_equal(c.syms[0], "PyInit__C");
    assert_int_equal(c.n_files, 0);
    assert_int_equal(c.action, TDP_WAIT);
    assert_true(c.timeout == TDEBUG_DEFAULT_TIMEOUT);
    assert_int_equal(c.verbose, 0);
    assert_int_equal(c.notify_kind, TDP_NOTIFY_FD);
    assert_int_equal(c.notify_fd, 2);
    assert_int_equal(c.notify_ack, 0);
    assert_true(c.announce);
    assert_string_equal(c.announce_path, "/tmp/tdebug-1000/announce");
    assert_true(c.skip_workers);
    assert_int_equal(c.trap_pid, 0);
    assert_int_equal(c.trap_startup, 0);
    assert_int_equal(c.trap_wait_load, 1);
}

static void test_every_variable(void **state)
{
    static const char *const env[] = {
        "TDEBUG_WATCH", " PyInit_foo, PyInit_bar ,",
        "TDEBUG_WATCH_FILES", "libcuda*.so*,*/torch/lib/*",
        "TDEBUG_ACTION", "notify",
        "TDEBUG_TIMEOUT", "2.5",
        "TDEBUG_VERBOSE", "2",
        "TDEBUG_NOTIFY", "unix:/run/x.sock",
        "TDEBUG_NOTIFY_ACK", "yes",
        "TDEBUG_ANNOUNCE", "off",
        "TDEBUG_WORKERS", "watch",
        "TDEBUG_TRAP_PID", "4242",
        "TDEBUG_TRAP_STARTUP", "1",
        "TDEBUG_TRAP_WAIT", "init",
        NULL};
    struct tdp_config c;

    load(&c, env);
    assert_int_equal(n_warnings, 0);
    assert_int_equal(c.n_syms, 2);
    assert_string_equal(c.syms[0], "PyInit_foo");
    assert_string_equal(c.syms[1], "PyInit_bar");
    assert_int_equal(c.n_files, 2);
    assert_string_equal(c.files[1], "*/torch/lib/*");
    assert_int_equal(c.action, TDP_NOTIFY);
    assert_true(c.timeout == 2.5);
    assert_int_equal(c.verbose, 2);
    assert_int_equal(c.notify_kind, TDP_NOTIFY_UNIX);
    assert_string_equal(c.notify_path, "/run/x.sock");
    assert_int_equal(c.notify_ack, 1);
    assert_false(c.announce);
    assert_false(c.skip_workers);
    assert_int_equal(c.trap_pid, 4242);
    assert_int_equal(c.trap_startup, 1);
    assert_int_equal(c.trap_wait_load, 0);
}

static void test_action_trap(void **state)
{
    static const char *const env[] = {"TDEBUG_ACTION", "trap", NULL};
    struct tdp_config c;

    load(&c, env);
    assert_int_equal(n_warnings, 0);
    assert_int_equal(c.action, TDP_TRAP);
}

static void test_files_alone_replace_the_default_symbol(void **state)
{
    static const char *const env[] = {"TDEBUG_WATCH_FILES", "libfoo.so", NULL};
    struct tdp_config c;

    load(&c, env);
    assert_int_equal(c.n_syms, 0);
    assert_int_equal(c.n_files, 1);
}

static void test_never_and_fd(void **state)
{
    static const char *const env[] = {"TDEBUG_TIMEOUT", "never", "TDEBUG_NOTIFY", "fd:7",
                                      "TDEBUG_ANNOUNCE", "/run/a", NULL};
    struct tdp_config c;

    load(&c, env);
    assert_int_equal(n_warnings, 0);
    assert_true(c.timeout < 0);
    assert_int_equal(c.notify_fd, 7);
    assert_string_equal(c.announce_path, "/run/a");
}

/* Each garbage value: exactly one warning, and the default. */
static void test_garbage(void **state)
{
    static const struct {
        const char *name, *value, *expect;
    } cases[] = {
        {"TDEBUG_WATCH", "has space", "(using PyInit__C)"},
        {"TDEBUG_WATCH", ",,", "an empty list"},
        {"TDEBUG_WATCH", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", "more than 16 items"},
        {"TDEBUG_WATCH_FILES", " , ", "(using no file patterns)"},
        {"TDEBUG_ACTION", "WAIT", "(using wait)"},
        {"TDEBUG_TIMEOUT", "10s", "(using 60)"},
        {"TDEBUG_TIMEOUT", "-1", "(using 60)"},
        {"TDEBUG_TIMEOUT", "nan", "(using 60)"},
        {"TDEBUG_TIMEOUT", "1e400", "(using 60)"},
        {"TDEBUG_VERBOSE", "3", "(using 0)"},
        {"TDEBUG_NOTIFY", "fd:-1", "(using fd:2)"},
        {"TDEBUG_NOTIFY", "fd:99999999999999999999", "(using fd:2)"},
        {"TDEBUG_NOTIFY", "unix:", "(using fd:2)"},
        {"TDEBUG_NOTIFY", "tcp:1.2.3.4:5", "(using fd:2)"},
        {"TDEBUG_NOTIFY_ACK", "2", "(using 0)"},
        {"TDEBUG_WORKERS", "none", "(using skip)"},
        {"TDEBUG_TIMEOUT", "1\n2", "'1?2'"},
        {"TDEBUG_ACTION", "traps", "(using wait)"},
        {"TDEBUG_TRAP_PID", "0", "(using any traced process)"},
        {"TDEBUG_TRAP_PID", "-5", "(using any traced process)"},
        {"TDEBUG_TRAP_PID", "12x", "(using any traced process)"},
        {"TDEBUG_TRAP_PID", "99999999999999999999", "(using any traced process)"},
        {"TDEBUG_TRAP_STARTUP", "maybe", "(using 0)"},
        {"TDEBUG_TRAP_WAIT", "LOAD", "(using load)"},
    };
    struct tdp_config c, dflt;

    load(&dflt, NULL);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *env[] = {cases[i].name, cases[i].value, NULL};
        load(&c, env);
        assert_int_equal(n_warnings, 1);
        assert_non_null(strstr(last_warning, "tdebug-preload: ignoring "));
        assert_non_null(strstr(last_warning, cases[i].name));
        assert_non_null(strstr(last_warning, cases[i].expect));
        assert_ptr_equal(strchr(last_warning, '\n'), last_warning + strlen(last_warning) - 1);
        assert_int_equal(c.action, dflt.action);
        assert_true(c.timeout == dflt.timeout);
        assert_int_equal(c.notify_fd, dflt.notify_fd);
        assert_int_equal(c.n_syms, 1);
        assert_int_equal(c.trap_pid, dflt.trap_pid);
        assert_int_equal(c.trap_startup, dflt.trap_startup);
        assert_int_equal(c.trap_wait_load, dflt.trap_wait_load);
    }
}

static void test_long_announce_path_falls_back(void **state)
{
    char longpath[300];
    struct tdp_config c;

    memset(longpath, 'x', sizeof(longpath) - 1);
    longpath[0] = '/';
    longpath[sizeof(longpath) - 1] = '\0';
    const char *env[] = {"TDEBUG_ANNOUNCE", longpath, NULL};
    load(&c, env);
    assert_int_equal(n_warnings, 1);
    assert_non_null(strstr(last_warning, "...'"));  /* the value is cut short */
    assert_true(c.announce);
    assert_string_equal(c.announce_path, "/tmp/tdebug-1000/announce");
}

/* TDEBUG_RANK: only the process whose own RANK matches acts; the others
 * (other ranks, the launcher without RANK) are off from the start. */
static void test_one_rank(void **state)
{
    struct tdp_config c;
    (void)state;

    static const char *const rank2[] = {"TDEBUG_RANK", "2", "RANK", "2", NULL};
    load(&c, rank2);
    assert_int_equal(n_warnings, 0);
    assert_int_equal(c.only_rank, 2);
    assert_int_equal(c.rank, 2);
    assert_false(c.other_rank);
    assert_int_equal(c.action, TDP_WAIT);

    static const char *const rank0[] = {"TDEBUG_RANK", "2", "RANK", "0", NULL};
    load(&c, rank0);
    assert_true(c.other_rank);
    assert_int_equal(c.action, TDP_OFF);

    static const char *const launcher[] = {"TDEBUG_RANK", "2", "TDEBUG_ACTION", "trap", NULL};
    load(&c, launcher);
    assert_true(c.other_rank);
    assert_int_equal(c.rank, -1);
    assert_int_equal(c.action, TDP_OFF);

    /* Without TDEBUG_RANK, RANK changes nothing. */
    static const char *const plain[] = {"RANK", "5", NULL};
    load(&c, plain);
    assert_int_equal(c.only_rank, -1);
    assert_false(c.other_rank);
    assert_int_equal(c.action, TDP_WAIT);

    static const char *const garbage[] = {"TDEBUG_RANK", "-1", "RANK", "0", NULL};
    load(&c, garbage);
    assert_int_equal(n_warnings, 1);
    assert_string_equal(last_warning, "tdebug-preload: ignoring TDEBUG_RANK='-1': not a rank "
                                      "(0, 1, 2, ...) (using every process)\n");
    assert_int_equal(c.only_rank, -1);
    assert_false(c.other_rank);
}

static int find_map(struct dl_phdr_info *info, size_t size, void *data)
{
    struct link_map **out = data;
    (void)size;
    if (strstr(info->dlpi_name, "libm.so")) {
        void *h = dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD);
        if (h && dlinfo(h, RTLD_DI_LINKMAP, out) == 0)
            return 1;
    }
    return 0;
}

static void test_exports_from_the_dynamic_section(void **state)
{
    struct link_map *m = NULL;
    void *h = dlopen("libm.so.6", RTLD_NOW);

    assert_non_null(h);
    assert_int_equal(dl_iterate_phdr(find_map, &m), 1);
    assert_non_null(m);
    assert_true(tdp_exports(m->l_addr, m->l_ld, "cos"));
    assert_true(tdp_exports(m->l_addr, m->l_ld, "sqrtf"));
    assert_false(tdp_exports(m->l_addr, m->l_ld, "printf")); /* libm imports it */
    assert_false(tdp_exports(m->l_addr, m->l_ld, "PyInit__C"));
    assert_false(tdp_exports(m->l_addr, m->l_ld, ""));
    assert_false(tdp_exports(0, NULL, "cos"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_every_variable),
        cmocka_unit_test(test_action_trap),
        cmocka_unit_test(test_files_alone_replace_the_default_symbol),
        cmocka_unit_test(test_never_and_fd),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_long_announce_path_falls_back),
        cmocka_unit_test(test_one_rank),
        cmocka_unit_test(test_exports_from_the_dynamic_section),
    };
    return cmocka_run_group_tests_name("preload_config", tests, NULL, NULL);
}

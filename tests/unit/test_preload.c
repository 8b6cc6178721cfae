/*
 * test_preload.c: the tdebug side of the preloaded library (src/process/preload.c):
 * the environment 'tdebug env' prints, settings checks, the rendezvous
 * socket (real sockets in a temporary directory) and the gdb release
 * commands.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "process/preload.h"
#include "tmp_tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>


static void test_env_defaults_and_order(void **state)
{
    json_t *env = tdb_preload_env("/x/libtdebug-preload.so", NULL, NULL);
    const char *keys[8];
    size_t n = 0;
    const char *k;
    json_t *v;

    json_object_foreach(env, k, v)
        keys[n++] = k;
    assert_int_equal(n, 3);
    assert_string_equal(keys[0], "LD_AUDIT");
    assert_string_equal(keys[1], "TDEBUG_ACTION");
    assert_string_equal(keys[2], "TDEBUG_TIMEOUT");
    assert_string_equal(json_string_value(json_object_get(env, "LD_AUDIT")),
                        "/x/libtdebug-preload.so");
    assert_string_equal(json_string_value(json_object_get(env, "TDEBUG_ACTION")), "wait");
    assert_string_equal(json_string_value(json_object_get(env, "TDEBUG_TIMEOUT")), "60");
    json_decref(env);
}

static void test_env_keeps_other_auditors(void **state)
{
    tdb_preload_settings s = {.watch = "PyInit_foo", .timeout = "never"};
    json_t *env = tdb_preload_env("/x/lib.so", &s, "/opt/other.so");

    assert_string_equal(json_string_value(json_object_get(env, "LD_AUDIT")),
                        "/x/lib.so:/opt/other.so");
    assert_string_equal(json_string_value(json_object_get(env, "TDEBUG_WATCH")), "PyInit_foo");
    assert_string_equal(json_string_value(json_object_get(env, "TDEBUG_TIMEOUT")), "never");
    json_decref(env);
    /* Already listed: unchanged, not doubled. */
    env = tdb_preload_env("/x/lib.so", NULL, "/opt/other.so:/x/lib.so");
    assert_string_equal(json_string_value(json_object_get(env, "LD_AUDIT")),
                        "/opt/other.so:/x/lib.so");
    json_decref(env);
}

static void test_stale_variables(void **state)
{
    char *envp[] = {"TDEBUG_WATCH=old", "TDEBUG_ACTION=log", "TDEBUG_GDB=/usr/bin/gdb",
                    "TDEBUG_WATCHX=1", "PATH=/bin", NULL};
    json_t *env = tdb_preload_env("/x/lib.so", NULL, NULL);
    json_t *stale = tdb_preload_stale(env, envp);

    /* TDEBUG_ACTION is set again, TDEBUG_GDB is not the library's. */
    assert_int_equal(json_array_size(stale), 1);
    assert_string_equal(json_string_value(json_array_get(stale, 0)), "TDEBUG_WATCH");
    json_decref(stale);
    json_decref(env);
}

static void test_check(void **state)
{
    tdb_preload_settings good = {.action = "log", .timeout = "0.5", .notify = "fd:3"};
    tdb_preload_settings bad = {.action = "log", .timeout = "soon"};
    tdb_error err = {0};

    assert_int_equal(tdb_preload_check(&good, &err), 0);
    assert_false(err.set);
    assert_int_equal(tdb_preload_check(&bad, &err), -1);
    assert_string_equal(err.msg,
                        "cannot use TDEBUG_TIMEOUT='soon': not a number of seconds or 'never'");
    assert_int_equal(err.exit_code, TDB_EXIT_USAGE);
    tdb_error_clear(&err);
    assert_int_equal(tdb_preload_check_one(TDEBUG_ENV_ACTION, "jump", &err), -1);
    assert_string_equal(err.msg, "not wait, notify, log, trap or off");
    assert_int_equal(tdb_preload_check_one(TDEBUG_ENV_ACTION, "off", NULL), 0);
    assert_int_equal(tdb_preload_check_one(TDEBUG_ENV_ACTION, "trap", NULL), 0);
    tdb_error_clear(&err);
    assert_int_equal(tdb_preload_check_one(TDEBUG_ENV_TRAP_WAIT, "soon", &err), -1);
    assert_string_equal(err.msg, "not load or init");
    tdb_error_clear(&err);
    assert_int_equal(tdb_preload_check_one(TDEBUG_ENV_TRAP_PID, "0", &err), -1);
    assert_string_equal(err.msg, "not a process id");
}

/* The trap action's settings reach the environment; the watch patterns of
 * a module and of a directory. */
static void test_trap_settings_and_patterns(void **state)
{
    tdb_preload_settings s = {.action = "trap", .trap_pid = "42", .trap_startup = "1",
                              .trap_wait = "init"};
    json_t *env = tdb_preload_env("/x/lib.so", &s, NULL);
    assert_string_equal(json_string_value(json_object_get(env, "TDEBUG_ACTION")), "trap");
    assert_string_equal(json_string_value(json_object_get(env, "TDEBUG_TRAP_PID")), "42");
    assert_string_equal(json_string_value(json_object_get(env, "TDEBUG_TRAP_STARTUP")), "1");
    assert_string_equal(json_string_value(json_object_get(env, "TDEBUG_TRAP_WAIT")), "init");
    json_decref(env);

    tdb_buf b = TDB_BUF_INIT;
    tdb_preload_add_module_files(&b, "torch._C");
    assert_string_equal(tdb_buf_str(&b), "*/torch/_C.so,*/torch/_C.*.so");
    tdb_preload_add_dir_files(&b, "/home/a [x]*/");
    assert_string_equal(tdb_buf_str(&b),
                        "*/torch/_C.so,*/torch/_C.*.so,/home/a \\[x\\]\\*/*");
    tdb_buf_reset(&b);
    tdb_preload_add_dir_files(&b, "/srv/proj");
    assert_string_equal(tdb_buf_str(&b), "/srv/proj/*");
    tdb_buf_free(&b);
}

static void test_release_commands(void **state)
{
    json_t *a = json_pack("{s:i,s:i,s:s,s:s}", "tdebug", 1, "pid", 12, "release_symbol",
                          "tdebug_preload_release", "release_addr", "0x7f00deadbeef");
    char **c = tdb_preload_release_commands(a, 0);

    assert_string_equal(c[0], "set var *(int *)0x7f00deadbeef = 1");
    assert_null(c[1]);
    tdb_strv_free(c);
    c = tdb_preload_release_commands(a, 1);
    assert_string_equal(c[0], "set var *(int *)0x7f00deadbeef = 2");
    tdb_strv_free(c);

    /* A bad address falls back to the symbol; a bad symbol gives nothing. */
    json_object_set_new(a, "release_addr", json_string("0x12; shell rm -rf /"));
    c = tdb_preload_release_commands(a, 0);
    assert_string_equal(c[0], "set var *(int *)&tdebug_preload_release = 1");
    tdb_strv_free(c);
    json_object_set_new(a, "release_symbol", json_string("x = 1; kill"));
    c = tdb_preload_release_commands(a, 0);
    assert_null(c[0]);
    tdb_strv_free(c);

    /* Python's wait_for_debugger(): attaching releases, no command. */
    json_object_del(a, "release_symbol");
    json_object_del(a, "release_addr");
    c = tdb_preload_release_commands(a, 0);
    assert_null(c[0]);
    tdb_strv_free(c);
    json_decref(a);

    c = tdb_preload_release_commands(NULL, 0);
    assert_string_equal(c[0], "sharedlibrary libtdebug-preload");
    assert_string_equal(c[1], "set var *(int *)&tdebug_preload_release = 1");
    assert_null(c[2]);
    tdb_strv_free(c);
    tdb_strv_free(NULL);
}

static void test_parse(void **state)
{
    static const char good[] = "{\"tdebug\":1,\"event\":\"waiting\",\"pid\":42,\"new\":[1]}\n";
    tdb_error err = {0};
    json_t *j = tdb_announce_parse(good, sizeof(good) - 1, &err);

    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "pid")), 42);
    json_decref(j);
    static const char *const bad[] = {"", "[1]", "{\"tdebug\":1}", "{\"tdebug\":1,\"pid\":0}",
                                      "{\"pid\":3}", "{\"tdebug\":1,\"pid\":\"3\"}", "{"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        tdb_error_clear(&err);
        assert_null(tdb_announce_parse(bad[i], strlen(bad[i]), &err));
        assert_true(err.set);
    }
    tdb_error_clear(&err);
    assert_null(tdb_announce_parse("{\"tdebug\":2,\"pid\":3}", 20, &err));
    assert_non_null(strstr(err.msg, "protocol 2"));
}

static void send_to(const char *path, const char *text)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

    strcpy(addr.sun_path, path);
    assert_true(fd >= 0);
    assert_int_equal(sendto(fd, text, strlen(text), 0, (struct sockaddr *)&addr, sizeof(addr)),
                     (ssize_t)strlen(text));
    close(fd);
}

static void test_listener_roundtrip(void **state)
{
    char path[128], line[256];
    tdb_error err = {0};
    json_t *got = NULL;
    tdb_announce_listener *l;

    snprintf(path, sizeof(path), "%s/announce", tmp_tree);
    l = tdb_announce_listen(path, &err);
    assert_non_null(l);
    assert_string_equal(tdb_announce_listener_path(l), path);

    /* Nothing yet: a timeout, not an error. */
    assert_int_equal(tdb_announce_next(l, 0, -1, &got, &err), 0);

    /* Garbage and a process speaking for another pid are dropped. */
    send_to(path, "not json");
    send_to(path, "{\"tdebug\":1,\"pid\":1}");
    snprintf(line, sizeof(line), "{\"tdebug\":1,\"event\":\"waiting\",\"pid\":%ld}\n",
             (long)getpid());
    send_to(path, line);
    assert_int_equal(tdb_announce_next(l, 10000, -1, &got, &err), 1);
    assert_int_equal(json_integer_value(json_object_get(got, "pid")), getpid());
    json_decref(got);
    assert_int_equal(tdb_announce_next(l, 0, -1, &got, &err), 0);

    /* A second listener on the same path is refused while this one lives. */
    tdb_error err2 = {0};
    assert_null(tdb_announce_listen(path, &err2));
    assert_non_null(strstr(err2.msg, "another 'tdebug attach --wait' is listening"));

    /* Cancel. */
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    assert_int_equal(write(pipefd[1], "x", 1), 1);
    assert_int_equal(tdb_announce_next(l, -1, pipefd[0], &got, &err), -1);
    assert_int_equal(err.code, ECANCELED);
    close(pipefd[0]);
    close(pipefd[1]);

    tdb_announce_listener_free(l);
    assert_int_not_equal(access(path, F_OK), 0);
}

static void test_listener_replaces_a_stale_socket(void **state)
{
    char path[128];
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    tdb_error err = {0};
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

    snprintf(path, sizeof(path), "%s/stale", tmp_tree);
    strcpy(addr.sun_path, path);
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    close(fd); /* the socket file stays, nobody behind it */
    tdb_announce_listener *l = tdb_announce_listen(path, &err);
    assert_non_null(l);
    tdb_announce_listener_free(l);

    /* A regular file is never removed. */
    snprintf(path, sizeof(path), "%s/file", tmp_tree);
    FILE *f = fopen(path, "w");
    fputs("keep", f);
    fclose(f);
    assert_null(tdb_announce_listen(path, &err));
    assert_int_equal(access(path, F_OK), 0);
}

static void test_directory_rules(void **state)
{
    char dir[128], path[160];
    tdb_error err = {0};

    /* TDEBUG_ANNOUNCE=off turns the default off. */
    snprintf(dir, sizeof(dir), "%s/rundir", tmp_tree);
    snprintf(path, sizeof(path), "%s/announce", dir);
    setenv(TDEBUG_ENV_ANNOUNCE, "off", 1);
    assert_null(tdb_announce_listen(NULL, &err));
    assert_non_null(strstr(err.msg, "turns them off"));
    unsetenv(TDEBUG_ENV_ANNOUNCE);

    /* A directory owned by someone else is refused (senders would ignore it). */
    assert_int_equal(mkdir(dir, 0700), 0);
    if (geteuid() == 0) {
        assert_int_equal(chown(dir, 65534, 65534), 0);
        tdb_error_clear(&err);
        assert_null(tdb_announce_listen(path, &err));
        assert_non_null(strstr(err.msg, "not a directory owned by uid"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_defaults_and_order),
        cmocka_unit_test(test_env_keeps_other_auditors),
        cmocka_unit_test(test_stale_variables),
        cmocka_unit_test(test_trap_settings_and_patterns),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_release_commands),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_listener_roundtrip),
        cmocka_unit_test(test_listener_replaces_a_stale_socket),
        cmocka_unit_test(test_directory_rules),
    };
    return cmocka_run_group_tests_name("preload", tests, tmp_tree_setup, tmp_tree_teardown);
}

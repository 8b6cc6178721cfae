/*
 * test_remote.c: running tdebug on other hosts (src/targets/remote.c,
 * src/stacks/jobstacks.c's host lists) and the parallel runs under it
 * (tdb_spawn_capture_many, src/process/spawn.c).
 *
 * What ssh and the other transports say when a host cannot be read is in
 * tests/fixtures/remote/cases.json (recorded stderr, its README says
 * how): each case is judged and the verdict and message checked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "process/spawn.h"
#include "stacks/jobstacks.h"
#include "targets/remote.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tmp_tree.h"

#define CASES "tests/fixtures/remote"

/* ---- running several programs at once ---- */

/* Each waits for the other's file: both finish only when they run at the
 * same time (no clock involved). */
static void test_many_run_at_once(void **state)
{
    (void)state;
    char *a = tdb_xasprintf("touch %s/a; while [ ! -e %s/b ]; do sleep 0.01; done; echo A; "
                            "echo a-err >&2", tmp_tree, tmp_tree);
    char *b = tdb_xasprintf("touch %s/b; while [ ! -e %s/a ]; do sleep 0.01; done; echo B; exit 3",
                            tmp_tree, tmp_tree);
    char *argv_a[] = {"sh", "-c", a, NULL}, *argv_b[] = {"sh", "-c", b, NULL};
    char *const *argvs[] = {argv_a, argv_b};
    tdb_spawn_result out[2];
    tdb_error errs[2] = {{0}, {0}};
    assert_int_equal(tdb_spawn_capture_many(argvs, 2, 120000, -1, out, errs), 0);
    assert_false(errs[0].set || errs[1].set);
    assert_string_equal(out[0].out, "A\n");
    assert_string_equal(out[0].err, "a-err\n");
    assert_int_equal(out[0].status, 0);
    assert_string_equal(out[1].out, "B\n");
    assert_int_equal(out[1].status, 3);
    assert_false(out[0].timed_out || out[1].timed_out);
    tdb_spawn_result_free(&out[0]);
    tdb_spawn_result_free(&out[1]);
    free(a);
    free(b);
}

/* One that never ends is killed at the deadline; the one that answered
 * keeps its answer; one that cannot start says why. */
static void test_many_deadline_and_failure(void **state)
{
    (void)state;
    char *slow[] = {"sh", "-c", "echo started; exec sleep 600", NULL};
    char *quick[] = {"echo", "done", NULL};
    char *missing[] = {"/nonexistent/ssh", "host", NULL};
    char *const *argvs[] = {slow, quick, missing};
    tdb_spawn_result out[3];
    tdb_error errs[3] = {{0}, {0}, {0}};
    /* Long enough for the quick one to answer on a loaded machine. */
    assert_int_equal(tdb_spawn_capture_many(argvs, 3, 5000, -1, out, errs), 0);
    assert_true(out[0].timed_out);
    assert_string_equal(out[0].out, "started\n");
    assert_int_equal(out[0].status, 128 + 9);
    assert_false(out[1].timed_out);
    assert_string_equal(out[1].out, "done\n");
    assert_true(errs[2].set);
    assert_int_equal(errs[2].exit_code, TDB_EXIT_NOTFOUND);
    assert_non_null(strstr(errs[2].msg, "cannot run '/nonexistent/ssh'"));
    for (int i = 0; i < 3; i++)
        tdb_spawn_result_free(&out[i]);
}

/* No terminal to ask a password on: opening /dev/tty fails at once. */
static void test_many_have_no_terminal(void **state)
{
    (void)state;
    char *tty[] = {"sh", "-c", "exec 3</dev/tty && echo has-a-terminal", NULL};
    char *const *argvs[] = {tty};
    tdb_spawn_result out[1];
    tdb_error errs[1] = {{0}};
    assert_int_equal(tdb_spawn_capture_many(argvs, 1, 120000, -1, out, errs), 0);
    assert_int_not_equal(out[0].status, 0);
    assert_string_equal(out[0].out, "");
    tdb_spawn_result_free(&out[0]);
}

/* The cancel pipe stops everything. */
static void test_many_cancelled(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(write(p[1], "x", 1), 1);
    char *slow[] = {"sleep", "600", NULL};
    char *const *argvs[] = {slow, slow};
    tdb_spawn_result out[2];
    tdb_error errs[2] = {{0}, {0}};
    assert_int_equal(tdb_spawn_capture_many(argvs, 2, 0, p[0], out, errs), -1);
    assert_int_equal(out[0].status, 128 + 9);
    assert_int_equal(out[1].status, 128 + 9);
    tdb_spawn_result_free(&out[0]);
    tdb_spawn_result_free(&out[1]);
    close(p[0]);
    close(p[1]);
}

/* ---- command lines ---- */

/* V (freed here) is the words WANT shows as "[w1] [w2] ...". */
static void assert_words(char **v, const char *want)
{
    tdb_buf b = TDB_BUF_INIT;
    for (size_t i = 0; v[i]; i++)
        tdb_buf_addf(&b, "%s[%s]", i ? " " : "", v[i]);
    assert_string_equal(tdb_buf_str(&b), want);
    tdb_buf_free(&b);
    tdb_strv_free(v);
}

static void check_words(const char *cmd, const char *want)
{
    char **w = NULL;
    assert_int_equal(tdb_shell_words(cmd, &w, NULL), 0);
    assert_words(w, want);
}

static void test_shell_words(void **state)
{
    (void)state;
    check_words("ssh -F '/tmp/my config' -J jump", "[ssh] [-F] [/tmp/my config] [-J] [jump]");
    check_words("  srun --jobid=42\t-w ", "[srun] [--jobid=42] [-w]");
    check_words("a\\ b \"c \\\"d\\\"\" 'e\\f'", "[a b] [c \"d\"] [e\\f]");
    char **w = NULL;
    tdb_error err = {0};
    assert_int_equal(tdb_shell_words("ssh -o 'Port=22", &w, &err), -1);
    assert_int_equal(err.exit_code, TDB_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "single quote is not closed"));
    tdb_error_clear(&err);
    assert_int_equal(tdb_shell_words("   ", &w, &err), -1);
    assert_non_null(strstr(err.msg, "it is empty"));
}

static void check_argv(const char *ssh, const char *tdebug, const char *want)
{
    tdb_remote_opts o = {ssh, tdebug, 10500};
    char *args[] = {"stacks", "--job=a b", "--json", NULL};
    char **argv = NULL;
    assert_int_equal(tdb_remote_argv(&o, "node1", args, &argv, NULL), 0);
    assert_words(argv, want);
}

static void test_remote_argv(void **state)
{
    (void)state;
    /* ssh: batch mode, a connection timeout, the remote words quoted for
     * the remote shell. */
    check_argv(NULL, NULL,
               "[ssh] [-o] [BatchMode=yes] [-o] [ConnectTimeout=11] [node1] ['tdebug'] "
               "['stacks'] ['--job=a b'] ['--json']");
    check_argv("/usr/bin/ssh -F cfg", "/opt/tdebug/bin/tdebug",
               "[/usr/bin/ssh] [-o] [BatchMode=yes] [-o] [ConnectTimeout=11] [-F] [cfg] [node1] "
               "['/opt/tdebug/bin/tdebug'] ['stacks'] ['--job=a b'] ['--json']");
    /* Other transports run the words as they are; %h places the host. */
    check_argv("srun --jobid=42 -w", NULL,
               "[srun] [--jobid=42] [-w] [node1] [tdebug] [stacks] [--job=a b] [--json]");
    check_argv("kubectl exec %h -c trainer --", NULL,
               "[kubectl] [exec] [node1] [-c] [trainer] [--] [tdebug] [stacks] [--job=a b] "
               "[--json]");
    check_argv("run-on --host=%h --literal=100%%", NULL,
               "[run-on] [--host=node1] [--literal=100%] [tdebug] [stacks] [--job=a b] [--json]");
}

static void test_local_hosts(void **state)
{
    (void)state;
    char name[256];
    assert_int_equal(gethostname(name, sizeof(name)), 0);
    assert_true(tdb_host_is_local("localhost"));
    assert_true(tdb_host_is_local("LOCALHOST"));
    assert_true(tdb_host_is_local("127.0.0.1"));
    assert_true(tdb_host_is_local("::1"));
    assert_true(tdb_host_is_local(name));
    char *fq = tdb_xasprintf("%.*s.example.internal", (int)strcspn(name, "."), name);
    assert_true(tdb_host_is_local(fq)); /* the same name with a domain */
    free(fq);
    char *other = tdb_xasprintf("%sx", name);
    assert_false(tdb_host_is_local(other));
    free(other);
    assert_false(tdb_host_is_local("127.0.0.2"));
    assert_false(tdb_host_is_local("node1"));
}

static void test_host_lists(void **state)
{
    (void)state;
    char **h = NULL;
    size_t n = 0;
    tdb_error err = {0};
    assert_int_equal(tdb_hosts_parse("a,b.example,,c", &h, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_string_equal(h[2], "c");
    tdb_strv_free(h);
    assert_int_equal(tdb_hosts_parse("a,-oProxyCommand=x", &h, &n, &err), -1);
    assert_int_equal(err.exit_code, TDB_EXIT_USAGE);
    assert_non_null(strstr(err.msg, "ssh would take it for an option"));
    tdb_error_clear(&err);
    assert_int_equal(tdb_hosts_parse(",", &h, &n, &err), -1);

    tmp_tree_write("/hosts", "# the job's nodes\nnode1 slots=4\n\n  node2\tslots=4 # second\n"
                             "node3\n");
    char *path = tdb_xasprintf("%s/hosts", tmp_tree);
    tdb_error_clear(&err);
    assert_int_equal(tdb_hostfile_read(path, &h, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_string_equal(h[0], "node1");
    assert_string_equal(h[1], "node2");
    assert_string_equal(h[2], "node3");
    tdb_strv_free(h);
    free(path);
    tmp_tree_write("/empty", "# nothing\n\n");
    path = tdb_xasprintf("%s/empty", tmp_tree);
    assert_int_equal(tdb_hostfile_read(path, &h, &n, &err), -1);
    assert_non_null(strstr(err.msg, "names no host"));
    free(path);
    tdb_error_clear(&err);
    assert_int_equal(tdb_hostfile_read("/nonexistent/hosts", &h, &n, &err), -1);
    assert_string_equal(err.msg, "cannot read the host file '/nonexistent/hosts': No such file "
                                 "or directory");
}

/* ---- what a host's failure means ---- */

/* The text of case C: from the file its KEY names, else its INLINE
 * string, else NULL. */
static char *case_text(const json_t *c, const char *key, const char *inline_key)
{
    const char *file = json_string_value(json_object_get(c, key));
    if (file) {
        char *path = tdb_xasprintf("%s/%s", CASES, file);
        char *text = tdb_read_file(path, NULL, NULL);
        if (!text)
            fail_msg("%s: cannot read %s", json_string_value(json_object_get(c, "name")), path);
        free(path);
        return text;
    }
    const char *s = inline_key ? json_string_value(json_object_get(c, inline_key)) : NULL;
    return s ? tdb_xstrdup(s) : NULL;
}

static void test_judge_cases(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *cases = json_load_file(CASES "/cases.json", 0, &jerr);
    if (!cases)
        fail_msg("%s: %s", CASES "/cases.json", jerr.text);
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        char *text = case_text(c, "stderr", NULL);
        char *out = case_text(c, "stdout_file", "stdout");
        tdb_spawn_result r = {(int)json_integer_value(json_object_get(c, "status")),
                              json_is_true(json_object_get(c, "timed_out")), out, text, 12};
        tdb_host_answer a;
        tdb_remote_judge("node7", json_string_value(json_object_get(c, "transport")), &r, NULL,
                         20000, &a);
        const char *want = json_string_value(json_object_get(c, "verdict"));
        if (strcmp(tdb_host_status_name(a.status), want) != 0)
            fail_msg("%s: judged '%s', expected '%s' (%s)", name, tdb_host_status_name(a.status),
                     want, a.reason ? a.reason : "");
        size_t k;
        json_t *says;
        json_array_foreach(json_object_get(c, "says"), k, says)
            if (!a.reason || !strstr(a.reason, json_string_value(says)))
                fail_msg("%s: '%s' does not say '%s'", name, a.reason ? a.reason : "(null)",
                         json_string_value(says));
        if (a.status == TDB_HOST_OK)
            assert_non_null(a.doc);
        else
            assert_null(a.doc);
        tdb_host_answer_release(&a);
        free(text);
        free(out);
    }
    json_decref(cases);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_run_at_once),
        cmocka_unit_test(test_many_deadline_and_failure),
        cmocka_unit_test(test_many_have_no_terminal),
        cmocka_unit_test(test_many_cancelled),
        cmocka_unit_test(test_shell_words),
        cmocka_unit_test(test_remote_argv),
        cmocka_unit_test(test_local_hosts),
        cmocka_unit_test(test_host_lists),
        cmocka_unit_test(test_judge_cases),
    };
    return cmocka_run_group_tests(tests, tmp_tree_setup, tmp_tree_teardown);
}

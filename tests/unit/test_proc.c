/*
 * test_proc.c: process reading, debugpy roles, resolution and ptrace
 * refusals against the recorded /proc trees in tests/fixtures/proc/ (see
 * the README there).
 *
 * Every tree's expected.json says, per pid, what the recording harness
 * knew independently (roles it started, the DAP systemProcessId, torch,
 * candidates, refusals for a root tracer); test_tree() checks all of it.
 * The other tests pick their processes from expected.json by what they
 * are (a note, a refusal), never by a pid written here, and pair them with
 * the recorded tracers: nobody, root without CAP_SYS_PTRACE, Yama 1/2/3.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "targets/proc.h"
#include "targets/ptrace_check.h"
#include "process/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FIXTURES
#define FIXTURES "tests/fixtures/proc"
#endif

/* No gdb file capabilities in these tests: the tracer is what the
 * recorded status says, nothing more. */
#define NO_GDB "/nonexistent/gdb"

static json_t *load_expected(const char *tree)
{
    char *path = tdb_xasprintf("%s/%s/expected.json", FIXTURES, tree);
    json_error_t jerr;
    json_t *v = json_load_file(path, 0, &jerr);
    if (!v)
        fail_msg("%s: %s", path, jerr.text);
    free(path);
    return v;
}

static tdb_proc_table *load_tree(const char *tree)
{
    char *root = tdb_xasprintf("%s/%s", FIXTURES, tree);
    tdb_error err = {0};
    tdb_proc_table *t = tdb_proc_table_read(root, &err);
    if (!t)
        fail_msg("%s", err.msg);
    free(root);
    return t;
}

static void load_tracer(tdb_tracer *tr, const char *name)
{
    char *root = tdb_xasprintf("%s/tracers/%s", FIXTURES, name);
    tdb_error err = {0};
    if (tdb_tracer_read(tr, root, NO_GDB, &err) < 0)
        fail_msg("%s", err.msg);
    free(root);
}

/* The pid in TREE's expected.json whose KEY is VALUE (a string). */
static pid_t pid_where(const char *tree, const char *key, const char *value)
{
    json_t *exp = load_expected(tree);
    const char *pid;
    json_t *e;
    pid_t found = 0;
    json_object_foreach(exp, pid, e)
    {
        const char *v = json_string_value(json_object_get(e, key));
        if (v && !strcmp(v, value))
            found = atoi(pid);
    }
    json_decref(exp);
    if (!found)
        fail_msg("%s/expected.json has no pid with %s '%s'", tree, key, value);
    return found;
}

static int contains(const char *haystack, const char *needle)
{
    if (!strstr(haystack, needle)) {
        print_error("'%s'\n  does not contain '%s'\n", haystack, needle);
        return 0;
    }
    return 1;
}

/* --- every fact in every tree's expected.json */

static void test_tree(const char *name)
{
    json_t *exp = load_expected(name);
    tdb_proc_table *t = load_tree(name);
    tdb_tracer tr;
    const char *key;
    json_t *e;

    load_tracer(&tr, "root");
    json_object_foreach(exp, key, e)
    {
        pid_t pid = atoi(key);
        tdb_error err = {0};
        tdb_proc *p = tdb_proc_table_lookup(t, pid, &err);
        if (!p)
            fail_msg("%s: pid %d: %s", name, (int)pid, err.msg);
        const char *role = json_string_value(json_object_get(e, "role"));
        if (strcmp(tdb_role_name(p->role), role) != 0)
            fail_msg("%s: pid %d: role '%s', expected '%s'", name, (int)pid,
                     tdb_role_name(p->role), role);
        if (json_is_true(json_object_get(e, "python")) != (p->python == TDB_YES))
            fail_msg("%s: pid %d: python %d", name, (int)pid, p->python);
        if (json_is_true(json_object_get(e, "torch")) != (p->torch == TDB_YES))
            fail_msg("%s: pid %d: torch %d", name, (int)pid, p->torch);

        json_t *thread_of = json_object_get(e, "thread_of");
        if (thread_of)
            assert_int_equal(p->tgid, json_integer_value(thread_of));

        json_t *tracer = json_object_get(e, "tracer");
        if (tracer) {
            assert_int_equal(p->tracer_pid, json_integer_value(tracer));
            assert_string_equal(p->tracer_comm,
                                json_string_value(json_object_get(e, "tracer_comm")));
        } else {
            assert_int_equal(p->tracer_pid, 0);
        }

        tdb_resolution res = {0};
        json_t *resolve = json_object_get(e, "resolve");
        json_t *cands = json_object_get(e, "candidates");
        if (resolve || cands) {
            tdb_error_clear(&err);
            int rc = tdb_proc_resolve_debuggee(t, pid, &res, &err);
            if (resolve) {
                if (rc != 0)
                    fail_msg("%s: pid %d: resolve: %s", name, (int)pid, err.msg);
                assert_int_equal(res.pid, json_integer_value(resolve));
                /* A note exactly when the answer is another process. */
                assert_int_equal(res.note != NULL, res.pid != pid);
            } else {
                assert_int_equal(rc, 1);
                assert_true(err.set);
                assert_int_equal(res.ncandidates, json_array_size(cands));
                for (size_t i = 0; i < res.ncandidates; i++) {
                    int seen = 0;
                    size_t j;
                    json_t *c;
                    json_array_foreach(cands, j, c) seen |= json_integer_value(c) ==
                                                            res.candidates[i];
                    assert_true(seen);
                    char num[32];
                    snprintf(num, sizeof(num), "%d", (int)res.candidates[i]);
                    assert_true(contains(err.msg, num));
                }
            }
            tdb_resolution_release(&res);
        }

        /* The address a DAP client connects to, for the programs that run
         * a debugpy server; none for the rest. */
        const char *server = json_string_value(json_object_get(e, "server"));
        char *host = NULL;
        int port = 0;
        int found = tdb_proc_debugpy_server(t, pid, &host, &port);
        if (server) {
            if (found != 1)
                fail_msg("%s: pid %d: no debugpy server found, expected %s", name, (int)pid,
                         server);
            char *got = tdb_xasprintf("%s:%d", host, port);
            assert_string_equal(got, server);
            free(got);
            free(host);
        } else if (found) {
            fail_msg("%s: pid %d: a debugpy server at %s:%d, expected none", name, (int)pid, host,
                     port);
        }

        /* Refusals a root tdebug gives; none for the rest. */
        const char *refusal = json_string_value(json_object_get(e, "refusal"));
        tdb_error_clear(&err);
        tdb_refusal r = tdb_attach_check(t, &tr, pid, &err);
        if (refusal) {
            if (strcmp(tdb_refusal_name(r), refusal) != 0)
                fail_msg("%s: pid %d: refusal '%s', expected '%s'", name, (int)pid,
                         tdb_refusal_name(r), refusal);
            assert_true(err.set);
            assert_int_equal(err.exit_code, TDB_EXIT_FAIL);
        } else if (p->python == TDB_YES) {
            if (r != TDB_REFUSAL_NONE)
                fail_msg("%s: pid %d: refused: %s", name, (int)pid, err.msg);
        }
    }
    tdb_tracer_release(&tr);
    tdb_proc_table_free(t);
    json_decref(exp);
}

static void test_tree_listen(void **state) { test_tree("listen"); }
static void test_tree_launch(void **state) { test_tree("launch"); }
static void test_tree_launch_child(void **state) { test_tree("launch-child"); }
static void test_tree_embedded(void **state) { test_tree("embedded"); }
static void test_tree_misc(void **state) { test_tree("misc"); }

/* --- resolution details */

static void test_resolution_notes(void **state)
{
    tdb_proc_table *t = load_tree("launch");
    pid_t launcher = pid_where("launch", "role", "launcher");
    pid_t adapter = pid_where("launch", "role", "adapter");
    pid_t debuggee = pid_where("launch", "role", "debuggee");
    tdb_resolution res;
    tdb_error err = {0};
    char want[128];

    assert_int_equal(tdb_proc_resolve_debuggee(t, launcher, &res, &err), 0);
    snprintf(want, sizeof(want), "pid %d is the debugpy launcher; attaching to its child %d",
             (int)launcher, (int)debuggee);
    assert_string_equal(res.note, want);
    tdb_resolution_release(&res);

    assert_int_equal(tdb_proc_resolve_debuggee(t, adapter, &res, &err), 0);
    snprintf(want, sizeof(want), "pid %d is the debugpy adapter; attaching to %d", (int)adapter,
             (int)debuggee);
    assert_true(contains(res.note, want));
    tdb_resolution_release(&res);

    assert_true(tdb_proc_descends_from(t, debuggee, adapter));
    assert_false(tdb_proc_descends_from(t, adapter, debuggee));
    size_t n;
    tdb_proc **kids = tdb_proc_children(t, launcher, &n);
    assert_int_equal(n, 1);
    assert_int_equal(kids[0]->pid, debuggee);
    free(kids);
    tdb_proc_table_free(t);
}

static void test_thread_resolves_to_process(void **state)
{
    tdb_proc_table *t = load_tree("misc");
    json_t *exp = load_expected("misc");
    const char *key;
    json_t *e;
    int seen = 0;
    json_object_foreach(exp, key, e)
    {
        json_t *of = json_object_get(e, "thread_of");
        if (!of)
            continue;
        tdb_resolution res;
        tdb_error err = {0};
        assert_int_equal(tdb_proc_resolve_debuggee(t, atoi(key), &res, &err), 0);
        assert_int_equal(res.pid, json_integer_value(of));
        assert_true(contains(res.note, "is a thread of process"));
        tdb_resolution_release(&res);
        seen = 1;
    }
    assert_true(seen);
    json_decref(exp);
    tdb_proc_table_free(t);
}

static void test_listen_adapter_peers(void **state)
{
    tdb_proc_table *t = load_tree("listen");
    pid_t adapter = pid_where("listen", "role", "adapter");
    pid_t server = pid_where("listen", "role", "server");
    pid_t *peers = NULL;
    tdb_error err = {0};
    ssize_t n = tdb_proc_tcp_peers(t, adapter, &peers, &err);
    assert_int_equal(n, 1);
    assert_int_equal(peers[0], server);
    free(peers);
    /* The server's adapter is double-forked: only the sockets link them. */
    assert_int_equal(tdb_proc_table_lookup(t, adapter, NULL)->ppid, 1);
    tdb_proc_table_free(t);
}

/* A copy of TREE in a temporary directory, for damaging. */
static char *copy_tree(const char *tree)
{
    char tmpl[] = "/tmp/tdebug-test-proc-XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    char *cmd = tdb_xasprintf("cp -a '%s/%s/.' '%s/'", FIXTURES, tree, dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    return tdb_xstrdup(dir);
}

static void remove_tree(char *dir)
{
    char *cmd = tdb_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(dir);
}

/* Remove WHAT ("fd", or "" for all of it) of PID in the tree copy DIR. */
static void remove_from_tree(const char *dir, pid_t pid, const char *what)
{
    char *cmd = tdb_xasprintf("rm -rf '%s/%d/%s'", dir, (int)pid, what);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

static void test_adapter_unreadable_or_alone(void **state)
{
    pid_t adapter = pid_where("listen", "role", "adapter");
    pid_t server = pid_where("listen", "role", "server");
    char *dir = copy_tree("listen");
    remove_from_tree(dir, adapter, "fd");
    tdb_error err = {0};
    tdb_proc_table *t = tdb_proc_table_read(dir, &err);
    tdb_resolution res;
    /* Another user's adapter: its sockets cannot be read. */
    assert_int_equal(tdb_proc_resolve_debuggee(t, adapter, &res, &err), -1);
    assert_true(contains(err.msg, "cannot find the program behind pid"));
    assert_true(contains(err.msg, "cannot read the sockets"));
    assert_true(contains(err.msg, "'tdebug ps' lists it"));
    assert_int_equal(err.exit_code, TDB_EXIT_FAIL);
    tdb_proc_table_free(t);
    remove_tree(dir);

    /* The program is gone: nothing at the other end. */
    dir = copy_tree("listen");
    remove_from_tree(dir, server, "");
    tdb_error_clear(&err);
    t = tdb_proc_table_read(dir, &err);
    assert_int_equal(tdb_proc_resolve_debuggee(t, adapter, &res, &err), -1);
    assert_true(contains(err.msg, "no program is connected to it"));
    tdb_proc_table_free(t);
    remove_tree(dir);

    /* A launcher whose program has exited. */
    pid_t launcher = pid_where("launch", "role", "launcher");
    pid_t debuggee = pid_where("launch", "role", "debuggee");
    dir = copy_tree("launch");
    remove_from_tree(dir, debuggee, "");
    tdb_error_clear(&err);
    t = tdb_proc_table_read(dir, &err);
    assert_int_equal(tdb_proc_resolve_debuggee(t, launcher, &res, &err), -1);
    assert_true(contains(err.msg, "(the debugpy launcher): it has no Python child"));
    tdb_proc_table_free(t);
    remove_tree(dir);
}

static void test_no_such_pid(void **state)
{
    tdb_proc_table *t = load_tree("misc");
    tdb_resolution res;
    tdb_error err = {0};
    assert_null(tdb_proc_table_lookup(t, 999999, &err));
    assert_int_equal(err.code, ESRCH);
    tdb_error_clear(&err);
    assert_int_equal(tdb_proc_resolve_debuggee(t, 999999, &res, &err), -1);
    assert_string_equal(err.msg, "cannot attach to pid 999999: no such process ('tdebug ps' "
                                 "lists the Python processes you can attach to)");
    tdb_proc_table_free(t);
}

/* --- refusals, tracer by tracer */

static tdb_refusal check_for(tdb_proc_table *t, const tdb_trace_purpose *why, const char *tracer,
                             pid_t pid, tdb_error *err)
{
    tdb_tracer tr;
    load_tracer(&tr, tracer);
    tdb_refusal r = tdb_trace_check(t, &tr, why, pid, err);
    tdb_tracer_release(&tr);
    return r;
}

static tdb_refusal check(tdb_proc_table *t, const char *tracer, pid_t pid, tdb_error *err)
{
    return check_for(t, &tdb_purpose_attach, tracer, pid, err);
}

static void test_refusal_other_user(void **state)
{
    tdb_proc_table *t = load_tree("misc");
    pid_t roots = pid_where("misc", "note", "root's, seen by another user");
    pid_t nobodys = pid_where("misc", "note", "nobody's");
    tdb_error err = {0};
    char want[256];

    /* nobody against root's process. */
    assert_int_equal(check(t, "nobody", roots, &err), TDB_REFUSAL_OTHER_USER);
    snprintf(want, sizeof(want),
             "cannot attach to pid %d: it runs as user 'root' and tdebug runs as 'nobody' (run "
             "tdebug as root, e.g. 'sudo tdebug attach %d')",
             (int)roots, (int)roots);
    assert_string_equal(err.msg, want);
    assert_int_equal(err.code, EPERM);
    assert_int_equal(err.exit_code, TDB_EXIT_FAIL);

    /* root without CAP_SYS_PTRACE against nobody's: the container case. */
    tdb_error_clear(&err);
    assert_int_equal(check(t, "root-nocap", nobodys, &err), TDB_REFUSAL_OTHER_USER);
    assert_true(contains(err.msg, "it runs as user 'nobody' and tdebug runs as root without "
                                  "CAP_SYS_PTRACE"));
    assert_true(contains(err.msg, "--cap-add=SYS_PTRACE"));

    /* Full root may; nobody may trace its own. */
    tdb_error_clear(&err);
    assert_int_equal(check(t, "root", nobodys, &err), TDB_REFUSAL_NONE);
    assert_int_equal(check(t, "nobody", nobodys, &err), TDB_REFUSAL_NONE);
    assert_false(err.set);

    /* A set-user-ID program: same real uid, another effective one. */
    tdb_proc *p = tdb_proc_table_lookup(t, nobodys, NULL);
    p->euid = 0;
    assert_int_equal(check(t, "nobody", nobodys, &err), TDB_REFUSAL_OTHER_USER);
    assert_true(contains(err.msg, "it runs as user 'root' (set-user-ID)"));
    p->euid = p->uid;
    tdb_error_clear(&err);
    p->egid = 0;
    assert_int_equal(check(t, "nobody", nobodys, &err), TDB_REFUSAL_OTHER_GROUP);
    assert_true(contains(err.msg, "it runs with group 'root' (set-group-ID)"));
    tdb_proc_table_free(t);
}

static void test_refusal_capabilities(void **state)
{
    /* root without CAP_SYS_PTRACE against root's full-capability process:
     * same uid, but commoncap wants the target's permitted set to be a
     * subset of the tracer's. */
    tdb_proc_table *t = load_tree("misc");
    pid_t torch = pid_where("misc", "note", "venv");
    tdb_error err = {0};
    assert_int_equal(check(t, "root-nocap", torch, &err), TDB_REFUSAL_CAPABILITIES);
    assert_true(contains(err.msg, "it holds capabilities tdebug lacks"));
    assert_true(contains(err.msg, "--cap-add=SYS_PTRACE"));
    tdb_proc_table_free(t);
}

static void test_refusal_yama(void **state)
{
    tdb_proc_table *t = load_tree("misc");
    pid_t nobodys = pid_where("misc", "note", "nobody's");
    pid_t venv = pid_where("misc", "note", "venv");
    tdb_error err = {0};

    assert_int_equal(check(t, "yama1", nobodys, &err), TDB_REFUSAL_YAMA);
    assert_true(contains(err.msg, "kernel.yama.ptrace_scope is 1"));
    assert_true(contains(err.msg, "start the program under 'tdebug run' instead"));
    assert_true(contains(err.msg, "sudo sysctl kernel.yama.ptrace_scope=0"));
    assert_true(contains(err.msg, "sudo setcap cap_sys_ptrace+ep " NO_GDB));

    tdb_error_clear(&err);
    assert_int_equal(check(t, "yama2", nobodys, &err), TDB_REFUSAL_YAMA);
    assert_true(contains(err.msg, "kernel.yama.ptrace_scope is 2"));
    assert_true(contains(err.msg, "sudo tdebug attach"));
    assert_true(contains(err.msg, "setcap cap_sys_ptrace+ep"));

    tdb_error_clear(&err);
    assert_int_equal(check(t, "yama3", nobodys, &err), TDB_REFUSAL_PTRACE_DISABLED);
    assert_true(contains(err.msg, "kernel.yama.ptrace_scope is 3"));
    assert_true(contains(err.msg, "reboot"));

    /* Scope 2 lets root (CAP_SYS_PTRACE) through. */
    tdb_error_clear(&err);
    assert_int_equal(check(t, "root-yama2", venv, &err), TDB_REFUSAL_NONE);

    /* Without Yama, the recorded tracers say so. */
    tdb_tracer tr;
    load_tracer(&tr, "nobody");
    assert_int_equal(tr.yama_scope, -1);
    tdb_tracer_release(&tr);
    load_tracer(&tr, "yama2");
    assert_int_equal(tr.yama_scope, 2);
    assert_int_equal(tr.uid, 65534);
    assert_false(tr.cap_sys_ptrace);
    tdb_tracer_release(&tr);
    tdb_proc_table_free(t);
}

static void test_refusals_for_stacks(void **state)
{
    /* 'tdebug stacks' traces itself, any process: its words, its advice,
     * its own capabilities rather than gdb's. */
    tdb_proc_table *t = load_tree("misc");
    pid_t roots = pid_where("misc", "note", "root's, seen by another user");
    pid_t nobodys = pid_where("misc", "note", "nobody's");
    pid_t venv = pid_where("misc", "note", "venv");
    pid_t sleeper = pid_where("misc", "refusal", "not-python");
    tdb_error err = {0};
    char want[256];

    assert_int_equal(check_for(t, &tdb_purpose_stacks, "nobody", roots, &err),
                     TDB_REFUSAL_OTHER_USER);
    snprintf(want, sizeof(want),
             "cannot read the stacks of pid %d: it runs as user 'root' and tdebug runs as "
             "'nobody' (run tdebug as root, e.g. 'sudo tdebug stacks %d')",
             (int)roots, (int)roots);
    assert_string_equal(err.msg, want);
    assert_int_equal(err.code, EPERM);

    /* Any process has native stacks: no refusal for not running Python. */
    tdb_error_clear(&err);
    assert_int_equal(check_for(t, &tdb_purpose_attach, "root", sleeper, &err),
                     TDB_REFUSAL_NOT_PYTHON);
    tdb_error_clear(&err);
    assert_int_equal(check_for(t, &tdb_purpose_stacks, "root", sleeper, &err), TDB_REFUSAL_NONE);

    /* Yama: no gdb to setcap, no 'tdebug run' to suggest. */
    tdb_error_clear(&err);
    assert_int_equal(check_for(t, &tdb_purpose_stacks, "yama1", nobodys, &err), TDB_REFUSAL_YAMA);
    assert_true(contains(err.msg, "kernel.yama.ptrace_scope is 1"));
    assert_true(contains(err.msg, "'sudo tdebug stacks "));
    assert_true(contains(err.msg, "sudo sysctl kernel.yama.ptrace_scope=0"));
    assert_null(strstr(err.msg, "setcap"));
    assert_null(strstr(err.msg, "tdebug run"));
    tdb_error_clear(&err);
    assert_int_equal(check_for(t, &tdb_purpose_stacks, "yama2", nobodys, &err), TDB_REFUSAL_YAMA);
    assert_true(contains(err.msg, "kernel.yama.ptrace_scope is 2"));
    assert_null(strstr(err.msg, "setcap"));

    /* The capabilities compared are tdebug's own. */
    tdb_error_clear(&err);
    assert_int_equal(check_for(t, &tdb_purpose_stacks, "root-nocap", venv, &err),
                     TDB_REFUSAL_CAPABILITIES);
    assert_true(contains(err.msg, ", tdebug runs with 0x"));

    /* A tracer seen at the time (EBUSY) and gone by now. */
    tdb_tracer tr;
    load_tracer(&tr, "root");
    tdb_error_clear(&err);
    assert_int_equal(tdb_trace_explain(t, &tr, &tdb_purpose_stacks, sleeper, EBUSY, &err),
                     TDB_REFUSAL_UNKNOWN);
    assert_true(contains(err.msg, ": another process was tracing it at that moment"));
    tdb_tracer_release(&tr);

    /* Without a verb: the reason alone, for a note. */
    tdb_trace_purpose note = tdb_purpose_stacks;
    note.verb = NULL;
    tdb_error_clear(&err);
    assert_int_equal(check_for(t, &note, "nobody", roots, &err), TDB_REFUSAL_OTHER_USER);
    assert_true(!strncmp(err.msg, "it runs as user 'root' and tdebug runs as 'nobody'", 50));
    tdb_proc_table_free(t);
}

static void test_tracer_as_root(void **state)
{
    /* What sudo or pkexec make of a refused tracer (VS Code's C/C++
     * extension starts gdb that way to attach under Yama). */
    tdb_proc_table *t = load_tree("misc");
    pid_t roots = pid_where("misc", "note", "venv");
    tdb_tracer tr;
    tdb_error err = {0};

    load_tracer(&tr, "yama1");
    assert_int_equal(tdb_attach_check(t, &tr, roots, &err), TDB_REFUSAL_OTHER_USER);
    /* A user session's bounding set is full: root's gdb holds
     * CAP_SYS_PTRACE and Yama lets it through. */
    tr.cap_bnd = ~0ULL >> (64 - 41);
    tdb_tracer_as_root(&tr);
    assert_int_equal(tr.uid, 0);
    assert_string_equal(tr.user, "root");
    assert_true(tr.cap_sys_ptrace);
    tdb_error_clear(&err);
    assert_int_equal(tdb_attach_check(t, &tr, roots, &err), TDB_REFUSAL_NONE);
    tdb_tracer_release(&tr);

    /* The recorded nobody has an empty bounding set: root without
     * CAP_SYS_PTRACE, refused as such. */
    load_tracer(&tr, "yama1");
    tdb_tracer_as_root(&tr);
    assert_false(tr.cap_sys_ptrace);
    tdb_error_clear(&err);
    assert_int_equal(tdb_attach_check(t, &tr, pid_where("misc", "note", "nobody's"), &err),
                     TDB_REFUSAL_OTHER_USER);
    assert_true(contains(err.msg, "tdebug runs as root without CAP_SYS_PTRACE"));
    tdb_tracer_release(&tr);

    /* Scope 3 refuses root too. */
    load_tracer(&tr, "yama3");
    tr.cap_bnd = ~0ULL >> (64 - 41);
    tdb_tracer_as_root(&tr);
    tdb_error_clear(&err);
    assert_int_equal(tdb_attach_check(t, &tr, roots, &err), TDB_REFUSAL_PTRACE_DISABLED);
    tdb_tracer_release(&tr);
    tdb_proc_table_free(t);
}

static void test_refusal_process_states(void **state)
{
    tdb_proc_table *t = load_tree("misc");
    pid_t zombie = pid_where("misc", "refusal", "zombie");
    pid_t sleeper = pid_where("misc", "refusal", "not-python");
    pid_t traced = pid_where("misc", "refusal", "traced");
    pid_t gdb = pid_where("misc", "note", "gdb embeds libpython");
    tdb_proc *tp = tdb_proc_table_lookup(t, traced, NULL);
    tdb_error err = {0};
    char want[512];

    assert_int_equal(check(t, "root", zombie, &err), TDB_REFUSAL_ZOMBIE);
    assert_true(contains(err.msg, "it is a zombie"));
    assert_int_equal(err.code, ESRCH);

    tdb_error_clear(&err);
    assert_int_equal(check(t, "root", 2, &err), TDB_REFUSAL_KERNEL_THREAD);
    assert_string_equal(err.msg, "cannot attach to pid 2: it is a kernel thread ('kthreadd'), "
                                 "not a program (give the pid of a Python process; 'tdebug ps' "
                                 "lists them)");

    tdb_error_clear(&err);
    assert_int_equal(check(t, "root", sleeper, &err), TDB_REFUSAL_NOT_PYTHON);
    assert_true(contains(err.msg, "it is not a Python process (it runs '/usr/bin/sleep'"));
    tdb_error_clear(&err);
    assert_int_equal(check(t, "root", gdb, &err), TDB_REFUSAL_NOT_PYTHON);

    tdb_error_clear(&err);
    assert_int_equal(check(t, "root", traced, &err), TDB_REFUSAL_TRACED);
    snprintf(want, sizeof(want),
             "cannot attach to pid %d: it is already traced by pid %d (ptrace-holder) (a process "
             "has only one tracer: detach or quit that debugger first)",
             (int)traced, (int)tp->tracer_pid);
    assert_string_equal(err.msg, want);

    tdb_error_clear(&err);
    assert_int_equal(check(t, "root", 999999, &err), TDB_REFUSAL_NO_PROCESS);
    assert_int_equal(err.code, ESRCH);
    tdb_proc_table_free(t);
}

static void test_refusal_from_tracer_state(void **state)
{
    tdb_proc_table *t = load_tree("misc");
    pid_t nobodys = pid_where("misc", "note", "nobody's");
    pid_t venv = pid_where("misc", "note", "venv");
    tdb_tracer tr;
    tdb_error err = {0};

    load_tracer(&tr, "nobody");
    /* Even tracing its own child failed: seccomp or a security module. */
    tr.probe_errno = EPERM;
    assert_int_equal(tdb_attach_check(t, &tr, nobodys, &err), TDB_REFUSAL_PTRACE_BLOCKED);
    assert_true(contains(err.msg, "ptrace is blocked for tdebug: tracing even its own child "
                                  "failed: Operation not permitted"));
    assert_true(contains(err.msg, "seccomp"));
    tr.probe_errno = 0;

    /* Not dumpable: only root may. */
    tdb_proc *p = tdb_proc_table_lookup(t, nobodys, NULL);
    p->dumpable = TDB_NO;
    tdb_error_clear(&err);
    assert_int_equal(tdb_attach_check(t, &tr, nobodys, &err), TDB_REFUSAL_NOT_DUMPABLE);
    assert_true(contains(err.msg, "it is not dumpable"));
    p->dumpable = TDB_YES;

    /* tdebug itself. */
    tr.pid = nobodys;
    tdb_error_clear(&err);
    assert_int_equal(tdb_attach_check(t, &tr, nobodys, &err), TDB_REFUSAL_SELF);
    tdb_tracer_release(&tr);

    /* The kernel already denied reading its exe. */
    load_tracer(&tr, "root");
    p = tdb_proc_table_lookup(t, venv, NULL);
    p->exe_errno = EACCES;
    tdb_error_clear(&err);
    assert_int_equal(tdb_attach_check(t, &tr, venv, &err), TDB_REFUSAL_ACCESS_DENIED);
    assert_true(contains(err.msg, "Permission denied"));
    p->exe_errno = 0;

    /* After the fact, with nothing visible: the system's words. */
    tdb_error_clear(&err);
    assert_int_equal(tdb_attach_explain(t, &tr, venv, EPERM, &err), TDB_REFUSAL_UNKNOWN);
    assert_true(contains(err.msg, "Operation not permitted (none of the usual reasons"));
    /* ...and with a visible one, that one. */
    tdb_error_clear(&err);
    assert_int_equal(tdb_attach_explain(t, &tr, 2, EPERM, &err), TDB_REFUSAL_KERNEL_THREAD);
    tdb_tracer_release(&tr);
    tdb_proc_table_free(t);
}

static void test_attach_resolve(void **state)
{
    tdb_tracer tr;
    tdb_resolution res;
    tdb_refusal r;
    tdb_error err = {0};

    load_tracer(&tr, "root");
    tdb_proc_table *t = load_tree("launch-child");
    pid_t adapter = pid_where("launch-child", "role", "adapter");
    assert_int_equal(tdb_attach_resolve(t, &tr, adapter, &res, &r, &err), 1);
    assert_int_equal(r, TDB_REFUSAL_AMBIGUOUS);
    assert_int_equal(res.ncandidates, 2);
    assert_true(contains(err.msg, "cannot choose the process behind pid"));
    tdb_resolution_release(&res);
    tdb_proc_table_free(t);

    t = load_tree("launch");
    pid_t launcher = pid_where("launch", "role", "launcher");
    pid_t debuggee = pid_where("launch", "role", "debuggee");
    tdb_error_clear(&err);
    assert_int_equal(tdb_attach_resolve(t, &tr, launcher, &res, &r, &err), 0);
    assert_int_equal(r, TDB_REFUSAL_NONE);
    assert_int_equal(res.pid, debuggee);
    assert_non_null(res.note);
    tdb_resolution_release(&res);
    /* The debuggee refused (traced): OUT still says which process. */
    tdb_proc_table_lookup(t, debuggee, NULL)->tracer_pid = 1;
    assert_int_equal(tdb_attach_resolve(t, &tr, launcher, &res, &r, &err), -1);
    assert_int_equal(r, TDB_REFUSAL_TRACED);
    assert_int_equal(res.pid, debuggee);
    tdb_resolution_release(&res);
    tdb_proc_table_free(t);
    tdb_tracer_release(&tr);
}

/* --- adapters' addresses and debugpy.listen() */

static void test_adapter_endpoints(void **state)
{
    /* The adapter of a server takes clients where the program listens;
     * VS Code's own adapter speaks DAP on stdio. */
    tdb_proc_table *t = load_tree("listen");
    tdb_proc *a = tdb_proc_table_lookup(t, pid_where("listen", "role", "adapter"), NULL);
    assert_string_equal(a->endpoint, "127.0.0.1:39213");
    tdb_proc_table_free(t);
    t = load_tree("embedded");
    a = tdb_proc_table_lookup(t, pid_where("embedded", "role", "adapter"), NULL);
    assert_string_equal(a->endpoint, "127.0.0.1:49319");
    tdb_proc_table_free(t);
    t = load_tree("launch");
    a = tdb_proc_table_lookup(t, pid_where("launch", "role", "adapter"), NULL);
    assert_null(a->endpoint);
    tdb_proc_table_free(t);
}

/* In TREE's copy DIR, replace FROM by TO (both NUL-terminated words, the
 * NULs included) in PID's command line. */
static void edit_cmdline(const char *dir, pid_t pid, const char *from, size_t from_len,
                         const char *to, size_t to_len)
{
    char *path = tdb_xasprintf("%s/%d/cmdline", dir, (int)pid);
    size_t len;
    char *text = tdb_read_file(path, &len, NULL);
    assert_non_null(text);
    char *at = memmem(text, len, from, from_len);
    assert_non_null(at);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fwrite(text, 1, (size_t)(at - text), f);
    fwrite(to, 1, to_len, f);
    fwrite(at + from_len, 1, len - (size_t)(at - text) - from_len, f);
    assert_int_equal(fclose(f), 0);
    free(text);
    free(path);
}

static void test_debugpy_listen_port_zero(void **state)
{
    /* debugpy.listen(0): the adapter is told '--port 0'; the port it got
     * is its listening socket that the program is not connected to. */
    pid_t program = pid_where("embedded", "role", "embedded");
    pid_t adapter = pid_where("embedded", "role", "adapter");
    char *dir = copy_tree("embedded");
    static const char from[] = "\0--port\00049319", to[] = "\0--port=0";
    edit_cmdline(dir, adapter, from, sizeof(from) - 1, to, sizeof(to) - 1);
    tdb_error err = {0};
    tdb_proc_table *t = tdb_proc_table_read(dir, &err);
    assert_string_equal(tdb_proc_table_lookup(t, adapter, NULL)->endpoint, "127.0.0.1:0");
    char *host = NULL;
    int port = 0;
    assert_int_equal(tdb_proc_debugpy_server(t, program, &host, &port), 1);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 49319);
    free(host);
    tdb_proc_table_free(t);

    /* Its sockets unreadable (another user's adapter): nothing to tell. */
    remove_from_tree(dir, adapter, "fd");
    t = tdb_proc_table_read(dir, &err);
    assert_int_equal(tdb_proc_debugpy_server(t, program, &host, &port), 0);
    tdb_proc_table_free(t);
    remove_tree(dir);
}

/* --- the live system: these processes exist on any Linux */

/* tdb_trace_try(): the kernel's answer to a seize, let go at once (the
 * child that seized has exited): the process runs on, untraced. */
static void test_trace_try(void **state)
{
    (void)state;
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    assert_int_equal(tdb_trace_try(child), 0);
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)child);
    char *status = tdb_read_file(path, NULL, NULL);
    assert_non_null(status);
    assert_true(contains(status, "TracerPid:\t0\n"));
    free(status);
    assert_int_equal(kill(child, 0), 0); /* still there */
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    /* gone: the kernel says so */
    assert_int_equal(tdb_trace_try(child), ESRCH);
}

static void test_live_prepare_and_explain(void **state)
{
    tdb_resolution res;
    tdb_refusal r;
    tdb_error err = {0};

    /* This test binary itself. */
    assert_int_equal(tdb_attach_prepare(getpid(), NO_GDB, &res, &r, &err), -1);
    assert_int_equal(r, TDB_REFUSAL_SELF);
    assert_true(contains(err.msg, "that is tdebug itself"));
    tdb_resolution_release(&res);

    /* A child that is not Python. */
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    tdb_error_clear(&err);
    assert_int_equal(tdb_attach_prepare(child, NO_GDB, &res, &r, &err), -1);
    /* Until it has exec'd nothing, the child is this (non-Python) program. */
    assert_int_equal(r, TDB_REFUSAL_NOT_PYTHON);
    tdb_resolution_release(&res);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);

    /* After the fact: it is gone now. */
    tdb_error_clear(&err);
    assert_int_equal(tdb_ptrace_explain(child, NO_GDB, ESRCH, &err), TDB_REFUSAL_NO_PROCESS);
    assert_true(contains(err.msg, "no such process"));

    /* The probe: ptrace works for a test run (no seccomp filter here) or
     * says why not. */
    tdb_tracer tr;
    assert_int_equal(tdb_tracer_read(&tr, NULL, NO_GDB, &err), 0);
    assert_int_equal(tr.pid, getpid());
    int e = tdb_tracer_probe(&tr);
    assert_true(e == 0 || e == EPERM || e == EACCES);
    tdb_tracer_release(&tr);
}

/* --- names and display */

static void test_python_names(void **state)
{
    static const char *yes[] = {"python", "python3", "python3.11", "python3.11d", "python2.7",
                                "python3.12m"};
    static const char *no[] = {"python-config", "python3.11-config", "pythonw", "pythonista",
                               "ipython", "py", "python3.", "sleep", ""};
    for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
        if (!tdb_is_python_name(yes[i]))
            fail_msg("'%s' should be a Python name", yes[i]);
    for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
        if (tdb_is_python_name(no[i]))
            fail_msg("'%s' should not be a Python name", no[i]);
}

static void test_short_command(void **state)
{
    tdb_proc_table *t = load_tree("launch");
    tdb_proc *d = tdb_proc_table_lookup(t, pid_where("launch", "role", "debuggee"), NULL);
    char *s = tdb_proc_short_command(d, 0);
    assert_true(contains(s, "/usr/bin/python3 -X frozen_modules=off .../debugpy --connect "));
    assert_true(contains(s, "--adapter-access-token ... "));
    free(s);
    /* Narrower: the interpreter's directory, its options and debugpy's
     * go first; the script debugpy runs, and what it runs first, stay. */
    s = tdb_proc_short_command(d, 100);
    assert_true(strlen(s) <= 100);
    assert_true(contains(s, ".../python3 ... .../debugpy ... "));
    assert_true(contains(s, "/tmp/tdebug-record-xiujo00x/launch_36995.py"));
    free(s);
    s = tdb_proc_short_command(d, 40);
    assert_string_equal(s, ".../python3 ... .../debugpy ... .../launch_36995.py ...");
    free(s);
    s = tdb_proc_short_command(d, 10); /* the name is never cut */
    assert_true(contains(s, "launch_36995.py"));
    free(s);
    tdb_proc *l = tdb_proc_table_lookup(t, pid_where("launch", "role", "launcher"), NULL);
    s = tdb_proc_short_command(l, 90);
    assert_string_equal(s, ".../python3 .../debugpy/launcher ... "
                           "/tmp/tdebug-record-xiujo00x/launch_36995.py ...");
    free(s);
    tdb_proc *a = tdb_proc_table_lookup(t, 2, NULL);
    assert_null(a); /* not in this tree */
    tdb_proc_table_free(t);

    t = load_tree("misc");
    s = tdb_proc_short_command(tdb_proc_table_lookup(t, 2, NULL), 0);
    assert_string_equal(s, "[kthreadd]");
    free(s);
    tdb_proc_table_free(t);
}

/* A table row is one line of UTF-8 whatever a command line holds: control
 * characters and bytes that are not UTF-8 are shown as \xNN (another
 * user's process with such an argument made 'tdebug ps' print bytes a
 * terminal or a UTF-8 reader of the table cannot take). */
static void test_short_command_is_printable_utf8(void **state)
{
    (void)state;
    char *argv[] = {"/usr/bin/python3", "prog.py", "caf\xc3\xa9", "\xff\xfe" "end", "a\tb\nc\x01",
                    "cut\xc3", NULL};
    tdb_proc p = {.argv = argv, .argc = 6, .comm = "python3"};
    char *s = tdb_proc_short_command(&p, 0);
    assert_string_equal(s, "/usr/bin/python3 prog.py caf\xc3\xa9 \\xff\\xfeend a\\tb\\nc\\x01 cut\\xc3");
    assert_true(tdb_utf8_valid(s, strlen(s)));
    free(s);
    tdb_proc zombie = {.comm = "n\xffme"};
    s = tdb_proc_short_command(&zombie, 0);
    assert_string_equal(s, "[n\\xffme]");
    free(s);
}

static void test_short_command_keeps_the_script(void **state)
{
    char *argv[] = {"/root/.pyenv/versions/3.11.7/bin/python3.11", "-X", "dev", "-u",
                    "/home/alice/projects/very/long/path/train.py", "--epochs", "10", "--lr",
                    "0.1", NULL};
    tdb_proc p = {.argv = argv, .argc = 9, .comm = "python3.11"};
    char *s = tdb_proc_short_command(&p, 0);
    assert_string_equal(s, "/root/.pyenv/versions/3.11.7/bin/python3.11 -X dev -u "
                           "/home/alice/projects/very/long/path/train.py --epochs 10 --lr 0.1");
    free(s);
    s = tdb_proc_short_command(&p, 85);
    assert_string_equal(s, ".../python3.11 ... /home/alice/projects/very/long/path/train.py "
                           "--epochs 10 --lr 0.1");
    free(s);
    s = tdb_proc_short_command(&p, 76);
    assert_string_equal(s, ".../python3.11 ... /home/alice/projects/very/long/path/train.py "
                           "--epochs ...");
    free(s);
    s = tdb_proc_short_command(&p, 60);
    assert_string_equal(s, ".../python3.11 ... .../train.py --epochs 10 --lr 0.1");
    free(s);
    s = tdb_proc_short_command(&p, 30);
    assert_string_equal(s, ".../python3.11 ... .../train.py ...");
    free(s);

    char *code[] = {"/usr/bin/python3", "-c",
                    "import time\nwhile True: time.sleep(1)  # \xc3\xa9\xc3\xa9\xc3\xa9 a comment", "x",
                    NULL};
    tdb_proc c = {.argv = code, .argc = 4, .comm = "python3"};
    s = tdb_proc_short_command(&c, 40);
    assert_true(strlen(s) <= 40);
    assert_string_equal(s, ".../python3 -c import time\\nwhile... ...");
    assert_true(strstr(s, "... ...") != NULL); /* the code cut, then the argument */
    free(s);
    for (size_t max = 20; max < 90; max++) { /* never a UTF-8 sequence cut in two */
        s = tdb_proc_short_command(&c, max);
        assert_true(tdb_utf8_valid(s, strlen(s)));
        free(s);
    }
}

/* The one reader of /proc status and stat text (process/procfs.h), which
 * targets/proc.c, targets/ptrace_check.c and process/procfs.c share. */
static void test_status_and_stat_text(void **state)
{
    (void)state;
    const char *status = "Name:\tpython3\nUmask:\t0022\nTgid:\t41\nPid:\t42\n"
                         "TracerPid:\t0\nUid:\t1000\t1001\t1002\t1003\nCapEff:\t00000000a80425fb";
    /* A pointer into the text: the value runs to its line's end. */
    assert_int_equal(strncmp(tdb_status_value(status, "Name"), "python3\nUmask:", 14), 0);
    assert_int_equal(atoi(tdb_status_value(status, "Pid")), 42);
    assert_int_equal(atoi(tdb_status_value(status, "Tgid")), 41);
    assert_string_equal(tdb_status_value(status, "CapEff"), "00000000a80425fb");
    assert_int_equal(strncmp(tdb_status_value(status, "Uid"), "1000\t1001", 9), 0);
    assert_null(tdb_status_value(status, "Ppid"));
    assert_null(tdb_status_value(status, "Ui")); /* a prefix of a name is no name */
    assert_null(tdb_status_value("", "Pid"));

    const char *comm;
    size_t len;
    const char *f = tdb_stat_fields("12 (a) (b) c) S 1 12 12 0 -1 4194560", &comm, &len);
    assert_non_null(f);
    assert_int_equal(len, 8);
    assert_memory_equal(comm, "a) (b) c", 8);
    assert_string_equal(f, "S 1 12 12 0 -1 4194560");
    assert_null(tdb_stat_fields("12 no name S 1", NULL, NULL));
    assert_null(tdb_stat_fields("12 (cut", NULL, NULL));
}

/* tdb_python_child() on live children of this (non-Python) test: one gone
 * before it is read, a fork that stays a copy, an exec of another program.
 * A Python child is the end-to-end tests' (test_dap_subprocess.py). */
static void test_python_child_gone_copy_or_other(void **state)
{
    (void)state;
    char *cmd = NULL;
    pid_t gone = fork();
    assert_true(gone >= 0);
    if (gone == 0)
        _exit(0);
    assert_int_equal(waitpid(gone, NULL, 0), gone);
    assert_int_equal(tdb_python_child(getpid(), gone, 50, &cmd), -1);
    assert_null(cmd);

    pid_t copy = fork();
    assert_true(copy >= 0);
    if (copy == 0) {
        pause();
        _exit(0);
    }
    assert_int_equal(tdb_python_child(getpid(), copy, 20, &cmd), 0);
    assert_null(cmd);
    kill(copy, SIGKILL);
    waitpid(copy, NULL, 0);

    int ready[2];
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    pid_t other = fork();
    assert_true(other >= 0);
    if (other == 0) {
        close(ready[0]);
        execl("/bin/sleep", "sleep", "600", (char *)NULL);
        _exit(127);
    }
    close(ready[1]);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 0); /* closed by the exec */
    close(ready[0]);
    assert_int_equal(tdb_python_child(getpid(), other, 5000, &cmd), 0);
    assert_null(cmd);
    kill(other, SIGKILL);
    waitpid(other, NULL, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_and_stat_text),
        cmocka_unit_test(test_short_command_is_printable_utf8),
        cmocka_unit_test(test_tree_listen),
        cmocka_unit_test(test_tree_launch),
        cmocka_unit_test(test_tree_launch_child),
        cmocka_unit_test(test_tree_embedded),
        cmocka_unit_test(test_tree_misc),
        cmocka_unit_test(test_resolution_notes),
        cmocka_unit_test(test_thread_resolves_to_process),
        cmocka_unit_test(test_listen_adapter_peers),
        cmocka_unit_test(test_adapter_unreadable_or_alone),
        cmocka_unit_test(test_no_such_pid),
        cmocka_unit_test(test_adapter_endpoints),
        cmocka_unit_test(test_debugpy_listen_port_zero),
        cmocka_unit_test(test_refusal_other_user),
        cmocka_unit_test(test_refusal_capabilities),
        cmocka_unit_test(test_refusal_yama),
        cmocka_unit_test(test_refusals_for_stacks),
        cmocka_unit_test(test_tracer_as_root),
        cmocka_unit_test(test_refusal_process_states),
        cmocka_unit_test(test_refusal_from_tracer_state),
        cmocka_unit_test(test_attach_resolve),
        cmocka_unit_test(test_trace_try),
        cmocka_unit_test(test_live_prepare_and_explain),
        cmocka_unit_test(test_python_names),
        cmocka_unit_test(test_short_command),
        cmocka_unit_test(test_short_command_keeps_the_script),
        cmocka_unit_test(test_python_child_gone_copy_or_other),
    };
    return cmocka_run_group_tests_name("proc", tests, NULL, NULL);
}

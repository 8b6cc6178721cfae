/*
 * test_doctor.c: the ptrace policy check against fake /proc trees (this
 * machine has no Yama, so every ptrace_scope value is tried here through
 * the root-path parameter), and a pid that does not exist.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "checks/doctor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tmp_tree.h"

/* /proc/self/status as root, as a user, and as root in a Docker container
 * (its default capability set has no SYS_PTRACE). */
#define CAPS_ROOT "Uid:\t0\t0\t0\t0\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n" \
                  "CapBnd:\t000001ffffffffff\n"
#define CAPS_USER "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n" \
                  "CapBnd:\t000001ffffffffff\n"
#define CAPS_CONTAINER "Uid:\t0\t0\t0\t0\nCapPrm:\t00000000a80425fb\n" \
                       "CapEff:\t00000000a80425fb\nCapBnd:\t00000000a80425fb\n"

static tdb_check policy(const char *scope, const char *caps)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s/proc'", tmp_tree);
    assert_int_equal(system(cmd), 0);
    if (scope)
        tmp_tree_write("/proc/sys/kernel/yama/ptrace_scope", scope);
    if (caps)
        tmp_tree_write("/proc/self/status", caps);
    tdb_check c = {0};
    tdb_doctor_ptrace_policy(tmp_tree, NULL, &c);
    assert_string_equal(c.id, "ptrace-policy");
    assert_non_null(c.summary);
    return c;
}

static void check_free(tdb_check *c)
{
    free(c->summary);
    free(c->remedy);
}

static void expect(const char *scope, const char *caps, tdb_check_status status,
                   const char *summary_has, const char *remedy_has)
{
    tdb_check c = policy(scope, caps);
    if (c.status != status)
        fail_msg("scope %s: status %s, want %s (%s)", scope ? scope : "none",
                 tdb_check_status_name(c.status), tdb_check_status_name(status), c.summary);
    if (!strstr(c.summary, summary_has))
        fail_msg("scope %s: summary '%s' lacks '%s'", scope ? scope : "none", c.summary,
                 summary_has);
    if (remedy_has) {
        assert_non_null(c.remedy);
        if (!strstr(c.remedy, remedy_has))
            fail_msg("scope %s: remedy '%s' lacks '%s'", scope ? scope : "none", c.remedy,
                     remedy_has);
    } else {
        assert_null(c.remedy);
    }
    check_free(&c);
}

static void test_yama_scopes(void **state)
{
    (void)state;
    expect("0\n", CAPS_USER, TDB_CHECK_OK, "ptrace_scope 0", NULL);
    expect("1\n", CAPS_USER, TDB_CHECK_WARN, "'tdebug run' works",
           "sudo sysctl kernel.yama.ptrace_scope=0");
    expect("1\n", CAPS_ROOT, TDB_CHECK_OK, "CAP_SYS_PTRACE: yes", NULL);
    expect("2\n", CAPS_USER, TDB_CHECK_FAIL, "only CAP_SYS_PTRACE may trace",
           "kernel.yama.ptrace_scope=1");
    expect("2\n", CAPS_ROOT, TDB_CHECK_OK, "admin only", NULL);
    expect("3\n", CAPS_ROOT, TDB_CHECK_FAIL, "disabled for everyone", "reboot");
    expect("7\n", CAPS_USER, TDB_CHECK_WARN, "cannot read Yama's ptrace_scope", "cat ");
    expect("", CAPS_USER, TDB_CHECK_WARN, "cannot read Yama's ptrace_scope", "cat ");
}

static void test_no_yama_and_containers(void **state)
{
    (void)state;
    expect(NULL, CAPS_ROOT, TDB_CHECK_OK, "no Yama LSM", NULL);
    expect(NULL, CAPS_USER, TDB_CHECK_OK, "CAP_SYS_PTRACE: no", NULL);
    /* Docker's default set: no SYS_PTRACE even in the bounding set. */
    expect(NULL, CAPS_CONTAINER, TDB_CHECK_OK, "a container without SYS_PTRACE",
           "--cap-add=SYS_PTRACE");
    /* No status file: the policy is unknown, not a crash. */
    expect("0\n", NULL, TDB_CHECK_WARN, "the ptrace policy is unknown: cannot open",
           "tried it for real");
}

static void test_ptrace_pid_of_no_process(void **state)
{
    (void)state;
    tdb_check c = {0};
    tdb_doctor_ptrace_pid(0x7ffffff0, NULL, &c);
    assert_int_equal(c.status, TDB_CHECK_FAIL);
    assert_string_equal(c.id, "ptrace-pid");
    assert_non_null(strstr(c.summary, "cannot attach to pid 2147483632"));
    assert_non_null(c.remedy);
    check_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yama_scopes),
        cmocka_unit_test(test_no_yama_and_containers),
        cmocka_unit_test(test_ptrace_pid_of_no_process),
    };
    return cmocka_run_group_tests(tests, tmp_tree_setup, tmp_tree_teardown);
}

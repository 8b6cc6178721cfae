/*
 * test_pidns.c: thread ids across PID namespaces (src/process/pidns.c) on
 * fake /proc trees, and Python threads matched to a core's threads by
 * their thread pointer (src/cpython/threadids.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "cpython/threadids.h"
#include "process/pidns.h"

#include <string.h>

#include "tmp_tree.h"

/* A process seen from the host: host pid 4321 is pid 7 in its container,
 * two threads; and process 500, in our namespace. */
static void make_tree(void)
{
    tmp_tree_write("/4321/status", "Name:\tpython3\nTgid:\t4321\nNSpid:\t4321\t7\nPPid:\t1\n");
    tmp_tree_write("/4321/task/4321/status", "Name:\tpython3\nNSpid:\t4321\t7\n");
    tmp_tree_write("/4321/task/4330/status", "Name:\tpython3\nNSpid:\t4330\t9\n");
    tmp_tree_write("/500/status", "Name:\tpython3\nNSpid:\t500\n");
    tmp_tree_write("/500/task/500/status", "Name:\tpython3\nNSpid:\t500\n");
    /* Two levels deep: a container in a container. */
    tmp_tree_write("/900/status", "Name:\tpython3\nNSpid:\t900\t40\t3\n");
    tmp_tree_write("/900/task/900/status", "Name:\tpython3\nNSpid:\t900\t40\t3\n");
    /* A kernel older than 4.1: no NSpid line at all. */
    tmp_tree_write("/600/status", "Name:\tpython3\nPPid:\t1\n");
}

static void test_inner_pid(void **state)
{
    (void)state;
    make_tree();
    pid_t ids[4];
    assert_int_equal(tdb_pidns_ids(tmp_tree, 4321, ids, 4), 2);
    assert_int_equal(ids[0], 4321);
    assert_int_equal(ids[1], 7);
    assert_int_equal(tdb_pidns_inner_pid(tmp_tree, 4321), 7);
    assert_int_equal(tdb_pidns_inner_pid(tmp_tree, 500), 500);
    assert_int_equal(tdb_pidns_inner_pid(tmp_tree, 900), 3);
    assert_int_equal(tdb_pidns_inner_pid(tmp_tree, 600), 600); /* no NSpid: ours */
    assert_int_equal(tdb_pidns_inner_pid(tmp_tree, 12345), 0); /* gone */
}

static void test_map_of_a_container_process(void **state)
{
    (void)state;
    make_tree();
    assert_null(tdb_pidns_map_new(tmp_tree, 500)); /* ours: nothing to map */
    assert_null(tdb_pidns_map_new(tmp_tree, 12345));
    tdb_pidns_map *m = tdb_pidns_map_new(tmp_tree, 4321);
    assert_non_null(m);
    assert_int_equal(tdb_pidns_map_inner_pid(m), 7);
    assert_int_equal(tdb_pidns_host_tid(m, 7), 4321);
    assert_int_equal(tdb_pidns_host_tid(m, 9), 4330);
    assert_int_equal(tdb_pidns_ns_tid(m, 4330), 9);
    assert_int_equal(tdb_pidns_ns_tid(m, 4321), 7);
    assert_int_equal(tdb_pidns_ns_tid(m, 1), 0);
    /* A number the container does not use: none, never a host thread
     * that happens to have it. */
    assert_int_equal(tdb_pidns_host_tid(m, 4330), 0);
    assert_int_equal(tdb_pidns_host_tid(m, 0), 0);
    /* A thread started after the map was made is found by reading the
     * task list again. */
    tmp_tree_write("/4321/task/4400/status", "Name:\tpython3\nNSpid:\t4400\t15\n");
    assert_int_equal(tdb_pidns_host_tid(m, 15), 4400);
    assert_int_equal(tdb_pidns_host_tid(m, 9), 4330);
    tdb_pidns_map_free(m);

    m = tdb_pidns_map_new(tmp_tree, 900);
    assert_non_null(m);
    assert_int_equal(tdb_pidns_host_tid(m, 3), 900);
    tdb_pidns_map_free(m);
}

static void test_no_map_keeps_ids(void **state)
{
    (void)state;
    assert_int_equal(tdb_pidns_host_tid(NULL, 42), 42);
    assert_int_equal(tdb_pidns_ns_tid(NULL, 42), 42);
    tdb_pidns_map_free(NULL);
}

/* A core written from the host of a process in a container: threads
 * 4321 and 4330 (the host's numbers), CPython's thread states say 7 and 9
 * and hold pthread_self() as thread_id. */
static void test_core_threads_by_thread_pointer(void **state)
{
    (void)state;
    tdb_py_thread threads[3];
    memset(threads, 0, sizeof(threads));
    threads[0].tid = 7;
    threads[0].thread_id = 0x7f0000001000UL;
    threads[1].tid = 9;
    threads[1].thread_id = 0x7f0000802000UL;
    threads[2].tid = 0; /* a thread state whose thread is gone */
    threads[2].thread_id = 0x7f0000903000UL;
    tdb_py_snapshot snap = {threads, 3, NULL, NULL};
    pid_t tids[] = {4330, 4321};
    uint64_t ptrs[] = {0x7f0000802000UL, 0x7f0000001000UL};

    assert_int_equal(tdb_py_snapshot_match_threads(&snap, tids, ptrs, 2), 2);
    assert_int_equal(threads[0].tid, 4321);
    assert_int_equal(threads[1].tid, 4330);
    assert_int_equal(threads[2].tid, 0);
    /* Matched already: nothing changes the second time. */
    assert_int_equal(tdb_py_snapshot_match_threads(&snap, tids, ptrs, 2), 0);

    /* Ids that already name the core's threads are kept (a core the
     * kernel wrote inside the container numbers them as CPython does). */
    pid_t same[] = {7, 9};
    threads[0].tid = 7;
    threads[1].tid = 9;
    assert_int_equal(tdb_py_snapshot_match_threads(&snap, same, ptrs, 2), 0);
    assert_int_equal(threads[0].tid, 7);
    assert_int_equal(threads[1].tid, 9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inner_pid),
        cmocka_unit_test(test_map_of_a_container_process),
        cmocka_unit_test(test_no_map_keeps_ids),
        cmocka_unit_test(test_core_threads_by_thread_pointer),
    };
    return cmocka_run_group_tests(tests, tmp_tree_setup, tmp_tree_teardown);
}

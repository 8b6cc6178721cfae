/*
 * test_ranks.c: distributed jobs and ranks from processes' environments
 * (src/targets/ranks.c) against the tree in tests/fixtures/ranks/host/
 * (written by make_tree.py there; expected.json says what must be found).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "targets/ranks.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TREE "tests/fixtures/ranks/host"

static json_t *expected(void)
{
    json_error_t jerr;
    json_t *v = json_load_file(TREE "/expected.json", 0, &jerr);
    if (!v)
        fail_msg("%s: %s", TREE "/expected.json", jerr.text);
    return v;
}

static void read_jobs(tdb_jobs *j)
{
    tdb_error err = {0};
    if (tdb_jobs_read(TREE, j, &err) < 0)
        fail_msg("%s", err.msg);
}

static void test_env_parse(void **state)
{
    (void)state;
    static const char env[] = "PATH=/bin\0RANK=3\0WORLD_SIZE=8\0LOCAL_RANK=1\0GROUP_RANK=x\0"
                              "MASTER_ADDR=10.0.0.1\0MASTER_PORT=29500\0RANK=9\0";
    tdb_rank_env e;
    assert_int_equal(tdb_rank_env_parse(env, sizeof(env) - 1, &e), 1);
    assert_int_equal(e.rank, 3); /* the first RANK, as getenv() has it */
    assert_int_equal(e.world_size, 8);
    assert_int_equal(e.local_rank, 1);
    assert_int_equal(e.group_rank, -1); /* not a number */
    assert_null(e.run_id);
    assert_false(e.elastic);
    const char *from = NULL;
    assert_string_equal(tdb_rank_env_job(&e, &from), "10.0.0.1:29500");
    assert_string_equal(from, "MASTER_ADDR:MASTER_PORT");
    tdb_rank_env_release(&e);

    /* torchrun's default id names no job; slurm's does. */
    static const char slurm[] = "TORCHELASTIC_RUN_ID=none\0SLURM_JOB_ID=42\0RANK=0";
    assert_int_equal(tdb_rank_env_parse(slurm, sizeof(slurm) - 1, &e), 1);
    assert_true(e.elastic);
    assert_string_equal(tdb_rank_env_job(&e, &from), "42");
    assert_string_equal(from, "SLURM_JOB_ID");
    tdb_rank_env_release(&e);

    static const char none[] = "RANK=\0MASTER_ADDR=x";
    assert_int_equal(tdb_rank_env_parse(none, sizeof(none) - 1, &e), 0);
    assert_null(tdb_rank_env_job(&e, NULL));
    tdb_rank_env_release(&e);
    /* Not terminated by a NUL: the last string ends with the buffer. */
    static const char cut[] = {'R', 'A', 'N', 'K', '=', '7'};
    assert_int_equal(tdb_rank_env_parse(cut, sizeof(cut), &e), 1);
    assert_int_equal(e.rank, 7);
    tdb_rank_env_release(&e);
}

/* Every job of expected.json, member by member, and nothing more. */
static void test_tree(void **state)
{
    (void)state;
    json_t *exp = expected();
    json_t *jobs = json_object_get(exp, "jobs");
    tdb_jobs j;
    read_jobs(&j);
    assert_int_equal(j.n, json_object_size(jobs));
    for (size_t i = 0; i < j.n; i++) {
        const tdb_job *job = &j.v[i];
        json_t *e = json_object_get(jobs, job->id);
        if (!e)
            fail_msg("unexpected job '%s'", job->id);
        assert_string_equal(job->id_from, json_string_value(json_object_get(e, "id_from")));
        assert_int_equal(job->launcher, json_integer_value(json_object_get(e, "launcher")));
        assert_int_equal(job->world_size, json_integer_value(json_object_get(e, "world_size")));
        json_t *members = json_object_get(e, "members");
        if (job->n != json_array_size(members))
            fail_msg("job '%s': %zu members, expected %zu", job->id, job->n,
                     json_array_size(members));
        for (size_t k = 0; k < job->n; k++) {
            json_t *m = json_array_get(members, k);
            const tdb_job_member *got = &job->members[k];
            assert_int_equal(got->pid, json_integer_value(json_array_get(m, 0)));
            assert_string_equal(tdb_job_role_name(got->role),
                                json_string_value(json_array_get(m, 1)));
            json_t *rank = json_array_get(m, 2);
            assert_int_equal(got->rank, json_is_null(rank) ? -1 : json_integer_value(rank));
            char key[16];
            snprintf(key, sizeof(key), "%d", (int)got->pid);
            json_t *rp = json_object_get(json_object_get(exp, "rank_pid"), key);
            assert_int_equal(got->rank_pid, rp ? json_integer_value(rp) : 0);
            json_t *ns = json_object_get(json_object_get(exp, "ns_pid"), key);
            assert_int_equal(got->ns_pid, ns ? json_integer_value(ns) : 0);
            assert_non_null(got->command);
        }
    }
    tdb_jobs_release(&j);
    json_decref(exp);
}

static void test_pick(void **state)
{
    (void)state;
    tdb_jobs j;
    tdb_error err = {0};
    read_jobs(&j);
    /* Several jobs: no ID is an error that lists them. */
    assert_null(tdb_jobs_pick(&j, NULL, &err));
    assert_int_equal(err.exit_code, TDB_EXIT_FAIL);
    assert_non_null(strstr(err.msg, "7 distributed jobs run here"));
    assert_non_null(strstr(err.msg, "'job-a' (ranks 2,3 of 4, launcher 200)"));
    assert_non_null(strstr(err.msg, "'777' (ranks 4,5 of 8, launcher 399)"));
    assert_non_null(strstr(err.msg, "'pid:700' (no rank yet, launcher 700)"));
    assert_non_null(strstr(err.msg, "--job ID"));
    /* By id, by the launcher's pid, by a member's pid. */
    assert_string_equal(tdb_jobs_pick(&j, "job-a", NULL)->id, "job-a");
    assert_string_equal(tdb_jobs_pick(&j, "300", NULL)->id, "127.0.0.1:29500");
    assert_string_equal(tdb_jobs_pick(&j, "401", NULL)->id, "777");
    tdb_error_clear(&err);
    assert_null(tdb_jobs_pick(&j, "job-b", &err));
    assert_non_null(strstr(err.msg, "no job 'job-b' runs here"));

    /* Ranks. */
    const tdb_job *job = tdb_jobs_pick(&j, "job-a", NULL);
    assert_int_equal(tdb_job_rank(job, 3, NULL)->pid, 202); /* the rank, not its worker */
    tdb_error_clear(&err);
    assert_null(tdb_job_rank(job, 0, &err));
    assert_string_equal(err.msg, "rank 0 of job 'job-a' does not run here (ranks here: ranks 2,3)");
    tdb_error_clear(&err);
    assert_null(tdb_job_rank(job, 5, &err));
    assert_non_null(strstr(err.msg, "the job's WORLD_SIZE is smaller"));

    const tdb_job *owner = NULL;
    const tdb_job_member *m = tdb_jobs_find_pid(&j, 203, &owner);
    assert_non_null(m);
    assert_string_equal(owner->id, "job-a");
    json_t *o = tdb_job_member_json(owner, m);
    char *text = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(text, "{\"group_rank\":1,\"id\":\"job-a\",\"id_from\":"
                              "\"TORCHELASTIC_RUN_ID\",\"launcher\":200,\"local_rank\":1,"
                              "\"rank\":3,\"rank_pid\":202,\"role\":\"worker\",\"world_size\":4}");
    free(text);
    json_decref(o);
    assert_null(tdb_jobs_find_pid(&j, 305, NULL)); /* a shell with RANK */
    assert_null(tdb_jobs_find_pid(&j, 600, NULL)); /* unreadable */
    tdb_jobs_release(&j);

    /* No job at all. */
    tdb_jobs none = {NULL, 0};
    tdb_error_clear(&err);
    assert_null(tdb_jobs_pick(&none, NULL, &err));
    assert_non_null(strstr(err.msg, "no distributed job runs here"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_parse),
        cmocka_unit_test(test_tree),
        cmocka_unit_test(test_pick),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

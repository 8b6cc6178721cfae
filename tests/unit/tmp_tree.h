/*
 * tmp_tree.h: a scratch directory for a unit test (fake /proc and /sys
 * trees, files to write; included by the tests that need one; static, so
 * each test binary has its own).
 */
#ifndef TDB_TMP_TREE_H
#define TDB_TMP_TREE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char tmp_tree[64];

/* cmocka group setup/teardown: make and remove the directory. */
static int tmp_tree_setup(void **state)
{
    (void)state;
    snprintf(tmp_tree, sizeof(tmp_tree), "/tmp/tdebug-unit-XXXXXX");
    return mkdtemp(tmp_tree) ? 0 : -1;
}

static int tmp_tree_teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_tree);
    return system(cmd) == 0 ? 0 : -1;
}

/* Write TEXT to tmp_tree/REL, making the directories on the way. */
__attribute__((unused)) static void tmp_tree_write(const char *rel, const char *text)
{
    char path[256], cmd[320];
    snprintf(path, sizeof(path), "%s%s", tmp_tree, rel);
    snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

#endif

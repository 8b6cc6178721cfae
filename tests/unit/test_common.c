/* test_common.c: what src/common.c decides for every command: the target
 * Python, and how a user's file is replaced (tdb_write_file_keeping, which
 * 'tdebug vscode' and 'tdebug tour --markdown' write through). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"
#include "tmp_tree.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- tdb_target_python ---- */

static void test_target_python_rule(void **state)
{
    (void)state;
    unsetenv("TDEBUG_PYTHON");
    assert_string_equal(tdb_target_python(NULL), tdb_default_python());
    setenv("TDEBUG_PYTHON", "", 1); /* set but empty: as if unset */
    assert_string_equal(tdb_target_python(NULL), tdb_default_python());
    setenv("TDEBUG_PYTHON", "/opt/py/bin/python3", 1);
    assert_string_equal(tdb_target_python(NULL), "/opt/py/bin/python3");
    /* The option wins, even an empty one (the command refuses it). */
    assert_string_equal(tdb_target_python("python3.11"), "python3.11");
    assert_string_equal(tdb_target_python(""), "");
    unsetenv("TDEBUG_PYTHON");
}

/* ---- tdb_write_file_keeping ---- */

/* A new empty directory under the group's scratch tree. */
static char *subdir(const char *name)
{
    char *d = tdb_xasprintf("%s/%s", tmp_tree, name);
    assert_int_equal(mkdir(d, 0777), 0);
    return d;
}

static void assert_file(const char *path, const char *want)
{
    char *text = tdb_read_file(path, NULL, NULL);
    assert_non_null(text);
    assert_string_equal(text, want);
    free(text);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;
    assert_non_null(d);
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static void test_write_new_file(void **state)
{
    char *dir = subdir("new"), *path = tdb_xasprintf("%s/notes.md", dir);
    char *backup = (char *)"unset";
    int changed = -1;
    tdb_error err = {0};
    struct stat st;
    (void)state;

    assert_int_equal(tdb_write_file_keeping(path, NULL, NULL, 0, "hello\n", 6, &backup, &changed,
                                            &err), 0);
    assert_null(backup);
    assert_int_equal(changed, 1);
    assert_file(path, "hello\n");
    assert_int_equal(stat(path, &st), 0);
    mode_t mask = umask(0);
    umask(mask);
    assert_int_equal(st.st_mode & 0777, 0666 & ~mask);
    assert_int_equal(count_entries(dir), 1); /* no temporary file left */
    free(path);
    free(dir);
}

static void test_change_keeps_numbered_backups(void **state)
{
    char *dir = subdir("change"), *path = tdb_xasprintf("%s/launch.json", dir);
    char *bak1 = tdb_xasprintf("%s.~1~", path), *bak2 = tdb_xasprintf("%s.~2~", path);
    char *backup = NULL;
    int changed = -1;
    tdb_error err = {0};
    struct stat st;
    (void)state;

    assert_int_equal(tdb_write_file_keeping(path, "launch.json", NULL, 0, "one\n", 4, &backup,
                                            &changed, &err), 0);
    assert_int_equal(count_entries(dir), 1);

    /* The same text: nothing written, no backup. */
    assert_int_equal(tdb_write_file_keeping(path, "launch.json", "one\n", 4, "one\n", 4, &backup,
                                            &changed, &err), 0);
    assert_int_equal(changed, 0);
    assert_null(backup);
    assert_int_equal(count_entries(dir), 1);

    /* A change keeps the old bytes as NAME.~1~, and the file's mode. */
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(tdb_write_file_keeping(path, "launch.json", "one\n", 4, "two\n", 4, &backup,
                                            &changed, &err), 0);
    assert_int_equal(changed, 1);
    assert_string_equal(backup, bak1);
    free(backup);
    assert_file(bak1, "one\n");
    assert_file(path, "two\n");
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);

    /* The next change: NAME.~2~; older backups stay. */
    assert_int_equal(tdb_write_file_keeping(path, "launch.json", "two\n", 4, "three\n", 6, &backup,
                                            &changed, &err), 0);
    assert_string_equal(backup, bak2);
    free(backup);
    assert_file(bak2, "two\n");
    assert_file(bak1, "one\n");
    assert_int_equal(count_entries(dir), 3); /* no temporary file left */

    /* The number follows the highest backup, not the first gap. */
    assert_int_equal(unlink(bak1), 0);
    assert_int_equal(tdb_write_file_keeping(path, "launch.json", "three\n", 6, "four\n", 5,
                                            &backup, &changed, &err), 0);
    assert_true(strlen(backup) > 4 && !strcmp(backup + strlen(backup) - 4, ".~3~"));
    assert_file(backup, "three\n");
    free(backup);

    /* Changed behind our back, appeared, disappeared: refused, untouched. */
    assert_int_equal(tdb_write_file_keeping(path, "launch.json", "two\n", 4, "five\n", 5, &backup,
                                            &changed, &err), -1);
    assert_string_equal(err.msg, "cannot update 'launch.json': it changed while tdebug was "
                                 "working (run the command again)");
    assert_int_equal(err.exit_code, TDB_EXIT_FAIL);
    tdb_error_clear(&err);
    assert_int_equal(tdb_write_file_keeping(path, "launch.json", NULL, 0, "five\n", 5, &backup,
                                            &changed, &err), -1);
    assert_non_null(strstr(err.msg, "it appeared while tdebug was working"));
    tdb_error_clear(&err);
    char *gone = tdb_xasprintf("%s/gone.json", dir);
    assert_int_equal(tdb_write_file_keeping(gone, NULL, "x", 1, "y", 1, &backup, &changed, &err),
                     -1);
    assert_non_null(strstr(err.msg, "it disappeared while tdebug was working"));
    assert_file(path, "four\n");
    assert_int_equal(count_entries(dir), 3);

    free(gone);
    free(bak1);
    free(bak2);
    free(path);
    free(dir);
}

static void test_symlink_target_is_replaced(void **state)
{
    tmp_tree_write("/link/real.json", "old\n");
    char *dir = tdb_xasprintf("%s/link", tmp_tree);
    char *target = tdb_xasprintf("%s/real.json", dir), *link_path = tdb_xasprintf("%s/launch.json", dir);
    char *backup = NULL;
    int changed = 0;
    tdb_error err = {0};
    struct stat st;
    (void)state;

    assert_int_equal(symlink("real.json", link_path), 0);
    assert_int_equal(tdb_write_file_keeping(link_path, "launch.json", "old\n", 4, "new\n", 4,
                                            &backup, &changed, &err), 0);
    assert_int_equal(lstat(link_path, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_file(target, "new\n");
    assert_string_equal(backup + strlen(dir), "/real.json.~1~");
    assert_file(backup, "old\n");
    free(backup);
    free(target);
    free(link_path);
    free(dir);
}

static void test_directory_and_missing_dir_refused(void **state)
{
    tdb_error err = {0};
    char *missing = tdb_xasprintf("%s/no/such/file.md", tmp_tree);
    (void)state;

    assert_int_equal(tdb_write_file_keeping(tmp_tree, NULL, NULL, 0, "x", 1, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "it is a directory, not a regular file"));
    tdb_error_clear(&err);
    assert_int_equal(tdb_write_file_keeping(missing, NULL, NULL, 0, "x", 1, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "cannot create a temporary file in"));
    assert_int_equal(err.code, ENOENT);
    free(missing);
}

/* A FIFO, a device, and a link to either are refused before they are
 * opened (the FIFO has no writer: opening it to read would block) and left
 * as they were; a missing file is ENOENT. */
static void test_only_regular_files_are_read_or_written(void **state)
{
    char *fifo = tdb_xasprintf("%s/launch.json", tmp_tree);
    char *link_path = tdb_xasprintf("%s/tasks.json", tmp_tree);
    char *missing = tdb_xasprintf("%s/none.json", tmp_tree);
    tdb_error err = {0};
    struct stat st;
    (void)state;

    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_null(tdb_read_regular_file(fifo, "launch.json", NULL, &err));
    assert_string_equal(err.msg, "cannot update 'launch.json': it is a FIFO, not a regular file "
                                 "(tdebug writes only regular files: move it away and run the "
                                 "command again)");
    assert_int_equal(err.exit_code, TDB_EXIT_FAIL);
    tdb_error_clear(&err);
    assert_int_equal(tdb_write_file_keeping(fifo, "launch.json", NULL, 0, "x", 1, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "it is a FIFO, not a regular file"));
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));

    assert_int_equal(symlink("/dev/null", link_path), 0);
    tdb_error_clear(&err);
    assert_null(tdb_read_regular_file(link_path, NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "it links to '/dev/null', which is a character device"));
    tdb_error_clear(&err);
    assert_int_equal(tdb_write_file_keeping(link_path, NULL, "", 0, "x", 1, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "which is a character device, not a regular file"));
    assert_int_equal(stat("/dev/null", &st), 0);
    assert_true(S_ISCHR(st.st_mode));

    tdb_error_clear(&err);
    assert_null(tdb_read_regular_file(missing, NULL, NULL, &err));
    assert_int_equal(err.code, ENOENT);
    assert_string_equal(tdb_file_kind(S_IFSOCK), "a socket");
    unlink(fifo);
    unlink(link_path);
    free(fifo);
    free(link_path);
    free(missing);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target_python_rule),
        cmocka_unit_test(test_write_new_file),
        cmocka_unit_test(test_change_keeps_numbered_backups),
        cmocka_unit_test(test_symlink_target_is_replaced),
        cmocka_unit_test(test_directory_and_missing_dir_refused),
        cmocka_unit_test(test_only_regular_files_are_read_or_written),
    };
    return cmocka_run_group_tests(tests, tmp_tree_setup, tmp_tree_teardown);
}

/* test_common.c: what src/base/common.c decides for every command: the target
 * Python, how a user's file is replaced (tdb_write_file_keeping, which
 * 'tdebug vscode' and 'tdebug tour --markdown' write through), and how
 * bytes that are not UTF-8 survive in --json output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "tmp_tree.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
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

/* ---- JSON that never drops data ---- */

/* Undo the escaping of tdb_json_bytes(): "\\\\" -> "\\", "\\xNN" -> byte NN. */
static size_t unescape(const char *s, char *out)
{
    size_t n = 0;
    while (*s) {
        if (s[0] == '\\' && s[1] == '\\') {
            out[n++] = '\\';
            s += 2;
        } else if (s[0] == '\\' && s[1] == 'x') {
            unsigned v;
            assert_int_equal(sscanf(s + 2, "%2x", &v), 1);
            out[n++] = (char)v;
            s += 4;
        } else {
            out[n++] = *s++;
        }
    }
    return n;
}

static void test_utf8_rules(void **state)
{
    static const struct {
        const char *s;
        int valid;
    } cases[] = {
        {"", 1}, {"plain ascii", 1}, {"\xc3\xa9t\xc3\xa9", 1}, {"\xe2\x82\xac", 1},
        {"\xf0\x9f\x98\x80", 1}, {"\xf4\x8f\xbf\xbf", 1},
        {"\xff", 0}, {"\x80", 0}, {"\xc3", 0},                       /* stray, cut short */
        {"\xc0\xaf", 0}, {"\xe0\x80\xaf", 0}, {"\xf0\x80\x80\xaf", 0}, /* overlong */
        {"\xed\xa0\x80", 0},                                        /* a surrogate */
        {"\xf4\x90\x80\x80", 0}, {"\xf5\x80\x80\x80", 0},           /* past U+10FFFF */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int valid = tdb_utf8_valid(cases[i].s, strlen(cases[i].s));
        if (valid != cases[i].valid)
            fail_msg("case %zu: tdb_utf8_valid says %d", i, valid);
        /* jansson agrees: what it refuses is what tdebug escapes. */
        json_t *j = json_string(cases[i].s);
        if ((j != NULL) != cases[i].valid)
            fail_msg("case %zu: jansson disagrees", i);
        json_decref(j);
    }
    /* A NUL is a valid one-byte sequence. */
    assert_int_equal(tdb_utf8_valid("a\0b", 3), 1);
    assert_int_equal(tdb_utf8_seq_len("\xc3\xa9", 1), 0); /* only one byte readable */
}

static void test_json_bytes_keeps_every_byte(void **state)
{
    int escaped = -1;
    json_t *v = tdb_json_bytes("caf\xc3\xa9 \\ \"q\"", 11, 0, &escaped);
    assert_int_equal(escaped, 0);
    assert_string_equal(json_string_value(v), "caf\xc3\xa9 \\ \"q\""); /* as it is */
    json_decref(v);

    const char raw[] = "a\xff\\x41\xc3(\xe2\x82\xac)\x80";
    v = tdb_json_bytes(raw, sizeof(raw) - 1, 0, &escaped);
    assert_int_equal(escaped, 1);
    assert_string_equal(json_string_value(v), "a\\xff\\\\x41\\xc3(\xe2\x82\xac)\\x80");
    char back[64];
    size_t n = unescape(json_string_value(v), back);
    assert_int_equal(n, sizeof(raw) - 1);
    assert_memory_equal(back, raw, n);
    char *dumped = json_dumps(v, JSON_ENCODE_ANY);
    assert_non_null(dumped); /* it serialises */
    free(dumped);
    json_decref(v);

    v = tdb_json_bytes("x\\y", 3, 1, &escaped); /* forced: backslashes doubled */
    assert_int_equal(escaped, 1);
    assert_string_equal(json_string_value(v), "x\\\\y");
    json_decref(v);
    v = tdb_json_bytes(NULL, 0, 0, &escaped);
    assert_true(json_is_null(v));
    assert_int_equal(escaped, 0);
    json_decref(v);
}

static void test_json_setters_flag_escaped_values(void **state)
{
    json_t *o = json_object();
    tdb_json_set_str(o, "name", "ok");
    tdb_json_set_str(o, "path", "/tmp/\xff\xfe");
    tdb_json_set_str(o, "none", NULL);
    assert_string_equal(json_string_value(json_object_get(o, "name")), "ok");
    assert_null(json_object_get(o, "name_escaped"));
    assert_string_equal(json_string_value(json_object_get(o, "path")), "/tmp/\\xff\\xfe");
    assert_true(json_is_true(json_object_get(o, "path_escaped")));
    assert_true(json_is_null(json_object_get(o, "none")));

    /* One bad string escapes the whole array, so '\\' reads the same in all. */
    char *argv[] = {"python3", "-c", "print('\\n')", "\xff", NULL};
    tdb_json_set_strv(o, "command", argv, 4);
    json_t *a = json_object_get(o, "command");
    assert_int_equal(json_array_size(a), 4);
    assert_string_equal(json_string_value(json_array_get(a, 2)), "print('\\\\n')");
    assert_string_equal(json_string_value(json_array_get(a, 3)), "\\xff");
    assert_true(json_is_true(json_object_get(o, "command_escaped")));
    char *good[] = {"a\\b", NULL};
    tdb_json_set_strv(o, "ok", good, 1);
    assert_string_equal(json_string_value(json_array_get(json_object_get(o, "ok"), 0)), "a\\b");
    assert_null(json_object_get(o, "ok_escaped"));
    json_decref(o);
}

static void test_json_versioned_puts_version_first(void **state)
{
    json_t *doc = json_pack("{s:i, s:s, s:i}", "a", 1, "b", "x", "version", 7);
    json_t *v = tdb_json_versioned(doc);
    char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(s, "{\"version\":1,\"a\":1,\"b\":\"x\"}");
    free(s);
    json_decref(v);
}

/* What gdb's 'set environment' cannot carry exactly is named, the rest
 * passes (tdebug dap's "env", tdebug vscode's --env). */
/* Build-ids, keys and paths are spelled with tdb_hex(): every byte, two
 * lower-case digits, nothing else. */
static void test_hex_spells_every_byte(void **state)
{
    (void)state;
    static const unsigned char id[] = {0xc5, 0x61, 0x00, 0xf3, 0x0a, 0xff};
    char *s = tdb_hex(id, sizeof(id));
    assert_string_equal(s, "c56100f30aff");
    free(s);
    s = tdb_hex(id, 0);
    assert_string_equal(s, "");
    free(s);
}

static void test_gdb_env_problem(void **state)
{
    (void)state;
    assert_null(tdb_gdb_env_problem("A", "b c"));
    assert_null(tdb_gdb_env_problem("A", ""));
    assert_null(tdb_gdb_env_problem("A", "$(id) `x` 'q' \"d\" \\ ; ${"));
    assert_null(tdb_gdb_env_problem("A", NULL)); /* unset */
    assert_string_equal(tdb_gdb_env_problem("", "x"), "a name has no '=', blank or newline");
    assert_string_equal(tdb_gdb_env_problem("A=B", "x"), "a name has no '=', blank or newline");
    assert_string_equal(tdb_gdb_env_problem("A B", "x"), "a name has no '=', blank or newline");
    assert_string_equal(tdb_gdb_env_problem("A", "x\ny"),
                        "gdb drops newlines and blanks at the ends of a value");
    assert_string_equal(tdb_gdb_env_problem("A", " x"),
                        "gdb drops newlines and blanks at the ends of a value");
    assert_string_equal(tdb_gdb_env_problem("A", "x\t"),
                        "gdb drops newlines and blanks at the ends of a value");
}

/* tdb_private_dir: under $TMPDIR when it is absolute and short, mode 0700;
 * else under /tmp. */
static void test_private_dir(void **state)
{
    (void)state;
    char *old = getenv("TMPDIR") ? tdb_xstrdup(getenv("TMPDIR")) : NULL;
    tdb_error err = {0};
    struct stat st;
    char *prefix = tdb_xasprintf("%s/tdebug-x-", tmp_tree);

    setenv("TMPDIR", tmp_tree, 1);
    char *dir = tdb_private_dir("tdebug-x", &err);
    assert_non_null(dir);
    if (strlen(tmp_tree) <= 64)
        assert_true(strncmp(dir, prefix, strlen(prefix)) == 0);
    assert_int_equal(stat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(rmdir(dir), 0);
    free(dir);
    setenv("TMPDIR", "relative/dir", 1); /* not absolute: /tmp */
    dir = tdb_private_dir("tdebug-x", &err);
    assert_non_null(dir);
    assert_true(strncmp(dir, "/tmp/tdebug-x-", 14) == 0);
    assert_int_equal(rmdir(dir), 0);
    free(dir);
    if (old)
        setenv("TMPDIR", old, 1);
    else
        unsetenv("TMPDIR");
    free(old);
    free(prefix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target_python_rule),
        cmocka_unit_test(test_gdb_env_problem),
        cmocka_unit_test(test_private_dir),
        cmocka_unit_test(test_hex_spells_every_byte),
        cmocka_unit_test(test_write_new_file),
        cmocka_unit_test(test_change_keeps_numbered_backups),
        cmocka_unit_test(test_symlink_target_is_replaced),
        cmocka_unit_test(test_directory_and_missing_dir_refused),
        cmocka_unit_test(test_only_regular_files_are_read_or_written),
        cmocka_unit_test(test_utf8_rules),
        cmocka_unit_test(test_json_bytes_keeps_every_byte),
        cmocka_unit_test(test_json_setters_flag_escaped_values),
        cmocka_unit_test(test_json_versioned_puts_version_first),
    };
    return cmocka_run_group_tests(tests, tmp_tree_setup, tmp_tree_teardown);
}

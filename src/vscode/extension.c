/* vscode/extension.c: installing tdebug's VS Code extension (see vscode/extension.h). */
#include "vscode/extension.h"
#include "process/spawn.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char **tdb_vscode_extension_dirs(const char *home, const char *xdg_data_home)
{
    static const char *const rel[] = {".vscode/extensions", ".vscode-server/extensions"};
    char **out = NULL;
    size_t n = 0;
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        char *dir = tdb_xasprintf("%s/%s", home, rel[i]);
        if (is_dir(dir))
            tdb_ptrs_push(&out, &n, dir);
        else
            free(dir);
    }
    /* code-server makes its extensions folder when it first installs one:
     * its user data folder says it is used here. */
    char *data = xdg_data_home && *xdg_data_home == '/'
                     ? tdb_xasprintf("%s/code-server", xdg_data_home)
                     : tdb_xasprintf("%s/.local/share/code-server", home);
    if (is_dir(data))
        tdb_ptrs_push(&out, &n, tdb_xasprintf("%s/extensions", data));
    free(data);
    if (!n)
        tdb_ptrs_push(&out, &n, tdb_xasprintf("%s/%s", home, rel[0]));
    return out;
}

/* Whether S ends with SUFFIX. */
static int ends_with(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && !strcmp(s + ls - lx, suffix);
}

const char *tdb_vscode_editor_cli(const char *dir)
{
    char *d = tdb_xstrdup(dir);
    size_t len = strlen(d);
    while (len > 1 && d[len - 1] == '/')
        d[--len] = '\0';
    const char *cli = ends_with(d, "/code-server/extensions") ? "code-server"
                      : ends_with(d, "/.vscode/extensions")   ? "code"
                                                              : NULL;
    free(d);
    return cli;
}

/* mkdir -p DIR. */
static int make_dirs(const char *dir, tdb_error *err)
{
    char *copy = tdb_xstrdup(dir);
    int rc = 0;
    for (char *p = copy + 1; rc == 0; p++) {
        if (*p != '/' && *p)
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(copy, 0755) < 0 && errno != EEXIST) {
            tdb_error_errno(err, "cannot create '%s'", copy);
            rc = -1;
        }
        *p = c;
        if (!c)
            break;
    }
    free(copy);
    return rc;
}

/* A regular file's bytes, or NULL (*EXISTS 0) when there is none. */
static char *read_existing(const char *path, size_t *len, int *exists, tdb_error *err)
{
    struct stat st;
    *exists = lstat(path, &st) == 0;
    if (!*exists)
        return NULL;
    if (!S_ISREG(st.st_mode)) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, EEXIST, "'%s' is not a regular file: left alone",
                           path);
        return NULL;
    }
    return tdb_read_file(path, len, err);
}

/* Write DATA to PATH, keeping what was there; *CHANGED |= written. */
static int put_file(const char *path, const char *data, size_t len, int *changed, tdb_error *err)
{
    size_t old_len = 0;
    int exists, written = 0;
    char *old = read_existing(path, &old_len, &exists, err);
    if (exists && !old)
        return -1;
    int rc = tdb_write_file_keeping(path, NULL, old, old_len, data, len, NULL, &written, err);
    free(old);
    *changed |= written;
    return rc;
}

/* Copy SRC's regular files into DST. */
static int copy_files(const char *src, const char *dst, int *changed, tdb_error *err)
{
    DIR *d = opendir(src);
    if (!d) {
        tdb_error_errno(err, "cannot read the extension in '%s' (reinstall tdebug)", src);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *from = tdb_xasprintf("%s/%s", src, e->d_name), *to = tdb_xasprintf("%s/%s", dst, e->d_name);
        struct stat st;
        if (stat(from, &st) == 0 && S_ISREG(st.st_mode)) {
            size_t len = 0;
            char *data = tdb_read_file(from, &len, err);
            rc = data ? put_file(to, data, len, changed, err) : -1;
            free(data);
        }
        free(from);
        free(to);
    }
    closedir(d);
    return rc;
}

/* Whether the file PATH holds exactly the bytes of the file SHIPPED. */
static int same_bytes(const char *path, const char *shipped)
{
    size_t la = 0, lb = 0;
    char *a = tdb_read_file(path, &la, NULL), *b = tdb_read_file(shipped, &lb, NULL);
    int same = a && b && la == lb && !memcmp(a, b, la);
    free(a);
    free(b);
    return same;
}

/* DIR/bin/tdebug -> TDEBUG, replaced atomically when it points elsewhere,
 * or when it is SHIPPED's copy (the script a .vsix carries; SHIPPED may be
 * NULL). */
static int link_tdebug(const char *dir, const char *tdebug, const char *shipped, int *changed,
                       tdb_error *err)
{
    char *bin = tdb_xasprintf("%s/bin", dir), *link = tdb_xasprintf("%s/tdebug", bin);
    char *tmp = tdb_xasprintf("%s.tmp%d", link, (int)getpid());
    char now[4096];
    int rc = -1;
    if (make_dirs(bin, err) < 0)
        goto cleanup;
    ssize_t n = readlink(link, now, sizeof(now) - 1);
    if (n >= 0) {
        now[n] = '\0';
        if (!strcmp(now, tdebug)) {
            rc = 0;
            goto cleanup;
        }
    } else if (errno != ENOENT && !(errno == EINVAL && shipped && same_bytes(link, shipped))) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, errno, "'%s' is not the link tdebug makes: left "
                                                      "alone (move it away and run again)",
                           link);
        goto cleanup;
    }
    unlink(tmp);
    if (symlink(tdebug, tmp) < 0 || rename(tmp, link) < 0) {
        tdb_error_errno(err, "cannot link '%s' to '%s'", link, tdebug);
        unlink(tmp);
        goto cleanup;
    }
    *changed = 1;
    rc = 0;
cleanup:
    free(bin);
    free(link);
    free(tmp);
    return rc;
}

/* A JSON file's value, or NULL: *EXISTS says whether there was a file. */
static json_t *load_json(const char *path, char **text, size_t *len, int *exists, tdb_error *err)
{
    *text = read_existing(path, len, exists, err);
    if (!*text)
        return NULL;
    json_error_t jerr;
    json_t *v = json_loadb(*text, *len, JSON_DECODE_ANY, &jerr);
    if (!v)
        tdb_error_set_exit(err, TDB_EXIT_FAIL, EINVAL, "cannot read '%s': %s (line %d): left alone",
                           path, jerr.text, jerr.line);
    return v;
}

/* Add the extension to VS Code's list in DIR/extensions.json (when there
 * is one), replacing another version of it. */
static int register_extension(const char *dir, const char *id, const char *version,
                              const char *folder, tdb_buf *report, int *changed, tdb_error *err)
{
    char *path = tdb_xasprintf("%s/extensions.json", dir), *text = NULL, *real = NULL;
    size_t len = 0;
    int exists, rc = -1;
    json_t *list = load_json(path, &text, &len, &exists, err);
    if (!exists) {
        tdb_buf_addf(report, "%s does not exist yet: VS Code lists the extension itself when it "
                             "starts\n",
                     path);
        rc = 0;
        goto cleanup;
    }
    if (!list)
        goto cleanup;
    if (!json_is_array(list)) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, EINVAL, "'%s' is not a list of extensions: left "
                                                       "alone",
                           path);
        goto cleanup;
    }
    int listed = 0;
    for (size_t i = json_array_size(list); i-- > 0;) {
        json_t *e = json_array_get(list, i);
        const char *eid = json_string_value(json_object_get(json_object_get(e, "identifier"), "id"));
        if (!eid || strcasecmp(eid, id) != 0)
            continue;
        const char *ev = json_string_value(json_object_get(e, "version"));
        const char *rel = json_string_value(json_object_get(e, "relativeLocation"));
        if (!listed && ev && !strcmp(ev, version) && rel && !strcmp(rel, folder))
            listed = 1;
        else
            json_array_remove(list, i);
    }
    if (!listed) {
        real = realpath(dir, NULL);
        char *where = tdb_xasprintf("%s/%s", real ? real : dir, folder);
        json_array_append_new(list, json_pack("{s:{s:s}, s:s, s:{s:i, s:s, s:s}, s:s}", "identifier",
                                              "id", id, "version", version, "location", "$mid", 1,
                                              "path", where, "scheme", "file", "relativeLocation",
                                              folder));
        free(where);
    }
    char *out = json_dumps(list, JSON_COMPACT);
    int written = 0;
    rc = out ? tdb_write_file_keeping(path, NULL, text, len, out, strlen(out), NULL, &written, err)
             : -1;
    free(out);
    if (rc == 0 && written) {
        *changed = 1;
        tdb_buf_addf(report, "listed %s in %s\n", id, path);
    }
cleanup:
    json_decref(list);
    free(text);
    free(path);
    free(real);
    return rc;
}

/* Take FOLDER off VS Code's DIR/.obsolete, where an unlisted folder it
 * once saw was marked to be deleted. */
static int unmark_obsolete(const char *dir, const char *folder, int *changed, tdb_error *err)
{
    char *path = tdb_xasprintf("%s/.obsolete", dir), *text = NULL;
    size_t len = 0;
    int exists, rc = 0;
    json_t *o = load_json(path, &text, &len, &exists, err);
    if (exists && !o)
        rc = -1;
    if (json_is_object(o) && json_object_get(o, folder)) {
        json_object_del(o, folder);
        char *out = json_dumps(o, JSON_COMPACT);
        int written = 0;
        rc = out ? tdb_write_file_keeping(path, NULL, text, len, out, strlen(out), NULL, &written,
                                          err)
                 : -1;
        *changed |= written;
        free(out);
    }
    json_decref(o);
    free(text);
    free(path);
    return rc;
}

/* The extension's package.json in SRC (new reference) with its publisher,
 * name and version (borrowed from it), or NULL with ERR set. */
static json_t *read_identity(const char *src, const char **pub, const char **name,
                             const char **version, tdb_error *err)
{
    char *pkg_path = tdb_xasprintf("%s/package.json", src);
    json_error_t jerr;
    json_t *pkg = json_load_file(pkg_path, 0, &jerr);
    *pub = json_string_value(json_object_get(pkg, "publisher"));
    *name = json_string_value(json_object_get(pkg, "name"));
    *version = json_string_value(json_object_get(pkg, "version"));
    if (!*pub || !*name || !*version) {
        tdb_error_set(err, EINVAL, "cannot read the extension's '%s': %s (reinstall tdebug)",
                      pkg_path, pkg ? "no publisher, name or version" : jerr.text);
        json_decref(pkg);
        pkg = NULL;
    }
    free(pkg_path);
    return pkg;
}

/* Whether the JSON file PATH is a package.json of PUB's NAME. */
static int is_ours(const char *path, const char *pub, const char *name)
{
    json_t *their = json_load_file(path, 0, NULL);
    const char *p2 = json_string_value(json_object_get(their, "publisher"));
    const char *n2 = json_string_value(json_object_get(their, "name"));
    int ours = p2 && n2 && !strcmp(p2, pub) && !strcmp(n2, name);
    json_decref(their);
    return ours;
}

/* The version of another PREFIX* folder in DIR (new string), or NULL. */
static char *other_version(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char *found = NULL;
    size_t pl = strlen(prefix);
    while (d && !found && (e = readdir(d)))
        if (!strncasecmp(e->d_name, prefix, pl) && e->d_name[pl])
            found = tdb_xstrdup(e->d_name + pl);
    if (d)
        closedir(d);
    return found;
}

int tdb_vscode_extension_installed(const char *src, const char *dir, tdb_buf *why,
                                   tdb_error *err)
{
    const char *pub, *name, *version;
    json_t *pkg = read_identity(src, &pub, &name, &version, err), *list = NULL, *obsolete = NULL;
    char *id = NULL, *folder = NULL, *target = NULL, *file = NULL, *text = NULL, *other = NULL;
    tdb_buf reason = TDB_BUF_INIT;
    size_t len = 0;
    int exists, rc = -1;
    struct stat st;

    if (!pkg)
        return -1;
    id = tdb_xasprintf("%s.%s", pub, name);
    folder = tdb_xasprintf("%s-%s", id, version);
    target = tdb_xasprintf("%s/%s", dir, folder);
    file = tdb_xasprintf("%s/package.json", target);
    if (lstat(target, &st) < 0 || !S_ISDIR(st.st_mode)) {
        char *prefix = tdb_xasprintf("%s-", id);
        other = other_version(dir, prefix);
        free(prefix);
        if (other)
            tdb_buf_addf(&reason, "tdebug's extension is version %s, not this tdebug's %s", other,
                         version);
        else
            tdb_buf_adds(&reason, "tdebug's extension is not installed");
        goto cleanup;
    }
    if (!is_ours(file, pub, name)) {
        tdb_buf_addf(&reason, "'%s' is not tdebug's extension", target);
        goto cleanup;
    }
    free(file);
    file = tdb_xasprintf("%s/bin/tdebug", target);
    if (stat(file, &st) < 0 || !S_ISREG(st.st_mode) || access(file, X_OK) < 0) {
        tdb_buf_addf(&reason, lstat(file, &st) == 0 ? "the extension's adapter '%s' is a broken link"
                                                    : "the extension's adapter '%s' is missing",
                     file);
        goto cleanup;
    }
    /* VS Code (1.74+) loads only the folders its extensions.json lists,
     * when there is one, and none it marked obsolete. */
    free(file);
    file = tdb_xasprintf("%s/extensions.json", dir);
    list = load_json(file, &text, &len, &exists, NULL);
    if (exists) {
        int listed = 0;
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
            const char *eid = json_string_value(json_object_get(json_object_get(e, "identifier"), "id"));
            const char *rel = json_string_value(json_object_get(e, "relativeLocation"));
            listed |= eid && rel && !strcasecmp(eid, id) && !strcmp(rel, folder);
        }
        if (!listed) {
            tdb_buf_addf(&reason, "VS Code's '%s' does not list the extension", file);
            goto cleanup;
        }
    }
    free(text);
    text = NULL;
    free(file);
    file = tdb_xasprintf("%s/.obsolete", dir);
    obsolete = load_json(file, &text, &len, &exists, NULL);
    if (json_object_get(obsolete, folder)) {
        tdb_buf_addf(&reason, "VS Code marked the extension to be deleted ('%s')", file);
        goto cleanup;
    }
    rc = 1;
cleanup:
    if (rc != 1) {
        if (why)
            tdb_buf_adds(why, tdb_buf_str(&reason));
        rc = 0;
    }
    tdb_buf_free(&reason);
    json_decref(pkg);
    json_decref(list);
    json_decref(obsolete);
    free(id);
    free(folder);
    free(target);
    free(file);
    free(text);
    free(other);
    return rc;
}

/* The extension in SRC and its folder in DIR: *ID "PUB.NAME", *FOLDER
 * "PUB.NAME-VERSION", *TARGET "DIR/FOLDER" (new strings), *VERSION
 * (borrowed from the returned package.json, a new reference), *EXISTS
 * whether TARGET is there (and then ours).  NULL with ERR set when SRC
 * cannot be read, or TARGET is there and not tdebug's. */
static json_t *target_of(const char *src, const char *dir, char **id, char **folder,
                         char **target, const char **version, int *exists, tdb_error *err)
{
    const char *pub, *name;
    json_t *pkg = read_identity(src, &pub, &name, version, err);
    struct stat st;

    *id = *folder = *target = NULL;
    if (!pkg)
        return NULL;
    *id = tdb_xasprintf("%s.%s", pub, name);
    *folder = tdb_xasprintf("%s-%s", *id, *version);
    *target = tdb_xasprintf("%s/%s", dir, *folder);
    *exists = lstat(*target, &st) == 0;
    if (*exists) {
        /* Ours only if its package.json says so. */
        char *theirs = tdb_xasprintf("%s/package.json", *target);
        int ours = S_ISDIR(st.st_mode) && is_ours(theirs, pub, name);
        free(theirs);
        if (!ours) {
            tdb_error_set_exit(err, TDB_EXIT_FAIL, EEXIST,
                               "'%s' exists and is not tdebug's extension: left alone (move it "
                               "away and run again)",
                               *target);
            json_decref(pkg);
            return NULL;
        }
    }
    return pkg;
}

int tdb_vscode_install_extension(const char *src, const char *tdebug, const char *dir,
                                 tdb_buf *report, int *out_changed, tdb_error *err)
{
    char *target = NULL, *folder = NULL, *id = NULL, *shipped = tdb_xasprintf("%s/bin/tdebug", src);
    const char *version;
    int changed = 0, exists, rc = -1;
    json_t *pkg = target_of(src, dir, &id, &folder, &target, &version, &exists, err);

    /* Over a copy unpacked from the .vsix ("Install from VSIX..."), only
     * the script it carries is replaced, by the link; a bin/tdebug of the
     * user's stops the install before anything is copied. */
    if (!pkg)
        goto cleanup;
    if (make_dirs(target, err) < 0 || link_tdebug(target, tdebug, shipped, &changed, err) < 0 ||
        copy_files(src, target, &changed, err) < 0)
        goto cleanup;
    if (changed)
        tdb_buf_addf(report, "installed %s in %s (its adapter: %s dap)\n", folder, dir, tdebug);
    else
        tdb_buf_addf(report, "%s in %s is up to date\n", folder, dir);
    if (register_extension(dir, id, version, folder, report, &changed, err) < 0 ||
        unmark_obsolete(dir, folder, &changed, err) < 0)
        goto cleanup;
    if (out_changed)
        *out_changed = changed;
    rc = 0;
cleanup:
    json_decref(pkg);
    free(target);
    free(folder);
    free(id);
    free(shipped);
    return rc;
}

int tdb_vscode_install_vsix(const char *cli, const char *vsix, const char *src,
                            const char *tdebug, const char *dir, tdb_buf *report,
                            int *out_changed, tdb_error *err)
{
    char *target = NULL, *folder = NULL, *id = NULL, *exe = NULL, *shipped = NULL, *said = NULL;
    const char *version;
    int changed = 0, exists, rc = -1;
    tdb_spawn_result r = TDB_SPAWN_RESULT_INIT;
    json_t *pkg = target_of(src, dir, &id, &folder, &target, &version, &exists, err);
    struct stat st;

    if (!pkg)
        goto cleanup;
    /* Installed already (by the editor, or copied): the editor would say
     * so and change nothing. */
    if (!exists) {
        if (!(exe = tdb_which(cli))) {
            tdb_error_set_exit(err, TDB_EXIT_TOOL, ENOENT,
                               "cannot install '%s' into '%s': no '%s' on PATH", vsix, dir, cli);
            goto cleanup;
        }
        char *argv[] = {exe, "--extensions-dir", (char *)dir, "--install-extension", (char *)vsix,
                        "--force", NULL};
        if (tdb_spawn_capture(argv, NULL, 300 * 1000, &r, err) < 0)
            goto cleanup;
        if (r.status != 0 || r.timed_out || lstat(target, &st) < 0 || !S_ISDIR(st.st_mode)) {
            said = tdb_first_line(*r.err ? r.err : r.out);
            tdb_error_set(err, EIO, "'%s --install-extension %s' did not install %s in '%s': %s",
                          exe, vsix, folder, dir,
                          r.timed_out ? "it did not finish within 5 minutes"
                          : *said     ? said
                                      : "it said nothing");
            goto cleanup;
        }
        changed = 1;
    }
    shipped = tdb_xasprintf("%s/bin/tdebug", src);
    if (link_tdebug(target, tdebug, shipped, &changed, err) < 0)
        goto cleanup;
    if (!exists)
        tdb_buf_addf(report, "installed %s in %s with '%s --install-extension' (its adapter: %s "
                             "dap)\n",
                     folder, dir, cli, tdebug);
    else
        tdb_buf_addf(report, changed ? "%s in %s: its adapter is now %s dap\n"
                                     : "%s in %s is up to date\n",
                     folder, dir, tdebug);
    if (out_changed)
        *out_changed = changed;
    rc = 0;
cleanup:
    tdb_spawn_result_free(&r);
    json_decref(pkg);
    free(target);
    free(folder);
    free(id);
    free(exe);
    free(shipped);
    free(said);
    return rc;
}

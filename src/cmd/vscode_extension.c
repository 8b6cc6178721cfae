/*
 * cmd/vscode_extension.c: 'tdebug vscode --install-extension', which
 * installs the "tdebug" debug type (vscode/extension/, whose adapter is
 * 'tdebug dap') for the user, into VS Code's, VS Code Server's and
 * code-server's extensions folders; src/vscode/extension.c does the work.  Reached
 * from 'tdebug vscode' (src/cmd/vscode.c), not a command of its own.
 */
#include "cmd/cmd.h"
#include "base/common.h"
#include "vscode/extension.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The extension beside this tdebug (new string), or NULL after saying so;
 * TDEBUG (PATH_MAX bytes) gets this tdebug's path. */
static char *extension_source(char *tdebug)
{
    ssize_t n = readlink("/proc/self/exe", tdebug, PATH_MAX - 1);
    char *src = tdb_companion_path("vscode-extension");
    if (n <= 0 || !src) {
        tdb_fail("cannot find %s (reinstall tdebug)",
                 n <= 0 ? "tdebug's own path" : "the VS Code extension beside tdebug");
        free(src);
        return NULL;
    }
    tdebug[n] = '\0';
    return src;
}

/* The user's extensions folders (tdb_vscode_extension_dirs()), or NULL
 * after saying why not. */
static char **user_dirs(void)
{
    const char *home = getenv("HOME");
    if (!home || *home != '/') {
        tdb_fail("cannot find your home directory ($HOME is not set): give --extensions-dir DIR");
        return NULL;
    }
    return tdb_vscode_extension_dirs(home, getenv("XDG_DATA_HOME"));
}

int cmd_vscode_install_into(char *const *dirs, int *out_changed)
{
    char tdebug[PATH_MAX], *src = extension_source(tdebug), **mine = NULL;
    int status = TDB_EXIT_OK;

    if (out_changed)
        *out_changed = 0;
    if (!src)
        return TDB_EXIT_TOOL;
    if (!dirs && !(dirs = mine = user_dirs())) {
        free(src);
        return TDB_EXIT_FAIL;
    }
    /* The packaged extension goes in through the editor's own command when
     * both are there (the editor keeps its list of extensions itself); else
     * the extension's folder is copied the way the editor unpacks it. */
    char *vsix = tdb_companion_path("tdebug-vscode.vsix");
    for (char *const *d = dirs; *d; d++) {
        tdb_buf report = TDB_BUF_INIT;
        tdb_error err = {0};
        int changed = 0, rc;
        const char *cli = tdb_vscode_editor_cli(*d);
        char *exe = vsix && cli ? tdb_which(cli) : NULL;
        if (exe)
            rc = tdb_vscode_install_vsix(cli, vsix, src, tdebug, *d, &report, &changed, &err);
        else
            rc = tdb_vscode_install_extension(src, tdebug, *d, &report, &changed, &err);
        free(exe);
        fputs(tdb_buf_str(&report), stdout);
        if (rc < 0) {
            tdb_print_error(&err);
            status = err.exit_code ? err.exit_code : TDB_EXIT_TOOL;
        } else if (changed && out_changed) {
            *out_changed = 1;
        }
        tdb_buf_free(&report);
    }
    tdb_strv_free(mine);
    free(vsix);
    free(src);
    return status;
}

void cmd_vscode_check_extension(void)
{
    char tdebug[PATH_MAX], *src = extension_source(tdebug);
    const char *home = getenv("HOME");
    char **dirs = src && home && *home == '/'
                      ? tdb_vscode_extension_dirs(home, getenv("XDG_DATA_HOME"))
                      : NULL;

    for (char **d = dirs; d && *d; d++) {
        tdb_buf why = TDB_BUF_INIT;
        tdb_error err = {0};
        int rc = tdb_vscode_extension_installed(src, *d, &why, &err);
        if (rc < 0)
            tdb_print_error(&err);
        else if (rc == 0)
            tdb_warn("VS Code cannot run a \"tdebug\" configuration yet: in %s, %s (run "
                     "'tdebug vscode --install-extension', or add --install-extension to this "
                     "command; then reload VS Code's window)",
                     *d, tdb_buf_str(&why));
        tdb_buf_free(&why);
    }
    tdb_strv_free(dirs);
    free(src);
}

int cmd_vscode_install_extension(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"install-extension", no_argument, NULL, 'i'},
        {"extensions-dir", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    char **dirs = NULL;
    size_t n_dirs = 0;
    int c, status;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'i': break;
        case 'd': tdb_ptrs_push(&dirs, &n_dirs, tdb_xstrdup(optarg)); break;
        case 'h': tdb_strv_free(dirs); return tdb_print_usage("vscode");
        default:
            tdb_strv_free(dirs);
            return tdb_usage_error("vscode", "--install-extension takes only --extensions-dir DIR "
                                             "(or one of --program, --module, --attach, --wait to "
                                             "write a configuration too), not '%s'",
                                   argv[optind - 1]);
        }
    }
    if (optind < argc) {
        tdb_strv_free(dirs);
        return tdb_usage_error("vscode", "--install-extension takes no argument '%s'", argv[optind]);
    }
    status = cmd_vscode_install_into(dirs, NULL);
    if (status == TDB_EXIT_OK)
        printf("In VS Code: reload the window, then pick a \"tdebug\" configuration in Run and "
               "Debug (or add one: \"tdebug: launch a script\").\n");
    tdb_strv_free(dirs);
    return status;
}

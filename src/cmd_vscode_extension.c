/*
 * cmd_vscode_extension.c: 'tdebug vscode --install-extension', which
 * installs the "tdebug" debug type (vscode/extension/, whose adapter is
 * 'tdebug dap') for the user; vscode/extension.c does the work.  Reached
 * from 'tdebug vscode' (src/cmd_vscode.c), not a command of its own.
 */
#include "cmd.h"
#include "common.h"
#include "extension.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cmd_vscode_install_extension(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"install-extension", no_argument, NULL, 'i'},
        {"extensions-dir", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    char **dirs = NULL, *src = NULL, tdebug[PATH_MAX];
    size_t n_dirs = 0;
    int c, status = TDB_EXIT_OK;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'i': break;
        case 'd': tdb_ptrs_push(&dirs, &n_dirs, tdb_xstrdup(optarg)); break;
        case 'h': tdb_strv_free(dirs); return tdb_print_usage("vscode");
        default:
            tdb_strv_free(dirs);
            return tdb_usage_error("vscode", "--install-extension takes only --extensions-dir DIR, "
                                             "not '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) {
        tdb_strv_free(dirs);
        return tdb_usage_error("vscode", "--install-extension takes no argument '%s'", argv[optind]);
    }
    ssize_t n = readlink("/proc/self/exe", tdebug, sizeof(tdebug) - 1);
    src = tdb_companion_path("vscode-extension");
    if (n <= 0 || !src) {
        tdb_fail("cannot find %s (reinstall tdebug)",
                 n <= 0 ? "tdebug's own path" : "the VS Code extension beside tdebug");
        status = TDB_EXIT_TOOL;
        goto cleanup;
    }
    tdebug[n] = '\0';
    if (!dirs) {
        const char *home = getenv("HOME");
        if (!home || *home != '/') {
            tdb_fail("cannot find your home directory ($HOME is not set): give --extensions-dir DIR");
            status = TDB_EXIT_FAIL;
            goto cleanup;
        }
        dirs = tdb_vscode_extension_dirs(home);
    }
    for (char **d = dirs; d && *d; d++) {
        tdb_buf report = TDB_BUF_INIT;
        tdb_error err = {0};
        if (tdb_vscode_install_extension(src, tdebug, *d, &report, NULL, &err) < 0) {
            fputs(tdb_buf_str(&report), stdout);
            tdb_print_error(&err);
            status = err.exit_code ? err.exit_code : TDB_EXIT_TOOL;
        } else {
            fputs(tdb_buf_str(&report), stdout);
        }
        tdb_buf_free(&report);
    }
    if (status == TDB_EXIT_OK)
        printf("In VS Code: reload the window, then pick a \"tdebug\" configuration in Run and "
               "Debug (or add one: \"tdebug: launch a script\").\n");
cleanup:
    tdb_strv_free(dirs);
    free(src);
    return status;
}

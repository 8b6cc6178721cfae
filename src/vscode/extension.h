/*
 * vscode/extension.h: installing tdebug's VS Code extension (vscode/extension/: a
 * package.json contributing the "tdebug" debug type and a process picker
 * (extension.js, pick.js), whose
 * adapter is 'tdebug dap') into a user's extensions folder, the way VS
 * Code's own installer leaves it:
 *
 *   EXTENSIONS/PUBLISHER.NAME-VERSION/   the extension's files, and
 *                     bin/tdebug         a link to the tdebug that installed it
 *   EXTENSIONS/extensions.json           VS Code's list of installed
 *                                        extensions (1.74+): the extension
 *                                        is added, or VS Code marks an
 *                                        unlisted folder obsolete and
 *                                        ignores it; when the file does not
 *                                        exist VS Code lists the folder by
 *                                        itself when it starts
 *   EXTENSIONS/.obsolete                 the folder is taken off it
 *
 * or, from the packaged extension (build/tdebug-vscode.vsix, 'make vsix'),
 * by the editor's own 'CLI --install-extension', which lists it itself; its
 * bin/tdebug, a script that runs the tdebug on PATH, is then made the link.
 *
 * Nothing of the user's is destroyed: a folder of that name that is not
 * tdebug's is left alone (an error), a file replaced keeps its previous
 * text as NAME.~N~ (tdb_write_file_keeping()), and installing twice changes
 * nothing the second time.
 */
#ifndef TDB_EXTENSION_H
#define TDB_EXTENSION_H

#include "base/common.h"

/* The extensions folders to install into for a user whose home is HOME:
 * those of VS Code (~/.vscode/extensions) and of VS Code Server, which
 * Remote-SSH runs (~/.vscode-server/extensions), that exist, and
 * code-server's (DATA/code-server/extensions) when DATA/code-server, its
 * user data, exists: DATA is XDG_DATA_HOME when it is an absolute path
 * (NULL or anything else: HOME/.local/share, as code-server takes it).
 * When none is there, VS Code's.  New NULL-terminated list
 * (tdb_strv_free). */
char **tdb_vscode_extension_dirs(const char *home, const char *xdg_data_home);

/* The command of the editor whose extensions folder DIR is, by its name:
 * "code-server" for .../code-server/extensions, "code" for
 * .../.vscode/extensions; NULL for any other (VS Code Server's has no
 * command of its own on PATH).  Static string. */
const char *tdb_vscode_editor_cli(const char *dir);

/* Install the packaged extension VSIX into the extensions folder DIR with
 * the editor's own command CLI (tdb_vscode_editor_cli(); looked up on
 * PATH): 'CLI --extensions-dir DIR --install-extension VSIX --force', run
 * only when DIR has no folder of the extension's version yet; then its
 * bin/tdebug links to TDEBUG.  SRC is the extension's folder the VSIX was
 * made from (its package.json names the folder the editor makes; its
 * bin/tdebug is the script the VSIX carries, the one file replaced by the
 * link).  REPORT, *OUT_CHANGED and the return as for
 * tdb_vscode_install_extension(); ERR says what the editor's command said
 * when it failed. */
int tdb_vscode_install_vsix(const char *cli, const char *vsix, const char *src,
                            const char *tdebug, const char *dir, tdb_buf *report,
                            int *out_changed, tdb_error *err);

/* Install the extension in SRC (a folder with its package.json) into the
 * extensions folder DIR (made if missing) by copying its files, its
 * bin/tdebug linking to TDEBUG (an absolute path; a bin/tdebug there is
 * replaced only when it is another link or SRC's own bin/tdebug, the
 * script a .vsix carries).  Appends to REPORT one line per thing done or
 * found, e.g. "installed tdebug.tdebug-0.1.0 in DIR".  *OUT_CHANGED (if
 * given): 1 when anything was written.  Returns 0, or -1 with ERR set
 * (TDB_EXIT_FAIL when something of the user's is in the way, and then
 * nothing of it was touched). */
int tdb_vscode_install_extension(const char *src, const char *tdebug, const char *dir,
                                 tdb_buf *report, int *out_changed, tdb_error *err);

/* Whether the extension in SRC is installed in the extensions folder DIR
 * as tdb_vscode_install_extension() leaves it, so that VS Code there
 * knows the "tdebug" debug type: its folder PUBLISHER.NAME-VERSION with
 * SRC's version, its package.json tdebug's, its bin/tdebug an executable
 * (the link's target exists), listed in DIR/extensions.json when there is
 * one and not marked in DIR/.obsolete.  Returns 1 when it is; 0 when not,
 * with WHY (if given) appended what is wrong, as a sentence ("tdebug's
 * extension is not installed", "tdebug's extension is version 0.0.1, not
 * this tdebug's 0.1.0", "the extension's adapter 'D/bin/tdebug' is a
 * broken link", ...); -1 with ERR set when SRC's own package.json cannot
 * be read. */
int tdb_vscode_extension_installed(const char *src, const char *dir, tdb_buf *why,
                                   tdb_error *err);

#endif

/*
 * cmd/vscode_attach.h: the process 'tdebug vscode --attach PID' is for
 * (src/cmd/vscode_attach.c), for src/cmd/vscode.c only.
 */
#ifndef TDB_CMD_VSCODE_ATTACH_H
#define TDB_CMD_VSCODE_ATTACH_H

#include "base/common.h"
#include "targets/proc.h"
#include "vscode/launch.h"

/* PID resolved as 'tdebug attach' resolves it (a debugpy adapter or
 * launcher to the debuggee, a thread to its process), and how the gdb VS
 * Code starts is to attach (tdb_vscode_plan_attach()).  Returns 0 with
 * *OUT_TABLE (the processes, to free), RES, *OUT_PLAN, *OUT_SCOPE
 * (ptrace_scope, -1 without Yama), *OUT_PTRACER, *OUT_SIGNAL and, for a
 * plan that is not direct, *OUT_AS_USER (why gdb cannot attach as the
 * user); 1 when ambiguous (ERR lists the candidates) or -1 refused, with
 * ERR set. */
int cmd_vscode_resolve_attach(pid_t pid, const char *gdb, tdb_proc_table **out_table,
                              tdb_resolution *res, tdb_vscode_attach_plan *out_plan,
                              int *out_scope, int *out_ptracer, int *out_signal,
                              tdb_error *out_as_user, tdb_error *err);

/* The interpreter P runs, as the user named it (a virtual environment's
 * bin/python, not the file it links to); new string, or NULL. */
char *cmd_vscode_interpreter_of(const tdb_proc *p);

#endif

/*
 * targets/proc_internal.h: what the process reader's files share
 * (targets/proc.c reads /proc, targets/cmdline.c reads command lines,
 * targets/debuggee.c follows debugpy's processes).  Not a public
 * interface: targets/proc.h is.
 */
#ifndef TDB_PROC_INTERNAL_H
#define TDB_PROC_INTERNAL_H

#include "targets/proc.h"

/* Set P's role (and endpoint, role_pid) from its command line and what
 * was read of it (python, pydevd). */
void tdb_proc_assign_role(tdb_proc *p);

/* The address an adapter takes DAP clients on: its --host (default
 * 127.0.0.1, as debugpy/adapter/__main__.py has it) and --port.  Returns
 * 0 with *OUT_HOST (borrowed) and *OUT_PORT (0: the kernel picked one),
 * -1 when it has no --port (it speaks DAP on stdio). */
int tdb_proc_adapter_address(const tdb_proc *p, const char **out_host, long *out_port);

#endif

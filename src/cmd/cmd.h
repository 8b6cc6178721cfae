/*
 * cmd/cmd.h: the subcommands.  Each is 'int cmd_NAME(int argc, char **argv)' in
 * src/cmd/NAME.c, with its help text beside it; src/main.c holds the one
 * table that dispatches to them and prints 'tdebug --help' from it, so help
 * and dispatch cannot drift.  argv[0] is the command name.  A command returns
 * its exit status (TDB_EXIT_* in base/common.h, or the debuggee's own).
 *
 * Contract: the top layer, thin glue: parse and check the command line
 * (cmd/options.c for the options sessions share), call the layers below,
 * print and exit.  Only main() and cmd_*() print (tdb_fail(), tdb_warn(),
 * tdb_error_exit()), besides the CLI's printers of sessions.
 * May include: base, gdb, process, native, cpython, torch, stacks, targets, checks, vscode, session, commands, cli, dap, tour
 */
#ifndef TDB_CMD_H
#define TDB_CMD_H

typedef struct tdb_command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary; /* one line for 'tdebug --help' */
    const char *usage;   /* the whole 'tdebug NAME --help' text */
    int checks_usage;    /* honours tdb_check_usage_only */
} tdb_command;

/* Set by 'tdebug --check-usage COMMAND ARGS...': the command parses and
 * checks its arguments as it always does (a usage error prints and exits
 * 2), then returns TDB_EXIT_OK instead of doing anything: no program is
 * run, no file looked at, nothing written.  Tests run every command the
 * tours and the docs recommend through it. */
extern int tdb_check_usage_only;

/* Look a command up by name; NULL when there is none. */
const tdb_command *tdb_find_command(const char *name);

/* For commands: print "tdebug NAME: MSG" and a pointer to --help on stderr;
 * returns TDB_EXIT_USAGE. */
int tdb_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Print the command's usage text on stdout, then the exit status table;
 * returns TDB_EXIT_OK. */
int tdb_print_usage(const char *cmd);
/* The exit status table every --help ends with (tdebug(1): EXIT STATUS). */
extern const char tdb_exit_status_help[];
/* Print DOC (a reference the call steals) on stdout as indented JSON,
 * keys in insertion order: every command's --json output. */
struct json_t;
void tdb_print_json(struct json_t *doc);
/* Print "tdebug: MSG" on stderr for each {"error": MSG} in the array
 * ERRORS (borrowed): the text-mode form of a --json "errors" list. */
void tdb_print_errors(struct json_t *errors);

#define TDB_DECLARE_COMMAND(name) \
    int cmd_##name(int argc, char **argv); \
    extern const char cmd_##name##_usage[]

TDB_DECLARE_COMMAND(run);
TDB_DECLARE_COMMAND(attach);
TDB_DECLARE_COMMAND(env);
TDB_DECLARE_COMMAND(ps);
TDB_DECLARE_COMMAND(tour);
TDB_DECLARE_COMMAND(vscode);
TDB_DECLARE_COMMAND(wait_port);
TDB_DECLARE_COMMAND(doctor);
TDB_DECLARE_COMMAND(inspect);
TDB_DECLARE_COMMAND(profile);
TDB_DECLARE_COMMAND(stacks);
TDB_DECLARE_COMMAND(dap);
/* 'tdebug vscode --install-extension' (src/cmd/vscode_extension.c). */
int cmd_vscode_install_extension(int argc, char **argv);
/* Install tdebug's VS Code extension into each of DIRS (NULL-terminated;
 * NULL: the user's VS Code and VS Code Server folders), printing what was
 * done; *OUT_CHANGED (if given): 1 when anything was written.  Returns the
 * exit status. */
int cmd_vscode_install_into(char *const *dirs, int *out_changed);
/* Warn, saying what to run, for each of the user's extensions folders in
 * which VS Code would not find the "tdebug" debug type. */
void cmd_vscode_check_extension(void);

#endif

/* cmd/options.c: options shared by 'tdebug run', 'tdebug attach' and 'tdebug tour'. */
#include "cmd/options.h"

#include "cmd/cmd.h"
#include "base/common.h"

#include <stdlib.h>
#include <string.h>

int tdb_session_option(const char *cmd, int c, char *arg, tdb_session_options *opts)
{
    tdb_option_list list;
    const char *name;
    switch (c) {
    case TDB_OPT_STOP:
        list = TDB_OPTS_STOP_AT_IMPORT, name = "--stop-at-import ";
        break;
    case TDB_OPT_STOP_LOAD:
        list = TDB_OPTS_STOP_AT_LOAD, name = "--stop-at-load ";
        break;
    case 'b':
        list = TDB_OPTS_BREAK, name = "--break ";
        break;
    case TDB_OPT_CATCH_THROW:
        list = TDB_OPTS_CATCH_THROW, name = NULL; /* "--catch-throw=TYPE: " */
        break;
    case TDB_OPT_CATCH_RAISE:
        list = TDB_OPTS_CATCH_RAISE, name = "--catch-raise=";
        break;
    case TDB_OPT_SYMBOLS:
        list = TDB_OPTS_SYMBOLS, name = "--symbols ";
        break;
    case TDB_OPT_MY_CODE:
        list = TDB_OPTS_MY_CODE, name = "--my-code ";
        break;
    case TDB_OPT_STEP_INTO: {
        tdb_error err = {0};
        int mode = tdb_step_into_parse(arg, &err);
        if (mode < 0) {
            tdb_usage_error(cmd, "--step-into %s", err.msg);
            return -TDB_EXIT_USAGE;
        }
        opts->step_into = (tdb_step_into)mode;
        return 1;
    }
    case TDB_OPT_ALL_SYMBOLS:
        opts->all_symbols = 1;
        return 1;
    case TDB_OPT_RAW:
        opts->raw = 1;
        return 1;
    case TDB_OPT_CPYTHON_SYMBOLS:
        opts->cpython_symbols = 1;
        return 1;
    case 'v':
        opts->verbose = 1;
        return 1;
    default:
        return 0;
    }
    tdb_error err = {0};
    if (tdb_session_options_add(opts, list, arg, &err) == 0)
        return 1;
    if (name)
        tdb_usage_error(cmd, "%s%s", name, err.msg); /* the reason names the value */
    else
        tdb_usage_error(cmd, "--catch-throw=%s: %s", arg, err.msg);
    return -TDB_EXIT_USAGE;
}

int tdb_session_getopt(const char *cmd, int argc, char **argv, const char *optstring,
                       const struct option *longopts, tdb_cli_options *opts, int *status)
{
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, optstring, longopts, NULL)) != -1) {
        int used = tdb_session_option(cmd, c, optarg, &opts->session);
        if (used < 0) {
            *status = -used;
            return TDB_GETOPT_DONE;
        }
        if (used)
            continue;
        switch (c) {
        case TDB_OPT_BATCH:
            opts->output = TDB_OUTPUT_BATCH;
            continue;
        case TDB_OPT_JSON:
            opts->output = TDB_OUTPUT_JSON;
            continue;
        case 'x':
            if (!*optarg) {
                *status = tdb_usage_error(cmd, "--commands needs a file of commands, one a line");
                return TDB_GETOPT_DONE;
            }
            opts->commands = optarg;
            continue;
        case 'h':
            *status = tdb_print_usage(cmd);
            return TDB_GETOPT_DONE;
        case ':':
            *status = tdb_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
            return TDB_GETOPT_DONE;
        case '?':
            *status = tdb_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
            return TDB_GETOPT_DONE;
        default:
            return c;
        }
    }
    return -1;
}

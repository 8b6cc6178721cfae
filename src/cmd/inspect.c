/*
 * cmd/inspect.c: 'tdebug inspect': what gdb will find in an object before
 * you start it: exported PyInit_*, build-id, the separate debug file,
 * DWARF and how the code was compiled, the gdb index.
 */
#include "cmd/cmd.h"
#include "base/common.h"
#include "native/elf.h"
#include "checks/inspect.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cmd_inspect_usage[] =
    "usage: tdebug inspect [--json] [--no-deps] [--python PYTHON] [--debug-dir DIRS] TARGET...\n"
    "       tdebug inspect [--json] [--all] --pid PID [TARGET...]\n"
    "\n"
    "Report, for each ELF object, what a debugger will find in it: exported\n"
    "PyInit_* functions, build-id, .gnu_debuglink and where the separate debug\n"
    "file is (or every place it was looked for), whether DWARF is present\n"
    "(compressed or not), how the code was compiled (DW_AT_producer: -O0 -g or\n"
    "optimised), and whether gdb has an index for it.\n"
    "\n"
    "TARGET is an ELF file, or a Python module name ('torch._C') resolved by\n"
    "PYTHON to the file it loads, followed by the libraries it loads that are\n"
    "its own (its DT_NEEDED closure inside its package directory, and torch's:\n"
    "torch._C brings libtorch_python, libtorch_cpu, libc10, ...; not libc or\n"
    "libstdc++), as the dynamic loader finds them.  A library name ('libc10.so',\n"
    "lib*.so* and no file here) is looked up by file name and soname among the\n"
    "libraries the other TARGETs (or --pid's process) load, else those torch._C\n"
    "loads; an ambiguous or unknown name is an error that says so.\n"
    "\n"
    "Options:\n"
    "  --json             one JSON document (format in tdebug(1)) instead of text\n"
    "  --python PYTHON    interpreter that resolves module names\n"
    "                     (default: $TDEBUG_PYTHON, else " TDB_PYTHON ")\n"
    "  --pid PID          the objects mapped in process PID that matter: the\n"
    "                     interpreter, libpython, extension modules, torch and c10\n"
    "  --all              with --pid: every mapped ELF object\n"
    "  --no-deps          only the objects named, not the libraries they load\n"
    "  --debug-dir DIRS   where separate debug files live, colon-separated, as\n"
    "                     gdb's debug-file-directory (default: " TDB_DEBUG_DIR_DEFAULT ")\n"
    "  -h, --help         show this help\n"
    "\n"
    "Exit status: 0 every target was inspected; 1 a target could not be\n"
    "(missing, not ELF, unreadable, an unknown module, library or process; the\n"
    "others are still reported).\n";

static const struct option options[] = {
    {"json", no_argument, NULL, 'j'},
    {"python", required_argument, NULL, 'p'},
    {"pid", required_argument, NULL, 'P'},
    {"all", no_argument, NULL, 'a'},
    {"debug-dir", required_argument, NULL, 'd'},
    {"no-deps", no_argument, NULL, 'n'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int cmd_inspect(int argc, char **argv)
{
    const char *python = NULL;
    const char *debug_dirs = NULL;
    int json = 0, all = 0, no_deps = 0, c;
    long pid = -1;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'p': python = optarg; break;
        case 'a': all = 1; break;
        case 'n': no_deps = 1; break;
        case 'd': debug_dirs = optarg; break;
        case 'P':
            if (tdb_parse_long(optarg, 1, 0x7fffffff, &pid) < 0)
                return tdb_usage_error("inspect", "--pid wants a process id, not '%s'", optarg);
            break;
        case 'h': return tdb_print_usage("inspect");
        default: return tdb_usage_error("inspect", "unknown option");
        }
    }
    if (optind >= argc && pid < 0)
        return tdb_usage_error("inspect", "what should I inspect? give a file, a module "
                                          "name or --pid PID");
    if (all && pid < 0)
        return tdb_usage_error("inspect", "--all goes with --pid");
    if (tdb_check_usage_only)
        return TDB_EXIT_OK;

    size_t n = 0;
    tdb_target *t = tdb_resolve_targets(argv + optind, (size_t)(argc - optind),
                                        tdb_target_python(python),
                                        (pid_t)(pid > 0 ? pid : 0),
                                        all ? TDB_PID_ALL : TDB_PID_MATTERS,
                                        no_deps ? 0 : TDB_TARGETS_NEEDED, &n);
    json_t *objects = json_array(), *errors = json_array();
    tdb_elf_options opt = {.debug_dirs = debug_dirs};
    tdb_buf text = TDB_BUF_INIT;
    int status = TDB_EXIT_OK, shown = 0;
    for (size_t i = 0; i < n; i++) {
        tdb_elf_report *r = tdb_target_inspect(&t[i], &opt, errors);
        if (!r) {
            status = TDB_EXIT_FAIL;
            continue;
        }
        if (json) {
            json_t *o = tdb_elf_report_json(r);
            tdb_target_json(&t[i], o);
            json_array_append_new(objects, o);
        } else {
            tdb_buf_reset(&text);
            if (shown++)
                tdb_buf_addc(&text, '\n');
            if (strcmp(t[i].label, t[i].path) && strncmp(t[i].label, "pid ", 4))
                tdb_buf_addf(&text, "%s is ", t[i].label);
            tdb_elf_report_format(r, &text);
            fputs(tdb_buf_str(&text), stdout);
        }
        tdb_elf_report_free(r);
    }
    if (json) {
        tdb_print_json(tdb_json_versioned(json_pack("{s:o, s:o}", "objects", objects,
                                                    "errors", errors)));
    } else {
        tdb_print_errors(errors);
        json_decref(objects);
        json_decref(errors);
    }
    tdb_targets_free(t, n);
    tdb_buf_free(&text);
    return status;
}

/*
 * cmd/tour.c: 'tdebug tour': a guided walk through 'import torch' (or
 * tinytensor, or one's own op) under gdb.  The tours are data
 * (src/tour/data.c); this file writes a tour's program to a private
 * directory, turns its stops into session options (--stop-at-load,
 * --stop-at-import, --break, Python breakpoints on the program's lines),
 * and a stop hook that recognises each stop, prints its explanation
 * around the stack the session prints, says how the tour goes on from it
 * (continue, or step, next, finish: the CLI's resumption, the session's
 * own steps) and records the handout (--markdown).
 */
#include "cmd/cmd.h"
#include "base/common.h"
#include "cli/cli.h"
#include "commands/commands.h"
#include "native/dwsource.h"
#include "cmd/options.h"
#include "checks/inspect.h"
#include "tour/tour.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WIDTH 78
#define PROGRAM_NAME "tour.py" /* in a directory of its own: no module of that name */
#define PROBE_TIMEOUT_MS 60000 /* the interpreter's check */

const char cmd_tour_usage[] =
    "usage: tdebug tour [NAME] [--python PATH] [--batch] [--markdown FILE] [-b LOCATION]\n"
    "                   [-x FILE]\n"
    "\n"
    "A guided tour from a Python line down into PyTorch's C/C++ core: runs a\n"
    "program of a few lines under gdb and stops where the interesting things\n"
    "happen, each time with the native and Python stacks and an explanation\n"
    "(what the code is, where it lives in the source tree, what to try next);\n"
    "from a Python line it steps into C++ with step, as you would.\n"
    "\n"
    "Tours (NAME):\n"
    "  torch        import torch; x = torch.ones(2) + 1 on the installed torch\n"
    "               (the default): stops when torch._C is mapped, in PyInit__C,\n"
    "               in initModule, at the Python line x = a + 1, from which it\n"
    "               steps to at::_ops::add_Tensor::call, and in the CPU kernel\n"
    "               at::native::structured_ufunc_add_CPU::impl\n"
    "  tinytensor   the same path at source level on samples/tinytensor, built\n"
    "               with debug info (needs tdebug's build tree: 'make')\n"
    "  extension    your own op: samples/myop, a torch.utils.cpp_extension built\n"
    "               with the debug flags: PyInit_myop, the Python line calling\n"
    "               scaled_add, a step into it, a next, its tensors in locals,\n"
    "               a finish back to the Python line (needs 'make myop')\n"
    "\n"
    "Options:\n"
    "  --python PATH    the interpreter (default: $TDEBUG_PYTHON, else\n"
    "                   " TDB_PYTHON "); it must be able to import torch (or\n"
    "                   tinytensor)\n"
    "  --batch          print every stop and run to the end (what 'make demo' does)\n"
    "  --markdown FILE  also write the session as a handout (Markdown); an\n"
    "                   existing FILE is kept as FILE.~N~ (N = 1, 2...)\n"
    "  -b, --break LOCATION  a breakpoint of your own beside the tour's stops\n"
    "                   (as 'tdebug run --break'; repeatable)\n"
    "  -x, --commands FILE   at each stop the next line of FILE runs as if typed\n"
    "                   at the prompt; then the tour goes on as --batch\n"
    "  -h, --help       this text\n"
    "\n"
    "At each stop: Enter goes on to the next stop (where the tour steps, it\n"
    "types step, next or finish for you), q quits (the program is killed),\n"
    "anything else is a gdb command (bt, list, info locals, x/4i $pc...).\n"
    "The tour's program is written to a private directory under $TMPDIR (or\n"
    "/tmp), removed when the tour ends.\n"
    "\n"
    "Exit status: 0 when the tour was shown to its end or you quit; 1 when a stop\n"
    "was missed, the interpreter cannot import the tour's module (tdebug then\n"
    "offers the tinytensor tour) or the handout cannot be written; the program's\n"
    "own status if it failed; 126/127 when the interpreter or the tinytensor\n"
    "sample cannot be run / does not exist.\n";

typedef struct tour_state {
    const tdb_tour *tour;
    char **locations;  /* per stop: the breakpoint's location (gdb's, or the
                        * program's FILE:LINE), or NULL */
    int interactive;
    size_t next;       /* stops before NEXT were shown or passed */
    int current;       /* the stop being shown, or -1 */
    int *shown;        /* per stop */
    tdb_buf md;        /* the handout's stops */
} tour_state;

/* ---- text ---- */

/* Append TEXT to B wrapped at WIDTH, each line indented by INDENT spaces.
 * Paragraphs (blank-line separated) stay apart, a line break in TEXT is
 * kept, and a line starting "- " hangs its continuation lines under the
 * text of the item. */
static void wrap(tdb_buf *b, const char *text, int indent, int width)
{
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        int hang = n > 2 && p[0] == '-' && p[1] == ' ' ? 2 : 0;
        int col = 0, first = 1;
        const char *q = p, *end = p + n;
        while (q < end) {
            while (q < end && *q == ' ')
                q++;
            const char *w = q;
            while (q < end && *q != ' ')
                q++;
            int len = (int)(q - w);
            if (!len)
                break;
            if (first || col + 1 + len > width) {
                if (!first)
                    tdb_buf_addc(b, '\n');
                tdb_buf_addf(b, "%*s", indent + (first ? 0 : hang), "");
                col = indent + (first ? 0 : hang);
                first = 0;
            } else {
                tdb_buf_addc(b, ' ');
                col++;
            }
            tdb_buf_add(b, w, (size_t)len);
            col += len;
        }
        tdb_buf_addc(b, '\n');
        p = eol ? eol + 1 : end;
    }
}

/* "  KEY      TEXT", TEXT wrapped in a column of its own; a KEY too long
 * for its column gets a line to itself. */
static void add_item(tdb_buf *b, const char *key, const char *text)
{
    enum { COLUMN = 26 };
    tdb_buf col = TDB_BUF_INIT;
    size_t n = strlen(key);

    wrap(&col, text, COLUMN, WIDTH);
    if (2 + n + 1 > COLUMN)
        tdb_buf_addf(b, "  %s\n%s", key, tdb_buf_str(&col));
    else {
        memcpy(col.s + 2, key, n); /* over the first line's indent */
        tdb_buf_add(b, col.s, col.len);
    }
    tdb_buf_free(&col);
}

static void put(const tdb_buf *b)
{
    fputs(tdb_buf_str(b), stdout);
    fflush(stdout);
}


/* ---- recognising a stop ---- */

static int is_python(const json_t *f)
{
    const json_t *kind = f ? json_object_get(f, "kind") : NULL;
    return json_is_string(kind) && strcmp(json_string_value(kind), "python") == 0;
}

/* The frame the stop reads as: its Python line when it reads as one (a
 * Python breakpoint, a finish back to Python), else gdb's innermost. */
static const json_t *top_frame(const tdb_stop_info *st)
{
    const json_t *py =
        st->python_top >= 0 && st->stack ? json_array_get(st->stack, (size_t)st->python_top) : NULL;
    if (is_python(py))
        return py;
    return st->frames ? json_array_get(st->frames, 0) : NULL;
}

static const char *frame_str(const json_t *f, const char *key)
{
    const json_t *v = f ? json_object_get(f, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* A breakpoint stop in a PLT stub ("f@plt"): gdb puts locations there too
 * (at::_ops::add_Tensor::call has one in libtorch_python and one inside
 * libtorch_cpu), but the call is on its way to the function itself, where
 * the same breakpoint stops next. */
static int in_plt_stub(const tdb_stop_info *st)
{
    const char *fn = frame_str(top_frame(st), "function");
    size_t n = fn ? strlen(fn) : 0;
    return n > 4 && strcmp(fn + n - 4, "@plt") == 0;
}

/* Is the frame the stop reads as in FUNCTION (a name without its
 * parameters; a Python frame's code name, "<module>")? */
static int in_function(const tdb_stop_info *st, const char *function)
{
    const char *fn = frame_str(top_frame(st), "function");
    size_t n = function ? strlen(function) : 0;
    if (!function)
        return 1;
    return fn && strncmp(fn, function, n) == 0 && (fn[n] == '\0' || fn[n] == '(');
}

/* The stop reason that ends a step the tour made with THEN. */
static tdb_stop_reason stop_after(tdb_tour_then then)
{
    switch (then) {
    case TDB_TOUR_THEN_STEP: return TDB_STOP_STEP;
    case TDB_TOUR_THEN_NEXT: return TDB_STOP_NEXT;
    case TDB_TOUR_THEN_FINISH: return TDB_STOP_FINISH;
    default: return TDB_STOP_N_REASONS; /* none */
    }
}

/* The tour stop this stop is the trigger of, or -1. */
static int tour_stop_of(const tour_state *t, const tdb_stop_info *st)
{
    for (size_t k = 0; k < t->tour->n_stops; k++) {
        const tdb_tour_stop *ts = &t->tour->stops[k];
        switch (ts->trigger) {
        case TDB_TOUR_LOADED:
        case TDB_TOUR_IMPORT:
            if (st->reason == (ts->trigger == TDB_TOUR_LOADED ? TDB_STOP_LOADED : TDB_STOP_IMPORT) &&
                st->module && strcmp(st->module, ts->target) == 0)
                return (int)k;
            break;
        case TDB_TOUR_BREAK:
        case TDB_TOUR_MARKED_LINE:
        case TDB_TOUR_PY_LINE:
            if ((st->reason == TDB_STOP_BREAKPOINT || st->reason == TDB_STOP_PYTHON_BREAKPOINT) &&
                st->bp_location && t->locations[k] && strcmp(st->bp_location, t->locations[k]) == 0)
                return (int)k;
            break;
        case TDB_TOUR_STEPPED:
            /* The step the stop before made, by the tour or typed, where
             * it should land; landing elsewhere is the user's own stop. */
            if (k > 0 && t->next == k && t->shown[k - 1] &&
                st->reason == stop_after(t->tour->stops[k - 1].then) &&
                in_function(st, ts->function))
                return (int)k;
            break;
        }
    }
    return -1;
}

/* ---- showing a stop ---- */

static void add_section(tdb_buf *term, tdb_buf *md, const char *title)
{
    tdb_buf_addf(term, "\n%s\n", title);
    tdb_buf_addf(md, "**%s**\n\n", title);
}

/* Paragraphs: wrapped on the terminal, as they are in the handout. */
static void add_text(tdb_buf *term, tdb_buf *md, const char *text)
{
    wrap(term, text, 2, WIDTH);
    tdb_buf_addf(md, "%s\n\n", text);
}

static void add_libraries(tdb_buf *term, tdb_buf *md, const tdb_stop_info *st, int list)
{
    size_t n = json_array_size(st->libraries), i;
    json_t *v;
    tdb_buf names = TDB_BUF_INIT;

    if (!list) {
        tdb_buf_addf(term, "\n%zu libraries are mapped now.\n", n);
        tdb_buf_addf(md, "%zu libraries are mapped now.\n\n", n);
        return;
    }
    add_section(term, md, "Libraries mapped so far");
    tdb_buf_addf(&names, "%zu:", n);
    json_array_foreach(st->libraries, i, v)
    {
        const char *name = tdb_base_name(json_string_value(v));
        tdb_buf_addf(&names, " %s", name);
        tdb_buf_addf(md, "%s`%s`", i ? ", " : "", name);
    }
    wrap(term, tdb_buf_str(&names), 2, WIDTH);
    tdb_buf_adds(md, "\n\n");
    tdb_buf_free(&names);
}

/* The lines around the innermost frame's line, when its file is here to
 * read.  Returns 1 when the frame has a source line (readable or not). */
static int add_source(tdb_buf *term, tdb_buf *md, const tdb_stop_info *st)
{
    const json_t *f = top_frame(st);
    const char *file = frame_str(f, "file");
    const json_t *line = f ? json_object_get(f, "line") : NULL;
    const char *lang = is_python(f) ? "python" : "c";
    char *text = NULL;

    if (!file || !json_is_integer(line))
        return 0;
    int at = (int)json_integer_value(line), n = 1;
    text = tdb_read_file(file, NULL, NULL);
    if (!text)
        return 1;
    const char *shown = frame_str(f, "source") ? frame_str(f, "source") : file;
    tdb_buf_addf(term, "\nSource (%s:%d)\n", shown, at);
    tdb_buf_addf(md, "**Source** (`%s:%d`)\n\n```%s\n", shown, at, lang);
    for (char *p = text; *p && n <= at + 2; n++) {
        char *eol = strchr(p, '\n');
        if (eol)
            *eol = '\0';
        if (n >= at - 2) {
            tdb_buf_addf(term, "%s%5d  %s\n", n == at ? "=>" : "  ", n, p);
            tdb_buf_addf(md, "%s%5d  %s\n", n == at ? "=>" : "  ", n, p);
        }
        if (!eol)
            break;
        p = eol + 1;
    }
    tdb_buf_adds(md, "```\n\n");
    free(text);
    return 1;
}

/* What COMMAND answers at this stop, as if typed at the prompt. */
static void add_command(tdb_buf *term, tdb_buf *md, tdb_session *s, const char *command)
{
    tdb_reply r = {0};
    tdb_error err = {0};

    if (tdb_command_exec(s, command, &r, &err) < 0)
        tdb_buf_addf(&r.text, "(%s)\n", err.msg);
    tdb_buf_addf(term, "\n%s\n%s", command, tdb_buf_str(&r.text));
    tdb_buf_addf(md, "**`%s`**\n\n```text\n%s```\n\n", command, tdb_buf_str(&r.text));
    tdb_reply_clear(&r);
}

/* The stack as the handout shows it, native and Python frames merged:
 * function, then source line or library, without addresses. */
static void add_md_stack(tdb_buf *md, tdb_session *s, const tdb_stop_info *st)
{
    size_t i;
    json_t *f;
    tdb_stop_text t;

    tdb_stop_text_make(s, st, &t);
    tdb_buf_addf(md, "```text\ntdebug: %s\n", t.message);
    tdb_stop_text_clear(&t);
    json_array_foreach(st->stack, i, f)
    {
        const char *fn = frame_str(f, "function"), *lib = frame_str(f, "library");
        const char *file = frame_str(f, "source") ? frame_str(f, "source") : frame_str(f, "file");
        json_t *line = json_object_get(f, "line");
        const char *kind = frame_str(f, "kind");
        if (kind && strcmp(kind, "python") == 0) {
            if (json_is_integer(line))
                tdb_buf_addf(md, "    File \"%s\", line %lld, in %s\n", file,
                             (long long)json_integer_value(line), fn);
            else
                tdb_buf_addf(md, "    File \"%s\", in %s\n", file, fn);
            continue;
        }
        tdb_buf_addf(md, "#%-3lld %s", (long long)json_integer_value(json_object_get(f, "level")),
                     fn ? fn : "??");
        if (file && json_is_integer(line))
            tdb_buf_addf(md, " at %s:%lld", file, (long long)json_integer_value(line));
        else if (lib)
            tdb_buf_addf(md, " in %s", tdb_base_name(lib));
        tdb_buf_addc(md, '\n');
    }
    tdb_buf_adds(md, "```\n\n");
}

static void show_explanation(tour_state *t, size_t k, tdb_session *s, const tdb_stop_info *st)
{
    const tdb_tour_stop *ts = &t->tour->stops[k];
    tdb_buf term = TDB_BUF_INIT, md = TDB_BUF_INIT;

    add_md_stack(&md, s, st);
    if (st->compact && st->view) {
        /* A step's stop shows where it went, not the stack: the tour
         * shows the way there too. */
        tdb_buf_adds(&term, "\nStack\n");
        tdb_render_stack(st->view, tdb_session_stack_flags(s), st->view->t.py ? NULL : st->python_frames,
                         &term);
    }
    add_section(&term, &md, "What this is");
    add_text(&term, &md, ts->what);
    if (ts->trigger == TDB_TOUR_LOADED || ts->trigger == TDB_TOUR_IMPORT)
        add_libraries(&term, &md, st, ts->trigger == TDB_TOUR_LOADED);
    if (!add_source(&term, &md, st) && ts->no_debug) {
        add_section(&term, &md, "No debug info here");
        add_text(&term, &md, ts->no_debug);
    }
    if (ts->show)
        add_command(&term, &md, s, ts->show);
    add_section(&term, &md, "Where it lives");
    for (const tdb_tour_place *p = ts->where; p && p->path; p++) {
        tdb_buf_addf(&term, "  %s\n", p->path);
        wrap(&term, p->what, 6, WIDTH);
        tdb_buf_addf(&md, "- `%s`: %s\n", p->path, p->what);
    }
    tdb_buf_adds(&md, "\n");
    add_section(&term, &md, "Try next");
    for (const tdb_tour_try *x = ts->try_next; x && x->command; x++) {
        add_item(&term, x->command, x->shows);
        tdb_buf_addf(&md, "- `%s`: %s\n", x->command, x->shows);
    }
    tdb_buf_adds(&md, "\n");
    put(&term);
    tdb_buf_add(&t->md, md.s ? md.s : "", md.len);
    tdb_buf_free(&term);
    tdb_buf_free(&md);
}

/* The words of what Enter does after a stop whose action is THEN. */
static const char *then_word(tdb_tour_then then)
{
    switch (then) {
    case TDB_TOUR_THEN_STEP: return "step";
    case TDB_TOUR_THEN_NEXT: return "next";
    case TDB_TOUR_THEN_FINISH: return "finish";
    default: return NULL;
    }
}

static void show_hint(const tour_state *t, tdb_tour_then then)
{
    const char *word = then_word(then);
    if (!t->interactive)
        return;
    if (t->next < t->tour->n_stops && word)
        printf("\n[Enter: %s, to stop %zu of %zu | q: quit | a gdb command: bt, list, ...]\n",
               word, t->next + 1, t->tour->n_stops);
    else if (t->next < t->tour->n_stops)
        printf("\n[Enter: next stop (%zu of %zu) | q: quit | a gdb command: bt, list, ...]\n",
               t->next + 1, t->tour->n_stops);
    else
        printf("\n[Enter: let the program finish | q: quit | a gdb command]\n");
    fflush(stdout);
}

/* The CLI's way on after a stop whose action is THEN. */
static tdb_hook_action then_action(tdb_tour_then then)
{
    switch (then) {
    case TDB_TOUR_THEN_STEP: return TDB_HOOK_STEP;
    case TDB_TOUR_THEN_NEXT: return TDB_HOOK_NEXT;
    case TDB_TOUR_THEN_FINISH: return TDB_HOOK_FINISH;
    default: return TDB_HOOK_DEFAULT;
    }
}

static tdb_hook_action tour_hook(tdb_session *s, tdb_hook_phase phase, const tdb_stop_info *st,
                                 void *data)
{
    tour_state *t = data;

    if (phase == TDB_HOOK_BEFORE) {
        t->current = -1;
        if (st->reason == TDB_STOP_BREAKPOINT && in_plt_stub(st))
            return TDB_HOOK_CONTINUE;
        int k = tour_stop_of(t, st);
        if (k < 0)
            return TDB_HOOK_DEFAULT; /* the user's own: shown as it is */
        /* A stop already shown (a loop's next element, a second add) or
         * passed, or a breakpoint that also matched another function. */
        if ((size_t)k < t->next || !in_function(st, t->tour->stops[k].function))
            return TDB_HOOK_CONTINUE;
        t->current = k;
        t->next = (size_t)k + 1;
        t->shown[k] = 1;
        printf("\n=== Stop %d of %zu: %s ===\n\n", k + 1, t->tour->n_stops,
               t->tour->stops[k].title);
        fflush(stdout);
        tdb_buf_addf(&t->md, "## Stop %d of %zu: %s\n\n", k + 1, t->tour->n_stops,
                     t->tour->stops[k].title);
        return TDB_HOOK_DEFAULT;
    }
    tdb_tour_then then = TDB_TOUR_THEN_CONTINUE;
    if (t->current >= 0) {
        show_explanation(t, (size_t)t->current, s, st);
        then = t->tour->stops[t->current].then;
    }
    show_hint(t, then);
    t->current = -1;
    return then_action(then);
}

/* ---- before the tour: the interpreter, the module, the breakpoints ---- */

/* Check PYTHON can import MODULE; *OUT_EXE gets the interpreter's own
 * path (a pyenv shim resolves to the real python, which is what gdb must
 * run).  Returns 0 when it can, 1 when MODULE is missing, or an exit status
 * after printing why PYTHON cannot be run. */
static int check_python(const char *python, const char *module, char **out_exe)
{
    tdb_error err = {0};
    int has_module = 0;

    if (tdb_py_executable(python, module, PROBE_TIMEOUT_MS, out_exe, &has_module, &err) < 0) {
        tdb_fail("%s (give --python the interpreter's path, e.g. /usr/bin/python3)", err.msg);
        return err.exit_code ? err.exit_code : TDB_EXIT_TOOL;
    }
    return has_module ? 0 : 1;
}

/* Where the tour's package (a built sample) is; puts it first on
 * PYTHONPATH.  NULL after printing why. */
static char *find_package(const tdb_tour *tour)
{
    char *dir = tdb_companion_path(tour->package);
    if (!dir) {
        tdb_fail("cannot find '%s' beside tdebug or in %s: the %s tour needs tdebug's build tree "
                 "(run '%s' in tdebug's source tree, then its build/tdebug)",
                 tour->package, TDB_LIBDIR, tour->name, tour->build ? tour->build : "make");
        return NULL;
    }
    const char *old = getenv("PYTHONPATH");
    char *path = old && *old ? tdb_xasprintf("%s:%s", dir, old) : tdb_xstrdup(dir);
    setenv("PYTHONPATH", path, 1);
    free(path);
    return dir;
}

/* The line of CODE that reads LINE_TEXT (the whole line), or 0. */
static int program_line(const char *code, const char *line_text)
{
    size_t n = strlen(line_text);
    int line = 1;
    for (const char *p = code; *p; line++) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (len == n && strncmp(p, line_text, n) == 0)
            return line;
        if (!eol)
            break;
        p = eol + 1;
    }
    return 0;
}

/* The location of stop TS of TOUR: the function, FILE:LINE of the marked
 * line, or PROGRAM:LINE of the program's line.  New string, or NULL when
 * the stop is not a breakpoint. */
static char *stop_location(const tdb_tour *tour, const tdb_tour_stop *ts, const char *package,
                           const char *python, const char *program)
{
    if (ts->trigger == TDB_TOUR_BREAK)
        return tdb_xstrdup(ts->target);
    if (ts->trigger == TDB_TOUR_PY_LINE) {
        int line = program_line(tour->code, ts->target);
        /* The tour's own data: tests/unit/test_tour_support checks it. */
        return line ? tdb_xasprintf("%s:%d", program, line) : NULL;
    }
    if (ts->trigger != TDB_TOUR_MARKED_LINE)
        return NULL;
    tdb_error err = {0};
    /* The module's own file as this interpreter imports it (PYTHONPATH has
     * the package): its EXT_SUFFIX is the interpreter's, not 3.11's. */
    char *lib = ts->library ? tdb_xasprintf("%s/%s", package ? package : ".", ts->library)
                            : tdb_py_module_path(python, tour->module, &err);
    char *src = lib ? tdb_dwarf_source_path(lib, ts->file, &err) : NULL;
    char *marker = tdb_xasprintf("TOUR: %s", ts->target), *loc = NULL;
    int line;
    if (src && tdb_marked_line(src, marker, &line, &err) == 0)
        loc = tdb_xasprintf("%s:%d", src, line);
    else {
        /* The sources moved: stop at the function's start instead. */
        tdb_warn("cannot find the line marked '%s' in %s: %s; stopping at the start of %s "
                 "instead",
                 marker, ts->file, err.msg, ts->function);
        loc = tdb_xstrdup(ts->function);
    }
    free(lib);
    free(src);
    free(marker);
    return loc;
}

/* Write CODE to DIR/PROGRAM_NAME (DIR is the tour's own, new).  Its path
 * (new string), or NULL with ERR. */
static char *write_program(const char *dir, const char *code, tdb_error *err)
{
    char *path = tdb_xasprintf("%s/%s", dir, PROGRAM_NAME);
    if (tdb_write_file_keeping(path, "the tour's program", NULL, 0, code, strlen(code), NULL, NULL,
                               err) < 0) {
        free(path);
        return NULL;
    }
    return path;
}

/* Ask whether to take tour NAME instead; only on a terminal. */
static int offer(const char *name)
{
    char line[64];
    size_t n = 0;
    if (!isatty(0) || !isatty(1))
        return 0;
    printf("Take the %s tour now? [Y/n] ", name);
    fflush(stdout);
    /* read(), not stdio: what follows the answer is the tour's. */
    for (;;) {
        char c;
        ssize_t r = read(0, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        if (c == '\n')
            break;
        if (n < sizeof(line) - 1)
            line[n++] = c;
    }
    line[n] = '\0';
    return !*line || !strcmp(line, "y") || !strcmp(line, "Y") || !strcmp(line, "yes");
}

/* ---- the handout ---- */

static int write_handout(const char *path, const tour_state *t, const char *python,
                         const char *ending)
{
    tdb_buf b = TDB_BUF_INIT;
    tdb_error err = {0};
    char *backup = NULL, *old = NULL;
    size_t old_len = 0;
    int rc, changed = 0;

    tdb_buf_addf(&b, "# %s\n\n", t->tour->title);
    tdb_buf_addf(&b, "Recorded with `tdebug tour %s` (tdebug %s), which ran `", t->tour->name,
                 TDB_VERSION);
    tdb_shell_quote(&b, python);
    tdb_buf_addf(&b, " %s` under gdb, this program:\n\n```python\n%s```\n\n", PROGRAM_NAME,
                 t->tour->code);
    tdb_buf_addf(&b, "%s\n\n", t->tour->intro);
    tdb_buf_add(&b, t->md.s ? t->md.s : "", t->md.len);
    tdb_buf_addf(&b, "## The end\n\n%s\n", ending);
    /* What is there now: kept as a backup unless the handout is the same. */
    old = tdb_read_regular_file(path, NULL, &old_len, &err);
    if (!old && err.code == ENOENT)
        tdb_error_clear(&err);
    rc = err.set ? -1
                 : tdb_write_file_keeping(path, NULL, old, old_len, tdb_buf_str(&b), b.len, &backup,
                                          &changed, &err);
    if (rc < 0)
        tdb_fail("cannot write the handout: %s", err.msg);
    else if (!changed)
        printf("tdebug: the handout %s already holds this session: left as it was\n", path);
    else if (backup)
        printf("tdebug: wrote the handout to %s (the file that was there is now %s)\n", path,
               backup);
    else
        printf("tdebug: wrote the handout to %s\n", path);
    free(backup);
    free(old);
    tdb_buf_free(&b);
    return rc;
}

/* Check early that the handout can be written, before a tour of minutes. */
static int handout_writable(const char *path)
{
    struct stat st;
    char *copy = tdb_xstrdup(path), *slash = strrchr(copy, '/');
    const char *dir = slash ? (slash == copy ? "/" : (*slash = '\0', copy)) : ".";
    int ok = 1;

    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        tdb_fail("cannot write the handout to '%s': it is a directory (give a file name)", path);
        ok = 0;
    } else if (access(dir, W_OK) < 0) {
        tdb_fail("cannot write the handout to '%s': directory '%s': %s (give a path in a "
                 "writable directory)",
                 path, dir, strerror(errno));
        ok = 0;
    }
    free(copy);
    return ok;
}

/* ---- the command ---- */

/* What the command line asks of a tour. */
typedef struct tour_args {
    const char *python, *markdown, *commands;
    int batch;
    char **breaks; /* the user's own breakpoints, beside the tour's */
    size_t n_breaks;
} tour_args;

static int take_tour(const tdb_tour *tour, const tour_args *a);
static int tour_command(int argc, char **argv, tour_args *a);

int cmd_tour(int argc, char **argv)
{
    enum { OPT_PYTHON = 256, OPT_BATCH, OPT_MARKDOWN };
    static const struct option longopts[] = {
        {"python", required_argument, NULL, OPT_PYTHON},
        {"batch", no_argument, NULL, OPT_BATCH},
        {"markdown", required_argument, NULL, OPT_MARKDOWN},
        {"break", required_argument, NULL, 'b'},
        {"commands", required_argument, NULL, 'x'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tour_args a = {0};
    int c, status = -1;

    opterr = 0;
    optind = 1;
    while (status < 0 && (c = getopt_long(argc, argv, ":hb:x:", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_PYTHON: a.python = optarg; break;
        case OPT_BATCH: a.batch = 1; break;
        case OPT_MARKDOWN: a.markdown = optarg; break;
        case 'b':
            if (*optarg)
                tdb_ptrs_push(&a.breaks, &a.n_breaks, optarg);
            else
                status = tdb_usage_error("tour", "--break needs a location");
            break;
        case 'x':
            if (*optarg)
                a.commands = optarg;
            else
                status = tdb_usage_error("tour", "--commands needs a file of commands, one a line");
            break;
        case 'h': status = tdb_print_usage("tour"); break;
        case ':': status = tdb_usage_error("tour", "option '%s' needs a value", argv[optind - 1]); break;
        default: status = tdb_usage_error("tour", "unknown option '%s'", argv[optind - 1]); break;
        }
    }
    if (status < 0)
        status = tour_command(argc, argv, &a);
    free(a.breaks);
    return status;
}

static int tour_command(int argc, char **argv, tour_args *a)
{
    const char *python = a->python, *markdown = a->markdown;
    if (argc - optind > 1)
        return tdb_usage_error("tour", "one tour at a time ('%s' is one too many)", argv[optind + 1]);
    const char *name = optind < argc ? argv[optind] : tdb_tours[0].name;
    const tdb_tour *tour = tdb_find_tour(name);
    if (!tour) {
        tdb_buf names = TDB_BUF_INIT;
        for (size_t i = 0; i < tdb_n_tours; i++)
            tdb_buf_addf(&names, "%s%s", i ? ", " : "", tdb_tours[i].name);
        tdb_usage_error("tour", "there is no tour '%s' (tours: %s)", name, tdb_buf_str(&names));
        tdb_buf_free(&names);
        return TDB_EXIT_USAGE;
    }
    python = tdb_target_python(python);
    if (!*python)
        return tdb_usage_error("tour", "--python needs the interpreter's path");
    if (markdown && !*markdown)
        return tdb_usage_error("tour", "--markdown needs a file name");
    if (tdb_check_usage_only)
        return TDB_EXIT_OK;
    if (markdown && !handout_writable(markdown))
        return TDB_EXIT_FAIL;
    a->python = python;
    return take_tour(tour, a);
}

static int take_tour(const tdb_tour *tour, const tour_args *a)
{
    const char *python = a->python, *markdown = a->markdown;
    int batch = a->batch;
    tour_state t = {.tour = tour, .interactive = !batch, .current = -1};
    tdb_cli_options opts = {
        .output = batch ? TDB_OUTPUT_BATCH : TDB_OUTPUT_INTERACTIVE,
        .prompt = "(tour) ",
        .empty_continues = 1,
        .commands = a->commands,
    };
    char *package = NULL, *exe = NULL, *symbols = NULL, *dir = NULL, *program = NULL;
    tdb_cli *s = NULL;
    tdb_error err = {0};
    int status;

    if (tour->package && !(package = find_package(tour)))
        return TDB_EXIT_NOTFOUND;
    status = check_python(python, tour->module, &exe);
    if (status == 1) {
        const tdb_tour *instead = tour->instead ? tdb_find_tour(tour->instead) : NULL;
        if (instead)
            tdb_fail("cannot take the %s tour with '%s': it cannot import %s (give --python an "
                     "interpreter that can, e.g. /usr/bin/python3, or take the same tour at "
                     "source level: tdebug tour %s)",
                     tour->name, python, tour->module, instead->name);
        else
            tdb_fail("cannot take the %s tour with '%s': it cannot import %s from %s (build it "
                     "for that interpreter: %s PYTHON=%s)",
                     tour->name, python, tour->module, package ? package : "?",
                     tour->build ? tour->build : "make", python);
        free(package);
        free(exe);
        if (instead && !batch && offer(instead->name))
            return take_tour(instead, a);
        return TDB_EXIT_FAIL;
    }
    if (status != 0)
        goto cleanup;
    if (!(dir = tdb_private_dir("tdebug-tour", &err)) ||
        !(program = write_program(dir, tour->code, &err))) {
        status = tdb_error_exit(&err);
        goto cleanup;
    }

    t.locations = tdb_xcalloc(tour->n_stops, sizeof(*t.locations));
    t.shown = tdb_xcalloc(tour->n_stops, sizeof(*t.shown));
    for (size_t k = 0; k < tour->n_stops; k++) {
        const tdb_tour_stop *ts = &tour->stops[k];
        char *target = (char *)ts->target;
        if (ts->trigger == TDB_TOUR_LOADED)
            tdb_ptrs_push(&opts.session.stop_at_load, &opts.session.n_stop_at_load, target);
        else if (ts->trigger == TDB_TOUR_IMPORT)
            tdb_ptrs_push(&opts.session.stop_at_import, &opts.session.n_stop_at_import, target);
        else if ((t.locations[k] = stop_location(tour, ts, package, exe, program)))
            tdb_ptrs_push(&opts.session.breaks, &opts.session.n_breaks, t.locations[k]);
    }
    for (size_t k = 0; k < a->n_breaks; k++)
        tdb_ptrs_push(&opts.session.breaks, &opts.session.n_breaks, a->breaks[k]);
    if (tour->symbols) {
        symbols = tdb_xstrdup(tour->symbols);
        tdb_ptrs_push(&opts.session.symbols, &opts.session.n_symbols, symbols);
    }
    /* The sample is the user's own code: a step from Python stops there. */
    if (package)
        tdb_ptrs_push(&opts.session.my_code, &opts.session.n_my_code, package);

    tdb_buf intro = TDB_BUF_INIT;
    tdb_buf_addf(&intro, "%s\n\n", tour->title);
    wrap(&intro, tour->intro, 0, WIDTH);
    tdb_buf_adds(&intro, "\nThe program: ");
    tdb_shell_quote(&intro, exe);
    tdb_buf_addc(&intro, ' ');
    tdb_shell_quote(&intro, program);
    tdb_buf_adds(&intro, "\n\n");
    for (const char *p = tour->code; *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        tdb_buf_addf(&intro, "    %.*s\n", (int)n, p);
        p += n + (eol != NULL);
    }
    tdb_buf_adds(&intro, batch ? "" : "\nAt each stop: Enter goes on (or steps, where the tour "
                                      "steps), q quits, anything else is a gdb command.\n");
    put(&intro);
    tdb_buf_free(&intro);

    s = tdb_cli_new(&opts, &err);
    if (!s) {
        status = tdb_error_exit(&err);
        goto cleanup;
    }
    tdb_cli_set_stop_hook(s, tour_hook, &t);
    char *run_argv[] = {exe, program, NULL};
    status = tdb_cli_run(s, run_argv, &err);
    if (err.set)
        tdb_print_error(&err);

    /* How it ended. */
    size_t shown = 0;
    tdb_buf ending = TDB_BUF_INIT, missed = TDB_BUF_INIT;
    for (size_t k = 0; k < tour->n_stops; k++) {
        if (t.shown[k])
            shown++;
        else
            tdb_buf_addf(&missed, "%s%zu (%s)", missed.len ? ", " : "", k + 1,
                         t.locations[k] ? t.locations[k] : tour->stops[k].target);
    }
    const char *stops = tour->n_stops - shown > 1 ? "stops" : "stop";
    int ended = tdb_cli_program_ended(s);
    if (ended && shown == tour->n_stops) {
        tdb_buf_adds(&ending, tour->outro);
        tdb_buf out = TDB_BUF_INIT;
        tdb_buf_addf(&out, "\n=== The end: all %zu stops ===\n\n", shown);
        wrap(&out, tour->outro, 0, WIDTH);
        put(&out);
        tdb_buf_free(&out);
    } else if (ended || err.set) {
        tdb_buf_addf(&ending, "The tour missed %s %s.", stops, tdb_buf_str(&missed));
        tdb_fail("the tour missed %s %s: the program never got there (see the messages "
                 "above; 'tdebug tour %s' tries again)",
                 stops, tdb_buf_str(&missed), tour->name);
        if (status == 0)
            status = TDB_EXIT_FAIL;
    } else {
        tdb_buf_addf(&ending, "The tour was ended after stop %zu of %zu.", t.next,
                     tour->n_stops);
        printf("tdebug: the tour ended after stop %zu of %zu ('tdebug tour %s' starts it "
               "again)\n",
               t.next, tour->n_stops, tour->name);
    }
    fflush(stdout);
    if (markdown && write_handout(markdown, &t, exe, tdb_buf_str(&ending)) < 0 && status == 0)
        status = TDB_EXIT_FAIL;
    tdb_buf_free(&ending);
    tdb_buf_free(&missed);
cleanup:
    tdb_cli_free(s);
    if (program)
        unlink(program);
    if (dir)
        rmdir(dir);
    free(program);
    free(dir);
    if (t.locations)
        for (size_t k = 0; k < tour->n_stops; k++)
            free(t.locations[k]);
    free(t.locations);
    free(t.shown);
    tdb_buf_free(&t.md);
    free(symbols);
    free(package);
    free(exe);
    tdb_session_options_release(&opts.session);
    return status;
}

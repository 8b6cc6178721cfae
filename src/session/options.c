/*
 * session/options.c: the one validator of what a session is asked to stop
 * at and read (session/session.h, "Options"): module names, break
 * locations, C++ class names for catch throw, symbol regexes.  The
 * command line (cmd/options.c) and the DAP (dap/lifecycle.c) both check
 * their values here and only add the option's own name to the reason.
 */
#include "session/session.h"

#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

int tdb_valid_module_name(const char *name)
{
    int at_start = 1;
    if (!name || !*name)
        return 0;
    for (const char *p = name; *p; p++) {
        if (*p == '.') {
            if (at_start)
                return 0;
            at_start = 1;
        } else if (isalpha((unsigned char)*p) || *p == '_' || (!at_start && isdigit((unsigned char)*p))) {
            at_start = 0;
        } else {
            return 0;
        }
    }
    return !at_start;
}

/* The suffixes GCC gives the clones of a function (foo.cold,
 * foo.part.0, foo.constprop.0.isra.0): symbols gdb can break on. */
static int is_clone_suffix(const char *s, size_t n)
{
    static const char *const suffixes[] = {"cold",  "hot",   "part",     "constprop", "isra",
                                           "clone", "lto_priv", "localalias", "specialized"};
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
        if (strlen(suffixes[i]) == n && !strncmp(s, suffixes[i], n))
            return 1;
    return 0;
}

tdb_break_kind tdb_break_location_kind(const char *loc)
{
    const char *colon = strrchr(loc, ':');
    const char *file_end = colon ? colon : loc + strlen(loc);
    if (file_end - loc >= 4 && !strncmp(file_end - 3, ".py", 3) && (!colon || colon[-1] != ':'))
        return TDB_BREAK_PYTHON_FILE;
    if (colon || loc[0] == '*')
        return TDB_BREAK_NATIVE;
    /* identifier(.identifier)+, none of them a clone suffix, the last not
     * a C/C++ source file's extension. */
    static const char *const sources[] = {"c", "cc", "cpp", "cxx", "cu", "h", "hpp", "S", "s"};
    const char *p = loc;
    size_t parts = 0;
    for (;;) {
        const char *start = p;
        if (!(isalpha((unsigned char)*p) || *p == '_'))
            return TDB_BREAK_NATIVE;
        while (isalnum((unsigned char)*p) || *p == '_')
            p++;
        size_t n = (size_t)(p - start);
        if (parts && is_clone_suffix(start, n))
            return TDB_BREAK_NATIVE;
        parts++;
        if (!*p) {
            for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
                if (strlen(sources[i]) == n && !strncmp(start, sources[i], n))
                    return TDB_BREAK_NATIVE;
            return parts >= 2 ? TDB_BREAK_PYTHON_NAME : TDB_BREAK_NATIVE;
        }
        if (*p++ != '.')
            return TDB_BREAK_NATIVE;
    }
}

static int location_refusal(const char *loc, tdb_buf *why);

char *tdb_break_split(const char *spec, const char **condition)
{
    /* gdb's own rule: the first " if " (a location has no spaces but in a
     * C++ signature, whose parentheses come first). */
    const char *at = NULL;
    int depth = 0;
    for (const char *p = spec; *p && !at; p++) {
        depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
        if (!depth && (*p == ' ' || *p == '\t') && strncmp(p + 1, "if", 2) == 0 &&
            (p[3] == ' ' || p[3] == '\t' || p[3] == '('))
            at = p;
    }
    *condition = NULL;
    if (!at)
        return tdb_xstrdup(spec);
    const char *c = at + 3;
    while (*c == ' ' || *c == '\t')
        c++;
    *condition = c;
    return tdb_xstrndup(spec, (size_t)(at - spec));
}

int tdb_break_refusal(const char *spec, tdb_buf *why)
{
    const char *cond;
    char *loc = tdb_break_split(spec, &cond);
    int rc = 0;
    if (cond && !*cond) {
        if (why)
            tdb_buf_addf(why, "'%s' has 'if' but no condition after it", spec);
        rc = 1;
    } else {
        rc = location_refusal(loc, why);
    }
    free(loc);
    return rc;
}

static int location_refusal(const char *loc, tdb_buf *why)
{
    tdb_break_kind kind = tdb_break_location_kind(loc);
    const char *colon = strrchr(loc, ':');
    if (kind == TDB_BREAK_NATIVE || (kind == TDB_BREAK_PYTHON_FILE && colon && colon[1]))
        return 0;
    if (!why)
        return 1;
    if (kind == TDB_BREAK_PYTHON_FILE)
        tdb_buf_addf(why, "'%s' names a Python file but no place in it: give "
                          "FILE.py:LINE or FILE.py:FUNCTION (train.py:42, train.py:Model.forward)",
                     loc);
    else
        tdb_buf_addf(why, "'%s' is a Python name, not a place: give a place in Python "
                          "code as FILE.py:FUNCTION or FILE.py:LINE, or the C/C++ function it "
                          "runs (%s)",
                     loc, strncmp(loc, "torch.", 6) == 0
                              ? "torch's operators enter C++ at at::_ops::NAME_OVERLOAD::call: "
                                "torch.add at at::_ops::add_Tensor::call; 'tdebug tour' walks "
                                "that path"
                              : "its symbol, as 'info functions REGEX' at the (tdebug) prompt "
                                "lists them");
    return 1;
}

int tdb_catch_type_refusal(const char *type, tdb_buf *why)
{
    /* What the demangler prints for a class: names, ::, template
     * arguments (which may hold numbers, spaces, commas, pointers). */
    int ok = *type && (isalpha((unsigned char)*type) || *type == '_' || *type == ':');
    for (const char *p = type; ok && *p; p++)
        ok = isalnum((unsigned char)*p) || strchr("_:<>,*& ", *p) != NULL;
    if (ok)
        return 0;
    if (why)
        tdb_buf_addf(why, "'%s' is not a C++ class name: give one as the demangler spells it, "
                          "e.g. c10::Error (it catches that class and every class derived from "
                          "it: c10::IndexError, ...) or std::out_of_range; it is not a regex",
                     type);
    return 1;
}

int tdb_session_options_add(tdb_session_options *o, tdb_option_list list, char *value,
                            tdb_error *err)
{
    tdb_buf why = TDB_BUF_INIT;
    regex_t re;
    switch (list) {
    case TDB_OPTS_STOP_AT_IMPORT:
    case TDB_OPTS_STOP_AT_LOAD:
        if (!tdb_valid_module_name(value)) {
            tdb_error_set(err, EINVAL, "'%s' is not a module name (like torch._C)", value);
            return -1;
        }
        if (list == TDB_OPTS_STOP_AT_IMPORT)
            tdb_ptrs_push(&o->stop_at_import, &o->n_stop_at_import, value);
        else
            tdb_ptrs_push(&o->stop_at_load, &o->n_stop_at_load, value);
        return 0;
    case TDB_OPTS_BREAK:
        if (!*value || strchr(value, '\n')) {
            tdb_error_set(err, EINVAL, "needs a gdb location (FUNCTION, FILE:LINE or *ADDRESS)");
            return -1;
        }
        if (tdb_break_refusal(value, &why)) {
            tdb_error_set(err, EINVAL, "%s", tdb_buf_str(&why));
            tdb_buf_free(&why);
            return -1;
        }
        tdb_ptrs_push(&o->breaks, &o->n_breaks, value);
        return 0;
    case TDB_OPTS_CATCH_THROW:
        if (value && tdb_catch_type_refusal(value, &why)) {
            tdb_error_set(err, EINVAL, "%s", tdb_buf_str(&why));
            tdb_buf_free(&why);
            return -1;
        }
        tdb_ptrs_push(&o->catch_throw, &o->n_catch_throw, value ? value : "");
        return 0;
    case TDB_OPTS_CATCH_RAISE:
        if (value && tdb_python_exc_type_refusal(value, &why)) {
            tdb_error_set(err, EINVAL, "%s", tdb_buf_str(&why));
            tdb_buf_free(&why);
            return -1;
        }
        tdb_ptrs_push(&o->catch_raise, &o->n_catch_raise, value ? value : "");
        return 0;
    case TDB_OPTS_SYMBOLS:
        if (!*value || strchr(value, '\n') || regcomp(&re, value, REG_NOSUB) != 0) {
            tdb_error_set(err, EINVAL, "'%s' is not a basic regex", value);
            return -1;
        }
        regfree(&re);
        tdb_ptrs_push(&o->symbols, &o->n_symbols, value);
        return 0;
    case TDB_OPTS_MY_CODE:
        if (!*value || strchr(value, '\n')) {
            tdb_error_set(err, EINVAL, "needs a directory of your own code");
            return -1;
        }
        tdb_ptrs_push(&o->my_code, &o->n_my_code, value);
        return 0;
    }
    tdb_error_set(err, EINVAL, "no such option list");
    return -1;
}

void tdb_session_options_release(tdb_session_options *o)
{
    free(o->stop_at_import);
    free(o->stop_at_load);
    free(o->breaks);
    free(o->symbols);
    free(o->catch_throw);
    free(o->catch_raise);
    o->catch_raise = NULL;
    o->n_catch_raise = 0;
    free(o->my_code);
    o->my_code = NULL;
    o->n_my_code = 0;
    o->stop_at_import = o->stop_at_load = o->breaks = o->symbols = o->catch_throw = NULL;
    o->n_stop_at_import = o->n_stop_at_load = o->n_breaks = o->n_symbols = o->n_catch_throw = 0;
}

const char *const tdb_step_into_words[3] = {
    [TDB_STEP_INTO_MINE] = "mine",
    [TDB_STEP_INTO_OPERATOR] = "operator",
    [TDB_STEP_INTO_BINDING] = "binding",
};

int tdb_step_into_parse(const char *word, tdb_error *err)
{
    for (int i = 0; i < 3; i++)
        if (word && strcmp(word, tdb_step_into_words[i]) == 0)
            return i;
    tdb_error_set(err, EINVAL, "'%s' is not where a step stops: give mine (your own code, else "
                               "torch's operator), operator (torch's operator entry) or binding "
                               "(the first native frame, the binding's glue)",
                  word ? word : "");
    return -1;
}

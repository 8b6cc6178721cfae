/* native/cxxnames.c: C++ names as a person reads them (see native/cxxnames.h). */
#include "native/cxxnames.h"

#include "base/common.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define ELLIPSIS "\xe2\x80\xa6" /* U+2026, one column */

/* Template arguments up to this long stay ("std::vector<at::Tensor>"). */
#define FOLD_TEMPLATE_OVER 24
/* A parameter list longer than this (after folding) is "(…)". */
#define FOLD_PARAMS_OVER 60

/* How libstdc++'s names are written in source.  Applied in this order,
 * each everywhere in the name. */
static const struct {
    const char *from, *to;
} spellings[] = {
    {"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >",
     "std::string"},
    {"std::basic_string<char, std::char_traits<char>, std::allocator<char> >", "std::string"},
    {"std::__cxx11::", "std::"},
    {"std::__1::", "std::"}, /* libc++ */
};

/* The index just past the bracket that closes the one at S[I] ('<' or
 * '('), counting only brackets of that kind; strlen(S) when unbalanced. */
static size_t closing(const char *s, size_t i)
{
    char open = s[i], close = open == '<' ? '>' : ')';
    int depth = 0;
    for (size_t k = i; s[k]; k++) {
        if (s[k] == open)
            depth++;
        else if (s[k] == close && --depth == 0)
            return k + 1;
    }
    return strlen(s);
}

/* The length of an operator's symbol when S starts with "operator" as a
 * word ("operator<<", "operator()", "operator->"), its symbol included;
 * 0 otherwise. */
static size_t operator_token(const char *s, size_t i)
{
    static const char *const symbols[] = {"<<=", ">>=", "<=>", "->*", "<<", ">>", "<=", ">=",
                                          "->", "()", "<", ">"};
    if (strncmp(s + i, "operator", 8) != 0 || (i > 0 && (isalnum((unsigned char)s[i - 1]) ||
                                                         s[i - 1] == '_')))
        return 0;
    size_t k = i + 8;
    while (s[k] == ' ')
        k++;
    for (size_t j = 0; j < sizeof(symbols) / sizeof(symbols[0]); j++)
        if (strncmp(s + k, symbols[j], strlen(symbols[j])) == 0)
            return k - i + strlen(symbols[j]);
    return 8;
}

/* Replace every FROM in *S with TO. */
static void replace_all(char **s, const char *from, const char *to)
{
    char *p = strstr(*s, from);
    if (!p)
        return;
    tdb_buf b = TDB_BUF_INIT;
    const char *rest = *s;
    for (; p; p = strstr(rest, from)) {
        tdb_buf_add(&b, rest, (size_t)(p - rest));
        tdb_buf_adds(&b, to);
        rest = p + strlen(from);
    }
    tdb_buf_adds(&b, rest);
    free(*s);
    *s = tdb_buf_detach(&b);
}

/* Leave out default allocators: ", std::allocator<T> " (and the space
 * before a closing '>' it leaves). */
static void drop_allocators(char **s)
{
    static const char key[] = ", std::allocator<";
    char *p;
    while ((p = strstr(*s, key)) != NULL) {
        size_t at = (size_t)(p - *s);
        size_t end = closing(*s, at + sizeof(key) - 2);
        if ((*s)[end] == ' ')
            end++;
        memmove(*s + at, *s + end, strlen(*s + end) + 1);
    }
}

/* One pass of folding S into B.  PARAMS 0: template arguments and
 * lambdas' parameters; 1 (after that): each parameter list still longer
 * than FOLD_PARAMS_OVER, the function's own and those of the functions it
 * is local to ("initialize<…>(…)::{lambda(…)#3}"). */
static void fold(const char *s, tdb_buf *b, int params)
{
    size_t i = 0, n = strlen(s);
    while (i < n) {
        size_t op = operator_token(s, i), end;
        if (op) {
            tdb_buf_add(b, s + i, op);
            i += op;
        } else if (!params && s[i] == '<') {
            end = closing(s, i);
            size_t inner = end - i - 2;
            if (inner > FOLD_TEMPLATE_OVER || memchr(s + i + 1, '<', inner) ||
                memchr(s + i + 1, '(', inner))
                tdb_buf_adds(b, "<" ELLIPSIS ">");
            else
                tdb_buf_add(b, s + i, end - i);
            i = end;
        } else if (!params && strncmp(s + i, "{lambda(", 8) == 0 && s[i + 8] != ')') {
            tdb_buf_adds(b, "{lambda(" ELLIPSIS ")");
            i = closing(s, i + 7);
        } else if (params && s[i] == '(') {
            end = closing(s, i);
            if (end - i - 2 > FOLD_PARAMS_OVER)
                tdb_buf_adds(b, "(" ELLIPSIS ")");
            else
                tdb_buf_add(b, s + i, end - i);
            i = end;
        } else {
            tdb_buf_addc(b, s[i++]);
        }
    }
}

char *tdb_cxx_short_name(const char *name)
{
    if (!name)
        return NULL;
    char *s = tdb_xstrdup(name);
    for (size_t k = 0; k < sizeof(spellings) / sizeof(spellings[0]); k++)
        replace_all(&s, spellings[k].from, spellings[k].to);
    drop_allocators(&s);
    tdb_buf b = TDB_BUF_INIT;
    fold(s, &b, 0);
    free(s);
    s = tdb_buf_detach(&b);
    fold(s, &b, 1);
    free(s);
    return tdb_buf_detach(&b);
}

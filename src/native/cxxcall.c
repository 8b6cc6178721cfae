/* native/cxxcall.c: the registers at a C++ function's entry and its
 * signature from the demangled name (contract in native/cxxcall.h). */
#include "native/cxxcall.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* --- registers ---------------------------------------------------------- */

static const char *const gpr_names[6] = {"rdi", "rsi", "rdx", "rcx", "r8", "r9"};

/* The "uint128 = 0x..." member of gdb's vector register union. */
static int parse_uint128(const char *v, uint64_t out[2])
{
    const char *p = strstr(v, "uint128 = ");
    p = p ? p + 10 : v;
    while (*p == ' ')
        p++;
    if (p[0] != '0' || (p[1] != 'x' && p[1] != 'X'))
        return -1;
    p += 2;
    const char *e = p;
    while (isxdigit((unsigned char)*e))
        e++;
    size_t n = (size_t)(e - p);
    if (n == 0 || n > 32)
        return -1;
    out[0] = out[1] = 0;
    for (size_t i = 0; i < n; i++) {
        int d = isdigit((unsigned char)p[i]) ? p[i] - '0' : (tolower((unsigned char)p[i]) - 'a' + 10);
        out[1] = out[1] << 4 | out[0] >> 60;
        out[0] = out[0] << 4 | (uint64_t)d;
    }
    return 0;
}

int tdb_regs_from_mi(const json_t *names, const json_t *values, tdb_regs *out, tdb_error *err)
{
    const json_t *nl = json_object_get(names, "register-names");
    const json_t *vl = json_object_get(values, "register-values");
    tdb_regs r;
    size_t i;
    json_t *e;
    unsigned gpr_seen = 0, xmm_seen = 0;

    memset(&r, 0, sizeof(r));
    json_array_foreach(vl, i, e) {
        const char *num = json_string_value(json_object_get(e, "number"));
        const char *val = json_string_value(json_object_get(e, "value"));
        long k;
        if (!num || !val || tdb_parse_long(num, 0, 100000, &k) < 0)
            continue;
        const char *name = json_string_value(json_array_get(nl, (size_t)k));
        if (!name)
            continue;
        uint64_t v = strtoull(val, NULL, 0);
        for (int g = 0; g < 6; g++)
            if (!strcmp(name, gpr_names[g])) {
                r.gpr[g] = v;
                gpr_seen |= 1u << g;
            }
        if (!strcmp(name, "rsp")) {
            r.rsp = v;
            r.have |= TDB_REGS_SP;
        } else if (!strcmp(name, "rip")) {
            r.rip = v;
            r.have |= TDB_REGS_PC;
        } else if (!strncmp(name, "xmm", 3) && name[3] >= '0' && name[3] <= '7' && !name[4]) {
            if (parse_uint128(val, r.xmm[name[3] - '0']) == 0)
                xmm_seen |= 1u << (name[3] - '0');
        }
    }
    if (gpr_seen == 0x3f)
        r.have |= TDB_REGS_GPR;
    if (xmm_seen == 0xff)
        r.have |= TDB_REGS_XMM;
    if ((r.have & (TDB_REGS_GPR | TDB_REGS_SP | TDB_REGS_PC)) != (TDB_REGS_GPR | TDB_REGS_SP | TDB_REGS_PC)) {
        tdb_error_set(err, EINVAL, "gdb did not give the registers rdi, rsi, rdx, rcx, r8, r9, rsp and rip");
        return -1;
    }
    *out = r;
    return 0;
}

int tdb_regs_at_entry(tdb_mem *m, const tdb_regs *r, uint64_t func_start, int *out_pushed,
                      const char **out_why, tdb_error *err)
{
    unsigned char code[64];
    int pushed = 0;
    if (r->rip == func_start) {
        *out_pushed = 0;
        return 1;
    }
    if (r->rip < func_start || r->rip - func_start > sizeof(code)) {
        *out_why = "the program has run past the start of the function: the registers no longer "
                   "hold the arguments";
        return 0;
    }
    size_t n = (size_t)(r->rip - func_start);
    if (tdb_mem_read_full(m, func_start, code, n) < 0) {
        tdb_error_errno(err, "cannot read the code at 0x%llx", (unsigned long long)func_start);
        return -1;
    }
    /* Only instructions that leave rdi..r9 and xmm0..7 alone. */
    for (size_t i = 0; i < n;) {
        if (i + 4 <= n && !memcmp(code + i, "\xf3\x0f\x1e\xfa", 4)) { /* endbr64 */
            i += 4;
        } else if (code[i] == 0x55 || code[i] == 0x53) { /* push %rbp, push %rbx */
            i += 1, pushed += 8;
        } else if (i + 2 <= n && code[i] == 0x41 && code[i + 1] >= 0x54 && code[i + 1] <= 0x57) {
            i += 2, pushed += 8; /* push %r12..%r15 */
        } else if (i + 3 <= n && !memcmp(code + i, "\x48\x89\xe5", 3)) { /* mov %rsp,%rbp */
            i += 3;
        } else {
            *out_why = "the program has run past the start of the function: the registers no "
                       "longer hold the arguments";
            return 0;
        }
    }
    *out_pushed = pushed;
    return 1;
}

/* --- signatures --------------------------------------------------------- */

char *tdb_cxx_trim(const char *s, size_t n)
{
    while (n && isspace((unsigned char)*s))
        s++, n--;
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    return tdb_xstrndup(s, n);
}

static int opens(char c)
{
    return c == '(' || c == '<' || c == '[' || c == '{';
}

static int closes(char c)
{
    return c == ')' || c == '>' || c == ']' || c == '}';
}

void tdb_cxx_sig_free(tdb_cxx_sig *s)
{
    if (!s)
        return;
    free(s->return_type);
    free(s->scope);
    free(s->name);
    tdb_strv_free(s->params);
    memset(s, 0, sizeof(*s));
}

int tdb_cxx_sig_parse(const char *name, tdb_cxx_sig *out, tdb_error *err)
{
    tdb_cxx_sig s;
    size_t len = strlen(name);
    memset(&s, 0, sizeof(s));

    /* What follows the signature: "@plt", " [clone .cold]", qualifiers. */
    const char *at = strstr(name, "@plt");
    if (at)
        len = (size_t)(at - name);
    for (;;) {
        while (len && isspace((unsigned char)name[len - 1]))
            len--;
        if (len > 0 && name[len - 1] == ']') {
            const char *c = NULL;
            for (size_t i = len; i-- > 0;)
                if (name[i] == '[') {
                    c = name + i;
                    break;
                }
            if (c && !strncmp(c, "[clone", 6)) {
                len = (size_t)(c - name);
                continue;
            }
        }
        static const char *const quals[] = {"const", "volatile", "&&", "&", "noexcept"};
        int cut = 0;
        for (size_t q = 0; q < sizeof(quals) / sizeof(quals[0]) && !cut; q++) {
            size_t ql = strlen(quals[q]);
            if (len > ql && !strncmp(name + len - ql, quals[q], ql) &&
                (quals[q][0] == '&' || !isalnum((unsigned char)name[len - ql - 1]))) {
                if (!strcmp(quals[q], "const"))
                    s.is_const = 1;
                len -= ql;
                cut = 1;
            }
        }
        if (!cut)
            break;
    }
    if (len == 0 || name[len - 1] != ')') {
        tdb_error_set(err, EINVAL, "'%s' carries no parameter list", name);
        return -1;
    }
    /* The matching '(' of the parameter list. */
    size_t open = 0;
    int depth = 0, found = 0;
    for (size_t i = len; i-- > 0;) {
        if (closes(name[i]))
            depth++;
        else if (opens(name[i]) && --depth == 0) {
            open = i;
            found = 1;
            break;
        }
    }
    if (!found || open == 0) {
        tdb_error_set(err, EINVAL, "'%s' carries no parameter list", name);
        return -1;
    }
    /* Parameters: split at top-level commas. */
    size_t np = 0;
    const char *p = name + open + 1, *end = name + len - 1, *start = p;
    depth = 0;
    for (; p <= end; p++) {
        if (p < end && opens(*p))
            depth++;
        else if (p < end && closes(*p))
            depth--;
        else if (p == end || (*p == ',' && depth == 0)) {
            char *t = tdb_cxx_trim(start, (size_t)(p - start));
            if (*t && strcmp(t, "void") != 0 && strcmp(t, "...") != 0)
                tdb_ptrs_push(&s.params, &np, t);
            else
                free(t);
            start = p + 1;
        }
    }
    s.n_params = np;
    if (!s.params)
        tdb_ptrs_push(&s.params, &np, NULL);
    /* Before it: [return type ' '] qualified name. */
    size_t qstart = 0, lastsep = (size_t)-1;
    depth = 0;
    for (size_t i = 0; i < open; i++) {
        if (opens(name[i]))
            depth++;
        else if (closes(name[i]))
            depth--;
        else if (depth == 0 && name[i] == ' ' && !(i >= 8 && !strncmp(name + i - 8, "operator", 8)))
            qstart = i + 1;
    }
    if (qstart > 0)
        s.return_type = tdb_cxx_trim(name, qstart - 1);
    depth = 0;
    for (size_t i = qstart; i + 1 < open; i++) {
        if (opens(name[i]))
            depth++;
        else if (closes(name[i]))
            depth--;
        else if (depth == 0 && name[i] == ':' && name[i + 1] == ':')
            lastsep = i;
    }
    if (lastsep == (size_t)-1) {
        s.scope = tdb_xstrdup("");
        s.name = tdb_cxx_trim(name + qstart, open - qstart);
    } else {
        s.scope = tdb_cxx_trim(name + qstart, lastsep - qstart);
        s.name = tdb_cxx_trim(name + lastsep + 2, open - lastsep - 2);
    }
    *out = s;
    return 0;
}

/* S without a "const"/"volatile" before or after (at::Tensor const). */
char *tdb_cxx_unqualified(const char *s)
{
    char *t = tdb_cxx_trim(s, strlen(s));
    for (int again = 1; again;) {
        size_t n = strlen(t);
        again = 0;
        if (n > 6 && !strcmp(t + n - 6, " const"))
            t[n - 6] = '\0', again = 1;
        else if (n > 9 && !strcmp(t + n - 9, " volatile"))
            t[n - 9] = '\0', again = 1;
        else if (!strncmp(t, "const ", 6))
            memmove(t, t + 6, n - 5), again = 1;
        else if (!strncmp(t, "volatile ", 9))
            memmove(t, t + 9, n - 8), again = 1;
        char *u = tdb_cxx_trim(t, strlen(t));
        free(t);
        t = u;
    }
    return t;
}

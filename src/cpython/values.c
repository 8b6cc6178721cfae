/* cpython/values.c: Python objects read from memory and shown as repr() would,
 * bounded. */
#include "cpython/values.h"

#include "cpython/read.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INT_DIGITS 1000 /* 30-bit digits of an int converted (~9000 decimal) */
#define MAX_LOCALS 4096
#define MAX_TEXT 16384      /* bytes of one value's text */

typedef struct fmt {
    tdb_py_process *p;
    const tdb_py_value_opts *o;
    int max_depth;
    size_t max_items, max_str;
    uint64_t open[64]; /* the containers being shown, outermost first */
    int n_open;
} fmt;

/* --- text of one object ---------------------------------------------------- */

static void repr_text(tdb_buf *b, const char *s, size_t len, char quote, int is_bytes)
{
    tdb_buf_addc(b, quote);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c == (unsigned char)quote) {
            tdb_buf_addc(b, '\\');
            tdb_buf_addc(b, (char)c);
        } else if (c == '\n') {
            tdb_buf_adds(b, "\\n");
        } else if (c == '\r') {
            tdb_buf_adds(b, "\\r");
        } else if (c == '\t') {
            tdb_buf_adds(b, "\\t");
        } else if (c < 0x20 || c == 0x7f || (is_bytes && c >= 0x80)) {
            tdb_buf_addf(b, "\\x%02x", c);
        } else if (c >= 0x80) {
            /* A str's text is UTF-8, except the bytes of surrogate escapes,
             * which repr() shows as \udcXX. */
            size_t n = 0;
            if ((c & 0xe0) == 0xc0)
                n = 2;
            else if ((c & 0xf0) == 0xe0)
                n = 3;
            else if ((c & 0xf8) == 0xf0)
                n = 4;
            if (n && i + n <= len && tdb_utf8_valid(s + i, n)) {
                tdb_buf_add(b, s + i, n);
                i += n - 1;
            } else {
                tdb_buf_addf(b, "\\udc%02x", c);
            }
        } else {
            tdb_buf_addc(b, (char)c);
        }
    }
    tdb_buf_addc(b, quote);
}

/* The decimal digits of an int made of NDIGITS base-2^SHIFT DIGITS (little
 * endian, modified: divided in place). */
static void int_decimal(tdb_buf *b, uint32_t *digits, int64_t ndigits, unsigned shift, int neg)
{
    uint32_t *parts = tdb_xmalloc((size_t)(ndigits * 2 + 2) * sizeof(uint32_t));
    size_t nparts = 0;
    int64_t n = ndigits;
    while (n > 0) {
        /* Divide by 10^9, keeping the remainder. */
        uint64_t rem = 0;
        for (int64_t i = n - 1; i >= 0; i--) {
            uint64_t cur = (rem << shift) | digits[i];
            digits[i] = (uint32_t)(cur / 1000000000u);
            rem = cur % 1000000000u;
        }
        parts[nparts++] = (uint32_t)rem;
        while (n > 0 && digits[n - 1] == 0)
            n--;
    }
    if (neg)
        tdb_buf_addc(b, '-');
    if (!nparts)
        tdb_buf_addc(b, '0');
    for (size_t i = nparts; i > 0; i--)
        tdb_buf_addf(b, i == nparts ? "%" PRIu32 : "%09" PRIu32, parts[i - 1]);
    free(parts);
}

/* Append an int's decimal text; -1 when unreadable. */
static int int_text(fmt *f, tdb_buf *b, uint64_t addr)
{
    tdb_py_process *p = f->p;
    int64_t ndigits;
    int neg = 0;
    if (TDB_PY_HAS(p, long_tag)) {
        uint64_t tag;
        if (tdb_py_ptr(p, addr, TDB_PYO_long_tag, &tag) < 0)
            return -1;
        neg = (tag & 3) == 2;
        ndigits = (int64_t)(tag >> TDB_PY_OFF(p, long_nonsize_bits));
    } else {
        if (tdb_py_i64(p, addr, TDB_PYO_var_size, &ndigits) < 0)
            return -1;
        neg = ndigits < 0;
        ndigits = neg ? -ndigits : ndigits;
    }
    if (ndigits > MAX_INT_DIGITS) {
        tdb_buf_addf(b, "<int of about %lld bits>",
                     (long long)ndigits * TDB_PY_OFF(p, long_shift));
        return 0;
    }
    uint32_t *digits = tdb_xcalloc((size_t)ndigits + 1, sizeof(uint32_t));
    if (ndigits && (TDB_PY_OFF(p, long_digit_size) != 4 ||
                    tdb_py_rd(p, addr + (uint64_t)TDB_PY_OFF(p, long_digit), digits,
                              (size_t)ndigits * 4) < 0)) {
        free(digits);
        return -1;
    }
    int_decimal(b, digits, ndigits, (unsigned)TDB_PY_OFF(p, long_shift), neg);
    free(digits);
    return 0;
}

/* repr() of a float: the shortest text that reads back as the same value. */
static void float_text(tdb_buf *b, double v)
{
    if (isnan(v)) {
        tdb_buf_adds(b, "nan");
        return;
    }
    if (isinf(v)) {
        tdb_buf_adds(b, v < 0 ? "-inf" : "inf");
        return;
    }
    char s[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(s, sizeof(s), "%.*g", prec, v);
        if (strtod(s, NULL) == v)
            break;
    }
    if (!strpbrk(s, ".eninf"))
        strcat(s, ".0");
    tdb_buf_adds(b, s);
}

static int is_tensor_type(tdb_py_process *p, uint64_t type)
{
    for (int depth = 0; type && depth < 32; depth++) {
        char *name = tdb_py_type_name(p, type);
        int hit = name && (strcmp(name, "torch._C._TensorBase") == 0 ||
                           strcmp(name, "torch._C.TensorBase") == 0);
        free(name);
        if (hit)
            return 1;
        if (tdb_py_ptr(p, type, TDB_PYO_type_base, &type) < 0)
            return 0;
    }
    return 0;
}

static int value_text(fmt *f, tdb_buf *b, uint64_t addr, int depth);

typedef struct items_ctx {
    fmt *f;
    tdb_buf *b;
    int depth;
    size_t shown;
    int failed;
} items_ctx;

static int dict_item_cb(tdb_py_process *p, uint64_t key, uint64_t value, void *arg)
{
    items_ctx *c = arg;
    if (c->shown >= c->f->max_items)
        return 1;
    if (c->shown++)
        tdb_buf_adds(c->b, ", ");
    if (value_text(c->f, c->b, key, c->depth + 1) < 0)
        c->failed = 1;
    tdb_buf_adds(c->b, ": ");
    if (value_text(c->f, c->b, value, c->depth + 1) < 0)
        c->failed = 1;
    return c->b->len > MAX_TEXT;
}

/* A container already being shown, further out (a list holding itself):
 * Python shows it as "[...]" there (Py_ReprEnter). */
static int is_open(const fmt *f, uint64_t addr)
{
    for (int i = 0; i < f->n_open; i++)
        if (f->open[i] == addr)
            return 1;
    return 0;
}

static int attr_item_cb(tdb_py_process *p, uint64_t key, uint64_t value, void *arg)
{
    items_ctx *c = arg;
    if (c->shown >= c->f->max_items)
        return 1;
    char *name = tdb_py_str(p, key, 200, 0, NULL, NULL);
    if (c->shown++)
        tdb_buf_adds(c->b, ", ");
    tdb_buf_addf(c->b, "%s=", name ? name : "?");
    if (!name || value_text(c->f, c->b, value, c->depth + 1) < 0)
        c->failed = 1;
    free(name);
    return c->b->len > MAX_TEXT;
}

/* The items of the set at ADDR, "1, 2" (its table: entries whose key is
 * NULL are free, the dummy key, whose type is NULL, marks a deleted one).
 * -1 when part of it cannot be read. */
static int set_items(fmt *f, tdb_buf *b, uint64_t addr, int64_t used, int depth)
{
    tdb_py_process *p = f->p;
    uint64_t table = 0;
    int64_t mask = 0;
    if (tdb_py_ptr(p, addr, TDB_PYO_set_table, &table) < 0 || !table ||
        tdb_py_i64(p, addr, TDB_PYO_set_mask, &mask) < 0 || mask < 0 || mask > (1 << 26))
        return -1;
    int32_t esize = TDB_PY_OFF(p, setentry_size), ekey = TDB_PY_OFF(p, setentry_key);
    int64_t shown = 0;
    int rc = 0;
    for (int64_t i = 0; i <= mask && shown < used && b->len <= MAX_TEXT; i++) {
        uint64_t key = 0;
        if (tdb_py_rd(p, table + (uint64_t)(i * esize + ekey), &key, sizeof(key)) < 0)
            return -1;
        if (!key || !tdb_py_type_of(p, key))
            continue;
        if ((size_t)shown >= f->max_items) {
            tdb_buf_addf(b, ", ... (%lld more)", (long long)(used - shown));
            break;
        }
        if (shown++)
            tdb_buf_adds(b, ", ");
        if (value_text(f, b, key, depth + 1) < 0)
            rc = -1;
    }
    return rc;
}

/* The part of a type's name after its module ("ValueError"). */
static const char *short_name(const char *tp_name)
{
    const char *dot = strrchr(tp_name, '.');
    return dot ? dot + 1 : tp_name;
}

/* Objects that are neither numbers, strings nor the builtin containers, as
 * Python (or CPython's own gdb support, for instances) shows them.  NAME:
 * the name of TYPE. */
static int other_text(fmt *f, tdb_buf *b, uint64_t addr, uint64_t type, const char *name,
                      int depth)
{
    tdb_py_process *p = f->p;
    const tdb_py_types *t = &p->t;
    int rc = 0;
    if (tdb_py_type_is(p, type, t->type)) { /* ADDR is a class */
        char *self = tdb_py_type_name(p, addr);
        tdb_buf_addf(b, "<class '%s'>", self ? self : "?");
        free(self);
        return 0;
    }
    if (type == t->module) {
        uint64_t dict = 0;
        char *mod = NULL;
        if (tdb_py_ptr(p, addr, TDB_PYO_module_dict, &dict) == 0)
            mod = tdb_py_str(p, tdb_py_dict_get(p, dict, "__name__"), 200, 0, NULL, NULL);
        tdb_buf_addf(b, "<module '%s'>", mod ? mod : "?");
        free(mod);
        return 0;
    }
    int64_t used = -1;
    if (t->set && TDB_PY_HAS(p, set_table) &&
        (tdb_py_type_is(p, type, t->set) || tdb_py_type_is(p, type, t->frozenset)) &&
        tdb_py_i64(p, addr, TDB_PYO_set_used, &used) == 0 && used >= 0) {
        int plain = type == t->set;
        if (!plain)
            tdb_buf_addf(b, "%s(", short_name(name));
        if (used == 0) {
            tdb_buf_adds(b, plain ? "set()" : ")");
        } else if (depth >= f->max_depth || is_open(f, addr)) {
            tdb_buf_adds(b, plain ? "{...}" : "...)");
        } else {
            tdb_buf_addc(b, '{');
            f->open[f->n_open++] = addr;
            rc = set_items(f, b, addr, used, depth);
            f->n_open--;
            tdb_buf_adds(b, plain ? "}" : "})");
        }
        return rc;
    }
    uint64_t args = 0;
    if (t->base_exception && TDB_PY_HAS(p, exc_args) &&
        tdb_py_type_is(p, type, t->base_exception) &&
        tdb_py_ptr(p, addr, TDB_PYO_exc_args, &args) == 0 &&
        tdb_py_type_of(p, args) == t->tuple) {
        /* ValueError('x', 3): BaseException_repr */
        int64_t n = tdb_py_seq_len(p, args);
        tdb_buf_addf(b, "%s(", short_name(name));
        for (int64_t i = 0; i < n && i < (int64_t)f->max_items; i++) {
            if (i)
                tdb_buf_adds(b, ", ");
            if (value_text(f, b, tdb_py_seq_item(p, args, i), depth + 1) < 0)
                rc = -1;
        }
        if (n > (int64_t)f->max_items)
            tdb_buf_addf(b, ", ... (%lld more)", (long long)(n - (int64_t)f->max_items));
        tdb_buf_addc(b, ')');
        return n < 0 ? -1 : rc;
    }
    uint64_t func = 0, self = 0;
    if (t->method && type == t->method && TDB_PY_HAS(p, method_func) &&
        tdb_py_ptr(p, addr, TDB_PYO_method_func, &func) == 0 &&
        tdb_py_ptr(p, addr, TDB_PYO_method_self, &self) == 0) {
        /* <bound method Foo.bar of Foo(a=1)>: method_repr */
        uint64_t qualname = 0;
        char *q = NULL;
        if (tdb_py_ptr(p, func, TDB_PYO_func_qualname, &qualname) == 0)
            q = tdb_py_str(p, qualname, 200, 0, NULL, NULL);
        tdb_buf_addf(b, "<bound method %s of ", q ? q : "?");
        free(q);
        if (depth >= f->max_depth)
            tdb_buf_addf(b, "<object at 0x%llx>", (unsigned long long)self);
        else if (value_text(f, b, self, depth + 1) < 0)
            rc = -1;
        tdb_buf_addc(b, '>');
        return rc;
    }
    uint64_t ml = 0, mname = 0;
    if (t->cfunction && TDB_PY_HAS(p, cfunc_ml) && tdb_py_type_is(p, type, t->cfunction) &&
        tdb_py_ptr(p, addr, TDB_PYO_cfunc_ml, &ml) == 0 &&
        tdb_py_ptr(p, addr, TDB_PYO_cfunc_self, &self) == 0 &&
        tdb_py_ptr(p, ml, TDB_PYO_methoddef_name, &mname) == 0) {
        /* meth_repr */
        char fname[128] = "?";
        ssize_t got = tdb_mem_read(&p->mem, mname, fname, sizeof(fname) - 1);
        fname[got > 0 ? got : 1] = '\0';
        if (got <= 0)
            fname[0] = '?';
        uint64_t stype = self ? tdb_py_type_of(p, self) : 0;
        if (!self || stype == t->module) {
            tdb_buf_addf(b, "<built-in function %s>", fname);
        } else {
            char *sname = tdb_py_type_name(p, stype);
            tdb_buf_addf(b, "<built-in method %s of %s object at 0x%llx>", fname,
                         sname ? sname : "?", (unsigned long long)self);
            free(sname);
        }
        return 0;
    }
    if (type == t->frame) {
        /* <frame at 0x..., file 'x.py', line 3, code f>: frame_repr */
        char *file = NULL, *code = NULL;
        int line = -1;
        if (tdb_py_frame_object_where(p, addr, &file, &code, &line) == 0) {
            tdb_buf_addf(b, "<frame at 0x%llx, file ", (unsigned long long)addr);
            repr_text(b, file, strlen(file), '\'', 0);
            if (line > 0)
                tdb_buf_addf(b, ", line %d", line);
            tdb_buf_addf(b, ", code %s>", code);
            free(file);
            free(code);
            return 0;
        }
    }
    int64_t flags = 0;
    if (TDB_PY_HAS(p, tpflags_heaptype) && !is_tensor_type(p, type) && tdb_py_i64(p, type, TDB_PYO_type_flags, &flags) == 0 &&
        (flags & TDB_PY_OFF(p, tpflags_heaptype))) {
        /* An instance of a class of the program's: Foo(a=1, b='x'), as
         * CPython's Tools/gdb/libpython.py shows it (InstanceProxy). */
        size_t mark = b->len;
        tdb_buf_addf(b, "%s(", short_name(name));
        if (is_open(f, addr) || depth >= f->max_depth) {
            tdb_buf_adds(b, "...)");
            return 0;
        }
        items_ctx c = {f, b, depth, 0, 0};
        f->open[f->n_open++] = addr;
        long seen = tdb_py_instance_walk(p, addr, f->max_items + 1, attr_item_cb, &c);
        f->n_open--;
        if (seen >= 0) {
            if (c.shown >= f->max_items && seen > (long)c.shown)
                tdb_buf_adds(b, ", ...");
            tdb_buf_addc(b, ')');
            return c.failed ? -1 : 0;
        }
        b->len = mark; /* no attributes to show (__slots__): as any object */
        b->s[mark] = '\0';
    }
    tdb_buf_addf(b, "<%s object at 0x%llx>", name, (unsigned long long)addr);
    return 0;
}

/* Append the text of the object at ADDR.  -1 when it cannot be read (the
 * text then says so where it stands). */
static int value_text(fmt *f, tdb_buf *b, uint64_t addr, int depth)
{
    tdb_py_process *p = f->p;
    const tdb_py_types *t = &p->t;
    if (!addr) {
        tdb_buf_adds(b, "<NULL>");
        return -1;
    }
    if (addr == t->none) {
        tdb_buf_adds(b, "None");
        return 0;
    }
    if (addr == t->true_ || addr == t->false_) {
        tdb_buf_adds(b, addr == t->true_ ? "True" : "False");
        return 0;
    }
    uint64_t type = tdb_py_type_of(p, addr);
    if (!type) {
        tdb_buf_addf(b, "<unreadable object at 0x%llx>", (unsigned long long)addr);
        return -1;
    }
    if (type == t->long_) {
        if (int_text(f, b, addr) == 0)
            return 0;
    } else if (type == t->float_) {
        double v;
        if (tdb_py_rd(p, addr + (uint64_t)TDB_PY_OFF(p, float_fval), &v, sizeof(v)) == 0) {
            float_text(b, v);
            return 0;
        }
    } else if (type == t->unicode) {
        int trunc = 0;
        int64_t len = 0;
        size_t nbytes = 0;
        char *s = tdb_py_strn(p, addr, f->max_str, 1, &trunc, &len, &nbytes);
        if (s) {
            repr_text(b, s, nbytes, '\'', 0);
            if (trunc)
                tdb_buf_addf(b, "... (%lld characters)", (long long)len);
            free(s);
            return 0;
        }
    } else if (type == t->bytes) {
        size_t n;
        int64_t full;
        uint8_t *s = tdb_py_bytes(p, addr, f->max_str, &n, &full);
        if (s) {
            tdb_buf_addc(b, 'b');
            repr_text(b, (const char *)s, n, '\'', 1);
            if ((int64_t)n < full)
                tdb_buf_addf(b, "... (%lld bytes)", (long long)full);
            free(s);
            return 0;
        }
    } else if (type == t->tuple || type == t->list) {
        int tuple = type == t->tuple;
        int64_t n = tdb_py_seq_len(p, addr);
        if (n >= 0) {
            if (depth >= f->max_depth || is_open(f, addr) ||
                f->n_open >= (int)(sizeof(f->open) / sizeof(f->open[0]))) {
                tdb_buf_adds(b, n == 0 ? (tuple ? "()" : "[]") : (tuple ? "(...)" : "[...]"));
                return 0;
            }
            int rc = 0;
            f->open[f->n_open++] = addr;
            tdb_buf_addc(b, tuple ? '(' : '[');
            int64_t shown = n < (int64_t)f->max_items ? n : (int64_t)f->max_items;
            for (int64_t i = 0; i < shown && b->len <= MAX_TEXT; i++) {
                if (i)
                    tdb_buf_adds(b, ", ");
                uint64_t item = tdb_py_seq_item(p, addr, i);
                if (value_text(f, b, item, depth + 1) < 0)
                    rc = -1;
            }
            if (n > shown)
                tdb_buf_addf(b, ", ... (%lld more)", (long long)(n - shown));
            if (tuple && n == 1)
                tdb_buf_addc(b, ',');
            tdb_buf_addc(b, tuple ? ')' : ']');
            f->n_open--;
            return rc;
        }
    } else if (type == t->dict) {
        int64_t n = tdb_py_dict_len(p, addr);
        if (n >= 0) {
            if (depth >= f->max_depth || is_open(f, addr) ||
                f->n_open >= (int)(sizeof(f->open) / sizeof(f->open[0]))) {
                tdb_buf_adds(b, n ? "{...}" : "{}");
                return 0;
            }
            items_ctx c = {f, b, depth, 0, 0};
            tdb_buf_addc(b, '{');
            f->open[f->n_open++] = addr;
            long seen = tdb_py_dict_walk(p, addr, f->max_items + 1, dict_item_cb, &c);
            f->n_open--;
            if (seen >= 0 && n > (int64_t)c.shown)
                tdb_buf_addf(b, ", ... (%lld more)", (long long)(n - (int64_t)c.shown));
            tdb_buf_addc(b, '}');
            return seen < 0 || c.failed ? -1 : 0;
        }
    } else {
        char *name = tdb_py_type_name(p, type);
        if (!name) {
            tdb_buf_addf(b, "<object at 0x%llx of an unreadable type>", (unsigned long long)addr);
            return -1;
        }
        int rc = f->n_open < (int)(sizeof(f->open) / sizeof(f->open[0]))
                     ? other_text(f, b, addr, type, name, depth)
                     : (tdb_buf_addf(b, "<%s object at 0x%llx>", name, (unsigned long long)addr), 0);
        free(name);
        return rc;
    }
    tdb_buf_addf(b, "<unreadable %s at 0x%llx>", "object", (unsigned long long)addr);
    return -1;
}

static void init_fmt(fmt *f, tdb_py_process *p, const tdb_py_value_opts *o)
{
    static const tdb_py_value_opts none = TDB_PY_VALUE_OPTS_INIT;
    f->p = p;
    f->o = o ? o : &none;
    f->max_depth = f->o->max_depth > 0 ? f->o->max_depth : 3;
    f->max_items = f->o->max_items ? f->o->max_items : 10;
    f->max_str = f->o->max_str ? f->o->max_str : 200;
    f->n_open = 0;
}

/* The JSON entry of the object at ADDR (new reference); *READABLE 0 when
 * nothing of it could be read. */
static json_t *value_json(fmt *f, uint64_t addr, int *readable)
{
    tdb_py_process *p = f->p;
    json_t *o = json_object();
    char at[32];
    snprintf(at, sizeof(at), "0x%llx", (unsigned long long)addr);
    uint64_t type = addr ? tdb_py_type_of(p, addr) : 0;
    *readable = type != 0;
    if (!type) {
        json_object_set_new(o, "type", json_null());
        json_object_set_new(o, "value", json_null());
        json_object_set_new(o, "address", json_string(at));
        char *e = tdb_xasprintf("cannot read memory at 0x%llx", (unsigned long long)addr);
        json_object_set_new(o, "error", json_string(e));
        free(e);
        return o;
    }
    char *tname = tdb_py_type_name(p, type);
    tdb_json_set_str(o, "type", tname ? tname : "?");
    free(tname);
    tdb_buf b = TDB_BUF_INIT;
    json_t *tensor = NULL;
    int rc = 0;
    if (type != p->t.long_ && type != p->t.float_ && type != p->t.unicode &&
        type != p->t.bytes && type != p->t.tuple && type != p->t.list && type != p->t.dict &&
        addr != p->t.none && addr != p->t.true_ && addr != p->t.false_ &&
        is_tensor_type(p, type)) {
        if (f->o->tensor && f->o->tensor(f->o->ctx, addr, &tensor) == 0 && tensor) {
            json_object_set_new(o, "tensor", tensor);
            tdb_buf_addf(&b, "<Tensor at 0x%llx>", (unsigned long long)addr);
        } else {
            tdb_buf_addf(&b, "<Tensor object at 0x%llx>", (unsigned long long)addr);
            if (f->o->tensor)
                json_object_set_new(o, "error", json_string("the tensor could not be decoded"));
        }
    } else {
        rc = value_text(f, &b, addr, 0);
    }
    json_object_set_new(o, "value", tdb_json_bytes(tdb_buf_str(&b), b.len, 0, NULL));
    json_object_set_new(o, "address", json_string(at));
    int64_t len = -1;
    if (type == p->t.unicode)
        tdb_py_i64(p, addr, TDB_PYO_unicode_length, &len);
    else if (type == p->t.bytes || type == p->t.tuple || type == p->t.list)
        len = tdb_py_seq_len(p, addr);
    else if (type == p->t.dict)
        len = tdb_py_dict_len(p, addr);
    if (len >= 0)
        json_object_set_new(o, "length", json_integer(len));
    if (rc < 0 && !json_object_get(o, "error"))
        json_object_set_new(o, "error", json_string("part of the value could not be read"));
    tdb_buf_free(&b);
    return o;
}

int tdb_py_format_object(tdb_py_process *p, uint64_t addr, const tdb_py_value_opts *o,
                         json_t **out, tdb_error *err)
{
    fmt f;
    init_fmt(&f, p, o);
    int readable;
    *out = value_json(&f, addr, &readable);
    if (!readable) {
        tdb_error_set(err, EFAULT, "cannot read the object at 0x%llx: memory unreadable or not "
                      "an object", (unsigned long long)addr);
        return -1;
    }
    return 0;
}

/* --- frames ------------------------------------------------------------------ */

/* What a frame's variables are: names, kinds and values (addresses), and
 * its globals, read once. */
typedef struct frame_vars {
    size_t n;
    char **names;
    int *kinds;       /* 'l' local, 'c' cell, 'f' free */
    uint64_t *values; /* 0: unbound */
    uint64_t globals, locals_dict;
    int module_level;
} frame_vars;

static void frame_vars_free(frame_vars *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->names[i]);
    free(v->names);
    free(v->kinds);
    free(v->values);
}

static void add_names(tdb_py_process *p, frame_vars *v, uint64_t tuple, int kind)
{
    int64_t n = tdb_py_seq_len(p, tuple);
    for (int64_t i = 0; i < n && v->n < MAX_LOCALS; i++) {
        char *s = tdb_py_str(p, tdb_py_seq_item(p, tuple, i), 0, 0, NULL, NULL);
        v->names = tdb_xrealloc(v->names, (v->n + 1) * sizeof(*v->names));
        v->kinds = tdb_xrealloc(v->kinds, (v->n + 1) * sizeof(*v->kinds));
        v->names[v->n] = s ? s : tdb_xstrdup("?");
        v->kinds[v->n] = kind;
        v->n++;
    }
}

static int read_frame_vars(tdb_py_process *p, const tdb_py_frame *fr, frame_vars *v,
                           tdb_error *err)
{
    memset(v, 0, sizeof(*v));
    uint64_t code = fr->code;
    int32_t flags = 0;
    if (!code || tdb_py_type_of(p, code) != p->t.code ||
        tdb_py_i32(p, code, TDB_PYO_code_flags, &flags) < 0) {
        tdb_error_set(err, EFAULT, "cannot read the code object of frame 0x%llx",
                      (unsigned long long)fr->addr);
        return -1;
    }
    uint64_t slots;
    int32_t goff, loff;
    if (TDB_PY_HAS(p, iframe_localsplus)) {
        uint64_t names = 0, kinds = 0;
        tdb_py_ptr(p, code, TDB_PYO_code_localsplusnames, &names);
        tdb_py_ptr(p, code, TDB_PYO_code_localspluskinds, &kinds);
        size_t nk = 0;
        int64_t full;
        uint8_t *k = tdb_py_bytes(p, kinds, MAX_LOCALS, &nk, &full);
        add_names(p, v, names, 'l');
        for (size_t i = 0; i < v->n; i++) {
            int kind = i < nk ? k[i] : 0;
            v->kinds[i] = kind & TDB_PY_OFF(p, co_fast_free)   ? 'f'
                          : kind & TDB_PY_OFF(p, co_fast_cell) ? 'c'
                                                                : 'l';
        }
        free(k);
        slots = fr->addr + (uint64_t)TDB_PY_OFF(p, iframe_localsplus);
        goff = TDB_PY_OFF(p, iframe_globals);
        loff = TDB_PY_OFF(p, iframe_locals);
    } else {
        uint64_t varnames = 0, cellvars = 0, freevars = 0;
        tdb_py_ptr(p, code, TDB_PYO_code_varnames, &varnames);
        tdb_py_ptr(p, code, TDB_PYO_code_cellvars, &cellvars);
        tdb_py_ptr(p, code, TDB_PYO_code_freevars, &freevars);
        add_names(p, v, varnames, 'l');
        add_names(p, v, cellvars, 'c');
        add_names(p, v, freevars, 'f');
        slots = fr->addr + (uint64_t)TDB_PY_OFF(p, frame_localsplus);
        goff = TDB_PY_OFF(p, frame_globals);
        loff = TDB_PY_OFF(p, frame_locals);
    }
    if (goff != TDB_PYO_NONE)
        tdb_py_rd(p, fr->addr + (uint64_t)goff, &v->globals, 8);
    if (loff != TDB_PYO_NONE)
        tdb_py_rd(p, fr->addr + (uint64_t)loff, &v->locals_dict, 8);
    v->module_level = !(flags & TDB_PY_OFF(p, co_optimized));
    v->values = tdb_xcalloc(v->n ? v->n : 1, sizeof(*v->values));
    if (v->n && tdb_py_rd(p, slots, v->values, v->n * 8) < 0) {
        frame_vars_free(v);
        tdb_error_set(err, EFAULT, "cannot read the variables of frame 0x%llx",
                      (unsigned long long)fr->addr);
        return -1;
    }
    for (size_t i = 0; i < v->n; i++) {
        v->values[i] = tdb_py_untag(p, v->values[i]);
        /* A cell holds the variable (until MAKE_CELL runs, the slot holds
         * the argument itself). */
        if (v->kinds[i] != 'l' && v->values[i] &&
            tdb_py_type_of(p, v->values[i]) == p->t.cell) {
            uint64_t inner = 0;
            tdb_py_ptr(p, v->values[i], TDB_PYO_cell_ref, &inner);
            v->values[i] = inner;
        }
    }
    return 0;
}

static json_t *named(fmt *f, const char *name, const char *kind_key, const char *kind,
                     uint64_t value)
{
    int readable;
    json_t *o = json_object();
    tdb_json_set_str(o, "name", name);
    json_object_set_new(o, kind_key, json_string(kind));
    json_t *val = value_json(f, value, &readable);
    json_object_update(o, val);
    json_decref(val);
    return o;
}

typedef struct globals_ctx {
    fmt *f;
    json_t *out;
} globals_ctx;

static int globals_cb(tdb_py_process *p, uint64_t key, uint64_t value, void *arg)
{
    globals_ctx *c = arg;
    char *name = tdb_py_str(p, key, 0, 1, NULL, NULL);
    size_t n = name ? strlen(name) : 0;
    if (name && !(n > 4 && strncmp(name, "__", 2) == 0 && strcmp(name + n - 2, "__") == 0))
        json_array_append_new(c->out, named(c->f, name, "kind", "global", value));
    free(name);
    return json_array_size(c->out) >= MAX_LOCALS;
}

int tdb_py_frame_locals(tdb_py_process *p, const tdb_py_frame *fr, const tdb_py_value_opts *o,
                        json_t **out, tdb_error *err)
{
    fmt f;
    frame_vars v;
    init_fmt(&f, p, o);
    if (read_frame_vars(p, fr, &v, err) < 0)
        return -1;
    json_t *a = json_array();
    if (v.module_level) {
        uint64_t dict = v.locals_dict ? v.locals_dict : v.globals;
        globals_ctx c = {&f, a};
        if (tdb_py_dict_walk(p, dict, MAX_LOCALS, globals_cb, &c) < 0) {
            json_decref(a);
            frame_vars_free(&v);
            tdb_error_set(err, EFAULT, "cannot read the globals of frame 0x%llx",
                          (unsigned long long)fr->addr);
            return -1;
        }
    } else {
        for (size_t i = 0; i < v.n; i++) {
            if (!v.values[i])
                continue; /* unbound */
            const char *kind = v.kinds[i] == 'c' ? "cell" : v.kinds[i] == 'f' ? "free" : "local";
            json_array_append_new(a, named(&f, v.names[i], "kind", kind, v.values[i]));
        }
    }
    frame_vars_free(&v);
    *out = a;
    return 0;
}

int tdb_py_lookup_name(tdb_py_process *p, const tdb_py_frame *fr, const char *name,
                       const tdb_py_value_opts *o, json_t **out, tdb_error *err)
{
    fmt f;
    frame_vars v;
    init_fmt(&f, p, o);
    if (read_frame_vars(p, fr, &v, err) < 0)
        return -1;
    uint64_t value = 0;
    const char *scope = NULL;
    for (size_t i = 0; i < v.n && !value; i++)
        if (!v.module_level && strcmp(v.names[i], name) == 0 && v.values[i]) {
            value = v.values[i];
            scope = "local";
        }
    if (!value && v.locals_dict && v.locals_dict != v.globals &&
        (value = tdb_py_dict_get(p, v.locals_dict, name)))
        scope = "local";
    if (!value && v.globals && (value = tdb_py_dict_get(p, v.globals, name)))
        scope = "global";
    if (!value && v.globals) {
        uint64_t builtins = tdb_py_dict_get(p, v.globals, "__builtins__");
        if (builtins && tdb_py_type_of(p, builtins) == p->t.module)
            tdb_py_ptr(p, builtins, TDB_PYO_module_dict, &builtins);
        if (builtins && (value = tdb_py_dict_get(p, builtins, name)))
            scope = "builtin";
    }
    frame_vars_free(&v);
    if (!value)
        return 1;
    *out = named(&f, name, "scope", scope, value);
    return 0;
}

/* ---- the modules loaded ---- */

typedef struct module_ctx {
    json_t *out;
    size_t max;
} module_ctx;

static int module_file_cb(tdb_py_process *p, uint64_t key, uint64_t value, void *arg)
{
    module_ctx *c = arg;
    uint64_t dict = 0;
    char *name = NULL, *file = NULL;
    if (json_array_size(c->out) >= c->max)
        return 1;
    if (tdb_py_ptr(p, value, TDB_PYO_module_dict, &dict) < 0 || !dict)
        return 0; /* not a module object (a placeholder some packages put there) */
    uint64_t f = tdb_py_dict_get(p, dict, "__file__");
    if (f && (file = tdb_py_str(p, f, 4096, 1, NULL, NULL)) && (name = tdb_py_str(p, key, 1024, 1, NULL, NULL))) {
        size_t n = strlen(file);
        if (n > 3 && !strcmp(file + n - 3, ".py"))
            json_array_append_new(c->out, json_pack("{s:s, s:s}", "name", name, "file", file));
    }
    free(name);
    free(file);
    return 0;
}

int tdb_py_module_files(tdb_py_process *p, size_t max, json_t **out, tdb_error *err)
{
    uint64_t interp = 0, modules = 0;
    int field = TDB_PY_HAS(p, runtime_interpreters_main) ? TDB_PYO_runtime_interpreters_main
                                                         : TDB_PYO_runtime_interpreters_head;
    if (tdb_py_ptr(p, p->runtime, field, &interp) < 0 || !interp ||
        tdb_py_ptr(p, interp, TDB_PYO_interp_modules, &modules) < 0 || !modules) {
        tdb_error_set(err, EIO, "cannot read sys.modules of pid %d", (int)p->pid);
        return -1;
    }
    module_ctx c = {json_array(), max};
    if (tdb_py_dict_walk(p, modules, (size_t)-1, module_file_cb, &c) < 0) {
        json_decref(c.out);
        tdb_error_set(err, EIO, "cannot read sys.modules of pid %d (not a dict)", (int)p->pid);
        return -1;
    }
    *out = c.out;
    return 0;
}

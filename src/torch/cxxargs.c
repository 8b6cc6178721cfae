/* torch/cxxargs.c: a native frame's arguments from its demangled signature and
 * the x86-64 System V calling convention (see torch/cxxargs.h). */
#include "torch/cxxargs.h"

#include "native/cxxabi.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ARRAY_MAX_SHOWN 64       /* elements of an ArrayRef shown */
#define ARRAY_TENSORS_SHOWN 8    /* tensors of an ArrayRef<Tensor> decoded */
#define ARRAY_LEN_LIMIT (1 << 24)
#define STRING_SHOWN 256

/* --- types -------------------------------------------------------------- */

typedef enum tkind {
    T_UNKNOWN,   /* size and passing unknown */
    T_VOID,
    T_INT,
    T_BOOL,
    T_FLOAT,
    T_DOUBLE,
    T_PTR,
    T_REF,
    T_TENSOR,    /* at::Tensor: one pointer to its TensorImpl; not trivially copyable */
    T_SCALAR,    /* c10::Scalar: not trivially copyable */
    T_SYMINT,    /* c10::SymInt: an int64, not trivially copyable */
    T_ARRAYREF,  /* {T *data, size_t length} */
    T_OPTARRAYREF, /* the same, {NULL, non-zero} meaning empty */
    T_VECTOR,    /* std::vector<T> (libstdc++): {T *start, *finish, *end_of_storage};
                  * not trivially copyable */
    T_OPTIONAL,  /* c10::optional<T>: {bool, T} */
    T_STRVIEW,   /* {const char *, size_t} */
    T_SCALARTYPE,
    T_ENUM8,     /* c10::Layout, c10::MemoryFormat, c10::DeviceType, ... */
    T_DEVICE,    /* {int8 type, int8 index} */
    T_BOOLARRAY, /* std::array<bool, N> */
    T_OPAQUE,    /* trivially copyable, size known, not decoded */
    T_OPAQUE_NT  /* not trivially copyable, not decoded */
} tkind;

typedef struct ctype {
    tkind kind;
    int size, align;  /* by value; -1 unknown */
    int nontrivial;   /* passed by invisible reference, returned in memory */
    int is_signed;
    int count;        /* std::array<bool, N> */
    char *inner;      /* the target, element or contained type */
} ctype;

static void ctype_free(ctype *t)
{
    free(t->inner);
}

/* The single template argument of "NAME<ARG>", or NULL. */
static char *template_arg(const char *s, const char *prefix)
{
    size_t pl = strlen(prefix), n = strlen(s);
    if (strncmp(s, prefix, pl) != 0 || n < pl + 2 || s[n - 1] != '>')
        return NULL;
    return tdb_cxx_trim(s + pl, n - pl - 1);
}

/* The first template argument of S, which starts PREFIX ("std::vector<"):
 * up to its first comma outside brackets ("at::Tensor" of
 * "std::vector<at::Tensor, std::allocator<at::Tensor> >"); new string, or
 * NULL when S does not start PREFIX. */
static char *first_template_arg(const char *s, const char *prefix)
{
    char *all = template_arg(s, prefix);
    if (!all)
        return NULL;
    int depth = 0;
    size_t i = 0;
    for (; all[i]; i++) {
        if (all[i] == '<' || all[i] == '(')
            depth++;
        else if (all[i] == '>' || all[i] == ')')
            depth--;
        else if (all[i] == ',' && depth == 0)
            break;
    }
    char *first = tdb_cxx_trim(all, i);
    free(all);
    return first;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void classify(const char *spelling, ctype *out);

static void classify_optional(char *inner, ctype *t)
{
    ctype in;
    classify(inner, &in);
    t->inner = inner;
    if (in.kind == T_ARRAYREF) {
        /* c10 keeps optional<ArrayRef> in 16 bytes, {NULL, 1} being empty. */
        t->kind = T_OPTARRAYREF;
        t->size = 16, t->align = 8;
        free(t->inner);
        t->inner = in.inner;
        in.inner = NULL;
    } else if (in.kind == T_UNKNOWN) {
        t->kind = T_UNKNOWN;
    } else {
        t->kind = T_OPTIONAL;
        t->nontrivial = in.nontrivial;
        t->align = in.align > 0 ? in.align : 8;
        t->size = in.size > 0 ? ((t->align + in.size + t->align - 1) / t->align) * t->align : -1;
    }
    ctype_free(&in);
}

static void classify(const char *spelling, ctype *out)
{
    static const struct {
        const char *name;
        int size, is_signed;
    } ints[] = {
        {"char", 1, 1}, {"signed char", 1, 1}, {"unsigned char", 1, 0}, {"short", 2, 1},
        {"unsigned short", 2, 0}, {"int", 4, 1}, {"unsigned int", 4, 0}, {"long", 8, 1},
        {"unsigned long", 8, 0}, {"long long", 8, 1}, {"unsigned long long", 8, 0},
        {"wchar_t", 4, 1}, {"char16_t", 2, 0}, {"char32_t", 4, 0}, {"c10::DispatchKey", 2, 0},
        {"caffe2::TypeMeta", 2, 0}, {"c10::DispatchKeySet", 8, 0},
    };
    static const char *const enums8[] = {"c10::Layout", "c10::MemoryFormat", "c10::DeviceType",
                                         "c10::QScheme", "at::Layout", "at::MemoryFormat",
                                         "at::DeviceType", "at::QScheme"};
    static const char *const nontrivial[] = {
        "at::Generator", "c10::Storage", "at::Storage", "c10::IValue", "at::IValue",
        "std::__cxx11::basic_string<", "std::basic_string<", "std::string",
        "std::shared_ptr<", "std::unique_ptr<", "std::weak_ptr<", "c10::intrusive_ptr<",
        "c10::weak_intrusive_ptr<", "c10::List<", "c10::Dict<", "std::function<",
        "c10::MaybeOwned<", "at::OptionalTensorRef", "c10::VariableVersion", "c10::SmallVector<",
    };
    ctype t;
    memset(&t, 0, sizeof(t));
    t.size = t.align = -1;
    char *s = tdb_cxx_unqualified(spelling);
    size_t n = strlen(s);
    char *arg;

    if (n && (s[n - 1] == '&')) {
        t.kind = T_REF;
        t.size = t.align = 8;
        t.inner = tdb_cxx_trim(s, n - (n > 1 && s[n - 2] == '&' ? 2 : 1));
    } else if ((n && s[n - 1] == '*') || strstr(s, "(*)")) {
        t.kind = T_PTR;
        t.size = t.align = 8;
        t.inner = s[n - 1] == '*' ? tdb_cxx_trim(s, n - 1) : NULL;
    } else if (!strcmp(s, "void")) {
        t.kind = T_VOID;
    } else if (!strcmp(s, "bool")) {
        t.kind = T_BOOL;
        t.size = t.align = 1;
    } else if (!strcmp(s, "double")) {
        t.kind = T_DOUBLE;
        t.size = t.align = 8;
    } else if (!strcmp(s, "float")) {
        t.kind = T_FLOAT;
        t.size = t.align = 4;
    } else if (!strcmp(s, "at::Tensor") || !strcmp(s, "at::TensorBase")) {
        t.kind = T_TENSOR;
        t.size = t.align = 8;
        t.nontrivial = 1;
    } else if (!strcmp(s, "c10::Scalar") || !strcmp(s, "at::Scalar")) {
        t.kind = T_SCALAR;
        t.align = 8; /* its size comes from the layout */
        t.nontrivial = 1;
    } else if (!strcmp(s, "c10::SymInt")) {
        t.kind = T_SYMINT;
        t.size = t.align = 8;
        t.nontrivial = 1;
    } else if (!strcmp(s, "c10::IntArrayRef") || !strcmp(s, "at::IntArrayRef")) {
        t.kind = T_ARRAYREF;
        t.size = 16, t.align = 8;
        t.inner = tdb_xstrdup("long");
    } else if ((arg = template_arg(s, "c10::ArrayRef<")) || (arg = template_arg(s, "at::ArrayRef<"))) {
        t.kind = T_ARRAYREF;
        t.size = 16, t.align = 8;
        t.inner = arg;
    } else if (!strcmp(s, "at::OptionalIntArrayRef") || !strcmp(s, "c10::OptionalIntArrayRef")) {
        t.kind = T_OPTARRAYREF;
        t.size = 16, t.align = 8;
        t.inner = tdb_xstrdup("long");
    } else if ((arg = template_arg(s, "c10::OptionalArrayRef<"))) {
        t.kind = T_OPTARRAYREF;
        t.size = 16, t.align = 8;
        t.inner = arg;
    } else if ((arg = first_template_arg(s, "std::vector<"))) {
        t.kind = T_VECTOR;
        t.size = 24, t.align = 8;
        t.nontrivial = 1;
        t.inner = arg;
    } else if ((arg = template_arg(s, "c10::optional<"))) {
        classify_optional(arg, &t);
    } else if (!strcmp(s, "c10::basic_string_view<char>") || !strcmp(s, "c10::string_view")) {
        t.kind = T_STRVIEW;
        t.size = 16, t.align = 8;
    } else if (!strcmp(s, "c10::ScalarType") || !strcmp(s, "at::ScalarType")) {
        t.kind = T_SCALARTYPE;
        t.size = t.align = 1;
    } else if (!strcmp(s, "c10::Device") || !strcmp(s, "at::Device")) {
        t.kind = T_DEVICE;
        t.size = 2, t.align = 1;
    } else if ((arg = template_arg(s, "std::array<bool,"))) {
        long k;
        char *num = tdb_cxx_trim(arg, strcspn(arg, "ul"));
        if (tdb_parse_long(num, 1, 64, &k) == 0) {
            t.kind = T_BOOLARRAY;
            t.size = (int)k, t.align = 1, t.count = (int)k;
        }
        free(num);
        free(arg);
    } else if (!strcmp(s, "at::Dimname")) {
        t.kind = T_OPAQUE;
        t.size = t.align = 8;
    } else {
        for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]) && t.kind == T_UNKNOWN; i++)
            if (!strcmp(s, ints[i].name)) {
                t.kind = T_INT;
                t.size = t.align = ints[i].size;
                t.is_signed = ints[i].is_signed;
            }
        for (size_t i = 0; i < sizeof(enums8) / sizeof(enums8[0]) && t.kind == T_UNKNOWN; i++)
            if (!strcmp(s, enums8[i])) {
                t.kind = T_ENUM8;
                t.size = t.align = 1;
            }
        for (size_t i = 0; i < sizeof(nontrivial) / sizeof(nontrivial[0]) && t.kind == T_UNKNOWN; i++)
            if (starts(s, nontrivial[i]) &&
                (nontrivial[i][strlen(nontrivial[i]) - 1] == '<' || !strcmp(s, nontrivial[i]))) {
                t.kind = T_OPAQUE_NT;
                t.nontrivial = 1;
                t.size = t.align = 8;
            }
    }
    free(s);
    *out = t;
}

/* --- decoding one value ------------------------------------------------- */

typedef struct dctx {
    tdb_mem *m;
    const tdb_tensor_layout *layout;
    int max_values;
} dctx;

/* How far a value proves the interpretation that produced it. */
enum { V_BAD = 0, V_WEAK = 1, V_STRONG = 2 };

typedef struct val {
    json_t *v;
    int strength;
} val;

static val bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static val bad(const char *fmt, ...)
{
    char buf[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf) - 2, fmt, ap);
    va_end(ap);
    tdb_buf b = TDB_BUF_INIT;
    tdb_buf_addf(&b, "<%s>", buf);
    val r = {tdb_json_bytes(b.s, b.len, 0, NULL), V_BAD};
    tdb_buf_free(&b);
    return r;
}

static val weak(json_t *v)
{
    val r = {v, V_WEAK};
    return r;
}

static json_t *hex(uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
    return json_string(buf);
}

static int readable(tdb_mem *m, uint64_t addr)
{
    unsigned char b;
    return addr && tdb_mem_read_full(m, addr, &b, 1) == 0;
}

static uint64_t le(const unsigned char *b, int size)
{
    uint64_t v = 0;
    for (int i = size - 1; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static val decode_mem(const dctx *c, const char *type, uint64_t addr, int depth);

static val decode_tensor_at(const dctx *c, uint64_t addr)
{
    tdb_error e = {0};
    uint64_t impl;
    if (tdb_peek_u64(c->m, addr, &impl, &e) < 0)
        return bad("%s", e.msg);
    if (c->layout) {
        json_t *t = tdb_tensor_decode_impl(c->m, c->layout, impl, c->max_values, &e);
        val r = {t, V_STRONG};
        return t ? r : bad("%s", e.msg);
    }
    /* No layout: the impl is checked by its type information only. */
    uint64_t type;
    tdb_rtti rt;
    if (tdb_cxx_dynamic_type(c->m, impl, &type, &rt, &e) < 0 ||
        tdb_rtti_find_base(c->m, type, "N3c1010TensorImplE", impl, NULL, NULL) != 1)
        return bad("not a tensor: %s", e.set ? e.msg : "not a c10::TensorImpl");
    char *name = tdb_rtti_name(&rt);
    json_t *o = json_object();
    json_object_set_new(o, "impl", hex(impl));
    json_object_set_new(o, "impl_type", json_string(name));
    json_object_set_new(o, "note", json_string("torch's tensor layout is unknown: not decoded"));
    free(name);
    val r = {o, V_STRONG};
    return r;
}

static val decode_array(const dctx *c, const char *elem, uint64_t data, uint64_t len, int depth)
{
    if (len > ARRAY_LEN_LIMIT)
        return bad("not an ArrayRef: length %llu", (unsigned long long)len);
    if (len && !readable(c->m, data))
        return bad("not an ArrayRef: its data at 0x%llx is unreadable", (unsigned long long)data);
    ctype et;
    classify(elem, &et);
    json_t *a = json_array();
    int strength = V_WEAK;
    uint64_t shown = len;
    if (et.kind == T_TENSOR && shown > ARRAY_TENSORS_SHOWN)
        shown = ARRAY_TENSORS_SHOWN;
    if (shown > ARRAY_MAX_SHOWN)
        shown = ARRAY_MAX_SHOWN;
    int esize = et.kind == T_SCALAR && c->layout ? c->layout->scalar_size : et.size;
    if (esize <= 0) {
        json_decref(a);
        ctype_free(&et);
        json_t *o = json_object();
        json_object_set_new(o, "data", hex(data));
        json_object_set_new(o, "length", json_integer((json_int_t)len));
        return weak(o);
    }
    for (uint64_t i = 0; i < shown; i++) {
        val v = decode_mem(c, elem, data + i * (uint64_t)esize, depth + 1);
        if (v.strength == V_BAD)
            strength = V_BAD;
        else if (v.strength == V_STRONG && strength != V_BAD)
            strength = V_STRONG;
        json_array_append_new(a, v.v);
    }
    if (shown < len)
        json_array_append_new(a, json_string("..."));
    ctype_free(&et);
    val r = {a, strength};
    return r;
}

/* A value of type T whose bytes are B (LEN of them), kept at ADDR in
 * memory (0 when it is in registers). */
static val decode_bytes(const dctx *c, const ctype *t, const char *spelling, const unsigned char *b,
                        size_t len, uint64_t addr, int depth)
{
    int64_t i;
    double d;
    float f;
    switch (t->kind) {
    case T_INT: {
        uint64_t u = le(b, t->size);
        if (t->is_signed && t->size < 8 && (u >> (8 * t->size - 1)) & 1)
            u |= ~0ULL << (8 * t->size);
        return weak(t->is_signed ? json_integer((json_int_t)u) : json_integer((json_int_t)u));
    }
    case T_BOOL:
        if (b[0] > 1)
            return bad("not a bool: %u", b[0]);
        return weak(json_boolean(b[0]));
    case T_DOUBLE:
        memcpy(&d, b, 8);
        return weak(json_real(d));
    case T_FLOAT:
        memcpy(&f, b, 4);
        return weak(json_real(f));
    case T_SYMINT:
        memcpy(&i, b, 8);
        return weak(json_integer(i));
    case T_PTR: {
        uint64_t p = le(b, 8);
        if (t->inner && (!strcmp(t->inner, "char const") || !strcmp(t->inner, "char")) && p) {
            char *s = tdb_peek_cstring(c->m, p, STRING_SHOWN, NULL);
            if (s) {
                json_t *o = tdb_json_bytes(s, strlen(s), 0, NULL);
                free(s);
                return weak(o);
            }
        }
        return weak(hex(p));
    }
    case T_REF: {
        uint64_t p = le(b, 8);
        if (!readable(c->m, p))
            return bad("not a reference: 0x%llx is unreadable", (unsigned long long)p);
        return decode_mem(c, t->inner, p, depth + 1);
    }
    case T_TENSOR:
        if (!addr)
            return bad("an at::Tensor outside memory");
        return decode_tensor_at(c, addr);
    case T_SCALAR: {
        tdb_error e = {0};
        json_t *v = c->layout ? tdb_scalar_decode(c->m, c->layout, addr, &e) : NULL;
        if (!c->layout)
            return weak(hex(addr));
        return v ? weak(v) : bad("%s", e.msg);
    }
    case T_ARRAYREF:
        return decode_array(c, t->inner, le(b, 8), le(b + 8, 8), depth);
    case T_OPTARRAYREF:
        if (le(b, 8) == 0 && le(b + 8, 8) != 0)
            return weak(json_null());
        return decode_array(c, t->inner, le(b, 8), le(b + 8, 8), depth);
    case T_VECTOR: {
        /* Its elements are an array from start to finish. */
        uint64_t start = le(b, 8), finish = le(b + 8, 8), cap = le(b + 16, 8);
        ctype et;
        classify(t->inner, &et);
        int esize = et.kind == T_SCALAR && c->layout ? c->layout->scalar_size : et.size;
        ctype_free(&et);
        if (finish < start || cap < finish || (start == 0) != (cap == 0))
            return bad("not a std::vector: start 0x%llx, finish 0x%llx, end of storage 0x%llx",
                       (unsigned long long)start, (unsigned long long)finish,
                       (unsigned long long)cap);
        if (esize <= 0 || (finish - start) % (uint64_t)esize != 0)
            return bad("not a std::vector of '%s': %llu bytes of elements", t->inner,
                       (unsigned long long)(finish - start));
        return decode_array(c, t->inner, start, (finish - start) / (uint64_t)esize, depth);
    }
    case T_OPTIONAL: {
        if (b[0] > 1)
            return bad("not a c10::optional: its flag is %u", b[0]);
        if (!b[0])
            return weak(json_null());
        ctype in;
        classify(t->inner, &in);
        if (in.kind == T_SCALAR) {
            tdb_error e = {0};
            json_t *v = c->layout && addr ? tdb_opt_scalar_decode(c->m, c->layout, addr, &e) : NULL;
            ctype_free(&in);
            return v ? weak(v) : bad("%s", c->layout ? e.msg : "the layout of c10::Scalar is unknown");
        }
        size_t off = (size_t)t->align;
        val r;
        if (in.size > 0 && off + (size_t)in.size <= len)
            r = decode_bytes(c, &in, t->inner, b + off, len - off, addr ? addr + off : 0, depth + 1);
        else
            r = bad("cannot decode a '%s'", spelling);
        ctype_free(&in);
        return r;
    }
    case T_STRVIEW: {
        /* {pointer, length}: which word is which shows by itself. */
        uint64_t p = le(b, 8), n = le(b + 8, 8);
        if (n > ARRAY_LEN_LIMIT && p <= ARRAY_LEN_LIMIT) {
            uint64_t x = p;
            p = n, n = x;
        }
        if (n > ARRAY_LEN_LIMIT)
            return bad("not a string_view: length %llu", (unsigned long long)n);
        size_t shown = n < STRING_SHOWN ? (size_t)n : STRING_SHOWN;
        char buf[STRING_SHOWN] = {0};
        if (shown && tdb_mem_read_full(c->m, p, buf, shown) < 0)
            return bad("not a string_view: 0x%llx is unreadable", (unsigned long long)p);
        tdb_buf s = TDB_BUF_INIT;
        tdb_buf_add(&s, buf, shown);
        if (shown < n)
            tdb_buf_adds(&s, "...");
        json_t *v = tdb_json_bytes(tdb_buf_str(&s), s.len, 0, NULL);
        tdb_buf_free(&s);
        return weak(v);
    }
    case T_SCALARTYPE: {
        const tdb_tensor_dtype *dt = c->layout ? tdb_tensor_dtype_of(c->layout, b[0]) : NULL;
        if (b[0] >= 64)
            return bad("not a ScalarType: %u", b[0]);
        return weak(dt ? json_string(dt->name) : json_integer(b[0]));
    }
    case T_ENUM8:
        return weak(json_integer(b[0]));
    case T_DEVICE: {
        const tdb_tensor_device *dv = c->layout ? tdb_tensor_device_of(c->layout, b[0]) : NULL;
        int index = (int8_t)b[1];
        char name[48];
        if (dv && index >= 0)
            snprintf(name, sizeof(name), "%s:%d", dv->name, index);
        else if (dv)
            snprintf(name, sizeof(name), "%s", dv->name);
        else
            snprintf(name, sizeof(name), "device type %u index %d", b[0], index);
        return weak(json_string(name));
    }
    case T_BOOLARRAY: {
        json_t *a = json_array();
        for (int k = 0; k < t->count; k++) {
            if (b[k] > 1) {
                json_decref(a);
                return bad("not an array of bool: %u", b[k]);
            }
            json_array_append_new(a, json_boolean(b[k]));
        }
        return weak(a);
    }
    case T_OPAQUE:
        return weak(hex(le(b, t->size < 8 ? t->size : 8)));
    case T_OPAQUE_NT: {
        char *s = tdb_xasprintf("0x%llx (a '%s', not decoded)", (unsigned long long)addr, spelling);
        json_t *v = json_string(s);
        free(s);
        return weak(v);
    }
    default:
        break;
    }
    if (addr) {
        char *s = tdb_xasprintf("0x%llx (a '%s', not decoded)", (unsigned long long)addr, spelling);
        json_t *v = tdb_json_bytes(s, strlen(s), 0, NULL);
        free(s);
        return weak(v);
    }
    return bad("tdebug cannot decode a '%s' without debug info", spelling);
}

/* A value of TYPE kept in memory at ADDR. */
static val decode_mem(const dctx *c, const char *type, uint64_t addr, int depth)
{
    ctype t;
    unsigned char b[64];
    val r;
    if (depth > 4)
        return weak(hex(addr));
    classify(type, &t);
    memset(b, 0, sizeof(b));
    if (t.size > 0 && (size_t)t.size <= sizeof(b)) {
        if (tdb_mem_read_full(c->m, addr, b, (size_t)t.size) < 0)
            r = bad("cannot read memory at 0x%llx", (unsigned long long)addr);
        else
            r = decode_bytes(c, &t, type, b, (size_t)t.size, addr, depth);
    } else {
        /* Size unknown here (a Scalar's comes from the layout): what can
         * be read of its start, for the decoders that look at it. */
        ssize_t got = tdb_mem_read(c->m, addr, b, 16);
        if (got <= 0)
            r = bad("cannot read memory at 0x%llx", (unsigned long long)addr);
        else
            r = decode_bytes(c, &t, type, b, (size_t)got, addr, depth);
    }
    ctype_free(&t);
    return r;
}

json_t *tdb_cxx_value_at(tdb_mem *m, const char *type, uint64_t addr,
                         const tdb_tensor_layout *layout, int max_values, tdb_error *err)
{
    dctx c = {m, layout, max_values};
    val v = decode_mem(&c, type, addr, 0);
    if (v.strength == V_BAD) {
        tdb_error_set(err, EINVAL, "no '%s' at 0x%llx: %s", type, (unsigned long long)addr,
                      json_string_value(v.v));
        json_decref(v.v);
        return NULL;
    }
    return v.v;
}

/* --- the calling convention --------------------------------------------- */

enum { C_NONE, C_INTEGER, C_SSE };

/* The classes of the (one or two) eightbytes of T passed by value. */
static int eightbytes(const ctype *t, int cls[2])
{
    cls[0] = cls[1] = C_NONE;
    switch (t->kind) {
    case T_DOUBLE:
    case T_FLOAT:
        cls[0] = C_SSE;
        return 1;
    case T_ARRAYREF:
    case T_OPTARRAYREF:
    case T_STRVIEW:
        cls[0] = cls[1] = C_INTEGER;
        return 2;
    case T_OPTIONAL: {
        if (t->size > 16 || t->size <= 0)
            return -1; /* in memory */
        ctype in;
        classify(t->inner, &in);
        cls[0] = C_INTEGER; /* the flag */
        if (t->size > 8)
            cls[1] = in.kind == T_DOUBLE || in.kind == T_FLOAT ? C_SSE : C_INTEGER;
        ctype_free(&in);
        return t->size > 8 ? 2 : 1;
    }
    default:
        if (t->size <= 0 || t->size > 16)
            return -1;
        cls[0] = C_INTEGER;
        if (t->size > 8)
            cls[1] = C_INTEGER;
        return t->size > 8 ? 2 : 1;
    }
}

typedef struct interp {
    int member, sret;
    int this_checked; /* this's type information names the class */
    json_t *args;
    int bad, strong;
    json_t *return_slot;
    char *note;
} interp;

static uint64_t stack_slot(const tdb_regs *r, int pushed, int slot)
{
    return r->rsp + (uint64_t)pushed + 8 + 8 * (uint64_t)slot;
}

void tdb_cxx_args_add(json_t *args, const char *name, const char *type, json_t *value)
{
    json_t *a = json_object();
    json_object_set_new(a, "name", json_string(name));
    json_object_set_new(a, "type", tdb_json_bytes(type, strlen(type), 0, NULL));
    json_object_set_new(a, "value", value);
    json_array_append_new(args, a);
}

static void run_interp(const dctx *c, const tdb_cxx_sig *sig, const tdb_regs *r, int pushed,
                       interp *it)
{
    int gi = 0, si = 0, slot = 0;
    it->args = json_array();
    if (it->sret) {
        uint64_t p = r->gpr[gi++];
        if (!readable(c->m, p))
            it->bad++;
        it->return_slot = hex(p);
    }
    if (it->member) {
        uint64_t p = r->gpr[gi++];
        char *type = tdb_xasprintf("%s*", sig->scope);
        json_t *v;
        uint64_t dyn;
        tdb_rtti rt;
        if (!readable(c->m, p)) {
            it->bad++;
            v = json_string("<unreadable>");
        } else if (tdb_cxx_dynamic_type(c->m, p, &dyn, &rt, NULL) == 0 &&
                   tdb_rtti_find_base_named(c->m, dyn, sig->scope, p, NULL, NULL) == 1) {
            char *name = tdb_rtti_name(&rt);
            v = json_object();
            json_object_set_new(v, "address", hex(p));
            json_object_set_new(v, "dynamic_type", json_string(name));
            free(name);
            it->strong++;
            it->this_checked = 1;
        } else {
            v = hex(p);
        }
        tdb_cxx_args_add(it->args, "this", type, v);
        free(type);
    }
    for (size_t k = 0; k < sig->n_params; k++) {
        const char *spelling = sig->params[k];
        char name[32];
        ctype t;
        int cls[2];
        val v;
        snprintf(name, sizeof(name), "arg%zu", k + 1);
        classify(spelling, &t);
        if (t.kind == T_UNKNOWN) {
            char *note = tdb_xasprintf("how a '%s' is passed is unknown without debug info: "
                                       "the parameters from %s on cannot be placed",
                                       spelling, name);
            for (size_t j = k; j < sig->n_params; j++) {
                snprintf(name, sizeof(name), "arg%zu", j + 1);
                tdb_cxx_args_add(it->args, name, sig->params[j], json_null());
            }
            it->note = note;
            ctype_free(&t);
            break;
        }
        if (t.nontrivial) {
            /* By invisible reference: a pointer to the object. */
            uint64_t p;
            if (gi < 6) {
                p = r->gpr[gi++];
            } else if (tdb_peek_u64(c->m, stack_slot(r, pushed, slot++), &p, NULL) < 0) {
                p = 0;
            }
            v = p && readable(c->m, p) ? decode_mem(c, spelling, p, 0)
                                       : bad("not a pointer to a '%s': 0x%llx", spelling, (unsigned long long)p);
        } else {
            int n = eightbytes(&t, cls), ni = 0, ns = 0;
            for (int e = 0; e < n; e++)
                ni += cls[e] == C_INTEGER, ns += cls[e] == C_SSE;
            unsigned char b[64] = {0};
            if (n > 0 && gi + ni <= 6 && si + ns <= 8 && (ns == 0 || (r->have & TDB_REGS_XMM))) {
                for (int e = 0; e < n; e++) {
                    uint64_t w = cls[e] == C_INTEGER ? r->gpr[gi++] : r->xmm[si++][0];
                    memcpy(b + 8 * e, &w, 8);
                }
                v = decode_bytes(c, &t, spelling, b, 8 * (size_t)n, 0, 0);
            } else if (n > 0 && ns > 0 && !(r->have & TDB_REGS_XMM)) {
                v = bad("the vector registers were not read");
            } else {
                /* On the stack: its own slots, a copy of the object. */
                int size = t.size > 0 ? t.size : 8;
                uint64_t at = stack_slot(r, pushed, slot);
                slot += (size + 7) / 8;
                v = size <= (int)sizeof(b) && tdb_mem_read_full(c->m, at, b, (size_t)size) == 0
                        ? decode_bytes(c, &t, spelling, b, (size_t)size, at, 0)
                        : bad("cannot read the stack at 0x%llx", (unsigned long long)at);
            }
        }
        if (v.strength == V_BAD)
            it->bad++;
        else if (v.strength == V_STRONG)
            it->strong++;
        tdb_cxx_args_add(it->args, name, spelling, v.v);
        ctype_free(&t);
    }
}

static void interp_free(interp *it)
{
    json_decref(it->args);
    json_decref(it->return_slot);
    free(it->note);
}

static char *convention_text(const interp *it)
{
    return tdb_xasprintf("%s%s", it->member ? "a member function (this in %rdi)" : "a function",
                         it->sret ? ", returning its result in memory (a hidden pointer before the "
                                    "arguments)"
                                  : "");
}

/* Scopes that are namespaces, not classes, and classes torch generates
 * with static functions only (at::_ops::add_Tensor::call, ::redispatch):
 * names, not layouts, of torch's sources. */
static const char *const namespaces[] = {
    "std", "c10", "c10::impl", "c10::detail", "at", "at::native", "at::cpu", "at::meta",
    "at::compositeexplicitautograd", "at::compositeimplicitautograd", "at::detail", "at::impl",
    "torch", "torch::autograd", "torch::jit", "torch::utils", "torch::autograd::generated",
    "torch::autograd::VariableType", "torch::ADInplaceOrView", "torch::TraceType",
};

/* Is the function certainly a member (a constructor or destructor, or
 * const), certainly not (no scope, a namespace, at::_ops), or unknown
 * (-1)? */
static int member_known(const tdb_cxx_sig *sig)
{
    if (!sig->scope[0])
        return 0;
    if (sig->is_const)
        return 1;
    const char *last = sig->scope;
    for (const char *p = sig->scope; *p; p++)
        if (p[0] == ':' && p[1] == ':')
            last = p + 2;
    if (!strcmp(sig->name, last) || (sig->name[0] == '~' && !strcmp(sig->name + 1, last)))
        return 1;
    if (!strcmp(last, "(anonymous namespace)") || starts(sig->scope, "at::_ops::"))
        return 0;
    for (size_t i = 0; i < sizeof(namespaces) / sizeof(namespaces[0]); i++)
        if (!strcmp(sig->scope, namespaces[i]))
            return 0;
    return -1;
}

/* Does a function returning RET return it in memory?  -1 unknown. */
static int sret_known(const tdb_cxx_sig *sig)
{
    if (!sig->return_type)
        return -1;
    ctype t;
    int cls[2], r;
    classify(sig->return_type, &t);
    if (t.kind == T_UNKNOWN)
        r = -1;
    else if (t.kind == T_VOID || t.nontrivial == 0)
        r = t.kind == T_VOID ? 0 : eightbytes(&t, cls) < 0;
    else
        r = 1;
    ctype_free(&t);
    return r;
}

json_t *tdb_cxx_args(tdb_mem *m, const char *function, const tdb_regs *r, int at_entry, int pushed,
                     const char *why, const tdb_tensor_layout *layout, int max_values,
                     tdb_error *err)
{
    tdb_cxx_sig sig;
    dctx c = {m, layout, max_values};
    interp its[4];
    int n = 0;
    json_t *out;

    if (tdb_cxx_sig_parse(function, &sig, err) < 0)
        return NULL;
    out = json_object();
    json_object_set_new(out, "function", tdb_json_bytes(function, strlen(function), 0, NULL));
    json_object_set_new(out, "at_entry", json_boolean(at_entry));
    if (!at_entry) {
        json_t *args = json_array();
        for (size_t k = 0; k < sig.n_params; k++) {
            char name[32];
            snprintf(name, sizeof(name), "arg%zu", k + 1);
            tdb_cxx_args_add(args, name, sig.params[k], json_null());
        }
        json_object_set_new(out, "note", json_string(why ? why : "the registers no longer hold the arguments"));
        json_object_set_new(out, "args", args);
        tdb_cxx_sig_free(&sig);
        return out;
    }
    int mk = member_known(&sig), sk = sret_known(&sig);
    for (int member = 0; member <= 1; member++)
        for (int sret = 1; sret >= 0; sret--) {
            if ((mk >= 0 && member != mk) || (sk >= 0 && sret != sk))
                continue;
            memset(&its[n], 0, sizeof(its[n]));
            its[n].member = member;
            its[n].sret = sret;
            run_interp(&c, &sig, r, pushed, &its[n]);
            n++;
        }
    /* The interpretation without invalid arguments and with the most
     * strongly validated ones.  A tie is broken by what is likelier in
     * torch: no this that its type information did not confirm (a member
     * function's this is checked when its class has type information),
     * then a result returned in memory (torch's functions mostly return
     * tensors); the result then says it is not certain. */
    int best = -1, ties = 0;
    for (int i = 0; i < n; i++) {
        if (its[i].bad)
            continue;
        if (best < 0 || its[i].strong > its[best].strong) {
            best = i;
            ties = 0;
        } else if (its[i].strong == its[best].strong) {
            ties++;
            int pi = its[i].member && !its[i].this_checked, pb = its[best].member && !its[best].this_checked;
            if (pi < pb || (pi == pb && its[i].sret > its[best].sret))
                best = i;
        }
    }
    int certain = best >= 0 && ties == 0;
    if (best < 0) {
        /* Nothing validates: show the least bad, and say so. */
        best = 0;
        for (int i = 1; i < n; i++)
            if (its[i].bad < its[best].bad)
                best = i;
    }
    char *conv = convention_text(&its[best]);
    json_object_set_new(out, "convention", json_string(conv));
    free(conv);
    json_object_set_new(out, "certain", json_boolean(certain));
    tdb_buf note = TDB_BUF_INIT;
    if (its[best].bad) {
        tdb_buf_adds(&note, "no reading of the registers gives valid arguments: the values below may be wrong");
    } else if (!certain) {
        tdb_buf_adds(&note, "not certain: the registers also fit other readings (");
        int first = 1;
        for (int i = 0; i < n; i++) {
            if (i == best || its[i].bad || its[i].strong != its[best].strong)
                continue;
            char *t = convention_text(&its[i]);
            tdb_buf_addf(&note, "%s%s", first ? "" : "; ", t);
            free(t);
            first = 0;
        }
        tdb_buf_adds(&note, ")");
    }
    if (its[best].note)
        tdb_buf_addf(&note, "%s%s", note.len ? "; " : "", its[best].note);
    if (note.len)
        json_object_set_new(out, "note", json_string(tdb_buf_str(&note)));
    tdb_buf_free(&note);
    if (its[best].return_slot)
        json_object_set(out, "return_slot", its[best].return_slot);
    json_object_set(out, "args", its[best].args);
    for (int i = 0; i < n; i++)
        interp_free(&its[i]);
    tdb_cxx_sig_free(&sig);
    return out;
}

/* --- text --------------------------------------------------------------- */

static void add_value_text(tdb_buf *b, const json_t *v)
{
    if (json_is_object(v) && (json_object_get(v, "sizes") || json_object_get(v, "defined"))) {
        char *t = tdb_tensor_text(v);
        tdb_buf_adds(b, t);
        free(t);
    } else if (json_is_null(v)) {
        tdb_buf_adds(b, "?");
    } else if (json_is_string(v)) {
        tdb_buf_adds(b, json_string_value(v));
    } else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        tdb_buf_addc(b, '[');
        json_array_foreach(v, i, e) {
            if (i)
                tdb_buf_adds(b, ", ");
            add_value_text(b, e);
        }
        tdb_buf_addc(b, ']');
    } else {
        char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        tdb_buf_adds(b, d ? d : "?");
        free(d);
    }
}

char *tdb_cxx_args_text(const json_t *args, const char *indent)
{
    tdb_buf b = TDB_BUF_INIT;
    size_t i;
    json_t *a;
    const char *conv = json_string_value(json_object_get(args, "convention"));
    const char *note = json_string_value(json_object_get(args, "note"));
    if (conv)
        tdb_buf_addf(&b, "%s(read as %s)\n", indent, conv);
    json_array_foreach(json_object_get(args, "args"), i, a) {
        tdb_buf_addf(&b, "%s%s (%s) = ", indent, json_string_value(json_object_get(a, "name")),
                     json_string_value(json_object_get(a, "type")));
        add_value_text(&b, json_object_get(a, "value"));
        tdb_buf_addc(&b, '\n');
    }
    if (note)
        tdb_buf_addf(&b, "%s(%s)\n", indent, note);
    return tdb_buf_detach(&b);
}

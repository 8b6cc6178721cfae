/* native/cxxexc.c: the C++ exception at a __cxa_throw, read from memory (see
 * native/cxxexc.h). */
#include "native/cxxexc.h"

#include "native/cxxabi.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* How far into a c10::Error the message is looked for, and how long the
 * strings looked at may be (what_ holds a whole C++ backtrace). */
#define C10_SCAN_BYTES 320
#define C10_STRING_MAX (1u << 20)

/*
 * c10::Error's layout is in no header a user has, and tdebug types no
 * offsets of torch's classes.  What is known and checked instead:
 *  - c10::Error derives from std::exception (one vptr, 8 bytes) and keeps
 *    its message in std::string members: msg_ (the message as given to
 *    TORCH_CHECK and friends), and the derived what_ (msg_, then the
 *    context, then the C++ backtrace) and what_without_backtrace_ (msg_
 *    and the context: the text Python's RuntimeError shows), all computed
 *    when the object is constructed, so before it is thrown;
 *  - a std::string validates on its own (native/cxxabi.h): a pointer to its own
 *    buffer or to readable memory, a length within its capacity, a NUL
 *    after the last character.  A pointer, a size or a vector's three
 *    pointers read as a string fail these checks.
 * So: read every 8-byte-aligned word after the vptr as a possible
 * std::string; the message is the first non-empty one that begins another
 * (what_ and what_without_backtrace_ begin with msg_), and the text shown
 * is the longest of those that holds no backtrace ("Exception raised
 * from"), which is what Python would show.
 */
typedef struct candidate {
    char *s;
    size_t len;
} candidate;

char *tdb_c10_error_message(tdb_mem *m, uint64_t c10, tdb_error *err)
{
    candidate c[C10_SCAN_BYTES / 8];
    size_t n = 0;
    char *result = NULL;

    for (uint64_t off = 8; off + 32 <= C10_SCAN_BYTES; off += 8) {
        size_t len;
        char *s = tdb_cxx_read_string(m, c10 + off, C10_STRING_MAX, &len, NULL);
        if (s) {
            c[n].s = s;
            c[n].len = len;
            n++;
        }
    }
    for (size_t i = 0; i < n && !result; i++) {
        const candidate *shown = &c[i];
        int begins_another = 0;
        if (c[i].len == 0)
            continue;
        for (size_t j = 0; j < n; j++) {
            if (j == i || c[j].len < c[i].len || memcmp(c[j].s, c[i].s, c[i].len) != 0)
                continue;
            begins_another = 1;
            if (c[j].len > shown->len && !memmem(c[j].s, c[j].len, "Exception raised from", 21))
                shown = &c[j];
        }
        if (begins_another)
            result = tdb_xstrndup(shown->s, shown->len);
    }
    if (!result)
        tdb_error_set(err, ENOENT,
                      "no message found in the c10::Error at 0x%llx (none of its words hold "
                      "a string that begins another, as msg_ begins what_)",
                      (unsigned long long)c10);
    for (size_t i = 0; i < n; i++)
        free(c[i].s);
    return result;
}

/* OUT.message = S cut to TDB_CXX_MESSAGE_MAX bytes (the cut marked),
 * its bytes kept by the JSON convention (base/common.h). */
static void set_message(json_t *out, const char *s)
{
    size_t len = strlen(s);
    tdb_buf b = TDB_BUF_INIT;
    tdb_buf_add(&b, s, len <= TDB_CXX_MESSAGE_MAX ? len : TDB_CXX_MESSAGE_MAX);
    if (len > TDB_CXX_MESSAGE_MAX)
        tdb_buf_adds(&b, "...");
    tdb_json_set_str(out, "message", tdb_buf_str(&b));
    tdb_buf_free(&b);
}

json_t *tdb_cxx_exception(tdb_mem *m, uint64_t obj, uint64_t tinfo, tdb_error *err)
{
    tdb_rtti t;
    json_t *out = NULL;
    char *type = NULL, *msg = NULL;
    int64_t off;
    tdb_error why = {0};

    if (tdb_rtti_read(m, tinfo, &t, err) < 0)
        return NULL;
    type = tdb_rtti_name(&t);
    out = json_object();
    json_object_set_new(out, "type", tdb_json_bytes(type, strlen(type), 0, NULL));

    if (t.kind == TDB_RTTI_OTHER) {
        /* throw 42, throw "text", throw some_pointer */
        json_object_set_new(out, "message", json_null());
        json_object_set_new(out, "note", json_string("not a class: there is no message to read"));
    } else if (tdb_rtti_find_base(m, tinfo, "N3c105ErrorE", obj, &off, NULL) == 1) {
        msg = tdb_c10_error_message(m, obj + (uint64_t)off, &why);
    } else if (tdb_rtti_find_base(m, tinfo, "St13runtime_error", obj, &off, NULL) == 1 ||
               tdb_rtti_find_base(m, tinfo, "St11logic_error", obj, &off, NULL) == 1) {
        /* libstdc++: std::exception's vptr, then the __cow_string. */
        msg = tdb_cxx_read_cow_string(m, obj + (uint64_t)off + 8, C10_STRING_MAX, NULL, &why);
    } else {
        json_object_set_new(out, "message", json_null());
        char *note = tdb_xasprintf("cannot read the message of a '%s' without calling its what() "
                                   "in the process, which tdebug does not do",
                                   type);
        json_object_set_new(out, "note", tdb_json_bytes(note, strlen(note), 0, NULL));
        free(note);
    }
    if (!json_object_get(out, "message")) {
        if (msg) {
            set_message(out, msg);
        } else {
            json_object_set_new(out, "message", json_null());
            char *note = tdb_xasprintf("cannot read the message: %s", why.msg);
            json_object_set_new(out, "note", tdb_json_bytes(note, strlen(note), 0, NULL));
            free(note);
        }
    }
    free(type);
    free(msg);
    return out;
}

int tdb_cxx_exception_is(tdb_mem *m, uint64_t obj, uint64_t tinfo, const char *type, tdb_error *err)
{
    return tdb_rtti_find_base_named(m, tinfo, type, obj, NULL, err);
}

char *tdb_cxx_exception_text(const json_t *exc)
{
    const char *type = json_string_value(json_object_get(exc, "type"));
    const char *msg = json_string_value(json_object_get(exc, "message"));
    const char *note = json_string_value(json_object_get(exc, "note"));
    if (msg)
        return tdb_xasprintf("C++ exception '%s': %s", type ? type : "?", msg);
    return tdb_xasprintf("C++ exception '%s' (%s)", type ? type : "?", note ? note : "no message");
}

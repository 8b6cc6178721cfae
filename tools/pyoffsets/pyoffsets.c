/*
 * pyoffsets.c: print the layout of the CPython this file is compiled
 * against, as one entry of src/cpython/offsets_table.c.
 *
 * Compiled once per CPython version with that version's headers, internal
 * ones included (tools/pyoffsets/generate.sh does it):
 *
 *     cc -DPy_BUILD_CORE -I$INC -I$INC/internal -Isrc tools/pyoffsets/pyoffsets.c
 *
 * Every number printed is the compiler's (offsetof, sizeof, a header
 * constant, a bit found by setting a bitfield).  The one thing no installed
 * header of 3.8-3.10 describes is the dict's key table (it lives in
 * Objects/dict-common.h, which is not installed), nor, before 3.10, a
 * module object: the structs below say where they are from, and the
 * numbers still come from the compiler.
 */
#ifdef TDB_DEBUG_OFFSETS_ONLY
/* A version whose headers are not here: only its _Py_DebugOffsets, from
 * the description named by TDB_DEBUG_OFFSETS_ONLY. */
#include TDB_DEBUG_OFFSETS_ONLY
#include "cpython/offsets.h"
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#else
#define Py_BUILD_CORE 1
#define NDEBUG 1
#include <Python.h>
#include <frameobject.h>
#if PY_VERSION_HEX < 0x03090000
#include <internal/pycore_pystate.h>
#else
#include <internal/pycore_runtime.h>
#include <internal/pycore_interp.h>
#endif
#if PY_VERSION_HEX >= 0x030b0000
#include <internal/pycore_frame.h>
#include <internal/pycore_code.h>
#include <internal/pycore_dict.h>
#include <internal/pycore_object.h>
#endif
#if PY_VERSION_HEX >= 0x030c0000
#include <internal/pycore_long.h>
#endif
#if PY_VERSION_HEX >= 0x030d0000
#include <internal/pycore_cell.h>
#endif
#if PY_VERSION_HEX < 0x030b0000
#include <longintrepr.h>
#endif
#if PY_VERSION_HEX >= 0x030a0000
#include <internal/pycore_moduleobject.h>
#endif

#include "cpython/offsets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#endif

#ifndef TDB_DEBUG_OFFSETS_ONLY
#if PY_VERSION_HEX < 0x030b0000
/* CPython 3.8-3.10's Objects/dict-common.h (not installed). */
typedef struct {
    Py_hash_t me_hash;
    PyObject *me_key;
    PyObject *me_value;
} PyDictKeyEntry;
struct _dictkeysobject {
    Py_ssize_t dk_refcnt;
    Py_ssize_t dk_size;
    void *dk_lookup;
    Py_ssize_t dk_usable;
    Py_ssize_t dk_nentries;
    char dk_indices[];
};
#endif

#if PY_VERSION_HEX < 0x030a0000
/* CPython 3.8-3.9's Objects/moduleobject.c (not installed): the fields
 * before md_dict. */
typedef struct {
    PyObject_HEAD
    PyObject *md_dict;
} PyModuleObject;
#endif

#if PY_VERSION_HEX < 0x030d0000 && PY_VERSION_HEX >= 0x030b0000
typedef struct _PyInterpreterFrame iframe_t;
#elif PY_VERSION_HEX >= 0x030d0000
typedef _PyInterpreterFrame iframe_t;
#endif

static int32_t v[TDB_PYO_COUNT];
#define SET(field, value) (v[TDB_PYO_##field] = (int32_t)(value))
#define OFF(field, type, member) SET(field, offsetof(type, member))

/* The lowest bit set in the bytes of X (a struct holding one bitfield set
 * to 1). */
static int first_bit(const void *x, size_t n)
{
    const unsigned char *b = x;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 8; k++)
            if (b[i] >> k & 1)
                return (int)(i * 8 + k);
    return -1;
}

#define STATE_BIT(field, member)                                               \
    do {                                                                       \
        PyASCIIObject a;                                                       \
        memset(&a, 0, sizeof(a));                                              \
        a.state.member = 1;                                                    \
        SET(field, first_bit(&a.state, sizeof(a.state)));                      \
    } while (0)

static void fill(void)
{
    for (int i = 0; i < TDB_PYO_COUNT; i++)
        v[i] = TDB_PYO_NONE;

    /* _PyRuntimeState */
    SET(runtime_size, sizeof(_PyRuntimeState));
    OFF(runtime_interpreters_head, _PyRuntimeState, interpreters.head);
    OFF(runtime_interpreters_main, _PyRuntimeState, interpreters.main);
#if PY_VERSION_HEX < 0x030c0000
    OFF(runtime_gil, _PyRuntimeState, ceval.gil);
#endif
#if PY_VERSION_HEX < 0x03090000
    OFF(runtime_gc_collecting, _PyRuntimeState, gc.collecting);
#endif
#if PY_VERSION_HEX >= 0x030d0000
    OFF(runtime_debug_offsets, _PyRuntimeState, debug_offsets);
#endif
    SET(gil_size, sizeof(struct _gil_runtime_state));
    OFF(gil_locked, struct _gil_runtime_state, locked);
    OFF(gil_last_holder, struct _gil_runtime_state, last_holder);

    /* PyInterpreterState */
    SET(interp_size, sizeof(PyInterpreterState));
    OFF(interp_next, PyInterpreterState, next);
    OFF(interp_id, PyInterpreterState, id);
#if PY_VERSION_HEX >= 0x030b0000
    OFF(interp_threads_head, PyInterpreterState, threads.head);
#else
    OFF(interp_threads_head, PyInterpreterState, tstate_head);
#endif
#if PY_VERSION_HEX >= 0x030c0000
    OFF(interp_modules, PyInterpreterState, imports.modules);
#else
    OFF(interp_modules, PyInterpreterState, modules);
#endif
    OFF(interp_sysdict, PyInterpreterState, sysdict);
    OFF(interp_builtins, PyInterpreterState, builtins);
#if PY_VERSION_HEX >= 0x03090000
    OFF(interp_gc_collecting, PyInterpreterState, gc.collecting);
#endif
#if PY_VERSION_HEX >= 0x030c0000
    OFF(interp_ceval_gil, PyInterpreterState, ceval.gil);
#endif

    /* PyThreadState */
    SET(tstate_size, sizeof(PyThreadState));
    OFF(tstate_prev, PyThreadState, prev);
    OFF(tstate_next, PyThreadState, next);
    OFF(tstate_interp, PyThreadState, interp);
#if PY_VERSION_HEX < 0x030b0000
    OFF(tstate_frame, PyThreadState, frame);
#elif PY_VERSION_HEX < 0x030d0000
    OFF(tstate_cframe, PyThreadState, cframe);
    OFF(cframe_current_frame, _PyCFrame, current_frame);
#else
    OFF(tstate_current_frame, PyThreadState, current_frame);
#endif
    OFF(tstate_thread_id, PyThreadState, thread_id);
#if PY_VERSION_HEX >= 0x030b0000
    OFF(tstate_native_thread_id, PyThreadState, native_thread_id);
#endif

#if PY_VERSION_HEX < 0x030b0000
    /* PyFrameObject: the frame chain */
    OFF(frame_back, PyFrameObject, f_back);
    OFF(frame_code, PyFrameObject, f_code);
    OFF(frame_globals, PyFrameObject, f_globals);
    OFF(frame_locals, PyFrameObject, f_locals);
    OFF(frame_lasti, PyFrameObject, f_lasti);
    OFF(frame_localsplus, PyFrameObject, f_localsplus);
#else
    SET(iframe_size, sizeof(iframe_t));
#if PY_VERSION_HEX >= 0x030d0000
    OFF(iframe_code, iframe_t, f_executable);
    OFF(iframe_instr, iframe_t, instr_ptr);
#else
    OFF(iframe_code, iframe_t, f_code);
    OFF(iframe_instr, iframe_t, prev_instr);
#endif
#if PY_VERSION_HEX < 0x030c0000
    OFF(iframe_is_entry, iframe_t, is_entry);
#else
    SET(frame_owned_by_cstack, FRAME_OWNED_BY_CSTACK);
#endif
    OFF(iframe_previous, iframe_t, previous);
    OFF(iframe_owner, iframe_t, owner);
    OFF(iframe_localsplus, iframe_t, localsplus);
    OFF(iframe_globals, iframe_t, f_globals);
    OFF(iframe_locals, iframe_t, f_locals);
#endif

    /* PyCodeObject */
    SET(code_size, sizeof(PyCodeObject));
    OFF(code_argcount, PyCodeObject, co_argcount);
    OFF(code_nlocals, PyCodeObject, co_nlocals);
    OFF(code_flags, PyCodeObject, co_flags);
    OFF(code_firstlineno, PyCodeObject, co_firstlineno);
    OFF(code_filename, PyCodeObject, co_filename);
    OFF(code_name, PyCodeObject, co_name);
    SET(co_optimized, CO_OPTIMIZED);
#if PY_VERSION_HEX < 0x030b0000
    OFF(code_code, PyCodeObject, co_code);
    OFF(code_varnames, PyCodeObject, co_varnames);
    OFF(code_cellvars, PyCodeObject, co_cellvars);
    OFF(code_freevars, PyCodeObject, co_freevars);
    OFF(code_cell2arg, PyCodeObject, co_cell2arg);
#else
    OFF(code_nlocalsplus, PyCodeObject, co_nlocalsplus);
    OFF(code_code_adaptive, PyCodeObject, co_code_adaptive);
    OFF(code_localsplusnames, PyCodeObject, co_localsplusnames);
    OFF(code_localspluskinds, PyCodeObject, co_localspluskinds);
    OFF(code_qualname, PyCodeObject, co_qualname);
    SET(co_fast_local, CO_FAST_LOCAL);
    SET(co_fast_cell, CO_FAST_CELL);
    SET(co_fast_free, CO_FAST_FREE);
#endif
#if PY_VERSION_HEX < 0x030a0000
    OFF(code_lnotab, PyCodeObject, co_lnotab);
#else
    OFF(code_linetable, PyCodeObject, co_linetable);
#endif
    SET(codeunit_size, sizeof(_Py_CODEUNIT));

    /* Objects */
    SET(object_size, sizeof(PyObject));
    OFF(object_type, PyObject, ob_type);
    OFF(var_size, PyVarObject, ob_size);
    OFF(type_name, PyTypeObject, tp_name);
    OFF(type_basicsize, PyTypeObject, tp_basicsize);
    OFF(type_flags, PyTypeObject, tp_flags);
    OFF(type_base, PyTypeObject, tp_base);
    OFF(type_mro, PyTypeObject, tp_mro);
    OFF(type_dictoffset, PyTypeObject, tp_dictoffset);
#if PY_VERSION_HEX >= 0x030b0000
    OFF(heaptype_cached_keys, PyHeapTypeObject, ht_cached_keys);
    SET(tpflags_managed_dict, Py_TPFLAGS_MANAGED_DICT);
    {
        char buf[256];
        PyObject *o = (PyObject *)(buf + 128);
#if PY_VERSION_HEX >= 0x030d0000
        SET(managed_dict_offset, (char *)_PyObject_ManagedDictPointer(o) - (char *)o);
        SET(tpflags_inline_values, Py_TPFLAGS_INLINE_VALUES);
#elif PY_VERSION_HEX >= 0x030c0000
        SET(managed_dict_offset, (char *)_PyObject_DictOrValuesPointer(o) - (char *)o);
#else
        SET(managed_dict_offset, (char *)_PyObject_ManagedDictPointer(o) - (char *)o);
        SET(managed_values_offset, (char *)_PyObject_ValuesPointer(o) - (char *)o);
#endif
    }
#endif
    OFF(tuple_item, PyTupleObject, ob_item);
    OFF(list_item, PyListObject, ob_item);
    OFF(bytes_sval, PyBytesObject, ob_sval);
    OFF(float_fval, PyFloatObject, ob_fval);
    OFF(cell_ref, PyCellObject, ob_ref);
    OFF(module_dict, PyModuleObject, md_dict);
    SET(tpflags_heaptype, Py_TPFLAGS_HEAPTYPE);
    OFF(set_used, PySetObject, used);
    OFF(set_mask, PySetObject, mask);
    OFF(set_table, PySetObject, table);
    SET(setentry_size, sizeof(setentry));
    OFF(setentry_key, setentry, key);
    OFF(exc_args, PyBaseExceptionObject, args);
    OFF(method_func, PyMethodObject, im_func);
    OFF(method_self, PyMethodObject, im_self);
    OFF(cfunc_ml, PyCFunctionObject, m_ml);
    OFF(cfunc_self, PyCFunctionObject, m_self);
    OFF(methoddef_name, PyMethodDef, ml_name);
    OFF(func_qualname, PyFunctionObject, func_qualname);
#if PY_VERSION_HEX >= 0x030b0000
    OFF(frameobj_frame, PyFrameObject, f_frame);
#endif

    /* str */
    SET(unicode_ascii_size, sizeof(PyASCIIObject));
    SET(unicode_compact_size, sizeof(PyCompactUnicodeObject));
    OFF(unicode_length, PyASCIIObject, length);
    OFF(unicode_state, PyASCIIObject, state);
    OFF(unicode_data, PyUnicodeObject, data);
    STATE_BIT(unicode_compact_shift, compact);
    STATE_BIT(unicode_ascii_shift, ascii);
    STATE_BIT(unicode_kind_shift, kind);

    /* int */
#if PY_VERSION_HEX >= 0x030c0000
    OFF(long_tag, PyLongObject, long_value.lv_tag);
    OFF(long_digit, PyLongObject, long_value.ob_digit);
    SET(long_nonsize_bits, _PyLong_NON_SIZE_BITS);
#else
    OFF(long_digit, PyLongObject, ob_digit);
#endif
    SET(long_shift, PyLong_SHIFT);
    SET(long_digit_size, sizeof(digit));

    /* dict */
    OFF(dict_used, PyDictObject, ma_used);
    OFF(dict_keys, PyDictObject, ma_keys);
    OFF(dict_values, PyDictObject, ma_values);
    OFF(dictkeys_nentries, PyDictKeysObject, dk_nentries);
    OFF(dictkeys_indices, PyDictKeysObject, dk_indices);
    SET(dictentry_size, sizeof(PyDictKeyEntry));
    OFF(dictentry_key, PyDictKeyEntry, me_key);
    OFF(dictentry_value, PyDictKeyEntry, me_value);
#if PY_VERSION_HEX < 0x030b0000
    OFF(dictkeys_size, PyDictKeysObject, dk_size);
    SET(dictvalues_values, 0); /* ma_values is the array itself */
#else
    OFF(dictkeys_log2_size, PyDictKeysObject, dk_log2_size);
    OFF(dictkeys_log2_index_bytes, PyDictKeysObject, dk_log2_index_bytes);
    OFF(dictkeys_kind, PyDictKeysObject, dk_kind);
    SET(dictkeys_general, DICT_KEYS_GENERAL);
    SET(dictuentry_size, sizeof(PyDictUnicodeEntry));
    OFF(dictuentry_key, PyDictUnicodeEntry, me_key);
    OFF(dictuentry_value, PyDictUnicodeEntry, me_value);
    OFF(dictvalues_values, PyDictValues, values);
#endif
}

static const char *const names[] = {
#define NAME(n) #n,
    TDB_PYO_FIELDS(NAME)
#undef NAME
};

static void print_layout(const char *source)
{
    fill();
    printf("    {%d, %d, \"%s\", {\n", PY_MAJOR_VERSION, PY_MINOR_VERSION, source);
    for (int i = 0; i < TDB_PYO_COUNT; i++) {
        if (v[i] == TDB_PYO_NONE)
            printf("        [TDB_PYO_%s] = TDB_PYO_NONE,\n", names[i]);
        else
            printf("        [TDB_PYO_%s] = %ld,\n", names[i], (long)v[i]);
    }
    printf("    }},\n");
}
#endif /* !TDB_DEBUG_OFFSETS_ONLY */

#if defined(TDB_DEBUG_OFFSETS_ONLY) || PY_VERSION_HEX >= 0x030d0000
/* Where each member tdebug reads is inside _Py_DebugOffsets. */
static void print_debug_layout(const char *source)
{
    static const struct {
        const char *name;
        size_t at;
    } at[] = {
#define AT(section, member) {#section "_" #member, offsetof(_Py_DebugOffsets, section.member)}
        {"version", offsetof(_Py_DebugOffsets, version)},
        {"free_threaded", offsetof(_Py_DebugOffsets, free_threaded)},
        AT(runtime_state, size), AT(runtime_state, interpreters_head),
        AT(interpreter_state, size), AT(interpreter_state, id), AT(interpreter_state, next),
        AT(interpreter_state, threads_head), AT(interpreter_state, gc),
        AT(interpreter_state, imports_modules), AT(interpreter_state, sysdict),
        AT(interpreter_state, builtins), AT(interpreter_state, ceval_gil),
        AT(interpreter_state, gil_runtime_state),
        AT(interpreter_state, gil_runtime_state_locked),
        AT(interpreter_state, gil_runtime_state_holder),
        AT(thread_state, size), AT(thread_state, prev), AT(thread_state, next),
        AT(thread_state, interp), AT(thread_state, current_frame), AT(thread_state, thread_id),
        AT(thread_state, native_thread_id),
        AT(interpreter_frame, size), AT(interpreter_frame, previous),
        AT(interpreter_frame, executable), AT(interpreter_frame, instr_ptr),
        AT(interpreter_frame, localsplus), AT(interpreter_frame, owner),
        AT(code_object, size), AT(code_object, filename), AT(code_object, name),
        AT(code_object, qualname), AT(code_object, linetable), AT(code_object, firstlineno),
        AT(code_object, argcount), AT(code_object, localsplusnames),
        AT(code_object, localspluskinds), AT(code_object, co_code_adaptive),
        AT(pyobject, size), AT(pyobject, ob_type),
        AT(type_object, size), AT(type_object, tp_name), AT(type_object, tp_flags),
        AT(tuple_object, ob_item), AT(tuple_object, ob_size),
        AT(list_object, ob_item),
        AT(dict_object, ma_keys), AT(dict_object, ma_values),
        AT(float_object, ob_fval),
        AT(long_object, lv_tag), AT(long_object, ob_digit),
        AT(bytes_object, ob_sval),
        AT(unicode_object, state), AT(unicode_object, length),
        AT(unicode_object, asciiobject_size),
        AT(gc, collecting),
#undef AT
    };
    static const char *const want[] = {
#define NAME(n) #n,
        TDB_PYD_FIELDS(NAME)
#undef NAME
    };
    printf("    {%d, %d, \"%s\", %zu, {\n", PY_MAJOR_VERSION, PY_MINOR_VERSION, source,
           sizeof(_Py_DebugOffsets));
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        size_t k = 0;
        while (k < sizeof(at) / sizeof(at[0]) && strcmp(at[k].name, want[i]) != 0)
            k++;
        if (k == sizeof(at) / sizeof(at[0])) {
            fprintf(stderr, "pyoffsets: no place for '%s'\n", want[i]);
            exit(1);
        }
        printf("        [TDB_PYD_%s] = %zu,\n", want[i], at[k].at);
    }
    printf("    }},\n");
}
#endif

/* pyoffsets layout SOURCE: the layout entry; pyoffsets debug SOURCE: the
 * _Py_DebugOffsets entry (3.13+). */
int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: pyoffsets layout|debug SOURCE\n");
        return 2;
    }
    if (strcmp(argv[1], "debug") == 0) {
#if defined(TDB_DEBUG_OFFSETS_ONLY) || PY_VERSION_HEX >= 0x030d0000
        print_debug_layout(argv[2]);
        return 0;
#else
        return 3; /* no _Py_DebugOffsets in this version */
#endif
    }
#ifndef TDB_DEBUG_OFFSETS_ONLY
    print_layout(argv[2]);
    return 0;
#else
    return 3;
#endif
}

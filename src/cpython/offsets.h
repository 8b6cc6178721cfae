/*
 * cpython/offsets.h: where CPython keeps what tdebug reads, for each version.
 *
 * A layout is one number per field below: a byte offset inside a CPython
 * struct, a struct size, or a constant of that version's headers.  The
 * numbers are never typed by hand: tools/pyoffsets/pyoffsets.c is compiled
 * against each version's own (internal) headers and prints its entry of
 * src/cpython/offsets_table.c (see the header of that file to regenerate it, and
 * tests/e2e/test_pyoffsets.py, which checks the committed table against
 * the headers present on the machine).
 *
 * From CPython 3.13 on, the interpreter publishes most of these itself in
 * _Py_DebugOffsets, the first member of _PyRuntime; tdb_py_layout_from_debug
 * offsets() reads them, so a version newer than the table (3.14) is read
 * without rebuilding tdebug.
 *
 * Field names: PREFIX_FIELD, the prefix naming the struct
 * (runtime = _PyRuntimeState, interp = PyInterpreterState, tstate =
 * PyThreadState, frame = PyFrameObject (3.8-3.10), iframe =
 * _PyInterpreterFrame (3.11+), code = PyCodeObject, ...).
 */
#ifndef TDB_PYOFFSETS_H
#define TDB_PYOFFSETS_H

#include <stddef.h>
#include <stdint.h>

/* The value of a field this version does not have. */
#define TDB_PYO_NONE INT32_MIN

#define TDB_PYO_FIELDS(X)                                                           \
    /* _PyRuntimeState */                                                           \
    X(runtime_size) X(runtime_interpreters_head) X(runtime_interpreters_main)       \
    X(runtime_gil)            /* the GIL (3.8-3.11: one per process) */             \
    X(runtime_gc_collecting)  /* 3.8: the collector is per process */               \
    X(runtime_debug_offsets)  /* 3.13+: _Py_DebugOffsets, at 0 */                   \
    /* struct _gil_runtime_state */                                                 \
    X(gil_size) X(gil_locked) X(gil_last_holder)                                    \
    /* PyInterpreterState */                                                        \
    X(interp_size) X(interp_next) X(interp_id) X(interp_threads_head)               \
    X(interp_modules) X(interp_sysdict) X(interp_builtins)                          \
    X(interp_gc_collecting)   /* 3.9+ */                                            \
    X(interp_ceval_gil)       /* 3.12+: pointer to the GIL this interpreter uses */ \
    /* PyThreadState */                                                             \
    X(tstate_size) X(tstate_prev) X(tstate_next) X(tstate_interp)                   \
    X(tstate_frame)           /* 3.8-3.10: PyFrameObject * */                       \
    X(tstate_cframe)          /* 3.11-3.12: _PyCFrame * */                          \
    X(tstate_current_frame)   /* 3.13+: _PyInterpreterFrame * */                    \
    X(tstate_thread_id) X(tstate_native_thread_id) /* the latter 3.11+ */           \
    X(cframe_current_frame)   /* 3.11-3.12 */                                       \
    /* PyFrameObject, the frame chain of 3.8-3.10 */                                \
    X(frame_back) X(frame_code) X(frame_globals) X(frame_locals) X(frame_lasti)     \
    X(frame_localsplus)                                                             \
    /* _PyInterpreterFrame (3.11+) */                                               \
    X(iframe_size) X(iframe_code) /* f_code, f_executable from 3.13 */              \
    X(iframe_previous)                                                              \
    X(iframe_instr)           /* prev_instr (3.11, 3.12), instr_ptr (3.13+) */      \
    X(iframe_is_entry)        /* 3.11 */                                            \
    X(iframe_owner) X(iframe_localsplus) X(iframe_globals) X(iframe_locals)         \
    X(frame_owned_by_cstack)  /* 3.12+: FRAME_OWNED_BY_CSTACK (the entry frame) */  \
    /* PyCodeObject */                                                              \
    X(code_size) X(code_argcount) X(code_nlocals)                                   \
    X(code_nlocalsplus)       /* 3.11+ */                                           \
    X(code_flags) X(code_firstlineno)                                               \
    X(code_code)              /* 3.8-3.10: the bytes object of the bytecode */      \
    X(code_code_adaptive)     /* 3.11+: the bytecode, inline */                     \
    X(code_varnames) X(code_cellvars) X(code_freevars) X(code_cell2arg) /* -3.10 */ \
    X(code_localsplusnames) X(code_localspluskinds) /* 3.11+ */                     \
    X(code_filename) X(code_name) X(code_qualname) /* the latter 3.11+ */           \
    X(code_lnotab)            /* 3.8, 3.9 */                                        \
    X(code_linetable)         /* 3.10+ */                                           \
    X(codeunit_size)                                                                \
    X(co_optimized) X(co_fast_local) X(co_fast_cell) X(co_fast_free)                \
    /* objects */                                                                   \
    X(object_size) X(object_type) X(var_size)                                       \
    X(type_name) X(type_basicsize) X(type_flags) X(type_base) X(type_mro)           \
    X(type_dictoffset)                                                              \
    X(heaptype_cached_keys)   /* 3.11+: shared keys of instance dicts */            \
    X(tpflags_managed_dict)   /* 3.11+ */                                           \
    X(tpflags_inline_values)  /* 3.13+ */                                           \
    X(managed_dict_offset)    /* 3.11+: the dict (or values) pointer, before obj */ \
    X(managed_values_offset)  /* 3.11: the values pointer, before obj */            \
    X(tuple_item) X(list_item) X(bytes_sval) X(float_fval) X(cell_ref)              \
    X(module_dict)                                                                  \
    X(tpflags_heaptype)       /* a class made by a class statement */               \
    X(set_used) X(set_mask) X(set_table) X(setentry_size) X(setentry_key)           \
    X(exc_args)               /* BaseException's args tuple */                      \
    X(method_func) X(method_self) /* a bound method */                              \
    X(cfunc_ml) X(cfunc_self) X(methoddef_name) /* a builtin function or method */  \
    X(func_qualname)                                                                \
    X(frameobj_frame)         /* 3.11+: the frame object's _PyInterpreterFrame */   \
    /* str */                                                                       \
    X(unicode_ascii_size) X(unicode_compact_size) X(unicode_length)                 \
    X(unicode_state) X(unicode_data)                                                \
    X(unicode_kind_shift) X(unicode_compact_shift) X(unicode_ascii_shift)           \
    /* int */                                                                       \
    X(long_digit) X(long_tag) /* lv_tag: 3.12+ */ X(long_shift) X(long_digit_size)  \
    X(long_nonsize_bits)                                                            \
    /* dict */                                                                      \
    X(dict_used) X(dict_keys) X(dict_values)                                        \
    X(dictkeys_size)          /* dk_size (3.8-3.10) */                              \
    X(dictkeys_log2_size) X(dictkeys_log2_index_bytes) X(dictkeys_kind) /* 3.11+ */ \
    X(dictkeys_nentries) X(dictkeys_indices)                                        \
    X(dictentry_size) X(dictentry_key) X(dictentry_value)                           \
    X(dictuentry_size) X(dictuentry_key) X(dictuentry_value) /* 3.11+ */            \
    X(dictkeys_general)       /* 3.11+: DICT_KEYS_GENERAL */                        \
    X(dictvalues_values)      /* offset of the values array in PyDictValues */

enum {
#define TDB_PYO_ENUM(name) TDB_PYO_##name,
    TDB_PYO_FIELDS(TDB_PYO_ENUM)
#undef TDB_PYO_ENUM
    TDB_PYO_COUNT
};

/* What tdebug reads of _Py_DebugOffsets (CPython 3.13+), by CPython's
 * names: SECTION_MEMBER.  Each is a uint64_t. */
#define TDB_PYD_FIELDS(X)                                                             \
    X(version) X(free_threaded)                                                       \
    X(runtime_state_size) X(runtime_state_interpreters_head)                          \
    X(interpreter_state_size) X(interpreter_state_id) X(interpreter_state_next)       \
    X(interpreter_state_threads_head) X(interpreter_state_gc)                         \
    X(interpreter_state_imports_modules) X(interpreter_state_sysdict)                 \
    X(interpreter_state_builtins) X(interpreter_state_ceval_gil)                      \
    X(interpreter_state_gil_runtime_state)                                            \
    X(interpreter_state_gil_runtime_state_locked)                                     \
    X(interpreter_state_gil_runtime_state_holder)                                     \
    X(thread_state_size) X(thread_state_prev) X(thread_state_next)                    \
    X(thread_state_interp) X(thread_state_current_frame) X(thread_state_thread_id)    \
    X(thread_state_native_thread_id)                                                  \
    X(interpreter_frame_size) X(interpreter_frame_previous)                           \
    X(interpreter_frame_executable) X(interpreter_frame_instr_ptr)                    \
    X(interpreter_frame_localsplus) X(interpreter_frame_owner)                        \
    X(code_object_size) X(code_object_filename) X(code_object_name)                   \
    X(code_object_qualname) X(code_object_linetable) X(code_object_firstlineno)       \
    X(code_object_argcount) X(code_object_localsplusnames)                            \
    X(code_object_localspluskinds) X(code_object_co_code_adaptive)                    \
    X(pyobject_size) X(pyobject_ob_type)                                              \
    X(type_object_size) X(type_object_tp_name) X(type_object_tp_flags)                \
    X(tuple_object_ob_item) X(tuple_object_ob_size)                                   \
    X(list_object_ob_item)                                                            \
    X(dict_object_ma_keys) X(dict_object_ma_values)                                   \
    X(float_object_ob_fval)                                                           \
    X(long_object_lv_tag) X(long_object_ob_digit)                                     \
    X(bytes_object_ob_sval)                                                           \
    X(unicode_object_state) X(unicode_object_length) X(unicode_object_asciiobject_size) \
    X(gc_collecting)

enum {
#define TDB_PYD_ENUM(name) TDB_PYD_##name,
    TDB_PYD_FIELDS(TDB_PYD_ENUM)
#undef TDB_PYD_ENUM
    TDB_PYD_COUNT
};

/* Where each member is inside one version's _Py_DebugOffsets (its byte
 * offset there), the struct's size, and the cookie's place (0). */
typedef struct tdb_py_debug_layout {
    int major, minor;
    const char *source;
    int32_t size;
    int32_t at[TDB_PYD_COUNT];
} tdb_py_debug_layout;

extern const tdb_py_debug_layout tdb_py_debug_layouts[];
extern const size_t tdb_py_n_debug_layouts;

/* One version's layout. */
typedef struct tdb_py_layout {
    int major, minor;
    const char *source; /* where the numbers came from */
    int32_t v[TDB_PYO_COUNT];
} tdb_py_layout;

/* The committed table (src/cpython/offsets_table.c), one entry per version. */
extern const tdb_py_layout tdb_py_layouts[];
extern const size_t tdb_py_n_layouts;

/* The table's entry for MAJOR.MINOR, or NULL. */
const tdb_py_layout *tdb_py_layout_find(int major, int minor);

#endif

/*
 * debug_offsets_3_14.h: the order of the members of CPython 3.14's
 * _Py_DebugOffsets (Include/internal/pycore_debug_offsets.h), for the one
 * version whose headers are not on this machine.  Every member is a
 * uint64_t; what matters is only their order, which the compiler turns
 * into positions (tools/pyoffsets/pyoffsets.c -DTDB_DEBUG_OFFSETS_ONLY).
 *
 * Two orders were published during 3.14's development: TDB_314_VARIANT 1
 * (the betas: no code-object generation, no thread-local bytecode) and 2
 * (3.14.0 on).  tdebug tries each against the process and takes the one
 * whose numbers are consistent (src/cpython/frames.c, debug_layout_fits()), so a
 * wrong guess is refused, never misread.
 */
#include <stdint.h>

#define PY_MAJOR_VERSION 3
#define PY_MINOR_VERSION 14
#define PY_VERSION "3.14"

typedef uint64_t u64;

typedef struct _Py_DebugOffsets {
    char cookie[8];
    u64 version, free_threaded;
    struct { u64 size, finalizing, interpreters_head; } runtime_state;
    struct {
        u64 size, id, next, threads_head, threads_main, gc, imports_modules, sysdict,
            builtins, ceval_gil, gil_runtime_state, gil_runtime_state_enabled,
            gil_runtime_state_locked, gil_runtime_state_holder;
#if TDB_314_VARIANT == 2
        u64 code_object_generation, tlbc_generation;
#endif
    } interpreter_state;
    struct {
        u64 size, prev, next, interp, current_frame, thread_id, native_thread_id,
            datastack_chunk, status;
    } thread_state;
    struct {
        u64 size, previous, executable, instr_ptr, localsplus, owner, stackpointer;
#if TDB_314_VARIANT == 2
        u64 tlbc_index;
#endif
    } interpreter_frame;
    struct {
        u64 size, filename, name, qualname, linetable, firstlineno, argcount,
            localsplusnames, localspluskinds, co_code_adaptive;
#if TDB_314_VARIANT == 2
        u64 co_tlbc;
#endif
    } code_object;
    struct { u64 size, ob_type; } pyobject;
    struct { u64 size, tp_name, tp_repr, tp_flags; } type_object;
    struct { u64 size, ob_item, ob_size; } tuple_object;
    struct { u64 size, ob_item, ob_size; } list_object;
    struct { u64 size, used, table, mask; } set_object;
    struct { u64 size, ma_keys, ma_values; } dict_object;
    struct { u64 size, ob_fval; } float_object;
    struct { u64 size, lv_tag, ob_digit; } long_object;
    struct { u64 size, ob_size, ob_sval; } bytes_object;
    struct { u64 size, state, length, asciiobject_size; } unicode_object;
    struct { u64 size, collecting; } gc;
    struct { u64 size, gi_name, gi_iframe, gi_frame_state; } gen_object;
#if TDB_314_VARIANT == 2
    struct { u64 next, prev; } llist_node;
#endif
    struct {
        u64 eval_breaker, remote_debugger_support, remote_debugging_enabled,
            debugger_pending_call, debugger_script_path, debugger_script_path_size;
    } debugger_support;
} _Py_DebugOffsets;

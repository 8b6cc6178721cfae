/*
 * Folder torch/: PyTorch's objects read from memory: the tensor layout of a
 * build (calibrated, solved, verified, cached), tensors and scalars
 * decoded, and a C++ call's arguments with the types torch passes.  It
 * never prints and never exits; a tensor that does not check out against
 * its layout is refused with the reason, never shown as garbage.
 * May include: base, process, native
 *
 * torch/tensor.h: tensors decoded from another process's memory: sizes, strides,
 * dtype, device, storage offset, requires_grad and the first values, as
 * JSON; c10::Scalar and c10::optional<c10::Scalar> too.
 *
 * Where a tensor library keeps these fields is a tdb_tensor_layout: for
 * torch it comes from calibration against the very build the process runs
 * (torch/layout.h; no offset is typed by hand), for a library with debug
 * info (samples/tinytensor) from its DWARF through gdb's expressions.  The
 * decoders trust nothing: every tensor is checked against the layout at
 * every use (the object's C++ type when the library has type information,
 * the number of dimensions, sizes and strides, numel equal to the product
 * of the sizes, a dtype and device the layout knows, the strides fitting
 * the storage, the data readable) and refused with the reason otherwise,
 * never printed as garbage.
 *
 * The JSON of a tensor (every decoder gives the same shape):
 *   {"sizes": [3, 5], "strides": [5, 1], "dtype": "float32",
 *    "device": "cpu", "storage_offset": 0, "requires_grad": false,
 *    "values": [1.0, 2.5, ...], "numel": 15, "impl": "0x...",
 *    "impl_type": "c10::TensorImpl"}
 * "values" holds the first elements in index order (row-major over sizes,
 * whatever the strides): numbers for float and integer dtypes (NaN and
 * infinities as the strings "nan", "inf", "-inf"), true/false for bool,
 * [real, imag] pairs for complex; null with "values_note" saying why when
 * they cannot be read (a meta tensor, an unknown device, unreadable data).
 * An undefined tensor (at::Tensor()) is {"defined": false}.
 */
#ifndef TDB_TENSOR_H
#define TDB_TENSOR_H

#include "base/common.h"
#include "process/procfs.h"

#include <jansson.h>
#include <stdint.h>

#define TDB_TENSOR_VALUES_DEFAULT 8  /* first values shown */
#define TDB_TENSOR_MAX_DIMS 64       /* more is refused as garbage */
#define TDB_TENSOR_MAX_DTYPES 32
#define TDB_TENSOR_MAX_DEVICES 8

/* A dtype the layout knows: the code the library stores, its name as
 * torch spells it ("float32", "int64", "bool", "complex64", ...) and the
 * size of one element. */
typedef struct tdb_tensor_dtype {
    int code;
    char name[16];
    int itemsize;
} tdb_tensor_dtype;

/* A device type: its code and name ("cpu", "meta", "cuda"). */
typedef struct tdb_tensor_device {
    int code;
    char name[16];
} tdb_tensor_device;

/* Scalar kinds, indexes of tdb_tensor_layout.scalar_tags. */
enum { TDB_SCALAR_DOUBLE, TDB_SCALAR_INT, TDB_SCALAR_COMPLEX, TDB_SCALAR_BOOL, TDB_SCALAR_KINDS };

/* Where a tensor library keeps a tensor.  Offsets are in bytes from the
 * object named; -1 means "not kept" (or not found). */
typedef struct tdb_tensor_layout {
    char source[16];       /* "calibration" or "dwarf" */
    /* The mangled type_info name the impl object's dynamic type must be or
     * derive from ("N3c1010TensorImplE"); empty for C structs (no type
     * information: the caller vouches for the type, e.g. from DWARF). */
    char impl_class[64];
    /* ... and the one that means "undefined tensor", or empty. */
    char undefined_class[64];
    int dim_off, dim_size;       /* number of dimensions (4 or 8 bytes) */
    int sizes_off, strides_off;  /* int64 arrays kept in the impl */
    int inline_max;              /* dims kept inline; with more, the word at
                                  * sizes_off points to the out-of-line array */
    int ool_strides_at_dim;      /* out of line: 1 strides follow the sizes
                                  * (array + 8*dim), 0 they start at array +
                                  * 8*inline_max */
    int offset_off;              /* storage offset, int64, in elements */
    int numel_off;               /* int64, -1 when not kept */
    int dtype_off, dtype_size;   /* dtype code (1, 2 or 4 bytes) */
    int device_off, device_size; /* device type code (1 or 4 bytes) */
    int device_index_off;        /* device index, signed byte, or -1 */
    int storage_off;             /* pointer to the storage object */
    int storage_data_off;        /* in the storage: the data pointer */
    int storage_nbytes_off;      /* in the storage: its bytes (int64), or -1 */
    int autograd_off;            /* pointer to the autograd metadata, or -1 */
    int autograd_requires_grad_off; /* in it: requires_grad_ (a byte) */
    int autograd_grad_fn_off;    /* in it: the grad_fn pointer */
    int pyobj_impl_off;          /* in the Python tensor object: the impl
                                  * pointer; -1 unknown */
    tdb_tensor_dtype dtypes[TDB_TENSOR_MAX_DTYPES];
    int n_dtypes;
    tdb_tensor_device devices[TDB_TENSOR_MAX_DEVICES];
    int n_devices;
    /* c10::Scalar: the tag (4 bytes) and the value, from the start of the
     * object; its size (for arrays of them, -1 unknown); the tag's code for
     * each TDB_SCALAR_* kind (-1 unknown). */
    int scalar_tag_off, scalar_value_off, scalar_size;
    int scalar_tags[TDB_SCALAR_KINDS];
    /* c10::optional<c10::Scalar>: where its "engaged" byte and its Scalar
     * are, from the start of the optional; -1 unknown. */
    int opt_scalar_flag_off, opt_scalar_value_off;
} tdb_tensor_layout;

/* A layout with every offset -1 and nothing known. */
void tdb_tensor_layout_init(tdb_tensor_layout *l);
/* The layout as JSON (new reference), and back: -1 with ERR set when J is
 * not a layout this tdebug writes (a missing or mistyped field). */
json_t *tdb_tensor_layout_to_json(const tdb_tensor_layout *l);
int tdb_tensor_layout_from_json(const json_t *j, tdb_tensor_layout *out, tdb_error *err);

/* The dtype / device entry for CODE, or NULL.  Borrowed from L. */
const tdb_tensor_dtype *tdb_tensor_dtype_of(const tdb_tensor_layout *l, int code);
const tdb_tensor_device *tdb_tensor_device_of(const tdb_tensor_layout *l, int code);
/* ... and by name ("float32"), or NULL. */
const tdb_tensor_dtype *tdb_tensor_dtype_named(const tdb_tensor_layout *l, const char *name);

/* Decode the tensor whose impl object (c10::TensorImpl) is at IMPL, with
 * the first MAX_VALUES values (0: none; <0: TDB_TENSOR_VALUES_DEFAULT).
 * New reference (the JSON above), or NULL with ERR saying why the object
 * is refused ("0x... is not a tensor: numel 12 is not the product of its
 * sizes [3, 5]"). */
json_t *tdb_tensor_decode_impl(tdb_mem *m, const tdb_tensor_layout *l, uint64_t impl,
                               int max_values, tdb_error *err);
/* The same for an at::Tensor object at ADDR (it holds the impl pointer:
 * what a "Tensor const&" argument points to). */
json_t *tdb_tensor_decode_tensor(tdb_mem *m, const tdb_tensor_layout *l, uint64_t addr,
                                 int max_values, tdb_error *err);
/* The same for a Python tensor object (THPVariable: torch.Tensor or a
 * subclass) at OBJ. */
json_t *tdb_tensor_decode_pyobject(tdb_mem *m, const tdb_tensor_layout *l, uint64_t obj,
                                   int max_values, tdb_error *err);
/* ADDR may be any of the three: tried as an impl, then an at::Tensor,
 * then a Python tensor object; the first that validates is decoded and
 * *OUT_KIND (may be NULL) says which ("TensorImpl", "at::Tensor",
 * "Python tensor").  NULL with ERR set listing why each failed. */
json_t *tdb_tensor_decode_any(tdb_mem *m, const tdb_tensor_layout *l, uint64_t addr,
                              int max_values, const char **out_kind, tdb_error *err);

/* The c10::Scalar at ADDR as a JSON value (a number, true/false, or
 * [real, imag]); new reference, or NULL with ERR set (an unknown tag: no
 * Scalar there, or a symbolic one). */
json_t *tdb_scalar_decode(tdb_mem *m, const tdb_tensor_layout *l, uint64_t addr, tdb_error *err);
/* The c10::optional<c10::Scalar> at ADDR: JSON null when empty. */
json_t *tdb_opt_scalar_decode(tdb_mem *m, const tdb_tensor_layout *l, uint64_t addr,
                              tdb_error *err);

/* --- With debug info (torch/tensor_dwarf.c) -------------------------------
 * A tensor library built with debug info is read with the offsets its
 * DWARF gives, asked of gdb as expressions ("(long)&((tt_tensor *)0)->shape")
 * through an evaluator the caller provides.  tdebug knows such libraries by
 * the names of their tensor struct and fields (not by offsets):
 * samples/tinytensor's "tt_tensor". */

/* Evaluate the C expression EXPR in the stopped process to an integer
 * (gdb's -data-evaluate-expression): 0 and *OUT, or -1 with ERR set. */
typedef int (*tdb_eval_int_fn)(void *ctx, const char *expr, int64_t *out, tdb_error *err);

/* The tensor struct named in the C type TYPE as gdb prints it ("const
 * tt_tensor *", "tt_tensor *"): a static string ("tt_tensor") when TYPE
 * is a pointer to a struct tdebug has a DWARF description of, else NULL. */
const char *tdb_tensor_dwarf_struct(const char *type);

/* The layout of the tensor struct STRUCT_NAME (from
 * tdb_tensor_dwarf_struct()), every offset, size and enumerator asked of
 * EVAL.  0, or -1 with ERR set (no debug info for it: gdb's message). */
int tdb_tensor_layout_from_dwarf(tdb_eval_int_fn eval, void *ctx, const char *struct_name,
                                 tdb_tensor_layout *out, tdb_error *err);

/* One line for the text front-end: "float32 [3, 5] strides [5, 1] cpu
 * values [1, 2.5, ...]" (offset, requires_grad and notes when they say
 * something).  New string. */
char *tdb_tensor_text(const json_t *t);
/* The same, without the values when WITH_VALUES is 0: "float32 [3, 5]
 * strides [5, 1] cpu".  New string. */
char *tdb_tensor_describe(const json_t *t, int with_values);

/* The tensor as Python would print it, on one line, from what was read:
 * "tensor([[0., 1., 2.], [3., 4., 5.]])", "tensor([1, 2], dtype=torch.int32)",
 * "tensor([0.5000, 1.2500], requires_grad=True)"; a tensor with more
 * values than were read shows those and its size: "tensor([0., 1., 2.,
 * ...], size=(100,))"; one whose values were not read "tensor(...,
 * device='meta', size=(2, 3))".  Numbers as torch formats them (integral
 * floats as "1.", four decimals, scientific notation for wide ranges),
 * without its padding.  New string. */
char *tdb_tensor_repr(const json_t *t);

#endif

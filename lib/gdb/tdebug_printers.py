"""gdb pretty-printers for PyTorch's C++ values, registered by tdebug.

tdebug's sessions load this file into their gdb ('source'), so that gdb's
own commands typed at a stop ('print a', 'info locals', 'finish', 'frame')
and its MI variables show torch's values as tdebug's commands do:

    at::Tensor, at::TensorBase, c10::intrusive_ptr<c10::TensorImpl, ...>
        float32 [2, 3] strides [3, 1] cpu values [0, 1, 2, 3, 4, 5]
        (its parts: sizes, strides, dtype, device, storage_offset,
        requires_grad, values)
    c10::optional<at::Tensor>     the tensor, or "nullopt"
    std::vector<at::Tensor>       its length, capacity and tensors
    c10::ArrayRef<at::Tensor> (at::TensorList), c10::ArrayRef<long>
    (c10::IntArrayRef), c10::ArrayRef<c10::SymInt> (c10::SymIntArrayRef)
        their elements, as a list
    c10::Scalar                   its number
    c10::ScalarType, c10::Device, c10::TensorOptions
        as torch spells them: float32, cpu, cuda:0

Tensors are decoded by tdebug's own reader (src/torch/tensor.c, built into
libtdebug-printers.so beside this file and called through ctypes), with
the tensor layout of the process's torch build that tdebug learned and
hands over with set_layout_file(); memory is read through gdb, nothing is
called in the process.  std::vector<at::Tensor> is printed here too, its
elements as tensors: libstdc++'s own printer is loaded only with
libstdc++'s symbols, which tdebug's sessions do not read.

By hand, in a gdb of one's own:
    python import sys; sys.path.insert(0, "/usr/local/lib/tdebug/gdb"); import tdebug_printers
    python tdebug_printers.set_layout_file("~/.cache/tdebug/torch-layout/....json")
"""
import ctypes
import json
import os
import re

import gdb
import gdb.printing

_HERE = os.path.dirname(os.path.abspath(__file__))
_LIB = None
_LAYOUT = None  # the "layout" of tdebug's cache file, as JSON text
MAX_VALUES = 8  # as tdebug's commands show

_READER = ctypes.CFUNCTYPE(ctypes.c_ssize_t, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p,
                           ctypes.c_size_t)


def _read(ctx, addr, buf, n):
    """tdb_mem_reader over gdb: up to N bytes at ADDR, short when the range
    runs into unmapped memory, -1 when nothing could be read."""
    inf = gdb.selected_inferior()
    while n > 0:
        try:
            data = inf.read_memory(addr, n).tobytes()
        except gdb.MemoryError:
            page_end = (addr | 0xfff) + 1
            if addr + n <= page_end:
                return -1
            n = page_end - addr  # up to the page's end only
            continue
        ctypes.memmove(buf, data, len(data))
        return len(data)
    return -1


_READ_FN = _READER(_read)


def _lib():
    global _LIB
    if _LIB is None:
        _LIB = ctypes.CDLL(os.path.join(_HERE, "libtdebug-printers.so"))
        _LIB.tdebug_printer_decode.restype = ctypes.c_void_p
        _LIB.tdebug_printer_decode.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64,
                                               ctypes.c_int, _READER, ctypes.c_void_p]
        _LIB.tdebug_printer_free.argtypes = [ctypes.c_void_p]
    return _LIB


def set_layout_file(path):
    """Use the tensor layout in tdebug's cache file PATH (torch/layout.h)."""
    global _LAYOUT
    with open(os.path.expanduser(path)) as f:
        doc = json.load(f)
    _LAYOUT = json.dumps(doc.get("layout", doc))


def decode(what, addr):
    """tdebug's reading of the value WHAT ("tensor", "impl", "scalar") at
    ADDR: {"value", "text", "repr"} or {"error"}."""
    if _LAYOUT is None:
        return {"error": "no tensor layout yet (tdebug gives gdb one once it has read a tensor "
                         "of this process; 'tensor EXPR' at the (tdebug) prompt does)"}
    lib = _lib()
    p = lib.tdebug_printer_decode(_LAYOUT.encode(), what.encode(), int(addr), MAX_VALUES,
                                  _READ_FN, None)
    try:
        return json.loads(ctypes.string_at(p).decode("utf-8", "replace"))
    finally:
        lib.tdebug_printer_free(p)


def _address(val):
    if val.address is not None:
        return int(val.address)
    return None


class TensorPrinter:
    """at::Tensor, at::TensorBase and the intrusive_ptr they hold."""

    def __init__(self, val):
        self.val = val
        self._d = None

    def decoded(self):
        if self._d is None:
            addr = _address(self.val)
            if addr is not None:
                self._d = decode("tensor", addr)
            else:
                # A value gdb holds itself (a function's returned value):
                # the TensorImpl pointer it keeps.
                f = _fields(self.val)
                ptr = f["target_"] if "target_" in f else _fields(f["impl_"])["target_"]
                self._d = decode("impl", int(ptr))
        return self._d

    def to_string(self):
        d = self.decoded()
        if "error" in d:
            return "<tensor not read: %s>" % d["error"]
        return d["text"]

    def children(self):
        t = self.decoded().get("value")
        if not isinstance(t, dict) or "sizes" not in t:
            return
        for key in ("sizes", "strides", "dtype", "device", "storage_offset", "requires_grad"):
            if key in t:
                yield key, _gdb_value(t[key])
        yield "values", _gdb_value(t.get("values"))


def _gdb_value(x):
    """A Python value from the decoder's JSON as something gdb prints."""
    if isinstance(x, bool):
        return "True" if x else "False"
    if isinstance(x, (int, float)) or isinstance(x, str):
        return x
    return json.dumps(x).replace('"', "")


class ScalarPrinter:
    def __init__(self, val):
        self.val = val

    def to_string(self):
        addr = _address(self.val)
        d = decode("scalar", addr) if addr is not None else {"error": "a value not in memory"}
        return d["text"] if "error" not in d else "<c10::Scalar not read: %s>" % d["error"]


def _fields(val):
    """VAL's fields, its bases' included, by name."""
    out = {}
    for f in val.type.strip_typedefs().fields():
        if f.is_base_class:
            out.update(_fields(val[f]))
        elif f.name:
            out[f.name] = val[f.name]
    return out


class ArrayRefPrinter:
    """c10::ArrayRef<T>: its Length elements at Data."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        f = _fields(self.val)
        n = int(f["Length"])
        if n > 64 or n < 0:
            return "ArrayRef of %d elements" % n
        items = [f["Data"][i] for i in range(n)]
        if self.val.type.strip_typedefs().template_argument(0).strip_typedefs().code == gdb.TYPE_CODE_INT:
            return "[%s]" % ", ".join(str(int(x)) for x in items)
        return None

    def children(self):
        f = _fields(self.val)
        n = int(f["Length"])
        if self.val.type.strip_typedefs().template_argument(0).strip_typedefs().code == gdb.TYPE_CODE_INT:
            return
        for i in range(min(max(n, 0), 64)):
            yield "[%d]" % i, f["Data"][i]

    def display_hint(self):
        return "array"


class TensorVectorPrinter:
    """std::vector<at::Tensor> (and of TensorBase, optional<Tensor>): its
    elements from _M_start to _M_finish, each printed here.  libstdc++'s own
    printer does the same, but gdb loads it only with libstdc++'s symbols,
    which tdebug's sessions do not read."""

    def __init__(self, val):
        self.val = val

    def _range(self):
        f = _fields(_fields(self.val)["_M_impl"])
        start = f["_M_start"]
        return start, int(f["_M_finish"] - start), int(f["_M_end_of_storage"] - start)

    def to_string(self):
        _, n, cap = self._range()
        return "std::vector of length %d, capacity %d" % (n, cap)

    def children(self):
        start, n, _ = self._range()
        for i in range(min(max(n, 0), 64)):
            yield "[%d]" % i, start[i]

    def display_hint(self):
        return "array"


class SymIntArrayRefPrinter(ArrayRefPrinter):
    def to_string(self):
        f = _fields(self.val)
        n = int(f["Length"])
        if n > 64 or n < 0:
            return "ArrayRef of %d elements" % n
        return "[%s]" % ", ".join(str(int(_fields(f["Data"][i])["data_"])) for i in range(n))

    def children(self):
        return iter(())


class OptionalPrinter:
    """c10::optional<T>: its value, or nullopt."""

    def __init__(self, val):
        self.val = val

    def _get(self):
        f = _fields(self.val)
        init = f.get("init_")
        if init is None:
            return None, "?"
        if not bool(init):
            return None, "nullopt"
        storage = f.get("storage_")
        if storage is None:
            return None, "?"
        # c10's storage_t<T> is a union {dummy_; value_}.
        names = [x.name for x in storage.type.strip_typedefs().fields()]
        return (storage["value_"] if "value_" in names else storage), None

    def to_string(self):
        v, why = self._get()
        if v is None:
            return why
        return v  # gdb prints it, with its own printer


_DTYPES = {"Byte": "uint8", "Char": "int8", "Short": "int16", "Int": "int32", "Long": "int64",
           "Half": "float16", "Float": "float32", "Double": "float64", "ComplexHalf": "complex32",
           "ComplexFloat": "complex64", "ComplexDouble": "complex128", "Bool": "bool",
           "BFloat16": "bfloat16", "QInt8": "qint8", "QUInt8": "quint8", "QInt32": "qint32"}


def _scalar_type_name(val):
    name = str(val).split("::")[-1]
    return _DTYPES.get(name, name)


class ScalarTypePrinter:
    def __init__(self, val):
        self.val = val

    def to_string(self):
        return _scalar_type_name(self.val)


def _device_text(val):
    f = _fields(val)
    kind = str(f["type_"]).split("::")[-1].lower()
    index = int(f["index_"])
    return kind if index < 0 else "%s:%d" % (kind, index)


class DevicePrinter:
    def __init__(self, val):
        self.val = val

    def to_string(self):
        return _device_text(self.val)


class TensorOptionsPrinter:
    """c10::TensorOptions: what it has set, as torch's keywords."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        f = _fields(self.val)
        parts = []
        if bool(f.get("has_dtype_", 0)):
            index = int(_fields(f["dtype_"])["index_"])
            st = gdb.lookup_type("c10::ScalarType")
            parts.append("dtype=%s" % _scalar_type_name(gdb.Value(index).cast(st)))
        if bool(f.get("has_device_", 0)):
            parts.append("device=%s" % _device_text(f["device_"]))
        if bool(f.get("has_layout_", 0)):
            parts.append("layout=%s" % str(f["layout_"]).split("::")[-1].lower())
        if bool(f.get("has_requires_grad_", 0)):
            parts.append("requires_grad=%s" % bool(f["requires_grad_"]))
        return "TensorOptions(%s)" % ", ".join(parts)


_PRINTERS = [
    (r"^at::(Tensor|TensorBase)$", TensorPrinter),
    (r"^c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>$", TensorPrinter),
    (r"^c10::Scalar$", ScalarPrinter),
    (r"^c10::ArrayRef<c10::SymInt>$", SymIntArrayRefPrinter),
    (r"^c10::ArrayRef<.*>$", ArrayRefPrinter),
    (r"^c10::optional<.*>$", OptionalPrinter),
    (r"^std::(__cxx11::)?vector<(at::Tensor|at::TensorBase|c10::optional<at::Tensor>), ",
     TensorVectorPrinter),
    (r"^c10::ScalarType$", ScalarTypePrinter),
    (r"^c10::Device$", DevicePrinter),
    (r"^c10::TensorOptions$", TensorOptionsPrinter),
]
_COMPILED = [(re.compile(rx), cls) for rx, cls in _PRINTERS]


def lookup(val):
    t = val.type
    if t.code == gdb.TYPE_CODE_REF or t.code == gdb.TYPE_CODE_RVALUE_REF:
        t = t.target()
        val = val.referenced_value()  # the printers read the object's fields
    t = t.unqualified().strip_typedefs()
    name = t.tag or t.name
    if not name:
        return None
    for rx, cls in _COMPILED:
        if rx.match(name):
            return cls(val)
    return None


# Where GCC installs libstdc++'s gdb scripts (Debian: /usr/share/gcc/python;
# others name the version: /usr/share/gcc-12/python).
_LIBSTDCXX_PYTHON = ["/usr/share/gcc/python", "/usr/share/gcc-*/python"]


def register_libstdcxx_xmethods():
    """libstdc++'s xmethods, globally, so that 'print parts[1]' and
    'parts.size()' on a std::vector are read from memory by gdb (the
    xmethod reads _M_impl) rather than called in the process, where the
    operator may not even exist (inlined: "Could not find operator[]").
    gdb registers them with libstdc++'s printers, from the auto-load
    script of libstdc++.so.6, which it runs only when it reads that
    library's symbols: tdebug's sessions do not.  Returns whether they are
    registered (once); False when no libstdc++ scripts are installed."""
    import glob
    import sys
    try:
        import gdb.xmethod
    except ImportError:
        return False
    if any(getattr(m, "name", "").startswith("libstdc++::") for m in gdb.xmethods):
        return True
    for pattern in _LIBSTDCXX_PYTHON:
        for d in sorted(glob.glob(pattern), reverse=True):
            if not os.path.isfile(os.path.join(d, "libstdcxx", "v6", "xmethods.py")):
                continue
            if d not in sys.path:
                sys.path.append(d)
            try:
                from libstdcxx.v6.xmethods import register_libstdcxx_xmethods as reg
                reg(None)
            except Exception:  # another libstdc++'s scripts, or already there
                return False
            return True
    return False


def register(objfile=None):
    """Add the printers (once) to gdb's global list, and libstdc++'s
    xmethods."""
    register_libstdcxx_xmethods()
    for p in gdb.pretty_printers:
        if getattr(p, "__name__", "") == "tdebug_torch":
            return
    lookup.__name__ = "tdebug_torch"
    gdb.pretty_printers.insert(0, lookup)


register()

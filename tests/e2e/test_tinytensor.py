"""The tinytensor sample (samples/tinytensor): its Python API, its
dispatcher seen from Python, the callback path, and how it is built (debug
info, -O0, gdb index, torch's library layout, setuptools honouring the
user's flags, a Makefile that rebuilds only what changed).  The C core has
its own unit tests (tests/unit/test_tinytensor_core.c)."""
import re
import shutil
import subprocess
import sys

import pytest

from conftest import PYTHON, SLOW, run
from tinytensor_util import (TT_OUT, TT_PKG, TT_SRC, gdb_batch, marked_line,
                             optimization, producers, readelf, shared_objects,
                             tt_env)


@pytest.fixture(scope="module")
def tt():
    if not (TT_PKG / "__init__.py").exists():
        pytest.fail(f"{TT_PKG} is not built; run 'make'")
    sys.path.insert(0, str(TT_OUT))
    import tinytensor
    assert tinytensor.__file__ == str(TT_PKG / "__init__.py")
    return tinytensor


# ---- the API

def test_ones_plus_one(tt):
    x = tt.ones(2) + 1
    assert isinstance(x, tt.Tensor)
    assert repr(x) == "tensor([2., 2.])"
    assert x.shape == (2,)
    assert x.dtype == "float64"
    assert x.device == "cpu"


def test_shapes_and_strides(tt):
    assert tt.ones(2, 3).shape == (2, 3)
    assert tt.zeros((2, 3)).shape == (2, 3)
    assert tt.zeros([4]).stride() == (1,)
    assert tt.ones(2, 3, 4).stride() == (12, 4, 1)
    t = tt.tensor([[1, 2, 3], [4, 5, 6]])
    assert (t.shape, t.dtype, t.ndim, t.dim(), t.numel(), len(t)) == ((2, 3), "int64", 2, 2, 6, 2)
    assert t.t().shape == (3, 2)
    assert t.t().stride() == (1, 3)
    assert t.t().tolist() == [[1, 4], [2, 5], [3, 6]]
    s = tt.tensor(3.5)
    assert (s.shape, s.item(), float(s)) == ((), 3.5, 3.5)
    assert tt.tensor([]).shape == (0,)
    assert tt.full((2,), 7).tolist() == [7, 7]
    assert tt.full((2,), 7).dtype == "int64"


def test_repr_layout(tt):
    assert repr(tt.tensor([[1., 2.], [3., 4.]])) == "tensor([[1., 2.],\n        [3., 4.]])"
    assert repr(tt.tensor([1, 10])) == "tensor([ 1, 10])"
    assert repr(tt.tensor([1.5, 2.0])) == "tensor([1.5000, 2.0000])"
    assert repr(tt.ones(2, device="meta")) == "tensor(..., device='meta', size=(2,))"


def test_add_broadcasts_and_promotes(tt):
    col = tt.tensor([[1], [2]])
    row = tt.tensor([10, 20, 30])
    assert (col + row).tolist() == [[11, 21, 31], [12, 22, 32]]
    assert tt.add(col, row, alpha=2).tolist() == [[21, 41, 61], [22, 42, 62]]
    assert (1 + tt.ones(2)).tolist() == [2.0, 2.0]
    mixed = tt.tensor([1, 2]) + 0.5
    assert (mixed.dtype, mixed.tolist()) == ("float64", [1.5, 2.5])
    assert (tt.tensor([1, 2]) + 1).dtype == "int64"
    assert (tt.tensor([1, 2]) * tt.tensor([3.0])).tolist() == [3.0, 6.0]
    assert tt.mul(tt.ones(2), 3).tolist() == [3.0, 3.0]


def test_add_errors(tt):
    with pytest.raises(RuntimeError) as e:
        tt.ones(2) + tt.ones(3)
    assert str(e.value) == ("cannot add shapes [2] and [3]: sizes 2 and 3 in dimension 0 do not broadcast "
                            "(sizes must be equal or one of them 1)")
    with pytest.raises(TypeError):
        tt.ones(2) + "x"
    with pytest.raises(RuntimeError, match="both must be on the same device"):
        tt.ones(2) + tt.ones(2, device="meta")


def test_matmul(tt):
    m = tt.tensor([[1., 2.], [3., 4.]])
    v = tt.tensor([1., 1.])
    assert (m @ m).tolist() == [[7., 10.], [15., 22.]]
    assert tt.matmul(m, v).tolist() == [3., 7.]
    assert (v @ m).tolist() == [4., 6.]
    assert (v @ v).shape == ()
    assert (v @ v).item() == 2.0
    assert (m.t() @ m).tolist() == [[10., 14.], [14., 20.]]
    with pytest.raises(RuntimeError, match=r"cannot matmul shapes \[2, 2\] and \[3\]: inner sizes 2 and 3 differ"):
        m @ tt.ones(3)
    with pytest.raises(RuntimeError, match="takes 1-D and 2-D ones"):
        tt.ones(2, 2, 2) @ m


def test_bad_arguments(tt):
    with pytest.raises(RuntimeError, match=r"^unknown dtype 'float32' \(tinytensor has float64 and int64\)$"):
        tt.ones(2, dtype="float32")
    with pytest.raises(RuntimeError, match=r"^unknown device 'cuda' \(tinytensor has cpu and meta\)$"):
        tt.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match="sizes are >= 0"):
        tt.ones(-1)
    with pytest.raises(RuntimeError, match="ragged"):
        tt.tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="elements must be ints or floats"):
        tt.tensor(["a"])
    with pytest.raises(RuntimeError, match="cannot convert a cpu tensor of 2 elements"):
        tt.ones(2).item()
    with pytest.raises(TypeError):
        tt._C.TensorBase()


# ---- the dispatcher

def test_dispatcher_routes_add_to_the_cpu_kernel(tt):
    assert tt._C._dispatch_kernel("add", "cpu", "float64") == "tt_native_add"
    assert tt._C._dispatch_kernel("add", "cpu", "int64") == "tt_native_add"
    assert tt._C._dispatch_kernel("add", "meta", "float64") == "tt_meta_add"
    assert tt._C._dispatch_kernel("matmul", "cpu", "float64") == "tt_native_matmul"
    assert tt._C._dispatch_operators() == ["add", "mul", "sum", "fill_", "matmul"]
    assert tt._C._dispatch_dump("add") == ("operator: add\n"
                                           "  cpu/float64: tt_native_add\n"
                                           "  cpu/int64: tt_native_add\n"
                                           "  meta/float64: tt_meta_add\n"
                                           "  meta/int64: tt_meta_add\n")


def test_dispatcher_trace_shows_each_call():
    r = run([PYTHON, "-c", "import tinytensor; tinytensor.ones(2) + 1"],
            env=tt_env(TINYTENSOR_SHOW_DISPATCH_TRACE="1"))
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        "[call] op=[fill_], key=[cpu/float64], kernel=[tt_native_fill_]",
        "[call] op=[add], key=[cpu/float64], kernel=[tt_native_add]",
    ]


def test_dispatcher_missing_kernel_is_not_implemented(tt):
    with pytest.raises(NotImplementedError) as e:
        tt.tensor([1, 2]) @ tt.tensor([3, 4])
    assert str(e.value) == ("cannot run 'matmul' on cpu/int64: no kernel is registered for it "
                            "(matmul has: cpu/float64, meta/float64, meta/int64)")
    with pytest.raises(NotImplementedError, match=r"^cannot run 'sum' on meta/float64"):
        tt.ones(2, device="meta").sum()
    with pytest.raises(NotImplementedError, match=r"^cannot run 'matmul' on cpu/int64"):
        tt._C._dispatch_kernel("matmul", "cpu", "int64")


def test_dispatcher_unknown_operator(tt):
    with pytest.raises(RuntimeError) as e:
        tt._C._dispatch_kernel("frobnicate", "cpu", "float64")
    assert str(e.value) == "unknown operator 'frobnicate' (tinytensor has: add, mul, sum, fill_, matmul)"
    with pytest.raises(RuntimeError, match="unknown operator 'frobnicate'"):
        tt._C._dispatch_dump("frobnicate")


def test_meta_tensors_have_shapes_only(tt):
    a = tt.ones(2, 3, device="meta")
    b = a @ tt.ones(3, 4, device="meta")
    assert (b.shape, b.device, b.data_ptr()) == ((2, 4), "meta", 0)
    assert (a + 1).shape == (2, 3)
    with pytest.raises(RuntimeError, match="cannot read the values of a meta tensor"):
        a.tolist()


# ---- Python -> C -> Python (-> C)

def test_apply_calls_python_for_each_element(tt):
    seen = []

    def fn(v):
        seen.append(v)
        return v * 10

    x = tt.tensor([[1., 2.], [3., 4.]])
    y = tt.apply(x, fn)
    assert y.tolist() == [[10., 20.], [30., 40.]]
    assert x.tolist() == [[1., 2.], [3., 4.]]  # apply copies; apply_ is in place
    assert seen == [1., 2., 3., 4.]
    assert x.apply_(lambda v: -v) is x
    assert x.tolist() == [[-1., -2.], [-3., -4.]]
    assert tt.tensor([1, 2]).apply_(lambda v: v + 1).tolist() == [2, 3]


def test_apply_callback_can_call_back_into_c(tt):
    # C loop -> Python callable -> C kernel, three levels deep.
    y = tt.apply(tt.tensor([1., 2., 3.]), lambda v: (tt.full((), v) + v).sum())
    assert y.tolist() == [2., 4., 6.]
    z = tt.apply(tt.tensor([1., 2.]), lambda v: tt.apply(tt.ones(2), lambda w: w * v).sum())
    assert z.tolist() == [2., 4.]


def test_apply_propagates_the_callbacks_exception(tt):
    calls = []

    def fn(v):
        calls.append(v)
        if v == 2:
            raise ValueError("no twos")
        return v

    x = tt.tensor([1., 2., 3.])
    with pytest.raises(ValueError, match="no twos"):
        x.apply_(fn)
    assert calls == [1., 2.]  # the C loop stopped at the failure
    with pytest.raises(TypeError, match="returned a float"):
        tt.tensor([1]).apply_(lambda v: 0.5)
    with pytest.raises(TypeError, match="must be callable"):
        x.apply_(3)
    with pytest.raises(RuntimeError, match="cannot apply_ a function to a meta tensor"):
        tt.ones(2, device="meta").apply_(lambda v: v)


def test_from_blob_shares_memory(tt):
    a = tt.tensor([1., 2., 3.])
    b = tt.from_blob(a.data_ptr(), a.shape)
    a.apply_(lambda v: v * 2)
    assert b.tolist() == [2., 4., 6.]
    with pytest.raises(RuntimeError, match=r"^cannot wrap address 0: it is a null pointer$"):
        tt.from_blob(0, (1,))


# ---- how it is built

def test_shared_objects_are_debug_builds():
    for so in shared_objects():
        prods = producers(so)
        assert prods, f"{so.name} has no DWARF"
        for p in prods:
            assert optimization(p) == "0", f"{so.name}: {p}"
            assert "-g3" in p.split(), f"{so.name}: {p}"
            assert "-fno-omit-frame-pointer" in p.split(), f"{so.name}: {p}"
        sections = readelf("--section-headers", str(so))
        assert ".gdb_index" in sections, f"{so.name} has no gdb index"


def test_layout_mirrors_torch():
    so = {p.name.split(".")[0]: p for p in shared_objects()}

    def dynamic(name):
        return readelf("--dynamic", str(so[name]))

    def exported(name):
        out = subprocess.run(["nm", "-D", "--defined-only", str(so[name])], capture_output=True,
                             text=True, check=True).stdout
        return {line.split()[-1] for line in out.splitlines() if line.split()[1] == "T"}

    assert "Library runpath: [$ORIGIN/lib]" in dynamic("_C")
    assert "Shared library: [libtt_python.so]" in dynamic("_C")
    assert "Library runpath: [$ORIGIN]" in dynamic("libtt_python")
    assert "Shared library: [libtt_core.so]" in dynamic("libtt_python")
    assert "libpython" not in dynamic("libtt_core") and "Py" not in " ".join(exported("libtt_core"))
    # The stub is a stub: PyInit__C and nothing else of its own.
    assert {s for s in exported("_C") if not s.startswith("_")} == {"PyInit__C"}
    assert "tt_init_module" in exported("libtt_python")
    assert {"tt_ops_add_call", "tt_native_add", "tt_dispatcher_lookup"} <= exported("libtt_core")


def copy_sources(dest):
    """A private copy of samples/tinytensor, so that building and cleaning
    it never touches the source tree or the shared build."""
    shutil.copytree(TT_SRC, dest, ignore=shutil.ignore_patterns("build", "__pycache__", "*.so", "lib"))
    return dest


def test_setuptools_build_honours_user_flags(tmp_path):
    src = copy_sources(tmp_path / "src")
    r = run([PYTHON, "setup.py", "-q", "build_ext", "--inplace"], cwd=src,
            env=tt_env(CFLAGS="-O1 -g", LDFLAGS="-Wl,-z,now"))
    assert r.returncode == 0, r.stderr
    for so in shared_objects(src / "tinytensor"):
        assert {optimization(p) for p in producers(so)} == {"1"}, so.name
        assert "BIND_NOW" in readelf("--dynamic", str(so)), so.name
    r = run([PYTHON, "-c", "import tinytensor; print(tinytensor.ones(2) + 1)"], env=tt_env(out=src))
    assert r.stdout == "tensor([2., 2.])\n", r.stderr


def test_makefile_builds_once_and_cleans(tmp_path):
    src = copy_sources(tmp_path / "src")
    out = tmp_path / "out"
    make = ["make", "--no-print-directory", "-C", str(src), f"OUT={out}", f"PYTHON={PYTHON}"]
    r = run(make)
    assert r.returncode == 0, r.stderr
    assert "SETUP" in r.stdout and r.stderr == ""
    sos = shared_objects(out / "tinytensor")
    stamps = {so: so.stat().st_mtime_ns for so in sos}
    assert {optimization(p) for so in sos for p in producers(so)} == {"0"}

    r = run(make)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert {so: so.stat().st_mtime_ns for so in sos} == stamps

    (src / "tinytensor" / "_tensor.py").write_text((src / "tinytensor" / "_tensor.py").read_text() + "\n# edited\n")
    r = run(make)
    assert r.returncode == 0 and "SETUP" not in r.stdout
    assert (out / "tinytensor" / "_tensor.py").read_text().endswith("# edited\n")

    r = run(make + ["CFLAGS=-O2 -g"])
    assert r.returncode == 0 and "SETUP" in r.stdout, r.stderr
    assert {optimization(p) for so in sos for p in producers(so)} == {"2"}

    r = run(make + ["clean"])
    assert r.returncode == 0, r.stderr
    assert not out.exists()


# ---- source-level debugging works, which is the sample's reason to be

def test_gdb_stops_on_the_add_loop_with_the_whole_stack(root_dir):
    line = marked_line("csrc/core/tt_native_cpu.c", "add loop")
    r = run(gdb_batch(f"break tt_native_cpu.c:{line}", "run", "bt",
                      args=[PYTHON, str(root_dir / "samples" / "tinytensor_walkthrough.py")]),
            env=tt_env(), timeout=SLOW)
    assert "add_kernel_float64 (" in r.stdout and f"csrc/core/tt_native_cpu.c:{line}" in r.stdout, r.stdout + r.stderr
    frames = re.findall(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+)", r.stdout, re.M)
    assert frames[:5] == ["add_kernel_float64", "tt_native_add", "tt_ops_add_call", "tt_pytensor_add",
                          "binary_op1"], frames
    assert "_PyEval_EvalFrameDefault" in frames

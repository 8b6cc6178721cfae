"""What the tests of C++ exceptions, typed arguments and tensors share: a
program that calls at::_ops::add_Tensor::call with tensors of every kind
the issue names, printing what torch says of each first, and the check of
a decoded tensor against it."""

ADD_CASES = r"""
import json, torch
def info(t):
    return {"impl": t._cdata, "sizes": list(t.shape), "strides": list(t.stride()),
            "dtype": str(t.dtype).replace("torch.", ""), "storage_offset": t.storage_offset(),
            "requires_grad": t.requires_grad,
            "values": [[v.real, v.imag] if isinstance(v, complex) else v
                       for v in t.detach().flatten()[:8].tolist()]}
base = torch.arange(20, dtype=torch.float32)
cases = [
    ("float32", torch.arange(6, dtype=torch.float32).reshape(2, 3), torch.ones(2, 3), 2.5),
    ("float64", torch.full((2, 2), 0.25, dtype=torch.float64), torch.ones(2, 2, dtype=torch.float64), 0.5),
    ("int64", torch.tensor([7, -8, 9]), torch.tensor([1, 1, 1]), 3),
    ("bool", torch.tensor([True, False, True, False]), torch.tensor([False, False, True, True]), True),
    ("transposed", torch.arange(12, dtype=torch.float32).reshape(3, 4).t(), torch.ones(4, 3), 1.0),
    ("zero-size", torch.empty(0, 3), torch.empty(0, 3), 1.0),
    ("storage-offset", base[5:9], base[10:14], -1.0),
    ("requires-grad", torch.ones(2, requires_grad=True), torch.full((2,), 3.0), 1.0),
    ("complex64", torch.tensor([1 + 2j, -3j], dtype=torch.complex64), torch.ones(2, dtype=torch.complex64), 2.0),
]
for name, x, y, alpha in cases:
    print("CASE " + json.dumps({"name": name, "x": info(x), "y": info(y), "alpha": alpha}), flush=True)
    torch.add(x, y, alpha=alpha)
print("DONE", flush=True)
"""


def check_tensor(got, want):
    for key in ("sizes", "strides", "dtype", "storage_offset", "requires_grad"):
        assert got[key] == want[key], (key, got, want)
    assert got["device"] == "cpu"
    assert int(got["impl"], 16) == want["impl"]
    assert got["values"] == want["values"], (got, want)

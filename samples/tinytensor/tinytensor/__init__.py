"""tinytensor: a tiny tensor library laid out like PyTorch, to step through.

    >>> import tinytensor
    >>> tinytensor.ones(2) + 1
    tensor([2., 2.])

The layers are torch's, in miniature (see samples/README.md):

    tinytensor/__init__.py, _tensor.py   Python: the API      (torch/__init__.py, torch/_tensor.py)
    tinytensor/_C...so                   the extension stub   (torch/_C...so, torch/csrc/stub.c)
    tinytensor/lib/libtt_python.so       Python bindings      (libtorch_python.so, torch/csrc/)
    tinytensor/lib/libtt_core.so         tensors, dispatcher, kernels
                                                              (libc10.so, libtorch_cpu.so: c10/, aten/)

Tensors are float64 or int64, on the "cpu" or the shape-only "meta" device.
"""
from tinytensor import _C
from tinytensor._C import from_blob, full, ones, tensor, zeros
from tinytensor._tensor import Tensor

# Results of C functions are wrapped in tinytensor.Tensor from now on, as
# torch._C learns about torch.Tensor while 'import torch' runs.
_C._set_tensor_class(Tensor)

__all__ = ["Tensor", "add", "apply", "from_blob", "full", "matmul", "mul",
           "ones", "tensor", "zeros"]


def add(input, other, *, alpha=1):
    """input + alpha * other, broadcast (torch.add)."""
    return input.add(other, alpha=alpha)


def mul(input, other):
    """input * other, broadcast (torch.mul)."""
    return input * other


def matmul(input, other):
    """The matrix product of 1-D and 2-D tensors (torch.matmul)."""
    return input @ other


def apply(input, fn):
    """A new tensor with fn(x) for every element x of input.  The loop runs
    in C and calls fn back for each element (torch's Tensor.apply_)."""
    return input.clone().apply_(fn)

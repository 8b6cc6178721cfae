"""tinytensor.Tensor: the Python half of a tensor (torch/_tensor.py).

Everything that computes is in the C base class, tinytensor._C.TensorBase;
this class adds what is easier to write in Python, as torch.Tensor does
(its __repr__ is in torch/_tensor_str.py).
"""
import math

from tinytensor import _C


class Tensor(_C.TensorBase):
    def __repr__(self):
        if self.device == "meta":
            return f"tensor(..., device='meta', size={self.shape})"
        values = self.tolist()
        return "tensor(" + _format(values, self.dtype, self.ndim) + ")"

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]


def _format(values, dtype, ndim):
    """torch's layout: every number in one width, rows under each other."""
    flat = _flatten(values, ndim)
    texts = _float_texts(flat) if dtype == "float64" else [str(v) for v in flat]
    width = max((len(t) for t in texts), default=0)
    padded = iter(t.rjust(width) for t in texts)
    return _nest(values, ndim, padded, indent=len("tensor("))


def _float_texts(flat):
    finite = [abs(v) for v in flat if math.isfinite(v)]
    if finite and (max(finite) >= 1e8 or 0 < min(finite) < 1e-4):
        spec = ".4e"
    elif all(v.is_integer() for v in finite):
        return [f"{v:.0f}." if math.isfinite(v) else str(v) for v in flat]
    else:
        spec = ".4f"
    return [format(v, spec) if math.isfinite(v) else str(v) for v in flat]


def _flatten(values, ndim):
    if ndim == 0:
        return [values]
    return [x for v in values for x in _flatten(v, ndim - 1)]


def _nest(values, ndim, texts, indent):
    if ndim == 0:
        return next(texts)
    if ndim == 1:
        return "[" + ", ".join(next(texts) for _ in values) + "]"
    # Rows of a matrix on their own lines; blocks of a 3-D tensor apart.
    sep = "," + "\n" * (ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(_nest(v, ndim - 1, texts, indent + 1) for v in values) + "]"

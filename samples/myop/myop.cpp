// samples/myop/myop.cpp: a small torch operator of one's own, the way a
// PyTorch user writes one (torch.utils.cpp_extension), to step into from
// Python: 'tdebug tour extension' walks it at source level.
#include <torch/extension.h>

// a + alpha * b, elementwise.
at::Tensor scaled_add(const at::Tensor &a, const at::Tensor &b, double alpha)
{
    TORCH_CHECK(a.sizes() == b.sizes(), "scaled_add: a and b differ in size");
    at::Tensor scaled = b * alpha;  // TOUR: scaled
    at::Tensor out = a + scaled;    // TOUR: out
    return out;                     // TOUR: return
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.def("scaled_add", &scaled_add, "a + alpha * b", pybind11::arg("a"), pybind11::arg("b"),
          pybind11::arg("alpha") = 1.0);
}

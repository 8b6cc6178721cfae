// samples/myop/myop.cpp: a small torch operator of one's own, the way a
// PyTorch user writes one (torch.utils.cpp_extension), to step into from
// Python: 'tdebug tour extension' walks it at source level.
#include <torch/extension.h>

// The kinds of values torch's C++ API passes around, for a debugger to show
// (gdb's 'info args' here, tdebug's printers): what a and b are, in every form.
__attribute__((noinline)) static int64_t
describe(const c10::optional<at::Tensor> &maybe, const c10::optional<at::Tensor> &none,
         at::TensorList both, c10::IntArrayRef shape, const c10::Scalar &factor,
         c10::ScalarType dtype, c10::Device device, c10::TensorOptions options)
{
    return static_cast<int64_t>(both.size() + shape.size()) + (maybe.has_value() ? 1 : 0) +
           (none.has_value() ? 1 : 0) + (factor.isFloatingPoint() ? 1 : 0) +
           static_cast<int64_t>(dtype) + static_cast<int64_t>(device.type()) +
           (options.has_dtype() ? 1 : 0);  // TOUR: describe
}

// a + alpha * b, elementwise.
at::Tensor scaled_add(const at::Tensor &a, const at::Tensor &b, double alpha)
{
    TORCH_CHECK(a.sizes() == b.sizes(), "scaled_add: a and b differ in size");
    describe(a, c10::nullopt, {a, b}, a.sizes(), c10::Scalar(alpha), a.scalar_type(), a.device(),
             a.options());
    at::Tensor scaled = b * alpha;  // TOUR: scaled
    at::Tensor out = a + scaled;    // TOUR: out
    return out;                     // TOUR: return
}

// A std::vector<at::Tensor> out and in: t's halves along its first
// dimension, and the tensors put back together.
std::vector<at::Tensor> halves(const at::Tensor &t)
{
    std::vector<at::Tensor> parts = t.chunk(2, 0);
    return parts;  // TOUR: halves
}

at::Tensor join(const std::vector<at::Tensor> &parts)
{
    at::Tensor whole = at::cat(parts, 0);
    return whole;  // TOUR: join
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.def("scaled_add", &scaled_add, "a + alpha * b", pybind11::arg("a"), pybind11::arg("b"),
          pybind11::arg("alpha") = 1.0);
    m.def("halves", &halves, "t's halves along its first dimension", pybind11::arg("t"));
    m.def("join", &join, "the tensors put back together", pybind11::arg("parts"));
}

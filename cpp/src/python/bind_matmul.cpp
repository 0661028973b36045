// hetnn._core: matmul (core/matmul.cpp). Arguments as the user gives them; hetnn._ops applies the placement rule.
#include <string>

#include "core/errors.h"
#include "core/matmul.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hetnn::python {

void bind_matmul(py::module_& m) {
  m.def("activations", &activation_names, "The activations matmul and Dense fuse (the core's list).");
  m.def(
      "matmul",
      [](const Array& a, const Array& b, py::object transpose_a, py::object transpose_b, py::object alpha,
         py::object beta, const Array* out, const Array* bias, py::object activation, py::object precision,
         py::object out_dtype) {
        const char* op = "matmul";
        MatmulArgs args;
        args.trans_a = arg_bool(transpose_a, "transpose_a", op);
        args.trans_b = arg_bool(transpose_b, "transpose_b", op);
        args.alpha = arg_real(alpha, "alpha", op);
        args.beta = arg_real(beta, "beta", op);
        args.bias = bias;
        args.act = arg_activation(activation, op);
        args.precision = arg_precision(precision, op);
        args.out_dtype = arg_dtype(out_dtype, "matmul: out_dtype");
        NoGil nogil;
        return hetnn::matmul(a, b, out, args);
      },
      py::arg("a"), py::arg("b"), py::kw_only(), py::arg("transpose_a") = false, py::arg("transpose_b") = false,
      py::arg("alpha") = 1.0, py::arg("beta") = 0.0, py::arg("out").none(true) = nullptr,
      py::arg("bias").none(true) = nullptr, py::arg("activation") = py::none(), py::arg("precision") = py::none(),
      py::arg("out_dtype") = py::none(),
      R"doc(``act(alpha * op(a) @ op(b) + beta * out + bias)`` where ``op(x)`` is ``x`` or ``x.T`` (``transpose_a/b``).

2-D ``(M, K) @ (K, N) -> (M, N)``, or batched 3-D ``(B, M, K) @ (B, K, N)`` (a batch of 1, or a 2-D operand, is
broadcast). With ``transpose_a`` ``a`` is stored ``(K, M)``; with ``transpose_b`` ``b`` is stored ``(N, K)``.
``beta`` needs ``out`` (the matrix it scales). ``bias`` has shape ``(N,)`` and is added to every row;
``activation`` is None, ``"relu"``, ``"sigmoid"`` or ``"tanh"``: both are fused into the kernel (oneDNN post-ops,
the OpenCL epilogue). float32; float64 on devices with fp64; float16 and bfloat16 (accumulated in float32) on
OpenCL devices and where oneDNN supports them on the CPU (``device.dtypes`` lists what a device takes).
``precision`` (float32 only): None, the one in force (:func:`hetnn.set_matmul_precision`); ``"highest"``, float32
throughout; ``"high"``, TF32 matrix units where the device has them (``device.tf32_mode``). ``out_dtype``: None,
the operands' dtype; ``"float32"`` with float16 or bfloat16 operands gives their float32 accumulation unrounded (then
``out``, ``bias`` and ``beta``'s matrix are float32), as PyTorch's ``mm(..., out_dtype=torch.float32)``.)doc");
}

HETNN_BINDING(2, bind_matmul);

}  // namespace hetnn::python

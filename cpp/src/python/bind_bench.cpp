// hetnn._core: the native benchmark peers (bench/peers.cpp): raw oneDNN matmul and max pooling, CLBlast, the
// CPU's FMA ceiling and STREAM.
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bench/peers.h"
#include "core/array.h"
#include "core/blocked.h"
#include "core/errors.h"

#include "python/bindings.h"

namespace py = pybind11;
using namespace hetnn;
using hetnn::python::NoGil;

namespace hetnn::python {

void bind_bench(py::module_& m) {
  // Native peers for the benchmarks (bench/peers.cpp).
  // The raw oneDNN peer keeps its NumPy operands alive and works in their memory.
  struct RawMatmulPeer {
    py::array a, b, c;
    std::unique_ptr<bench::RawMatmul> impl;
  };
  py::class_<RawMatmulPeer>(m, "_OnednnRawMatmul")
      .def(py::init([](py::array a, py::array b, py::array c) {
             const auto ok = [](const py::array& x, const char* name, bool writable) {
               if (!py::isinstance<py::array_t<float>>(x) || x.ndim() != 2 ||
                   !(x.flags() & py::array::c_style) || (writable && !x.writeable()))
                 throw TypeError(std::string("_OnednnRawMatmul: ") + name + " must be a C-contiguous 2-D float32 " +
                                 (writable ? "writable " : "") + "array");
             };
             ok(a, "a", false);
             ok(b, "b", false);
             ok(c, "c", true);
             if (a.shape(1) != b.shape(0) || c.shape(0) != a.shape(0) || c.shape(1) != b.shape(1))
               throw ValueError("_OnednnRawMatmul: expected a (M, K), b (K, N), c (M, N)");
             auto p = std::make_unique<RawMatmulPeer>(RawMatmulPeer{a, b, c, nullptr});
             p->impl = std::make_unique<bench::RawMatmul>(
                 static_cast<const float*>(a.data()), static_cast<const float*>(b.data()),
                 static_cast<float*>(c.mutable_data()), static_cast<int>(a.shape(0)), static_cast<int>(b.shape(1)),
                 static_cast<int>(a.shape(1)));
             return p;
           }),
           py::arg("a"), py::arg("b"), py::arg("c"))
      .def("run", [](RawMatmulPeer& p) {
        NoGil nogil;
        p.impl->run();
      });
  m.def(
      "_cpu_fma_peak",
      [](int threads, double seconds) {
        NoGil nogil;
        return bench::cpu_fma_peak(threads, seconds);
      },
      py::arg("threads") = 0, py::arg("seconds") = 0.2);
  m.attr("have_clblast") = bench::have_clblast();
  m.def(
      "_stream",
      [](std::size_t bytes_per_array, int repeats) {
        NoGil nogil;
        return bench::stream_copy_triad(bytes_per_array, repeats);
      },
      py::arg("bytes_per_array"), py::arg("repeats") = 5);
  m.def(
      "_stream_kernel",
      [](const std::string& kind, py::array a, py::array b, py::array c, float s) {
        for (const auto& [x, name] : {std::pair<const py::array&, const char*>{a, "a"}, {b, "b"}, {c, "c"}})
          if (!py::isinstance<py::array_t<float>>(x) || !(x.flags() & py::array::c_style))
            throw TypeError(std::string("_stream_kernel: ") + name + " must be a C-contiguous float32 array, got " +
                            py::str(py::type::of(x)).cast<std::string>() + " of dtype " +
                            py::str(x.dtype()).cast<std::string>());
        if (kind != "triad" && kind != "copy" && kind != "read")
          throw ValueError("_stream_kernel: kind must be 'triad', 'copy' or 'read', got '" + kind + "'");
        if (kind != "read" && !a.writeable()) throw ValueError("_stream_kernel: a must be writable");
        if (b.size() != a.size() || c.size() != a.size())
          throw ValueError("_stream_kernel: a, b and c must have the same size, got " + std::to_string(a.size()) +
                           ", " + std::to_string(b.size()) + " and " + std::to_string(c.size()));
        float* pa = kind == "read" ? nullptr : static_cast<float*>(a.mutable_data());
        const float* pb = static_cast<const float*>(b.data());
        const float* pc = static_cast<const float*>(c.data());
        NoGil nogil;
        return bench::stream_kernel(kind, pa, pb, pc, s, static_cast<std::int64_t>(a.size()));
      },
      py::arg("kind"), py::arg("a"), py::arg("b"), py::arg("c"), py::arg("s") = 3.0f,
      "One pass of a STREAM-style kernel over float32 arrays, all threads: 'triad' a = b + s*c, 'copy' a = b, "
      "'read' the sum of b (returned): the host's memory ceiling of one access pattern as a timed case.");
  struct RawMaxPoolPeer {
    py::array x, y;
    std::unique_ptr<bench::RawMaxPool> impl;
  };
  py::class_<RawMaxPoolPeer>(m, "_OnednnRawMaxPool")
      .def(py::init([](py::array x, py::array y, int k, int s, int p, const std::string& layout) {
             for (const auto& [a, name, writable] : {std::tuple<const py::array&, const char*, bool>{x, "x", false},
                                                     std::tuple<const py::array&, const char*, bool>{y, "y", true}})
               if (!py::isinstance<py::array_t<float>>(a) || a.ndim() != 4 || !(a.flags() & py::array::c_style) ||
                   (writable && !a.writeable()))
                 throw TypeError(std::string("_OnednnRawMaxPool: ") + name +
                                 " must be a C-contiguous 4-D float32 array");
             // x's dimensions in (N, C, H, W) order whatever the layout
             const bool nhwc = layout == "nhwc";
             const int N = static_cast<int>(x.shape(0)), C = static_cast<int>(x.shape(nhwc ? 3 : 1));
             const int H = static_cast<int>(x.shape(nhwc ? 1 : 2)), W = static_cast<int>(x.shape(nhwc ? 2 : 3));
             const int OH = (H + 2 * p - k) / std::max(s, 1) + 1, OW = (W + 2 * p - k) / std::max(s, 1) + 1;
             const py::ssize_t want[4] = {N, nhwc ? OH : C, nhwc ? OW : OH, nhwc ? C : OW};
             for (int i = 0; i < 4; ++i)
               if (y.shape(i) != want[i]) throw ValueError("_OnednnRawMaxPool: y has the wrong shape");
             auto peer = std::make_unique<RawMaxPoolPeer>(RawMaxPoolPeer{x, y, nullptr});
             peer->impl = std::make_unique<bench::RawMaxPool>(static_cast<const float*>(x.data()),
                                                              static_cast<float*>(y.mutable_data()), N, C, H, W, k, s,
                                                              p, layout);
             return peer;
           }),
           py::arg("x"), py::arg("y"), py::arg("k"), py::arg("s"), py::arg("p"), py::arg("layout"))
      .def("run", [](RawMaxPoolPeer& peer) {
        NoGil nogil;
        peer.impl->run();
      });
  struct RawConvPeer {
    py::array x, w, y;
    std::unique_ptr<bench::RawConv> impl;
  };
  py::class_<RawConvPeer>(m, "_OnednnRawConv")
      .def(py::init([](py::array x, py::array w, py::array y, int s, int p, bool nchw_io) {
             for (const auto& [a, name, writable] : {std::tuple<const py::array&, const char*, bool>{x, "x", false},
                                                     std::tuple<const py::array&, const char*, bool>{w, "w", false},
                                                     std::tuple<const py::array&, const char*, bool>{y, "y", true}})
               if (!py::isinstance<py::array_t<float>>(a) || a.ndim() != 4 || !(a.flags() & py::array::c_style) ||
                   (writable && !a.writeable()))
                 throw TypeError(std::string("_OnednnRawConv: ") + name + " must be a C-contiguous 4-D float32 array");
             const int N = static_cast<int>(x.shape(0)), C = static_cast<int>(x.shape(1)),
                       H = static_cast<int>(x.shape(2)), W = static_cast<int>(x.shape(3)),
                       O = static_cast<int>(w.shape(0)), k = static_cast<int>(w.shape(2));
             if (w.shape(1) != C || w.shape(3) != k || s < 1 || p < 0 || H + 2 * p < k || W + 2 * p < k)
               throw ValueError("_OnednnRawConv: w must be (O, C, k, k) and fit the padded input");
             const py::ssize_t want[4] = {N, O, (H + 2 * p - k) / s + 1, (W + 2 * p - k) / s + 1};
             for (int i = 0; i < 4; ++i)
               if (y.shape(i) != want[i]) throw ValueError("_OnednnRawConv: y has the wrong shape");
             auto peer = std::make_unique<RawConvPeer>(RawConvPeer{x, w, y, nullptr});
             peer->impl = std::make_unique<bench::RawConv>(static_cast<const float*>(x.data()),
                                                           static_cast<const float*>(w.data()),
                                                           static_cast<float*>(y.mutable_data()), N, C, H, W, O, k, s,
                                                           p, nchw_io);
             return peer;
           }),
           py::arg("x"), py::arg("w"), py::arg("y"), py::arg("stride"), py::arg("padding"),
           py::arg("nchw_io") = false)
      .def("run",
           [](RawConvPeer& peer) {
             NoGil nogil;
             peer.impl->run();
           })
      .def("fetch", [](RawConvPeer& peer) {
        NoGil nogil;
        peer.impl->fetch();
      });
  // A convolution layer as it runs inside a network with device layouts (core/blocked.h).
  py::class_<ResidentConv>(m, "_ResidentConv")
      .def(py::init([](const Array& x, const Array& w, int s, int p) {
             Conv2dArgs args;
             args.stride = {s, s};
             args.padding = {p, p};
             NoGil nogil;
             return std::make_unique<ResidentConv>(x, w, args);
           }),
           py::arg("x"), py::arg("w"), py::arg("stride"), py::arg("padding"))
      .def("run",
           [](ResidentConv& c) {
             NoGil nogil;
             c.run();
           })
      .def("fetch", [](ResidentConv& c) {
        NoGil nogil;
        return c.fetch();
      });
  m.def(
      "_clblast_convgemm",
      [](const Array& x, const Array& w, Array& y, int k, int s, int p, int n_warmup, int n_repeat) {
        NoGil nogil;
        return bench::clblast_convgemm(x, w, y, k, s, p, n_warmup, n_repeat);
      },
      py::arg("x"), py::arg("w"), py::arg("y"), py::arg("k"), py::arg("stride"), py::arg("padding"),
      py::arg("n_warmup"), py::arg("n_repeat"));
  m.def(
      "_clblast_sgemm",
      [](const Array& a, const Array& b, Array& c, int n_warmup, int n_repeat,
         const std::vector<std::pair<std::string, std::size_t>>& params) {
        NoGil nogil;
        return bench::clblast_sgemm(a, b, c, n_warmup, n_repeat, params);
      },
      py::arg("a"), py::arg("b"), py::arg("c"), py::arg("n_warmup"), py::arg("n_repeat"),
      py::arg("params") = std::vector<std::pair<std::string, std::size_t>>{});
}

HETNN_BINDING(2, bind_bench);

}  // namespace hetnn::python

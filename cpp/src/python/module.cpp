// hetnn._core: the pybind11 module. Thin: argument conversion, GIL release around device work, and the mapping of
// hetnn's C++ errors to Python exceptions. Validation lives in the core front (cpp/src/core).
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <tuple>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/onednn/cpu_backend.h"
#include "backend/onednn/cpu_threads.h"
#include "core/cache_dir.h"
#include "bench/peers.h"
#include "core/errors.h"
#include "core/warn.h"
#include "core/matmul.h"
#include "core/pool.h"
#include "python/bindings.h"
#ifdef HETNN_HAVE_OPENCL
#include "backend/opencl/cl_backend.h"
#include "backend/opencl/gemm_tuning.h"
#include "backend/opencl/cl_check.h"
#endif

namespace py = pybind11;
using namespace hetnn;
using hetnn::python::NoGil;

namespace {

py::dict info_dict(const DeviceInfo& i) {
  py::dict d;
  d["id"] = i.id;
  d["kind"] = i.kind;
  d["type"] = i.type;
  d["backend"] = i.backend;
  d["name"] = i.name;
  d["vendor"] = i.vendor;
  d["driver_version"] = i.driver_version;
  d["version"] = i.version;
  d["platform"] = i.platform;
  d["platform_version"] = i.platform_version;
  d["platform_index"] = i.platform_index;
  d["device_index"] = i.device_index;
  d["ordinal"] = i.ordinal;
  d["compute_units"] = i.compute_units;
  d["clock_mhz"] = i.clock_mhz;
  d["global_mem"] = i.global_mem;
  d["local_mem"] = i.local_mem;
  d["max_alloc"] = i.max_alloc;
  d["cache_size"] = i.cache_size;
  d["max_work_group_size"] = i.max_work_group_size;
  d["fp64"] = i.fp64;
  d["fp16"] = i.fp16;
  d["bf16"] = i.bf16;
  d["float16_mode"] = i.f16_mode;
  d["bfloat16_mode"] = i.bf16_mode;
  d["isa"] = i.isa;
  d["threads"] = i.threads;
  d["extensions"] = i.extensions;
  d["identity"] = device_identity(i);
  return d;
}

py::list records_list(const std::vector<OpRecord>& recs) {
  py::list out;
  for (const auto& r : recs)
    out.append(py::make_tuple(r.name, r.host_enqueue, r.start, r.end, r.bytes, r.detail));
  return out;
}

// Raises `type(message)` with extra attributes set on the instance.
void raise_with(PyObject* type, const std::string& message, const py::dict& attrs) {
  py::object exc = py::reinterpret_borrow<py::object>(type)(message);
  for (auto item : attrs) py::setattr(exc, item.first, item.second);
  PyErr_SetObject(type, exc.ptr());
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "hetnn native core: devices, arrays, kernels (oneDNN CPU and OpenCL backends)";
  python::remember_main_thread();

  static py::handle base = PyErr_NewExceptionWithDoc(
      "hetnn.HetnnError", "Base class of hetnn's own errors (driver and compiler failures).", PyExc_RuntimeError,
      nullptr);
  static py::handle cl_error = PyErr_NewExceptionWithDoc(
      "hetnn.OpenCLError", "An OpenCL call failed. Attributes: status (int), status_name, call.", base.ptr(),
      nullptr);
  static py::handle compile_error = PyErr_NewExceptionWithDoc(
      "hetnn.CompileError", "An OpenCL program failed to build. Attributes: log, options, kernel, device.",
      base.ptr(), nullptr);
  m.attr("HetnnError") = base;
  m.attr("OpenCLError") = cl_error;
  m.attr("CompileError") = compile_error;

  // Core warnings become Python warnings (RuntimeWarning), raised with the GIL held.
  hetnn::set_warning_handler([](const std::string& msg) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    if (PyErr_WarnEx(PyExc_RuntimeWarning, ("hetnn: " + msg).c_str(), 1) != 0) PyErr_Clear();
  });

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const OutOfMemory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const OpenCLError& e) {
      py::dict a;
      a["status"] = e.status;
      a["status_name"] = e.status_name;
      a["call"] = e.call;
      raise_with(cl_error.ptr(), e.what(), a);
    } catch (const CompileError& e) {
      py::dict a;
      a["log"] = e.log;
      a["options"] = e.options;
      a["kernel"] = e.kernel;
      a["device"] = e.device;
      raise_with(compile_error.ptr(), e.what(), a);
    } catch (const Error& e) {
      PyErr_SetString(base.ptr(), e.what());
    } catch (const dnnl::error& e) {
      if (e.status == dnnl_out_of_memory)
        PyErr_SetString(PyExc_MemoryError, (std::string("oneDNN: ") + e.what()).c_str());
      else
        PyErr_SetString(base.ptr(), (std::string("oneDNN: ") + e.what()).c_str());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "out of host memory");
    }
  });

  py::class_<Device, DevicePtr>(m, "Device")
      .def_property_readonly("id", &Device::id)
      .def_property_readonly("info",
                             [](const Device& d) {
                               py::dict info = info_dict(d.info());
                               py::list dtypes;  // what arrays (and ops) may hold on this device
                               for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32,
                                               DType::i64, DType::u8, DType::i8})
                                 if (d.supports(t)) dtypes.append(dtype_name(t));
                               info["dtypes"] = dtypes;
                               return info;
                             })
      .def_property_readonly("started", &Device::started)
      .def("synchronize",
           [](Device& d) {
             if (!d.started()) return;
             NoGil nogil;
             d.backend().synchronize();
           })
      .def("first_use_stats",
           [](Device& d) {
             const auto s = d.started() ? d.backend().first_use_stats() : Backend::FirstUseStats{};
             py::dict out;
             out["built"] = s.built;
             out["disk_hits"] = s.disk_hits;
             out["memory_hits"] = s.memory_hits;
             out["seconds"] = s.seconds;
             return out;
           })
      .def("_set_memory_limit", [](Device& d, std::size_t bytes) { d.backend().set_memory_limit(bytes); },
           py::arg("bytes"))
      .def("_set_queue_limit", [](Device& d, std::size_t commands) { d.backend().set_queue_limit(commands); },
           py::arg("commands"))
      .def("release_cached_memory",
           [](Device& d) -> std::size_t {
             if (!d.started()) return 0;
             NoGil nogil;
             return d.backend().release_cached_memory();
           })
      .def("start",
           [](Device& d) {
             NoGil nogil;
             d.backend();
           },
           "Creates the backend (context, queue) now instead of at first use.")
      .def("capture_begin",
           [](Device& d) {
             NoGil nogil;
             return d.backend().capture_begin();
           })
      .def("capture_end", [](Device& d, std::size_t token) {
        std::vector<OpRecord> recs;
        {
          NoGil nogil;
          recs = d.backend().capture_end(token);
        }
        return records_list(recs);
      });

  m.def("devices", [] { return all_devices(); });
  m.def("find_device", &find_device, py::arg("spec"));
  m.def("opencl_status", &opencl_status);
  // Tests: run the CPU device's float16/bfloat16 ops through the converted path on any processor.
  m.def("_force_cpu_half_conversion", &force_cpu_half_conversion, py::arg("on"));
  m.def("describe_devices", &describe_devices);
#ifdef HETNN_HAVE_OPENCL
  m.attr("with_opencl") = true;
#else
  m.attr("with_opencl") = false;
#endif
  const dnnl_version_t* v = dnnl_version();
  m.attr("onednn_version") =
      std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);

  m.def("poison_enabled", &poison_enabled, "Whether HETNN_POISON fills new arrays with NaN bytes.");

  // The ceilings of an OpenCL device for `bench peak`: (FP32 FMA GFLOP/s, triad GB/s).
  m.def(
      "_opencl_peak",
      [](Device& d, std::size_t triad_bytes, int repeats) {
#ifdef HETNN_HAVE_OPENCL
        auto* cl = dynamic_cast<opencl::ClBackend*>(&d.backend());
        if (!cl) throw ValueError("_opencl_peak: " + d.id() + " is not an OpenCL device");
        if (triad_bytes < 4096 || repeats < 1) throw ValueError("_opencl_peak: triad_bytes >= 4096, repeats >= 1");
        NoGil nogil;
        return cl->measure_peak(triad_bytes, repeats);
#else
        throw ValueError("_opencl_peak: hetnn was built without OpenCL");
        return std::pair<double, double>{};
#endif
      },
      py::arg("device"), py::arg("triad_bytes"), py::arg("repeats") = 5);

  // Diagnostics used by the tests: build an OpenCL source; raise the error a status would raise.
  m.def(
      "_build_opencl",
      [](Device& d, const std::string& source, const std::string& options) {
#ifdef HETNN_HAVE_OPENCL
        auto* cl = dynamic_cast<opencl::ClBackend*>(&d.backend());
        if (!cl) throw ValueError("_build_opencl: " + d.id() + " is not an OpenCL device");
        NoGil nogil;
        cl->build_source(source, options);
#else
        throw ValueError("_build_opencl: hetnn was built without OpenCL");
#endif
      },
      py::arg("device"), py::arg("source"), py::arg("options") = "");
#ifdef HETNN_HAVE_OPENCL
  m.def("_raise_opencl_status", [](int status, const std::string& call) { opencl::throw_cl_error(status, call); });
#endif

  // GEMM kernel parameters of an OpenCL device (database entry or tuned override) for a problem of `macs`
  // multiply-adds (-1: the entry for large problems); None on the CPU device.
  m.def(
      "gemm_params",
      [](Device& d, const std::string& dtype, std::int64_t macs) -> py::object {
#ifdef HETNN_HAVE_OPENCL
        if (auto* cl = dynamic_cast<opencl::ClBackend*>(&d.backend())) {
          const auto p = cl->gemm_params(dtype_from_name(dtype), macs);
          return py::make_tuple(p.str(), p.source);
        }
#endif
        return py::none();
      },
      py::arg("device"), py::arg("dtype"), py::arg("macs") = -1);
  m.def(
      "set_gemm_params",
      [](Device& d, const std::string& dtype, const std::string& params, const std::string& source) {
#ifdef HETNN_HAVE_OPENCL
        if (auto* cl = dynamic_cast<opencl::ClBackend*>(&d.backend())) {
          if (params.empty()) {  // "" removes the override: the database decides again
            cl->clear_gemm_params(dtype_from_name(dtype));
            return;
          }
          auto p = opencl::GemmParams::parse(params);
          p.source = source;
          cl->set_gemm_params(dtype_from_name(dtype), p);
          return;
        }
#endif
        throw ValueError("set_gemm_params: " + d.id() + " is not an OpenCL device");
      },
      py::arg("device"), py::arg("dtype"), py::arg("params"), py::arg("source") = "tuned");
  m.def(
      "store_tuned_gemm",  // merges a tuner's result (a JSON object) into <cache>/tuning/gemm.json; returns the path
      [](Device& d, const std::string& dtype, const std::string& entry_json) -> std::string {
#ifdef HETNN_HAVE_OPENCL
        if (d.info().kind == "opencl") return opencl::store_tuned(d.info(), dtype, entry_json);
#endif
        throw ValueError("store_tuned_gemm: " + d.id() + " is not an OpenCL device");
      },
      py::arg("device"), py::arg("dtype"), py::arg("entry_json"));
  m.def(
      "tuning_path", []() -> py::object {
#ifdef HETNN_HAVE_OPENCL
        if (auto p = opencl::tuning_path()) return py::str(*p);
#endif
        return py::none();
      });
  m.def(
      "write_file_atomic",  // the one atomic writer of hetnn's files (temporary file beside it, then rename)
      [](const std::string& path, const py::bytes& data) {
        if (!write_file_atomic(path, std::string(data))) {
          const int err = errno;
          PyErr_SetObject(PyExc_OSError, py::make_tuple(err, std::string("cannot write ") + path +
                                                                  (err ? std::string(": ") + std::strerror(err) : ""))
                                             .ptr());
          throw py::error_already_set();
        }
      },
      py::arg("path"), py::arg("data"));
  m.def("cache_dir", []() -> py::object {  // hetnn's cache directory (not created); None when disabled
    if (auto p = cache_base()) return py::str(*p);
    return py::none();
  });
  m.def(
      "_set_kernel_variant",  // tests: run the GPU-shaped kernels on a CPU OpenCL device, or back ("")
      [](Device& d, const std::string& v) {
#ifdef HETNN_HAVE_OPENCL
        if (auto* cl = dynamic_cast<opencl::ClBackend*>(&d.backend())) return cl->set_kernel_variant(v);
#endif
        throw ValueError("_set_kernel_variant: " + d.id() + " is not an OpenCL device");
      },
      py::arg("device"), py::arg("variant"));
  m.def(
      "_inject_gemm_faults",  // test hook: the next n GEMMs running a tuned override fail as a bad launch would
      [](Device& d, int n) {
#ifdef HETNN_HAVE_OPENCL
        if (auto* cl = dynamic_cast<opencl::ClBackend*>(&d.backend())) return cl->inject_gemm_faults(n);
#endif
        throw ValueError("_inject_gemm_faults: " + d.id() + " is not an OpenCL device");
      },
      py::arg("device"), py::arg("n"));

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
      "set_num_threads",
      [](py::int_ n) {  // any Python int: the range check (and its message) is cpu_threads::set's
        const long long v = PyLong_AsLongLong(n.ptr());
        if (v == -1 && PyErr_Occurred()) {
          PyErr_Clear();
          throw ValueError("set_num_threads: n must be in 1.." + std::to_string(cpu_threads::max_threads()) +
                           ", got " + std::string(py::str(n)));
        }
        cpu_threads::set(v);
      },
      py::arg("n"));
  m.def("get_num_threads", [] { return cpu_threads::get(); });
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
  m.def(
      "_clblast_sgemm",
      [](const Array& a, const Array& b, Array& c, int n_warmup, int n_repeat,
         const std::vector<std::pair<std::string, std::size_t>>& params) {
        NoGil nogil;
        return bench::clblast_sgemm(a, b, c, n_warmup, n_repeat, params);
      },
      py::arg("a"), py::arg("b"), py::arg("c"), py::arg("n_warmup"), py::arg("n_repeat"),
      py::arg("params") = std::vector<std::pair<std::string, std::size_t>>{});

  hetnn::python::bind_array(m);
  hetnn::python::bind_nn(m);

  m.def(
      "matmul",
      [](const Array& a, const Array& b, const Array* out, bool trans_a, bool trans_b, double alpha, double beta,
         const Array* bias, const std::string& activation) {
        MatmulArgs args{trans_a, trans_b, alpha, beta, bias, activation_from_name(activation)};
        NoGil nogil;
        return hetnn::matmul(a, b, out, args);
      },
      py::arg("a"), py::arg("b"), py::arg("out").none(true), py::arg("trans_a"), py::arg("trans_b"),
      py::arg("alpha"), py::arg("beta"), py::arg("bias").none(true) = nullptr, py::arg("activation") = "");
  m.def(
      "matmul_shape",
      [](const Array& a, const Array& b, bool trans_a, bool trans_b) {
        Shape s;
        matmul_plan(a, b, nullptr, MatmulArgs{trans_a, trans_b, 1.0, 0.0}, &s);
        return py::tuple(py::cast(s));
      },
      py::arg("a"), py::arg("b"), py::arg("trans_a"), py::arg("trans_b"),
      "Validates matmul operands and returns the result's shape.");

  // Max pooling. Window parameters arrive as (h, w) pairs, already normalised from int-or-pair by the Python front.
  using Pair = std::array<int, 2>;
  m.def(
      "max_pool2d",
      [](const Array& x, Pair k, Pair s, Pair p, Pair d, bool ceil_mode, bool return_indices, const Array* out,
         const Array* indices_out) -> py::object {
        Array y, idx;
        if (indices_out) idx = *indices_out;
        {
          NoGil nogil;
          y = hetnn::max_pool2d(x, Pool2dArgs{k, s, p, d, ceil_mode}, out,
                                return_indices || indices_out ? &idx : nullptr);
        }
        if (return_indices) return py::make_tuple(y, idx);
        return py::cast(y);
      },
      py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"), py::arg("dilation"),
      py::arg("ceil_mode"), py::arg("return_indices"), py::arg("out").none(true) = nullptr,
      py::arg("indices_out").none(true) = nullptr);
  m.def(
      "max_pool2d_shape",
      [](const Device& dev, const std::vector<std::int64_t>& shape, const std::string& dtype, Pair k, Pair s,
         Pair p, Pair d, bool ceil_mode) {
        const Pool2dDesc pd = pool2d_plan(shape, dtype_from_name(dtype), dev, Pool2dArgs{k, s, p, d, ceil_mode},
                                          "max_pool2d");
        return py::make_tuple(pd.N, pd.C, pd.OH, pd.OW);
      },
      py::arg("device"), py::arg("shape"), py::arg("dtype"), py::arg("kernel"), py::arg("stride"),
      py::arg("padding"), py::arg("dilation"), py::arg("ceil_mode"),
      "Validates max_pool2d arguments and returns the output shape.");
  m.def(
      "max_pool2d_backward",
      [](const Array& gy, const Array& idx, const std::vector<std::int64_t>& input_shape, Pair k, Pair s, Pair p,
         Pair d, bool ceil_mode, const Array* out) {
        NoGil nogil;
        return hetnn::max_pool2d_backward(gy, idx, input_shape, Pool2dArgs{k, s, p, d, ceil_mode}, out);
      },
      py::arg("grad_output"), py::arg("indices"), py::arg("input_shape"), py::arg("kernel"), py::arg("stride"),
      py::arg("padding"), py::arg("dilation"), py::arg("ceil_mode"), py::arg("out").none(true) = nullptr);
}

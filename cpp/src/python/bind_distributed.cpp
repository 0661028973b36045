// The binding of hetnn.distributed's node-local gradient reduction pass (python/hetnn/_shared_reduce.py): one slice
// of every rank's segment of an MPI shared-memory window, summed with weights and written into the segments named,
// in one pass (each element is computed by one rank only, so every replica receives the same bits). The loops:
// backend/cpu/slice_reduce_cpu.cpp.
#include <string>
#include <vector>

#include "backend/cpu/slice_reduce_cpu.h"
#include "core/errors.h"
#include "python/bindings.h"

namespace hetnn::python {
namespace {

template <typename T>
void run(const std::vector<py::array>& sources, const std::vector<double>& weights, std::int64_t lo, std::int64_t hi,
         const std::vector<py::array>& targets) {
  std::vector<const T*> src;
  std::vector<T*> dst;
  for (const py::array& a : sources) src.push_back(static_cast<const T*>(a.data()));
  for (const py::array& a : targets) dst.push_back(static_cast<T*>(const_cast<void*>(a.data())));
  std::vector<T> w(weights.begin(), weights.end());
  NoGil nogil;
  weighted_slice_sum(src, w, dst, lo, hi);
}

void reduce_slices(const std::vector<py::array>& sources, const std::vector<double>& weights, std::int64_t lo,
                   std::int64_t hi, const std::vector<py::array>& targets) {
  const char* what = "hetnn.distributed (shared-memory reduction)";
  if (sources.empty() || sources.size() != weights.size())
    throw ValueError(std::string(what) + ": needs one weight per source, got " + std::to_string(sources.size()) +
                     " sources and " + std::to_string(weights.size()) + " weights");
  const py::dtype dt = sources[0].dtype();
  const bool f32 = dt.is(py::dtype::of<float>()), f64 = dt.is(py::dtype::of<double>());
  if (!f32 && !f64) throw TypeError(std::string(what) + ": float32 or float64 segments only");
  for (const auto* list : {&sources, &targets})
    for (const py::array& a : *list) {
      if (!a.dtype().is(dt) || a.ndim() != 1 || !(a.flags() & py::array::c_style))
        throw TypeError(std::string(what) + ": segments must be 1-D contiguous arrays of one dtype");
      if (lo < 0 || lo > hi || hi > a.shape(0))
        throw ValueError(std::string(what) + ": slice [" + std::to_string(lo) + ", " + std::to_string(hi) +
                         ") outside a segment of " + std::to_string(a.shape(0)));
    }
  for (const py::array& a : targets)
    if (!a.writeable()) throw ValueError(std::string(what) + ": a target segment is read-only");
  if (f32)
    run<float>(sources, weights, lo, hi, targets);
  else
    run<double>(sources, weights, lo, hi, targets);
}

}  // namespace

void bind_distributed(py::module_& m) {
  m.def("_reduce_slices", &reduce_slices, py::arg("sources"), py::arg("weights"), py::arg("lo"), py::arg("hi"),
        py::arg("targets"),
        "targets[q][lo:hi] = sum_k weights[k] * sources[k][lo:hi] for every target q (1-D float32/float64 arrays).");
}

HETNN_BINDING(2, bind_distributed);

}  // namespace hetnn::python

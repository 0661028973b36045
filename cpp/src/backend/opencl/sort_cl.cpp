// sort / argsort on OpenCL devices: kernels/sort.cl's merge sort (gather, log2(len) merge passes, scatter) over
// (key, position) pairs in two pairs of work buffers.
#include <string>
#include <utility>

#include "backend/opencl/cl_args.h"
#include "backend/opencl/cl_backend.h"

namespace hetnn::opencl {

void ClBackend::sort(const SortDesc& d, const Buffer& x, Buffer* values, Buffer* indices) {
  const std::int64_t n = d.outer * d.len * d.inner;
  const std::size_t es = dtype_size(d.dtype), nn = static_cast<std::size_t>(n);
  const std::shared_ptr<Buffer> ka = alloc(nn * es), kb = alloc(nn * es), pa = alloc(nn * 8), pb = alloc(nn * 8);
  std::lock_guard<std::mutex> lock(mu_);
  const std::string opts = std::string("-cl-std=CL1.2 -w -DTIN_") + type_code(d.dtype) + " -DTOUT_" +
                           type_code(d.dtype);
  const std::size_t local = 64, g[1] = {round_up(nn, local)}, l[1] = {local};
  cl_kernel kg = kernel("sort.cl", "sort_gather", opts);
  ArgSetter a{kg, "sort_gather"};
  a(cl_long{n})(cl_long{d.len})(cl_long{d.inner})(mem(x))(mem(*ka))(mem(*pa));
  enqueue("sort", kg, 1, g, l);
  cl_kernel km = kernel("sort.cl", "sort_merge", opts);
  cl_mem keys = mem(*ka), pos = mem(*pa), keys2 = mem(*kb), pos2 = mem(*pb);
  for (std::int64_t width = 1; width < d.len; width *= 2) {
    ArgSetter m{km, "sort_merge"};
    m(cl_long{n})(cl_long{d.len})(cl_long{width})(static_cast<cl_int>(d.descending))(keys)(pos)(keys2)(pos2);
    enqueue("sort:merge", km, 1, g, l);
    std::swap(keys, keys2);
    std::swap(pos, pos2);
  }
  cl_kernel ks = kernel("sort.cl", "sort_scatter", opts);
  ArgSetter s{ks, "sort_scatter"};
  s(cl_long{n})(cl_long{d.len})(cl_long{d.inner})(static_cast<cl_int>(values != nullptr));
  s(static_cast<cl_int>(indices != nullptr))(keys)(pos)(values ? mem(*values) : keys2);
  s(indices ? mem(*indices) : pos2);
  enqueue("sort", ks, 1, g, l);
}

void ClBackend::searchsorted(const SearchDesc& d, const Buffer& sorted, const Buffer& v, Buffer& out) {
  std::lock_guard<std::mutex> lock(mu_);
  cl_kernel k = kernel("sort.cl", "searchsorted", std::string("-cl-std=CL1.2 -w -DTIN_") + type_code(d.dtype) +
                                                      " -DTOUT_" + type_code(d.dtype));
  ArgSetter a{k, "searchsorted"};
  a(cl_long{d.n})(cl_long{d.m})(static_cast<cl_int>(d.right))(mem(sorted))(mem(v))(mem(out));
  const std::size_t local = 64, g[1] = {round_up(static_cast<std::size_t>(d.m), local)}, l[1] = {local};
  enqueue("searchsorted", k, 1, g, l);
}

}  // namespace hetnn::opencl

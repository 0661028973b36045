// float32 matmul on the CPU with the weights (B) in plain row-major order, as hetnn passes them today, against the
// layout oneDNN prefers (format_tag::any, reordered once): one of issue 37's levers, measured per ResNet-50 shape.
// Interleaved rounds; per shape the median GFLOP/s of each, the time ratio plain / preferred with its range over the
// rounds, and the reorder's own time (what a cache of reordered weights must amortise: calls to break even).
// Build and run (scripts/cpu_session.sh, stage layouts, does both):
//   g++ -O2 -std=c++17 -I.venv/include scripts/onednn_weight_layouts.cpp -L.venv/lib -ldnnl -Wl,-rpath,$PWD/.venv/lib
#include "onednn_bench_common.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

int main() {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const dnnl_version_t* v = dnnl_version();
  std::printf("oneDNN %d.%d.%d; M x N x K; 9 interleaved rounds\n", v->major, v->minor, v->patch);
  const int shapes[][3] = {{12544, 64, 147}, {3136, 64, 64},   {3136, 64, 576},  {3136, 256, 64},  {3136, 64, 256},
                           {3136, 128, 256}, {784, 128, 1152}, {784, 512, 128},  {784, 512, 256},  {784, 128, 512},
                           {784, 256, 512},  {196, 256, 2304}, {196, 1024, 256}, {196, 1024, 512}, {196, 256, 1024},
                           {196, 512, 1024}, {49, 512, 4608},  {49, 2048, 512},  {49, 2048, 1024}, {49, 512, 2048},
                           {2048, 2048, 2048}};
  for (const auto& sh : shapes) {
    const memory::dim M = sh[0], N = sh[1], K = sh[2];
    const memory::desc a({M, K}, dt::f32, tag::ab), b({K, N}, dt::f32, tag::ab), c({M, N}, dt::f32, tag::ab);
    std::vector<float> A(static_cast<size_t>(M * K), 0.5f), B(static_cast<size_t>(K * N), 0.25f),
        C(static_cast<size_t>(M * N));
    memory ma(a, eng, A.data()), mb(b, eng, B.data()), mc(c, eng, C.data());
    const dnnl::matmul::primitive_desc plain(eng, a, b, c);
    const dnnl::matmul::primitive_desc pref(eng, a, memory::desc({K, N}, dt::f32, tag::any), c);
    memory mb_pref(pref.weights_desc(), eng);
    dnnl::reorder to_pref(mb, mb_pref);
    const dnnl::matmul p_plain(plain), p_pref(pref);
    const double flop = 2.0 * static_cast<double>(M * N * K);
    const int reps = static_cast<int>(std::max(3.0, 4e10 / flop));
    std::vector<double> t_plain, t_pref, t_reorder, ratio;
    for (int r = 0; r < 9; ++r) {
      for (int which = 0; which < 2; ++which) {
        const auto& prim = which ? p_pref : p_plain;
        memory& w = which ? mb_pref : mb;
        prim.execute(s, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, mc}});
        s.wait();
        const double t0 = seconds();
        for (int i = 0; i < reps; ++i) prim.execute(s, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, mc}});
        s.wait();
        (which ? t_pref : t_plain).push_back((seconds() - t0) / reps);
      }
      ratio.push_back(t_plain.back() / t_pref.back());
      const double t0 = seconds();
      to_pref.execute(s, mb, mb_pref);
      s.wait();
      t_reorder.push_back(seconds() - t0);
    }
    std::sort(ratio.begin(), ratio.end());
    const double gain = median(t_plain) - median(t_pref);
    char amortise[32] = "never";
    if (gain > 0) std::snprintf(amortise, sizeof amortise, "%.1f", median(t_reorder) / gain);
    std::printf("%5lldx%4lldx%4lld  plain %6.1f GFLOP/s  preferred %6.1f GFLOP/s (%s)  plain/preferred %.2fx "
                "(%.2f-%.2f)  reorder %.3f ms, calls to amortise %s\n",
                static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(K),
                flop / median(t_plain) / 1e9, flop / median(t_pref) / 1e9, pref.impl_info_str(), ratio[4], ratio[0],
                ratio[8], median(t_reorder) * 1e3, amortise);
    std::fflush(stdout);
  }
  return 0;
}

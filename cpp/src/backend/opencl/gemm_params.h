// GEMM kernel parameters per device: which member of the kernel family runs (packed for CPU devices, tiled or
// vtiled for GPUs, mma for float16/bfloat16 on matrix units) and its tunables, passed to the .cl files as -D options. Looked up device name -> vendor -> device type ->
// default (like CLBlast's database); a tuned entry from the user cache (python -m hetnn tune gemm) overrides.
#pragma once
#include <cstdint>
#include <string>

#include "backend/extensions.h"
#include "core/device.h"
#include "core/dtype.h"

namespace hetnn::opencl {

struct GemmParams {
  enum class Family { packed, tiled, vtiled, mma } family = Family::tiled;
  // packed (gemm_packed.cl): RM x (VW*NV) register tile per work item; a work-group of LX x LY work items (LX = 0:
  // the runtime chooses) runs on one CPU thread, so its A and B panels are reused from cache LY and LX times
  int rm = 8, vw = 16, nv = 2, lx = 0, ly = 1, ku = 1;  // ly: work items per group along N; ku: k-loop unroll
  int pack_a = 1, pack_b = 1;  // 0: read the operand in place when its layout allows (float32/64)
  // tiled (gemm.cl): TS_M x TS_N tile per work-group, TS_K deep slices in local memory, WPT_M x WPT_N per work item
  int ts_m = 64, ts_n = 64, ts_k = 16, wpt_m = 4, wpt_n = 4;
  // vtiled (gemm_vtiled.cl): the tiled parameters, plus the widths of the register tile's vectors along M and N
  // (local-memory reads and C stores); double-buffered slices, vector global loads where the layout allows
  int vwm = 4, vwn = 4;
  // vtiled: 0, or stream-K over sk x compute-units work-groups for single products whose tile count is not a
  // multiple of that (the slices of all tiles dealt out evenly; parts of tiles added by a fixup pass)
  int sk = 0;
  // mma (gemm_mma.cl, float16/bfloat16, and float32 as tf32): the TS_M x TS_N x TS_K tiles, computed by WM x WN
  // warps of 32 work items
  int wm = 2, wn = 4;
  int lm = 0;  // mma: 1 loads the fragments with ldmatrix (NVIDIA's instruction; ignored by the emulation)
  // mma: 0 stages each slice through registers into two local buffers; 2-4 keeps a ring of st local buffers
  // filled st - 1 slices ahead by asynchronous copies (cp.async on sm_80 and newer; plain copies elsewhere)
  int st = 0;
  // mma: 1 computes with Hopper's warpgroup instruction (wgmma, sm_90a): wm warpgroups of 128 work items along M
  // (wn = 1), ts_n 64, 128 or 256, a ring of st = 3..8 slices in core-matrix layout (gemm_mma.cl, WG)
  int wg = 0;
  std::string source;  // where the entry came from: "database:<match>", "tuned", "default"
  std::int64_t max_macs = -1;  // applies to problems of at most this many multiply-adds (M*N*K); -1: any size

  // The tiled families' tile fitted to an M x N output: halved along a dimension while the problem fills at most
  // half of it (H200, 64 x 100352 x 576: a 128 x 128 tile with 8 x 8 per work item ran 0.44x cuBLAS's speed, the
  // same as 64 x 128 0.77x). The work per item and the vector widths stay; packed parameters are returned as given.
  GemmParams fitted(std::int64_t M, std::int64_t N) const;
  int mma_items() const { return wg ? 128 * wm : 32 * wm * wn; }  // an mma member's work-group size
  std::string defines() const;  // "-DRM=8 -DVW=16 ..."
  std::string str() const;      // "family=packed rm=8 vw=16 nv=2 lx=0"
  static GemmParams parse(const std::string& text);  // inverse of str(); throws ValueError
  // Throws ValueError for impossible combinations and for tiles beyond the device's limits (REAL of real_bytes;
  // mma_bytes: the mma family's staged elements, 2 for float16/bfloat16, 4 for tf32).
  void validate(const DeviceInfo& dev, std::size_t real_bytes = 4, std::size_t mma_bytes = 2) const;
  void validate(const DeviceInfo& dev, GemmType t) const {
    validate(dev, t.dtype == DType::f64 ? 8 : 4, t.tf32 ? 4 : 2);
  }
  // ValueError where the family cannot compute t: mma only float16, bfloat16 and tf32; tf32 only mma (the others
  // compute float32 exactly: float32's parameters are theirs)
  void check_dtype(GemmType t) const;
};

// `macs` = M*N*K of the problem (entries may be limited to small problems); -1 for "any" (the large entry).
// matrix_units: whether the device's matrix-unit path passed its probe (else mma entries are skipped).
// warpgroup: whether entries with wg=1 may apply (the device's warpgroup probe passed).
GemmParams gemm_database_lookup(const DeviceInfo& dev, GemmType type, std::int64_t macs = -1,
                                bool matrix_units = false, bool warpgroup = false);

}  // namespace hetnn::opencl

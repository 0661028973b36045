#include "backend/opencl/gemm_params.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

#include "backend/extensions.h"
#include "core/errors.h"

namespace hetnn::opencl {

namespace {

// match: "arch:<architecture>" (exact: "sm_90", "gfx90a"), "name:<substring>", "vendor:<substring>",
// "type:<cpu|gpu|accelerator>" (case-insensitive), "*" default. Entries are tried in order (architecture, then name,
// vendor, type, default); the first matching one for the dtype wins.
struct Entry {
  const char* match;
  GemmType type;
  const char* params;
  const char* note;            // how it was chosen
  std::int64_t max_macs = -1;  // applies to problems of at most this many multiply-adds (M*N*K); -1: any size
};

const Entry kDatabase[] = {
    // PoCL and other CPU runtimes: packed, register-tiled, explicit vectors (measured on PoCL 3.1, 2-core Xeon).
    // Small problems (the ResNet-50 layers at batch 1, up to ~1.2e8 multiply-adds): one work item per work-group and
    // a smaller tile spread the few tiles over the threads (tuner on the 20 ResNet-50 shapes: 149.9 GFLOP/s against
    // 102.2 for the large-problem entry), and the operands are read in place: on these shapes packing cost a third of
    // the time while the GEMM kernel ran as fast on the unpacked operands (20 shapes: 11.5 ms packing + 20.5 ms GEMM
    // against 19.2 ms GEMM alone, hetnn.Timer records).
    {"type:cpu", DType::f32, "family=packed rm=8 vw=16 nv=2 lx=1 ly=1 pack_a=0 pack_b=0",
     "tuned on ResNet-50 bs=1, PoCL 3.1 AVX-512", GemmTuning::kSmallMacs},
    {"type:cpu", DType::f32, "family=packed rm=12 vw=16 nv=2 lx=4 ly=4", "measured at 1024^3-2048^3, PoCL 3.1 AVX-512"},
    {"type:cpu", DType::f64, "family=packed rm=12 vw=8 nv=2 lx=4 ly=4", "measured, PoCL 3.1 AVX-512"},
    {"type:cpu", DType::f16, "family=packed rm=12 vw=16 nv=2 lx=4 ly=4", "as float32 (computes in float32)"},
    {"type:cpu", DType::bf16, "family=packed rm=12 vw=16 nv=2 lx=4 ly=4", "as float32 (computes in float32)"},
    // GPUs. NVIDIA sm_90 (H100, H200; driver 580.159.04, OpenCL 3.0 CUDA 13.0): the vtiled members `python -m hetnn
    // tune gemm` chose on an H200 (2026-11-26, docs/gpu.md), each confirmed interleaved against the tiled entries
    // before them (1.42x on five ResNet-50 shapes, 1.83x at 1024-4096); against cuBLAS in the same session
    // 0.77-0.81x at 1024^3-4096^3, from 0.42-0.53x.
    {"arch:sm_90|name:h100|name:h200", DType::f32, "family=vtiled ts_m=32 ts_n=64 ts_k=16 wpt_m=8 wpt_n=2 vwm=4 vwn=2",
     "tuned on ResNet-50 shapes, H200", GemmTuning::kSmallMacs},
    {"arch:sm_90|name:h100|name:h200", DType::f32,
     "family=vtiled ts_m=128 ts_n=128 ts_k=16 wpt_m=8 wpt_n=8 vwm=4 vwn=4", "tuned at 1024-4096, H200"},
    // Other GPUs: starting points; `python -m hetnn tune gemm` finds better ones. NVIDIA's is the vtiled member
    // that ran 0.68x cuBLAS's speed over the 20 ResNet-50 shapes on an H200 (the tiled one 0.53x).
    {"vendor:nvidia", DType::f32, "family=vtiled ts_m=64 ts_n=64 ts_k=16 wpt_m=4 wpt_n=4 vwm=4 vwn=4",
     "measured on sm_90 only"},
    {"vendor:advanced micro devices", DType::f32, "family=tiled ts_m=64 ts_n=64 ts_k=16 wpt_m=4 wpt_n=4", "untuned"},
    {"vendor:intel", DType::f32, "family=tiled ts_m=32 ts_n=32 ts_k=16 wpt_m=4 wpt_n=4", "untuned"},
    // float16/bfloat16 on NVIDIA's matrix units (mma.sync, sm_80 and newer), where the device's probe passed
    // (ClBackend::matrix_units); elsewhere these entries are skipped and the converted path below runs. sm_90: the
    // pipelined members with ldmatrix, against the vendor entry below in the same interleaved runs on an H200
    // (2026-11-30, docs/gpu.md): up to 1024^3 the 64 x 64 tile with four slices in flight (41.1 against 35.1
    // TFLOP/s at 1024^3), above it the 128 x 128 tile with two (140 against 93 at 2048^3, 172 against 126 at
    // 4096^3, 218 against 134 at 8192^3; bfloat16 209 against 133 at 8192^3). The warpgroup members (wg=1) ran
    // slower than the second (at most 178 TFLOP/s at 8192^3) and are left to the tuner.
    {"arch:sm_90|name:h100|name:h200", DType::f16, "family=mma ts_m=64 ts_n=64 ts_k=32 wm=2 wn=2 lm=1 st=4",
     "measured at 1024^3, H200", std::int64_t{1} << 31},
    {"arch:sm_90|name:h100|name:h200", DType::f16, "family=mma ts_m=128 ts_n=128 ts_k=32 wm=2 wn=2 lm=1 st=2",
     "measured at 2048^3-8192^3, H200"},
    {"arch:sm_90|name:h100|name:h200", DType::bf16, "family=mma ts_m=64 ts_n=64 ts_k=32 wm=2 wn=2 lm=1 st=4",
     "as float16", std::int64_t{1} << 31},
    {"arch:sm_90|name:h100|name:h200", DType::bf16, "family=mma ts_m=128 ts_n=128 ts_k=32 wm=2 wn=2 lm=1 st=2",
     "measured at 8192^3, H200"},
    // tf32 on sm_90: the 64 x 64 tile with ldmatrix up to 1024^3, 128 x 128 above (68.3 against 54.1 TFLOP/s at
    // 2048^3, 83.2 against 68.3 at 4096^3; same run, H200, 2026-11-30)
    {"arch:sm_90|name:h100|name:h200", GemmType(DType::f32, true), "family=mma ts_m=64 ts_n=64 ts_k=16 wm=2 wn=2 lm=1",
     "measured at 1024^3, H200", std::int64_t{1} << 31},
    {"arch:sm_90|name:h100|name:h200", GemmType(DType::f32, true), "family=mma ts_m=128 ts_n=128 ts_k=16 wm=2 wn=2",
     "measured at 2048^3-4096^3, H200"},
    // Other NVIDIA GPUs: the member with the best geometric mean of five, one interleaved run at 1024^3-4096^3 on an
    // H200 (2026-11-27, docs/gpu.md).
    {"vendor:nvidia", DType::f16, "family=mma ts_m=64 ts_n=64 ts_k=32 wm=2 wn=2", "measured on sm_90 only"},
    {"vendor:nvidia", DType::bf16, "family=mma ts_m=64 ts_n=64 ts_k=32 wm=2 wn=2", "as float16"},
    // float32 at precision "high" on the same units (mma.sync m16n8k8 tf32): float16's tile, each slice half as
    // deep in values and as large in bytes. Not yet measured: the GPU sessions' tf32 stage measures it.
    {"vendor:nvidia", GemmType(DType::f32, true), "family=mma ts_m=64 ts_n=64 ts_k=16 wm=2 wn=2", "untuned"},
    {"*", DType::f64, "family=tiled ts_m=32 ts_n=32 ts_k=16 wpt_m=2 wpt_n=2", "default"},
    {"*", DType::f32, "family=tiled ts_m=64 ts_n=64 ts_k=16 wpt_m=4 wpt_n=4", "default"},
    {"*", DType::f16, "family=tiled ts_m=64 ts_n=64 ts_k=16 wpt_m=4 wpt_n=4", "default"},
    {"*", DType::bf16, "family=tiled ts_m=64 ts_n=64 ts_k=16 wpt_m=4 wpt_n=4", "default"},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool matches_one(const std::string& match, const DeviceInfo& dev) {
  if (match == "*") return true;
  const auto colon = match.find(':');
  const std::string what = match.substr(0, colon), pattern = match.substr(colon + 1);
  const std::string field = what == "arch"   ? dev.arch
                            : what == "name" ? dev.name
                            : what == "vendor" ? dev.vendor
                                               : dev.type;
  return what == "type" || what == "arch" ? lower(field) == pattern : lower(field).find(pattern) != std::string::npos;
}

// "a|b": either (a driver that reports no architecture still finds the entry by the device's name)
bool matches(const std::string& match, const DeviceInfo& dev) {
  std::size_t start = 0;
  for (;;) {
    const std::size_t bar = match.find('|', start);
    if (matches_one(match.substr(start, bar - start), dev)) return true;
    if (bar == std::string::npos) return false;
    start = bar + 1;
  }
}

bool pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace

GemmParams GemmParams::fitted(std::int64_t M, std::int64_t N) const {
  GemmParams p = *this;
  if (family == Family::packed || family == Family::mma) return p;
  while (p.ts_m / 2 >= p.wpt_m && M <= p.ts_m / 2) p.ts_m /= 2;
  while (p.ts_n / 2 >= p.wpt_n && N <= p.ts_n / 2) p.ts_n /= 2;
  return p;
}

std::string GemmParams::defines() const {
  std::ostringstream os;
  if (family == Family::packed)
    os << "-DRM=" << rm << " -DVW=" << vw << " -DNV=" << nv << " -DKU=" << ku;
  else if (family == Family::mma)
    os << "-DTS_M=" << ts_m << " -DTS_N=" << ts_n << " -DTS_K=" << ts_k << " -DWM=" << wm << " -DWN=" << wn
       << " -DLM=" << lm << " -DST=" << st << " -DWG=" << wg;
  else
    os << "-DTS_M=" << ts_m << " -DTS_N=" << ts_n << " -DTS_K=" << ts_k << " -DWPT_M=" << wpt_m << " -DWPT_N=" << wpt_n;
  if (family == Family::vtiled) os << " -DVWM=" << vwm << " -DVWN=" << vwn;
  return os.str();
}

std::string GemmParams::str() const {
  std::ostringstream os;
  if (family == Family::packed)
    os << "family=packed rm=" << rm << " vw=" << vw << " nv=" << nv << " lx=" << lx << " ly=" << ly << " ku=" << ku
       << " pack_a=" << pack_a << " pack_b=" << pack_b;
  else if (family == Family::mma)
    os << "family=mma ts_m=" << ts_m << " ts_n=" << ts_n << " ts_k=" << ts_k << " wm=" << wm << " wn=" << wn
       << (lm ? " lm=1" : "") << (st ? " st=" + std::to_string(st) : "") << (wg ? " wg=1" : "");
  else
    os << "family=" << (family == Family::vtiled ? "vtiled" : "tiled") << " ts_m=" << ts_m << " ts_n=" << ts_n
       << " ts_k=" << ts_k << " wpt_m=" << wpt_m << " wpt_n=" << wpt_n;
  if (family == Family::vtiled) os << " vwm=" << vwm << " vwn=" << vwn;
  if (sk) os << " sk=" << sk;
  return os.str();
}

GemmParams GemmParams::parse(const std::string& text) {
  GemmParams p;
  std::istringstream is(text);
  std::string tok;
  std::vector<std::string> given;
  while (is >> tok) {
    const auto eq = tok.find('=');
    if (eq == std::string::npos) throw ValueError("gemm parameters: '" + tok + "' is not key=value");
    const std::string key = tok.substr(0, eq), val = tok.substr(eq + 1);
    if (key == "family") {
      if (val == "packed") p.family = Family::packed;
      else if (val == "tiled") p.family = Family::tiled;
      else if (val == "vtiled") p.family = Family::vtiled;
      else if (val == "mma") p.family = Family::mma;
      else throw ValueError("gemm parameters: family must be packed, tiled, vtiled or mma, got '" + val + "'");
      continue;
    }
    int v = 0;
    try {
      std::size_t used = 0;
      v = std::stoi(val, &used);
      if (used != val.size()) throw std::invalid_argument(val);
    } catch (const std::exception&) {
      throw ValueError("gemm parameters: " + key + " must be an integer, got '" + val + "'");
    }
    int* slot = key == "rm" ? &p.rm : key == "vw" ? &p.vw : key == "nv" ? &p.nv : key == "lx" ? &p.lx : key == "ly" ? &p.ly : key == "ku" ? &p.ku : key == "pack_a" ? &p.pack_a : key == "pack_b" ? &p.pack_b
              : key == "ts_m" ? &p.ts_m : key == "ts_n" ? &p.ts_n : key == "ts_k" ? &p.ts_k
              : key == "wpt_m" ? &p.wpt_m : key == "wpt_n" ? &p.wpt_n : key == "vwm" ? &p.vwm : key == "vwn" ? &p.vwn
              : key == "wm" ? &p.wm : key == "wn" ? &p.wn : key == "lm" ? &p.lm : key == "sk" ? &p.sk
              : key == "st" ? &p.st : key == "wg" ? &p.wg : nullptr;
    if (!slot) throw ValueError("gemm parameters: unknown key '" + key + "'");
    *slot = v;
    given.push_back(key);
  }
  // mma's own defaults (the tiled ones leave a 256-item work-group without whole vectors to move) where not given
  const auto unset = [&](const char* k) { return std::find(given.begin(), given.end(), k) == given.end(); };
  if (p.family == Family::mma) {
    if (unset("ts_m")) p.ts_m = 128;
    if (unset("ts_n")) p.ts_n = 128;
    if (unset("ts_k")) p.ts_k = 32;
  }
  return p;
}

// What a work item may hold in private memory (its accumulators), and what a work-group's items may hold together
// on a CPU-type device, where a work-group runs on one thread's stack: under PoCL `rm=32 vw=16 nv=8 lx=64 ly=64`
// (4096 items x 16 KiB) overflowed it and took the process down in every later process once cached. The tuner's
// and the table's members need at most 2 KiB and 128 KiB.
constexpr std::uint64_t kMaxPrivateBytes = 4096, kMaxGroupPrivateBytes = 256 * 1024;
// Vector multiply-adds unrolled per k step of the packed kernel (ku * rm * nv): its code size, hence its build time
// (`ku=16` with `rm=32 nv=8` took 70-88 s under PoCL; the tuner's members are at most 32).
constexpr int kMaxUnrolledFmas = 256;

void GemmParams::validate(const DeviceInfo& dev, std::size_t real_bytes, std::size_t mma_bytes) const {
  auto fail = [&](const std::string& why) { throw ValueError("gemm parameters '" + str() + "': " + why); };
  auto check_private = [&](std::uint64_t per_item, std::uint64_t items) {
    if (per_item > kMaxPrivateBytes)
      fail("a work item's accumulators need " + std::to_string(per_item) + " bytes of private memory; at most " +
           std::to_string(kMaxPrivateBytes) + " are allowed");
    if (dev.type == "cpu" && per_item * items > kMaxGroupPrivateBytes)
      fail("a work-group's accumulators need " + std::to_string(per_item * items) + " bytes on one CPU thread's " +
           "stack; at most " + std::to_string(kMaxGroupPrivateBytes) + " are allowed on a CPU device");
  };
  if (sk && family != Family::vtiled) fail("sk (stream-K) is a vtiled parameter");
  if (st && family != Family::mma) fail("st (pipeline stages) is an mma parameter");
  if (wg && family != Family::mma) fail("wg (the warpgroup instruction) is an mma parameter");
  if (family == Family::packed) {
    if (rm < 1 || rm > 32) fail("rm must be in 1..32");
    if (vw != 1 && vw != 2 && vw != 4 && vw != 8 && vw != 16) fail("vw must be 1, 2, 4, 8 or 16");
    if (nv < 1 || nv > 8) fail("nv must be in 1..8");
    if (lx < 0 || static_cast<std::uint64_t>(lx) > dev.max_work_group_size) fail("lx exceeds the work-group size");
    if (ku < 1 || ku > 16) fail("ku must be in 1..16");
    if ((pack_a != 0 && pack_a != 1) || (pack_b != 0 && pack_b != 1)) fail("pack_a and pack_b must be 0 or 1");
    if (ly < 1 || (lx == 0 && ly != 1)) fail("ly must be >= 1, and 1 when lx = 0");
    if (static_cast<std::uint64_t>(lx) * ly > dev.max_work_group_size) fail("lx * ly exceeds the work-group size");
    if (ku * rm * nv > kMaxUnrolledFmas)
      fail("ku * rm * nv = " + std::to_string(ku * rm * nv) + " unrolled multiply-adds per step; at most " +
           std::to_string(kMaxUnrolledFmas) + " are allowed (the build time grows with them)");
    check_private(static_cast<std::uint64_t>(rm) * vw * nv * real_bytes,
                  static_cast<std::uint64_t>(std::max(lx, 1)) * ly);
  } else if (family == Family::mma) {
    for (int v : {ts_m, ts_n, ts_k, wm, wn})
      if (!pow2(v)) fail("ts_m, ts_n, ts_k, wm and wn must be powers of two");
    if (ts_m > 256 || ts_n > 256 || ts_k > 128) fail("ts_m and ts_n must be at most 256, ts_k at most 128");
    if (wm > 8 || wn > 8) fail("wm and wn must be at most 8");
    const int depth = mma_bytes == 4 ? 8 : 16, per_vec = 16 / static_cast<int>(mma_bytes);  // values a 16-byte vector
    if (ts_k < depth) fail("ts_k must be at least " + std::to_string(depth) + " (the instruction's depth)");
    if (lm != 0 && lm != 1) fail("lm must be 0 or 1");
    if (wg != 0 && wg != 1) fail("wg must be 0 or 1");
    if (wg) {
      // gemm_mma.cl's WG: m64 steps per warpgroup, one instruction as wide as the tile (a generated form per ts_n),
      // a ring deep enough to copy ahead of the slice in flight
      if (mma_bytes != 2) fail("wg=1 computes float16 and bfloat16 (the warpgroup instruction has no tf32 form here)");
      if (wn != 1 || wm > 2) fail("wg=1 takes wm = 1 or 2 warpgroups and wn = 1");
      if (ts_n != 64 && ts_n != 128 && ts_n != 256) fail("wg=1 needs ts_n of 64, 128 or 256");
      if (ts_m % (64 * wm)) fail("wg=1 needs ts_m a multiple of 64 * wm");
      if (st < 3 || st > 8) fail("wg=1 needs st (its ring of slices) in 3..8");
      if (lm) fail("wg=1 reads its operands from local memory itself (lm must be 0)");
      if (ts_m / wm / 64 * ts_n / 2 > 128) fail("wg=1: at most 128 accumulators a work item (ts_m / wm / 64 * ts_n / 2)");
      const std::uint64_t items = static_cast<std::uint64_t>(mma_items());
      if ((static_cast<std::uint64_t>(ts_m) * ts_k / 8) % items || (static_cast<std::uint64_t>(ts_n) * ts_k / 8) % items)
        fail("ts_m * ts_k / 8 and ts_n * ts_k / 8 must be multiples of the work-group size (" +
             std::to_string(items) + ")");
      if (items > dev.max_work_group_size)
        fail("work-group of " + std::to_string(items) + " exceeds the device's maximum");
      const std::uint64_t local = static_cast<std::uint64_t>(st) * (ts_m + ts_n) * ts_k * 2;
      if (dev.local_mem && local > dev.local_mem)
        fail("its tiles need " + std::to_string(local) + " bytes of local memory, the device has " +
             std::to_string(dev.local_mem));
      return;
    }
    if (st != 0 && (st < 2 || st > 4)) fail("st must be 0 or 2..4");
    if (ts_m % (16 * wm) || ts_n % (8 * wn))
      fail("each warp needs whole 16 x 8 tiles: ts_m a multiple of 16 * wm, ts_n of 8 * wn");
    const std::uint64_t wg = 32u * static_cast<std::uint64_t>(wm) * wn;
    // every work item moves whole 16-byte vectors of each slice
    if ((static_cast<std::uint64_t>(ts_m) * ts_k / per_vec) % wg ||
        (static_cast<std::uint64_t>(ts_n) * ts_k / per_vec) % wg)
      fail("ts_m * ts_k / " + std::to_string(per_vec) + " and ts_n * ts_k / " + std::to_string(per_vec) +
           " must be multiples of the work-group size (" + std::to_string(wg) + ")");
    if (wg > dev.max_work_group_size) fail("work-group of " + std::to_string(wg) + " exceeds the device's maximum");
    // two slices (st of them in a ring) in either layout (gemm_mma.cl: rows padded by 8 values, 4 along K for tf32)
    const std::uint64_t pad_k = mma_bytes == 4 ? 4 : 8;
    const auto slice = [&](std::uint64_t mn) {
      return std::max(mn * (ts_k + pad_k), static_cast<std::uint64_t>(ts_k) * (mn + 8));
    };
    const std::uint64_t local = static_cast<std::uint64_t>(st ? st : 2) * (slice(ts_m) + slice(ts_n)) * mma_bytes;
    if (dev.local_mem && local > dev.local_mem)
      fail("its tiles need " + std::to_string(local) + " bytes of local memory, the device has " +
           std::to_string(dev.local_mem));
    check_private(static_cast<std::uint64_t>(ts_m / wm) * (ts_n / wn) * 4 / 32, wg);  // float accumulators a lane
  } else {
    for (int v : {ts_m, ts_n, ts_k, wpt_m, wpt_n})
      if (!pow2(v)) fail("tile sizes must be powers of two");
    // bounds before any product, which could overflow (a tile of 2^20 x 2^30 must be refused, not multiplied)
    if (ts_m > 1024 || ts_n > 1024 || ts_k > 1024) fail("ts_m, ts_n and ts_k must be at most 1024");
    if (wpt_m > 32 || wpt_n > 32) fail("wpt_m and wpt_n must be at most 32");
    if (ts_m % wpt_m || ts_n % wpt_n) fail("ts_m/ts_n must be multiples of wpt_m/wpt_n");
    const std::uint64_t wg = static_cast<std::uint64_t>(ts_m / wpt_m) * (ts_n / wpt_n);
    if (family == Family::vtiled) {
      if (sk < 0 || sk > 16) fail("sk must be in 0..16");
      for (int v : {vwm, vwn})
        if (v != 1 && v != 2 && v != 4 && v != 8) fail("vwm and vwn must be 1, 2, 4 or 8");
      if (wpt_m % vwm || wpt_n % vwn) fail("wpt_m/wpt_n must be multiples of vwm/vwn");
      // every work item moves the same number of elements of each slice
      if ((static_cast<std::uint64_t>(ts_m) * ts_k) % wg || (static_cast<std::uint64_t>(ts_n) * ts_k) % wg)
        fail("ts_m * ts_k and ts_n * ts_k must be multiples of the work-group size (" + std::to_string(wg) + ")");
    }
    const std::uint64_t buffers = family == Family::vtiled ? 2 : 1;  // vtiled double-buffers its slices
    const std::uint64_t local = buffers * ts_k * (ts_m + ts_n) * real_bytes;
    if (dev.local_mem && local > dev.local_mem)
      fail("its tiles need " + std::to_string(local) + " bytes of local memory, the device has " +
           std::to_string(dev.local_mem));
    if (wg > dev.max_work_group_size) fail("work-group of " + std::to_string(wg) + " exceeds the device's maximum");
    check_private(static_cast<std::uint64_t>(wpt_m) * wpt_n * real_bytes, wg);
  }
}

void GemmParams::check_dtype(GemmType t) const {
  if (family == Family::mma && !t.matrix_units_possible())
    throw ValueError("gemm parameters '" + str() + "': family=mma computes float16 and bfloat16 only (and float32 " +
                     "as tf32, at precision 'high'), not " + t.name());
  if (t.tf32 && family != Family::mma)
    throw ValueError("gemm parameters '" + str() + "' for tf32: only family=mma computes in tf32; the other " +
                     "families compute float32 exactly and take float32's parameters");
}

GemmParams gemm_database_lookup(const DeviceInfo& dev, GemmType type, std::int64_t macs, bool matrix_units,
                                bool warpgroup) {
  for (const auto& e : kDatabase) {
    if (!(e.type == type) || !matches(e.match, dev)) continue;
    if (e.max_macs >= 0 && (macs < 0 || macs > e.max_macs)) continue;
    GemmParams p = GemmParams::parse(e.params);
    if (p.family == GemmParams::Family::mma && (!matrix_units || (p.wg && !warpgroup))) continue;
    p.source = std::string("database:") + e.match + " (" + e.note + ")";
    p.max_macs = e.max_macs;
    if (p.family == GemmParams::Family::tiled || p.family == GemmParams::Family::vtiled) {  // to the device's limit
      while (static_cast<std::uint64_t>(p.ts_m / p.wpt_m) * (p.ts_n / p.wpt_n) > dev.max_work_group_size &&
             p.ts_m > p.wpt_m) {
        p.ts_m /= 2;
        p.ts_n /= 2;
      }
    }
    return p;
  }
  GemmParams p;
  p.source = "default";
  return p;
}

}  // namespace hetnn::opencl

// Which of oneDNN's two float32 GEMMs a flat product takes on the CPU device: the matmul primitive (brgemm kernels,
// B copied into blocks on every call) or dnnl_sgemm (oneDNN's JIT GEMM, packing both operands itself). A table of
// processor families, each with the shape classes measured to run faster through dnnl_sgemm
// (scripts/onednn_gemm_paths.cpp, interleaved); the matmul primitive everywhere else.
#pragma once

#include <cstdint>
#include <string>

namespace hetnn {

enum class CpuGemm { matmul, sgemm };

// The path for a float32 product of M x N x K (no batch) on this processor.
CpuGemm cpu_gemm_path(std::int64_t M, std::int64_t N, std::int64_t K);

// The rule in force, in words (hetnn._core._cpu_gemm_rule(); cpu_session.sh prints it).
std::string cpu_gemm_rule();

// Test hook: "auto" (the table), or "matmul" / "sgemm" for every float32 product either can take, so that tests run
// both paths on any processor. Throws ValueError for anything else.
void force_cpu_gemm_path(const std::string& path);

}  // namespace hetnn

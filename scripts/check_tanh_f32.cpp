// Every float32 of [0, 10) through the CPU device's float-lane tanh (vec_functions.h tanh16) against tanh in double
// rounded to float32; then the negatives' signs and a few specials. Prints how many results differ and how many by
// more than 1 ulp (exit status 1 if any); an argument N checks every N-th block of 16 (tests/test_elementwise.py:
// every 61st). Build it for each x86-64 level hetnn's loops are cloned for:
//   g++ -O2 -std=c++17 -fopenmp -Wno-psabi -march=x86-64-v4 -Icpp/src scripts/check_tanh_f32.cpp -o /tmp/t4 && /tmp/t4
//   g++ -O2 -std=c++17 -fopenmp -Wno-psabi -march=x86-64    -Icpp/src scripts/check_tanh_f32.cpp -o /tmp/t1 && /tmp/t1
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/vec_functions.h"

using hetnn::vecfn::F16;

static std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

int main(int argc, char** argv) {
  const std::int64_t stride = argc > 1 ? std::max(1L, std::atol(argv[1])) : 1;
  const std::uint32_t end = bits(10.0f);
  long differ = 0, beyond = 0, checked = 0, sign = 0;
#pragma omp parallel for reduction(+ : differ, beyond, checked, sign) schedule(dynamic, 64)
  for (std::int64_t block = 0; block < std::int64_t{end} / 16; block += stride) {
    float in[16], out[16], neg[16];
    for (int k = 0; k < 16; ++k) {
      const std::uint32_t u = static_cast<std::uint32_t>(block * 16 + k);
      std::memcpy(&in[k], &u, 4);
    }
    F16 v = hetnn::vecfn::load16(in);
    hetnn::vecfn::store(out, hetnn::vecfn::tanh16(v));
    hetnn::vecfn::store(neg, hetnn::vecfn::tanh16(-v));
    for (int k = 0; k < 16; ++k) {
      const float want = static_cast<float>(std::tanh(static_cast<double>(in[k])));
      const std::int64_t d = std::int64_t{bits(out[k])} - std::int64_t{bits(want)};
      differ += d != 0;
      beyond += d > 1 || d < -1;
      sign += bits(neg[k]) != (bits(out[k]) ^ 0x80000000u);
      ++checked;
    }
  }
  float sp[16] = {INFINITY, -INFINITY, 1e30f, -1e30f, 9.0999f, 9.1f, 1.0f, -1.0f, 1.0000001f, 0.99999994f,
                  1e-40f, -1e-40f, 0.0f, -0.0f, 3.0f, 20.0f};
  float so[16];
  hetnn::vecfn::store(so, hetnn::vecfn::tanh16(hetnn::vecfn::load16(sp)));
  int special = 0;
  for (int k = 0; k < 16; ++k) {
    const float want = static_cast<float>(std::tanh(static_cast<double>(sp[k])));
    special += bits(so[k]) != bits(want) && std::fabs(so[k] - want) > 6e-8f * std::fabs(want);
  }
  std::printf("tanh16: %ld float32 of [0, 10): %ld differ from tanh in double rounded (%.2g), %ld by more than 1 "
              "ulp; %ld negatives not the mirror; %d specials off\n",
              checked, differ, static_cast<double>(differ) / static_cast<double>(checked), beyond, sign, special);
  return beyond || sign || special ? 1 : 0;
}

// The CPU device's float-lane float32 functions (vec_functions.h tanh16, atan16, cosh16, sinh16, expm1_16) over
// every float32 of their range (tanh: [0, 10), 1 beyond; the others: [0, inf], expm1 on both sides) against the
// function in double rounded to float32; the negatives (the mirror for odd functions, the same for cosh) and a few
// specials. Prints how many results differ and how many by more than 1 ulp (exit status 1 if any); an argument N
// checks every N-th block of 16 (tests/test_elementwise.py: every 61st). Build it for each x86-64 level hetnn's
// loops are cloned for:
//   g++ -O2 -std=c++17 -fopenmp -Wno-psabi -march=x86-64-v4 -Icpp/src scripts/check_float_lanes.cpp -o /tmp/c4
//   g++ -O2 -std=c++17 -fopenmp -Wno-psabi -march=x86-64    -Icpp/src scripts/check_float_lanes.cpp -o /tmp/c1
//   for f in tanh atan cosh sinh expm1; do /tmp/c4 $f && /tmp/c1 $f; done
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backend/cpu/vec_functions.h"

using hetnn::vecfn::F16;

static std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

enum class Sym { odd, even, none };  // what form(-x) must be: -form(x), form(x), or not checked

template <class Form, class Ref>
static int check(const char* name, Form form, Ref ref, float hi, std::int64_t stride, Sym sym = Sym::odd) {
  const std::int64_t blocks = (std::int64_t{bits(hi)} + 16) / 16;  // hi itself included
  long differ = 0, beyond = 0, checked = 0, sign = 0;
#pragma omp parallel for reduction(+ : differ, beyond, checked, sign) schedule(dynamic, 64)
  for (std::int64_t block = 0; block < blocks; block += stride) {
    float in[16], out[16], neg[16];
    for (int k = 0; k < 16; ++k) {
      const std::uint32_t u = static_cast<std::uint32_t>(std::min<std::int64_t>(block * 16 + k, bits(hi)));
      std::memcpy(&in[k], &u, 4);
    }
    const F16 v = hetnn::vecfn::load16(in);
    hetnn::vecfn::store(out, form(v));
    hetnn::vecfn::store(neg, form(-v));
    for (int k = 0; k < 16; ++k) {
      const float want = static_cast<float>(ref(static_cast<double>(in[k])));
      const std::int64_t d = std::int64_t{bits(out[k])} - std::int64_t{bits(want)};
      differ += d != 0;
      beyond += d > 1 || d < -1;
      if (sym != Sym::none) sign += bits(neg[k]) != (sym == Sym::odd ? bits(out[k]) ^ 0x80000000u : bits(out[k]));
      ++checked;
    }
  }
  float sp[16] = {INFINITY, -INFINITY, 1e30f, -1e30f, 9.0999f, 9.1f, 1.0f, -1.0f, 1.0000001f, 0.99999994f,
                  1e-40f, -1e-40f, 0.0f, -0.0f, 89.4159851f, -89.4159927f};
  float so[16];
  hetnn::vecfn::store(so, form(hetnn::vecfn::load16(sp)));
  int special = 0;
  for (int k = 0; k < 16; ++k) {
    const float want = static_cast<float>(ref(static_cast<double>(sp[k])));
    const std::int64_t d = std::int64_t{bits(so[k])} - std::int64_t{bits(want)};
    special += d > 1 || d < -1;
  }
  std::printf("%s for %ld float32 x of [0, %g]: %ld differ from the function in double rounded (%.2g), %ld by more "
              "than 1 ulp; %ld negatives not as the function's symmetry says; %d specials off\n",
              name, checked, static_cast<double>(hi), differ, static_cast<double>(differ) / checked, beyond, sign,
              special);
  return beyond || sign || special ? 1 : 0;
}

// Every vector form of vec_functions.h on lanes outside its domain (NaN, infinities, huge and tiny values, negative
// arguments of logarithms): a block holding one such element still runs the form on all its lanes before libm's
// results replace those, so the forms must not do anything undefined there. Meant for a build with
// -fsanitize=undefined -fno-sanitize-recover=all (GCC's: it checks the vector lanes' integer arithmetic); prints a
// sum of the results so that nothing is optimised away.
static int edges() {
  using namespace hetnn::vecfn;
  const float f[] = {NAN, -NAN, INFINITY, -INFINITY, 3.4e38f, -3.4e38f, 1e-45f, -1e-45f, 0.0f, -0.0f, 1e10f, -1e10f,
                     100.0f, -100.0f, 1.0f, -1.0f};
  const double d[] = {NAN, INFINITY, -INFINITY, 1.7e308, -1.7e308, 5e-324, -710.0, 800.0};
  alignas(64) float o[16], o8[8];
  double od[8], sum = 0;
  const F16 v = load16(f);
  for (F16 r : {tanh16(v), atan16(v), cosh16(v), sinh16(v), expm1_16(v)}) {
    store(o, r);
    for (float x : o) sum += x;
  }
  for (int half = 0; half < 2; ++half) {
    const F8 a = load(f + 8 * half), b = load(f + 8 * (1 - half));
    for (F8 r : {log8(a), log2_8(a), log10_8(a), log1p8(a), atanh8(a), asinh8(a), acosh8(a), pow8(a, b), sin8(a),
                 cos8(a), tan8(a), atan2_8(a, b), asin8(a), acos8(a), hypot8(a, b)}) {
      store(o8, r);
      for (float x : o8) sum += x;
    }
  }
  const D8 x = load(d);
  for (D8 r : {exp64(x), expm1_64(x), log64(x), log1p64(x), log2_64(x), cosh64(x), cosh64(-x)}) {
    store(od, r);
    for (double y : od) sum += y;
  }
  std::printf("edges: every form ran on lanes outside its domain (sum %g)\n", sum);
  return 0;
}

int main(int argc, char** argv) {
  const std::string fn = argc > 1 ? argv[1] : "";
  if (fn == "edges") return edges();
  const std::int64_t stride = argc > 2 ? std::max(1L, std::atol(argv[2])) : 1;
  using hetnn::vecfn::atan16;
  using hetnn::vecfn::cosh16;
  using hetnn::vecfn::expm1_16;
  using hetnn::vecfn::sinh16;
  using hetnn::vecfn::tanh16;
  if (fn == "tanh") return check("tanh16(x)", [](F16 v) { return tanh16(v); }, [](double x) { return std::tanh(x); },
                                 10.0f, stride);
  if (fn == "atan") return check("atan16(x)", [](F16 v) { return atan16(v); }, [](double x) { return std::atan(x); },
                                 INFINITY, stride);
  if (fn == "cosh") return check("cosh16(x)", [](F16 v) { return cosh16(v); }, [](double x) { return std::cosh(x); },
                                 INFINITY, stride, Sym::even);
  if (fn == "sinh") return check("sinh16(x)", [](F16 v) { return sinh16(v); }, [](double x) { return std::sinh(x); },
                                 INFINITY, stride);
  if (fn == "expm1") {  // no symmetry: [0, inf] and [-inf, 0] each against the reference
    const int pos = check("expm1_16(x)", [](F16 v) { return expm1_16(v); }, [](double x) { return std::expm1(x); },
                          INFINITY, stride, Sym::none);
    return pos | check("expm1_16(-x)", [](F16 v) { return expm1_16(-v); }, [](double x) { return std::expm1(-x); },
                       INFINITY, stride, Sym::none);
  }
  std::fprintf(stderr, "usage: %s tanh|atan|cosh|sinh|expm1 [N: every N-th block of 16] | edges\n", argv[0]);
  return 2;
}

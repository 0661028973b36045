#include "backend/opencl/program_cache.h"

#include <chrono>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "backend/opencl/cl_check.h"
#include "backend/opencl/kernel_sources.h"
#include "core/cache_dir.h"
#include "core/errors.h"
#include "core/warn.h"

namespace hetnn::opencl {

namespace {
const char* embedded(const std::string& file) {
  for (int i = 0; i < kKernelSourceCount; ++i)
    if (file == kKernelSources[i].file) return kKernelSources[i].text;
  throw Error("no embedded OpenCL kernel file '" + file + "'");
}
}  // namespace

std::string kernel_source(const std::string& file, int depth) {
  if (depth > 8) throw Error("OpenCL kernel includes nest too deeply at '" + file + "'");
  std::istringstream in(embedded(file));
  std::string line, out;
  while (std::getline(in, line)) {
    const std::string directive = "#include \"";
    if (line.rfind(directive, 0) == 0) {
      const auto end = line.find('"', directive.size());
      out += kernel_source(line.substr(directive.size(), end - directive.size()), depth + 1);
    } else {
      out += line;
    }
    out += '\n';
  }
  return out;
}

namespace {

constexpr char kMagic[8] = {'H', 'E', 'T', 'N', 'N', 'C', 'L', 'B'};
constexpr std::uint32_t kFormat = 2;

struct BinaryHeader {
  char magic[8];
  std::uint32_t format;
  std::uint32_t reserved;
  std::uint64_t key;
  std::uint64_t length;
  std::uint64_t mac;  // SipHash of key and payload under the cache's secret (cache_secret)
};

// Binds a payload to its key with the directory's secret. A plain checksum let a crafted file (damaged payload,
// checksum recomputed) reach clCreateProgramWithBinary, where PoCL segfaults; only the secret's holder can sign.
std::uint64_t entry_mac(const SipKey& secret, std::uint64_t key, const unsigned char* bin, std::size_t n) {
  std::string msg(reinterpret_cast<const char*>(&key), sizeof key);
  msg.append(reinterpret_cast<const char*>(bin), n);
  return siphash24(secret, msg.data(), msg.size());
}

// A built program's binary for its one device ("" where the driver gives none).
std::string program_binary(cl_program prog) {
  std::size_t size = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS || size == 0)
    return "";
  std::string bin(size, '\0');
  unsigned char* ptrs[1] = {reinterpret_cast<unsigned char*>(bin.data())};
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof ptrs, ptrs, nullptr) != CL_SUCCESS) return "";
  return bin;
}

std::string build_log(cl_program prog, cl_device_id device) {
  std::size_t log_size = 0;
  clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size);
  std::vector<char> log(log_size + 1, '\0');
  clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, log_size, log.data(), nullptr);
  return log.data();
}

// HETNN_RECORD_PROGRAMS=DIR: every program a process builds or loads is written there once, its source as KEY.cl and
// its options (then the file's name) as KEY.opts, so that scripts/ptx_check.py --programs DIR can build each of them
// for NVIDIA GPUs without one. A development aid: failures to write are ignored.
void record_program(std::uint64_t key, const std::string& file, const std::string& source, const std::string& options) {
  const char* dir = std::getenv("HETNN_RECORD_PROGRAMS");
  if (dir == nullptr || *dir == '\0') return;
  const std::string base = std::string(dir) + "/" + hex64(key);
  if (std::FILE* f = std::fopen((base + ".opts").c_str(), "r")) {
    std::fclose(f);
    return;
  }
  if (write_file_atomic(base + ".cl", source)) write_file_atomic(base + ".opts", options + "\n" + file + "\n");
}

}  // namespace

ProgramCache::ProgramCache(cl_context context, cl_device_id device, const DeviceInfo& info)
    : context_(context), device_(device), device_name_(info.name) {
  identity_ = device_identity(info);
}

cl_program ProgramCache::get(const std::string& file, const std::string& options) {
  return fetch(file, options, nullptr);
}

cl_program ProgramCache::get_text(const std::string& label, const std::string& source, const std::string& options) {
  return fetch(label, options, &source);
}

cl_program ProgramCache::fetch(const std::string& file, const std::string& options, const std::string* text) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto mkey = std::make_pair(file, options);
  auto it = programs_.find(mkey);
  if (it != programs_.end()) {
    ++stats_.memory_hits;
    return it->second.get();
  }
  const auto t0 = std::chrono::steady_clock::now();

  const std::string source = text ? *text : kernel_source(file);
  const std::uint64_t key = disk_key(source, options);
  record_program(key, file, source, options);
  const auto dir = cache_dir("kernels");
  const std::string path = dir ? *dir + "/" + hex64(key) + ".clbin" : "";

  const auto secret = dir ? cache_secret(*dir) : std::nullopt;
  Program prog;
  if (secret) prog = load_binary(path, key, *secret, options);
  if (prog) {
    ++stats_.disk_hits;
  } else {
    prog = build_program(context_, device_, source.c_str(), file, options, device_name_);
    if (source.find("//WG:") != std::string::npos) prog = open_hidden(std::move(prog), file, options);
    ++stats_.built;
    if (secret) save_binary(prog.get(), path, key, *secret);
  }
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return programs_.emplace(mkey, std::move(prog)).first->second.get();
}

std::uint64_t ProgramCache::disk_key(const std::string& source, const std::string& options) const {
  std::uint64_t key = fnv1a("hetnn-clbin-v1");
  for (const std::string* part : {&source, &options, &identity_}) key = fnv1a(*part, fnv1a("|", key));
  return key;
}

void ProgramCache::discard(const std::string& file, const std::string& options) {
  std::lock_guard<std::mutex> lock(mu_);
  programs_.erase(std::make_pair(file, options));
  if (const auto dir = cache_dir("kernels"))
    std::remove((*dir + "/" + hex64(disk_key(kernel_source(file), options)) + ".clbin").c_str());
}

ProgramCache::Stats ProgramCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

Program ProgramCache::load_binary(const std::string& path, std::uint64_t key, const SipKey& secret,
                                  const std::string& options) {
  auto reject = [&](const std::string& why) {
    warn("ignoring OpenCL binary cache entry " + path + " (" + why + "); rebuilding it");
    std::remove(path.c_str());
    return Program();
  };
  if (!is_regular_or_absent(path)) return reject("not a regular file");
  const auto data = read_file(path);
  if (!data) return Program();
  BinaryHeader h{};
  if (data->size() < sizeof h) return reject("truncated");
  std::memcpy(&h, data->data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return reject("not a hetnn cache file");
  if (h.format != kFormat) return reject("written by another hetnn version");
  if (h.key != key) return reject("key mismatch");
  if (h.length != data->size() - sizeof h) return reject("truncated");
  const auto* bin = reinterpret_cast<const unsigned char*>(data->data() + sizeof h);
  if (entry_mac(secret, key, bin, h.length) != h.mac)
    return reject("signature mismatch: damaged, or not written with this cache's key");

  const std::size_t len = h.length;
  cl_int bin_status = CL_SUCCESS, st = CL_SUCCESS;
  Program prog(clCreateProgramWithBinary(context_, 1, &device_, &len, &bin, &bin_status, &st));
  if (st != CL_SUCCESS || bin_status != CL_SUCCESS) return reject(std::string("driver refused it: ") + status_name(st));
  if (clBuildProgram(prog.get(), 1, &device_, options.c_str(), nullptr, nullptr) != CL_SUCCESS)
    return reject("driver could not build it");
  return prog;
}

void ProgramCache::save_binary(cl_program prog, const std::string& path, std::uint64_t key, const SipKey& secret) {
  const std::string bin = program_binary(prog);
  if (bin.empty()) return;
  const std::size_t size = bin.size();
  BinaryHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.format = kFormat;
  h.key = key;
  h.length = size;
  h.mac = entry_mac(secret, key, reinterpret_cast<const unsigned char*>(bin.data()), size);
  std::string out(reinterpret_cast<const char*>(&h), sizeof h);
  out += bin;
  if (!write_file_atomic(path, out)) warn("could not write OpenCL binary cache entry " + path);
}

std::string open_hidden_ptx(const std::string& ptx) {
  if (ptx.find(".target sm_") == std::string::npos || ptx.find("//WG:") == std::string::npos) return ptx;
  const std::size_t target = ptx.find(".target sm_90");
  const char after = target == std::string::npos || target + 13 >= ptx.size() ? 'x' : ptx[target + 13];
  if (after != '\n' && after != '\r' && after != ' ' && after != ',') {
    const std::size_t at = ptx.find(".target");
    throw ValueError("the warpgroup instruction (wgmma) needs a program for sm_90; the driver wrote '" +
                     ptx.substr(at, ptx.find('\n', at) - at) + "'");
  }
  std::string out;
  out.reserve(ptx.size() + 1);
  for (std::size_t i = 0; i < ptx.size();) {
    if (i == target + 13) out += 'a';  // sm_90 -> sm_90a, the architecture-specific features' target
    if (ptx.compare(i, 5, "//WG:") == 0) {
      i += 5;
      continue;
    }
    out += ptx[i++];
  }
  return out;
}

Program ProgramCache::open_hidden(Program prog, const std::string& file, const std::string& options) {
  const std::string ptx = program_binary(prog.get());
  std::string out;
  try {
    out = open_hidden_ptx(ptx);
  } catch (const ValueError& e) {
    throw CompileError(file, options, device_name_, e.what());
  }
  if (out == ptx) return prog;  // not PTX (another vendor's binary, which may embed the source), or compiled out
  if (out.empty() || out.back() != '\0') out += '\0';  // NVIDIA's binaries are NUL-terminated PTX text
  const std::size_t len = out.size();
  const auto* bin = reinterpret_cast<const unsigned char*>(out.data());
  cl_int bin_status = CL_SUCCESS, st = CL_SUCCESS;
  Program opened(clCreateProgramWithBinary(context_, 1, &device_, &len, &bin, &bin_status, &st));
  if (st != CL_SUCCESS || bin_status != CL_SUCCESS)
    throw_cl_error(st != CL_SUCCESS ? st : bin_status, "clCreateProgramWithBinary(" + file + ", PTX for sm_90a)");
  if (clBuildProgram(opened.get(), 1, &device_, options.c_str(), nullptr, nullptr) != CL_SUCCESS)
    throw CompileError(file, options + " (PTX for sm_90a)", device_name_, build_log(opened.get(), device_));
  return opened;
}

Program build_program(cl_context context, cl_device_id device, const char* source, const std::string& name,
                      const std::string& options, const std::string& device_name) {
  const std::size_t len = std::strlen(source);
  cl_int status = CL_SUCCESS;
  Program prog(clCreateProgramWithSource(context, 1, &source, &len, &status));
  HETNN_CL_CHECK(status);
  const cl_int build = clBuildProgram(prog.get(), 1, &device, options.c_str(), nullptr, nullptr);
  if (build != CL_SUCCESS) {
    if (build == CL_BUILD_PROGRAM_FAILURE || build == CL_INVALID_BUILD_OPTIONS || build == CL_COMPILE_PROGRAM_FAILURE)
      throw CompileError(name, options, device_name, build_log(prog.get(), device));
    throw_cl_error(build, "clBuildProgram(" + name + ")");
  }
  return prog;
}

}  // namespace hetnn::opencl

// Device time per kind of op over eager steps (--profile ops): an event after
// every op on the stream, the intervals summed per kind once the step has synchronized.
// Decode steps and the others (prefill, mixed) are kept apart.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace tessera::cuda {

class OpTimer {
 public:
  enum Op { kEmbed, kNorm, kQkvGemm, kRopeCache, kAttention, kOGemm, kGateUpGemm, kSilu, kDownGemm, kLogitsRows,
            kLmHead, kSample, kNumOps };

  ~OpTimer() {
    for (cudaEvent_t e : pool_) cudaEventDestroy(e);
  }
  void start(cudaStream_t stream) {
    used_ = 0;
    ops_.clear();
    record(stream);
  }
  void mark(Op op, cudaStream_t stream) {
    ops_.push_back(op);
    record(stream);
  }
  // After the stream has synchronized: adds this step's intervals.
  void collect(bool decode) {
    Sums& s = decode ? decode_ : other_;
    s.steps += 1;
    for (size_t i = 0; i < ops_.size(); ++i) {
      float ms = 0;
      cudaEventElapsedTime(&ms, pool_[i], pool_[i + 1]);
      s.ms[ops_[i]] += ms;
    }
  }
  void report(FILE* f) const {
    static const char* kNames[kNumOps] = {"embed",  "norm",   "qkv gemm", "rope+cache",  "attention", "o gemm",
                                          "gate/up gemm", "silu", "down gemm", "logits rows", "lm head", "sample"};
    for (const auto& [name, s] : {std::pair{"decode", decode_}, std::pair{"prefill/mixed", other_}}) {
      if (s.steps == 0) continue;
      double total = 0;
      for (double v : s.ms) total += v;
      std::fprintf(f, "tessera: CUDA ops, %s steps %lld, %.3f ms per step:", name, static_cast<long long>(s.steps),
                   total / static_cast<double>(s.steps));
      for (int i = 0; i < kNumOps; ++i) {
        if (s.ms[i] > 0) std::fprintf(f, " %s %.3f", kNames[i], s.ms[i] / static_cast<double>(s.steps));
      }
      std::fprintf(f, "\n");
    }
  }

 private:
  struct Sums {
    int64_t steps = 0;
    std::array<double, kNumOps> ms{};
  };
  void record(cudaStream_t stream) {
    if (used_ == pool_.size()) {
      cudaEvent_t e = nullptr;
      cudaEventCreate(&e);
      pool_.push_back(e);
    }
    cudaEventRecord(pool_[used_++], stream);
  }
  std::vector<cudaEvent_t> pool_;
  size_t used_ = 0;
  std::vector<Op> ops_;
  Sums decode_, other_;
};

}  // namespace tessera::cuda

// Linear layer y = x W^T (+ b) over a weight read in its stored dtype (mmapped).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <string>
#include <vector>

#include "common/status.h"
#include "loader/weight_store.h"
#include "tensor/tensor.h"

namespace tessera {

// Loads a 1-D tensor of exactly `size` floats (norm weights, biases, rope factors) as fp32.
Result<std::vector<float>> load_vector(const WeightStore& store, const std::string& name,
                                       int64_t size);

class Linear {
 public:
  Linear() = default;
  // Checks that `name` is a matrix [out_features, in_features]; bias_name may be empty.
  static Result<Linear> load(const WeightStore& store, const std::string& name,
                             const std::string& bias_name, int64_t out_features,
                             int64_t in_features);

  // y [m, out_features] = x [m, in_features] W^T + b
  void forward(const float* x, int64_t m, float* y) const;

  // Several layers that read the same x (q/k/v, gate/up) in one pass: x is quantized
  // once and one thread region covers all outputs. Same results as separate forwards.
  static void forward_shared_input(const float* x, int64_t m,
                                   std::initializer_list<std::pair<const Linear*, float*>> outs);

  int64_t out_features() const { return weight_.rows(); }
  int64_t in_features() const { return weight_.cols(); }
  const TensorView& weight() const { return weight_; }
  const std::vector<float>& bias() const { return bias_; }  // [out_features] or empty

 private:
  void add_bias(int64_t m, float* y) const;

  TensorView weight_;       // [out_features, in_features], any supported dtype
  std::vector<float> bias_;  // [out_features] or empty
};

}  // namespace tessera

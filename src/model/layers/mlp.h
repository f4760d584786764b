// Gated MLP: down(silu(gate(x)) * up(x)).
#pragma once

#include <vector>

#include "config/model_config.h"
#include "model/layers/linear.h"
#include "model/layers/weight_names.h"

namespace tessera {

struct MlpScratch {
  std::vector<float> gate;  // [num_tokens, intermediate]
  std::vector<float> up;    // [num_tokens, intermediate]
};

class GatedMlp {
 public:
  static Result<GatedMlp> load(const WeightStore& store, WeightScheme scheme,
                               const ModelConfig& c, int64_t layer);
  // out [n, hidden] = mlp(x [n, hidden])
  void forward(const float* x, int64_t n, MlpScratch& s, float* out) const;

  const Linear& gate() const { return gate_; }
  const Linear& up() const { return up_; }
  const Linear& down() const { return down_; }

 private:
  Linear gate_, up_, down_;
};

}  // namespace tessera

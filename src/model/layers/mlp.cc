#include "model/layers/mlp.h"

#include "backend/cpu/ops.h"

namespace tessera {

Result<GatedMlp> GatedMlp::load(const WeightStore& store, WeightScheme scheme,
                                const ModelConfig& c, int64_t layer) {
  GatedMlp m;
  auto name = [&](WeightRole r) { return weight_name(scheme, r, layer); };
  auto gate = Linear::load(store, name(WeightRole::kGate), "", c.intermediate_size, c.hidden_size);
  if (!gate.ok()) return gate.status();
  auto up = Linear::load(store, name(WeightRole::kUp), "", c.intermediate_size, c.hidden_size);
  if (!up.ok()) return up.status();
  auto down = Linear::load(store, name(WeightRole::kDown), "", c.hidden_size, c.intermediate_size);
  if (!down.ok()) return down.status();
  m.gate_ = std::move(*gate);
  m.up_ = std::move(*up);
  m.down_ = std::move(*down);
  return m;
}

void GatedMlp::forward(const float* x, int64_t n, MlpScratch& s, float* out) const {
  const int64_t inter = gate_.out_features();
  s.gate.resize(n * inter);
  s.up.resize(n * inter);
  Linear::forward_shared_input(x, n, {{&gate_, s.gate.data()}, {&up_, s.up.data()}});
  cpu::silu_and_mul(s.gate.data(), s.up.data(), n, inter, s.gate.data());
  down_.forward(s.gate.data(), n, out);
}

}  // namespace tessera

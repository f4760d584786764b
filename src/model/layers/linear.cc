#include "model/layers/linear.h"

#include "backend/cpu/dequantize.h"
#include "backend/cpu/matmul.h"

namespace tessera {

Result<std::vector<float>> load_vector(const WeightStore& store, const std::string& name,
                                       int64_t size) {
  const TensorView* t = store.find(name);
  if (t == nullptr) return Status::error(store.source() + ": missing tensor '" + name + "'");
  if (t->numel() != size || dtype_info(t->dtype).quantized || t->dtype == DType::kI32) {
    return Status::error(store.source() + ": tensor '" + name + "' is " +
                         std::string(dtype_name(t->dtype)) + " " + shape_string(t->shape) +
                         ", expected " + std::to_string(size) + " floats");
  }
  std::vector<float> v(static_cast<size_t>(size));
  cpu::dequantize_row(t->dtype, t->data, v.data(), size);
  return v;
}

Result<Linear> Linear::load(const WeightStore& store, const std::string& name,
                            const std::string& bias_name, int64_t out_features,
                            int64_t in_features) {
  const TensorView* t = store.find(name);
  if (t == nullptr) return Status::error(store.source() + ": missing tensor '" + name + "'");
  if (t->shape.size() != 2 || t->shape[0] != out_features || t->shape[1] != in_features) {
    return Status::error(store.source() + ": tensor '" + name + "' has shape " +
                         shape_string(t->shape) + ", expected " +
                         shape_string({out_features, in_features}));
  }
  if (t->dtype == DType::kI32) {
    return Status::error(store.source() + ": tensor '" + name + "' has integer dtype");
  }
  Linear l;
  l.weight_ = *t;
  if (!bias_name.empty()) {
    auto b = load_vector(store, bias_name, out_features);
    if (!b.ok()) return b.status();
    l.bias_ = std::move(b.value());
  }
  return l;
}

void Linear::add_bias(int64_t m, float* y) const {
  if (bias_.empty()) return;
  const int64_t n = out_features();
  for (int64_t i = 0; i < m; ++i) {
    float* row = y + i * n;
    for (int64_t j = 0; j < n; ++j) row[j] += bias_[j];
  }
}

void Linear::forward(const float* x, int64_t m, float* y) const {
  cpu::matmul(x, m, weight_, y);
  add_bias(m, y);
}

void Linear::forward_shared_input(const float* x, int64_t m,
                                  std::initializer_list<std::pair<const Linear*, float*>> outs) {
  std::vector<cpu::MatmulOutput> mo;
  mo.reserve(outs.size());
  for (const auto& [layer, y] : outs) mo.push_back({&layer->weight_, y});
  cpu::matmul_multi(x, m, mo);
  for (const auto& [layer, y] : outs) layer->add_bias(m, y);
}

}  // namespace tessera

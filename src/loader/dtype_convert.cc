#include "loader/dtype_convert.h"

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/half.h"

namespace tessera {
namespace {

bool is_float(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

float read_float(DType t, const std::byte* p, int64_t i) {
  switch (t) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      return f;
    }
    case DType::kF16: {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return f16_to_f32(h);
    }
    default: {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return bf16_to_f32(h);
    }
  }
}

void write_float(DType t, std::byte* p, int64_t i, float f) {
  switch (t) {
    case DType::kF32:
      std::memcpy(p + 4 * i, &f, 4);
      return;
    case DType::kF16: {
      const uint16_t h = f32_to_f16(f);
      std::memcpy(p + 2 * i, &h, 2);
      return;
    }
    default: {
      const uint16_t h = f32_to_bf16(f);
      std::memcpy(p + 2 * i, &h, 2);
      return;
    }
  }
}

class ConvertedStore : public WeightStore {
 public:
  ConvertedStore(std::shared_ptr<const WeightStore> base, DType to) : base_(std::move(base)) {
    for (const std::string& name : base_->names()) {
      const TensorView* v = base_->find(name);
      if (v == nullptr || !is_float(v->dtype) || v->dtype == to) continue;
      const int64_t n = v->numel();
      std::vector<std::byte>& bytes = storage_[name];
      bytes.resize(static_cast<size_t>(row_bytes(to, n)));
      // Parallel over elements: a large checkpoint converts at memory speed.
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; ++i) write_float(to, bytes.data(), i, read_float(v->dtype, v->data, i));
      TensorView c = *v;
      c.dtype = to;
      c.data = bytes.data();
      c.nbytes = bytes.size();
      views_[name] = c;
    }
  }
  const TensorView* find(std::string_view name) const override {
    auto it = views_.find(std::string(name));
    return it != views_.end() ? &it->second : base_->find(name);
  }
  std::vector<std::string> names() const override { return base_->names(); }
  std::string source() const override { return base_->source(); }

 private:
  std::shared_ptr<const WeightStore> base_;
  std::map<std::string, std::vector<std::byte>> storage_;
  std::map<std::string, TensorView> views_;
};

}  // namespace

std::shared_ptr<const WeightStore> convert_float_weights(std::shared_ptr<const WeightStore> store, DType to) {
  return std::make_shared<ConvertedStore>(std::move(store), to);
}

}  // namespace tessera

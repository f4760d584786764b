// The weights of a checkpoint by name, whatever the file format.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor.h"

namespace tessera {

class WeightStore {
 public:
  virtual ~WeightStore() = default;
  // nullptr when absent. Views stay valid as long as the store lives.
  virtual const TensorView* find(std::string_view name) const = 0;
  virtual std::vector<std::string> names() const = 0;
  // For error messages: the file(s) behind the store.
  virtual std::string source() const = 0;
};

}  // namespace tessera

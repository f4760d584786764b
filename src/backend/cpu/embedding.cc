#include "backend/cpu/dequantize.h"
#include "backend/cpu/ops.h"
#include "common/check.h"

namespace tessera::cpu {

void embedding(const TensorView& table, const int32_t* ids, int64_t n, float* out) {
  const int64_t dim = table.cols();
  for (int64_t t = 0; t < n; ++t) {
    TESSERA_CHECK(ids[t] >= 0 && ids[t] < table.rows());
    dequantize_row(table.dtype, table.row(ids[t]), out + t * dim, dim);
  }
}

}  // namespace tessera::cpu

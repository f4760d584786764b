// TokenConstraint: what a request may sample next, as a grammar's matcher says (structured
// outputs). The runner's sampler masks every other token before sampling; the scheduler
// advances it over each token the request appends. Implemented in src/structured/.
#pragma once

#include <cstdint>

namespace tessera {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // bitmask [(vocab + 31) / 32]: bit (t % 32) of word t / 32 set when token t may come next
  // (stop tokens once the output is complete). Tokens past the grammar's vocabulary are clear.
  virtual void fill_allowed(uint32_t* bitmask, int64_t vocab) = 0;
  // Advances over a sampled token; false (state unchanged) when the grammar rejects it.
  virtual bool accept(int32_t token) = 0;
  // Whether a stop token was accepted after a complete output: nothing may follow.
  virtual bool is_terminated() const = 0;
};

}  // namespace tessera

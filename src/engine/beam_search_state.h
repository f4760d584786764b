// BeamSearchState: vLLM's beam search (LLM.beam_search, and OpenAIServing.beam_search in its
// server) as a state machine, with the engine calls left to its driver. The offline
// LLM::beam_search drives it with synchronous generate() calls; the server drives it through
// the AsyncEngine, awaiting each step without blocking a thread. One algorithm for both:
//
//   - every step asks each live beam (its prompt + tokens so far, as a prompt of its own) for
//     one token with its top 2 * beam_width logprobs (step_params());
//   - advance() takes those logprobs: every candidate (beam + token) is scored by cumulative
//     logprob; one whose token is EOS (unless ignore_eos) is set aside as finished, whatever
//     its rank; the beam_width best of the others are the next live beams;
//   - after max_tokens steps (or when no candidate is left) the finished and live beams are
//     ranked by cum_logprob / len^length_penalty, len the whole sequence (prompt included)
//     without a final EOS, and the beam_width best are the result.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/llm.h"
#include "tessera/sampling_params.h"

namespace tessera {

// vLLM's get_beam_search_score: cum_logprob / len^length_penalty, len = the sequence's tokens
// (prompt included), less one when the last is an EOS token, at least 1.
double beam_search_score(const std::vector<int32_t>& token_ids, double cum_logprob, double length_penalty,
                         const std::vector<int32_t>& eos_token_ids);

class BeamSearchState {
 public:
  // Empty when the parameters are usable, else a message.
  static std::string validate(const BeamSearchParams& params);
  // What each step asks the engine for a live beam: one token (EOS too), its top
  // 2 * beam_width logprobs (at most 20, the engine's limit), at the given temperature.
  static SamplingParams step_params(const BeamSearchParams& params);

  // eos_token_ids: the tokens that finish a beam (unless params.ignore_eos).
  BeamSearchState(std::vector<int32_t> prompt_token_ids, const BeamSearchParams& params,
                  std::vector<int32_t> eos_token_ids);
  ~BeamSearchState();
  BeamSearchState(BeamSearchState&&) noexcept;
  BeamSearchState& operator=(BeamSearchState&&) noexcept;

  // max_tokens steps taken, or no live beam left.
  bool done() const;
  int64_t steps() const { return steps_; }
  size_t prompt_len() const { return prompt_len_; }
  // The live beams, each to be run as a prompt of its own (prompt + its tokens so far).
  size_t num_live() const { return live_.size(); }
  const std::vector<int32_t>& live_token_ids(size_t beam) const;

  // One step: the top logprobs of each live beam's next token, in live order (best first, as
  // the engine gives them). A beam whose entry is empty (its request failed) has no
  // candidates.
  void advance(const std::vector<PositionLogprobs>& next);

  // The beam_width best sequences, best first (text left empty): finished ones end with their
  // EOS token (finished_by_eos), and their logprobs hold every step's candidates. Call once
  // done(); the state is spent.
  std::vector<BeamSequence> take_best();

 private:
  struct Node;  // one generated token of a beam, linked to its parent's
  struct Beam {
    std::vector<int32_t> token_ids;  // prompt + generated
    double cum_logprob = 0.0;
    std::shared_ptr<const Node> last;  // null before the first token
    bool finished_by_eos = false;
  };
  BeamSequence materialize(Beam&& beam) const;
  bool is_eos(int32_t token) const;

  size_t prompt_len_ = 0;
  BeamSearchParams params_;
  std::vector<int32_t> eos_token_ids_;
  std::vector<Beam> live_;
  std::vector<Beam> finished_;
  int64_t steps_ = 0;
};

}  // namespace tessera

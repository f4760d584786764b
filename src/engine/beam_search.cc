// LLM::beam_search: the BeamSearchState machine (src/engine/beam_search_state.h) driven by
// synchronous generate() calls. Every step runs the live beams of all prompts in one batch,
// one token each with its top 2 * beam_width logprobs; the shared histories are prefix-cache
// hits, so a step costs about one decode token per beam.
#include <optional>

#include "engine/beam_search_state.h"
#include "tessera/llm.h"

namespace tessera {

namespace {

// The candidates of a step's output (none when it failed).
PositionLogprobs candidates_of(const RequestOutput& out) {
  if (!out.error.empty() || out.outputs.empty() || out.outputs[0].logprobs.empty()) return {};
  return out.outputs[0].logprobs[0];
}

}  // namespace

std::vector<BeamSearchOutput> LLM::beam_search(const std::vector<PromptInput>& prompts, const BeamSearchParams& bp,
                                               const ProgressCallback& on_step) {
  std::vector<BeamSearchOutput> results(prompts.size());
  if (const std::string error = BeamSearchState::validate(bp); !error.empty()) {
    for (auto& r : results) r.error = error;
    return results;
  }
  const SamplingParams step = BeamSearchState::step_params(bp);
  // Between engine steps: on_step may stop the search (Ctrl-C in the Python package).
  bool stopped = false;
  const ProgressCallback check = [&](size_t) {
    if (!stopped && on_step && !on_step(0)) stopped = true;
    return !stopped;
  };
  auto abort_all = [&] {
    for (auto& r : results) r.error = "the beam search was aborted";
    return results;
  };
  // The first step runs the prompts as given, which tokenizes and validates them too.
  const auto first =
      generate_batch(prompts, std::vector<SamplingParams>(prompts.size(), step), /*progress=*/false, check);
  if (stopped) return abort_all();
  std::vector<std::optional<BeamSearchState>> searches(prompts.size());
  for (size_t p = 0; p < prompts.size(); ++p) {
    if (!first[p].error.empty()) {
      results[p].error = first[p].error;
      continue;
    }
    searches[p].emplace(first[p].prompt_token_ids, bp, eos_token_ids());
    searches[p]->advance({candidates_of(first[p])});
  }
  for (;;) {
    std::vector<PromptInput> inputs;
    for (const auto& s : searches) {
      if (!s || s->done()) continue;
      for (size_t b = 0; b < s->num_live(); ++b) inputs.emplace_back(s->live_token_ids(b));
    }
    if (inputs.empty()) break;
    const auto outs = generate_batch(inputs, std::vector<SamplingParams>(inputs.size(), step), /*progress=*/false, check);
    if (stopped) return abort_all();
    size_t k = 0;
    for (auto& s : searches) {
      if (!s || s->done()) continue;
      std::vector<PositionLogprobs> next;
      for (size_t b = 0; b < s->num_live(); ++b) next.push_back(candidates_of(outs[k++]));
      s->advance(next);
    }
  }
  for (size_t p = 0; p < prompts.size(); ++p) {
    if (!searches[p]) continue;
    results[p].sequences = searches[p]->take_best();
    for (BeamSequence& b : results[p].sequences) b.text = decode(b.output_token_ids);
  }
  return results;
}

}  // namespace tessera

// LLM::beam_search: vLLM's algorithm on top of generate(). Every step asks each live beam
// for one token with its top 2 * beam_width logprobs; candidates (beam + token) are ranked
// by cumulative logprob and the best beam_width continue; a candidate ending in EOS is set
// aside as finished. The shared histories are prefix-cache hits, so a step costs about one
// decode token per beam.
#include <algorithm>
#include <cmath>

#include "tessera/llm.h"

namespace tessera {

namespace {

double score(const BeamSequence& b, double length_penalty) {
  const double len = static_cast<double>(std::max<size_t>(1, b.output_token_ids.size()));
  return b.cum_logprob / std::pow(len, length_penalty);
}

}  // namespace

std::vector<BeamSearchOutput> LLM::beam_search(const std::vector<PromptInput>& prompts, const BeamSearchParams& bp) {
  std::vector<BeamSearchOutput> results(prompts.size());
  if (bp.beam_width < 1 || bp.beam_width > 64 || bp.max_tokens < 1) {
    for (auto& r : results) r.error = "beam_width must be in [1, 64] and max_tokens at least 1";
    return results;
  }
  SamplingParams step;
  step.temperature = 0.0f;
  step.max_tokens = 1;
  step.ignore_eos = true;  // EOS is a candidate like any other token
  step.logprobs = std::min<int64_t>(20, 2 * bp.beam_width);
  const auto& eos = eos_token_ids();
  for (size_t p = 0; p < prompts.size(); ++p) {
    // The prompt's ids: run it once with max_tokens 1 to validate and tokenize.
    const auto first = generate_batch({prompts[p]}, {step}, /*progress=*/false);
    if (!first[0].error.empty()) {
      results[p].error = first[0].error;
      continue;
    }
    std::vector<BeamSequence> live(1), finished;
    live[0].token_ids = first[0].prompt_token_ids;
    for (int64_t t = 0; t < bp.max_tokens && !live.empty(); ++t) {
      std::vector<PromptInput> inputs;
      for (const auto& b : live) inputs.emplace_back(b.token_ids);
      const auto outs = generate_batch(inputs, std::vector<SamplingParams>(inputs.size(), step), /*progress=*/false);
      std::vector<BeamSequence> candidates;
      for (size_t i = 0; i < live.size(); ++i) {
        if (!outs[i].error.empty() || outs[i].outputs.empty() || outs[i].outputs[0].logprobs.empty()) continue;
        for (const auto& [token, lp] : outs[i].outputs[0].logprobs[0]) {
          BeamSequence c = live[i];
          c.token_ids.push_back(token);
          c.output_token_ids.push_back(token);
          c.cum_logprob += lp;
          candidates.push_back(std::move(c));
        }
      }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [](const BeamSequence& a, const BeamSequence& b) { return a.cum_logprob > b.cum_logprob; });
      live.clear();
      if (static_cast<int64_t>(candidates.size()) > bp.beam_width) candidates.resize(static_cast<size_t>(bp.beam_width));
      for (auto& c : candidates) {
        const bool is_eos = std::find(eos.begin(), eos.end(), c.output_token_ids.back()) != eos.end();
        if (is_eos && !bp.ignore_eos) {
          c.finished_by_eos = true;
          finished.push_back(std::move(c));
        } else {
          live.push_back(std::move(c));
        }
      }
    }
    for (auto& b : live) finished.push_back(std::move(b));
    std::stable_sort(finished.begin(), finished.end(), [&](const BeamSequence& a, const BeamSequence& b) {
      return score(a, bp.length_penalty) > score(b, bp.length_penalty);
    });
    if (static_cast<int64_t>(finished.size()) > bp.beam_width) finished.resize(static_cast<size_t>(bp.beam_width));
    for (auto& b : finished) b.text = decode(b.output_token_ids);
    results[p].sequences = std::move(finished);
  }
  return results;
}

}  // namespace tessera

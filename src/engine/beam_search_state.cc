#include "engine/beam_search_state.h"

#include <algorithm>
#include <cmath>

namespace tessera {

// A generated token, its step's candidates and the token before it: the beams of a search
// share their histories instead of copying them at every step.
struct BeamSearchState::Node {
  std::shared_ptr<const Node> parent;
  int32_t token = 0;
  PositionLogprobs logprobs;
};

double beam_search_score(const std::vector<int32_t>& token_ids, double cum_logprob, double length_penalty,
                         const std::vector<int32_t>& eos_token_ids) {
  int64_t len = static_cast<int64_t>(token_ids.size());
  if (!token_ids.empty() &&
      std::find(eos_token_ids.begin(), eos_token_ids.end(), token_ids.back()) != eos_token_ids.end()) {
    --len;
  }
  return cum_logprob / std::pow(static_cast<double>(std::max<int64_t>(len, 1)), length_penalty);
}

std::string BeamSearchState::validate(const BeamSearchParams& p) {
  if (p.beam_width < 1 || p.beam_width > 64 || p.max_tokens < 1) {
    return "beam_width must be in [1, 64] and max_tokens at least 1";
  }
  if (!std::isfinite(p.length_penalty)) return "length_penalty must be a finite number";
  if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature)) return "temperature must be >= 0";
  return "";
}

SamplingParams BeamSearchState::step_params(const BeamSearchParams& p) {
  SamplingParams step;
  step.temperature = p.temperature;
  step.max_tokens = 1;
  step.ignore_eos = true;  // EOS is a candidate like any other token
  step.logprobs = std::min<int64_t>(20, 2 * p.beam_width);
  return step;
}

BeamSearchState::BeamSearchState(std::vector<int32_t> prompt_token_ids, const BeamSearchParams& params,
                                 std::vector<int32_t> eos_token_ids)
    : prompt_len_(prompt_token_ids.size()), params_(params), eos_token_ids_(std::move(eos_token_ids)) {
  live_.emplace_back();
  live_[0].token_ids = std::move(prompt_token_ids);
}

BeamSearchState::~BeamSearchState() = default;
BeamSearchState::BeamSearchState(BeamSearchState&&) noexcept = default;
BeamSearchState& BeamSearchState::operator=(BeamSearchState&&) noexcept = default;

bool BeamSearchState::done() const { return steps_ >= params_.max_tokens || live_.empty(); }

const std::vector<int32_t>& BeamSearchState::live_token_ids(size_t beam) const { return live_[beam].token_ids; }

bool BeamSearchState::is_eos(int32_t token) const {
  return std::find(eos_token_ids_.begin(), eos_token_ids_.end(), token) != eos_token_ids_.end();
}

void BeamSearchState::advance(const std::vector<PositionLogprobs>& next) {
  if (done()) return;
  struct Candidate {
    double cum_logprob;
    int32_t token;
    size_t beam;
  };
  // A kept candidate's token, linked to its beam's history (which the beams share).
  auto step_of = [&](size_t b, int32_t token) {
    auto node = std::make_shared<Node>();
    node->parent = live_[b].last;
    node->token = token;
    node->logprobs = next[b];
    return std::shared_ptr<const Node>(std::move(node));
  };
  std::vector<Candidate> candidates;
  for (size_t b = 0; b < live_.size() && b < next.size(); ++b) {
    for (const auto& [token, logprob] : next[b]) {
      const double cum = live_[b].cum_logprob + logprob;
      if (is_eos(token) && !params_.ignore_eos) {
        Beam done_beam;
        done_beam.token_ids = live_[b].token_ids;
        done_beam.token_ids.push_back(token);
        done_beam.cum_logprob = cum;
        done_beam.last = step_of(b, token);
        done_beam.finished_by_eos = true;
        finished_.push_back(std::move(done_beam));
      } else {
        candidates.push_back({cum, token, b});
      }
    }
  }
  // The best beam_width by cumulative logprob; ties keep the engine's order.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.cum_logprob > b.cum_logprob; });
  if (candidates.size() > static_cast<size_t>(params_.beam_width)) {
    candidates.resize(static_cast<size_t>(params_.beam_width));
  }
  std::vector<Beam> kept;
  kept.reserve(candidates.size());
  for (const Candidate& c : candidates) {
    Beam beam;
    beam.token_ids.reserve(live_[c.beam].token_ids.size() + 1);
    beam.token_ids = live_[c.beam].token_ids;
    beam.token_ids.push_back(c.token);
    beam.cum_logprob = c.cum_logprob;
    beam.last = step_of(c.beam, c.token);
    kept.push_back(std::move(beam));
  }
  live_ = std::move(kept);
  ++steps_;
}

BeamSequence BeamSearchState::materialize(Beam&& beam) const {
  BeamSequence s;
  s.cum_logprob = beam.cum_logprob;
  s.finished_by_eos = beam.finished_by_eos;
  s.output_token_ids.assign(beam.token_ids.begin() + static_cast<std::ptrdiff_t>(prompt_len_), beam.token_ids.end());
  for (const Node* n = beam.last.get(); n != nullptr; n = n->parent.get()) s.logprobs.push_back(n->logprobs);
  std::reverse(s.logprobs.begin(), s.logprobs.end());
  s.token_ids = std::move(beam.token_ids);
  return s;
}

std::vector<BeamSequence> BeamSearchState::take_best() {
  std::vector<Beam> all = std::move(finished_);
  for (Beam& b : live_) all.push_back(std::move(b));
  live_.clear();
  finished_.clear();
  std::vector<double> scores;
  scores.reserve(all.size());
  for (const Beam& b : all) {
    scores.push_back(beam_search_score(b.token_ids, b.cum_logprob, params_.length_penalty, eos_token_ids_));
  }
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Finished beams first, in the order they finished, then the live ones: ties keep it.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  if (order.size() > static_cast<size_t>(params_.beam_width)) order.resize(static_cast<size_t>(params_.beam_width));
  std::vector<BeamSequence> best;
  best.reserve(order.size());
  for (size_t i : order) best.push_back(materialize(std::move(all[i])));
  return best;
}

}  // namespace tessera

// The <think>...</think> parsers (deepseek_r1, qwen3, deepseek_v3): one byte-level state
// machine, started in the state the prompt's tail implies. extract() runs a fresh copy of the
// machine over the whole reply, so streamed and whole-reply splits agree by construction.
#include <algorithm>
#include <memory>
#include <string>
#include <string_view>

#include "server/reasoning/reasoning_parser.h"

namespace tessera::server {
namespace {

constexpr std::string_view kStart = "<think>";
constexpr std::string_view kEnd = "</think>";
constexpr std::string_view kSpace = " \t\r\n";
// Where a template's generation prompt starts (ChatML, DeepSeek). Cutting there lets a caller
// pass the whole prompt: earlier turns may carry finished think blocks (Qwen3 keeps them in a
// tool loop), and only the generation prompt says how this reply starts.
constexpr std::string_view kAssistantHeaders[] = {"<|im_start|>assistant", "<｜Assistant｜>"};

enum class PromptThink { kNone, kOpen, kClosed };

PromptThink classify_prompt_tail(std::string_view tail) {
  size_t cut = 0;
  for (std::string_view h : kAssistantHeaders) {
    const size_t i = tail.rfind(h);
    if (i != std::string_view::npos && i + h.size() > cut) cut = i + h.size();
  }
  tail.remove_prefix(cut);
  const size_t open = tail.rfind(kStart);
  const size_t close = tail.rfind(kEnd);
  if (open == std::string_view::npos && close == std::string_view::npos) return PromptThink::kNone;
  if (close == std::string_view::npos || (open != std::string_view::npos && open > close)) {
    return PromptThink::kOpen;
  }
  return PromptThink::kClosed;
}

enum class Phase {
  kUndecided,  // qwen3 without a think tag in the prompt: a leading <think> opens reasoning
  kReasoning,  // until the first </think>
  kContent,    // everything verbatim, markers included
};

// Length of the longest suffix of s that is a proper prefix of one of the markers in play:
// text that may still become a marker and so cannot be released yet.
size_t partial_marker_suffix(std::string_view s, bool with_start) {
  for (size_t n = std::min(s.size(), kEnd.size() - 1); n > 0; --n) {
    const std::string_view tail = s.substr(s.size() - n);
    if (kEnd.starts_with(tail) || (with_start && n < kStart.size() && kStart.starts_with(tail))) return n;
  }
  return 0;
}

struct Pieces {
  std::string reasoning;
  std::string content;

  ReasoningSplit split() && {
    ReasoningSplit out;
    if (!reasoning.empty()) out.reasoning = std::move(reasoning);
    if (!content.empty()) out.content = std::move(content);
    return out;
  }
};

class ThinkTagMachine {
 public:
  explicit ThinkTagMachine(Phase phase) : phase_(phase), ended_(phase == Phase::kContent) {}

  bool ended() const { return ended_; }

  // Appends what `in` decides to `out`; with `last`, nothing is held back.
  void run(std::string_view in, bool last, Pieces& out) {
    std::string joined;
    std::string_view s = in;
    if (!held_.empty()) {
      joined = std::move(held_);
      joined.append(in);
      s = joined;
    }
    held_.clear();
    // Keeps s[from, end) for the next call; reuses `joined` so that a long held run (leading
    // whitespace) is not copied on every feed.
    auto hold = [&](size_t from) {
      if (!joined.empty()) {
        joined.erase(0, from);
        held_ = std::move(joined);
      } else {
        held_.assign(s.substr(from));
      }
    };
    size_t pos = 0;
    for (;;) {
      switch (phase_) {
        case Phase::kContent:
          out.content.append(s.substr(pos));
          return;
        case Phase::kReasoning: {
          const size_t end = s.find(kEnd, pos);
          // vLLM drops the first <think> of the output; the prompt's own does not count, since
          // some models repeat it.
          const size_t start = start_dropped_ ? std::string_view::npos : s.find(kStart, pos);
          if (start != std::string_view::npos && start < end) {
            out.reasoning.append(s.substr(pos, start - pos));
            pos = start + kStart.size();
            start_dropped_ = true;
            continue;
          }
          if (end != std::string_view::npos) {
            out.reasoning.append(s.substr(pos, end - pos));
            pos = end + kEnd.size();
            phase_ = Phase::kContent;
            ended_ = true;
            continue;
          }
          const size_t keep = last ? 0 : partial_marker_suffix(s.substr(pos), !start_dropped_);
          out.reasoning.append(s.substr(pos, s.size() - pos - keep));
          hold(s.size() - keep);
          return;
        }
        case Phase::kUndecided: {
          // Only reachable at the reply's start (pos == 0); held_ was leading whitespace plus
          // a partial "<think>", and the whitespace need not be scanned again.
          const size_t first = s.find_first_not_of(kSpace, held_space_);
          if (first != std::string_view::npos && s.substr(first).starts_with(kStart)) {
            pos = first + kStart.size();  // the whitespace before it goes too, as in vLLM
            phase_ = Phase::kReasoning;
            start_dropped_ = true;
            held_space_ = 0;
            continue;
          }
          const bool maybe_start = first == std::string_view::npos || kStart.starts_with(s.substr(first));
          if (maybe_start && !last) {
            hold(0);
            held_space_ = first == std::string_view::npos ? s.size() : first;
            return;
          }
          // The reply does not open with <think>: no reasoning, all of it is content.
          phase_ = Phase::kContent;
          ended_ = true;
          held_space_ = 0;
          continue;
        }
      }
    }
  }

 private:
  Phase phase_;
  bool ended_;
  bool start_dropped_ = false;
  size_t held_space_ = 0;  // kUndecided: leading bytes of held_ known to be whitespace
  std::string held_;       // undecided tail of the text fed so far
};

class ThinkTagReasoningParser final : public ReasoningParser {
 public:
  explicit ThinkTagReasoningParser(Phase initial) : initial_(initial), stream_(initial) {}

  ReasoningSplit extract(const std::string& text) override {
    ThinkTagMachine whole(initial_);
    Pieces out;
    whole.run(text, /*last=*/true, out);
    return std::move(out).split();
  }

  ReasoningSplit feed(std::string_view delta) override {
    Pieces out;
    stream_.run(delta, /*last=*/false, out);
    return std::move(out).split();
  }

  ReasoningSplit finish() override {
    Pieces out;
    stream_.run({}, /*last=*/true, out);
    return std::move(out).split();
  }

  bool reasoning_ended() const override { return stream_.ended(); }
  std::string end_marker() const override { return std::string(kEnd); }

 private:
  Phase initial_;
  ThinkTagMachine stream_;
};

}  // namespace

// Declared in reasoning_parser_registry.cc, the only caller.
std::unique_ptr<ReasoningParser> make_think_tag_reasoning_parser(std::string_view name,
                                                                 std::string_view prompt_tail) {
  const PromptThink prompt = classify_prompt_tail(prompt_tail);
  Phase phase;
  if (name == "deepseek_r1") {
    // R1 may omit <think> (its template puts it in the prompt): reasoning comes first.
    phase = prompt == PromptThink::kClosed ? Phase::kContent : Phase::kReasoning;
  } else if (name == "qwen3") {
    phase = prompt == PromptThink::kOpen     ? Phase::kReasoning
            : prompt == PromptThink::kClosed ? Phase::kContent
                                             : Phase::kUndecided;
  } else if (name == "deepseek_v3") {
    // vLLM: R1 behaviour only when the request enabled thinking, which opens the block.
    phase = prompt == PromptThink::kOpen ? Phase::kReasoning : Phase::kContent;
  } else {
    return nullptr;
  }
  return std::make_unique<ThinkTagReasoningParser>(phase);
}

}  // namespace tessera::server

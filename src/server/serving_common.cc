#include "server/serving_common.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <unordered_set>

#include "server/openai_protocol.h"

namespace tessera::server {

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

StreamSet::~StreamSet() {
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (!finished_[i]) engine_.abort(streams_[i]->id());
  }
}

net::awaitable<bool> StreamSet::run(HttpExchange& ex, const std::function<void(size_t, StreamBatch&)>& on_batch,
                                    std::string* sse) {
  size_t open = streams_.size();
  while (open > 0) {
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (finished_[i]) continue;
      StreamBatch batch = streams_[i]->take();
      if (batch.deltas.empty() && batch.prompt_logprobs.empty() && !batch.finished) continue;
      on_batch(i, batch);
      if (batch.finished) {
        finished_[i] = true;
        --open;
      }
    }
    if (sse != nullptr && !sse->empty()) {
      const bool written = co_await ex.write(*sse);
      sse->clear();
      if (!written) co_return false;
    }
    if (open == 0) break;
    // A closed connection aborts the request before the engine's next step.
    if (ex.client_gone()) co_return false;
    co_await ex.wait(0.5);
  }
  co_return true;
}

void ReplyBudget::charge(size_t bytes) {
  used_ += bytes;
  if (used_ > limit_) {
    bad_request("the response would be larger than this server's limit of " + std::to_string(limit_) +
                " bytes (--max-response-bytes): ask for fewer choices, prompts or logprobs, or stream it");
  }
}

size_t min_prompt_logprob_bytes(int64_t k) {
  // "1":{"logprob":-1.0,"rank":1,"decoded_token":""} and a separator: 47 bytes at least.
  constexpr size_t kMinEntryBytes = 40;
  return kMinEntryBytes * static_cast<size_t>(std::max<int64_t>(k, 1));
}

size_t utf8_length(std::string_view text) {
  size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;  // every byte but continuation bytes
  return n;
}

std::string random_id(const char* prefix) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* kHex = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 2; ++i) {
    uint64_t x = rng();
    for (int k = 0; k < 16; ++k, x >>= 4) id += kHex[x & 15];
  }
  return id;
}

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Json usage_json(int64_t prompt_tokens, int64_t completion_tokens, std::optional<int64_t> cached_tokens) {
  return Json{{"prompt_tokens", prompt_tokens},
              {"total_tokens", prompt_tokens + completion_tokens},
              {"completion_tokens", completion_tokens},
              {"prompt_tokens_details", cached_tokens ? Json{{"cached_tokens", *cached_tokens}} : Json()}};
}

namespace {

// Appends a member whose key is known to be new. ordered_json's own insertion searches the
// keys first, which is quadratic for a whole vocabulary's entries (logprobs -1).
void append_new_member(Json* object, std::string key, Json value) {
  auto& members = static_cast<Json::object_t::Container&>(object->get_ref<Json::object_t&>());
  members.emplace_back(std::move(key), std::move(value));
}

}  // namespace

Json prompt_logprobs_json(const tokenizer::Tokenizer* tok, const std::vector<int32_t>& ids,
                          const std::vector<PositionLogprobs>& logprobs, const std::vector<int32_t>& ranks) {
  Json out = Json::array();
  for (size_t t = 0; t < ids.size(); ++t) {
    if (t == 0 || t >= logprobs.size()) {
      out.push_back(nullptr);
      continue;
    }
    // vLLM's order: the prompt token first, then the others by rank.
    Json position = Json::object();
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t j = 0; j < logprobs[t].size(); ++j) {
        const auto& [id, lp] = logprobs[t][j];
        if ((id == ids[t]) != (pass == 0)) continue;
        const int64_t rank = id == ids[t] && t < ranks.size() ? ranks[t] : static_cast<int64_t>(j + 1);
        append_new_member(&position, std::to_string(id),
                          Json{{"logprob", lp}, {"rank", rank}, {"decoded_token", token_text(tok, id)}});
      }
    }
    out.push_back(std::move(position));
  }
  return out;
}

Json per_request_metrics_json(const RequestMetrics& m, int64_t num_generation_tokens) {
  Json out = Json::object();
  if (m.scheduled_time > 0.0 && m.first_token_time > 0.0) {
    out["time_to_first_token_ms"] = (m.first_token_time - m.scheduled_time) * 1e3;
  }
  if (m.first_token_time > 0.0 && m.finished_time > 0.0) {
    out["generation_time_ms"] = (m.finished_time - m.first_token_time) * 1e3;
  }
  if (m.arrival_time > 0.0 && m.scheduled_time > 0.0) out["queue_time_ms"] = (m.scheduled_time - m.arrival_time) * 1e3;
  if (m.first_token_time > 0.0 && m.finished_time > 0.0 && num_generation_tokens > 1) {
    out["mean_itl_ms"] = (m.finished_time - m.first_token_time) / static_cast<double>(num_generation_tokens - 1) * 1e3;
  }
  if (m.scheduled_time > 0.0 && m.finished_time > m.scheduled_time) {
    out["tokens_per_second"] = static_cast<double>(num_generation_tokens) / (m.finished_time - m.scheduled_time);
  }
  return out;
}

std::string token_text(const tokenizer::Tokenizer* tok, int32_t id) {
  if (tok == nullptr) return "";
  const int32_t ids[1] = {id};
  auto text = tok->decode(ids, /*skip_special_tokens=*/false);
  return text.ok() ? *text : "";
}

void ChoiceState::append(const CompletionDelta& d) {
  text += d.text;
  token_ids.insert(token_ids.end(), d.token_ids.begin(), d.token_ids.end());
  token_logprobs.insert(token_logprobs.end(), d.token_logprobs.begin(), d.token_logprobs.end());
  top_logprobs.insert(top_logprobs.end(), d.top_logprobs.begin(), d.top_logprobs.end());
  if (!d.finish_reason.empty()) {
    finish_reason = d.finish_reason;
    stop_reason = stop_reason_json(d);
  }
}

Json stop_reason_json(const CompletionDelta& d) {
  if (d.stop_string) return *d.stop_string;
  if (d.stop_token) return *d.stop_token;
  return nullptr;
}

Json completion_logprobs(const TokenNames& names, const std::vector<int32_t>& ids,
                         const std::vector<float>& logprobs, const std::vector<PositionLogprobs>& top,
                         int64_t k, size_t offset0) {
  Json tokens = Json::array(), token_logprobs = Json::array(), tops = Json::array(), offsets = Json::array();
  size_t offset = offset0;
  for (size_t i = 0; i < ids.size() && i < logprobs.size(); ++i) {
    std::string text = names(ids[i]);
    offsets.push_back(offset);
    offset += utf8_length(text);
    tokens.push_back(std::move(text));
    token_logprobs.push_back(logprobs[i]);
    // vLLM's order: the position's own token first, then the top k by rank (k + 1 entries
    // at most; alternatives whose text is equal collapse into the first).
    Json alternatives = Json::object();
    std::unordered_set<std::string> named{tokens.back().get<std::string>()};
    append_new_member(&alternatives, tokens.back().get<std::string>(), logprobs[i]);
    const PositionLogprobs& p = top[i];
    for (size_t j = 0; j < p.size() && static_cast<int64_t>(j) < k; ++j) {
      if (p[j].first == ids[i]) continue;
      std::string t = names(p[j].first);
      if (named.insert(t).second) append_new_member(&alternatives, std::move(t), p[j].second);
    }
    tops.push_back(std::move(alternatives));
  }
  return Json{{"text_offset", std::move(offsets)},
              {"token_logprobs", std::move(token_logprobs)},
              {"tokens", std::move(tokens)},
              {"top_logprobs", std::move(tops)}};
}

namespace {

Json bytes_of(const std::string& s) {
  Json b = Json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

}  // namespace

Json chat_logprobs_content(const TokenNames& names, const std::vector<int32_t>& ids,
                           const std::vector<float>& logprobs, const std::vector<PositionLogprobs>& top, int64_t k) {
  Json content = Json::array();
  for (size_t i = 0; i < ids.size() && i < logprobs.size(); ++i) {
    const std::string text = names(ids[i]);
    // vLLM's order: the chosen token first, then the others by rank; k entries.
    Json alternatives = Json::array();
    if (k > 0) alternatives.push_back(Json{{"token", text}, {"logprob", logprobs[i]}, {"bytes", bytes_of(text)}});
    const PositionLogprobs& p = top[i];
    for (size_t j = 0; j < p.size() && static_cast<int64_t>(alternatives.size()) < k; ++j) {
      if (p[j].first == ids[i]) continue;
      const std::string t = names(p[j].first);
      alternatives.push_back(Json{{"token", t}, {"logprob", p[j].second}, {"bytes", bytes_of(t)}});
    }
    content.push_back(Json{{"token", text}, {"logprob", logprobs[i]}, {"bytes", bytes_of(text)},
                           {"top_logprobs", std::move(alternatives)}});
  }
  return content;
}

}  // namespace tessera::server

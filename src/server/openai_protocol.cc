#include "server/openai_protocol.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "server/request_fields.h"

namespace tessera::server {

namespace {

using Json = nlohmann::ordered_json;
using http_status = boost::beast::http::status;

const char* type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "a list";
    case Json::value_t::object: return "an object";
    default: return "a number";
  }
}

[[noreturn]] void wrong_type(const std::string& field, const char* expected, const Json& v) {
  bad_request(field + " must be " + expected + ", not " + type_name(v), field);
}

// vLLM's requests are pydantic models in lax mode, which coerce some values of another JSON
// type: these three helpers take what it takes (a numeric string for a number, "true"/"yes"/
// "1"... for a boolean, a boolean for a number), so a client that works with vLLM works here.

// A string pydantic reads as an integer: an optional sign and digits.
std::optional<int64_t> integer_string(const std::string& s) {
  size_t i = (s.size() > 1 && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i == s.size() || s.size() > 20) return std::nullopt;
  for (size_t j = i; j < s.size(); ++j) {
    if (s[j] < '0' || s[j] > '9') return std::nullopt;
  }
  errno = 0;
  const long long x = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  return static_cast<int64_t>(x);
}

// An integer (an integral float like 3.0 is taken too, and pydantic's coercions) within [lo, hi].
int64_t get_int(const Json& v, const std::string& field, int64_t lo, int64_t hi) {
  if (v.is_boolean()) return get_int(Json(v.get<bool>() ? 1 : 0), field, lo, hi);
  if (v.is_string()) {
    const auto x = integer_string(v.get_ref<const std::string&>());
    if (!x) wrong_type(field, "an integer", v);
    return get_int(Json(*x), field, lo, hi);
  }
  int64_t x = 0;
  if (v.is_number_unsigned()) {  // first: is_number_integer() holds for unsigned values too
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      bad_request(field + " must be at most " + std::to_string(hi), field);
    }
    x = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) wrong_type(field, "an integer", v);
    if (d < static_cast<double>(lo)) bad_request(field + " must be at least " + std::to_string(lo), field);
    if (d > static_cast<double>(hi)) bad_request(field + " must be at most " + std::to_string(hi), field);
    x = static_cast<int64_t>(d);
  } else {
    wrong_type(field, "an integer", v);
  }
  if (x < lo) bad_request(field + " must be at least " + std::to_string(lo) + ", got " + std::to_string(x), field);
  if (x > hi) bad_request(field + " must be at most " + std::to_string(hi) + ", got " + std::to_string(x), field);
  return x;
}

double get_number(const Json& v, const std::string& field, double lo, double hi) {
  double d = 0.0;
  if (v.is_number()) {
    d = v.get<double>();
  } else if (v.is_boolean()) {
    d = v.get<bool>() ? 1.0 : 0.0;
  } else if (v.is_string()) {  // a numeric string, whole
    const std::string& s = v.get_ref<const std::string&>();
    char* end = nullptr;
    d = s.empty() ? 0.0 : std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || std::isspace(static_cast<unsigned char>(s[0]))) {
      wrong_type(field, "a number", v);
    }
  } else {
    wrong_type(field, "a number", v);
  }
  if (!std::isfinite(d) || d < lo || d > hi) {
    bad_request(field + " must be in [" + nlohmann::json(lo).dump() + ", " + nlohmann::json(hi).dump() + "]", field);
  }
  return d;
}

bool get_bool(const Json& v, const std::string& field) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number() && (v.get<double>() == 0.0 || v.get<double>() == 1.0)) return v.get<double>() == 1.0;
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* t : {"1", "on", "t", "true", "y", "yes"}) {
      if (s == t) return true;
    }
    for (const char* f : {"0", "off", "f", "false", "n", "no"}) {
      if (s == f) return false;
    }
  }
  wrong_type(field, "a boolean", v);
}

std::string get_string(const Json& v, const std::string& field) {
  if (!v.is_string()) wrong_type(field, "a string", v);
  return v.get<std::string>();
}

// The field's value, or nullptr when absent or null (OpenAI treats null as "not given").
const Json* field(const Json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

// vLLM's truncate_prompt_tokens: -1 (the model's context) or a positive count.
std::optional<int64_t> parse_truncate_prompt_tokens(const Json& b) {
  const Json* v = field(b, "truncate_prompt_tokens");
  if (v == nullptr) return std::nullopt;
  const int64_t k = get_int(*v, "truncate_prompt_tokens", -1, std::numeric_limits<int32_t>::max());
  if (k == 0) bad_request("truncate_prompt_tokens must be -1 (the model's context) or at least 1", "truncate_prompt_tokens");
  return k;
}

// vLLM's truncation_side: "left" (the default: keep the prompt's end) or "right".
bool parse_truncation_side(const Json& b) {
  const Json* v = field(b, "truncation_side");
  if (v == nullptr) return false;
  const std::string side = get_string(*v, "truncation_side");
  if (side != "left" && side != "right") bad_request("truncation_side must be \"left\" or \"right\"", "truncation_side");
  return side == "right";
}

// A count of logprobs: at least 0, or -1 (vLLM's "the whole vocabulary": kAllLogprobs); how
// many --max-logprobs allows is the handler's check.
int64_t get_logprobs_count(const Json& v, const std::string& name) {
  const int64_t k = get_int(v, name, -1, kAllLogprobs - 1);
  return k == -1 ? kAllLogprobs : k;
}

// vLLM's prompt_logprobs (not with stream): -1 when absent; raises params' to it.
int64_t parse_prompt_logprobs(const Json& b, bool stream, SamplingParams* params) {
  const Json* v = field(b, "prompt_logprobs");
  if (v == nullptr) return -1;
  const int64_t k = get_logprobs_count(*v, "prompt_logprobs");
  if (stream) bad_request("prompt_logprobs are not available with stream", "prompt_logprobs");
  params->prompt_logprobs = std::max(params->prompt_logprobs, k);
  return k;
}

// A named tool_choice ({"type": "function", "function": {"name": N}}) must name one of the
// request's tools (vLLM's checks and texts).
void check_named_tool_choice(const Json& choice, const Json& tools) {
  const std::string usage = "Correct usage: `{\"type\": \"function\", \"function\": {\"name\": \"my_function\"}}`";
  if (!tools.is_array()) bad_request("When using `tool_choice`, `tools` must be set.", "tool_choice");
  const auto function = choice.find("function");
  if (function == choice.end() || !function->is_object()) {
    bad_request("Invalid value for `function` in `tool_choice`! " + usage, "tool_choice");
  }
  const auto name = function->find("name");
  if (name == function->end()) bad_request("Expected field `name` in `function` in `tool_choice`! " + usage, "tool_choice");
  if (!name->is_string() || name->get_ref<const std::string&>().empty()) {
    bad_request("Invalid `name` in `function` in `tool_choice`! " + usage, "tool_choice");
  }
  const std::string& wanted = name->get_ref<const std::string&>();
  for (const Json& tool : tools) {
    const auto f = tool.is_object() ? tool.find("function") : tool.end();
    if (tool.is_object() && f != tool.end() && f->is_object() && f->value("name", std::string()) == wanted) return;
  }
  bad_request("The tool specified in `tool_choice` does not match any of the specified `tools`", "tool_choice");
}

// vLLM's seed: a 64-bit integer, read exactly; out of range, pydantic's texts (vLLM's
// answer names the bound broken: less_than_equal / greater_than_equal).
uint64_t get_seed(const Json& v) {
  auto out_of_range = [](bool above) {
    bad_request(above ? "Input should be less than or equal to 9223372036854775807 (less_than_equal: body.seed)"
                      : "Input should be greater than or equal to -9223372036854775808 (greater_than_equal: body.seed)",
                "seed");
  };
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    out_of_range(true);
  }
  if (v.is_number_float()) {
    // The parser keeps integers as floats only past 64 bits, where they round to +-2^63 or
    // beyond (an integer just below -2^63 rounds to -2^63 itself).
    const double d = v.get<double>();
    constexpr double kTwo63 = 9223372036854775808.0;
    if (d >= kTwo63) out_of_range(true);
    if (d <= -kTwo63) out_of_range(false);
  }
  return static_cast<uint64_t>(
      get_int(v, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
}

std::vector<int32_t> get_token_ids(const Json& v, const std::string& name) {
  std::vector<int32_t> ids;
  ids.reserve(v.size());
  for (const Json& x : v) ids.push_back(static_cast<int32_t>(get_int(x, name, 0, std::numeric_limits<int32_t>::max())));
  return ids;
}

// A JSON Schema's text (compact): an object, or with text_ok a string holding one (vLLM's
// structured_outputs.json and guided_json take both).
std::string schema_text(const Json& v, const std::string& name, bool text_ok) {
  const Json* schema = &v;
  Json parsed;
  if (text_ok && v.is_string()) {
    try {
      parsed = parse_client_json(v.get_ref<const std::string&>(), kMaxJsonDepth);
    } catch (const ApiError& e) {
      bad_request(name + " is not valid JSON (" + e.what() + ")", name);
    }
    if (!parsed.is_object()) bad_request(name + " must hold a JSON object (a JSON Schema)", name);
    schema = &parsed;
  }
  if (!schema->is_object()) {
    wrong_type(name, text_ok ? "an object (a JSON Schema) or a string holding one" : "an object (a JSON Schema)", v);
  }
  return schema->dump(-1, ' ', false, Json::error_handler_t::replace);
}

// vLLM's choice: a non-empty list of strings.
std::vector<std::string> get_choice(const Json& v, const std::string& name) {
  if (!v.is_array()) wrong_type(name, "a list of strings", v);
  if (v.empty()) bad_request(name + " must not be empty", name);
  std::vector<std::string> choice;
  choice.reserve(v.size());
  for (const Json& s : v) choice.push_back(get_string(s, name));
  return choice;
}

[[noreturn]] void not_supported_yet(const std::string& name) {
  bad_request(name + " (structured outputs) is not supported yet", name);
}

// Structured outputs, as vLLM's requests give them: its structured_outputs object, its older
// top-level guided_* names, and OpenAI's response_format, which sets json or json_object over
// what the others set (vLLM's structured_outputs_from_response_format). Exactly one
// constraint in all; another set twice is vLLM's "multiple" 400.
void parse_structured_outputs(const Json& b, SamplingParams* p) {
  StructuredOutputsParams so;
  bool given = false;
  struct Source {
    std::string kind;   // json, regex, choice, grammar or json_object
    std::string param;  // the request's field
  };
  std::vector<Source> sources;
  if (const Json* s = field(b, "structured_outputs")) {
    if (!s->is_object()) wrong_type("structured_outputs", "an object", *s);
    given = true;
    // Keys vLLM's StructuredOutputsParams does not have are ignored, as its pydantic dataclass
    // ignores them (backend and disable_fallback were its older GuidedDecodingParams').
    for (const auto& [key, v] : s->items()) {
      if (v.is_null()) continue;
      const std::string name = "structured_outputs." + key;
      if (key == "json") {
        so.json = schema_text(v, name, true);
        sources.push_back({key, name});
      } else if (key == "regex") {
        so.regex = get_string(v, name);
        sources.push_back({key, name});
      } else if (key == "choice") {
        so.choice = get_choice(v, name);
        sources.push_back({key, name});
      } else if (key == "grammar") {
        so.grammar = get_string(v, name);
        sources.push_back({key, name});
      } else if (key == "json_object") {
        if (get_bool(v, name)) {
          so.json_object = true;
          sources.push_back({key, name});
        }
      } else if (key == "disable_any_whitespace") {
        so.disable_any_whitespace = get_bool(v, name);
      } else if (key == "disable_additional_properties") {
        if (get_bool(v, name)) not_supported_yet(name);
      } else if (key == "whitespace_pattern" || key == "structural_tag") {
        not_supported_yet(name);
      } else if (key == "backend") {
        get_string(v, name);  // the engine has one backend (xgrammar)
      } else if (key == "disable_fallback") {
        get_bool(v, name);
      }
    }
  }
  // vLLM's older names (before structured_outputs).
  if (const Json* v = field(b, "guided_json")) {
    so.json = schema_text(*v, "guided_json", true);
    sources.push_back({"json", "guided_json"});
  }
  if (const Json* v = field(b, "guided_regex")) {
    so.regex = get_string(*v, "guided_regex");
    sources.push_back({"regex", "guided_regex"});
  }
  if (const Json* v = field(b, "guided_choice")) {
    so.choice = get_choice(*v, "guided_choice");
    sources.push_back({"choice", "guided_choice"});
  }
  if (const Json* v = field(b, "guided_grammar")) {
    so.grammar = get_string(*v, "guided_grammar");
    sources.push_back({"grammar", "guided_grammar"});
  }
  if (const Json* v = field(b, "guided_decoding_backend")) get_string(*v, "guided_decoding_backend");
  if (field(b, "guided_whitespace_pattern") != nullptr) not_supported_yet("guided_whitespace_pattern");
  if (const Json* rf = field(b, "response_format")) {
    if (!rf->is_object()) wrong_type("response_format", "an object", *rf);
    const Json* type = field(*rf, "type");
    if (type == nullptr) bad_request("response_format.type is required", "response_format");
    const std::string t = get_string(*type, "response_format.type");
    std::optional<Source> source;
    if (t == "json_object") {
      so.json_object = true;
      source = Source{"json_object", "response_format"};
    } else if (t == "json_schema") {
      const Json* js = field(*rf, "json_schema");
      if (js == nullptr) {  // vLLM's text
        bad_request("When response_format type is 'json_schema', the 'json_schema' field must be provided.",
                    "response_format.json_schema");
      }
      if (!js->is_object()) wrong_type("response_format.json_schema", "an object", *js);
      const Json* name = field(*js, "name");
      if (name == nullptr) bad_request("response_format.json_schema.name is required", "response_format.json_schema.name");
      get_string(*name, "response_format.json_schema.name");
      if (const Json* d = field(*js, "description")) get_string(*d, "response_format.json_schema.description");
      if (const Json* strict = field(*js, "strict")) get_bool(*strict, "response_format.json_schema.strict");
      const Json* schema = field(*js, "schema");
      if (schema == nullptr) {
        bad_request("response_format.json_schema.schema is required (the JSON Schema of the output)",
                    "response_format.json_schema.schema");
      }
      so.json = schema_text(*schema, "response_format.json_schema.schema", false);
      source = Source{"json", "response_format"};
    } else if (t != "text") {
      bad_request("response_format type \"" + t +
                      "\" is not supported; only \"text\", \"json_object\" and \"json_schema\"",
                  "response_format");
    }
    if (source) {  // it replaces what the other fields set for its kind
      std::erase_if(sources, [&](const Source& s) { return s.kind == source->kind; });
      sources.push_back(*source);
      given = true;
    }
  }
  if (!sources.empty()) given = true;
  if (!given) return;
  if (sources.empty()) {  // vLLM's text
    bad_request("You must use one kind of structured outputs constraint but none are specified", "structured_outputs");
  }
  if (sources.size() > 1) {  // vLLM's text, then the fields
    std::string fields;
    for (const Source& s : sources) fields += (fields.empty() ? "" : ", ") + s.param;
    bad_request("You can only use one kind of structured outputs constraint but multiple are specified: " + fields,
                sources[1].param);
  }
  p->structured_outputs = std::move(so);
}

// Fields shared by completions and chat (everything but max_tokens and logprobs).
void parse_sampling(const Json& b, const SamplingDefaults& d, SamplingParams* p) {
  constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
  parse_structured_outputs(b, p);
  if (d.temperature) p->temperature = *d.temperature;
  if (d.top_p) p->top_p = *d.top_p;
  if (d.top_k) p->top_k = *d.top_k;
  if (d.min_p) p->min_p = *d.min_p;
  if (d.repetition_penalty) p->repetition_penalty = *d.repetition_penalty;
  if (auto* v = field(b, "n")) p->n = get_int(*v, "n", 1, 128);
  if (auto* v = field(b, "temperature")) p->temperature = static_cast<float>(get_number(*v, "temperature", 0.0, 100.0));
  if (auto* v = field(b, "top_p")) p->top_p = static_cast<float>(get_number(*v, "top_p", 0.0, 1.0));
  if (p->top_p <= 0.0f) bad_request("top_p must be in (0, 1]", "top_p");
  if (auto* v = field(b, "top_k")) {
    p->top_k = get_int(*v, "top_k", -1, kMaxInt32);
    if (p->top_k == 0) p->top_k = -1;  // vLLM: 0 also disables
  }
  if (auto* v = field(b, "min_p")) p->min_p = static_cast<float>(get_number(*v, "min_p", 0.0, 1.0));
  if (auto* v = field(b, "presence_penalty")) p->presence_penalty = static_cast<float>(get_number(*v, "presence_penalty", -2.0, 2.0));
  if (auto* v = field(b, "frequency_penalty")) p->frequency_penalty = static_cast<float>(get_number(*v, "frequency_penalty", -2.0, 2.0));
  if (auto* v = field(b, "repetition_penalty")) {
    p->repetition_penalty = static_cast<float>(get_number(*v, "repetition_penalty", 0.0, 1e6));
    if (p->repetition_penalty <= 0.0f) bad_request("repetition_penalty must be > 0", "repetition_penalty");
  }
  if (auto* v = field(b, "seed")) p->seed = get_seed(*v);
  if (auto* v = field(b, "stop")) {
    if (v->is_string()) {
      p->stop = {v->get<std::string>()};
    } else if (v->is_array()) {
      if (v->size() > 64) bad_request("stop holds at most 64 strings", "stop");
      for (const Json& s : *v) p->stop.push_back(get_string(s, "stop"));
    } else {
      wrong_type("stop", "a string or a list of strings", *v);
    }
    std::erase_if(p->stop, [](const std::string& s) { return s.empty(); });
  }
  if (auto* v = field(b, "stop_token_ids")) {
    if (!v->is_array()) wrong_type("stop_token_ids", "a list of token ids", *v);
    for (const Json& x : *v) p->stop_token_ids.push_back(get_int(x, "stop_token_ids", 0, kMaxInt32));
  }
  if (auto* v = field(b, "logit_bias")) {
    if (!v->is_object()) wrong_type("logit_bias", "an object of token id to bias", *v);
    if (v->size() > 1024) bad_request("logit_bias holds at most 1024 entries", "logit_bias");
    std::string not_integers;  // vLLM names every key that is no integer, as a Python list
    for (const auto& [key, bias] : v->items()) {
      std::optional<int64_t> id;
      try {
        size_t used = 0;
        const int64_t parsed = std::stoll(key, &used);
        if (used == key.size()) id = parsed;
      } catch (const std::exception&) {
      }
      if (!id) {
        std::string quoted;
        for (char ch : key) quoted += ch == '\'' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
        not_integers += (not_integers.empty() ? "'" : ", '") + quoted + "'";
        continue;
      }
      if (*id < 0 || *id > kMaxInt32) bad_request("logit_bias keys must be token ids, not \"" + key + "\"", "logit_bias");
      p->logit_bias[static_cast<int32_t>(*id)] = static_cast<float>(get_number(bias, "logit_bias", -100.0, 100.0));
    }
    if (!not_integers.empty()) {
      bad_request("logit_bias contains key(s) that cannot be converted to integer token IDs: [" + not_integers + "]",
                  "logit_bias");
    }
  }
  if (auto* v = field(b, "min_tokens")) p->min_tokens = get_int(*v, "min_tokens", 0, kMaxInt32);
  if (auto* v = field(b, "ignore_eos")) p->ignore_eos = get_bool(*v, "ignore_eos");
  if (auto* v = field(b, "skip_special_tokens")) p->skip_special_tokens = get_bool(*v, "skip_special_tokens");
  if (auto* v = field(b, "include_stop_str_in_output")) {
    p->include_stop_str_in_output = get_bool(*v, "include_stop_str_in_output");
  }
  if (auto* v = field(b, "user")) get_string(*v, "user");
  if (auto* v = field(b, "service_tier")) get_string(*v, "service_tier");
  if (auto* v = field(b, "metadata")) {  // OpenAI's: up to 16 string labels
    if (!v->is_object() || v->size() > 16) wrong_type("metadata", "an object of at most 16 strings", *v);
    for (const auto& [k, label] : v->items()) get_string(label, "metadata");
  }
  if (auto* v = field(b, "spaces_between_special_tokens")) get_bool(*v, "spaces_between_special_tokens");
  if (auto* v = field(b, "allowed_token_ids")) {  // vLLM's extra
    if (!v->is_array()) wrong_type("allowed_token_ids", "a list of token ids", *v);
    if (v->empty()) bad_request("allowed_token_ids must not be empty", "allowed_token_ids");
    for (int32_t id : get_token_ids(*v, "allowed_token_ids")) p->allowed_token_ids.push_back(id);
  }
  if (auto* v = field(b, "bad_words")) {  // vLLM's extra
    if (!v->is_array()) wrong_type("bad_words", "a list of strings", *v);
    if (v->size() > 256) bad_request("bad_words holds at most 256 words", "bad_words");
    for (const Json& w : *v) {
      p->bad_words.push_back(get_string(w, "bad_words"));
      if (p->bad_words.back().find_first_not_of(" \t\n\r") == std::string::npos) {
        bad_request("bad_words must not be empty or blank", "bad_words");
      }
    }
  }
}

// vLLM's logprob_token_ids: the tokens whose logprobs each generated position reports, with
// the chosen one's, in place of the top K; it needs logprobs (how a request asks for them is
// its API's: `needs`), and not with beam search (vLLM's texts).
void parse_logprob_token_ids(const Json& b, bool logprobs_asked, const char* needs, bool use_beam_search,
                             SamplingParams* p) {
  const Json* v = field(b, "logprob_token_ids");
  if (v == nullptr) return;
  if (!v->is_array()) wrong_type("logprob_token_ids", "a list of token ids", *v);
  if (v->empty()) return;
  if (use_beam_search) bad_request("`logprob_token_ids` is not supported with beam search.", "logprob_token_ids");
  if (!logprobs_asked) bad_request(needs, "logprob_token_ids");
  if (v->size() > SamplingParams::kMaxLogprobTokenIds) {
    bad_request("Requested logprob_token_ids of length " + std::to_string(v->size()) +
                    ", which is greater than max allowed: " + std::to_string(SamplingParams::kMaxLogprobTokenIds),
                "logprob_token_ids");
  }
  p->logprob_token_ids = get_token_ids(*v, "logprob_token_ids");
}

// vLLM's use_beam_search and length_penalty (any finite number, as vLLM's float).
void parse_beam_search(const Json& b, bool* use_beam_search, double* length_penalty) {
  if (auto* v = field(b, "use_beam_search")) *use_beam_search = get_bool(*v, "use_beam_search");
  if (auto* v = field(b, "length_penalty")) {
    *length_penalty = get_number(*v, "length_penalty", -std::numeric_limits<double>::max(),
                                 std::numeric_limits<double>::max());
  }
}

void parse_stream_options(const Json& b, bool* stream, bool* include_usage, bool* continuous_usage) {
  if (auto* v = field(b, "stream")) *stream = get_bool(*v, "stream");
  if (auto* v = field(b, "stream_options")) {
    if (!v->is_object()) wrong_type("stream_options", "an object", *v);
    if (!*stream) bad_request("stream_options is only allowed with stream", "stream_options");
    if (auto* u = field(*v, "include_usage")) *include_usage = get_bool(*u, "stream_options.include_usage");
    // vLLM's extra: usage in every chunk too (with include_usage).
    if (auto* u = field(*v, "continuous_usage_stats")) {
      *continuous_usage = get_bool(*u, "stream_options.continuous_usage_stats") && *include_usage;
    }
  }
}

std::optional<std::string> parse_model(const Json& b) {
  if (auto* v = field(b, "model")) return get_string(*v, "model");
  return std::nullopt;
}

// Text of a content value: a string, or a list of parts whose text parts are joined.
std::string content_text(const Json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) wrong_type(where, "a string or a list of content parts", content);
  std::string text;
  bool first = true;
  for (const Json& part : content) {
    if (!part.is_object()) wrong_type(where + " part", "an object", part);
    auto t = part.find("type");
    if (t == part.end() || !t->is_string()) bad_request(where + " parts need a string \"type\"", "messages");
    const std::string type = t->get<std::string>();
    if (type != "text" && type != "input_text") {
      bad_request("content parts of type \"" + type + "\" are not supported by this model", "messages");
    }
    auto x = part.find("text");
    if (x == part.end() || !x->is_string()) bad_request(where + " text parts need a string \"text\"", "messages");
    if (!first) text += "\n";
    text += x->get<std::string>();
    first = false;
  }
  return text;
}

}  // namespace

void bad_request(const std::string& message, const std::string& param) {
  throw ApiError(http_status::bad_request, message, param);
}

Json parse_client_json(std::string_view text, int max_depth) {
  // Ordered objects find keys by linear search, so k keys cost k^2/2 comparisons: the
  // parse stops once a text's objects would cost more than kMaxKeyComparisons.
  constexpr size_t kMaxKeyComparisons = size_t{4} << 20;
  std::vector<size_t> keys_per_object;
  size_t comparisons = 0;
  Json::parser_callback_t limits = [&](int depth, Json::parse_event_t event, Json&) {
    if (depth > max_depth) bad_request("JSON is nested deeper than " + std::to_string(max_depth) + " levels");
    if (event == Json::parse_event_t::object_start) {
      keys_per_object.push_back(0);
    } else if (event == Json::parse_event_t::object_end) {
      if (!keys_per_object.empty()) keys_per_object.pop_back();
    } else if (event == Json::parse_event_t::key && !keys_per_object.empty()) {
      comparisons += keys_per_object.back()++;
      if (comparisons > kMaxKeyComparisons) bad_request("JSON objects in the body have too many keys");
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), limits);
  } catch (const Json::exception& e) {
    bad_request(std::string("invalid JSON: ") + e.what());
  }
}

Json parse_json_body(const std::string& body) {
  Json j = parse_client_json(body, kMaxJsonDepth);
  if (!j.is_object()) bad_request("the request body must be a JSON object");
  return j;
}

// vLLM's request_id: the reply's id is built from it (a non-empty string).
std::optional<std::string> parse_request_id(const Json& b) {
  const Json* v = field(b, "request_id");
  if (v == nullptr) return std::nullopt;
  std::string id = get_string(*v, "request_id");
  if (id.empty() || id.size() > 256) bad_request("request_id must hold 1 to 256 characters", "request_id");
  return id;
}

CompletionRequest parse_completion_request(const Json& b, const SamplingDefaults& defaults) {
  check_request_fields(b, RequestRoute::kCompletion);
  CompletionRequest r;
  r.model = parse_model(b);
  r.request_id = parse_request_id(b);
  const Json* prompt = field(b, "prompt");
  // vLLM's text: one request may carry prompt_embeds instead (not supported here).
  const std::string kNoPrompt = "Either prompt or prompt_embeds must be provided and non-empty.";
  if (const Json* embeds = field(b, "prompt_embeds")) {
    // An empty prompt_embeds without a prompt is vLLM's "neither" case; real ones are not built.
    const bool empty = (embeds->is_array() || embeds->is_string()) && embeds->empty();
    if (!(empty && prompt == nullptr)) bad_request("prompt_embeds is not supported", "prompt_embeds");
  }
  if (prompt == nullptr) bad_request(kNoPrompt, "prompt");
  if (prompt->is_string()) {
    if (prompt->get_ref<const std::string&>().empty()) bad_request(kNoPrompt, "prompt");
    r.prompts.push_back({prompt->get<std::string>(), {}});
  } else if (prompt->is_array()) {
    if (prompt->empty()) bad_request(kNoPrompt, "prompt");
    const Json& first = prompt->front();
    if (first.is_number()) {
      r.prompts.push_back({std::nullopt, get_token_ids(*prompt, "prompt")});
    } else {
      for (const Json& p : *prompt) {
        if (p.is_string()) {
          r.prompts.push_back({p.get<std::string>(), {}});
        } else if (p.is_array()) {
          if (p.empty()) bad_request(kNoPrompt, "prompt");
          r.prompts.push_back({std::nullopt, get_token_ids(p, "prompt")});
        } else {
          wrong_type("prompt", "a string, a list of strings or a list of token ids", p);
        }
      }
    }
  } else {
    wrong_type("prompt", "a string, a list of strings or a list of token ids", *prompt);
  }
  if (r.prompts.size() > 1024) bad_request("at most 1024 prompts per request", "prompt");
  parse_sampling(b, defaults, &r.params);
  if (auto* v = field(b, "max_tokens")) {
    r.params.max_tokens = get_int(*v, "max_tokens", 1, std::numeric_limits<int32_t>::max());
    r.max_tokens_given = true;
  }
  if (auto* v = field(b, "logprobs")) r.logprobs = get_logprobs_count(*v, "logprobs");
  if (r.logprobs >= 0) r.params.logprobs = std::max<int64_t>(r.logprobs, 1);
  if (auto* v = field(b, "echo")) r.echo = get_bool(*v, "echo");
  if (r.echo && r.logprobs >= 0) r.params.prompt_logprobs = r.logprobs;
  if (auto* v = field(b, "best_of")) {
    if (get_int(*v, "best_of", 1, 128) != r.params.n) bad_request("best_of other than n is not supported", "best_of");
  }
  if (auto* v = field(b, "suffix")) {
    if (!get_string(*v, "suffix").empty()) bad_request("suffix is not supported", "suffix");
  }
  if (auto* v = field(b, "priority")) r.priority = static_cast<int32_t>(get_int(*v, "priority", -1000000, 1000000));
  if (auto* v = field(b, "add_special_tokens")) r.add_special_tokens = get_bool(*v, "add_special_tokens");
  if (auto* v = field(b, "return_token_ids")) r.return_token_ids = get_bool(*v, "return_token_ids");
  if (auto* v = field(b, "return_tokens_as_token_ids")) {
    r.return_tokens_as_token_ids = get_bool(*v, "return_tokens_as_token_ids");
  }
  parse_stream_options(b, &r.stream, &r.include_usage, &r.continuous_usage);
  r.truncate_prompt_tokens = parse_truncate_prompt_tokens(b);
  r.truncate_right = parse_truncation_side(b);
  r.prompt_logprobs = parse_prompt_logprobs(b, r.stream, &r.params);
  parse_beam_search(b, &r.use_beam_search, &r.length_penalty);
  parse_logprob_token_ids(b, r.logprobs >= 0, "when using `logprob_token_ids`, `logprobs` must be set.",
                          r.use_beam_search, &r.params);
  // vLLM's text; its chat route streams a beam search's result instead.
  if (r.stream && r.use_beam_search) bad_request("Streaming is not currently supported with beam search");
  return r;
}

ChatRequest parse_chat_request(const Json& b, const SamplingDefaults& defaults) {
  check_request_fields(b, RequestRoute::kChat);
  ChatRequest r;
  r.model = parse_model(b);
  const Json* messages = field(b, "messages");
  if (messages == nullptr) bad_request("messages is required", "messages");
  if (!messages->is_array()) wrong_type("messages", "a list", *messages);
  if (messages->empty()) bad_request("messages must not be empty", "messages");
  r.messages = Json::array();
  for (const Json& m : *messages) {
    if (!m.is_object()) wrong_type("messages[]", "an object", m);
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) bad_request("every message needs a string \"role\"", "messages");
    Json msg = m;
    if (auto c = m.find("content"); c != m.end() && !c->is_null()) {
      msg["content"] = content_text(*c, "messages[].content");
    } else {
      msg["content"] = "";  // as vLLM: a null or missing content renders as empty text
    }
    if (auto calls = msg.find("tool_calls"); calls != msg.end() && calls->is_array()) {
      // Templates expect arguments as objects; OpenAI sends them as JSON text.
      for (Json& call : *calls) {
        if (!call.is_object()) continue;
        auto fn = call.find("function");
        if (fn == call.end() || !fn->is_object()) continue;
        auto args = fn->find("arguments");
        if (args != fn->end() && args->is_string()) {
          // JSON inside a string escapes the body's depth limit: parse it under its own, and
          // leave text that is not a small enough object as it came.
          try {
            Json parsed = parse_client_json(args->get_ref<const std::string&>(), kMaxToolArgumentsDepth);
            if (parsed.is_object()) *args = std::move(parsed);
          } catch (const ApiError&) {
          }
        }
      }
    }
    r.messages.push_back(std::move(msg));
  }
  if (auto* v = field(b, "tools")) {
    if (!v->is_array()) wrong_type("tools", "a list", *v);
    r.tools = *v;
  }
  if (auto* v = field(b, "tool_choice")) {
    if (!v->is_string() && !v->is_object()) wrong_type("tool_choice", "a string or an object", *v);
    if (v->is_object()) check_named_tool_choice(*v, r.tools);
    r.tool_choice = *v;
  }
  if (auto* v = field(b, "parallel_tool_calls")) r.parallel_tool_calls = get_bool(*v, "parallel_tool_calls");
  if (auto* v = field(b, "include_reasoning")) r.include_reasoning = get_bool(*v, "include_reasoning");
  if (auto* v = field(b, "chat_template_kwargs")) {
    if (!v->is_object()) wrong_type("chat_template_kwargs", "an object", *v);
    r.chat_template_kwargs = *v;
  }
  r.request_id = parse_request_id(b);
  // vLLM's documents (RAG templates read them) and reasoning_effort (gpt-oss-style templates):
  // template variables, unless chat_template_kwargs sets them.
  if (auto* v = field(b, "documents")) {
    if (!v->is_array() || !std::all_of(v->begin(), v->end(), [](const Json& d) { return d.is_object(); })) {
      wrong_type("documents", "a list of objects", *v);
    }
    if (!r.chat_template_kwargs.contains("documents")) r.chat_template_kwargs["documents"] = *v;
  }
  if (auto* v = field(b, "reasoning_effort")) {
    const std::string effort = get_string(*v, "reasoning_effort");
    if (effort != "low" && effort != "medium" && effort != "high") {
      bad_request("reasoning_effort must be \"low\", \"medium\" or \"high\"", "reasoning_effort");
    }
    if (!r.chat_template_kwargs.contains("reasoning_effort")) r.chat_template_kwargs["reasoning_effort"] = effort;
  }
  if (auto* v = field(b, "chat_template")) r.chat_template = get_string(*v, "chat_template");
  if (auto* v = field(b, "add_generation_prompt")) r.add_generation_prompt = get_bool(*v, "add_generation_prompt");
  if (auto* v = field(b, "continue_final_message")) r.continue_final_message = get_bool(*v, "continue_final_message");
  if (auto* v = field(b, "echo")) r.echo = get_bool(*v, "echo");
  if (auto* v = field(b, "return_token_ids")) r.return_token_ids = get_bool(*v, "return_token_ids");
  if (auto* v = field(b, "return_tokens_as_token_ids")) {
    r.return_tokens_as_token_ids = get_bool(*v, "return_tokens_as_token_ids");
  }
  if (r.continue_final_message && r.add_generation_prompt && field(b, "add_generation_prompt") != nullptr) {
    bad_request("continue_final_message and add_generation_prompt cannot both be true", "continue_final_message");
  }
  if (r.continue_final_message) r.add_generation_prompt = false;
  if (auto* v = field(b, "add_special_tokens")) r.add_special_tokens = get_bool(*v, "add_special_tokens");
  parse_sampling(b, defaults, &r.params);
  if (r.tool_choice.is_object()) {  // a named tool's call, with structured_outputs' constraint too: vLLM's 400
    const Json* so = field(b, "structured_outputs");
    for (const char* kind : {"json", "regex", "choice"}) {
      if (so != nullptr && field(*so, kind) != nullptr) {
        bad_request("You can only either use constraints for structured outputs or tools, not both.",
                    "structured_outputs");
      }
    }
  }
  for (const char* name : {"max_completion_tokens", "max_tokens"}) {
    if (auto* v = field(b, name)) {
      r.params.max_tokens = get_int(*v, name, 1, std::numeric_limits<int32_t>::max());
      r.max_tokens_given = true;
      break;
    }
  }
  if (auto* v = field(b, "logprobs")) r.logprobs = get_bool(*v, "logprobs");
  if (auto* v = field(b, "top_logprobs")) {
    r.top_logprobs = get_logprobs_count(*v, "top_logprobs");
    if (!r.logprobs && r.top_logprobs != 0) {
      bad_request("when using `top_logprobs`, `logprobs` must be set to true.", "top_logprobs");
    }
  }
  if (r.logprobs) r.params.logprobs = std::max<int64_t>(r.top_logprobs, 1);
  if (auto* v = field(b, "priority")) r.priority = static_cast<int32_t>(get_int(*v, "priority", -1000000, 1000000));
  parse_stream_options(b, &r.stream, &r.include_usage, &r.continuous_usage);
  r.truncate_prompt_tokens = parse_truncate_prompt_tokens(b);
  r.truncate_right = parse_truncation_side(b);
  r.prompt_logprobs = parse_prompt_logprobs(b, r.stream, &r.params);
  parse_beam_search(b, &r.use_beam_search, &r.length_penalty);
  parse_logprob_token_ids(b, r.logprobs, "when using `logprob_token_ids`, `logprobs` must be set to true.",
                          r.use_beam_search, &r.params);
  if (const Json* kv = field(b, "kv_transfer_params")) {
    if (!kv->is_object()) wrong_type("kv_transfer_params", "an object", *kv);
    if (const Json* ids = field(*kv, "prompt_token_ids"); ids != nullptr && !r.echo) {
      const bool ok = ids->is_array() && !ids->empty() &&
                      std::all_of(ids->begin(), ids->end(), [](const Json& x) { return x.is_number_integer(); });
      const char* param = "kv_transfer_params.prompt_token_ids";
      if (!ok) bad_request("`kv_transfer_params['prompt_token_ids']` must be a non-empty list of non-negative integers.", param);
      r.forwarded_prompt_ids = get_token_ids(*ids, param);
    }
  }
  return r;
}

}  // namespace tessera::server

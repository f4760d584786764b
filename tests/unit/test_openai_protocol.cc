// OpenAI request parsing: every accepted shape of a field, and every malformed one answered
// with 400 naming the field.
#include <gtest/gtest.h>

#include <limits>

#include "server/openai_protocol.h"
#include "server/prometheus.h"

namespace tessera::server {
namespace {

using Json = nlohmann::ordered_json;

CompletionRequest completion(const std::string& body) { return parse_completion_request(parse_json_body(body), {}); }
ChatRequest chat(const std::string& body) { return parse_chat_request(parse_json_body(body), {}); }

// The 400's param (or "<none>"), or "ok" when the body parses.
template <typename F>
std::string error_param(F parse, const std::string& body) {
  try {
    parse(body);
    return "ok";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, boost::beast::http::status::bad_request) << body;
    EXPECT_FALSE(std::string(e.what()).empty());
    return e.param.empty() ? "<none>" : e.param;
  }
}

// The 400's message, or "ok" when the body parses.
template <typename F>
std::string error_text(F parse, const std::string& body) {
  try {
    parse(body);
    return "ok";
  } catch (const ApiError& e) {
    return e.what();
  }
}

const std::string kMsgs = R"("messages": [{"role": "user", "content": "hi"}])";
const std::string kMultiple = "You can only use one kind of structured outputs constraint but multiple are specified";

std::string c_param(const std::string& b) { return error_param([](const std::string& x) { return completion(x); }, b); }
std::string h_param(const std::string& b) { return error_param([](const std::string& x) { return chat(x); }, b); }
std::string c_text(const std::string& b) { return error_text([](const std::string& x) { return completion(x); }, b); }
std::string h_text(const std::string& b) { return error_text([](const std::string& x) { return chat(x); }, b); }
// A chat body with these fields after the messages.
std::string chat_body(const std::string& fields) { return "{" + kMsgs + ", " + fields + "}"; }
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// OpenAI's response_format: text is nothing, json_object and json_schema constrain.
TEST(OpenAiProtocol, ResponseFormatMapsToStructuredOutputs) {
  EXPECT_FALSE(chat(chat_body(R"("response_format": {"type": "text"})")).params.structured_outputs);
  EXPECT_FALSE(chat(chat_body(R"("response_format": null)")).params.structured_outputs);
  EXPECT_FALSE(chat(chat_body(R"("temperature": 0)")).params.structured_outputs);
  const auto object = chat(chat_body(R"("response_format": {"type": "json_object"})")).params.structured_outputs;
  ASSERT_TRUE(object);
  EXPECT_TRUE(object->json_object);
  EXPECT_EQ(object->kinds(), 1);
  const auto schema = chat(chat_body(
      R"("response_format": {"type": "json_schema", "json_schema": {"name": "p", "strict": true,
         "schema": {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "string"}}}}})"))
                          .params.structured_outputs;
  ASSERT_TRUE(schema);
  ASSERT_TRUE(schema->json);  // serialized compactly, keys in the request's order
  EXPECT_EQ(*schema->json, R"({"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"}}})");
  EXPECT_EQ(schema->kinds(), 1);
  EXPECT_FALSE(schema->json_object);
  // Completions take it too.
  const auto c = completion(R"({"prompt": "x", "response_format": {"type": "json_object"}})").params;
  ASSERT_TRUE(c.structured_outputs);
  EXPECT_TRUE(c.structured_outputs->json_object);
  EXPECT_EQ(c.validate(), "");
}

TEST(OpenAiProtocol, BadResponseFormatsNameTheField) {
  EXPECT_EQ(h_param(chat_body(R"("response_format": {"type": "json_schema", "json_schema": {"name": "p"}})")),
            "response_format.json_schema.schema");
  EXPECT_EQ(h_param(chat_body(R"("response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": null}})")),
            "response_format.json_schema.schema");
  for (const char* schema : {"true", "\"{}\"", "[1]", "5"}) {
    EXPECT_EQ(h_param(chat_body(std::string(R"("response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": )") +
                                schema + "}}")),
              "response_format.json_schema.schema")
        << schema;
  }
  EXPECT_EQ(h_text(chat_body(R"("response_format": {"type": "json_schema"})")),
            "When response_format type is 'json_schema', the 'json_schema' field must be provided.");
  EXPECT_EQ(h_param(chat_body(R"("response_format": {"type": "json_schema", "json_schema": {"schema": {}}})")),
            "response_format.json_schema.name");
  EXPECT_EQ(h_param(chat_body(R"("response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": {}, "strict": "x"}})")),
            "response_format.json_schema.strict");
  for (const char* type : {"structural_tag", "grammar", "json"}) {
    const std::string body = chat_body(std::string(R"("response_format": {"type": ")") + type + "\"}");
    EXPECT_EQ(h_param(body), "response_format") << type;
    EXPECT_TRUE(contains(h_text(body), std::string("\"") + type + "\" is not supported")) << h_text(body);
  }
  EXPECT_EQ(h_param(chat_body(R"("response_format": {})")), "response_format");
  EXPECT_EQ(c_param(R"({"prompt": "x", "response_format": "json"})"), "response_format");
  EXPECT_EQ(c_param(R"({"prompt": "x", "response_format": {"type": 1}})"), "response_format.type");
}

// vLLM's structured_outputs object: each kind, and its options.
TEST(OpenAiProtocol, StructuredOutputsObjectMapsEachKind) {
  auto so = [](const std::string& fields) {
    return completion(R"({"prompt": "x", "structured_outputs": {)" + fields + "}}").params.structured_outputs;
  };
  auto json = so(R"("json": {"type": "object", "required": ["a"]})");
  ASSERT_TRUE(json && json->json);
  EXPECT_EQ(*json->json, R"({"type":"object","required":["a"]})");
  // A string holding JSON: parsed and serialized again.
  json = so(R"("json": "{ \"type\" : \"array\" }")");
  ASSERT_TRUE(json && json->json);
  EXPECT_EQ(*json->json, R"({"type":"array"})");
  const auto regex = so(R"("regex": "[0-9]{3}")");
  ASSERT_TRUE(regex && regex->regex);
  EXPECT_EQ(*regex->regex, "[0-9]{3}");
  const auto choice = so(R"("choice": ["yes", "no"])");
  ASSERT_TRUE(choice && choice->choice);
  EXPECT_EQ(*choice->choice, (std::vector<std::string>{"yes", "no"}));
  const auto grammar = so(R"("grammar": "root ::= \"a\"")");
  ASSERT_TRUE(grammar && grammar->grammar);
  EXPECT_EQ(*grammar->grammar, "root ::= \"a\"");
  const auto object = so(R"("json_object": true, "disable_any_whitespace": true)");
  ASSERT_TRUE(object);
  EXPECT_TRUE(object->json_object);
  EXPECT_TRUE(object->disable_any_whitespace);
  EXPECT_EQ(object->kinds(), 1);
  // Accepted without effect: backend, disable_fallback, disable_additional_properties false,
  // nulls and keys vLLM's dataclass does not have (its pydantic dataclass ignores them).
  const auto quiet = so(R"("regex": "a", "backend": "xgrammar", "disable_fallback": true,
                           "disable_additional_properties": false, "json": null, "whitespace_pattern": null, "other": 1)");
  ASSERT_TRUE(quiet);
  EXPECT_EQ(quiet->kinds(), 1);
  EXPECT_FALSE(quiet->disable_any_whitespace);
  // Chat takes it too, and a named tool_choice with it is vLLM's 400.
  EXPECT_TRUE(chat(chat_body(R"("structured_outputs": {"choice": ["a"]})")).params.structured_outputs);
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f"}}], )";
  EXPECT_EQ(h_text(chat_body(tools + R"("tool_choice": {"type": "function", "function": {"name": "f"}},
                                       "structured_outputs": {"regex": "a"})")),
            "You can only either use constraints for structured outputs or tools, not both.");
  EXPECT_EQ(h_param(chat_body(tools + R"("tool_choice": "auto", "structured_outputs": {"regex": "a"})")), "ok");
}

TEST(OpenAiProtocol, BadStructuredOutputsNameTheField) {
  auto so = [](const std::string& fields) { return R"({"prompt": "x", "structured_outputs": {)" + fields + "}}"; };
  EXPECT_EQ(c_param(so(R"("regex": 5)")), "structured_outputs.regex");
  EXPECT_EQ(c_param(so(R"("grammar": ["a"])")), "structured_outputs.grammar");
  EXPECT_EQ(c_param(so(R"("choice": "x")")), "structured_outputs.choice");
  EXPECT_EQ(c_param(so(R"("choice": [1])")), "structured_outputs.choice");
  EXPECT_EQ(c_param(so(R"("choice": [])")), "structured_outputs.choice");
  EXPECT_EQ(c_param(so(R"("json": "not json")")), "structured_outputs.json");
  EXPECT_TRUE(contains(c_text(so(R"("json": "{\"a\": ")")), "structured_outputs.json is not valid JSON"));
  EXPECT_EQ(c_param(so(R"("json": "[1, 2]")")), "structured_outputs.json");
  EXPECT_EQ(c_param(so(R"("json": 5)")), "structured_outputs.json");
  EXPECT_EQ(c_param(so(R"("json_object": "maybe")")), "structured_outputs.json_object");
  EXPECT_EQ(c_param(so(R"("regex": "a", "disable_any_whitespace": [])")), "structured_outputs.disable_any_whitespace");
  EXPECT_EQ(c_param(so(R"("regex": "a", "backend": 1)")), "structured_outputs.backend");
  for (const char* option : {R"("disable_additional_properties": true)", R"("whitespace_pattern": "[ ]?")",
                             R"("structural_tag": "{}")"}) {
    const std::string body = so(std::string(R"("json_object": true, )") + option);
    EXPECT_TRUE(contains(c_text(body), "is not supported yet")) << option;
  }
  EXPECT_EQ(c_param(so(R"("json_object": true, "disable_additional_properties": true)")),
            "structured_outputs.disable_additional_properties");
  EXPECT_EQ(c_param(so(R"("json_object": true, "whitespace_pattern": "[ ]?")")), "structured_outputs.whitespace_pattern");
  EXPECT_EQ(c_param(so(R"("json_object": true, "structural_tag": "{}")")), "structured_outputs.structural_tag");
  EXPECT_EQ(c_param(R"({"prompt": "x", "structured_outputs": "regex"})"), "structured_outputs");
  // None of the kinds: vLLM's text.
  for (const char* fields : {"", R"("disable_any_whitespace": true)", R"("json_object": false)", R"("regex": null)"}) {
    EXPECT_EQ(c_text(so(fields)), "You must use one kind of structured outputs constraint but none are specified")
        << fields;
  }
}

// vLLM's older top-level names map to the same constraint.
TEST(OpenAiProtocol, GuidedFieldsMapToStructuredOutputs) {
  auto params = [](const std::string& fields) {
    return completion(R"({"prompt": "x", )" + fields + "}").params.structured_outputs;
  };
  auto json = params(R"("guided_json": {"type": "string"})");
  ASSERT_TRUE(json && json->json);
  EXPECT_EQ(*json->json, R"({"type":"string"})");
  json = params(R"("guided_json": "{\"type\": \"number\"}", "guided_decoding_backend": "xgrammar")");
  ASSERT_TRUE(json && json->json);
  EXPECT_EQ(*json->json, R"({"type":"number"})");
  const auto regex = params(R"("guided_regex": "a|b")");
  ASSERT_TRUE(regex && regex->regex);
  EXPECT_EQ(*regex->regex, "a|b");
  const auto choice = params(R"("guided_choice": ["x", "y"])");
  ASSERT_TRUE(choice && choice->choice);
  EXPECT_EQ(choice->choice->size(), 2u);
  const auto grammar = params(R"("guided_grammar": "root ::= [a-z]+")");
  ASSERT_TRUE(grammar && grammar->grammar);
  EXPECT_EQ(*grammar->grammar, "root ::= [a-z]+");
  EXPECT_FALSE(params(R"("guided_decoding_backend": "outlines")"));
  EXPECT_TRUE(chat(chat_body(R"("guided_choice": ["a"])")).params.structured_outputs);

  EXPECT_EQ(c_param(R"({"prompt": "x", "guided_regex": 5})"), "guided_regex");
  EXPECT_EQ(c_param(R"({"prompt": "x", "guided_choice": "x"})"), "guided_choice");
  EXPECT_EQ(c_param(R"({"prompt": "x", "guided_choice": [1]})"), "guided_choice");
  EXPECT_EQ(c_param(R"({"prompt": "x", "guided_json": "nope"})"), "guided_json");
  EXPECT_EQ(c_param(R"({"prompt": "x", "guided_grammar": {}})"), "guided_grammar");
  EXPECT_EQ(c_param(R"({"prompt": "x", "guided_decoding_backend": 3})"), "guided_decoding_backend");
  EXPECT_EQ(c_param(R"({"prompt": "x", "guided_regex": "a", "guided_whitespace_pattern": " "})"),
            "guided_whitespace_pattern");
  EXPECT_TRUE(contains(c_text(R"({"prompt": "x", "guided_regex": "a", "guided_whitespace_pattern": " "})"),
                       "not supported yet"));
}

// More than one constraint in all: vLLM's text, naming the fields. response_format replaces
// its own kind (json or json_object) from the other fields, as vLLM's does.
TEST(OpenAiProtocol, MoreThanOneStructuredOutputsKindIsRefused) {
  const std::string both_guided = R"({"prompt": "x", "guided_json": {}, "guided_regex": "a"})";
  EXPECT_TRUE(contains(c_text(both_guided), kMultiple));
  EXPECT_TRUE(contains(c_text(both_guided), "guided_json, guided_regex"));
  EXPECT_EQ(c_param(both_guided), "guided_regex");
  EXPECT_TRUE(contains(h_text(chat_body(R"("response_format": {"type": "json_object"}, "structured_outputs": {"regex": "a"})")),
                       kMultiple));
  EXPECT_TRUE(contains(c_text(R"({"prompt": "x", "structured_outputs": {"regex": "a", "choice": ["b"]}})"), kMultiple));
  EXPECT_TRUE(contains(c_text(R"({"prompt": "x", "structured_outputs": {"json_object": true, "grammar": "g"}})"), kMultiple));
  EXPECT_TRUE(contains(c_text(R"({"prompt": "x", "structured_outputs": {"regex": "a"}, "guided_regex": "b"})"), kMultiple));
  EXPECT_TRUE(contains(c_text(R"({"prompt": "x", "guided_choice": ["a"],
                                  "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {}}}})"),
                       kMultiple));
  // The same kind from response_format: it wins, the other options stay.
  const auto replaced = chat(chat_body(R"("structured_outputs": {"json": {"type": "string"}, "disable_any_whitespace": true},
      "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "integer"}}})"))
                            .params.structured_outputs;
  ASSERT_TRUE(replaced && replaced->json);
  EXPECT_EQ(*replaced->json, R"({"type":"integer"})");
  EXPECT_TRUE(replaced->disable_any_whitespace);
  EXPECT_EQ(replaced->kinds(), 1);
  const auto options_only = chat(chat_body(R"("structured_outputs": {"disable_any_whitespace": true},
      "response_format": {"type": "json_object"})")).params.structured_outputs;
  ASSERT_TRUE(options_only);
  EXPECT_TRUE(options_only->json_object && options_only->disable_any_whitespace);
  EXPECT_EQ(chat(chat_body(R"("guided_json": {"type": "string"},
      "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {}}})")).params.structured_outputs->json,
            "{}");
  // SamplingParams::validate says the same of params built by hand.
  SamplingParams p;
  p.structured_outputs = StructuredOutputsParams{};
  p.structured_outputs->regex = "a";
  p.structured_outputs->json_object = true;
  EXPECT_TRUE(contains(p.validate(), kMultiple));
}

TEST(OpenAiProtocol, LogitBiasNamesEveryKeyThatIsNoInteger) {
  auto c = [](const std::string& b) { return completion(b); };
  EXPECT_EQ(error_text(c, R"({"prompt": "x", "logit_bias": {"bad1": 1, "5": 2, "bad2": 3}})"),
            "logit_bias contains key(s) that cannot be converted to integer token IDs: ['bad1', 'bad2']");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "logit_bias": {"-5": 1}})"), "logit_bias");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "logit_bias": {"5": 1, "7": -2}})"), "ok");
}

TEST(OpenAiProtocol, ValidationAsVllmDoesIt) {
  auto c = [](const std::string& b) { return completion(b); };
  auto h = [](const std::string& b) { return chat(b); };
  // Seeds are 64-bit integers read exactly: -2^63 - 1 arrives as a float that rounds to -2^63.
  EXPECT_EQ(completion(R"({"prompt": "x", "seed": -9223372036854775808})").params.seed,
            static_cast<uint64_t>(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "seed": -9223372036854775809})"), "seed");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "seed": 9223372036854775808})"), "seed");
  EXPECT_EQ(completion(R"({"prompt": "x", "seed": 7.0})").params.seed, 7u);
  EXPECT_NE(error_text(c, R"({"prompt": "x", "seed": 9223372036854775808})").find("less_than_equal"), std::string::npos);
  EXPECT_NE(error_text(c, R"({"prompt": "x", "seed": -9223372036854775809})").find("greater_than_equal"),
            std::string::npos);
  // -1 asks for every token's logprob (the handler makes it the vocabulary's size).
  const CompletionRequest all = completion(R"({"prompt": "x", "logprobs": -1, "prompt_logprobs": -1})");
  EXPECT_EQ(all.logprobs, kAllLogprobs);
  EXPECT_EQ(all.params.logprobs, kAllLogprobs);
  EXPECT_EQ(all.prompt_logprobs, kAllLogprobs);
  EXPECT_EQ(all.params.prompt_logprobs, kAllLogprobs);
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "hi"}], "logprobs": true, "top_logprobs": -1})")
                .params.logprobs,
            kAllLogprobs);
  // top_logprobs 0 needs no logprobs; more does (vLLM's text).
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 0})").params.logprobs, 0);
  EXPECT_NE(error_text([](const std::string& b) { return chat(b); },
                       R"({"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2})")
                .find("`logprobs` must be set to true"),
            std::string::npos);
  // truncation_side: left (default) or right.
  EXPECT_FALSE(completion(R"({"prompt": "x", "truncation_side": "left"})").truncate_right);
  EXPECT_TRUE(completion(R"({"prompt": "x", "truncation_side": "right"})").truncate_right);
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "truncation_side": "middle"})"), "truncation_side");
  // No prompt, an empty one or prompt_embeds: vLLM's text.
  const std::string no_prompt = "Either prompt or prompt_embeds must be provided and non-empty.";
  for (const char* body : {R"({"max_tokens": 3})", R"({"prompt": ""})", R"({"prompt": []})", R"({"prompt": [[]]})"}) {
    EXPECT_EQ(error_text(c, body), no_prompt) << body;
  }
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "prompt_embeds": "AAAA"})"), "prompt_embeds");
  // A named tool_choice must name one of the request's tools.
  const std::string msgs = R"("messages": [{"role": "user", "content": "hi"}])";
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "get_weather"}}])";
  EXPECT_EQ(error_param(h, "{" + msgs + R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}}})"),
            "tool_choice");
  EXPECT_NE(error_text(h, "{" + msgs + R"(, "tool_choice": {"type": "function", "function": {"name": "f"}}})")
                .find("`tools` must be set"),
            std::string::npos);
  EXPECT_NE(error_text(h, "{" + msgs + ", " + tools + R"(, "tool_choice": {}})").find("Invalid value for `function`"),
            std::string::npos);
  EXPECT_NE(error_text(h, "{" + msgs + ", " + tools + R"(, "tool_choice": {"type": "function", "function": {"name": "nope"}}})")
                .find("does not match any of the specified `tools`"),
            std::string::npos);
  EXPECT_EQ(error_param(h, "{" + msgs + ", " + tools +
                               R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}}})"),
            "ok");
  EXPECT_EQ(error_param(h, "{" + msgs + R"(, "tool_choice": "none"})"), "ok");
  // pydantic's lax coercions, which vLLM's clients rely on.
  const ChatRequest lax = chat("{" + msgs + R"(, "logprobs": "true", "top_logprobs": "3", "temperature": "0.5",
                                 "stream": "yes", "n": true, "seed": "-12"})");
  EXPECT_TRUE(lax.logprobs);
  EXPECT_EQ(lax.top_logprobs, 3);
  EXPECT_FLOAT_EQ(lax.params.temperature, 0.5f);
  EXPECT_TRUE(lax.stream);
  EXPECT_EQ(lax.params.n, 1);
  EXPECT_EQ(lax.params.seed, static_cast<uint64_t>(int64_t{-12}));
  EXPECT_FALSE(chat("{" + msgs + R"(, "logprobs": "off"})").logprobs);
  for (const char* bad : {R"("logprobs": "maybe")", R"("logprobs": 2)", R"("temperature": "warm")",
                          R"("temperature": " 0.5")", R"("top_logprobs": "2.5")", R"("n": "")"}) {
    EXPECT_NE(error_param(h, "{" + msgs + ", " + bad + "}"), "ok") << bad;
  }
}

TEST(OpenAiProtocol, PromptShapes) {
  EXPECT_EQ(*completion(R"({"prompt": "hi"})").prompts[0].text, "hi");
  auto two = completion(R"({"prompt": ["a", "b"]})");
  ASSERT_EQ(two.prompts.size(), 2u);
  EXPECT_EQ(*two.prompts[1].text, "b");
  auto ids = completion(R"({"prompt": [1, 2, 3]})");
  ASSERT_EQ(ids.prompts.size(), 1u);
  EXPECT_EQ(ids.prompts[0].token_ids, (std::vector<int32_t>{1, 2, 3}));
  auto lists = completion(R"({"prompt": [[1], [2, 3]]})");
  ASSERT_EQ(lists.prompts.size(), 2u);
  EXPECT_EQ(lists.prompts[1].token_ids, (std::vector<int32_t>{2, 3}));
}

TEST(OpenAiProtocol, SamplingFieldsAndDefaults) {
  auto r = completion(R"({"prompt": "x", "n": 2, "max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 0,
                          "min_p": 0.1, "seed": -3, "stop": "END", "presence_penalty": 1, "frequency_penalty": -1,
                          "repetition_penalty": 1.2, "logit_bias": {"42": -100}, "min_tokens": 2, "ignore_eos": true,
                          "stop_token_ids": [5], "skip_special_tokens": false, "logprobs": 3, "echo": true,
                          "priority": 4, "user": "u", "stream": true, "stream_options": {"include_usage": true}})");
  EXPECT_EQ(r.params.n, 2);
  EXPECT_EQ(r.params.max_tokens, 7);
  EXPECT_TRUE(r.max_tokens_given);
  EXPECT_FLOAT_EQ(r.params.temperature, 0.5f);
  EXPECT_EQ(r.params.top_k, -1);  // 0 disables, as in vLLM
  EXPECT_EQ(r.params.stop, std::vector<std::string>{"END"});
  EXPECT_FLOAT_EQ(r.params.logit_bias.at(42), -100.0f);
  EXPECT_EQ(r.params.stop_token_ids, std::vector<int64_t>{5});
  EXPECT_EQ(r.params.logprobs, 3);
  EXPECT_EQ(r.params.prompt_logprobs, 3);  // echo + logprobs
  EXPECT_EQ(r.priority, 4);
  EXPECT_TRUE(r.stream && r.include_usage && r.echo && r.params.ignore_eos && !r.params.skip_special_tokens);
  // Defaults: OpenAI's, unless the model's generation config says otherwise; null = absent.
  auto d = completion(R"({"prompt": "x", "temperature": null})");
  EXPECT_EQ(d.params.max_tokens, 16);
  EXPECT_FLOAT_EQ(d.params.temperature, 1.0f);
  SamplingDefaults model_defaults;
  model_defaults.temperature = 0.3f;
  EXPECT_FLOAT_EQ(parse_completion_request(parse_json_body(R"({"prompt": "x"})"), model_defaults).params.temperature, 0.3f);
  // logprobs 0 still asks for the chosen token's logprob.
  EXPECT_EQ(completion(R"({"prompt": "x", "logprobs": 0})").params.logprobs, 1);
}

TEST(OpenAiProtocol, BadFieldsNameTheField) {
  auto c = [](const std::string& b) { return completion(b); };
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "max_tokens": -1})"), "max_tokens");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "max_tokens": "abc"})"), "max_tokens");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "max_tokens": 1e30})"), "max_tokens");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "max_tokens": 2.5})"), "max_tokens");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "max_tokens": 123456789012345678901234567890})"), "max_tokens");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "n": 0})"), "n");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "n": 1000000000})"), "n");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "temperature": -1})"), "temperature");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "top_p": 0})"), "top_p");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "top_k": -5})"), "top_k");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "logprobs": -2})"), "logprobs");  // -1: every token; more: --max-logprobs
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "logit_bias": {"abc": 1}})"), "logit_bias");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "logit_bias": {"1": 1000}})"), "logit_bias");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "stop": {"a": 1}})"), "stop");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "stop": [1]})"), "stop");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "stream_options": {"include_usage": true}})"), "stream_options");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "seed": "1s"})"), "seed");
  EXPECT_EQ(error_param(c, R"({"prompt": 5})"), "prompt");
  EXPECT_EQ(error_param(c, R"({"prompt": []})"), "prompt");
  EXPECT_EQ(error_param(c, R"({"prompt": [-1]})"), "prompt");
  EXPECT_EQ(error_param(c, R"({"prompt": [[]]})"), "prompt");
  EXPECT_EQ(error_param(c, R"({"max_tokens": 3})"), "prompt");
  EXPECT_EQ(error_param(c, R"({"prompt": "x", "model": 3})"), "model");
  // Malformed bodies.
  EXPECT_EQ(error_param(c, R"({"prompt": "x",)"), "<none>");
  EXPECT_EQ(error_param(c, R"([1, 2])"), "<none>");
  EXPECT_EQ(error_param(c, R"({"prompt": NaN})"), "<none>");
  EXPECT_EQ(error_param(c, "{\"prompt\": \"\xff\xfe\"}"), "<none>");  // invalid UTF-8
  EXPECT_EQ(error_param(c, std::string(100000, '[') + std::string(100000, ']')), "<none>");
}

// vLLM's use_beam_search and length_penalty: parsed on both routes; a streamed completion
// with beam search is vLLM's 400 (chat streams it).
TEST(OpenAiProtocol, BeamSearchFields) {
  const CompletionRequest off = completion(R"({"prompt": "x"})");
  EXPECT_FALSE(off.use_beam_search);
  EXPECT_EQ(off.length_penalty, 1.0);
  const CompletionRequest c = completion(R"({"prompt": "x", "n": 3, "use_beam_search": true, "length_penalty": "0.5"})");
  EXPECT_TRUE(c.use_beam_search);
  EXPECT_EQ(c.params.n, 3);
  EXPECT_EQ(c.length_penalty, 0.5);
  const ChatRequest ch = chat(R"({"messages": [{"role": "user", "content": "x"}], "use_beam_search": "yes",
                                  "length_penalty": -2, "stream": true})");
  EXPECT_TRUE(ch.use_beam_search);
  EXPECT_EQ(ch.length_penalty, -2.0);
  EXPECT_EQ(error_text(completion, R"({"prompt": "x", "use_beam_search": true, "stream": true})"),
            "Streaming is not currently supported with beam search");
  EXPECT_EQ(error_param(completion, R"({"prompt": "x", "use_beam_search": []})"), "use_beam_search");
  EXPECT_EQ(error_param(completion, R"({"prompt": "x", "length_penalty": "long"})"), "length_penalty");
}

TEST(OpenAiProtocol, ChatMessages) {
  auto r = chat(R"({"messages": [{"role": "system", "content": "s"},
                                 {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                                 {"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function",
                                   "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
                                 {"role": "tool", "content": "r", "tool_call_id": "1"}],
                    "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "auto",
                    "max_completion_tokens": 9, "logprobs": true, "top_logprobs": 2,
                    "chat_template_kwargs": {"enable_thinking": false}})");
  EXPECT_EQ(r.messages[1]["content"], "a\nb");
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["function"]["arguments"]["x"], 1);  // parsed for templates
  EXPECT_EQ(r.params.max_tokens, 9);
  EXPECT_EQ(r.params.logprobs, 2);
  EXPECT_EQ(r.chat_template_kwargs["enable_thinking"], false);
  EXPECT_TRUE(r.add_generation_prompt);
  auto c = [](const std::string& b) { return chat(b); };
  EXPECT_EQ(error_param(c, R"({"messages": "hi"})"), "messages");
  EXPECT_EQ(error_param(c, R"({"messages": []})"), "messages");
  EXPECT_EQ(error_param(c, R"({"messages": [{"content": "x"}]})"), "messages");
  EXPECT_EQ(error_param(c, R"({"messages": [{"role": "user", "content": 5}]})"), "messages[].content");
  EXPECT_EQ(error_param(c, R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"), "messages");
  EXPECT_EQ(error_param(c, R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})"), "top_logprobs");
  EXPECT_EQ(error_param(c, R"({"messages": [{"role": "user", "content": "x"}], "tools": {}})"), "tools");
}

TEST(OpenAiProtocol, NullContentIsEmptyText) {
  auto r = chat(R"({"messages": [{"role": "user", "content": null},
                                 {"role": "assistant", "tool_calls": [{"id": "1", "type": "function",
                                   "function": {"name": "f", "arguments": "{}"}}]}]})");
  EXPECT_EQ(r.messages[0]["content"], "");
  EXPECT_EQ(r.messages[1]["content"], "");
}

TEST(OpenAiProtocol, JsonInsideStringsHasADepthLimitToo) {
  // Tool-call arguments are JSON text parsed again for templates: nested past the limit,
  // they stay text (a recursive copy or render of 100,000 levels overflows the stack).
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  Json body = {{"messages", Json::array({Json{{"role", "assistant"},
                                              {"content", nullptr},
                                              {"tool_calls", Json::array({Json{{"id", "1"},
                                                                               {"type", "function"},
                                                                               {"function", Json{{"name", "f"},
                                                                                                 {"arguments", deep}}}}})}}})}};
  auto r = parse_chat_request(body, {});
  EXPECT_TRUE(r.messages[0]["tool_calls"][0]["function"]["arguments"].is_string());
  const std::string ok_depth = R"({"a": )" + std::string(kMaxToolArgumentsDepth - 1, '[') +
                               std::string(kMaxToolArgumentsDepth - 1, ']') + "}";
  body["messages"][0]["tool_calls"][0]["function"]["arguments"] = ok_depth;
  EXPECT_TRUE(parse_chat_request(body, {}).messages[0]["tool_calls"][0]["function"]["arguments"].is_object());
  // The one entry point for client JSON refuses the depth, whatever the container.
  EXPECT_THROW(parse_client_json(deep, kMaxJsonDepth), ApiError);
  EXPECT_THROW(parse_client_json(std::string(300, '{'), kMaxJsonDepth), ApiError);
  EXPECT_EQ(parse_client_json("[[1]]", 2), Json::parse("[[1]]"));
  EXPECT_THROW(parse_client_json("[[[1]]]", 2), ApiError);
}

// No field passes unread: unknown ones and known ones of features not built are 400s naming
// them; annotations and the other route's fields are told apart.
TEST(OpenAiProtocol, EveryRequestFieldIsReadOrRefused) {
  auto ch = [](const std::string& b) { return error_param([](const std::string& x) { return chat(x); }, b); };
  auto chat_text = [](const std::string& b) { return error_text([](const std::string& x) { return chat(x); }, b); };
  EXPECT_EQ(ch("{" + kMsgs + R"(, "frobnicate": 1})"), "frobnicate");
  EXPECT_EQ(chat_text("{" + kMsgs + R"(, "frobnicate": 1})"), "Unrecognized request argument supplied: frobnicate");
  EXPECT_EQ(chat_text("{" + kMsgs + R"(, "prompt": "x"})"),
            "Unrecognized request argument supplied: prompt (a completions field)");
  EXPECT_EQ(c_param(R"({"prompt": "x", "messages": []})"), "messages");
  for (const char* refused : {R"("logits_processors": ["a.b"])", R"("cache_salt": "s")", R"("store": true)",
                              R"("modalities": ["text", "audio"])", R"("functions": [{"name": "f"}])",
                              R"("mm_processor_kwargs": {"a": 1})"}) {
    const std::string body = "{" + kMsgs + ", " + refused + "}";
    EXPECT_NE(chat_text(body).find("is not supported"), std::string::npos) << body;
  }
  // Their "off" values, null, annotations and vLLM's extras pass.
  for (const char* ok : {R"("store": false)", R"("modalities": ["text"])", R"("logits_processors": [])",
                         R"("cache_salt": null)", R"("user": "u", "metadata": {"a": "b"}, "service_tier": "auto")",
                         R"("spaces_between_special_tokens": true)", R"("reasoning_effort": "low")",
                         R"("request_id": "abc", "documents": [{"title": "t", "text": "x"}])"}) {
    EXPECT_EQ(ch("{" + kMsgs + ", " + ok + "}"), "ok") << ok;
  }
  EXPECT_EQ(ch("{" + kMsgs + R"(, "metadata": {"a": 1}})"), "metadata");
  EXPECT_EQ(ch("{" + kMsgs + R"(, "reasoning_effort": "max"})"), "reasoning_effort");
  EXPECT_EQ(ch("{" + kMsgs + R"(, "request_id": ""})"), "request_id");
  const ChatRequest r = chat("{" + kMsgs + R"(, "request_id": "r1", "reasoning_effort": "high",
                                             "documents": [{"text": "d"}]})");
  EXPECT_EQ(r.request_id, "r1");
  EXPECT_EQ(r.chat_template_kwargs["reasoning_effort"], "high");
  EXPECT_EQ(r.chat_template_kwargs["documents"][0]["text"], "d");
  EXPECT_EQ(completion(R"({"prompt": "x", "request_id": "q"})").request_id, "q");
}

TEST(Prometheus, RendersCountersGaugesAndCumulativeHistograms) {
  EngineMetrics m;
  m.num_requests_running = 3;
  m.kv_cache_usage = 0.25;
  m.prompt_tokens = 10;
  m.request_success = {1, 2, 3};
  m.time_to_first_token.observe(0.003);
  m.time_to_first_token.observe(0.003);
  m.time_to_first_token.observe(5000.0);
  const std::string text = render_prometheus(m, "my \"model\"");
  auto has = [&](const std::string& line) { return text.find(line + "\n") != std::string::npos; };
  EXPECT_TRUE(has(R"(vllm:num_requests_running{model_name="my \"model\"",engine="0"} 3)")) << text;
  EXPECT_TRUE(has(R"(vllm:kv_cache_usage_perc{model_name="my \"model\"",engine="0"} 0.25)"));
  EXPECT_TRUE(has(R"(vllm:prompt_tokens_total{model_name="my \"model\"",engine="0"} 10)"));
  EXPECT_TRUE(has(R"(vllm:request_success_total{model_name="my \"model\"",engine="0",finished_reason="abort"} 3)"));
  EXPECT_TRUE(has("# TYPE vllm:time_to_first_token_seconds histogram"));
  // Counters: HELP and TYPE under the sample's name, as vLLM's exporter writes them.
  EXPECT_TRUE(has("# TYPE vllm:prompt_tokens_total counter"));
  EXPECT_TRUE(has("# TYPE vllm:request_success_total counter"));
  EXPECT_EQ(text.find("# TYPE vllm:prompt_tokens counter"), std::string::npos);
  EXPECT_TRUE(has(R"(vllm:time_to_first_token_seconds_bucket{model_name="my \"model\"",engine="0",le="0.001"} 0)"));
  EXPECT_TRUE(has(R"(vllm:time_to_first_token_seconds_bucket{model_name="my \"model\"",engine="0",le="0.005"} 2)"));
  EXPECT_TRUE(has(R"(vllm:time_to_first_token_seconds_bucket{model_name="my \"model\"",engine="0",le="2560.0"} 2)"));
  EXPECT_TRUE(has(R"(vllm:time_to_first_token_seconds_bucket{model_name="my \"model\"",engine="0",le="+Inf"} 3)"));
  EXPECT_TRUE(has(R"(vllm:time_to_first_token_seconds_count{model_name="my \"model\"",engine="0"} 3)"));
  const std::string with_info = render_prometheus(m, "m", {{"block_size", "16"}, {"cache_dtype", "auto"}});
  EXPECT_NE(with_info.find("vllm:cache_config_info{model_name=\"m\",engine=\"0\",block_size=\"16\",cache_dtype=\"auto\"} 1\n"),
            std::string::npos)
      << with_info;
  EXPECT_EQ(text.find("cache_config_info"), std::string::npos);  // no labels given: left out
}

}  // namespace
}  // namespace tessera::server

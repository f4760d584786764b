// tessera._core: the C++ engine for the Python package (python/tessera/). Plain bindings of
// the public API (include/tessera/); the package's Python layer gives them vLLM's names,
// defaults and output classes. The engine runs with the GIL released; generate and chat take
// it back between engine steps for Ctrl-C and the progress bar. JSON (chat messages, tools)
// crosses as text.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <variant>

#include "engine/engine_setup.h"
#include "tessera/llm.h"

namespace nb = nanobind;

namespace tessera {
namespace {

using Prompt = std::variant<std::string, std::vector<int32_t>>;

std::vector<PromptInput> to_inputs(const std::vector<Prompt>& prompts) {
  std::vector<PromptInput> inputs;
  inputs.reserve(prompts.size());
  for (const Prompt& p : prompts) {
    if (const auto* text = std::get_if<std::string>(&p)) {
      inputs.emplace_back(*text);
    } else {
      inputs.emplace_back(std::get<std::vector<int32_t>>(p));
    }
  }
  return inputs;
}

template <typename T>
T value_or_raise(Result<T> r) {
  if (!r.ok()) throw nb::value_error(r.error().c_str());
  return std::move(*r);
}

// JSON text from the package (json.dumps); "" is null.
nlohmann::ordered_json parse_json(const std::string& text, const char* what) {
  if (text.empty()) return nullptr;
  auto j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (j.is_discarded()) throw nb::value_error((std::string(what) + ": not valid JSON").c_str());
  return j;
}

ChatOptions chat_options(const std::string& chat_template, bool add_generation_prompt, bool continue_final_message,
                         const std::string& tools, const std::string& chat_template_kwargs) {
  ChatOptions o;
  o.chat_template = chat_template;
  o.add_generation_prompt = add_generation_prompt;
  o.continue_final_message = continue_final_message;
  o.tools = parse_json(tools, "tools");
  if (!chat_template_kwargs.empty()) o.chat_template_kwargs = parse_json(chat_template_kwargs, "chat_template_kwargs");
  return o;
}

// Runs an engine call with the GIL released. Between engine steps the GIL is taken back to
// run Python's signal handlers (Ctrl-C raises KeyboardInterrupt there) and on_progress (with
// the number of finished prompts, when it changed). An exception from either aborts the
// batch; it is raised once the engine has wound the batch down, so the LLM stays usable.
template <typename Call>
auto run_with_progress(const nb::object& on_progress, Call&& call) {
  std::optional<nb::python_error> error;
  size_t reported = 0;
  const ProgressCallback on_step = [&](size_t finished) {
    nb::gil_scoped_acquire gil;
    try {
      if (PyErr_CheckSignals() != 0) throw nb::python_error();
      if (!on_progress.is_none() && finished != reported) {
        reported = finished;
        on_progress(finished);
      }
      return true;
    } catch (nb::python_error& e) {
      error.emplace(std::move(e));
      return false;
    }
  };
  auto result = [&] {
    nb::gil_scoped_release release;
    return call(on_step);
  }();
  if (error) throw *error;
  return result;
}

}  // namespace
}  // namespace tessera

NB_MODULE(_core, m) {
  using namespace tessera;
  m.doc() = "Tessera's C++ engine (use the tessera package, not this module)";

  nb::class_<EngineArgs>(m, "EngineArgs")
      .def(nb::init<>())
      .def_rw("model", &EngineArgs::model)
      .def_rw("tokenizer", &EngineArgs::tokenizer)
      .def_rw("revision", &EngineArgs::revision)
      .def_rw("tokenizer_revision", &EngineArgs::tokenizer_revision)
      .def_rw("download_dir", &EngineArgs::download_dir)
      .def_rw("block_size", &EngineArgs::block_size)
      .def_rw("device", &EngineArgs::device)
      .def_rw("dtype", &EngineArgs::dtype)
      .def_rw("kv_cache_memory", &EngineArgs::kv_cache_memory)
      .def_rw("kv_cache_dtype", &EngineArgs::kv_cache_dtype)
      .def_rw("gpu_memory_utilization", &EngineArgs::gpu_memory_utilization)
      .def_rw("cpu_offload_gb", &EngineArgs::cpu_offload_gb)
      .def_rw("kv_offloading_size", &EngineArgs::kv_offloading_size)
      .def_rw("enforce_eager", &EngineArgs::enforce_eager)
      .def_rw("max_model_len", &EngineArgs::max_model_len)
      .def_rw("max_num_seqs", &EngineArgs::max_num_seqs)
      .def_rw("max_num_batched_tokens", &EngineArgs::max_num_batched_tokens)
      .def_rw("enable_prefix_caching", &EngineArgs::enable_prefix_caching)
      .def_rw("enable_chunked_prefill", &EngineArgs::enable_chunked_prefill)
      .def_rw("async_scheduling", &EngineArgs::async_scheduling)
      .def_rw("seed", &EngineArgs::seed)
      .def_rw("disable_progress_bar", &EngineArgs::disable_progress_bar)
      .def_rw("disable_log_stats", &EngineArgs::disable_log_stats);

  // Hub names of args.model / args.tokenizer as local paths (downloading what the cache lacks).
  m.def("resolve_model_sources", [](const EngineArgs& args) {
    auto resolved = [&] {
      nb::gil_scoped_release release;
      return resolve_model_sources(args);
    }();
    return value_or_raise(std::move(resolved));
  });

  nb::class_<StructuredOutputsParams>(m, "StructuredOutputsParams")
      .def(nb::init<>())
      .def_rw("json", &StructuredOutputsParams::json)
      .def_rw("regex", &StructuredOutputsParams::regex)
      .def_rw("choice", &StructuredOutputsParams::choice)
      .def_rw("grammar", &StructuredOutputsParams::grammar)
      .def_rw("json_object", &StructuredOutputsParams::json_object)
      .def_rw("disable_any_whitespace", &StructuredOutputsParams::disable_any_whitespace)
      .def("kinds", &StructuredOutputsParams::kinds, "How many of json, regex, choice, grammar and json_object are set");

  nb::class_<SamplingParams>(m, "SamplingParams")
      .def(nb::init<>())
      .def_rw("n", &SamplingParams::n)
      .def_rw("max_tokens", &SamplingParams::max_tokens)
      .def_rw("min_tokens", &SamplingParams::min_tokens)
      .def_rw("temperature", &SamplingParams::temperature)
      .def_rw("top_k", &SamplingParams::top_k)
      .def_rw("top_p", &SamplingParams::top_p)
      .def_rw("min_p", &SamplingParams::min_p)
      .def_rw("presence_penalty", &SamplingParams::presence_penalty)
      .def_rw("frequency_penalty", &SamplingParams::frequency_penalty)
      .def_rw("repetition_penalty", &SamplingParams::repetition_penalty)
      .def_rw("logit_bias", &SamplingParams::logit_bias)
      .def_rw("bad_words", &SamplingParams::bad_words)
      .def_rw("allowed_token_ids", &SamplingParams::allowed_token_ids)
      .def_rw("seed", &SamplingParams::seed)
      .def_rw("ignore_eos", &SamplingParams::ignore_eos)
      .def_rw("stop_token_ids", &SamplingParams::stop_token_ids)
      .def_rw("stop", &SamplingParams::stop)
      .def_rw("include_stop_str_in_output", &SamplingParams::include_stop_str_in_output)
      .def_rw("skip_special_tokens", &SamplingParams::skip_special_tokens)
      .def_rw("logprobs", &SamplingParams::logprobs)
      .def_rw("logprob_token_ids", &SamplingParams::logprob_token_ids)
      .def_rw("prompt_logprobs", &SamplingParams::prompt_logprobs)
      .def_rw("structured_outputs", &SamplingParams::structured_outputs)
      .def("validate", &SamplingParams::validate, "Empty when valid, else what is wrong");

  nb::class_<CompletionOutput>(m, "CompletionOutput")
      .def_ro("index", &CompletionOutput::index)
      .def_ro("text", &CompletionOutput::text)
      .def_ro("token_ids", &CompletionOutput::token_ids)
      .def_ro("cumulative_logprob", &CompletionOutput::cumulative_logprob)
      .def_ro("logprobs", &CompletionOutput::logprobs)
      .def_ro("finish_reason", &CompletionOutput::finish_reason)
      .def_ro("stop_token", &CompletionOutput::stop_token)
      .def_ro("stop_string", &CompletionOutput::stop_string);

  nb::class_<RequestMetrics>(m, "RequestMetrics")
      .def_ro("arrival_time", &RequestMetrics::arrival_time)
      .def_ro("first_token_time", &RequestMetrics::first_token_time)
      .def_ro("finished_time", &RequestMetrics::finished_time);

  nb::class_<RequestOutput>(m, "RequestOutput")
      .def_ro("request_id", &RequestOutput::request_id)
      .def_ro("prompt", &RequestOutput::prompt)
      .def_ro("prompt_token_ids", &RequestOutput::prompt_token_ids)
      .def_ro("prompt_logprobs", &RequestOutput::prompt_logprobs)
      .def_ro("prompt_logprob_ranks", &RequestOutput::prompt_logprob_ranks)
      .def_ro("outputs", &RequestOutput::outputs)
      .def_ro("finished", &RequestOutput::finished)
      .def_ro("num_cached_tokens", &RequestOutput::num_cached_tokens)
      .def_ro("metrics", &RequestOutput::metrics)
      .def_ro("error", &RequestOutput::error);

  nb::class_<BeamSearchParams>(m, "BeamSearchParams")
      .def(nb::init<>())
      .def_rw("beam_width", &BeamSearchParams::beam_width)
      .def_rw("max_tokens", &BeamSearchParams::max_tokens)
      .def_rw("ignore_eos", &BeamSearchParams::ignore_eos)
      .def_rw("length_penalty", &BeamSearchParams::length_penalty)
      .def_rw("temperature", &BeamSearchParams::temperature);

  nb::class_<BeamSequence>(m, "BeamSequence")
      .def_ro("token_ids", &BeamSequence::token_ids)
      .def_ro("output_token_ids", &BeamSequence::output_token_ids)
      .def_ro("logprobs", &BeamSequence::logprobs)
      .def_ro("text", &BeamSequence::text)
      .def_ro("cum_logprob", &BeamSequence::cum_logprob)
      .def_ro("finished_by_eos", &BeamSequence::finished_by_eos);

  nb::class_<BeamSearchOutput>(m, "BeamSearchOutput")
      .def_ro("sequences", &BeamSearchOutput::sequences)
      .def_ro("error", &BeamSearchOutput::error);

  nb::class_<TokenizerInfo>(m, "TokenizerInfo")
      .def_ro("vocab_size", &TokenizerInfo::vocab_size)
      .def_ro("bos_token_id", &TokenizerInfo::bos_token_id)
      .def_ro("eos_token_id", &TokenizerInfo::eos_token_id)
      .def_ro("pad_token_id", &TokenizerInfo::pad_token_id)
      .def_ro("bos_token", &TokenizerInfo::bos_token)
      .def_ro("eos_token", &TokenizerInfo::eos_token);

  nb::class_<LLM>(m, "LLM")
      .def_static(
          "create",
          [](const EngineArgs& args) {
            Result<std::unique_ptr<LLM>> llm = [&] {
              nb::gil_scoped_release release;  // loading reads gigabytes
              return LLM::create(args);
            }();
            if (!llm.ok()) throw nb::value_error(llm.error().c_str());
            return std::move(*llm);
          },
          nb::arg("args"))
      .def(
          "generate",
          [](LLM& llm, const std::vector<Prompt>& prompts, const std::vector<SamplingParams>& params,
             const nb::object& on_progress) {
            const std::vector<PromptInput> inputs = to_inputs(prompts);
            return run_with_progress(on_progress, [&](const ProgressCallback& on_step) {
              return llm.generate(inputs, params, on_step);
            });
          },
          nb::arg("prompts"), nb::arg("params"), nb::arg("on_progress") = nb::none())
      .def(
          "chat",
          [](LLM& llm, const std::vector<std::string>& conversations, const std::vector<SamplingParams>& params,
             const std::string& chat_template, bool add_generation_prompt, bool continue_final_message,
             const std::string& tools, const std::string& chat_template_kwargs, const nb::object& on_progress) {
            std::vector<nlohmann::ordered_json> convs;
            for (const std::string& c : conversations) convs.push_back(parse_json(c, "messages"));
            const ChatOptions options =
                chat_options(chat_template, add_generation_prompt, continue_final_message, tools, chat_template_kwargs);
            return run_with_progress(on_progress, [&](const ProgressCallback& on_step) {
              return llm.chat(convs, params, options, on_step);
            });
          },
          nb::arg("conversations"), nb::arg("params"), nb::arg("chat_template"), nb::arg("add_generation_prompt"),
          nb::arg("continue_final_message"), nb::arg("tools"), nb::arg("chat_template_kwargs"),
          nb::arg("on_progress") = nb::none())
      .def(
          "apply_chat_template",
          [](LLM& llm, const std::string& messages, const std::string& chat_template, bool add_generation_prompt,
             bool continue_final_message, const std::string& tools, const std::string& chat_template_kwargs) {
            const ChatOptions options =
                chat_options(chat_template, add_generation_prompt, continue_final_message, tools, chat_template_kwargs);
            return value_or_raise(llm.apply_chat_template(parse_json(messages, "messages"), options));
          },
          nb::arg("messages"), nb::arg("chat_template"), nb::arg("add_generation_prompt"),
          nb::arg("continue_final_message"), nb::arg("tools"), nb::arg("chat_template_kwargs"))
      .def(
          "beam_search",
          [](LLM& llm, const std::vector<Prompt>& prompts, const BeamSearchParams& params) {
            const std::vector<PromptInput> inputs = to_inputs(prompts);
            return run_with_progress(nb::none(), [&](const ProgressCallback& on_step) {
              return llm.beam_search(inputs, params, on_step);
            });
          },
          nb::arg("prompts"), nb::arg("params"))
      .def(
          "encode",
          [](const LLM& llm, const std::string& text, bool add_special_tokens) {
            return value_or_raise(llm.encode(text, add_special_tokens));
          },
          nb::arg("text"), nb::arg("add_special_tokens") = true)
      .def(
          "decode",
          [](const LLM& llm, const std::vector<int32_t>& ids, bool skip_special_tokens) {
            return value_or_raise(llm.decode(ids, skip_special_tokens));
          },
          nb::arg("token_ids"), nb::arg("skip_special_tokens") = true)
      .def("tokenizer_info", [](const LLM& llm) { return value_or_raise(llm.tokenizer_info()); })
      .def("id_to_token", [](const LLM& llm, int32_t id) { return value_or_raise(llm.id_to_token(id)); }, nb::arg("id"))
      .def(
          "token_to_id", [](const LLM& llm, const std::string& token) { return value_or_raise(llm.token_to_id(token)); },
          nb::arg("token"))
      .def_prop_ro("max_model_len", &LLM::max_model_len)
      .def_prop_ro("vocab_size", &LLM::vocab_size)
      .def_prop_ro("eos_token_ids", &LLM::eos_token_ids);
}

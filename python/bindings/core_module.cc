// tessera._core: the C++ engine for the Python package (python/tessera/). Plain bindings of
// the public API (include/tessera/); the package's Python layer gives them vLLM's names,
// defaults and output classes. The engine runs with the GIL released.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <variant>

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

}  // namespace
}  // namespace tessera

NB_MODULE(_core, m) {
  using namespace tessera;
  m.doc() = "Tessera's C++ engine (use the tessera package, not this module)";

  nb::class_<EngineArgs>(m, "EngineArgs")
      .def(nb::init<>())
      .def_rw("model", &EngineArgs::model)
      .def_rw("tokenizer", &EngineArgs::tokenizer)
      .def_rw("block_size", &EngineArgs::block_size)
      .def_rw("device", &EngineArgs::device)
      .def_rw("kv_cache_memory", &EngineArgs::kv_cache_memory)
      .def_rw("kv_cache_dtype", &EngineArgs::kv_cache_dtype)
      .def_rw("gpu_memory_utilization", &EngineArgs::gpu_memory_utilization)
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
      .def_rw("prompt_logprobs", &SamplingParams::prompt_logprobs)
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
          [](LLM& llm, const std::vector<Prompt>& prompts, const std::vector<SamplingParams>& params) {
            const std::vector<PromptInput> inputs = to_inputs(prompts);
            nb::gil_scoped_release release;
            return llm.generate(inputs, params);
          },
          nb::arg("prompts"), nb::arg("params"))
      .def("decode", &LLM::decode, nb::arg("token_ids"))
      .def_prop_ro("max_model_len", &LLM::max_model_len)
      .def_prop_ro("vocab_size", &LLM::vocab_size)
      .def_prop_ro("eos_token_ids", &LLM::eos_token_ids);
}

#include "cli/engine_options.h"

namespace tessera::cli {

void add_engine_options(CLI::App* cmd, EngineArgs* a) {
  cmd->add_option("--model", a->model,
                  "Model directory, .safetensors or .gguf file, or Hugging Face Hub name ORG/NAME (or "
                  "ORG/NAME/FILE.gguf): from the Hub's cache, downloaded into it when missing")
      ->required();
  cmd->add_option("--tokenizer", a->tokenizer,
                  "tokenizer.json, model directory, .gguf, .model or Hub name (default: the model's)");
  cmd->add_option("--revision", a->revision, "Hub model: branch, tag or commit (default: main)");
  cmd->add_option("--tokenizer-revision", a->tokenizer_revision, "Hub tokenizer: branch, tag or commit (default: main)");
  cmd->add_option("--download-dir", a->download_dir,
                  "Hub cache directory (default: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub)");
  cmd->add_option("--block-size", a->block_size, "Tokens per KV-cache block")->check(CLI::Range(1, 1024));
  cmd->add_option("--device", a->device, "cuda, cpu or auto (CUDA when a device is usable)")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  cmd->add_option("--dtype", a->dtype,
                  "Compute type of weights and activations (vLLM's): auto (float16 and bfloat16 checkpoints as they "
                  "are; float32 and quantized ones in bfloat16 on CUDA, as stored on the CPU), bfloat16, float16 "
                  "(half), or float32 (float; CPU only)")
      ->check(CLI::IsMember({"auto", "bfloat16", "bf16", "float16", "half", "fp16", "float32", "float", "fp32"}));
  cmd->add_option("--kv-cache-memory,--kv-cache-memory-bytes", a->kv_cache_memory,
                  "Bytes of KV-cache storage, reserved at start (default: on the CPU 1 GiB, or what "
                  "--max-num-seqs sequences of --max-model-len tokens need if less; on CUDA what "
                  "--gpu-memory-utilization leaves)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--kv-cache-dtype", a->kv_cache_dtype,
                  "Element type of cached K and V: auto (CUDA: the compute dtype; CPU: the weights' precision, "
                  "float16 for quantized weights), float32, float16 or bfloat16 (CPU); FP8 types are not supported "
                  "yet")
      ->check(CLI::IsMember({"auto", "float32", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"}));
  cmd->add_option("--kv-offloading-size", a->kv_offloading_size,
                  "GiB of host memory that keep KV blocks the cache evicts, for prefix hits and preempted requests "
                  "(needs prefix caching; 0: none)")
      ->check(CLI::Range(0.0, 1048576.0));
  cmd->add_option("--gpu-memory-utilization", a->gpu_memory_utilization,
                  "Share of the GPU's memory for weights, activations and the KV cache")
      ->check(CLI::Range(0.01, 1.0));
  cmd->add_option("--cpu-offload-gb", a->cpu_offload_gb,
                  "CUDA: GiB of the weights (whole layers' linears, from the last) kept in pinned host memory and "
                  "read over PCIe every step, for models larger than the GPU's memory (vLLM's; 0: none)")
      ->check(CLI::Range(0.0, 1048576.0));
  cmd->add_flag("--enforce-eager", a->enforce_eager, "CUDA: launch every step kernel by kernel, without CUDA graphs");
  cmd->add_option("--max-model-len", a->max_model_len, "Maximum prompt + output tokens (default: the model's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-num-seqs", a->max_num_seqs, "Requests running at once")->check(CLI::PositiveNumber);
  cmd->add_option("--max-num-batched-tokens", a->max_num_batched_tokens, "Token budget of one engine step (default 2048; without chunked prefill the larger of 2048 and --max-model-len)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", a->enable_prefix_caching,
                "Reuse cached KV blocks of equal prefixes (default on)");
  cmd->add_flag("--enable-chunked-prefill,!--no-enable-chunked-prefill", a->enable_chunked_prefill,
                "Split long prompts over several steps (default on)");
  cmd->add_flag("--async-scheduling,!--no-async-scheduling", a->async_scheduling,
                "CUDA: schedule each step while the one before runs (default: on offline, off for serve)");
  cmd->add_flag("--disable-progress-bar", a->disable_progress_bar, "No progress bar on stderr");
  cmd->add_option_function<std::string>(
         "--profile",
         [a](const std::string& spec) {
           auto p = parse_profiling(spec);
           if (!p.ok()) throw CLI::ValidationError(p.error());
           a->profiling = *p;
         },
         "Print where time goes when the engine ends: engine (host time per step phase), cuda (device "
         "time per phase), ops (device time per op; steps run eagerly); comma-separated")
      ->type_name("WHAT");
}

void add_sampling_options(CLI::App* cmd, SamplingParams* p, int64_t* seed) {
  cmd->add_option("--max-tokens", p->max_tokens, "Tokens to generate per completion");
  cmd->add_option("--min-tokens", p->min_tokens, "Tokens before EOS or stop tokens may end a completion");
  cmd->add_option("-n,--n", p->n, "Completions per prompt");
  cmd->add_option("--temperature", p->temperature, "0 = greedy");
  cmd->add_option("--top-k", p->top_k, "-1 = disabled");
  cmd->add_option("--top-p", p->top_p, "Nucleus sampling mass");
  cmd->add_option("--min-p", p->min_p, "Drop tokens below min_p times the best token's probability");
  cmd->add_option("--presence-penalty", p->presence_penalty, "Subtracted once per token present in the output");
  cmd->add_option("--frequency-penalty", p->frequency_penalty, "Subtracted per occurrence in the output");
  cmd->add_option("--repetition-penalty", p->repetition_penalty, "Divides (or multiplies) logits of seen tokens");
  cmd->add_option("--seed", *seed, "Sampling seed (completion i of a prompt uses seed + i)");
  cmd->add_option("--stop", p->stop, "Stop string (repeatable)");
  cmd->add_option("--stop-token-ids", p->stop_token_ids, "Token ids that end a completion")->delimiter(',');
  cmd->add_flag("--include-stop-str-in-output", p->include_stop_str_in_output, "Keep the stop string in the text");
  cmd->add_flag("--ignore-eos", p->ignore_eos, "Do not stop at end-of-sequence tokens");
  cmd->add_option("--logprobs", p->logprobs, "Top-K logprobs per generated token");
  cmd->add_option("--prompt-logprobs", p->prompt_logprobs, "Top-K logprobs per prompt token");
  cmd->add_flag("!--no-skip-special-tokens", p->skip_special_tokens, "Keep special tokens in the output text");
}

}  // namespace tessera::cli

#include "server/prometheus.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace tessera::server {

namespace {

// Label values escape backslash, quote and newline.
std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// The shortest text that reads back as v (0.005, not 0.0050000000000000001).
std::string number(double v) {
  char buf[64];
  if (v == static_cast<double>(static_cast<int64_t>(v)) && v > -1e15 && v < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);  // counts print as integers
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

// A bucket bound as Python's prometheus_client (vLLM's exporter) writes it: floats keep a
// decimal point (le="1.0", le="0.005"), so queries that match bucket labels as text match.
std::string bound(double v) {
  std::string s = number(v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// Families vLLM exports keep vLLM's names ("vllm:..."), so its dashboards and autoscalers
// read them unchanged; Tessera's own carry "tessera:". Every sample has vLLM's labels.
class Writer {
 public:
  explicit Writer(const std::string& model)
      : labels_("model_name=\"" + escape_label(model) + "\",engine=\"0\"") {}

  void header(const std::string& name, const char* type, const char* help) {
    out_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const std::string& name, double v, const std::string& extra = "") {
    out_ += name + "{" + labels_ + extra + "} " + number(v) + "\n";
  }
  void gauge(const std::string& name, double v, const char* help) {
    header(name, "gauge", help);
    sample(name, v);
  }
  // Counters are exposed as NAME_total with HELP/TYPE under that name, as vLLM's exporter
  // writes them in the text format (Prometheus files a series' type under its sample name).
  void counter(const std::string& name, double v, const char* help) {
    header(name + "_total", "counter", help);
    sample(name + "_total", v);
  }
  void histogram(const std::string& name, const Histogram& h, const char* help) {
    header(name, "histogram", help);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.bounds().size(); ++i) {
      cumulative += h.counts()[i];
      sample(name + "_bucket", static_cast<double>(cumulative), ",le=\"" + bound(h.bounds()[i]) + "\"");
    }
    sample(name + "_bucket", static_cast<double>(h.count()), ",le=\"+Inf\"");
    sample(name + "_sum", h.sum());
    sample(name + "_count", static_cast<double>(h.count()));
  }
  std::string& out() { return out_; }
  const std::string& labels() const { return labels_; }

 private:
  std::string labels_;
  std::string out_;
};

}  // namespace

std::string render_prometheus(const EngineMetrics& m, const std::string& model_name,
                              const std::vector<std::pair<std::string, std::string>>& cache_config) {
  Writer w(model_name);
  if (!cache_config.empty()) {  // vLLM's info gauge: the KV cache's configuration in labels, value 1
    w.header("vllm:cache_config_info", "gauge", "Information of the KV cache's configuration.");
    std::string labels;
    for (const auto& [name, value] : cache_config) labels += "," + name + "=\"" + escape_label(value) + "\"";
    w.sample("vllm:cache_config_info", 1.0, labels);
  }
  w.gauge("vllm:num_requests_running", static_cast<double>(m.num_requests_running), "Requests in the running batch.");
  w.gauge("vllm:num_requests_waiting", static_cast<double>(m.num_requests_waiting), "Requests waiting to be scheduled.");
  w.gauge("vllm:kv_cache_usage_perc", m.kv_cache_usage, "Fraction of KV-cache blocks in use (0 to 1).");
  w.counter("vllm:prefix_cache_queries", static_cast<double>(m.prefix_cache_queries),
            "Prompt tokens looked up in the prefix cache.");
  w.counter("vllm:prefix_cache_hits", static_cast<double>(m.prefix_cache_hits), "Prompt tokens found in the prefix cache.");
  w.counter("vllm:num_preemptions", static_cast<double>(m.num_preemptions),
            "Requests preempted for lack of KV-cache blocks.");
  w.counter("tessera:kv_offload_stores", static_cast<double>(m.kv_offload_stores),
            "KV blocks copied to host memory on eviction.");
  w.counter("tessera:kv_offload_loads", static_cast<double>(m.kv_offload_loads), "KV blocks loaded back from host memory.");
  w.counter("vllm:prompt_tokens", static_cast<double>(m.prompt_tokens), "Prompt tokens of admitted requests.");
  w.counter("vllm:generation_tokens", static_cast<double>(m.generation_tokens), "Generated tokens.");
  w.header("vllm:request_success_total", "counter", "Finished completions by finish reason.");
  const char* reasons[] = {"stop", "length", "abort"};
  for (size_t i = 0; i < 3; ++i) {
    w.sample("vllm:request_success_total", static_cast<double>(m.request_success[i]),
             std::string(",finished_reason=\"") + reasons[i] + "\"");
  }
  w.histogram("vllm:time_to_first_token_seconds", m.time_to_first_token, "Time from arrival to the first token.");
  w.histogram("vllm:inter_token_latency_seconds", m.inter_token_latency,
              "Time between successive tokens of a completion.");
  w.histogram("vllm:e2e_request_latency_seconds", m.e2e_request_latency, "Time from arrival to the end of a request.");
  w.histogram("vllm:request_queue_time_seconds", m.request_queue_time, "Time from arrival to the first schedule.");
  w.histogram("vllm:request_prefill_time_seconds", m.request_prefill_time,
              "Time from a completion's first schedule to its first token.");
  w.histogram("vllm:request_decode_time_seconds", m.request_decode_time,
              "Time from a completion's first token to its end.");
  w.histogram("vllm:request_inference_time_seconds", m.request_inference_time,
              "Time from a completion's first schedule to its end.");
  w.histogram("vllm:request_prompt_tokens", m.request_prompt_tokens, "Prompt tokens per request.");
  w.histogram("vllm:request_generation_tokens", m.request_generation_tokens, "Generated tokens per completion.");
  w.histogram("vllm:request_params_max_tokens", m.request_params_max_tokens, "max_tokens per request.");
  w.histogram("vllm:request_params_n", m.request_params_n, "n per request.");
  w.histogram("vllm:iteration_tokens_total", m.iteration_tokens, "Tokens per engine step.");
  return std::move(w.out());
}

}  // namespace tessera::server

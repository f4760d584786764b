// `tessera template render`: renders a chat template (.jinja, tokenizer_config.json or
// .gguf) with a JSON context and prints exactly the rendering.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "cli/commands.h"

namespace tessera::cli {
namespace {

struct TemplateRenderOptions {
  std::string template_file;
  std::string context_file;
  std::string now;
};

int run_template_render(const TemplateRenderOptions& o) {
  auto tmpl = ChatTemplate::from_file(o.template_file);
  if (!tmpl.ok()) {
    std::cerr << "error: " << tmpl.error() << "\n";
    return 1;
  }
  std::ifstream in(o.context_file, std::ios::binary);
  if (!in) {
    std::cerr << "error: " << o.context_file << ": cannot open file\n";
    return 1;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  auto context = nlohmann::ordered_json::parse(ss.str(), nullptr, false);
  if (context.is_discarded() || !context.is_object()) {
    std::cerr << "error: " << o.context_file << ": expected a JSON object\n";
    return 1;
  }
  jinja::RenderOptions options;
  if (!o.now.empty()) {
    auto now = parse_iso8601_utc(o.now);
    if (!now.ok()) {
      std::cerr << "error: --now: " << now.error() << "\n";
      return 1;
    }
    options.now = *now;
  }
  auto out = tmpl->render(context, options);
  if (!out.ok()) {
    std::cerr << "error: " << out.error() << "\n";
    return 1;
  }
  std::cout.write(out->data(), static_cast<std::streamsize>(out->size()));
  std::cout.flush();
  return 0;
}

}  // namespace

void add_template_command(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("template", "Chat templates (Jinja)");
  cmd->require_subcommand(1);
  auto opts = std::make_shared<TemplateRenderOptions>();
  CLI::App* render = cmd->add_subcommand("render", "Render a chat template with a JSON context");
  render->add_option("--template", opts->template_file, "A .jinja file, a tokenizer_config.json or a .gguf")
      ->required();
  render->add_option("--context", opts->context_file,
                     "JSON object: messages, tools, add_generation_prompt, bos_token, eos_token, ...")
      ->required();
  render->add_option("--now", opts->now, "What strftime_now() sees, UTC (e.g. 2025-07-10T12:00:00Z)");
  render->callback([opts, exit_code]() { *exit_code = run_template_render(*opts); });
}

}  // namespace tessera::cli

#include "loader/hf_hub.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "loader/hf_hub_download.h"
#include "loader/hf_hub_http.h"

namespace tessera::hub {
namespace {

namespace fs = std::filesystem;

bool ends_with(std::string_view s, std::string_view suffix) { return s.ends_with(suffix); }

// One component of a repo id: word characters, '-' and '.', not at either end.
bool valid_part(std::string_view p) {
  if (p.empty() || p.size() > 96) return false;
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  if (!word(p.front()) || !word(p.back())) return false;
  return std::all_of(p.begin(), p.end(), [&](char c) { return word(c) || c == '-' || c == '.'; });
}

bool looks_like_file(std::string_view s) {
  for (std::string_view ext : {".gguf", ".safetensors", ".json", ".model", ".bin", ".jinja", ".pt"}) {
    if (ends_with(s, ext)) return true;
  }
  return false;
}

bool env_true(const char* v) {
  if (v == nullptr) return false;
  std::string s(v);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s == "1" || s == "on" || s == "yes" || s == "true";
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

std::vector<std::string> top_level_files(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) names.push_back(it->path().filename().string());  // follows the blob links
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool has_tokenizer_file(const std::vector<std::string>& names) {
  return std::any_of(names.begin(), names.end(),
                     [](const std::string& n) { return n == "tokenizer.json" || n == "tokenizer.model"; });
}

// Files a model needs beside its weights.
bool is_aux_file(const std::string& n) {
  static const std::set<std::string> kAux = {"config.json",         "generation_config.json",   "tokenizer.json",
                                             "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model"};
  return kAux.contains(n);
}

std::string join(const std::vector<std::string>& v, size_t max) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < max; ++i) out += (i ? ", " : "") + v[i];
  if (v.size() > max) out += ", ...";
  return out;
}

}  // namespace

std::optional<RepoRef> parse_repo_id(std::string_view name) {
  if (name.empty() || name.front() == '/' || name.front() == '.' || name.front() == '~') return std::nullopt;
  if (name.find("--") != std::string_view::npos || name.find("..") != std::string_view::npos) return std::nullopt;
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t slash = name.find('/', start);
    parts.push_back(name.substr(start, slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (parts.size() > 3 || !std::all_of(parts.begin(), parts.end(), valid_part)) return std::nullopt;
  if (parts.size() == 3) {  // ORG/NAME/FILE.gguf
    if (!ends_with(parts[2], ".gguf")) return std::nullopt;
    return RepoRef{std::string(parts[0]) + "/" + std::string(parts[1]), std::string(parts[2])};
  }
  if (looks_like_file(parts.back())) return std::nullopt;
  return RepoRef{std::string(name), ""};
}

std::string cache_dir_from(const char* hf_hub_cache, const char* hf_home, const char* home) {
  auto set = [](const char* v) { return v != nullptr && *v != '\0'; };
  if (set(hf_hub_cache)) return hf_hub_cache;
  if (set(hf_home)) return (fs::path(hf_home) / "hub").string();
  return (fs::path(set(home) ? home : "/") / ".cache" / "huggingface" / "hub").string();
}

HubEnv hub_env_from_environment() {
  HubEnv env;
  const char* hf_home = std::getenv("HF_HOME");
  env.cache_dir = cache_dir_from(std::getenv("HF_HUB_CACHE"), hf_home, std::getenv("HOME"));
  env.endpoint = env_or_empty("HF_ENDPOINT");
  if (env.endpoint.empty()) env.endpoint = "https://huggingface.co";
  while (env.endpoint.ends_with("/")) env.endpoint.pop_back();
  env.token = trim(env_or_empty("HF_TOKEN"));
  if (env.token.empty()) {
    const fs::path home = (hf_home != nullptr && *hf_home != '\0')
                              ? fs::path(hf_home)
                              : fs::path(env_or_empty("HOME")) / ".cache" / "huggingface";
    std::ifstream in(home / "token");
    std::stringstream ss;
    ss << in.rdbuf();
    env.token = trim(ss.str());
  }
  env.offline = env_true(std::getenv("HF_HUB_OFFLINE"));
  return env;
}

bool is_commit_hash(std::string_view revision) {
  return revision.size() == 40 &&
         std::all_of(revision.begin(), revision.end(), [](char c) { return std::isdigit(c) || (c >= 'a' && c <= 'f'); });
}

bool is_valid_revision(std::string_view revision) {
  if (revision.empty() || revision.front() == '/' || revision.back() == '/') return false;
  if (revision.find("..") != std::string_view::npos || revision.find("//") != std::string_view::npos) return false;
  return std::all_of(revision.begin(), revision.end(), [](unsigned char c) { return c > 0x20 && c != 0x7f && c != '\\'; });
}

fs::path repo_folder(const fs::path& cache, std::string_view repo) {
  std::string folder = "models--";
  for (char c : repo) folder += c == '/' ? std::string("--") : std::string(1, c);
  return cache / folder;
}

std::optional<fs::path> cached_snapshot(const fs::path& cache, std::string_view repo, std::string_view revision) {
  if (!is_valid_revision(revision)) return std::nullopt;
  const fs::path folder = repo_folder(cache, repo);
  std::string commit(revision);
  if (!is_commit_hash(revision)) {
    std::ifstream in(folder / "refs" / std::string(revision));
    if (!in) return std::nullopt;
    std::getline(in, commit);
    commit = trim(commit);
    if (!is_commit_hash(commit)) return std::nullopt;
  }
  const fs::path snapshot = folder / "snapshots" / commit;
  std::error_code ec;
  if (!fs::is_directory(snapshot, ec)) return std::nullopt;
  return snapshot;
}

Result<std::vector<std::string>> files_to_fetch(const std::vector<std::string>& repo_files, const RepoRef& ref) {
  std::vector<std::string> top, aux, safetensors, gguf;
  for (const std::string& f : repo_files) {
    if (f.find('/') != std::string::npos) continue;  // original/, onnx/, ...: not what the engine loads
    top.push_back(f);
    if (is_aux_file(f)) aux.push_back(f);
    if (ends_with(f, ".safetensors")) safetensors.push_back(f);
    if (ends_with(f, ".gguf")) gguf.push_back(f);
  }
  std::vector<std::string> out = aux;
  if (!ref.file.empty()) {
    if (std::find(top.begin(), top.end(), ref.file) == top.end()) {
      return Status::error(ref.repo + " has no file " + ref.file);
    }
    out.push_back(ref.file);
  } else if (!safetensors.empty()) {
    out.insert(out.end(), safetensors.begin(), safetensors.end());
    if (std::find(top.begin(), top.end(), "model.safetensors.index.json") != top.end()) {
      out.push_back("model.safetensors.index.json");
    }
  } else if (gguf.size() == 1) {
    out.push_back(gguf.front());
  } else if (gguf.size() > 1) {
    return Status::error(ref.repo + " holds " + std::to_string(gguf.size()) + " GGUF files (" + join(gguf, 4) +
                         "): name one as " + ref.repo + "/FILE.gguf");
  } else {
    return Status::error(ref.repo + " has no .safetensors or .gguf weights (the formats Tessera loads)");
  }
  return out;
}

Result<std::string> model_path_in_snapshot(const fs::path& snapshot, const RepoRef& ref) {
  const std::vector<std::string> names = top_level_files(snapshot);
  if (!ref.file.empty()) {
    if (std::find(names.begin(), names.end(), ref.file) == names.end()) {
      return Status::error(ref.repo + ": " + ref.file + " is not in the cached snapshot " + snapshot.string());
    }
    return (snapshot / ref.file).string();
  }
  std::vector<std::string> gguf;
  for (const std::string& n : names) {
    if (ends_with(n, ".safetensors")) return snapshot.string();
    if (ends_with(n, ".gguf")) gguf.push_back(n);
  }
  if (gguf.size() == 1) return (snapshot / gguf.front()).string();
  if (gguf.size() > 1) {
    return Status::error(ref.repo + ": the cached snapshot holds several GGUF files (" + join(gguf, 4) +
                         "): name one as " + ref.repo + "/FILE.gguf");
  }
  return Status::error(ref.repo + ": the cached snapshot " + snapshot.string() + " has no weights");
}

namespace {

// A tokenizer needs no weights when the snapshot has a tokenizer file of its own.
Result<std::string> path_in_snapshot(const fs::path& snapshot, const RepoRef& ref, bool tokenizer_only) {
  if (tokenizer_only && ref.file.empty() && has_tokenizer_file(top_level_files(snapshot))) return snapshot.string();
  return model_path_in_snapshot(snapshot, ref);
}

Result<std::vector<std::string>> files_for(const std::vector<std::string>& repo_files, const RepoRef& ref,
                                           bool tokenizer_only) {
  if (tokenizer_only && ref.file.empty() && has_tokenizer_file(repo_files)) {
    std::vector<std::string> out;
    for (const std::string& f : repo_files) {
      if (is_aux_file(f)) out.push_back(f);
    }
    return out;
  }
  return files_to_fetch(repo_files, ref);
}

std::string revision_or_main(const ResolveOptions& o) { return o.revision.empty() ? "main" : o.revision; }

fs::path cache_of(const ResolveOptions& o, const HubEnv& env) {
  return o.cache_dir.empty() ? fs::path(env.cache_dir) : fs::path(o.cache_dir);
}

Result<std::string> resolve_online(const std::string& name, const RepoRef& ref, const std::string& revision,
                                   const fs::path& cache, const HubEnv& env, const ResolveOptions& o) {
  const RepoListing listing = fetch_repo_listing(env, ref.repo, revision);
  if (!listing.ok()) {
    // The network is down: the cache, as huggingface_hub falls back to it.
    if (!listing.reachable) {
      if (auto snap = cached_snapshot(cache, ref.repo, revision)) {
        auto path = path_in_snapshot(*snap, ref, o.tokenizer_only);
        if (path.ok()) {
          std::fprintf(stderr, "tessera: %s: the Hub is unreachable (%s): using the cached snapshot\n", name.c_str(),
                       listing.error.c_str());
          return path;
        }
      }
    }
    return Status::error(name + ": " + listing.error);
  }
  auto files = files_for(listing.files, ref, o.tokenizer_only);
  if (!files.ok()) return Status::error(name + ": " + files.error());
  const fs::path folder = repo_folder(cache, ref.repo);
  for (size_t i = 0; i < files->size(); ++i) {
    DownloadLabel label{ref.repo, (*files)[i], i + 1, files->size(), o.progress};
    if (Status s = download_into_snapshot(env, folder, ref.repo, listing.sha, (*files)[i], label); !s.ok()) {
      return Status::error(name + ": " + s.message());
    }
  }
  if (revision != listing.sha) {
    if (Status s = write_ref(folder, revision, listing.sha); !s.ok()) return Status::error(name + ": " + s.message());
  }
  return path_in_snapshot(folder / "snapshots" / listing.sha, ref, o.tokenizer_only);
}

}  // namespace

Result<std::string> resolve_model_path(const std::string& name, const ResolveOptions& o, const HubEnv& env) {
  std::error_code ec;
  if (name.empty() || fs::exists(name, ec)) return name;
  const std::optional<RepoRef> ref = parse_repo_id(name);
  if (!ref) return name;  // a path: the loader says it is missing
  const std::string revision = revision_or_main(o);
  if (!is_valid_revision(revision)) return Status::error(name + ": invalid revision '" + revision + "'");
  const fs::path cache = cache_of(o, env);
  const std::optional<fs::path> snap = cached_snapshot(cache, ref->repo, revision);
  // A commit never changes: its cached snapshot needs no network.
  if (snap && (env.offline || is_commit_hash(revision))) {
    auto path = path_in_snapshot(*snap, *ref, o.tokenizer_only);
    if (path.ok() || env.offline) return path;
  }
  if (env.offline) {
    return Status::error(name + ": not a local path, and not in the Hugging Face cache " + cache.string() +
                         " (revision " + revision + "); HF_HUB_OFFLINE is set, so nothing is downloaded");
  }
  return resolve_online(name, *ref, revision, cache, env, o);
}

std::string cached_model_path(const std::string& name, const ResolveOptions& options, const HubEnv& env) {
  HubEnv offline = env;
  offline.offline = true;
  auto path = resolve_model_path(name, options, offline);
  return path.ok() ? *path : name;
}

}  // namespace tessera::hub

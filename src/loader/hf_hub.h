// Model names of the Hugging Face Hub ("ORG/NAME") as local paths: from the Hub's local cache
// as huggingface_hub lays it out (models--ORG--NAME/{refs,snapshots,blobs}), downloading what
// is missing through the Hub's HTTP API (hf_hub_http.h). A path that exists is used as it is.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tessera::hub {

// A model on the Hub: repo "ORG/NAME" (or "NAME"), and optionally the one GGUF file of it to
// use ("ORG/NAME/FILE.gguf", for repos that hold several quantizations).
struct RepoRef {
  std::string repo;
  std::string file;  // "": the model's files
};

// The Hub's id syntax (huggingface_hub's validate_repo_id); nullopt for what reads as a path
// (leading '/', '.', '~', a weights file's extension, more than two components).
std::optional<RepoRef> parse_repo_id(std::string_view name);

// What the environment says, read once; tests build their own.
struct HubEnv {
  std::string cache_dir;  // $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
  std::string endpoint;   // $HF_ENDPOINT, else https://huggingface.co (no trailing '/')
  std::string token;      // $HF_TOKEN, else the file $HF_HOME/token; "": anonymous
  bool offline = false;   // $HF_HUB_OFFLINE: the cache only
};
HubEnv hub_env_from_environment();

// The cache directory from the variables' values (nullptr: unset or empty).
std::string cache_dir_from(const char* hf_hub_cache, const char* hf_home, const char* home);

bool is_commit_hash(std::string_view revision);
// A revision usable as a path under refs/ and in a URL: no "..", no leading '/'.
bool is_valid_revision(std::string_view revision);

// <cache>/models--ORG--NAME
std::filesystem::path repo_folder(const std::filesystem::path& cache, std::string_view repo);

// The snapshot folder of repo at revision (a 40-hex commit used as it is, else the commit in
// refs/<revision>); nullopt when the cache has no such ref or snapshot.
std::optional<std::filesystem::path> cached_snapshot(const std::filesystem::path& cache, std::string_view repo,
                                                     std::string_view revision);

// Of a repo's files (rfilename, '/'-separated), those the engine loads: config, generation
// config, tokenizer files and the safetensors weights (with their index), else the GGUF (one
// of them, or ref.file). An error names what is missing or ambiguous.
Result<std::vector<std::string>> files_to_fetch(const std::vector<std::string>& repo_files, const RepoRef& ref);

// The path to load from a snapshot holding those files: the folder, or its GGUF file.
Result<std::string> model_path_in_snapshot(const std::filesystem::path& snapshot, const RepoRef& ref);

struct ResolveOptions {
  std::string revision;   // "": "main"
  std::string cache_dir;  // "": the environment's (vLLM's --download-dir)
  bool progress = true;   // a progress bar on stderr while downloading
  // A tokenizer: a repo's tokenizer files without its weights, when it has tokenizer.json or
  // tokenizer.model (the folder is the path), else the model's files.
  bool tokenizer_only = false;
};

// `name` as a local path: an existing path or a name that is no Hub id as it is; else the
// cached snapshot's, after downloading what is missing (offline: the cache only). Errors are
// one line naming the model.
Result<std::string> resolve_model_path(const std::string& name, const ResolveOptions& options,
                                       const HubEnv& env = hub_env_from_environment());

// The same from the cache only, never the network; `name` as it is when not cached.
std::string cached_model_path(const std::string& name, const ResolveOptions& options,
                              const HubEnv& env = hub_env_from_environment());

}  // namespace tessera::hub

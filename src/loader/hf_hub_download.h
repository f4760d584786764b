// Filling the Hub's cache as huggingface_hub does: a repo's listing at a revision from the
// Hub's API, each file into blobs/<etag> (through a temporary file, so an interrupted
// download leaves nothing in snapshots/), linked from snapshots/<commit>/<file>, and the
// revision's commit in refs/<revision>.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "common/status.h"
#include "loader/hf_hub.h"

namespace tessera::hub {

struct RepoListing {
  std::string sha;                 // the revision's commit
  std::vector<std::string> files;  // rfilename of every file
  std::string error;               // "": ok; else one line, without the model's name
  bool reachable = true;           // false: the Hub could not be reached (the cache may serve)
  bool ok() const { return error.empty(); }
};

// GET {endpoint}/api/models/{repo}/revision/{revision}.
RepoListing fetch_repo_listing(const HubEnv& env, const std::string& repo, const std::string& revision);

struct DownloadLabel {
  std::string repo, file;
  size_t index = 1, count = 1;  // "[index/count]"
  bool progress = true;         // a progress bar on stderr
};

// {endpoint}/{repo}/resolve/{sha}/{file} into the cache under `folder` (models--ORG--NAME);
// nothing to do when the snapshot already has the file.
Status download_into_snapshot(const HubEnv& env, const std::filesystem::path& folder, const std::string& repo,
                              const std::string& sha, const std::string& file, const DownloadLabel& label);

// refs/<revision> := sha, replaced atomically.
Status write_ref(const std::filesystem::path& folder, const std::string& revision, const std::string& sha);

// The one-line message of a Hub reply that is not 200 (404: no such repo or revision; 401 or
// 403: private or gated, needing a token with access).
std::string hub_status_message(const HubEnv& env, const std::string& repo, const std::string& revision, int status,
                               const std::string& error_code, const std::string& error_message);

}  // namespace tessera::hub

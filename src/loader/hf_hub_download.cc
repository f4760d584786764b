#include "loader/hf_hub_download.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "loader/hf_hub_http.h"

namespace tessera::hub {
namespace {

namespace fs = std::filesystem;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// "Downloading ORG/NAME [i/n] FILE: 45% 12.3/27.0 MiB, 5.1 MiB/s" on stderr: redrawn in place
// on a terminal (at most 10 times a second), one line at the end otherwise.
class ProgressBar {
 public:
  explicit ProgressBar(const DownloadLabel& label) : label_(label), tty_(isatty(2)), t0_(now_seconds()) {}
  void start(uint64_t total) { total_ = total; }
  void add(size_t n) {
    done_ += n;
    if (tty_ && now_seconds() - last_ >= 0.1) draw(false);
  }
  void finish() { draw(true); }

 private:
  void draw(bool final) {
    if (!label_.progress) return;
    last_ = now_seconds();
    const double mib = 1024.0 * 1024.0;
    const double rate = done_ / mib / std::max(last_ - t0_, 1e-3);
    char amount[96];
    if (total_ > 0) {
      std::snprintf(amount, sizeof amount, "%3d%% %.1f/%.1f MiB", static_cast<int>(100.0 * done_ / total_), done_ / mib,
                    total_ / mib);
    } else {
      std::snprintf(amount, sizeof amount, "%.1f MiB", done_ / mib);
    }
    std::fprintf(stderr, "%sDownloading %s [%zu/%zu] %s: %s, %.1f MiB/s%s", tty_ ? "\r\033[K" : "", label_.repo.c_str(),
                 label_.index, label_.count, label_.file.c_str(), amount, rate, final ? "\n" : "");
    std::fflush(stderr);
  }

  const DownloadLabel& label_;
  bool tty_;
  double t0_, last_ = 0;
  uint64_t total_ = 0, done_ = 0;
};

// SHA-256 of the bytes written: the blob's name when the Hub sends no ETag.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) { EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr); }
  void update(const char* data, size_t n) { EVP_DigestUpdate(ctx_.get(), data, n); }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx_.get(), md, &len);
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < len; ++i) {
      out += digits[md[i] >> 4];
      out += digits[md[i] & 15];
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

// An ETag usable as a file name in blobs/ (the Hub's are hex digests).
bool is_blob_name(const std::string& s) {
  if (s.empty() || s.size() > 128 || s.front() == '.') return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_' || c == '.'; });
}

// A hidden name of this process beside `stem`: unfinished files never take a real name.
std::string temp_name(const std::string& stem) {
  static std::atomic<int> counter{0};
  std::string name(1, '.');
  name.append(stem).append(".").append(std::to_string(getpid())).append("-").append(std::to_string(counter++));
  return name.append(".incomplete");
}

// The blob's link target, relative to the file's place under snapshots/<sha>/.
fs::path blob_link(const std::string& file, const std::string& blob) {
  fs::path up = "..";
  up /= "..";
  for (char c : file) {
    if (c == '/') up /= "..";
  }
  return up / "blobs" / blob;
}

Status link_into_snapshot(const fs::path& folder, const std::string& sha, const std::string& file, const std::string& blob) {
  const fs::path target = folder / "snapshots" / sha / file;
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) return Status::error("cannot create " + target.parent_path().string() + ": " + ec.message());
  const fs::path tmp = target.parent_path() / temp_name(target.filename().string());
  fs::create_symlink(blob_link(file, blob), tmp, ec);
  if (ec) {  // a file system without symbolic links: a copy
    fs::copy_file(folder / "blobs" / blob, tmp, ec);
    if (ec) return Status::error("cannot place " + target.string() + ": " + ec.message());
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Status::error("cannot place " + target.string() + ": " + ec.message());
  }
  return Status();
}

}  // namespace

std::string hub_status_message(const HubEnv& env, const std::string& repo, const std::string& revision, int status,
                               const std::string& error_code, const std::string& error_message) {
  const std::string page = env.endpoint + "/" + repo;
  const std::string token_hint = env.token.empty() ? "set HF_TOKEN (or log in with `hf auth login`) to a token with access"
                                                   : "the token given (HF_TOKEN) has no access to it";
  if (error_code == "GatedRepo") {
    return "the model is gated: it needs a token (HF_TOKEN) of an account granted access at " + page;
  }
  if (error_code == "RevisionNotFound") return "no revision '" + revision + "' of the model on the Hub (" + page + ")";
  if (error_code == "EntryNotFound") return "a file is missing from the model on the Hub: " + error_message;
  if (status == 401) return "the Hub refuses access (HTTP 401): the model is private, gated or does not exist; " + token_hint;
  if (status == 403) return "no access to the model (HTTP 403: gated or private): request access at " + page + "; " + token_hint;
  if (status == 404) return "no such model on the Hugging Face Hub (" + env.endpoint + ")";
  std::string msg = "the Hub answered HTTP " + std::to_string(status);
  if (!error_message.empty()) msg += ": " + error_message.substr(0, 200);
  return msg;
}

RepoListing fetch_repo_listing(const HubEnv& env, const std::string& repo, const std::string& revision) {
  RepoListing out;
  const std::string url = env.endpoint + "/api/models/" + url_encode(repo, true) + "/revision/" + url_encode(revision, false);
  auto reply = http_get(url, env.token, nullptr);
  if (!reply.ok()) {
    out.reachable = false;
    out.error = "not a local path, and the Hugging Face Hub is unreachable: " + reply.error() +
                " (HF_HUB_OFFLINE=1 uses the cache only)";
    return out;
  }
  if (reply->status != 200) {
    out.error = hub_status_message(env, repo, revision, reply->status, reply->error_code, reply->error_message);
    return out;
  }
  const nlohmann::json j = nlohmann::json::parse(reply->body, nullptr, false);
  const auto sha = j.is_object() ? j.find("sha") : j.end();
  if (sha == j.end() || !sha->is_string() || !is_commit_hash(sha->get<std::string>())) {
    out.error = "the Hub's reply from " + url + " has no commit \"sha\"";
    return out;
  }
  out.sha = sha->get<std::string>();
  if (auto s = j.find("siblings"); s != j.end() && s->is_array()) {
    for (const auto& f : *s) {
      const auto name = f.is_object() ? f.find("rfilename") : f.end();
      if (name != f.end() && name->is_string()) out.files.push_back(name->get<std::string>());
    }
  }
  return out;
}

Status download_into_snapshot(const HubEnv& env, const fs::path& folder, const std::string& repo, const std::string& sha,
                              const std::string& file, const DownloadLabel& label) {
  std::error_code ec;
  if (fs::exists(folder / "snapshots" / sha / file, ec)) return Status();
  const fs::path blobs = folder / "blobs";
  fs::create_directories(blobs, ec);
  if (ec) return Status::error("cannot create " + blobs.string() + ": " + ec.message());
  const fs::path tmp = blobs / temp_name("download");
  std::ofstream out(tmp, std::ios::binary);
  if (!out) return Status::error("cannot write " + tmp.string());
  ProgressBar bar(label);
  Sha256 digest;
  BodySink sink;
  sink.on_start = [&](uint64_t total) { bar.start(total); };
  sink.on_data = [&](const char* data, size_t n) {
    out.write(data, static_cast<std::streamsize>(n));
    digest.update(data, n);
    bar.add(n);
    return out ? Status() : Status::error("cannot write " + tmp.string() + " (disk full?)");
  };
  const std::string url = env.endpoint + "/" + url_encode(repo, true) + "/resolve/" + sha + "/" + url_encode(file, true);
  auto reply = http_get(url, env.token, &sink);
  out.close();
  const bool complete = reply.ok() && reply->status == 200 && out;
  if (!complete) {
    fs::remove(tmp, ec);
    if (!reply.ok()) return Status::error("downloading " + file + ": " + reply.error());
    if (reply->status != 200) {
      return Status::error(file + ": " +
                           hub_status_message(env, repo, sha, reply->status, reply->error_code, reply->error_message));
    }
    return Status::error("cannot write " + tmp.string());
  }
  bar.finish();
  const std::string blob = is_blob_name(reply->etag) ? reply->etag : digest.hex();
  fs::rename(tmp, blobs / blob, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Status::error("cannot place " + (blobs / blob).string() + ": " + ec.message());
  }
  return link_into_snapshot(folder, sha, file, blob);
}

Status write_ref(const fs::path& folder, const std::string& revision, const std::string& sha) {
  const fs::path ref = folder / "refs" / revision;
  std::error_code ec;
  fs::create_directories(ref.parent_path(), ec);
  const fs::path tmp = ref.parent_path() / temp_name(ref.filename().string());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << sha;  // no newline, as huggingface_hub writes it
    if (!out) return Status::error("cannot write " + tmp.string());
  }
  fs::rename(tmp, ref, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Status::error("cannot write " + ref.string() + ": " + ec.message());
  }
  return Status();
}

}  // namespace tessera::hub

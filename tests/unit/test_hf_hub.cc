// The Hugging Face cache logic of src/loader/hf_hub.h: where the cache is, repo ids, refs and
// revisions, which files a model needs, and resolution from the cache alone (no network: the
// downloads are tests/e2e/test_hf_hub.py's, against a stand-in Hub).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "loader/hf_hub.h"
#include "loader/hf_hub_http.h"

namespace tessera::hub {
namespace {

namespace fs = std::filesystem;

const std::string kSha = "0123456789abcdef0123456789abcdef01234567";
const std::string kOtherSha = "fedcba9876543210fedcba9876543210fedcba98";

class TempCache {
 public:
  TempCache() {
    std::string tmpl = (fs::temp_directory_path() / "tessera-hub-XXXXXX").string();
    root_ = ::mkdtemp(tmpl.data());
  }
  ~TempCache() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  const fs::path& root() const { return root_; }
  // models--ORG--NAME/snapshots/<sha>/<file> (a plain file: the cache logic reads names only).
  fs::path add_file(const std::string& repo, const std::string& sha, const std::string& file) {
    const fs::path p = repo_folder(root_, repo) / "snapshots" / sha / file;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "x";
    return p;
  }
  void add_ref(const std::string& repo, const std::string& revision, const std::string& content) {
    const fs::path p = repo_folder(root_, repo) / "refs" / revision;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }

 private:
  fs::path root_;
};

TEST(HfHub, CacheDirPrecedence) {
  EXPECT_EQ(cache_dir_from("/c", "/h", "/home/u"), "/c");
  EXPECT_EQ(cache_dir_from(nullptr, "/h", "/home/u"), (fs::path("/h") / "hub").string());
  EXPECT_EQ(cache_dir_from("", "/h", "/home/u"), (fs::path("/h") / "hub").string());  // empty is unset
  EXPECT_EQ(cache_dir_from(nullptr, nullptr, "/home/u"), (fs::path("/home/u") / ".cache/huggingface/hub").string());
  EXPECT_EQ(cache_dir_from(nullptr, "", "/home/u"), (fs::path("/home/u") / ".cache/huggingface/hub").string());
}

TEST(HfHub, EnvironmentIsRead) {
  TempCache t;
  const fs::path home = t.root() / "hf";
  fs::create_directories(home);
  std::ofstream(home / "token") << "  tok-from-file\n";
  setenv("HF_HOME", home.c_str(), 1);
  unsetenv("HF_HUB_CACHE");
  unsetenv("HF_TOKEN");
  setenv("HF_ENDPOINT", "http://127.0.0.1:9/", 1);
  setenv("HF_HUB_OFFLINE", "True", 1);
  HubEnv env = hub_env_from_environment();
  EXPECT_EQ(env.cache_dir, (home / "hub").string());
  EXPECT_EQ(env.endpoint, "http://127.0.0.1:9");
  EXPECT_EQ(env.token, "tok-from-file");
  EXPECT_TRUE(env.offline);
  setenv("HF_TOKEN", "tok-from-env", 1);
  setenv("HF_HUB_CACHE", (t.root() / "c").c_str(), 1);
  setenv("HF_HUB_OFFLINE", "0", 1);
  env = hub_env_from_environment();
  EXPECT_EQ(env.token, "tok-from-env");
  EXPECT_EQ(env.cache_dir, (t.root() / "c").string());
  EXPECT_FALSE(env.offline);
  for (const char* v : {"HF_HOME", "HF_HUB_CACHE", "HF_TOKEN", "HF_ENDPOINT", "HF_HUB_OFFLINE"}) unsetenv(v);
}

TEST(HfHub, RepoIds) {
  auto r = parse_repo_id("Qwen/Qwen2.5-7B-Instruct");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->repo, "Qwen/Qwen2.5-7B-Instruct");
  EXPECT_EQ(r->file, "");
  ASSERT_TRUE(parse_repo_id("gpt2"));
  r = parse_repo_id("org/name-GGUF/name.Q4_K_M.gguf");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->repo, "org/name-GGUF");
  EXPECT_EQ(r->file, "name.Q4_K_M.gguf");
  for (const char* path : {"", "/models/x", "./x", "../x", "~/x", "model.gguf", "dir/model.safetensors",
                           "a/b/c", "a/b/c/d.gguf", "a--b/c", "a/b..c", "-a/b", "a/b-", "a//b", "a b/c"}) {
    EXPECT_FALSE(parse_repo_id(path)) << path;
  }
  EXPECT_FALSE(parse_repo_id(std::string(97, 'a')));
}

TEST(HfHub, Revisions) {
  EXPECT_TRUE(is_commit_hash(kSha));
  EXPECT_FALSE(is_commit_hash(kSha.substr(1)));
  EXPECT_FALSE(is_commit_hash("0123456789ABCDEF0123456789abcdef01234567"));
  EXPECT_TRUE(is_valid_revision("main"));
  EXPECT_TRUE(is_valid_revision("refs/pr/1"));
  for (const char* bad : {"", "/etc", "../x", "a/../../b", "a//b", "a\\b", "a b", "x/"}) {
    EXPECT_FALSE(is_valid_revision(bad)) << bad;
  }
  EXPECT_EQ(repo_folder("/c", "org/name").string(), "/c/models--org--name");
}

TEST(HfHub, SnapshotsThroughRefs) {
  TempCache t;
  t.add_file("org/m", kSha, "config.json");
  t.add_file("org/m", kOtherSha, "config.json");
  t.add_ref("org/m", "main", kSha);  // huggingface_hub writes it without a newline
  t.add_ref("org/m", "v2", kOtherSha + "\n");
  t.add_ref("org/m", "refs/pr/1", kOtherSha);
  t.add_ref("org/m", "junk", "not a hash");
  const fs::path snaps = repo_folder(t.root(), "org/m") / "snapshots";
  EXPECT_EQ(cached_snapshot(t.root(), "org/m", "main"), snaps / kSha);
  EXPECT_EQ(cached_snapshot(t.root(), "org/m", "v2"), snaps / kOtherSha);
  EXPECT_EQ(cached_snapshot(t.root(), "org/m", "refs/pr/1"), snaps / kOtherSha);
  EXPECT_EQ(cached_snapshot(t.root(), "org/m", kOtherSha), snaps / kOtherSha);  // a commit needs no ref
  EXPECT_FALSE(cached_snapshot(t.root(), "org/m", "junk"));
  EXPECT_FALSE(cached_snapshot(t.root(), "org/m", "missing"));
  EXPECT_FALSE(cached_snapshot(t.root(), "org/m", "0000000000000000000000000000000000000000"));
  EXPECT_FALSE(cached_snapshot(t.root(), "org/other", "main"));
  EXPECT_FALSE(cached_snapshot(t.root(), "org/m", "../../x"));
}

TEST(HfHub, FilesToFetch) {
  const std::vector<std::string> st = {"config.json", "model-00001-of-00002.safetensors", "README.md",
                                       "model-00002-of-00002.safetensors", "model.safetensors.index.json",
                                       "pytorch_model.bin", "tokenizer.json", "original/consolidated.00.pth",
                                       "onnx/model.safetensors", "tokenizer_config.json", ".gitattributes"};
  auto files = files_to_fetch(st, {"org/m", ""});
  ASSERT_TRUE(files.ok()) << files.error();
  std::vector<std::string> got = *files;
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"config.json", "model-00001-of-00002.safetensors",
                                           "model-00002-of-00002.safetensors", "model.safetensors.index.json",
                                           "tokenizer.json", "tokenizer_config.json"}));
  files = files_to_fetch({"README.md", "m.Q4_0.gguf"}, {"org/m", ""});
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(*files, std::vector<std::string>{"m.Q4_0.gguf"});
  const std::vector<std::string> several = {"m.Q4_0.gguf", "m.Q8_0.gguf", "config.json"};
  files = files_to_fetch(several, {"org/m", ""});
  ASSERT_FALSE(files.ok());
  EXPECT_NE(files.error().find("org/m/FILE.gguf"), std::string::npos) << files.error();
  files = files_to_fetch(several, {"org/m", "m.Q8_0.gguf"});
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(*files, (std::vector<std::string>{"config.json", "m.Q8_0.gguf"}));
  EXPECT_FALSE(files_to_fetch(several, {"org/m", "m.F16.gguf"}).ok());
  EXPECT_FALSE(files_to_fetch({"pytorch_model.bin", "config.json"}, {"org/m", ""}).ok());
  EXPECT_FALSE(files_to_fetch({}, {"org/m", ""}).ok());
}

TEST(HfHub, ModelPathInSnapshot) {
  TempCache t;
  const fs::path st = t.add_file("org/st", kSha, "model.safetensors").parent_path();
  EXPECT_EQ(*model_path_in_snapshot(st, {"org/st", ""}), st.string());
  const fs::path one = t.add_file("org/one", kSha, "m.gguf");
  EXPECT_EQ(*model_path_in_snapshot(one.parent_path(), {"org/one", ""}), one.string());
  const fs::path two = t.add_file("org/two", kSha, "a.gguf").parent_path();
  t.add_file("org/two", kSha, "b.gguf");
  EXPECT_FALSE(model_path_in_snapshot(two, {"org/two", ""}).ok());
  EXPECT_EQ(*model_path_in_snapshot(two, {"org/two", "b.gguf"}), (two / "b.gguf").string());
  EXPECT_FALSE(model_path_in_snapshot(two, {"org/two", "c.gguf"}).ok());
  const fs::path none = t.add_file("org/none", kSha, "config.json").parent_path();
  EXPECT_FALSE(model_path_in_snapshot(none, {"org/none", ""}).ok());
}

TEST(HfHub, ResolveFromTheCacheOffline) {
  TempCache t;
  HubEnv env;
  env.cache_dir = t.root().string();
  env.endpoint = "http://127.0.0.1:9";  // never contacted: offline
  env.offline = true;
  const fs::path gguf = t.add_file("org/m", kSha, "m.gguf");
  t.add_ref("org/m", "main", kSha);
  ResolveOptions o;
  o.progress = false;
  EXPECT_EQ(*resolve_model_path("org/m", o, env), gguf.string());
  o.revision = kSha;
  EXPECT_EQ(*resolve_model_path("org/m", o, env), gguf.string());
  o.revision = "v9";
  auto missing = resolve_model_path("org/m", o, env);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("HF_HUB_OFFLINE"), std::string::npos) << missing.error();
  EXPECT_NE(missing.error().find("org/m"), std::string::npos);
  o.revision = "";
  EXPECT_FALSE(resolve_model_path("org/other", o, env).ok());
  EXPECT_EQ(cached_model_path("org/other", o, env), "org/other");
  EXPECT_EQ(cached_model_path("org/m", o, env), gguf.string());
  // Another cache (vLLM's --download-dir) holds nothing.
  o.cache_dir = (t.root() / "elsewhere").string();
  EXPECT_FALSE(resolve_model_path("org/m", o, env).ok());
  // What is no Hub id, and empty names, pass through for the loader to judge.
  EXPECT_EQ(*resolve_model_path("/no/such/model.gguf", o, env), "/no/such/model.gguf");
  EXPECT_EQ(*resolve_model_path("", o, env), "");
}

TEST(HfHub, AnExistingPathWinsOverAName) {
  TempCache t;
  HubEnv env;
  env.cache_dir = (t.root() / "cache").string();
  env.offline = true;
  fs::create_directories(t.root() / "org" / "m");
  const fs::path cwd = fs::current_path();
  fs::current_path(t.root());
  auto r = resolve_model_path("org/m", {}, env);
  fs::current_path(cwd);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(*r, "org/m");
}

TEST(HfHub, TokenizerOnlyNeedsNoWeights) {
  TempCache t;
  HubEnv env;
  env.cache_dir = t.root().string();
  env.offline = true;
  const fs::path dir = t.add_file("org/tok", kSha, "tokenizer.json").parent_path();
  t.add_ref("org/tok", "main", kSha);
  ResolveOptions o;
  o.tokenizer_only = true;
  EXPECT_EQ(*resolve_model_path("org/tok", o, env), dir.string());
  o.tokenizer_only = false;
  EXPECT_FALSE(resolve_model_path("org/tok", o, env).ok());  // a model needs weights
}

TEST(HfHub, HttpFailuresAreErrors) {
  EXPECT_FALSE(http_get("ftp://x/y", "", nullptr).ok());
  EXPECT_FALSE(http_get("http://", "", nullptr).ok());
  EXPECT_FALSE(http_get("http://[::1/x", "", nullptr).ok());
  EXPECT_FALSE(http_get("http://host:99999/x", "", nullptr).ok());
  // Port 9 (discard) on loopback: nothing listens there in a test environment.
  auto r = http_get("http://127.0.0.1:9/x", "", nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("127.0.0.1:9"), std::string::npos) << r.error();
  EXPECT_EQ(url_encode("org/a b", true), "org/a%20b");
  EXPECT_EQ(url_encode("refs/pr/1", false), "refs%2Fpr%2F1");
}

}  // namespace
}  // namespace tessera::hub

// The tuning registry: defaults, values read from the environment once, errors that name
// the variable, and the --profile spec.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <set>
#include <string>

#include "tessera/tuning.h"

namespace tessera {
namespace {

// Sets a variable for one test and restores the environment after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Tuning, EverySwitchIsDocumentedOnceWithItsDefault) {
  std::set<std::string> names;
  for (const TuningSwitch& s : tuning_switches()) {
    EXPECT_TRUE(names.insert(s.env).second) << s.env;
    EXPECT_EQ(std::string(s.env).rfind("TESSERA_", 0), 0u) << s.env;
    EXPECT_GT(std::string(s.doc).size(), 20u) << s.env;
    // The documented default is what an unset variable gives: setting it changes nothing.
    ScopedEnv set(s.env, s.default_value);
    auto t = tuning_from_environment();
    ASSERT_TRUE(t.ok()) << s.env << ": " << t.error();
    const Tuning d;
    EXPECT_EQ(t->attention_split_keys, d.attention_split_keys) << s.env;
    EXPECT_EQ(t->rope_in_attention, d.rope_in_attention) << s.env;
    EXPECT_EQ(t->prefill_tile_rows, d.prefill_tile_rows) << s.env;
    EXPECT_EQ(t->decode_bulk_tokens, d.decode_bulk_tokens) << s.env;
    EXPECT_EQ(t->gemm_tune_rows, d.gemm_tune_rows) << s.env;
    EXPECT_EQ(t->cuda_warmup, d.cuda_warmup) << s.env;
  }
  EXPECT_EQ(names.size(), 6u);
}

TEST(Tuning, ValuesComeFromTheEnvironment) {
  ScopedEnv keys("TESSERA_ATTN_SPLIT_KEYS", "256");
  ScopedEnv rope("TESSERA_ROPE_IN_ATTENTION", "0");
  ScopedEnv rows("TESSERA_PREFILL_ROWS", "64");
  ScopedEnv warm("TESSERA_CUDA_WARMUP", "false");
  auto t = tuning_from_environment();
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->attention_split_keys, 256);
  EXPECT_FALSE(t->rope_in_attention);
  EXPECT_EQ(t->prefill_tile_rows, 64);
  EXPECT_FALSE(t->cuda_warmup);
}

TEST(Tuning, BadValuesAreErrorsNamingTheVariable) {
  for (const auto& [name, value] : {std::pair{"TESSERA_ATTN_SPLIT_KEYS", "0"}, {"TESSERA_ATTN_SPLIT_KEYS", "12abc"},
                                    {"TESSERA_PREFILL_ROWS", "96"}, {"TESSERA_ROPE_IN_ATTENTION", "yes"},
                                    {"TESSERA_GEMM_TUNE", "-1"}, {"TESSERA_DECODE_BULK_TOKENS", "99"}}) {
    ScopedEnv set(name, value);
    auto t = tuning_from_environment();
    ASSERT_FALSE(t.ok()) << name << "=" << value;
    EXPECT_NE(t.error().find(name), std::string::npos) << t.error();
  }
}

TEST(Profiling, ParsesCommaSeparatedKinds) {
  auto none = parse_profiling("");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->engine || none->cuda || none->ops);
  auto both = parse_profiling("engine,cuda");
  ASSERT_TRUE(both.ok());
  EXPECT_TRUE(both->engine && both->cuda && !both->ops);
  auto ops = parse_profiling("ops");
  ASSERT_TRUE(ops.ok());
  EXPECT_TRUE(ops->ops && ops->cuda);  // per-op times are device times
  auto bad = parse_profiling("engine,gpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("'gpu'"), std::string::npos) << bad.error();
}

}  // namespace
}  // namespace tessera

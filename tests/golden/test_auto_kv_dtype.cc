// --kv-cache-dtype auto on the CPU follows the checkpoint's precision: float32 weights keep a
// float32 KV cache, quantized GGUF weights get float16 (llama.cpp's default), and the
// engine's KV cache is built with it (its plan says so).
#include <gtest/gtest.h>

#include "common/test_paths.h"
#include "config/engine_config.h"
#include "engine/engine_core.h"
#include "model/model.h"

namespace tessera {
namespace {

KvDtype engine_kv_dtype(Model& model, const std::string& asked) {
  EngineArgs a;
  a.max_model_len = 64;
  a.max_num_seqs = 2;
  a.kv_cache_dtype = asked;
  auto config = resolve_engine_config(a, model.config());
  EXPECT_TRUE(config.ok()) << config.error();
  auto core = EngineCore::create(model, *config);
  EXPECT_TRUE(core.ok()) << core.error();
  return (*core)->plan().shape.dtype;
}

TEST(AutoKvDtype, FollowsTheCheckpointsPrecision) {
  const std::string dir = testing::test_data() + "/models/tiny-llama3";
  if (!testing::exists(dir)) GTEST_SKIP() << "missing " << dir;
  auto f32 = load_model(dir + "/tiny-llama3-f32.gguf");
  ASSERT_TRUE(f32.ok()) << f32.error();
  auto q4 = load_model(dir + "/tiny-llama3-q4_0.gguf");
  ASSERT_TRUE(q4.ok()) << q4.error();
  EXPECT_EQ((*f32)->auto_kv_dtype(), KvDtype::kFloat32);
  EXPECT_EQ((*q4)->auto_kv_dtype(), KvDtype::kFloat16);
  EXPECT_EQ(engine_kv_dtype(**f32, "auto"), KvDtype::kFloat32);
  EXPECT_EQ(engine_kv_dtype(**q4, "auto"), KvDtype::kFloat16);
  // An explicit choice wins over the checkpoint's.
  EXPECT_EQ(engine_kv_dtype(**q4, "float32"), KvDtype::kFloat32);
  EXPECT_EQ(engine_kv_dtype(**f32, "bfloat16"), KvDtype::kBfloat16);
}

}  // namespace
}  // namespace tessera

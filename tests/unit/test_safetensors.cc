#include "loader/safetensors.h"

#include <gtest/gtest.h>

#include "common/half.h"
#include "common/mmap_file.h"
#include "loader/gguf.h"
#include "test_file_writers.h"

namespace tessera {
namespace {

using test::Bytes;
using test::SafetensorsWriter;

// ---- MappedFile -------------------------------------------------------------------------

TEST(MappedFileTest, MapsFileContents) {
  test::TempDir dir;
  const std::string path = dir.write("a.bin", std::string("hello"));
  auto r = MappedFile::open(path);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->size(), 5u);
  EXPECT_EQ(r->path(), path);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(r->data()), r->size()), "hello");

  MappedFile moved = std::move(r.value());
  EXPECT_EQ(moved.size(), 5u);
  EXPECT_EQ(r->size(), 0u);  // NOLINT: moved-from is empty
  EXPECT_EQ(r->data(), nullptr);
  MappedFile assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.bytes().size(), 5u);
  EXPECT_EQ(static_cast<char>(assigned.bytes()[4]), 'o');
}

TEST(MappedFileTest, ReportsErrorsNamingThePath) {
  auto missing = MappedFile::open("/nonexistent/x.safetensors");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), "/nonexistent/x.safetensors: cannot open: No such file or directory");
  test::TempDir dir;
  auto is_dir = MappedFile::open(dir.path());
  ASSERT_FALSE(is_dir.ok());
  EXPECT_EQ(is_dir.error(), dir.path() + ": is a directory, not a file");
  auto no_path = MappedFile::open("");
  ASSERT_FALSE(no_path.ok());
  EXPECT_NE(no_path.error().find("path is empty"), std::string::npos);
  auto dev = MappedFile::open("/dev/null");
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.error(), "/dev/null: not a regular file");
}

TEST(MappedFileTest, EmptyFileHasSizeZero) {
  test::TempDir dir;
  auto r = MappedFile::open(dir.write("empty", std::string()));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->size(), 0u);
  EXPECT_TRUE(r->bytes().empty());
}

TEST(QuoteUntrustedTest, EscapesAndShortens) {
  EXPECT_EQ(quote_untrusted("model.x"), "'model.x'");
  EXPECT_EQ(quote_untrusted("a\nb'\\"), "'a\\x0ab\\x27\\x5c'");
  EXPECT_EQ(quote_untrusted(std::string(10, 'z'), 4), "'zzzz...'");
  EXPECT_EQ(quote_untrusted(std::string("\0\xff", 2)), "'\\x00\\xff'");
}

// ---- parse_safetensors ------------------------------------------------------------------

SafetensorsWriter small_writer() {
  SafetensorsWriter w;
  w.tensor("model.embed_tokens.weight", "F32", {3, 2},
           test::pod_bytes(std::vector<float>{0, 1, 2, 3, 4, 5}));
  w.tensor("half", "F16", {2, 1, 2},
           test::pod_bytes(std::vector<uint16_t>{f32_to_f16(1), f32_to_f16(-2), f32_to_f16(0.25f),
                                                 f32_to_f16(8)}));
  w.tensor("brain", "BF16", {4},
           test::pod_bytes(std::vector<uint16_t>{f32_to_bf16(1), f32_to_bf16(2), f32_to_bf16(3),
                                                 f32_to_bf16(-4)}));
  w.tensor("scalar", "F32", {}, test::pod_bytes(std::vector<float>{7}));
  w.tensor("empty", "F16", {0, 5}, {});
  w.metadata["format"] = "pt";
  return w;
}

Result<SafetensorsTable> parse(const Bytes& b) {
  return parse_safetensors(test::as_span(b), "model.safetensors");
}

void expect_error(const Bytes& b, std::initializer_list<std::string> fragments) {
  auto r = parse(b);
  ASSERT_FALSE(r.ok()) << "parsed without error";
  EXPECT_EQ(r.error().rfind("model.safetensors: ", 0), 0u) << r.error();
  for (const auto& f : fragments) {
    EXPECT_NE(r.error().find(f), std::string::npos) << "missing '" << f << "' in: " << r.error();
  }
}

// A header of a single tensor entry, with 64 bytes of data.
Bytes one_tensor(const std::string& entry_json, size_t data_bytes = 64) {
  return test::safetensors_bytes("{\"x\": " + entry_json + "}", test::pattern_bytes(data_bytes));
}

TEST(SafetensorsTest, RoundTrips) {
  const SafetensorsWriter w = small_writer();
  const Bytes bytes = w.build();
  auto r = parse(bytes);
  ASSERT_TRUE(r.ok()) << r.error();
  const SafetensorsTable& t = r.value();
  EXPECT_EQ(t.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  EXPECT_EQ(t.data_offset % 8, 0u);
  ASSERT_EQ(t.tensors.size(), 5u);
  // File order.
  EXPECT_EQ(t.tensors[0].first, "model.embed_tokens.weight");
  EXPECT_EQ(t.tensors[1].first, "half");
  EXPECT_EQ(t.tensors[2].first, "brain");
  EXPECT_EQ(t.tensors[3].first, "scalar");
  EXPECT_EQ(t.tensors[4].first, "empty");

  const TensorView& emb = t.tensors[0].second;
  EXPECT_EQ(emb.dtype, DType::kF32);
  EXPECT_EQ(emb.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(emb.nbytes, 24u);
  EXPECT_EQ(emb.data, bytes.data() + t.data_offset);
  EXPECT_EQ(reinterpret_cast<const float*>(emb.row(2))[1], 5.f);

  const TensorView& half = t.tensors[1].second;
  EXPECT_EQ(half.dtype, DType::kF16);
  EXPECT_EQ(half.shape, (std::vector<int64_t>{2, 1, 2}));
  EXPECT_EQ(f16_to_f32(reinterpret_cast<const uint16_t*>(half.data)[3]), 8.f);

  const TensorView& brain = t.tensors[2].second;
  EXPECT_EQ(brain.dtype, DType::kBF16);
  EXPECT_EQ(bf16_to_f32(reinterpret_cast<const uint16_t*>(brain.data)[3]), -4.f);

  EXPECT_TRUE(t.tensors[3].second.shape.empty());
  EXPECT_EQ(t.tensors[3].second.nbytes, 4u);
  EXPECT_EQ(t.tensors[4].second.nbytes, 0u);
  EXPECT_EQ(t.tensors[4].second.shape, (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(std::memcmp(emb.data, w.data().data(), w.data().size()), 0);
}

TEST(SafetensorsTest, AcceptsEmptyHeaderAndNoMetadata) {
  auto r = parse(test::safetensors_bytes("{}", {}));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->tensors.empty());
  EXPECT_TRUE(r->metadata.empty());
}

TEST(SafetensorsTest, EveryTruncationFails) {
  const Bytes bytes = small_writer().build();
  for (size_t n = 0; n < bytes.size(); ++n) {
    Bytes prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    prefix.shrink_to_fit();
    auto r = parse(prefix);
    ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes parsed";
    ASSERT_EQ(r.error().rfind("model.safetensors: ", 0), 0u) << r.error();
  }
}

TEST(SafetensorsTest, RejectsBadHeaderLength) {
  expect_error({}, {"file is 0 bytes, too small for a safetensors header"});
  expect_error(Bytes(7), {"file is 7 bytes"});
  expect_error(test::safetensors_bytes("{}", {}, 1000), {"header length 1000 exceeds the file size 16"});
  expect_error(test::safetensors_bytes("{}", {}, ~0ull),
               {"header length 18446744073709551615 exceeds the limit of 104857600 bytes"});
}

TEST(SafetensorsTest, RejectsBadJson) {
  expect_error(test::safetensors_bytes("{\"x\": ", {}), {"header is not valid JSON", "parse error"});
  expect_error(test::safetensors_bytes("[1, 2]", {}), {"header is not a JSON object"});
  expect_error(test::safetensors_bytes("{\"x\": 1}", {}), {"tensor 'x': entry is not a JSON object"});
  expect_error(test::safetensors_bytes("{\"a\": {\"b\": {\"c\": {\"d\": [[[[[[[1]]]]]]]}}}}", {}),
               {"header: nesting deeper than 8 levels"});
  const std::string entry = R"({"dtype": "F32", "shape": [1], "data_offsets": [0, 4]})";
  expect_error(test::safetensors_bytes("{\"x\": " + entry + ", \"x\": " + entry + "}",
                                       test::pattern_bytes(4)),
               {"header: duplicate key 'x'"});
  expect_error(test::safetensors_bytes("{\"__metadata__\": {\"format\": 1}}", {}),
               {"__metadata__ value 'format' is not a string"});
  expect_error(test::safetensors_bytes("{\"__metadata__\": []}", {}),
               {"__metadata__ is not a JSON object"});
  expect_error(test::safetensors_bytes("{\"x\": \"\xff\"}", {}), {"header is not valid JSON"});
}

TEST(SafetensorsTest, RejectsBadEntries) {
  expect_error(one_tensor(R"({"shape": [1], "data_offsets": [0, 4]})"),
               {"tensor 'x': missing or non-string \"dtype\""});
  expect_error(one_tensor(R"({"dtype": "F32", "data_offsets": [0, 4]})"),
               {"tensor 'x': missing or non-array \"shape\""});
  expect_error(one_tensor(R"({"dtype": "F32", "shape": [1], "data_offsets": [0]})"),
               {"tensor 'x': \"data_offsets\" must be an array [begin, end]"});
  expect_error(one_tensor(R"({"dtype": "I64", "shape": [1], "data_offsets": [0, 8]})"),
               {"tensor 'x' has dtype 'I64', which is not supported (supported: F32, F16, BF16)"});
  expect_error(one_tensor(R"({"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 8]})"),
               {"tensor 'x': shape -1 is not a non-negative integer (shape [2,-1])"});
  expect_error(one_tensor(R"({"dtype": "F32", "shape": [2.0], "data_offsets": [0, 8]})"),
               {"shape 2.0 is not a non-negative integer"});
  expect_error(one_tensor(R"({"dtype": "F32", "shape": ["2"], "data_offsets": [0, 8]})"),
               {"shape \"2\" is not a non-negative integer"});
  expect_error(one_tensor(R"({"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]})"),
               {"tensor 'x': shape [4294967296,4294967296] has too many elements"});
  expect_error(one_tensor(R"({"dtype": "F32", "shape": [4294967296, 0, 4294967296], "data_offsets": [0, 0]})"),
               {"has too many elements"});
  expect_error(one_tensor(R"({"dtype": "F32", "shape": [1, 1, 1, 1, 1, 1, 1, 1, 1], "data_offsets": [0, 4]})"),
               {"tensor 'x': shape [1,1,1,1,1,1,1,1,1] has more than 8 dimensions"});
  expect_error(one_tensor(R"({"dtype": "F32", "shape": [4611686018427387904], "data_offsets": [0, 8]})"),
               {"shape [4611686018427387904] has too many bytes"});
  expect_error(one_tensor(R"({"dtype": "F32", "shape": [18446744073709551615], "data_offsets": [0, 8]})"),
               {"is not a non-negative integer"});
  expect_error(one_tensor(R"({"dtype": "F32", "shape": [25], "data_offsets": [0, 100]})"),
               {"model.safetensors: tensor 'x' data_offsets [0, 100] exceed data size 64"});
  expect_error(one_tensor(R"({"dtype": "F32", "shape": [2], "data_offsets": [8, 4]})"),
               {"tensor 'x' data_offsets [8, 4] end before they begin"});
  expect_error(one_tensor(R"({"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]})"),
               {"tensor 'x' data_offsets [-8,0] are not non-negative integers"});
  expect_error(one_tensor(R"({"dtype": "F16", "shape": [2, 3], "data_offsets": [0, 16]})"),
               {"tensor 'x' data_offsets [0, 16] hold 16 bytes but F16 [2,3] needs 12"});
  expect_error(one_tensor(R"({"dtype": "F32", "shape": [1], "data_offsets": [2, 6]})"),
               {"tensor 'x' data starts at file offset", "not a multiple of its 4-byte element size"});
}

// ---- open_safetensors -------------------------------------------------------------------

TEST(SafetensorsOpenTest, OpensFileAndDirectory) {
  test::TempDir dir;
  const std::string file = dir.write("model.safetensors", small_writer().build());
  for (const std::string& path : {file, dir.path()}) {
    auto r = open_safetensors(path);
    ASSERT_TRUE(r.ok()) << r.error();
    const WeightStore& s = **r;
    EXPECT_EQ(s.source(), file);
    EXPECT_EQ(s.names(), (std::vector<std::string>{"brain", "empty", "half",
                                                   "model.embed_tokens.weight", "scalar"}));
    ASSERT_NE(s.find("half"), nullptr);
    EXPECT_EQ(s.find("half")->shape, (std::vector<int64_t>{2, 1, 2}));
    EXPECT_EQ(s.find("nope"), nullptr);
  }
}

TEST(SafetensorsOpenTest, ErrorsNameTheFile) {
  test::TempDir dir;
  auto none = open_safetensors(dir.path());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error(), dir.path() + ": directory holds neither model.safetensors nor "
                                       "model.safetensors.index.json");
  auto missing = open_safetensors(dir.path() + "/x.safetensors");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("x.safetensors: cannot open"), std::string::npos);
  const std::string bad = dir.write("bad.safetensors", one_tensor(R"({"dtype": "Q4", "shape": [1], "data_offsets": [0, 1]})"));
  auto r = open_safetensors(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), bad + ": tensor 'x' has dtype 'Q4', which is not supported (supported: F32, F16, BF16)");
  const std::string empty = dir.write("empty.safetensors", std::string());
  auto e = open_safetensors(empty);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error(), empty + ": file is 0 bytes, too small for a safetensors header");
}

struct ShardedModel {
  test::TempDir dir;
  std::string index_path;
};

// Two shards: a and b in shard 1, c in shard 2.
void write_shards(test::TempDir& dir) {
  SafetensorsWriter s1;
  s1.tensor("a", "F32", {2}, test::pod_bytes(std::vector<float>{1, 2}));
  s1.tensor("b", "F16", {1}, test::pod_bytes(std::vector<uint16_t>{f32_to_f16(3)}));
  SafetensorsWriter s2;
  s2.tensor("c", "BF16", {2, 2}, test::pattern_bytes(8));
  dir.write("model-00001-of-00002.safetensors", s1.build());
  dir.write("model-00002-of-00002.safetensors", s2.build());
}

std::string index_json(const std::string& weight_map) {
  return R"({"metadata": {"total_size": 18}, "weight_map": )" + weight_map + "}";
}

constexpr const char* kGoodMap =
    R"({"a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
        "c": "model-00002-of-00002.safetensors"})";

TEST(SafetensorsOpenTest, OpensShardedIndex) {
  test::TempDir dir;
  write_shards(dir);
  const std::string index = dir.write("model.safetensors.index.json", index_json(kGoodMap));
  for (const std::string& path : {dir.path(), index}) {
    auto r = open_safetensors(path);
    ASSERT_TRUE(r.ok()) << r.error();
    const WeightStore& s = **r;
    EXPECT_EQ(s.source(), index);
    EXPECT_EQ(s.names(), (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(reinterpret_cast<const float*>(s.find("a")->data)[1], 2.f);
    EXPECT_EQ(f16_to_f32(*reinterpret_cast<const uint16_t*>(s.find("b")->data)), 3.f);
    EXPECT_EQ(s.find("c")->shape, (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(s.find("c")->dtype, DType::kBF16);
  }
}

void expect_index_error(const std::string& weight_map, std::initializer_list<std::string> fragments,
                        const std::string& raw_index = "") {
  test::TempDir dir;
  write_shards(dir);
  dir.write("model.safetensors.index.json", raw_index.empty() ? index_json(weight_map) : raw_index);
  auto r = open_safetensors(dir.path());
  ASSERT_FALSE(r.ok()) << weight_map;
  for (const auto& f : fragments) {
    EXPECT_NE(r.error().find(f), std::string::npos) << "missing '" << f << "' in: " << r.error();
  }
}

TEST(SafetensorsOpenTest, RejectsBadIndexes) {
  // c is in shard 2, not shard 1.
  expect_index_error(R"({"a": "model-00001-of-00002.safetensors", "c": "model-00001-of-00002.safetensors"})",
                     {"model-00001-of-00002.safetensors: tensor 'c' is listed in the index but "
                      "missing from this shard"});
  expect_index_error(R"({"a": "model-00001-of-00002.safetensors", "x": "model-00003-of-00002.safetensors"})",
                     {"model-00003-of-00002.safetensors: cannot open"});
  expect_index_error(R"({"a": "../model-00001-of-00002.safetensors"})",
                     {"model.safetensors.index.json: weight_map entry 'a' names shard "
                      "'../model-00001-of-00002.safetensors', which is not a plain file name"});
  expect_index_error(R"({"a": ".."})", {"which is not a plain file name"});
  expect_index_error(R"({"a": 5})", {"weight_map entry 'a' is not a file name"});
  expect_index_error(R"({})", {"\"weight_map\" is empty"});
  expect_index_error(R"([])", {"missing or non-object \"weight_map\""});
  expect_index_error(R"({"a": "x", "a": "y"})", {"index: duplicate key 'a'"});
  expect_index_error("", {"index is not valid JSON"}, "{weight_map");
  expect_index_error("", {"index is not a JSON object"}, "[]");
}

TEST(SafetensorsOpenTest, RejectsTensorInTwoShards) {
  test::TempDir dir;
  write_shards(dir);
  SafetensorsWriter s3;
  s3.tensor("a", "F32", {1}, test::pattern_bytes(4));
  dir.write("extra.safetensors", s3.build());
  dir.write("model.safetensors.index.json",
            index_json(R"({"a": "model-00001-of-00002.safetensors", "z": "extra.safetensors"})"));
  auto r = open_safetensors(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("extra.safetensors: tensor 'a' is also in another shard of"),
            std::string::npos)
      << r.error();
}

// ---- Real files -------------------------------------------------------------------------

TEST(SafetensorsRealTest, Stories260K) {
  const auto data = test::shared_data_dir();
  if (!data) GTEST_SKIP() << "shared test data not found (set TESSERA_SHARED_DATA)";
  auto r = open_safetensors(*data + "/models/stories260K/hf");
  ASSERT_TRUE(r.ok()) << r.error();
  const WeightStore& s = **r;
  EXPECT_EQ(s.names().size(), 47u);
  const TensorView* emb = s.find("model.embed_tokens.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dtype, DType::kF32);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(s.find("model.layers.0.mlp.down_proj.weight")->shape, (std::vector<int64_t>{64, 172}));
  EXPECT_EQ(s.find("model.layers.4.self_attn.k_proj.weight")->shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(s.find("model.norm.weight")->shape, (std::vector<int64_t>{64}));

  // The GGUF conversion holds the same embedding (q/k differ only by the RoPE permutation).
  auto g = GgufFile::open(*data + "/models/stories260K/stories260K-f32.gguf");
  ASSERT_TRUE(g.ok()) << g.error();
  const TensorView* gemb = (*g)->find("token_embd.weight");
  ASSERT_EQ(gemb->shape, emb->shape);
  EXPECT_EQ(std::memcmp(gemb->data, emb->data, emb->nbytes), 0);
  const TensorView* gdown = (*g)->find("blk.3.ffn_down.weight");
  const TensorView* down = s.find("model.layers.3.mlp.down_proj.weight");
  ASSERT_EQ(gdown->shape, down->shape);
  EXPECT_EQ(std::memcmp(gdown->data, down->data, down->nbytes), 0);

  // Every truncation of the real header fails.
  auto whole = MappedFile::open(*data + "/models/stories260K/hf/model.safetensors");
  ASSERT_TRUE(whole.ok());
  auto table = parse_safetensors(whole->bytes(), "m");
  ASSERT_TRUE(table.ok()) << table.error();
  for (size_t n = 0; n < whole->size(); n += (n < table->data_offset + 64 ? 1 : 4099)) {
    Bytes prefix(whole->data(), whole->data() + n);
    prefix.shrink_to_fit();
    ASSERT_FALSE(parse_safetensors(test::as_span(prefix), "m").ok()) << n;
  }
}

}  // namespace
}  // namespace tessera

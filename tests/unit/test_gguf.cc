#include "loader/gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <dirent.h>
#include <limits>

#include "common/half.h"
#include "test_file_writers.h"

namespace tessera {
namespace {

using test::Bytes;
using test::GgufWriter;
using test::put;

constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ6_K = 14, kI32 = 26,
                   kBF16 = 30;

// A small file with every value type and several tensor types.
GgufWriter full_writer() {
  GgufWriter w;
  w.kv_string("general.architecture", "llama");
  w.kv_pod<uint8_t>("t.u8", test::kGgufU8, 200);
  w.kv_pod<int8_t>("t.i8", test::kGgufI8, -100);
  w.kv_pod<uint16_t>("t.u16", test::kGgufU16, 60000);
  w.kv_pod<int16_t>("t.i16", test::kGgufI16, -30000);
  w.kv_u32("llama.embedding_length", 4000000000u);
  w.kv_pod<int32_t>("t.i32", test::kGgufI32, -2000000000);
  w.kv_f32("t.f32", 1.5e-5f);
  w.kv_bool("t.bool", true);
  w.kv_string("t.empty_string", "");
  w.kv_pod<uint64_t>("t.u64", test::kGgufU64, 1ull << 40);
  w.kv_pod<uint64_t>("t.u64_big", test::kGgufU64, std::numeric_limits<uint64_t>::max());
  w.kv_pod<int64_t>("t.i64", test::kGgufI64, std::numeric_limits<int64_t>::min());
  w.kv_pod<double>("t.f64", test::kGgufF64, 3.25);
  w.kv_array("tokenizer.ggml.tokens", test::gguf_string_array({"<unk>", "", "h\xc3\xa9llo"}));
  w.kv_array("tokenizer.ggml.scores", test::gguf_pod_array<float>(test::kGgufF32, {0.f, -1.5f, 2.f}));
  w.kv_array("tokenizer.ggml.token_type", test::gguf_pod_array<int32_t>(test::kGgufI32, {2, 3, 1}));
  w.kv_array("t.u64_array", test::gguf_pod_array<uint64_t>(test::kGgufU64, {1, 1ull << 63}));
  w.kv_array("t.f64_array", test::gguf_pod_array<double>(test::kGgufF64, {0.5, -2}));
  w.kv_array("t.u8_array", test::gguf_pod_array<uint8_t>(test::kGgufU8, {1, 255}));
  w.kv_array("t.bool_array", test::gguf_pod_array<uint8_t>(test::kGgufBool, {1, 0, 1}));
  w.kv_array("t.empty_array", test::gguf_array(test::kGgufString, 0, {}));
  Bytes nested_elems = test::gguf_pod_array<int16_t>(test::kGgufI16, {-1, 2});
  const Bytes inner2 = test::gguf_string_array({"x"});
  nested_elems.insert(nested_elems.end(), inner2.begin(), inner2.end());
  w.kv_array("t.nested", test::gguf_array(test::kGgufArray, 2, nested_elems));

  w.tensor("token_embd.weight", {4, 3}, kF32, test::pod_bytes(std::vector<float>{
                                                 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  w.tensor("f16", {2, 1, 2}, kF16, test::pod_bytes(std::vector<uint16_t>{
                                        f32_to_f16(1), f32_to_f16(-2), f32_to_f16(0.5f),
                                        f32_to_f16(4)}));
  w.tensor("bf16", {3}, kBF16, test::pod_bytes(std::vector<uint16_t>{
                                   f32_to_bf16(1), f32_to_bf16(2), f32_to_bf16(3)}));
  w.tensor("q4_0", {64, 2}, kQ4_0, test::pattern_bytes(2 * 2 * 18, 3));
  w.tensor("q8_0", {32, 1, 1, 3}, kQ8_0, test::pattern_bytes(3 * 34, 4));
  w.tensor("q4_k", {256, 2}, kQ4_K, test::pattern_bytes(2 * 144, 5));
  w.tensor("q6_k", {512}, kQ6_K, test::pattern_bytes(2 * 210, 6));
  w.tensor("i32", {2}, kI32, test::pod_bytes(std::vector<int32_t>{-7, 9}));
  return w;
}

Result<std::unique_ptr<GgufFile>> parse(const Bytes& b, const std::string& name = "t.gguf") {
  return GgufFile::parse(test::as_span(b), name);
}

// Parses and expects an error containing every fragment.
void expect_error(const Bytes& b, std::initializer_list<std::string> fragments) {
  auto r = parse(b);
  ASSERT_FALSE(r.ok()) << "parsed without error";
  EXPECT_EQ(r.error().rfind("t.gguf: ", 0), 0u) << r.error();
  for (const auto& f : fragments) {
    EXPECT_NE(r.error().find(f), std::string::npos) << "missing '" << f << "' in: " << r.error();
  }
}

TEST(GgufTest, RoundTripsEveryValueType) {
  const Bytes bytes = full_writer().build();
  auto r = parse(bytes);
  ASSERT_TRUE(r.ok()) << r.error();
  const GgufFile& f = **r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.source(), "t.gguf");
  EXPECT_EQ(f.keys().size(), 23u);
  EXPECT_EQ(f.keys()[0], "general.architecture");
  EXPECT_EQ(f.keys().back(), "t.nested");

  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_int("t.u8"), 200);
  EXPECT_EQ(f.get_int("t.i8"), -100);
  EXPECT_EQ(f.get_int("t.u16"), 60000);
  EXPECT_EQ(f.get_int("t.i16"), -30000);
  EXPECT_EQ(f.get_int("llama.embedding_length"), 4000000000);
  EXPECT_EQ(f.get_int("t.i32"), -2000000000);
  EXPECT_EQ(f.get_float("t.f32"), static_cast<double>(1.5e-5f));
  EXPECT_EQ(f.get_bool("t.bool"), true);
  EXPECT_EQ(f.get_string("t.empty_string"), "");
  EXPECT_EQ(f.get_int("t.u64"), int64_t{1} << 40);
  EXPECT_EQ(f.get_int("t.u64_big"), std::nullopt);  // does not fit int64
  EXPECT_EQ(f.get_float("t.u64_big"), 18446744073709551615.0);
  EXPECT_EQ(f.get_int("t.i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f.get_float("t.f64"), 3.25);
  EXPECT_EQ(f.get_float("t.i32"), -2000000000.0);  // integers convert to float

  ASSERT_NE(f.get("t.u8"), nullptr);
  EXPECT_EQ(f.get("t.u8")->type(), GgufType::kU8);
  EXPECT_EQ(f.get("t.f64")->type(), GgufType::kF64);

  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens);
  EXPECT_EQ(*tokens, (std::vector<std::string_view>{"<unk>", "", "h\xc3\xa9llo"}));
  EXPECT_EQ(f.get_float_array("tokenizer.ggml.scores"), (std::vector<float>{0.f, -1.5f, 2.f}));
  EXPECT_EQ(f.get_int_array("tokenizer.ggml.token_type"), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(f.get_int_array("t.u8_array"), (std::vector<int64_t>{1, 255}));
  EXPECT_EQ(f.get_int_array("t.u64_array"), std::nullopt);  // 2^63 does not fit
  EXPECT_EQ(f.get_float_array("t.f64_array"), (std::vector<float>{0.5f, -2.f}));
  EXPECT_EQ(f.get_float_array("t.u8_array"), (std::vector<float>{1.f, 255.f}));
  const GgufValue* bools = f.get("t.bool_array");
  ASSERT_NE(bools, nullptr);
  ASSERT_EQ(bools->size(), 3u);
  EXPECT_EQ(bools->elem_type(), GgufType::kBool);
  EXPECT_EQ(bools->at(0).to_bool(), true);
  EXPECT_EQ(bools->at(1).to_bool(), false);
  EXPECT_EQ(f.get_string_array("t.empty_array"), std::vector<std::string_view>{});

  const GgufValue* nested = f.get("t.nested");
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->elem_type(), GgufType::kArray);
  ASSERT_EQ(nested->size(), 2u);
  EXPECT_EQ(nested->at(0).to_int_array(), (std::vector<int64_t>{-1, 2}));
  EXPECT_EQ(nested->at(1).to_string_array(), std::vector<std::string_view>{"x"});
  EXPECT_EQ(nested->debug_string(), "[array x 2: [i16 x 2: -1, 2], [string x 1: 'x']]");

  // Wrong types and absent keys.
  EXPECT_EQ(f.get_int("general.architecture"), std::nullopt);
  EXPECT_EQ(f.get_bool("t.u8"), std::nullopt);
  EXPECT_EQ(f.get_string("t.u8"), std::nullopt);
  EXPECT_EQ(f.get_float("t.bool"), std::nullopt);
  EXPECT_EQ(f.get_int("absent"), std::nullopt);
  EXPECT_EQ(f.get("absent"), nullptr);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.scores"), std::nullopt);
  EXPECT_EQ(f.get_int_array("tokenizer.ggml.tokens"), std::nullopt);
  EXPECT_EQ(f.get_float_array("t.u8"), std::nullopt);
}

TEST(GgufTest, RoundTripsTensors) {
  GgufWriter w = full_writer();
  const Bytes bytes = w.build();
  auto r = parse(bytes);
  ASSERT_TRUE(r.ok()) << r.error();
  const GgufFile& f = **r;
  std::vector<std::string> expected_names;
  for (const auto& t : w.tensors) expected_names.push_back(t.name);
  EXPECT_EQ(f.names(), expected_names);
  ASSERT_EQ(f.tensors().size(), w.tensors.size());

  struct Expect {
    const char* name;
    DType dtype;
    std::vector<int64_t> shape;
  };
  const std::vector<Expect> expects = {
      {"token_embd.weight", DType::kF32, {3, 4}}, {"f16", DType::kF16, {2, 1, 2}},
      {"bf16", DType::kBF16, {3}},                {"q4_0", DType::kQ4_0, {2, 64}},
      {"q8_0", DType::kQ8_0, {3, 1, 1, 32}},      {"q4_k", DType::kQ4_K, {2, 256}},
      {"q6_k", DType::kQ6_K, {512}},              {"i32", DType::kI32, {2}},
  };
  for (size_t i = 0; i < expects.size(); ++i) {
    SCOPED_TRACE(expects[i].name);
    const TensorView* v = f.find(expects[i].name);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->dtype, expects[i].dtype);
    EXPECT_EQ(v->shape, expects[i].shape);
    ASSERT_EQ(v->nbytes, w.tensors[i].data.size());
    EXPECT_EQ(std::memcmp(v->data, w.tensors[i].data.data(), v->nbytes), 0);
    EXPECT_EQ(static_cast<size_t>(v->data - bytes.data()) % 32, 0u);
    EXPECT_EQ(f.tensors()[i].view.data, v->data);
    EXPECT_EQ(f.find_info(expects[i].name)->ggml_type, w.tensors[i].ggml_type);
  }
  const TensorView* emb = f.find("token_embd.weight");
  EXPECT_EQ(reinterpret_cast<const float*>(emb->row(2))[1], 9.f);  // row 2, col 1
  EXPECT_EQ(f16_to_f32(reinterpret_cast<const uint16_t*>(f.find("f16")->data)[1]), -2.f);
  EXPECT_EQ(f.find("absent"), nullptr);
  EXPECT_EQ(f.find_info("absent"), nullptr);
}

TEST(GgufTest, AcceptsVersion2AndCustomAlignment) {
  GgufWriter w = full_writer();
  w.version = 2;
  w.alignment = 64;
  w.kv_u32("general.alignment", 64);
  const Bytes bytes = w.build();
  auto r = parse(bytes);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ((*r)->version(), 2u);
  EXPECT_EQ((*r)->alignment(), 64u);
  EXPECT_EQ((*r)->data_offset() % 64, 0u);
  for (const auto& t : (*r)->tensors()) EXPECT_EQ((t.view.data - bytes.data()) % 64, 0);
  EXPECT_EQ(std::memcmp((*r)->find("q6_k")->data, w.tensors[6].data.data(), 420), 0);
}

TEST(GgufTest, AcceptsMetadataOnlyFile) {
  GgufWriter w;
  w.kv_string("tokenizer.ggml.model", "gpt2");
  const Bytes bytes = w.build();  // the parsed file points into it
  auto r = parse(bytes);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE((*r)->names().empty());
  EXPECT_EQ((*r)->get_string("tokenizer.ggml.model"), "gpt2");
  const Bytes empty_bytes = GgufWriter().build();  // no kvs, no tensors
  auto empty = parse(empty_bytes);
  ASSERT_TRUE(empty.ok()) << empty.error();
  EXPECT_TRUE((*empty)->keys().empty());
}

TEST(GgufTest, AcceptsEmptyTensor) {
  GgufWriter w;
  w.tensor("e", {32, 0}, kQ8_0, {});
  const Bytes bytes = w.build();
  auto r = parse(bytes);
  ASSERT_TRUE(r.ok()) << r.error();
  const TensorView* e = (*r)->find("e");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->shape, (std::vector<int64_t>{0, 32}));
  EXPECT_EQ(e->nbytes, 0u);
  EXPECT_EQ(e->data, bytes.data() + bytes.size());
}

TEST(GgufTest, EveryTruncationFails) {
  const Bytes bytes = full_writer().build();
  ASSERT_GT(bytes.size(), 1000u);
  for (size_t n = 0; n < bytes.size(); ++n) {
    Bytes prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    prefix.shrink_to_fit();  // so ASan sees reads past the end
    auto r = parse(prefix);
    ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes parsed";
    ASSERT_EQ(r.error().rfind("t.gguf: ", 0), 0u) << r.error();
  }
}

TEST(GgufTest, RejectsBadHeaders) {
  expect_error({}, {"0 bytes, too small"});
  {
    GgufWriter w;
    std::memcpy(w.magic, "GGML", 4);
    expect_error(w.build(), {"not a GGUF file", "'GGML'"});
  }
  for (uint32_t v : {0u, 1u, 4u, 0x03000000u}) {
    GgufWriter w = full_writer();
    w.version = v;
    expect_error(w.build(), {"GGUF version " + std::to_string(v) + " is not supported"});
  }
  {
    GgufWriter w;
    w.version = 0x03000000u;
    expect_error(w.build(), {"big-endian"});
  }
  {
    GgufWriter w = full_writer();
    w.kv_count = 1ull << 60;
    expect_error(w.build(), {"claims 1152921504606846976 metadata entries"});
  }
  {
    GgufWriter w = full_writer();
    w.tensor_count = ~0ull;
    expect_error(w.build(), {"claims 18446744073709551615 tensors"});
  }
  {
    GgufWriter w = full_writer();  // one more tensor than written: runs into the data area
    w.tensor_count = w.tensors.size() + 1;
    expect_error(w.build(), {"tensor"});
  }
}

TEST(GgufTest, RejectsBadMetadata) {
  {  // key length past the end
    GgufWriter w;
    Bytes b = w.build();
    b[16] = std::byte{1};  // kv_count = 1
    put<uint64_t>(b, 1ull << 62);
    put<uint64_t>(b, 0);  // room for one entry, by the count check
    expect_error(b, {"metadata entry 0 of 1", "key at offset 24 has length 4611686018427387904"});
  }
  {
    GgufWriter w;
    Bytes v;
    put<uint64_t>(v, ~0ull);
    w.kv("big.string", test::kGgufString, v);
    expect_error(w.build(), {"metadata 'big.string'", "has length 18446744073709551615"});
  }
  {
    GgufWriter w;
    w.kv_array("big.array", test::gguf_array(test::kGgufU32, 1ull << 61, {}));
    expect_error(w.build(), {"metadata 'big.array'", "claims 2305843009213693952 u32 elements"});
  }
  {
    GgufWriter w;
    w.kv_array("big.strings", test::gguf_array(test::kGgufString, 1000, test::pattern_bytes(7999)));
    expect_error(w.build(), {"claims 1000 string elements"});
  }
  {
    GgufWriter w;
    Bytes elems;
    put<uint64_t>(elems, 1);
    elems.push_back(std::byte{'a'});
    put<uint64_t>(elems, 100);  // second string runs past the end
    w.kv_array("tokens", test::gguf_array(test::kGgufString, 2, elems));
    expect_error(w.build(), {"metadata 'tokens'", "has length 100", "(element 1 of 2)"});
  }
  {
    GgufWriter w;
    w.kv("odd", 13, test::pattern_bytes(8));
    expect_error(w.build(), {"metadata 'odd'", "unknown value type 13"});
  }
  {
    GgufWriter w;
    w.kv_array("odd", test::gguf_array(99, 1, test::pattern_bytes(8)));
    expect_error(w.build(), {"metadata 'odd'", "unknown element type 99"});
  }
  {
    GgufWriter w;
    w.kv_pod<uint8_t>("flag", test::kGgufBool, 2);
    expect_error(w.build(), {"metadata 'flag'", "bool at offset", "is 2, not 0 or 1"});
    GgufWriter w2;
    w2.kv_array("flags", test::gguf_pod_array<uint8_t>(test::kGgufBool, {0, 1, 7}));
    expect_error(w2.build(), {"metadata 'flags'", "is 7, not 0 or 1"});
  }
  {  // arrays nested 100 deep
    Bytes body = test::gguf_array(test::kGgufU8, 0, {});
    for (int i = 0; i < 100; ++i) body = test::gguf_array(test::kGgufArray, 1, body);
    GgufWriter w;
    w.kv_array("deep", body);
    expect_error(w.build(), {"metadata 'deep'", "nested deeper than 8"});
  }
  {
    GgufWriter w;
    w.kv_u32("a", 1);
    w.kv_u32("a", 2);
    expect_error(w.build(), {"metadata key 'a' appears twice"});
  }
  {  // hostile key text is escaped and shortened in messages
    GgufWriter w;
    w.kv_string(std::string(500, 'k') + "\n", "v");
    w.kv_array(std::string(500, 'k') + "\n", test::gguf_array(99, 0, {}));
    auto r = parse(w.build());
    ASSERT_FALSE(r.ok());
    EXPECT_LT(r.error().size(), 300u) << r.error();
    EXPECT_EQ(r.error().find('\n'), std::string::npos);
  }
}

TEST(GgufTest, RejectsBadAlignment) {
  for (uint32_t a : {0u, 3u, 48u}) {
    GgufWriter w = full_writer();
    w.kv_u32("general.alignment", a);
    expect_error(w.build(), {"general.alignment is " + std::to_string(a) + ", not a power of two"});
  }
  GgufWriter w = full_writer();
  w.kv_string("general.alignment", "32");
  expect_error(w.build(), {"general.alignment is '32', not a power of two"});
  GgufWriter w2 = full_writer();
  w2.kv_pod<int32_t>("general.alignment", test::kGgufI32, -32);
  expect_error(w2.build(), {"general.alignment is -32"});
}

TEST(GgufTest, RejectsBadTensorInfos) {
  {
    GgufWriter w = full_writer();
    w.tensors[1].n_dims = 0;
    expect_error(w.build(), {"tensor 'f16' has 0 dimensions (must be 1 to 4)"});
  }
  {
    GgufWriter w = full_writer();
    w.tensors[1].ne = {1, 1, 1, 1, 4};
    expect_error(w.build(), {"tensor 'f16' has 5 dimensions"});
  }
  {
    GgufWriter w = full_writer();
    w.tensors[3].ggml_type = 10;
    expect_error(w.build(), {"tensor 'q4_0' has ggml type 10 (Q2_K), which Tessera does not support"});
    w.tensors[3].ggml_type = 1000;
    expect_error(w.build(), {"tensor 'q4_0' has ggml type 1000 (unknown)"});
  }
  {
    GgufWriter w = full_writer();
    w.tensors[3].ne = {48, 2};
    expect_error(w.build(), {"tensor 'q4_0': ne[0] = 48 is not a multiple of the Q4_0 block size 32"});
  }
  {
    GgufWriter w = full_writer();
    w.tensors[0].ne = {1ull << 32, 1ull << 32};
    expect_error(w.build(), {"tensor 'token_embd.weight': ne [4294967296, 4294967296] has too many elements"});
    w.tensors[0].ne = {0, 1ull << 32, 1ull << 32};
    expect_error(w.build(), {"has too many elements"});
    w.tensors[0].ne = {1ull << 63, 1};
    expect_error(w.build(), {"has too many elements"});
    w.tensors[0].ne = {1ull << 62, 1};  // 2^62 F32 elements: 2^64 bytes
    expect_error(w.build(), {"ne [4611686018427387904, 1] has too many bytes"});
  }
  {
    GgufWriter w = full_writer();
    w.tensors[2].offset = 100;
    expect_error(w.build(), {"tensor 'bf16': data offset 100 is not a multiple of the alignment 32"});
  }
  {
    GgufWriter w = full_writer();
    w.tensors[4].offset = 1ull << 40;
    expect_error(w.build(), {"tensor 'q8_0' data [1099511627776, +102) lies outside the data area"});
  }
  {  // wrong byte size: the last tensor's data is one block short
    GgufWriter w = full_writer();
    w.tensors.back().ne = {4};
    expect_error(w.build(), {"tensor 'i32' data [", "+16) lies outside the data area"});
  }
  {
    GgufWriter w = full_writer();
    w.tensors[5].name = "q8_0";
    expect_error(w.build(), {"tensor 'q8_0' appears twice"});
  }
  {  // alignment 1 would let an F32 tensor start at an address kernels cannot load from
    GgufWriter w;
    w.alignment = 1;
    w.kv_u32("general.alignment", 1);
    w.tensor("x", {2}, kF32, test::pattern_bytes(8));
    const Bytes b = w.build();
    ASSERT_EQ((b.size() - 8) % 4, 2u);  // data starts at 90
    expect_error(b, {"tensor 'x' data starts at file offset 90, not a multiple of 4"});
    w.tensors[0].ggml_type = kF16;  // 2-byte elements are fine there
    w.tensors[0].ne = {4};
    const Bytes b16 = w.build();
    auto r = parse(b16);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ((*r)->alignment(), 1u);
    EXPECT_EQ((*r)->data_offset(), 90u);
  }
}

TEST(GgufTest, RejectsDataAreaPastEndOfFile) {
  GgufWriter w;
  w.kv_u32("general.alignment", 1u << 30);
  w.tensor("x", {1}, kF32, test::pattern_bytes(4));
  expect_error(w.build(), {"data area would start at offset 1073741824, past the end of the file"});
}

TEST(GgufTest, OpenReportsFileErrors) {
  auto missing = GgufFile::open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent/dir/model.gguf: cannot open"), std::string::npos)
      << missing.error();
  test::TempDir dir;
  auto is_dir = GgufFile::open(dir.path());
  ASSERT_FALSE(is_dir.ok());
  EXPECT_NE(is_dir.error().find("is a directory"), std::string::npos) << is_dir.error();
  const std::string empty = dir.write("empty.gguf", std::string());
  auto e = GgufFile::open(empty);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error(), empty + ": file is 0 bytes, too small for a GGUF header");
  const std::string good = dir.write("good.gguf", full_writer().build());
  auto g = GgufFile::open(good);
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_EQ((*g)->source(), good);
  EXPECT_EQ((*g)->find("token_embd.weight")->shape, (std::vector<int64_t>{3, 4}));
}

// ---- Real files -------------------------------------------------------------------------

std::string shared_or_skip() {
  const auto dir = test::shared_data_dir();
  return dir ? *dir : std::string();
}

#define REQUIRE_SHARED_DATA(dir)                                            \
  const std::string dir = shared_or_skip();                                 \
  if (dir.empty()) GTEST_SKIP() << "shared test data not found (set TESSERA_SHARED_DATA)"

TEST(GgufRealTest, Stories260K) {
  REQUIRE_SHARED_DATA(data);
  auto r = GgufFile::open(data + "/models/stories260K/stories260K-f32.gguf");
  ASSERT_TRUE(r.ok()) << r.error();
  const GgufFile& f = **r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_int("llama.embedding_length"), 64);
  EXPECT_EQ(f.get_int("llama.block_count"), 5);
  EXPECT_EQ(f.get_int("llama.attention.head_count"), 8);
  EXPECT_EQ(f.get_int("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(f.get_int("llama.feed_forward_length"), 172);
  EXPECT_EQ(f.get_int("llama.context_length"), 512);
  EXPECT_NEAR(*f.get_float("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-9);
  EXPECT_EQ(f.get_bool("tokenizer.ggml.add_bos_token"), true);
  EXPECT_EQ(f.get_int("tokenizer.ggml.bos_token_id"), 1);
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens);
  ASSERT_EQ(tokens->size(), 512u);
  EXPECT_EQ((*tokens)[0], "<unk>");
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ(f.get_float_array("tokenizer.ggml.scores")->size(), 512u);
  EXPECT_EQ(f.get_int_array("tokenizer.ggml.token_type")->size(), 512u);
  EXPECT_EQ(f.keys().size(), 21u);

  EXPECT_EQ(f.names().size(), 47u);  // embedding, 5 x 9 per layer, output norm (tied output)
  const TensorView* emb = f.find("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dtype, DType::kF32);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(emb->nbytes, 512u * 64 * 4);
  const TensorView* down = f.find("blk.4.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->shape, (std::vector<int64_t>{64, 172}));
  EXPECT_EQ(f.find("blk.0.attn_k.weight")->shape, (std::vector<int64_t>{32, 64}));
  for (const auto& t : f.tensors()) {
    EXPECT_EQ(t.view.dtype, DType::kF32) << t.name;
    for (size_t i = 0; i < t.view.nbytes / 4; ++i) {
      ASSERT_TRUE(std::isfinite(reinterpret_cast<const float*>(t.view.data)[i])) << t.name;
    }
  }
}

TEST(GgufRealTest, Stories260KHeaderTruncations) {
  REQUIRE_SHARED_DATA(data);
  auto whole = MappedFile::open(data + "/models/stories260K/stories260K-f32.gguf");
  ASSERT_TRUE(whole.ok()) << whole.error();
  auto r = GgufFile::parse(whole->bytes(), "s.gguf");
  ASSERT_TRUE(r.ok()) << r.error();
  const size_t data_offset = (*r)->data_offset();
  // Every prefix through the header, then a sample through the data.
  for (size_t n = 0; n < whole->size(); n += (n < data_offset + 64 ? 1 : 4093)) {
    Bytes prefix(whole->data(), whole->data() + n);
    prefix.shrink_to_fit();
    ASSERT_FALSE(GgufFile::parse(test::as_span(prefix), "s.gguf").ok()) << n;
  }
}

TEST(GgufRealTest, TinyRandomLlama2F16) {
  REQUIRE_SHARED_DATA(data);
  auto r = GgufFile::open(data + "/models/tiny-random-llama2/llama-2-tiny-random.gguf");
  ASSERT_TRUE(r.ok()) << r.error();
  const GgufFile& f = **r;
  EXPECT_EQ(f.get_int("llama.embedding_length"), 8);
  EXPECT_EQ(f.get_int("llama.block_count"), 1);
  EXPECT_EQ(f.get_int("general.file_type"), 1);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens")->size(), 32000u);
  EXPECT_EQ(f.names().size(), 12u);
  const TensorView* emb = f.find("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dtype, DType::kF16);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{32000, 8}));
  EXPECT_EQ(emb->nbytes, 32000u * 8 * 2);
  EXPECT_EQ(f.find("output.weight")->shape, (std::vector<int64_t>{32000, 8}));
  EXPECT_EQ(f.find("blk.0.ffn_down.weight")->shape, (std::vector<int64_t>{8, 32}));
  EXPECT_EQ(f.find("blk.0.attn_norm.weight")->dtype, DType::kF32);
  int f16 = 0;
  for (const auto& t : f.tensors()) f16 += t.view.dtype == DType::kF16;
  EXPECT_EQ(f16, 9);
}

TEST(GgufRealTest, VocabOnlyFiles) {
  REQUIRE_SHARED_DATA(data);
  const std::string dir = data + "/tokenizer-tests/llamacpp-vocab";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) GTEST_SKIP() << dir << " not found";
  int parsed = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() < 5 || name.substr(name.size() - 5) != ".gguf") continue;
    auto r = GgufFile::open(dir + "/" + name);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_TRUE((*r)->get_string("tokenizer.ggml.model").has_value()) << name;
    EXPECT_GT((*r)->get_string_array("tokenizer.ggml.tokens")->size(), 1000u) << name;
    ++parsed;
  }
  ::closedir(d);
  EXPECT_GE(parsed, 5);
}

TEST(GgufRealTest, DefaultModelSmolLM2) {
  const char* path = std::getenv("TESSERA_DEFAULT_MODEL");
  if (path == nullptr || *path == '\0' || !test::path_exists(path)) {
    GTEST_SKIP() << "TESSERA_DEFAULT_MODEL not set (scripts/default_model_path.sh)";
  }
  auto r = GgufFile::open(path);
  ASSERT_TRUE(r.ok()) << r.error();
  const GgufFile& f = **r;
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_int("llama.block_count"), 30);
  EXPECT_EQ(f.get_int("llama.embedding_length"), 576);
  EXPECT_EQ(f.get_int("llama.feed_forward_length"), 1536);
  EXPECT_EQ(f.get_int("llama.attention.head_count"), 9);
  EXPECT_EQ(f.get_int("llama.attention.head_count_kv"), 3);
  EXPECT_EQ(f.get_int("llama.context_length"), 8192);
  EXPECT_EQ(f.get_float("llama.rope.freq_base"), 100000.0);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens")->size(), 49152u);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.merges")->size(), 48900u);
  EXPECT_TRUE(f.get_string("tokenizer.chat_template").has_value());
  for (const std::string_view key : f.keys()) {
    if (key.rfind("tokenizer.ggml.", 0) == 0 && f.get(key)->is_array()) continue;
    std::printf("  %s = %s\n", std::string(key).c_str(), f.get(key)->debug_string(2).c_str());
  }

  std::map<std::string, int> type_counts;
  for (const auto& t : f.tensors()) type_counts[std::string(dtype_name(t.view.dtype))]++;
  for (const auto& [type, n] : type_counts) std::printf("  %d tensors of type %s\n", n, type.c_str());
  EXPECT_EQ(f.tensors().size(), 272u);
  const TensorView* emb = f.find("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dtype, DType::kQ8_0);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{49152, 576}));
  EXPECT_EQ(f.find("output.weight"), nullptr);  // tied to the embedding
  for (int layer = 0; layer < 30; ++layer) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
                          "ffn_down"}) {
      const TensorView* v = f.find(p + w + ".weight");
      ASSERT_NE(v, nullptr) << p << w;
      EXPECT_EQ(v->dtype, DType::kQ4_1) << p << w;
    }
    EXPECT_EQ(f.find(p + "attn_norm.weight")->dtype, DType::kF32);
    EXPECT_EQ(f.find(p + "ffn_norm.weight")->dtype, DType::kF32);
  }
  EXPECT_EQ(f.find("blk.0.attn_k.weight")->shape, (std::vector<int64_t>{192, 576}));
  EXPECT_EQ(f.find("blk.0.ffn_down.weight")->shape, (std::vector<int64_t>{576, 1536}));
  EXPECT_EQ(f.find("output_norm.weight")->dtype, DType::kF32);
}

}  // namespace
}  // namespace tessera

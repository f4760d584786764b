// load_tokenizer(): picks the tokenizer implementation for a path.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/gguf_tokenizer.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace tessera::tokenizer {

namespace {

namespace fs = std::filesystem;

// tokenizer.json goes to the HF tokenizer (src/tokenizer/hf_tokenizer.h) once it lands;
// this is the one place to switch.
Result<std::unique_ptr<Tokenizer>> load_hf_tokenizer_json(const std::string& path) {
  auto t = HfTokenizer::load(path);
  TESSERA_RETURN_IF_ERROR(t);
  return std::unique_ptr<Tokenizer>(std::move(t.value()));
}

Result<std::unique_ptr<Tokenizer>> load_sentencepiece(const std::string& path) {
  auto t = SentencePieceTokenizer::load(path);
  TESSERA_RETURN_IF_ERROR(t);
  return std::unique_ptr<Tokenizer>(std::move(t.value()));
}

// The first bytes of a file, to tell GGUF and JSON from SentencePiece protobufs.
std::string head(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string buf(n, '\0');
  in.read(buf.data(), static_cast<std::streamsize>(n));
  buf.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return buf;
}

bool looks_like_json(const std::string& bytes) {
  for (char c : bytes) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{';
  }
  return false;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return Status::error(path + ": no such file or directory");
  if (fs::is_directory(st)) {
    const fs::path dir(path);
    if (fs::exists(dir / "tokenizer.json", ec)) return load_hf_tokenizer_json((dir / "tokenizer.json").string());
    if (fs::exists(dir / "tokenizer.model", ec)) return load_sentencepiece((dir / "tokenizer.model").string());
    return Status::error(path + ": directory has neither tokenizer.json nor tokenizer.model");
  }
  const std::string bytes = head(path, 64);
  if (bytes.size() >= 4 && bytes.compare(0, 4, "GGUF") == 0) return load_gguf_tokenizer(path);
  if (looks_like_json(bytes)) return load_hf_tokenizer_json(path);
  auto sp = load_sentencepiece(path);
  if (sp.ok()) return sp;
  return Status::error(path + ": not a tokenizer.json, GGUF file or SentencePiece model (" + sp.error() + ")");
}

}  // namespace tessera::tokenizer

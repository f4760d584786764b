// Tokenizer throughput: single-threaded encode of a deterministic ~10 MB mixed corpus
// (English prose, code, multilingual text) and tokenizer.json load time.
//   bench_tokenizer --write-corpus PATH [--mb 10]        write the corpus (one doc per line,
//                                                        JSON-escaped) and exit
//   bench_tokenizer --corpus PATH --tokenizer DIR... [--repeat 5]
// bench/tokenizer_vs_hf.sh runs this next to HF `tokenizers` on the same corpus.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/hf_tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

const char* kEnglish[] = {
    "the", "of", "and", "to", "in", "is", "that", "it", "for", "was", "on", "are", "with", "as",
    "they", "be", "at", "one", "have", "this", "from", "or", "had", "by", "word", "but", "what",
    "some", "we", "can", "out", "other", "were", "all", "there", "when", "up", "use", "your",
    "how", "said", "an", "each", "she", "which", "do", "their", "time", "if", "will", "way",
    "about", "many", "then", "them", "would", "write", "like", "so", "these", "her", "long",
    "make", "thing", "see", "him", "two", "has", "look", "more", "day", "could", "go", "come",
    "did", "number", "sound", "no", "most", "people", "my", "over", "know", "water", "than",
    "call", "first", "who", "may", "down", "side", "been", "now", "find", "language", "model",
    "inference", "engine", "memory", "scheduler", "request", "throughput", "latency", "token",
    "government", "information", "development", "understanding", "particularly", "however",
    "don't", "it's", "we'll", "they're", "I've", "she'd", "You", "The", "In", "However,"};
const char* kMultilingual[] = {
    "Привет, как дела? Это тестовое предложение на русском языке.",
    "Быстрая коричневая лиса перепрыгивает через ленивую собаку.",
    "我们正在测试分词器的速度和准确性。今天天气很好。",
    "東京は日本の首都です。私は毎日電車で会社に行きます。",
    "السلام عليكم، هذه جملة اختبار باللغة العربية.",
    "यह हिंदी में एक परीक्षण वाक्य है। मौसम अच्छा है।",
    "안녕하세요, 이것은 한국어 테스트 문장입니다.",
    "Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.",
    "Größere Straßen führen über die Brücke nach München.",
    "L'été dernier, nous sommes allés à la plage près de Nice.",
    "¿Dónde está la biblioteca? Está cerca de la estación.",
    "ข้อความภาษาไทยสำหรับการทดสอบตัวตัดคำ",
    "שלום עולם, זהו משפט בדיקה בעברית.",
    "Türkçe bir test cümlesi: İstanbul'da güzel bir gün."};
const char* kCode[] = {
    "def {id}(self, x, y=None):\n    if y is None:\n        return x * {n}\n    return x + y\n\n",
    "for (int {id} = 0; {id} < {n}; ++{id}) {\n    total += values[{id}];\n}\n",
    "const {id} = async (req, res) => {\n  const data = await fetch(`/api/{id}/${req.id}`);\n  "
    "return res.json({ ok: true, count: {n} });\n};\n",
    "SELECT {id}, COUNT(*) FROM events WHERE ts > {n} GROUP BY {id} ORDER BY 2 DESC;\n",
    "#include <vector>\nstd::vector<float> {id}({n}, 0.0f);  // zero-initialised buffer\n",
    "    \"{id}\": {\"enabled\": true, \"limit\": {n}, \"tags\": [\"a\", \"b\"]},\n",
    "if err := {id}.Close(); err != nil {\n\treturn fmt.Errorf(\"close: %w\", err)\n}\n"};

std::string fill(std::string s, const std::string& id, int n) {
  for (const auto& [key, val] : {std::pair<std::string, std::string>{"{id}", id},
                                 {"{n}", std::to_string(n)}}) {
    for (size_t pos = s.find(key); pos != std::string::npos; pos = s.find(key, pos + val.size())) {
      s.replace(pos, key.size(), val);
    }
  }
  return s;
}

std::vector<std::string> make_corpus(size_t target_bytes) {
  std::mt19937_64 rng(20240611);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  std::vector<std::string> docs;
  size_t total = 0;
  while (total < target_bytes) {
    std::string doc;
    const size_t kind = pick(10);
    const size_t len = 200 + pick(3000);
    while (doc.size() < len) {
      if (kind < 6) {  // English prose
        const size_t words = 5 + pick(20);
        for (size_t w = 0; w < words; ++w) {
          std::string word = kEnglish[pick(std::size(kEnglish))];
          if (w == 0) word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
          if (pick(30) == 0) word = std::to_string(pick(100000));
          doc += word;
          doc += pick(12) == 0 ? ", " : " ";
        }
        doc.back() = pick(5) == 0 ? '?' : '.';
        doc += pick(4) == 0 ? "\n\n" : " ";
      } else if (kind < 8) {  // code
        std::string id = "v";
        id += std::to_string(pick(1000));
        doc += fill(kCode[pick(std::size(kCode))], pick(2) ? id : "item_count", static_cast<int>(pick(4096)));
      } else {  // multilingual
        doc += kMultilingual[pick(std::size(kMultilingual))];
        doc += pick(3) == 0 ? "\n" : " ";
      }
    }
    total += doc.size();
    docs.push_back(std::move(doc));
  }
  return docs;
}

int usage() {
  std::fprintf(stderr,
               "usage: bench_tokenizer --write-corpus PATH [--mb N]\n"
               "       bench_tokenizer --corpus PATH --tokenizer DIR [--tokenizer DIR...] "
               "[--repeat N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string write_path, corpus_path;
  std::vector<std::string> tokenizers;
  double mb = 10;
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    if (a == "--write-corpus") write_path = argv[++i];
    else if (a == "--corpus") corpus_path = argv[++i];
    else if (a == "--tokenizer") tokenizers.push_back(argv[++i]);
    else if (a == "--mb") mb = std::atof(argv[++i]);
    else if (a == "--repeat") repeat = std::max(1, std::atoi(argv[++i]));
    else return usage();
  }
  if (!write_path.empty()) {
    const auto docs = make_corpus(static_cast<size_t>(mb * 1e6));
    std::ofstream out(write_path, std::ios::binary);
    size_t bytes = 0;
    for (const auto& d : docs) {
      out << nlohmann::json(d).dump() << '\n';
      bytes += d.size();
    }
    std::printf("wrote %zu docs, %.2f MB to %s\n", docs.size(), bytes / 1e6, write_path.c_str());
    return out ? 0 : 1;
  }
  if (corpus_path.empty() || tokenizers.empty()) return usage();
  std::vector<std::string> docs;
  {
    std::ifstream in(corpus_path, std::ios::binary);
    std::string line;
    while (std::getline(in, line)) docs.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  size_t bytes = 0;
  for (const auto& d : docs) bytes += d.size();
  for (const std::string& path : tokenizers) {
    std::vector<double> load_s;
    std::unique_ptr<tessera::tokenizer::HfTokenizer> tok;
    for (int r = 0; r < 3; ++r) {
      const auto t0 = Clock::now();
      auto t = tessera::tokenizer::HfTokenizer::load(path);
      load_s.push_back(seconds_since(t0));
      if (!t.ok()) {
        std::fprintf(stderr, "%s\n", t.error().c_str());
        return 1;
      }
      tok = std::move(*t);
    }
    std::vector<double> enc_s;
    size_t tokens = 0;
    for (int r = 0; r < repeat; ++r) {
      tokens = 0;
      const auto t0 = Clock::now();
      for (const auto& d : docs) {
        auto ids = tok->encode(d, /*add_special_tokens=*/false);
        if (!ids.ok()) {
          std::fprintf(stderr, "encode failed: %s\n", ids.error().c_str());
          return 1;
        }
        tokens += ids->size();
      }
      enc_s.push_back(seconds_since(t0));
    }
    const double s = median(enc_s);
    std::printf("ours %-40s load %.3f s  encode %.2f MB/s  %.0f tokens/s  (%zu tokens, %.2f MB, "
                "median of %d)\n",
                path.c_str(), median(load_s), bytes / 1e6 / s, tokens / s, tokens, bytes / 1e6,
                repeat);
    std::fflush(stdout);
  }
  return 0;
}

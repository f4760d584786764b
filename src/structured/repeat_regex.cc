#include "structured/repeat_regex.h"

namespace tessera::structured {
namespace {

constexpr int64_t kChunk = kEngineUnrollLimit;

// "{n}" or "{lo,hi}", appended piecewise (operator+ on a temporary trips GCC 12's -Wrestrict).
void append_braces(std::string* out, int64_t a, int64_t b = -1) {
  *out += '{';
  *out += std::to_string(a);
  if (b >= 0) {
    *out += ',';
    *out += std::to_string(b);
  }
  *out += '}';
}

std::string count(const std::string& atom, int64_t n) {
  if (n == 0) return "";
  if (n == 1) return atom;
  std::string out = atom;
  append_braces(&out, n);
  return out;
}

// Exactly n atoms: full chunks, then the rest.
std::string exactly(const std::string& atom, int64_t n) {
  if (n <= kChunk) return count(atom, n);
  const int64_t chunks = n / kChunk, rest = n % kChunk;
  std::string out = "(?:";
  out += count(atom, kChunk);
  out += ")";
  if (chunks > 1) append_braces(&out, chunks);
  out += count(atom, rest);
  return out;
}

// 0..d atoms. Above one chunk: a full chunk and 0..d-chunk more, or fewer than a chunk; a
// string's length picks the branch, so only those two paths are ever live.
std::string up_to(const std::string& atom, int64_t d) {
  if (d == 0) return "";
  if (d <= kChunk) {
    std::string out = atom;
    append_braces(&out, 0, d);
    return out;
  }
  std::string out = "(?:";
  out += count(atom, kChunk);
  out += up_to(atom, d - kChunk);
  out += '|';
  out += atom;
  append_braces(&out, 0, kChunk - 1);
  out += ')';
  return out;
}

}  // namespace

int64_t unrolled_repeat_states(int64_t lo, int64_t hi) {
  if (hi < 0) return lo + 1;
  const int64_t d = hi - lo;
  return lo + (d <= kChunk ? d : 2 * d);
}

std::string unrolled_repeat(const std::string& atom, int64_t lo, int64_t hi) {
  const std::string head = exactly(atom, lo);
  if (hi < 0) return head + atom + "*";
  return head + up_to(atom, hi - lo);
}

}  // namespace tessera::structured

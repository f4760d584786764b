// UTF-8 and Python `str` helpers for the Jinja engine: templates index, slice, strip and
// case-map strings by code point, the way Python does.
//
// Invalid UTF-8 never fails: each byte that does not start a valid sequence counts as one
// code point of its own, so every operation stays defined on hostile input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::jinja {

// Decodes the code point at s[i] (i < s.size()) into *cp and returns the index after it.
size_t utf8_next(std::string_view s, size_t i, char32_t* cp);
void append_utf8(std::string& out, char32_t cp);
size_t count_code_points(std::string_view s);
// Byte offset of every code point plus s.size() at the end (size = code points + 1).
std::vector<size_t> code_point_offsets(std::string_view s);
std::vector<char32_t> decode_utf8(std::string_view s);

// Python's str.isspace, str.isalpha, str.isdigit, str.isalnum, regex \w (approximations
// outside Latin, Greek, Cyrillic and CJK that are exact for the characters templates meet).
bool is_py_space(char32_t cp);
bool is_py_alpha(char32_t cp);
bool is_py_digit(char32_t cp);
bool is_py_word(char32_t cp);
bool is_py_linebreak(char32_t cp);  // the separators of str.splitlines
bool is_py_printable(char32_t cp);  // what repr() keeps unescaped
bool is_py_upper(char32_t cp);
bool is_py_lower(char32_t cp);

std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);       // str.title
std::string py_capitalize(std::string_view s);  // str.capitalize
std::string py_swapcase(std::string_view s);

// str.strip/lstrip/rstrip; `chars` nullopt strips whitespace.
std::string_view py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                          bool right);
// str.split / str.rsplit; `sep` nullopt splits on runs of whitespace. maxsplit < 0: no limit.
// An empty separator is the caller's error (Python raises ValueError).
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit, bool from_right);
std::vector<std::string> py_splitlines(std::string_view s, bool keepends);
// str.replace with count < 0 meaning all.
std::string py_replace(std::string_view s, std::string_view old, std::string_view repl,
                       int64_t count);
// str.find in code points (-1 when absent); start/end already normalised to code points.
int64_t py_find(std::string_view s, std::string_view sub, bool from_right);
int64_t py_count(std::string_view s, std::string_view sub);
std::string py_center(std::string_view s, int64_t width, std::string_view fill);

// repr() of a str: quotes and escapes as CPython does.
std::string py_repr_string(std::string_view s);
// repr() of a float: shortest round-trip digits, exponent outside [1e-4, 1e16).
std::string py_repr_float(double v);

}  // namespace tessera::jinja

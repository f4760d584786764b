// Read-only memory mapping of a whole file; the weights of a checkpoint are used in place.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tessera {

class MappedFile {
 public:
  MappedFile() = default;  // maps nothing: size() == 0
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Maps a regular file read-only. Missing files, directories and other non-regular files
  // are errors naming the path. An empty file opens with size() == 0 (mmap cannot map zero
  // bytes, so nothing is mapped): the format parsers then report it as too small.
  static Result<MappedFile> open(const std::string& path);

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  void unmap();

  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// Quotes text taken from an untrusted file for an error message: control and non-ASCII
// bytes are escaped and long text is shortened, so a hostile name cannot flood the log.
std::string quote_untrusted(std::string_view text, size_t max_chars = 96);

}  // namespace tessera

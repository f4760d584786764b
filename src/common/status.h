// Status and Result<T>: error values that cross module boundaries.
#pragma once

#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace tessera {

class Status {
 public:
  Status() = default;  // ok
  static Status ok_status() { return Status(); }
  static Status error(std::string message) { return Status(std::move(message), true); }

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }
  const Status& status() const { return *this; }  // lets TESSERA_RETURN_IF_ERROR take both

 private:
  Status(std::string message, bool failed) : message_(std::move(message)), failed_(failed) {}
  std::string message_;
  bool failed_ = false;
};

// Holds either a value or a failed Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}                  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {            // NOLINT: implicit by design
    if (std::get<Status>(v_).ok()) std::abort();  // a Result error must be an error
  }

  bool ok() const { return v_.index() == 0; }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  const std::string& error() const { return status().message(); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tessera

// Propagates a failed Status/Result from the enclosing function.
#define TESSERA_RETURN_IF_ERROR(expr)                          \
  do {                                                          \
    auto&& tessera_status_ = (expr);                            \
    if (!tessera_status_.ok()) return tessera_status_.status(); \
  } while (0)

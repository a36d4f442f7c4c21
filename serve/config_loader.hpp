#pragma once
// Reads the configuration files off the loop thread, with a deadline. Opening
// a file on a hung mount blocks in the kernel; that must stall neither
// /metrics nor /-/healthy, so each read runs on a thread of its own and the
// caller hears back at the latest when the deadline passes. A read that
// outlives its deadline is abandoned (its thread finishes whenever the kernel
// lets it, and its result is dropped); until it returns, further reads are
// refused rather than piling up threads. Loop thread only, except load_now().

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>

namespace ckptmon {

template <typename T>
class DeadlineReader {
 public:
  using Read = std::function<T()>;
  using Done = std::function<void(std::optional<T> value, std::string error)>;

  DeadlineReader(boost::asio::io_context& io, std::string what, std::chrono::milliseconds deadline)
      : io_(io), what_(std::move(what)), deadline_(deadline) {}
  ~DeadlineReader() { detach(); }
  DeadlineReader(const DeadlineReader&) = delete;
  DeadlineReader& operator=(const DeadlineReader&) = delete;

  std::chrono::milliseconds deadline() const { return deadline_; }
  // True while a read (finished in time or not) has not returned.
  bool busy() const;

  // Blocks the calling thread up to the deadline; for start-up, before the
  // loop runs. nullopt with `error` set when the read did not finish in time.
  std::optional<T> load_now(Read read, std::string* error);
  // Calls `done` on the loop once: with the value, or with an error when the
  // deadline passed first or an earlier read is still out.
  void load(Read read, Done done);

 private:
  struct Shared;
  void detach();
  std::string timeout_message() const;

  boost::asio::io_context& io_;
  std::string what_;
  std::chrono::milliseconds deadline_;
  std::shared_ptr<Shared> current_;  // the read last started
};

}  // namespace ckptmon

#include "serve/config_loader_impl.hpp"

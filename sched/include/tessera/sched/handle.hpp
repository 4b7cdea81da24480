#pragma once
// A handle names one datum the runtime orders accesses to: usually a tile (pointer + size), or an
// opaque key for data the runtime never touches. It is a cheap copyable reference; the runtime that
// registered it owns its state, which carries the hazard bookkeeping (last writer, readers since).
#include <cstddef>
#include <cstdint>

namespace tessera {
namespace detail { struct handle_state; }

class handle {
 public:
  handle() = default;

  void* data() const noexcept;           // nullptr for a key handle or device-only data
  std::size_t bytes() const noexcept;    // 0 for a key handle
  std::uint64_t key() const noexcept;    // the key, or the (host or device-only) address for data
  explicit operator bool() const noexcept { return _state != nullptr; }
  friend bool operator==(handle a, handle b) noexcept { return a._state == b._state; }

 private:
  explicit handle(detail::handle_state* state) noexcept : _state(state) {}
  detail::handle_state* _state = nullptr;
  friend class runtime;
  friend class task_builder;
  friend class task_context;
};

}  // namespace tessera

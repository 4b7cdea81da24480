#pragma once
// A move-free, type-erased task body with inline storage: constructing a task allocates nothing
// for bodies up to inline_size bytes (the common case: a lambda capturing a few pointers).
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace tessera {
class task_context;
namespace detail {

class task_fn {
 public:
  static constexpr std::size_t inline_size = 96;

  task_fn() = default;
  task_fn(const task_fn&) = delete;
  task_fn& operator=(const task_fn&) = delete;
  ~task_fn() { reset(); }

  template <class F>
  void emplace(F&& f) {
    using Fn = std::decay_t<F>;
    reset();
    if constexpr (sizeof(Fn) <= inline_size && alignof(Fn) <= alignof(std::max_align_t)) {
      ::new (static_cast<void*>(_buf)) Fn(std::forward<F>(f));
      _target = _buf;
      // Nothing to destroy for a trivially destructible body (most lambdas): no call, no write.
      if constexpr (std::is_trivially_destructible_v<Fn>) _destroy = nullptr;
      else _destroy = [](void* p) noexcept { static_cast<Fn*>(p)->~Fn(); };
    } else {
      _target = new Fn(std::forward<F>(f));
      _destroy = [](void* p) noexcept { delete static_cast<Fn*>(p); };
    }
    _invoke = [](void* p, task_context& ctx) {
      Fn& fn = *static_cast<Fn*>(p);
      if constexpr (std::is_invocable_v<Fn&, task_context&>) fn(ctx);
      else fn();
    };
  }

  void operator()(task_context& ctx) const { _invoke(_target, ctx); }
  // Whether reset() has a destructor to run (a body holding resources), as opposed to bookkeeping.
  bool owns_resources() const noexcept { return _destroy != nullptr; }
  explicit operator bool() const noexcept { return _invoke != nullptr; }

  void reset() noexcept {
    if (_destroy) _destroy(_target);
    if (!_invoke) return;  // already empty: no store, so a line other cores read stays shared
    _target = nullptr;
    _invoke = nullptr;
    _destroy = nullptr;
  }

 private:
  // The three words every task touches come first, next to the task's other hot fields.
  void* _target = nullptr;
  void (*_invoke)(void*, task_context&) = nullptr;
  void (*_destroy)(void*) noexcept = nullptr;
  alignas(std::max_align_t) unsigned char _buf[inline_size];
};

}  // namespace detail
}  // namespace tessera

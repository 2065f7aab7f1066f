#pragma once
// function_ref<R(Args...)>: a non-owning reference to something callable, as C++26's
// std::function_ref: two pointers, no allocation, whatever the callable captures (std::function
// allocates once its captures pass its small buffer, 16 bytes in libstdc++). For parameters only:
// the callable must outlive the reference, which holds neither a copy nor a move of it.
// Thread safety: as the callable's.
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

namespace qgossip {

template <class Signature>
class function_ref;

template <class R, class... Args>
class function_ref<R(Args...)> {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, function_ref> && std::is_invocable_r_v<R, F&, Args...>)
  function_ref(F&& f) noexcept  // NOLINT(google-explicit-constructor): it stands in for a callable
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return std::invoke(*static_cast<std::remove_reference_t<F>*>(object), std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace qgossip

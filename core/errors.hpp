#pragma once
// The two exception channels (docs/errors.md):
//  - config_error: bad configuration or input found at start-up. Carries the file, line and column
//    (1-based; 0 when not known) and says what was expected. The CLI prints it and exits 2.
//  - invariant_error: a broken internal invariant, raised by QG_ENFORCE with the failing
//    expression, the operands' message, file and line. It means a bug in qgossip.
// Run-time faults (silent peers, corrupt frames) are not exceptions: see core/status.hpp.
#include <sstream>
#include <stdexcept>
#include <string>

namespace qgossip {

class config_error : public std::runtime_error {
 public:
  // A problem with no position yet (e.g. found by a component that never sees the file);
  // the config loader re-throws it with one via at().
  explicit config_error(const std::string& what) : std::runtime_error(what), message_(what) {}
  config_error(std::string file, int line, int column, const std::string& what)
      : std::runtime_error(format(file, line, column, what)),
        file_(std::move(file)), line_(line), column_(column), message_(what) {}

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }
  bool has_position() const { return !file_.empty(); }
  // The same message placed at file:line:column.
  config_error at(const std::string& file, int line, int column) const {
    return config_error(file, line, column, message_);
  }

 private:
  static std::string format(const std::string& file, int line, int column, const std::string& what) {
    std::string s = file;
    if (line > 0) s += ":" + std::to_string(line);
    if (column > 0) s += ":" + std::to_string(column);
    return s + ": " + what;
  }
  std::string file_;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

class invariant_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {
[[noreturn]] inline void enforce_fail(const char* expr, const char* file, int line, const std::string& msg) {
  std::ostringstream os;
  os << file << ":" << line << ": invariant violated: " << expr;
  if (!msg.empty()) os << " (" << msg << ")";
  throw invariant_error(os.str());
}
}  // namespace detail

}  // namespace qgossip

// QG_ENFORCE(a.size() == b.size(), "a=" << a.size() << " b=" << b.size());
#define QG_ENFORCE(cond, ...)                                                              \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::ostringstream qg_enforce_os_;                                                   \
      qg_enforce_os_ << "" __VA_OPT__(<<) __VA_ARGS__;                                     \
      ::qgossip::detail::enforce_fail(#cond, __FILE__, __LINE__, qg_enforce_os_.str());    \
    }                                                                                      \
  } while (0)

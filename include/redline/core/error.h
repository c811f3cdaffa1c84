// redline::Error and the checking macros every public entry point uses.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace redline {

// The one exception type of the library: a single sentence naming the bad value and what was
// expected.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {

inline void format_into(std::ostringstream& out, std::string_view fmt) { out << fmt; }

// Replaces each "{}" in fmt with the next argument, streamed with operator<<.
template <typename T, typename... Rest>
void format_into(std::ostringstream& out, std::string_view fmt, const T& value,
                 const Rest&... rest) {
  const size_t at = fmt.find("{}");
  if (at == std::string_view::npos) {
    out << fmt;
    return;
  }
  out << fmt.substr(0, at) << value;
  format_into(out, fmt.substr(at + 2), rest...);
}

}  // namespace detail

// format("shape {} but expected {}", a, b): a small {}-formatter (std::format is not in g++ 12).
template <typename... Args>
std::string format(std::string_view fmt, const Args&... args) {
  std::ostringstream out;
  detail::format_into(out, fmt, args...);
  return out.str();
}

}  // namespace redline

// User errors: throws redline::Error with the formatted sentence when cond is false.
#define REDLINE_CHECK(cond, ...)                                         \
  do {                                                                   \
    if (!(cond)) throw ::redline::Error(::redline::format(__VA_ARGS__)); \
  } while (0)

#define REDLINE_FAIL(...) throw ::redline::Error(::redline::format(__VA_ARGS__))

#include "nbkit/core/error.hpp"

#include <fmt/format.h>

namespace nbkit {

namespace {
std::string input_message(const std::string& file, std::int64_t line, const std::string& field,
                          const std::string& problem) {
  if (line > 0 && !field.empty()) return fmt::format("{}:{}: {}: {}", file, line, field, problem);
  if (line > 0) return fmt::format("{}:{}: {}", file, line, problem);
  if (!field.empty()) return fmt::format("{}: {}: {}", file, field, problem);
  return fmt::format("{}: {}", file, problem);
}
}  // namespace

InputError::InputError(const std::string& file, std::int64_t line, const std::string& field,
                       const std::string& problem)
    : Error(input_message(file, line, field, problem)), file_(file), line_(line), field_(field) {}

}  // namespace nbkit

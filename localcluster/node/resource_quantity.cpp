#include "localcluster/node/resource_quantity.h"

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

namespace sluice::node {
namespace {

constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

struct Suffix {
  std::string_view text;
  int exp10;    // Power of ten contributed by the suffix.
  int pow1024;  // Power of 1024 contributed by the suffix.
};

constexpr std::array<Suffix, 16> kSuffixes = {{
    {"n", -9, 0},
    {"u", -6, 0},
    {"m", -3, 0},
    {"k", 3, 0},
    {"M", 6, 0},
    {"G", 9, 0},
    {"T", 12, 0},
    {"P", 15, 0},
    {"E", 18, 0},
    {"Ki", 0, 1},
    {"Mi", 0, 2},
    {"Gi", 0, 3},
    {"Ti", 0, 4},
    {"Pi", 0, 5},
    {"Ei", 0, 6},
    {"", 0, 0},
}};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Multiplies the decimal digit string `digits` (most significant first) by `factor` in place.
void MultiplyDecimal(std::string& digits, uint32_t factor) {
  uint64_t carry = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    uint64_t v = static_cast<uint64_t>(*it - '0') * factor + carry;
    *it = static_cast<char>('0' + v % 10);
    carry = v / 10;
  }
  while (carry > 0) {
    digits.insert(digits.begin(), static_cast<char>('0' + carry % 10));
    carry /= 10;
  }
}

Status InvalidQuantity(std::string_view text, std::string_view why) {
  return Status::InvalidArgument("invalid quantity \"" + std::string(text) +
                                 "\": " + std::string(why));
}

}  // namespace

Result<int64_t> ParseQuantityMilli(std::string_view text) {
  const size_t n = text.size();
  size_t i = 0;
  bool negative = false;
  if (i < n && (text[i] == '+' || text[i] == '-')) {
    negative = text[i] == '-';
    ++i;
  }
  std::string digits;  // Integer and fraction digits together.
  int64_t fraction_digits = 0;
  while (i < n && IsDigit(text[i])) digits.push_back(text[i++]);
  if (i < n && text[i] == '.') {
    ++i;
    while (i < n && IsDigit(text[i])) {
      digits.push_back(text[i++]);
      ++fraction_digits;
    }
  }
  if (digits.empty()) {
    return InvalidQuantity(text, "must start with a number (such as \"500m\", \"2\" or \"4Gi\")");
  }

  // value = digits * 10^exp10 * 1024^pow1024, in milli-units (hence the initial 3).
  int64_t exp10 = 3 - fraction_digits;
  int pow1024 = 0;
  const std::string_view suffix = text.substr(i);
  bool known = false;
  for (const Suffix& s : kSuffixes) {
    if (suffix == s.text) {
      exp10 += s.exp10;
      pow1024 = s.pow1024;
      known = true;
      break;
    }
  }
  if (!known) {
    if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) {
      return InvalidQuantity(text, "unknown suffix \"" + std::string(suffix) +
                                       "\" (want one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, "
                                       "Pi, Ei or an exponent such as e3)");
    }
    size_t j = 1;
    bool exp_negative = false;
    if (suffix[j] == '+' || suffix[j] == '-') {
      exp_negative = suffix[j] == '-';
      ++j;
    }
    if (j == suffix.size()) return InvalidQuantity(text, "exponent has no digits");
    int64_t exponent = 0;
    for (; j < suffix.size(); ++j) {
      if (!IsDigit(suffix[j])) {
        return InvalidQuantity(text, "exponent \"" + std::string(suffix) + "\" is not an integer");
      }
      // Saturate: anything past a billion overflows or rounds to the smallest unit anyway.
      if (exponent < 1000000000) exponent = exponent * 10 + (suffix[j] - '0');
    }
    exp10 += exp_negative ? -exponent : exponent;
  }

  // Strip leading zeros; zero in any spelling is zero.
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return int64_t{0};
  digits.erase(0, first);

  for (int k = 0; k < pow1024; ++k) MultiplyDecimal(digits, 1024);

  // Scale by 10^exp10, rounding any fraction of a milli-unit up (away from zero).
  bool round_up = false;
  if (exp10 >= 0) {
    // The value is at least 10^(digits.size() - 1 + exp10); 19 digits is the most int64 holds.
    if (static_cast<int64_t>(digits.size()) + exp10 > 19) {
      return InvalidQuantity(text, "too large (the amount in milli-units must fit in 64 bits)");
    }
    digits.append(static_cast<size_t>(exp10), '0');
  } else {
    const int64_t drop = -exp10;
    if (drop >= static_cast<int64_t>(digits.size())) {
      // A non-zero amount smaller than one milli-unit.
      digits = "0";
      round_up = true;
    } else {
      const size_t keep = digits.size() - static_cast<size_t>(drop);
      round_up = digits.find_first_not_of('0', keep) != std::string::npos;
      digits.resize(keep);
    }
  }
  if (digits.size() > 19) {
    return InvalidQuantity(text, "too large (the amount in milli-units must fit in 64 bits)");
  }
  uint64_t magnitude = 0;
  for (char c : digits) magnitude = magnitude * 10 + static_cast<uint64_t>(c - '0');
  if (round_up) ++magnitude;
  if (magnitude > kInt64Max) {
    return InvalidQuantity(text, "too large (the amount in milli-units must fit in 64 bits)");
  }
  const auto value = static_cast<int64_t>(magnitude);
  return negative ? -value : value;
}

std::string FormatQuantityMilli(int64_t milli, bool binary) {
  const bool negative = milli < 0;
  const uint64_t magnitude =
      negative ? uint64_t{0} - static_cast<uint64_t>(milli) : static_cast<uint64_t>(milli);
  const std::string sign = negative ? "-" : "";
  if (magnitude % 1000 != 0) return sign + std::to_string(magnitude) + "m";
  const uint64_t units = magnitude / 1000;
  if (binary && units != 0) {
    static constexpr std::array<std::string_view, 6> kBinary = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    uint64_t amount = units;
    int index = -1;
    while (amount % 1024 == 0 && index + 1 < static_cast<int>(kBinary.size())) {
      amount /= 1024;
      ++index;
    }
    if (index >= 0) return sign + std::to_string(amount) + std::string(kBinary[index]);
    static constexpr std::array<std::string_view, 6> kDecimal = {"k", "M", "G", "T", "P", "E"};
    amount = units;
    index = -1;
    while (amount % 1000 == 0 && index + 1 < static_cast<int>(kDecimal.size())) {
      amount /= 1000;
      ++index;
    }
    if (index >= 0) return sign + std::to_string(amount) + std::string(kDecimal[index]);
  }
  return sign + std::to_string(units);
}

Result<ResourceList> ParseResourceList(const nlohmann::json& obj) {
  ResourceList out;
  if (obj.is_null()) return out;
  if (!obj.is_object()) {
    return Status::InvalidArgument(
        "resource list must be an object mapping resource names to "
        "quantities, got " +
        std::string(obj.type_name()));
  }
  for (const auto& [name, value] : obj.items()) {
    std::string text;
    if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_number_integer()) {
      text = value.is_number_unsigned() ? std::to_string(value.get<uint64_t>())
                                        : std::to_string(value.get<int64_t>());
    } else if (value.is_number_float()) {
      text = value.dump();  // Shortest round-trip spelling, such as "0.5" or "1e+20".
    } else {
      return Status::InvalidArgument("resource \"" + name +
                                     "\": quantity must be a string or a number, got " +
                                     std::string(value.type_name()));
    }
    Result<int64_t> milli = ParseQuantityMilli(text);
    if (!milli.ok()) return milli.status().WithContext("resource \"" + name + "\"");
    if (*milli < 0) {
      return Status::InvalidArgument("resource \"" + name + "\": quantity \"" + text +
                                     "\" must be greater than or equal to 0");
    }
    out[name] = *milli;
  }
  return out;
}

}  // namespace sluice::node

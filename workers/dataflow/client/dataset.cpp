#include "workers/dataflow/client/dataset.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <string_view>
#include <system_error>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "common/splitmix64.h"

namespace sluice::dataflow {
namespace {

constexpr int64_t kMaxBuiltinCount = 10'000'000;
constexpr int64_t kMaxBuiltinOperand = 1'000'000'000;
constexpr int64_t kMaxEpochs = 100'000;
constexpr int64_t kMaxReverseLength = 18;
// Largest divisor tried when an arithmetic-chain step divides the running value.
constexpr int64_t kMaxChainDivisor = 1000;

// ---- Randomness: portable, so a seed means the same rows everywhere. ----

// Uniform in [0, n), n >= 1, without modulo bias.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t n) {
  const uint64_t reject_below = (0 - n) % n;  // 2^64 mod n.
  for (;;) {
    const uint64_t r = rng();
    if (r >= reject_below) return r % n;
  }
}

// Uniform in [lo, hi], lo <= hi.
int64_t UniformIn(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(UniformBelow(rng, static_cast<uint64_t>(hi - lo) + 1));
}

uint64_t Fnv1a(std::string_view bytes, uint64_t h = 0xcbf29ce484222325ULL) {
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// "<name>-<n with at least 6 digits>".
std::string NumberedId(const std::string& name, uint64_t n) {
  char digits[32];
  std::snprintf(digits, sizeof(digits), "%06llu", static_cast<unsigned long long>(n));
  return name + "-" + digits;
}

// ---- Built-in generators. ----

enum class Prec { kAdditive = 1, kMultiplicative = 2, kAtom = 3 };

Prec PrecOf(char op) { return op == '+' || op == '-' ? Prec::kAdditive : Prec::kMultiplicative; }

struct Expr {
  std::string text;
  int64_t value = 0;
  Prec top = Prec::kAtom;  // Precedence of the outermost operator.
};

PromptRow MakeRow(const std::string& dataset, uint64_t index, std::string prompt, const Expr& expr,
                  int steps) {
  PromptRow r;
  r.id = NumberedId(dataset, index);
  r.prompt = std::move(prompt);
  r.answer = std::to_string(expr.value);
  r.dataset = dataset;
  r.row = nlohmann::json{{"id", r.id},
                         {"prompt", r.prompt},
                         {"answer", r.answer},
                         {"expression", expr.text},
                         {"steps", steps}};
  return r;
}

// A row of the reverse generator: `length` digits, each uniform in 1..9, and the same digits
// backwards. No 0, so the answer has no leading zero for digit-match's integer form to drop.
PromptRow ReverseRow(const std::string& dataset, uint64_t index, std::mt19937_64& rng,
                     int64_t length, bool equation) {
  std::string digits;
  for (int64_t d = 0; d < length; ++d) {
    digits += static_cast<char>('1' + UniformBelow(rng, 9));
  }
  PromptRow r;
  r.id = NumberedId(dataset, index);
  r.prompt = equation ? "rev " + digits + " ="
                      : "Reverse the digits of " + digits + ". Answer with the digits only.";
  r.answer = std::string(digits.rbegin(), digits.rend());
  r.dataset = dataset;
  r.row =
      nlohmann::json{{"id", r.id}, {"prompt", r.prompt}, {"answer", r.answer}, {"digits", digits}};
  return r;
}

std::string Binary(int64_t a, char op, int64_t b) {
  return std::to_string(a) + " " + op + " " + std::to_string(b);
}

// One operation "a op b" with operands in [0, m].
// `ops`: the allowed operations (non-empty). With all four in the order "+-*/" the draws are
// those of the generator before operations could be chosen, so existing datasets are unchanged.
Expr SingleOperation(std::mt19937_64& rng, int64_t m, const std::string& ops) {
  const char op = ops[UniformBelow(rng, ops.size())];
  int64_t a = UniformIn(rng, 0, m);
  int64_t b = UniformIn(rng, 0, m);
  int64_t value = 0;
  switch (op) {
    case '+':
      value = a + b;
      break;
    case '-':
      if (a < b) std::swap(a, b);
      value = a - b;
      break;
    case '*':
      value = a * b;
      break;
    default: {
      // One factor uniform in [1, m], the other in [0, m / first]; which one is the divisor is
      // a coin flip (a zero factor cannot divide), so both small and large quotients occur.
      int64_t divisor = UniformIn(rng, 1, m);
      int64_t quotient = UniformIn(rng, 0, m / divisor);
      if (quotient >= 1 && UniformBelow(rng, 2) == 1) std::swap(divisor, quotient);
      a = divisor * quotient;
      b = divisor;
      value = quotient;
      break;
    }
  }
  return Expr{Binary(a, op, b), value, PrecOf(op)};
}

std::string Wrap(const Expr& e, bool parens) { return parens ? "(" + e.text + ")" : e.text; }

// Applies one random operation to `e`: "e op b" or "b op e", with operand b in [0, m] and the
// result in [0, bound]. The printed text, read with the usual precedence left to right,
// computes exactly the same intermediate values (see the parenthesis rules below).
void ChainStep(std::mt19937_64& rng, int64_t m, int64_t bound, Expr& e) {
  const int64_t v = e.value;
  // Feasible placements per operator: bit 0 = e on the left, bit 1 = e on the right.
  int sides[4] = {0, 0, 0, 0};  // + - * /
  // +: the result must stay <= bound. e on the right only when e is not a sum, so that
  // "b + x - y" never computes the intermediate b + x.
  if (v < bound) sides[0] = 1 | (e.top != Prec::kAdditive ? 2 : 0);
  // -: e - b with b <= v always; b - e needs v <= b <= m.
  sides[1] = 1 | (v <= m ? 2 : 0);
  // Multiplying or dividing by 0 or 1, and quotients of 0 or 1, make trivial steps; they are
  // avoided unless m = 1 leaves nothing else. `lo` is the smallest factor, divisor and quotient.
  const int64_t lo = m >= 2 ? 2 : 0;
  // *: the product must stay <= bound.
  const int64_t mul_limit = std::min(m, bound / std::max<int64_t>(v, 1));
  if (mul_limit >= std::max<int64_t>(lo, 1)) sides[2] = 3;
  // /: e / b needs a divisor b of v with v / b >= lo (v = 0: any b >= lo); b / e needs
  // v >= 1 and a quotient k >= lo with b = v * k <= m.
  std::vector<int64_t> divisors;
  if (v == 0) {
    divisors.push_back(UniformIn(rng, std::max<int64_t>(lo, 1), m));
  } else if (m == 1) {
    divisors.push_back(1);
  } else {
    for (int64_t d = 2; d <= std::min({m, kMaxChainDivisor, v / 2}); ++d) {
      if (v % d == 0) divisors.push_back(d);
    }
  }
  const int64_t max_quotient = v >= 1 ? m / v : 0;
  sides[3] = (divisors.empty() ? 0 : 1) | (v >= 1 && max_quotient >= lo ? 2 : 0);

  static constexpr char kOps[] = {'+', '-', '*', '/'};
  int feasible[4];
  int n = 0;
  for (int i = 0; i < 4; ++i) {
    if (sides[i] != 0) feasible[n++] = i;
  }
  // "-" on the left (b = 0 allowed) is always feasible, so n >= 1.
  const int which = feasible[UniformBelow(rng, static_cast<uint64_t>(n))];
  const char op = kOps[which];
  const bool right = sides[which] == 3 ? UniformBelow(rng, 2) == 1 : sides[which] == 2;

  int64_t b = 0;
  int64_t value = 0;
  switch (op) {
    case '+':
      b = UniformIn(rng, 0, std::min(m, bound - v));
      value = v + b;
      break;
    case '-':
      b = right ? UniformIn(rng, v, m) : UniformIn(rng, 0, std::min(m, v));
      value = right ? b - v : v - b;
      break;
    case '*':
      b = UniformIn(rng, lo, mul_limit);
      value = v * b;
      break;
    default:
      if (right) {
        value = UniformIn(rng, lo, max_quotient);
        b = v * value;
      } else {
        b = divisors[UniformBelow(rng, divisors.size())];
        value = v / b;
      }
      break;
  }
  const Prec prec = PrecOf(op);
  if (right) {
    // "b op (e)": the parentheses can go only when e binds tighter ("b - x * y") or e is a
    // plain number.
    e.text = std::to_string(b) + " " + op + " " + Wrap(e, e.top <= prec);
  } else {
    // "(e) op b": left to right, parentheses are needed only when op binds tighter than e.
    e.text = Wrap(e, e.top < prec) + " " + op + " " + std::to_string(b);
  }
  e.value = value;
  e.top = prec;
}

Expr Chain(std::mt19937_64& rng, int64_t m, int steps) {
  const int64_t bound = m * m;  // <= 10^18.
  Expr e{"", UniformIn(rng, 0, m), Prec::kAtom};
  e.text = std::to_string(e.value);
  for (int i = 0; i < steps; ++i) ChainStep(rng, m, bound, e);
  return e;
}

// ---- JSONL. ----

std::string_view TypeName(const nlohmann::json& j) { return j.type_name(); }

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

// The part of a nlohmann parse error after "parse error at line 1, column N: ".
std::string ParseErrorText(const nlohmann::json::parse_error& e) {
  std::string what = e.what();
  const size_t column = what.find("column ");
  if (column != std::string::npos) {
    const size_t colon = what.find(": ", column);
    if (colon != std::string::npos) what = what.substr(colon + 2);
  }
  return "invalid JSON at byte " + std::to_string(e.byte) + ": " + what;
}

class JsonlReader {
 public:
  JsonlReader(const std::string& path, const FieldNames& fields, const std::string& dataset)
      : path_(path), fields_(fields), dataset_(dataset) {}

  // One physical line (without '\n'); `truncated` when only a prefix was kept.
  void Line(uint64_t line_no, std::string_view text, bool truncated) {
    if (!text.empty() && text.back() == '\r' && !truncated) text.remove_suffix(1);
    if (truncated || text.size() > kMaxLineBytes) {
      Error(line_no, "line is longer than " + std::to_string(kMaxLineBytes) + " bytes");
      return;
    }
    if (line_no == 1 && text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) return;

    nlohmann::json row;
    try {
      row = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      Error(line_no, ParseErrorText(e));
      return;
    }
    if (!row.is_object()) {
      Error(line_no, "a row must be a JSON object, got " + std::string(TypeName(row)));
      return;
    }
    PromptRow out;
    out.dataset = dataset_;

    const auto prompt = row.find(fields_.prompt);
    if (prompt == row.end()) {
      Error(line_no, "field " + Quoted(fields_.prompt) + " is missing");
      return;
    }
    if (!prompt->is_string()) {
      Error(line_no, "field " + Quoted(fields_.prompt) + " must be a string, got " +
                         std::string(TypeName(*prompt)));
      return;
    }
    out.prompt = prompt->get<std::string>();
    if (out.prompt.empty()) {
      Error(line_no, "field " + Quoted(fields_.prompt) + " is empty");
      return;
    }

    const auto answer = row.find(fields_.answer);
    if (answer != row.end() && !answer->is_null()) {
      if (answer->is_string()) {
        out.answer = answer->get<std::string>();
      } else if (answer->is_number()) {
        out.answer = answer->dump();
      } else {
        Error(line_no, "field " + Quoted(fields_.answer) + " must be a string or a number, got " +
                           std::string(TypeName(*answer)));
        return;
      }
    }

    const auto id = row.find(fields_.id);
    if (id == row.end() || id->is_null()) {
      out.id = NumberedId(dataset_, line_no);
    } else if (id->is_string()) {
      out.id = id->get<std::string>();
      if (out.id.empty()) {
        Error(line_no, "field " + Quoted(fields_.id) + " is empty");
        return;
      }
    } else if (id->is_number_integer()) {
      out.id = id->dump();
    } else {
      Error(line_no, "field " + Quoted(fields_.id) + " must be a string or an integer, got " +
                         std::string(TypeName(*id)));
      return;
    }
    const auto [it, inserted] = first_line_.emplace(out.id, line_no);
    if (!inserted) {
      Error(line_no, "duplicate id " + Quoted(out.id) + " (first on line " +
                         std::to_string(it->second) + ")");
      return;
    }
    out.row = std::move(row);
    // After the first error the rows are only checked, not kept.
    if (errors_ == 0) rows_.push_back(std::move(out));
  }

  Result<std::vector<PromptRow>> Finish() {
    if (errors_ > 0) {
      std::string message;
      for (const std::string& m : messages_) {
        if (!message.empty()) message += "; ";
        message += m;
      }
      if (errors_ > messages_.size()) {
        message += "; and " + std::to_string(errors_ - messages_.size()) + " more errors";
      }
      return Status::InvalidArgument(std::move(message));
    }
    if (rows_.empty()) return Status::InvalidArgument("dataset file " + path_ + " has no rows");
    return std::move(rows_);
  }

 private:
  void Error(uint64_t line_no, const std::string& what) {
    ++errors_;
    if (messages_.size() < kMaxReportedRowErrors) {
      messages_.push_back(path_ + ":" + std::to_string(line_no) + ": " + what);
    }
  }

  const std::string& path_;
  const FieldNames& fields_;
  const std::string& dataset_;
  std::vector<PromptRow> rows_;
  std::unordered_map<std::string, uint64_t> first_line_;
  std::vector<std::string> messages_;
  size_t errors_ = 0;
};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

Result<std::vector<PromptRow>> GenerateBuiltinRows(const BuiltinDataset& builtin,
                                                   const std::string& dataset_name) {
  const bool chain = builtin.generator == "arithmetic-chain";
  const bool reverse = builtin.generator == "reverse";
  if (!chain && !reverse && builtin.generator != "arithmetic") {
    return Status::InvalidArgument("unknown generator " + Quoted(builtin.generator) +
                                       " (want arithmetic, arithmetic-chain or reverse)",
                                   "spec.dataset.builtin.generator");
  }
  if (builtin.length < 1 || builtin.length > kMaxReverseLength) {
    return Status::InvalidArgument("length " + std::to_string(builtin.length) + " is outside [1, " +
                                       std::to_string(kMaxReverseLength) + "]",
                                   "spec.dataset.builtin.length");
  }
  if (builtin.count < 1 || builtin.count > kMaxBuiltinCount) {
    return Status::InvalidArgument("count " + std::to_string(builtin.count) + " is outside [1, " +
                                       std::to_string(kMaxBuiltinCount) + "]",
                                   "spec.dataset.builtin.count");
  }
  if (builtin.max_operand < 1 || builtin.max_operand > kMaxBuiltinOperand) {
    return Status::InvalidArgument("maxOperand " + std::to_string(builtin.max_operand) +
                                       " is outside [1, " + std::to_string(kMaxBuiltinOperand) +
                                       "]",
                                   "spec.dataset.builtin.maxOperand");
  }
  if (builtin.operations.empty() || builtin.operations.size() > 4 ||
      builtin.operations.find_first_not_of("+-*/") != std::string::npos ||
      std::set<char>(builtin.operations.begin(), builtin.operations.end()).size() !=
          builtin.operations.size()) {
    return Status::InvalidArgument(
        "operations " + Quoted(builtin.operations) + " must be distinct ones of + - * /",
        "spec.dataset.builtin.operations");
  }
  if (chain && builtin.operations.size() != 4) {
    return Status::InvalidArgument("arithmetic-chain uses all four operations (+ - * /)",
                                   "spec.dataset.builtin.operations");
  }
  const bool equation = builtin.prompt_style == "equation";
  if (!equation && builtin.prompt_style != "question") {
    return Status::InvalidArgument(
        "unknown promptStyle " + Quoted(builtin.prompt_style) + " (want question or equation)",
        "spec.dataset.builtin.promptStyle");
  }
  const std::string& name = dataset_name.empty() ? builtin.generator : dataset_name;
  const uint64_t seed_key = SplitMix64(builtin.seed);
  std::vector<PromptRow> rows;
  rows.reserve(static_cast<size_t>(builtin.count));
  for (int64_t i = 0; i < builtin.count; ++i) {
    // Row i depends on (seed, i) only.
    std::mt19937_64 rng(SplitMix64(seed_key + static_cast<uint64_t>(i)));
    if (reverse) {
      rows.push_back(ReverseRow(name, static_cast<uint64_t>(i), rng, builtin.length, equation));
    } else if (chain) {
      const int steps = static_cast<int>(UniformIn(rng, 2, 4));
      const Expr e = Chain(rng, builtin.max_operand, steps);
      rows.push_back(MakeRow(
          name, static_cast<uint64_t>(i),
          equation ? e.text + " =" : "Compute " + e.text + ". You may call the calculator tool.", e,
          steps));
    } else {
      const Expr e = SingleOperation(rng, builtin.max_operand, builtin.operations);
      rows.push_back(MakeRow(
          name, static_cast<uint64_t>(i),
          equation ? e.text + " =" : "What is " + e.text + "? Answer with the number only.", e, 1));
    }
  }
  return rows;
}

Result<std::vector<PromptRow>> ReadJsonlRows(const std::string& path, const FieldNames& fields,
                                             const std::string& dataset_name) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument("dataset file " + path + ": is a directory");
  }
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (file == nullptr) {
    const int err = errno;
    std::string message = "dataset file " + path + ": cannot open: " + std::strerror(err);
    if (err == ENOENT) return Status::NotFound(std::move(message));
    return Status::InvalidArgument(std::move(message));
  }
  std::string name = dataset_name;
  if (name.empty()) name = std::filesystem::path(path).stem().string();
  if (name.empty()) name = "dataset";

  JsonlReader reader(path, fields, name);
  std::string line;
  bool too_long = false;
  uint64_t line_no = 1;
  std::vector<char> buffer(size_t{64} << 10);
  for (;;) {
    const size_t n = std::fread(buffer.data(), 1, buffer.size(), file.get());
    std::string_view chunk(buffer.data(), n);
    while (!chunk.empty()) {
      const size_t newline = chunk.find('\n');
      const std::string_view piece = chunk.substr(0, newline);
      // Keep at most kMaxLineBytes + 1 bytes (the limit plus a CR); beyond that the line is
      // too long and the rest is dropped.
      if (!too_long) {
        const size_t keep = kMaxLineBytes + 1;
        too_long = line.size() + piece.size() > keep;
        line.append(piece.substr(0, keep - line.size()));
      }
      if (newline == std::string_view::npos) break;
      reader.Line(line_no++, line, too_long);
      line.clear();
      too_long = false;
      chunk.remove_prefix(newline + 1);
    }
    if (n < buffer.size()) break;
  }
  if (std::ferror(file.get())) {
    return Status::Unavailable("dataset file " + path + ": read error: " + std::strerror(errno));
  }
  if (!line.empty() || too_long) reader.Line(line_no, line, too_long);
  return reader.Finish();
}

Result<Dataset> Dataset::Load(const DatasetSource& source) {
  if (source.file.has_value() == source.builtin.has_value()) {
    return Status::InvalidArgument("set exactly one of a dataset file and a built-in generator",
                                   "spec.dataset");
  }
  if (!(source.eval_split >= 0 && source.eval_split <= 0.5)) {
    return Status::InvalidArgument(
        "evalSplit " + std::to_string(source.eval_split) + " is outside [0, 0.5]",
        "spec.dataset.evalSplit");
  }
  if (source.epochs < 1 || source.epochs > kMaxEpochs) {
    return Status::InvalidArgument("epochs " + std::to_string(source.epochs) + " is outside [1, " +
                                       std::to_string(kMaxEpochs) + "]",
                                   "spec.dataset.epochs");
  }
  for (const auto* f : {&source.fields.prompt, &source.fields.answer, &source.fields.id}) {
    if (f->empty()) {
      return Status::InvalidArgument("field names must not be empty", "spec.dataset.fields");
    }
  }
  Result<std::vector<PromptRow>> loaded =
      source.builtin.has_value() ? GenerateBuiltinRows(*source.builtin, source.name)
                                 : ReadJsonlRows(*source.file, source.fields, source.name);
  if (!loaded.ok()) return loaded.status();
  std::vector<PromptRow>& rows = loaded.value();
  const size_t n = rows.size();

  // Eval rows: the k rows ranking lowest under a seed-keyed hash of their prompt, then of their
  // id. Ranking by prompt first holds out whole problems: every row of a held-out problem is
  // either eval or (beyond k) a dropped duplicate, so both splits draw problems from the same
  // distribution. Ranking rows by id alone picked frequent problems (those a generator repeats
  // most, such as its few divisions) far more often than rare ones, which then left training
  // with mostly the rare, harder problems and evaluation with the easy ones.
  size_t k = static_cast<size_t>(std::llround(source.eval_split * static_cast<double>(n)));
  if (source.eval_split > 0 && k == 0 && n >= 2) k = 1;
  k = std::min(k, n - 1);
  std::vector<bool> is_eval(n, false);
  if (k > 0) {
    const uint64_t key = SplitMix64(source.shuffle_seed ^ 0x5e1fe7a15eedULL);
    struct Rank {
      uint64_t prompt;
      uint64_t id;
      size_t index;
      bool operator<(const Rank& o) const {
        return std::tie(prompt, id, index) < std::tie(o.prompt, o.id, o.index);
      }
    };
    std::vector<Rank> ranked;
    ranked.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      ranked.push_back(
          {SplitMix64(Fnv1a(rows[i].prompt) ^ key), SplitMix64(Fnv1a(rows[i].id) ^ key), i});
    }
    std::nth_element(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(k - 1),
                     ranked.end());
    for (size_t i = 0; i < k; ++i) is_eval[ranked[i].index] = true;
  }

  // A held-out problem must not be trained on under another id: train rows whose prompt equals
  // an eval row's prompt are dropped (generators and scraped datasets repeat problems).
  std::unordered_set<std::string_view> eval_prompts;
  for (size_t i = 0; i < n; ++i) {
    if (is_eval[i]) eval_prompts.insert(rows[i].prompt);
  }
  std::vector<bool> dropped(n, false);
  size_t dropped_count = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!is_eval[i] && eval_prompts.count(rows[i].prompt) > 0) {
      dropped[i] = true;
      ++dropped_count;
    }
  }
  if (dropped_count == n - k) {
    return Status::InvalidArgument(
        "every training prompt also appears in the eval split (the rows repeat " +
            std::to_string(k) + " prompts); use more distinct rows or a smaller evalSplit",
        "spec.dataset.evalSplit");
  }

  Dataset d;
  d.name_ = rows.front().dataset;
  d.train_.reserve(n - k - dropped_count);
  d.eval_.reserve(k);
  d.dropped_duplicates_ = dropped_count;
  uint64_t h = Fnv1a(d.name_);
  for (size_t i = 0; i < n; ++i) {
    for (const std::string* s : {&rows[i].id, &rows[i].prompt, &rows[i].answer}) {
      h = Fnv1a(*s, Fnv1a(std::string_view("\0", 1), h));
    }
    h = Fnv1a(is_eval[i] ? "e" : (dropped[i] ? "d" : "t"), h);
    if (dropped[i]) continue;
    (is_eval[i] ? d.eval_ : d.train_).push_back(std::move(rows[i]));
  }
  d.fingerprint_ = h;
  return d;
}

const PromptRow& Dataset::train(size_t i) const {
  SLUICE_CHECK(i < train_.size());
  return train_[i];
}

const PromptRow& Dataset::eval(size_t i) const {
  SLUICE_CHECK(i < eval_.size());
  return eval_[i];
}

DatasetCursor::DatasetCursor(const Dataset& dataset, bool shuffle, uint64_t seed, int64_t epochs)
    : DatasetCursor(dataset.train_size(), shuffle, seed, epochs) {}

DatasetCursor::DatasetCursor(size_t train_size, bool shuffle, uint64_t seed, int64_t epochs)
    : size_(train_size), shuffle_(shuffle), seed_(seed), epochs_(std::max<int64_t>(epochs, 0)) {
  if (size_ == 0) epoch_ = epochs_;  // Nothing to hand out: already at the end.
}

std::vector<size_t> DatasetCursor::EpochOrder(size_t train_size, bool shuffle, uint64_t seed,
                                              int64_t epoch) {
  std::vector<size_t> order(train_size);
  std::iota(order.begin(), order.end(), size_t{0});
  if (!shuffle) return order;
  std::mt19937_64 rng(SplitMix64(seed + static_cast<uint64_t>(epoch)));
  for (size_t i = train_size; i > 1; --i) {
    std::swap(order[i - 1], order[UniformBelow(rng, i)]);
  }
  return order;
}

void DatasetCursor::EnsureOrder() {
  if (order_epoch_ == epoch_) return;
  order_ = EpochOrder(size_, shuffle_, seed_, epoch_);
  order_epoch_ = epoch_;
}

std::optional<size_t> DatasetCursor::Next() {
  if (epoch_ >= epochs_) return std::nullopt;
  EnsureOrder();
  const size_t index = order_[position_];
  if (++position_ == size_) {
    ++epoch_;
    position_ = 0;
  }
  return index;
}

Status DatasetCursor::Restore(State state) {
  const State original = state;
  if (size_ > 0 && state.epoch >= 0 && state.epoch < epochs_ && state.position == size_) {
    ++state.epoch;  // The end of an epoch is the start of the next.
    state.position = 0;
  }
  bool valid = state.epoch >= 0 && ((state.epoch < epochs_ && state.position < size_) ||
                                    (state.epoch == epochs_ && state.position == 0));
  if (size_ == 0) {
    valid = state.position == 0 && (state.epoch == 0 || state.epoch == epochs_);
    state.epoch = epochs_;
  }
  if (!valid) {
    return Status::InvalidArgument("cursor state {epoch " + std::to_string(original.epoch) +
                                   ", position " + std::to_string(original.position) +
                                   "} is outside " + std::to_string(epochs_) + " epochs of " +
                                   std::to_string(size_) + " rows");
  }
  epoch_ = state.epoch;
  position_ = state.position;
  return Status::Ok();
}

uint64_t DatasetCursor::consumed() const {
  return static_cast<uint64_t>(epoch_) * size_ + position_;
}

uint64_t DatasetCursor::total() const { return static_cast<uint64_t>(epochs_) * size_; }

}  // namespace sluice::dataflow

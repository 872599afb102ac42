// The prompts of one experiment: loading them (a JSONL file or a built-in generator), holding
// out a deterministic eval split, and walking the train split epoch by epoch.
//
// Sources (the Dataflow CR's spec.dataset, resolved by the service):
//   - a JSONL file: a ConfigMap key or a PVC path, which the process sees as a mounted file;
//   - a built-in generator, deterministic from its seed (no files needed):
//       arithmetic        one operation "a op b", op drawn uniformly from `operations` (default
//                         + - * /; exact division, a >= b for -),
//                         operands in [0, maxOperand]. Prompt template (exact):
//                           "What is <a> <op> <b>? Answer with the number only."
//                         e.g. "What is 17 + 25? Answer with the number only.", answer "42".
//       arithmetic-chain  2 to 4 operations with parentheses where needed; operands in
//                         [0, maxOperand]; evaluated with the usual precedence, left to right,
//                         every intermediate result is a non-negative integer of at most
//                         maxOperand² (so int64 never overflows). With maxOperand >= 2 no
//                         step multiplies by 0 or 1 or has a quotient below 2.
//                         Prompt template (exact):
//                           "Compute <expression>. You may call the calculator tool."
//                         e.g. "Compute (17 + 25) * 3 - 8. You may call the calculator tool.",
//                         answer "118".
//       reverse           `length` digits, each uniform in 1..9, to write backwards
//                         (maxOperand and operations are not used). Prompt template (exact):
//                           "Reverse the digits of <digits>. Answer with the digits only."
//                         e.g. "Reverse the digits of 4821. Answer with the digits only.",
//                         answer "1284"; in `row` also "digits" ("4821").
//     With promptStyle "equation" the prompts are "<expression> =" and "rev <digits> =".
//     Operators are the ASCII characters + - * /, separated from numbers by one space. Row i
//     depends only on (seed, i), so a larger count keeps the earlier rows. The arithmetic
//     generators put into `row`: id, prompt, answer, "expression" (e.g. "(17 + 25) * 3 - 8") and
//     "steps" (the number of operations). Ids are "<generator>-<index, 6+ digits>" with a
//     0-based index: "arithmetic-000042".
//
// JSONL: one JSON object per line; blank lines (only spaces, tabs, CR) are skipped; CRLF and a
// leading UTF-8 byte-order mark are tolerated; strings must be valid UTF-8 and pass through
// unchanged; a line over kMaxLineBytes is an error. Per row (field names from FieldNames):
//   prompt  required, a non-empty string;
//   answer  a string, or a number converted to its JSON text (42 -> "42", 3.5 -> "3.5");
//           missing or null -> "";
//   id      a non-empty string or an integer (converted to text); missing or null ->
//           "<dataset>-<1-based line number, 6+ digits>" ("prompts-000017"). Ids must be unique.
// Errors name the file and line: "/data/prompts.jsonl:17: field \"prompt\" is missing"; all
// rows are checked and up to kMaxReportedRowErrors of them are listed in one Status.
//
// Eval split: round(evalSplit · rows) rows (at least 1 when evalSplit > 0 and there are 2 or
// more rows; always leaving at least 1 train row) are held out: those ranking lowest under a
// hash keyed by shuffle_seed of their prompt, then of their id, so whole problems are held out
// and both splits draw problems from the same distribution. Membership depends on prompts and
// ids, not on line order. Both splits keep source order. No eval problem is trained on: a non-eval
// row whose prompt equals an eval row's prompt is dropped from the train split
// (dropped_duplicates() counts them); when that leaves no train row, Load fails naming
// spec.dataset.evalSplit.
//
// Reproducibility: all randomness uses std::mt19937_64 (fully specified by the standard) with
// Sluice's own bounded draws and shuffles, so results are identical across compilers and
// standard libraries.
//
// Memory: a row costs roughly 1 KiB (strings plus the JSON object); the CRD's 10 million
// built-in rows would need about 10 GiB.
//
// Ownership and thread safety: a Dataset owns its rows and is immutable after Load, so const
// access from several threads is safe. A DatasetCursor is a plain value, not synchronized.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::dataflow {

// Longest accepted JSONL line, in bytes, not counting the line break.
inline constexpr size_t kMaxLineBytes = size_t{1} << 20;
// Row errors listed in one Status; the rest are counted.
inline constexpr size_t kMaxReportedRowErrors = 10;

// Names of the JSON fields read from each row (spec.dataset.fields). Top-level keys only.
struct FieldNames {
  std::string prompt = "prompt";
  std::string answer = "answer";
  std::string id = "id";
};

// spec.dataset.builtin.
struct BuiltinDataset {
  std::string generator = "arithmetic";  // "arithmetic", "arithmetic-chain" or "reverse".
  int64_t count = 10000;                 // Rows, in [1, 10^7].
  int64_t max_operand = 100;             // Largest operand, in [1, 10^9].
  uint64_t seed = 0;
  // Operations "arithmetic" draws from, uniformly, one character each, distinct, from "+-*/"
  // (spec.dataset.builtin.operations). "arithmetic-chain" needs all four.
  std::string operations = "+-*/";
  // "question" ("What is 7 * 12? Answer with the number only.") or "equation" ("7 * 12 =")
  // (spec.dataset.builtin.promptStyle).
  std::string prompt_style = "question";
  // Digits per problem of "reverse", in [1, 18] (spec.dataset.builtin.length).
  int64_t length = 4;
};

struct PromptRow {
  std::string id;       // From fields.id, else "<dataset>-<line or index>".
  std::string prompt;   // From fields.prompt; never empty.
  std::string answer;   // From fields.answer; may be empty.
  nlohmann::json row;   // The whole row (a JSON object), for workflows that need more fields.
  std::string dataset;  // The source's name, for per-dataset eval metrics.
};

// What the service resolves from the CR and its mounts. Set exactly one of file and builtin.
struct DatasetSource {
  std::optional<std::string> file;        // JSONL path (a mounted ConfigMap key or PVC path).
  std::optional<BuiltinDataset> builtin;  // A generator.
  // Name of the dataset (PromptRow::dataset, default ids); empty: the generator's name or the
  // file's stem ("/data/prompts.jsonl" -> "prompts").
  std::string name;
  FieldNames fields;
  double eval_split = 0;  // Fraction in [0, 0.5] held out for eval (see above).
  // For the DatasetCursor (Load checks epochs is in [1, 100000]); shuffle_seed also keys the
  // eval split.
  bool shuffle = true;
  uint64_t shuffle_seed = 0;
  int64_t epochs = 1;
};

// The rows of a built-in generator. InvalidArgument for an unknown generator or a count,
// max_operand or length out of range.
Result<std::vector<PromptRow>> GenerateBuiltinRows(const BuiltinDataset& builtin,
                                                   const std::string& dataset_name);

// The rows of a JSONL file, in file order. NotFound for a missing file; InvalidArgument for a
// directory, unreadable rows (listed with file:line), duplicate ids, or no rows at all.
Result<std::vector<PromptRow>> ReadJsonlRows(const std::string& path, const FieldNames& fields,
                                             const std::string& dataset_name);

class Dataset {
 public:
  // Validates `source`, reads or generates the rows and splits them. Errors as above, plus
  // InvalidArgument naming the spec.dataset field for out-of-range settings.
  static Result<Dataset> Load(const DatasetSource& source);

  const std::string& name() const { return name_; }
  size_t train_size() const { return train_.size(); }
  size_t eval_size() const { return eval_.size(); }
  // Train-side rows left out because their prompt equals an eval row's prompt.
  size_t dropped_duplicates() const { return dropped_duplicates_; }
  // i must be below the size (checked).
  const PromptRow& train(size_t i) const;
  const PromptRow& eval(size_t i) const;
  // A hash of every row's split, id, prompt and answer, in order: store it beside a cursor
  // state so a restart can tell that the dataset changed underneath it.
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  Dataset() = default;

  std::string name_;
  std::vector<PromptRow> train_;
  std::vector<PromptRow> eval_;
  size_t dropped_duplicates_ = 0;
  uint64_t fingerprint_ = 0;
};

// Walks the train split epoch by epoch. Epoch e (0-based) visits every index exactly once, in
// an order that depends only on (shuffle, seed + e, train size): a Fisher-Yates shuffle driven
// by std::mt19937_64, or 0, 1, 2, ... when shuffle is false. So (epoch, position) is enough to
// resume after a restart. Keeps the train size only, not a reference to the Dataset.
class DatasetCursor {
 public:
  // Position `position` (0-based, below the train size) of epoch `epoch` is the next one
  // handed out. After the last epoch: {epochs, 0}.
  struct State {
    int64_t epoch = 0;
    uint64_t position = 0;
    friend bool operator==(const State&, const State&) = default;
  };

  // epochs < 1 hands out nothing.
  DatasetCursor(const Dataset& dataset, bool shuffle, uint64_t seed, int64_t epochs);
  DatasetCursor(size_t train_size, bool shuffle, uint64_t seed, int64_t epochs);

  // The next index into the train split; nullopt once all epochs are consumed.
  std::optional<size_t> Next();

  State state() const { return {epoch_, position_}; }
  // Continues from `state` (as returned by state()). A position equal to the train size means
  // the start of the next epoch. InvalidArgument, cursor unchanged, for a state outside
  // [{0, 0}, {epochs, 0}].
  Status Restore(State state);

  int64_t epoch() const { return epoch_; }  // Current epoch, 0-based; `epochs` when done.
  int64_t epochs() const { return epochs_; }
  uint64_t consumed() const;  // Indices handed out so far, over all epochs.
  uint64_t total() const;     // Train size · epochs.
  bool done() const { return consumed() == total(); }

  // The visiting order of one epoch (a permutation of [0, train_size)).
  static std::vector<size_t> EpochOrder(size_t train_size, bool shuffle, uint64_t seed,
                                        int64_t epoch);

 private:
  void EnsureOrder();

  size_t size_;
  bool shuffle_;
  uint64_t seed_;
  int64_t epochs_;
  int64_t epoch_ = 0;
  uint64_t position_ = 0;
  std::vector<size_t> order_;  // EpochOrder(order_epoch_), built lazily.
  int64_t order_epoch_ = -1;
};

}  // namespace sluice::dataflow

#include "common/cel/parser.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "common/cel/lexer.h"

namespace sluice::cel {
namespace {

using ExprPtr = std::unique_ptr<Expr>;

Status ErrorAt(int column, std::string_view what) {
  return Status::InvalidArgument("syntax error at column " + std::to_string(column) + ": " +
                                 std::string(what));
}

Status UnsupportedAt(int column, std::string_view what) {
  return Status::InvalidArgument("unsupported " + std::string(what) + " at column " +
                                 std::to_string(column));
}

std::string Describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::kEnd:
      return "end of input";
    case TokenKind::kString:
      return "string literal";
    case TokenKind::kInt:
    case TokenKind::kUint:
    case TokenKind::kDouble:
      return "number";
    default:
      return "'" + t.text + "'";
  }
}

struct BuiltinInfo {
  std::string_view name;
  Builtin fn;
  int global_args;    // argument count in the global form f(a, ...); -1: no global form
  int receiver_args;  // argument count in the receiver form x.f(...); -1: no receiver form
};

constexpr std::array<BuiltinInfo, 12> kBuiltins = {{
    {"size", Builtin::kSize, 1, 0},
    {"startsWith", Builtin::kStartsWith, -1, 1},
    {"endsWith", Builtin::kEndsWith, -1, 1},
    {"contains", Builtin::kContains, -1, 1},
    {"matches", Builtin::kMatches, 2, 1},
    {"lowerAscii", Builtin::kLowerAscii, -1, 0},
    {"upperAscii", Builtin::kUpperAscii, -1, 0},
    {"int", Builtin::kInt, 1, -1},
    {"uint", Builtin::kUint, 1, -1},
    {"double", Builtin::kDouble, 1, -1},
    {"string", Builtin::kString, 1, -1},
    {"dyn", Builtin::kDyn, 1, -1},
}};

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Result<ExprPtr> ParseAll() {
    SLUICE_ASSIGN_OR_RETURN(ExprPtr e, ParseExpr());
    if (Cur().kind != TokenKind::kEnd) {
      return ErrorAt(Cur().column,
                     "expected an operator or end of input but found " + Describe(Cur()));
    }
    return e;
  }

 private:
  const Token& Cur() const { return t_[i_]; }
  const Token& Ahead(size_t n) const { return t_[std::min(i_ + n, t_.size() - 1)]; }
  bool IsPunct(std::string_view p, size_t ahead = 0) const {
    const Token& t = Ahead(ahead);
    return t.kind == TokenKind::kPunct && t.text == p;
  }
  bool IsKeyword(std::string_view k) const {
    return Cur().kind == TokenKind::kIdent && Cur().text == k;
  }
  Status Expect(std::string_view p) {
    if (!IsPunct(p)) {
      return ErrorAt(Cur().column,
                     "expected '" + std::string(p) + "' but found " + Describe(Cur()));
    }
    ++i_;
    return Status::Ok();
  }

  // Makes a node and checks the tree height bound.
  Result<ExprPtr> Node(ExprKind kind, int column, std::vector<ExprPtr> args) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->column = column;
    int h = 0;
    for (const ExprPtr& a : args) h = std::max(h, a->height);
    e->height = h + 1;
    e->args = std::move(args);
    if (e->height > kMaxNestingDepth) {
      return Status::InvalidArgument("expression nesting exceeds the limit of " +
                                     std::to_string(kMaxNestingDepth) + " at column " +
                                     std::to_string(column));
    }
    return e;
  }
  Result<ExprPtr> Node(ExprKind kind, int column, ExprPtr a) {
    std::vector<ExprPtr> args;
    args.push_back(std::move(a));
    return Node(kind, column, std::move(args));
  }
  Result<ExprPtr> Node(ExprKind kind, int column, ExprPtr a, ExprPtr b) {
    std::vector<ExprPtr> args;
    args.push_back(std::move(a));
    args.push_back(std::move(b));
    return Node(kind, column, std::move(args));
  }

  Result<ExprPtr> ParseExpr() {
    if (++depth_ > kMaxNestingDepth) {
      return Status::InvalidArgument("expression nesting exceeds the limit of " +
                                     std::to_string(kMaxNestingDepth) + " at column " +
                                     std::to_string(Cur().column));
    }
    Result<ExprPtr> r = ParseTernary();
    --depth_;
    return r;
  }

  Result<ExprPtr> ParseTernary() {
    SLUICE_ASSIGN_OR_RETURN(ExprPtr cond, ParseOr());
    if (!IsPunct("?")) return cond;
    int column = Cur().column;
    ++i_;
    SLUICE_ASSIGN_OR_RETURN(ExprPtr then_e, ParseOr());
    SLUICE_RETURN_IF_ERROR(Expect(":"));
    SLUICE_ASSIGN_OR_RETURN(ExprPtr else_e, ParseExpr());
    std::vector<ExprPtr> args;
    args.push_back(std::move(cond));
    args.push_back(std::move(then_e));
    args.push_back(std::move(else_e));
    return Node(ExprKind::kTernary, column, std::move(args));
  }

  Result<ExprPtr> ParseOr() {
    SLUICE_ASSIGN_OR_RETURN(ExprPtr lhs, ParseAnd());
    while (IsPunct("||")) {
      int column = Cur().column;
      ++i_;
      SLUICE_ASSIGN_OR_RETURN(ExprPtr rhs, ParseAnd());
      SLUICE_ASSIGN_OR_RETURN(lhs, Node(ExprKind::kOr, column, std::move(lhs), std::move(rhs)));
    }
    return lhs;
  }

  Result<ExprPtr> ParseAnd() {
    SLUICE_ASSIGN_OR_RETURN(ExprPtr lhs, ParseRelation());
    while (IsPunct("&&")) {
      int column = Cur().column;
      ++i_;
      SLUICE_ASSIGN_OR_RETURN(ExprPtr rhs, ParseRelation());
      SLUICE_ASSIGN_OR_RETURN(lhs, Node(ExprKind::kAnd, column, std::move(lhs), std::move(rhs)));
    }
    return lhs;
  }

  Result<ExprPtr> Binary(Op op, int column, ExprPtr lhs, ExprPtr rhs) {
    SLUICE_ASSIGN_OR_RETURN(ExprPtr e,
                            Node(ExprKind::kBinary, column, std::move(lhs), std::move(rhs)));
    e->op = op;
    return e;
  }

  Result<ExprPtr> ParseRelation() {
    SLUICE_ASSIGN_OR_RETURN(ExprPtr lhs, ParseAddition());
    while (true) {
      Op op;
      if (IsPunct("==")) {
        op = Op::kEq;
      } else if (IsPunct("!=")) {
        op = Op::kNe;
      } else if (IsPunct("<")) {
        op = Op::kLt;
      } else if (IsPunct("<=")) {
        op = Op::kLe;
      } else if (IsPunct(">")) {
        op = Op::kGt;
      } else if (IsPunct(">=")) {
        op = Op::kGe;
      } else if (IsKeyword("in")) {
        op = Op::kIn;
      } else {
        return lhs;
      }
      int column = Cur().column;
      ++i_;
      SLUICE_ASSIGN_OR_RETURN(ExprPtr rhs, ParseAddition());
      SLUICE_ASSIGN_OR_RETURN(lhs, Binary(op, column, std::move(lhs), std::move(rhs)));
    }
  }

  Result<ExprPtr> ParseAddition() {
    SLUICE_ASSIGN_OR_RETURN(ExprPtr lhs, ParseMultiplication());
    while (IsPunct("+") || IsPunct("-")) {
      Op op = IsPunct("+") ? Op::kAdd : Op::kSub;
      int column = Cur().column;
      ++i_;
      SLUICE_ASSIGN_OR_RETURN(ExprPtr rhs, ParseMultiplication());
      SLUICE_ASSIGN_OR_RETURN(lhs, Binary(op, column, std::move(lhs), std::move(rhs)));
    }
    return lhs;
  }

  Result<ExprPtr> ParseMultiplication() {
    SLUICE_ASSIGN_OR_RETURN(ExprPtr lhs, ParseUnary());
    while (IsPunct("*") || IsPunct("/") || IsPunct("%")) {
      Op op = IsPunct("*") ? Op::kMul : (IsPunct("/") ? Op::kDiv : Op::kMod);
      int column = Cur().column;
      ++i_;
      SLUICE_ASSIGN_OR_RETURN(ExprPtr rhs, ParseUnary());
      SLUICE_ASSIGN_OR_RETURN(lhs, Binary(op, column, std::move(lhs), std::move(rhs)));
    }
    return lhs;
  }

  Result<ExprPtr> ParseUnary() {
    if (!IsPunct("!") && !IsPunct("-")) return ParseMember();
    if (++depth_ > kMaxNestingDepth) {
      return Status::InvalidArgument("expression nesting exceeds the limit of " +
                                     std::to_string(kMaxNestingDepth) + " at column " +
                                     std::to_string(Cur().column));
    }
    Result<ExprPtr> r = ParseUnaryOp();
    --depth_;
    return r;
  }

  Result<ExprPtr> ParseUnaryOp() {
    int column = Cur().column;
    bool neg = IsPunct("-");
    // A negated integer literal is one literal, so that -9223372036854775808 is representable.
    if (neg && Ahead(1).kind == TokenKind::kInt && !IsPunct(".", 2) && !IsPunct("[", 2)) {
      uint64_t n = Ahead(1).number;
      if (n > static_cast<uint64_t>(INT64_MAX) + 1) {
        return ErrorAt(Ahead(1).column, "integer literal out of range");
      }
      i_ += 2;
      auto e = std::make_unique<Expr>();
      e->kind = ExprKind::kLiteral;
      e->column = column;
      e->literal = Value::Int(n == static_cast<uint64_t>(INT64_MAX) + 1 ? INT64_MIN
                                                                        : -static_cast<int64_t>(n));
      return e;
    }
    ++i_;
    SLUICE_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary());
    SLUICE_ASSIGN_OR_RETURN(ExprPtr e, Node(ExprKind::kUnary, column, std::move(operand)));
    e->op = neg ? Op::kNeg : Op::kNot;
    return e;
  }

  Result<ExprPtr> ParseMember() {
    SLUICE_ASSIGN_OR_RETURN(ExprPtr e, ParsePrimary());
    while (true) {
      if (IsPunct(".")) {
        int dot_column = Cur().column;
        ++i_;
        if (IsPunct("?")) return UnsupportedAt(Cur().column, "optional field selection '.?'");
        if (Cur().kind != TokenKind::kIdent) {
          return ErrorAt(Cur().column,
                         "expected a field name after '.' but found " + Describe(Cur()));
        }
        const Token& name = Cur();
        SLUICE_RETURN_IF_ERROR(CheckName(name));
        ++i_;
        if (IsPunct("(")) {
          ++i_;
          SLUICE_ASSIGN_OR_RETURN(std::vector<ExprPtr> args, ParseArgs(")"));
          SLUICE_ASSIGN_OR_RETURN(e, MakeCall(std::move(e), name, std::move(args)));
        } else {
          SLUICE_ASSIGN_OR_RETURN(e, Node(ExprKind::kSelect, name.column, std::move(e)));
          e->name = UnescapeFieldName(name.text);
          (void)dot_column;
        }
      } else if (IsPunct("[")) {
        int column = Cur().column;
        ++i_;
        if (IsPunct("?")) return UnsupportedAt(Cur().column, "optional index '[?'");
        SLUICE_ASSIGN_OR_RETURN(ExprPtr index, ParseExpr());
        SLUICE_RETURN_IF_ERROR(Expect("]"));
        SLUICE_ASSIGN_OR_RETURN(e, Node(ExprKind::kIndex, column, std::move(e), std::move(index)));
      } else {
        return e;
      }
    }
  }

  Status CheckName(const Token& t) {
    if (t.text == "true" || t.text == "false" || t.text == "null" || t.text == "in" ||
        IsReservedWord(t.text)) {
      return ErrorAt(t.column, "reserved word '" + t.text + "' cannot be used as a name");
    }
    return Status::Ok();
  }

  // Parses `expr, expr, ...` up to `close` (consumed); a trailing comma is allowed.
  Result<std::vector<ExprPtr>> ParseArgs(std::string_view close) {
    std::vector<ExprPtr> args;
    while (!IsPunct(close)) {
      SLUICE_ASSIGN_OR_RETURN(ExprPtr a, ParseExpr());
      args.push_back(std::move(a));
      if (IsPunct(",")) {
        ++i_;
        continue;
      }
      if (!IsPunct(close)) {
        return ErrorAt(Cur().column,
                       "expected ',' or '" + std::string(close) + "' but found " + Describe(Cur()));
      }
    }
    ++i_;
    return args;
  }

  Result<ExprPtr> ParsePrimary() {
    const Token& t = Cur();
    switch (t.kind) {
      case TokenKind::kEnd:
        return ErrorAt(t.column, "expected an expression but found end of input");
      case TokenKind::kInt: {
        if (t.number > static_cast<uint64_t>(INT64_MAX)) {
          return ErrorAt(t.column, "integer literal out of range (use the u suffix for uint)");
        }
        ++i_;
        return Literal(t.column, Value::Int(static_cast<int64_t>(t.number)));
      }
      case TokenKind::kUint:
        ++i_;
        return Literal(t.column, Value::Uint(t.number));
      case TokenKind::kDouble:
        ++i_;
        return Literal(t.column, Value::Double(t.real));
      case TokenKind::kString:
        ++i_;
        return Literal(t.column, Value::String(t.text));
      case TokenKind::kIdent:
        return ParseIdent();
      case TokenKind::kPunct:
        break;
    }
    int column = t.column;
    if (IsPunct("(")) {
      ++i_;
      SLUICE_ASSIGN_OR_RETURN(ExprPtr e, ParseExpr());
      SLUICE_RETURN_IF_ERROR(Expect(")"));
      return e;
    }
    if (IsPunct("[")) {
      ++i_;
      SLUICE_ASSIGN_OR_RETURN(std::vector<ExprPtr> items, ParseArgs("]"));
      return Node(ExprKind::kList, column, std::move(items));
    }
    if (IsPunct("{")) {
      ++i_;
      std::vector<ExprPtr> entries;
      while (!IsPunct("}")) {
        if (IsPunct("?")) return UnsupportedAt(Cur().column, "optional map entry '?'");
        SLUICE_ASSIGN_OR_RETURN(ExprPtr k, ParseExpr());
        SLUICE_RETURN_IF_ERROR(Expect(":"));
        SLUICE_ASSIGN_OR_RETURN(ExprPtr v, ParseExpr());
        entries.push_back(std::move(k));
        entries.push_back(std::move(v));
        if (IsPunct(",")) {
          ++i_;
        } else if (!IsPunct("}")) {
          return ErrorAt(Cur().column, "expected ',' or '}' but found " + Describe(Cur()));
        }
      }
      ++i_;
      return Node(ExprKind::kMap, column, std::move(entries));
    }
    if (IsPunct(".")) return UnsupportedAt(column, "leading '.' (qualified root name)");
    return ErrorAt(column, "expected an expression but found " + Describe(t));
  }

  Result<ExprPtr> Literal(int column, Value v) {
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::kLiteral;
    e->column = column;
    e->literal = std::move(v);
    return e;
  }

  Result<ExprPtr> ParseIdent() {
    const Token& t = Cur();
    if (t.text == "true" || t.text == "false") {
      ++i_;
      return Literal(t.column, Value::Bool(t.text == "true"));
    }
    if (t.text == "null") {
      ++i_;
      return Literal(t.column, Value::Null());
    }
    if (t.text == "in") return ErrorAt(t.column, "expected an expression but found 'in'");
    SLUICE_RETURN_IF_ERROR(CheckName(t));
    ++i_;
    if (IsPunct("(")) {
      ++i_;
      SLUICE_ASSIGN_OR_RETURN(std::vector<ExprPtr> args, ParseArgs(")"));
      return MakeCall(nullptr, t, std::move(args));
    }
    if (IsPunct("{")) return UnsupportedAt(t.column, "message construction '" + t.text + "{...}'");
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::kIdent;
    e->column = t.column;
    e->name = t.text;
    return e;
  }

  // Builds a call, macro or has() from `receiver.name(args)` (receiver null for a global call).
  Result<ExprPtr> MakeCall(ExprPtr receiver, const Token& name, std::vector<ExprPtr> args) {
    const std::string& fn = name.text;
    int column = name.column;
    if (!receiver && fn == "has") {
      if (args.size() != 1 || args[0]->kind != ExprKind::kSelect) {
        return ErrorAt(column,
                       "invalid argument to has() macro: expected a field selection "
                       "such as has(self.field)");
      }
      ExprPtr sel = std::move(args[0]);
      SLUICE_ASSIGN_OR_RETURN(ExprPtr e, Node(ExprKind::kHas, column, std::move(sel->args[0])));
      e->name = sel->name;
      return e;
    }
    if (receiver &&
        (fn == "all" || fn == "exists" || fn == "exists_one" || fn == "map" || fn == "filter")) {
      size_t max_args = fn == "map" ? 3 : 2;
      if (args.size() < 2 || args.size() > max_args) {
        return UnsupportedAt(column, fn + "() with " + std::to_string(args.size()) +
                                         " arguments (expected " +
                                         (fn == "map" ? "2 or 3" : std::string("2")) + ")");
      }
      if (args[0]->kind != ExprKind::kIdent) {
        return ErrorAt(args[0]->column,
                       "invalid argument to " + fn + "() macro: expected a variable name");
      }
      std::string var = args[0]->name;
      std::vector<ExprPtr> parts;
      parts.push_back(std::move(receiver));
      for (size_t k = 1; k < args.size(); ++k) parts.push_back(std::move(args[k]));
      SLUICE_ASSIGN_OR_RETURN(ExprPtr e, Node(ExprKind::kComprehension, column, std::move(parts)));
      e->name = std::move(var);
      if (fn == "all") {
        e->macro = Macro::kAll;
      } else if (fn == "exists") {
        e->macro = Macro::kExists;
      } else if (fn == "exists_one") {
        e->macro = Macro::kExistsOne;
      } else if (fn == "filter") {
        e->macro = Macro::kFilter;
      } else {
        e->macro = args.size() == 3 ? Macro::kMapFilter : Macro::kMap;
      }
      return e;
    }
    const BuiltinInfo* info = nullptr;
    for (const BuiltinInfo& b : kBuiltins) {
      if (b.name == fn) info = &b;
    }
    int want = -1;
    if (info) want = receiver ? info->receiver_args : info->global_args;
    if (!info || want < 0) {
      // A bare name before the dot that is not a variable is a namespace: math.greatest().
      if (receiver && receiver->kind == ExprKind::kIdent && receiver->name != "self" &&
          receiver->name != "oldSelf") {
        return Status::InvalidArgument("unsupported function '" + receiver->name + "." + fn +
                                       "' at column " + std::to_string(column));
      }
      if (info) {
        return Status::InvalidArgument(
            "unsupported function '" + fn + "' in " +
            (receiver ? "receiver style x." + fn + "()" : "global style " + fn + "(x)") +
            " at column " + std::to_string(column));
      }
      return Status::InvalidArgument("unsupported function '" + fn + "' at column " +
                                     std::to_string(column));
    }
    if (static_cast<int>(args.size()) != want) {
      return ErrorAt(column, "function '" + fn + "' expects " + std::to_string(want) +
                                 " argument(s) but got " + std::to_string(args.size()));
    }
    std::vector<ExprPtr> parts;
    if (receiver) parts.push_back(std::move(receiver));
    for (ExprPtr& a : args) parts.push_back(std::move(a));
    SLUICE_ASSIGN_OR_RETURN(ExprPtr e, Node(ExprKind::kCall, column, std::move(parts)));
    e->name = fn;
    e->fn = info->fn;
    e->receiver_style = receiver != nullptr;
    if (info->fn == Builtin::kMatches && e->args[1]->kind == ExprKind::kLiteral &&
        e->args[1]->literal.kind() == Value::Kind::kString) {
      Result<std::shared_ptr<const Regex>> regex =
          Regex::Compile(e->args[1]->literal.string_value());
      if (!regex.ok()) {
        return Status::InvalidArgument("invalid regular expression at column " +
                                       std::to_string(e->args[1]->column) + ": " +
                                       regex.status().message());
      }
      e->regex = *std::move(regex);
    }
    return e;
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
};

// Binds identifiers to slots and comprehension variables to fresh slots.
class Resolver {
 public:
  Status Resolve(Expr& e) {
    switch (e.kind) {
      case ExprKind::kIdent: {
        for (size_t k = scope_.size(); k-- > 0;) {
          if (scope_[k] == e.name) {
            e.slot = kFirstLocalSlot + static_cast<int>(k);
            return Status::Ok();
          }
        }
        if (e.name == "self") {
          e.slot = kSelfSlot;
        } else if (e.name == "oldSelf") {
          e.slot = kOldSelfSlot;
          uses_old_self = true;
        } else {
          return Status::InvalidArgument("undeclared reference to '" + e.name + "' at column " +
                                         std::to_string(e.column) +
                                         " (only self, oldSelf and macro variables exist)");
        }
        return Status::Ok();
      }
      case ExprKind::kComprehension: {
        SLUICE_RETURN_IF_ERROR(Resolve(*e.args[0]));
        e.slot = kFirstLocalSlot + static_cast<int>(scope_.size());
        num_slots = std::max(num_slots, e.slot + 1);
        scope_.push_back(e.name);
        Status s;
        for (size_t k = 1; k < e.args.size() && s.ok(); ++k) s = Resolve(*e.args[k]);
        scope_.pop_back();
        return s;
      }
      default:
        for (auto& a : e.args) SLUICE_RETURN_IF_ERROR(Resolve(*a));
        return Status::Ok();
    }
  }

  bool uses_old_self = false;
  int num_slots = kFirstLocalSlot;

 private:
  std::vector<std::string> scope_;
};

}  // namespace

std::string UnescapeFieldName(std::string_view name) {
  if (name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__") {
    std::string_view inner = name.substr(2, name.size() - 4);
    if (inner == "true" || inner == "false" || inner == "null" || inner == "in" ||
        IsReservedWord(inner)) {
      return std::string(inner);
    }
  }
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kEscapes = {{
      {"__underscores__", "__"},
      {"__dot__", "."},
      {"__dash__", "-"},
      {"__slash__", "/"},
  }};
  std::string out;
  size_t i = 0;
  while (i < name.size()) {
    bool replaced = false;
    if (name[i] == '_') {
      for (const auto& [from, to] : kEscapes) {
        if (name.substr(i, from.size()) == from) {
          out += to;
          i += from.size();
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) out.push_back(name[i++]);
  }
  return out;
}

Result<ParsedExpr> Parse(std::string_view text) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(text));
  Parser parser(std::move(tokens));
  SLUICE_ASSIGN_OR_RETURN(ExprPtr root, parser.ParseAll());
  Resolver resolver;
  SLUICE_RETURN_IF_ERROR(resolver.Resolve(*root));
  ParsedExpr out;
  out.root = std::move(root);
  out.uses_old_self = resolver.uses_old_self;
  out.num_slots = resolver.num_slots;
  return out;
}

}  // namespace sluice::cel

#include "workers/rollout/environments/tool_call_format.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sluice::rollout {
namespace {

using nlohmann::json;

TEST(ParseToolCallFormat, AbsentOrEmptyObjectGivesTheDefaults) {
  for (const json& input : {json(), json::object()}) {
    Result<ToolCallFormat> format = ParseToolCallFormat(input);
    ASSERT_TRUE(format.ok()) << format.status().ToString();
    EXPECT_EQ(format->call_open, "<tool>");
    EXPECT_EQ(format->call_close, "</tool>");
    EXPECT_EQ(format->answer_open, "<answer>");
    EXPECT_EQ(format->answer_close, "</answer>");
  }
}

TEST(ParseToolCallFormat, EachMarkerCanBeSetAlone) {
  Result<ToolCallFormat> format =
      ParseToolCallFormat({{"callOpen", "```calc"}, {"callClose", "```"}, {"answerClose", "$$"}});
  ASSERT_TRUE(format.ok()) << format.status().ToString();
  EXPECT_EQ(format->call_open, "```calc");
  EXPECT_EQ(format->call_close, "```");
  EXPECT_EQ(format->answer_open, "<answer>");
  EXPECT_EQ(format->answer_close, "$$");
}

TEST(ParseToolCallFormat, ErrorsNameTheField) {
  struct Case {
    json input;
    std::string field;
    std::string message_part;
  };
  const Case cases[] = {
      {json::array(), "workflow.toolCall", "object"},
      {{{"callOpen", ""}}, "workflow.toolCall.callOpen", "empty"},
      {{{"answerClose", 3}}, "workflow.toolCall.answerClose", "string"},
      {{{"callopen", "<t>"}}, "workflow.toolCall.callopen", "unknown field"},
  };
  for (const Case& c : cases) {
    Result<ToolCallFormat> format = ParseToolCallFormat(c.input);
    ASSERT_FALSE(format.ok()) << c.input.dump();
    EXPECT_EQ(format.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(format.status().field(), c.field) << c.input.dump();
    EXPECT_NE(format.status().message().find(c.message_part), std::string::npos)
        << format.status().ToString();
  }
}

TEST(FindToolCall, SplitsNameAndTrimmedArguments) {
  std::optional<ToolCall> call =
      FindToolCall({}, "Let me compute. <tool>calculator   12*(3+4)  </tool> and wait");
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->name, "calculator");
  EXPECT_EQ(call->arguments, "12*(3+4)");
}

TEST(FindToolCall, NameEndsAtAnyWhitespaceAndArgumentsKeepInnerLines) {
  std::optional<ToolCall> call = FindToolCall({}, "<tool>\npython\nx = 1\nprint(x)\n</tool>");
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->name, "python");
  EXPECT_EQ(call->arguments, "x = 1\nprint(x)");
}

TEST(FindToolCall, FirstCompleteCallCounts) {
  std::optional<ToolCall> call =
      FindToolCall({}, "<tool>calculator 1+1</tool><tool>python 2</tool>");
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->name, "calculator");
  EXPECT_EQ(call->arguments, "1+1");
}

TEST(FindToolCall, NameWithoutArguments) {
  std::optional<ToolCall> call = FindToolCall({}, "<tool> clock </tool>");
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->name, "clock");
  EXPECT_EQ(call->arguments, "");
}

TEST(FindToolCall, EmptyCallIsACallWithoutAName) {
  std::optional<ToolCall> call = FindToolCall({}, "<tool>  </tool>");
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->name, "");
  EXPECT_EQ(call->arguments, "");
}

TEST(FindToolCall, IncompleteOrMissingMarkersAreNoCall) {
  EXPECT_FALSE(FindToolCall({}, "The answer is <answer>4</answer>").has_value());
  EXPECT_FALSE(FindToolCall({}, "<tool>calculator 1+1").has_value());  // Cut off by max tokens.
  EXPECT_FALSE(FindToolCall({}, "calculator 1+1</tool>").has_value());
  EXPECT_FALSE(FindToolCall({}, "</tool>calculator 1+1<tool>").has_value());
  EXPECT_FALSE(FindToolCall({}, "").has_value());
}

TEST(FindToolCall, CustomMarkers) {
  ToolCallFormat format;
  format.call_open = "[[";
  format.call_close = "]]";
  std::optional<ToolCall> call = FindToolCall(format, "ok [[calculator 2^10]] <tool>x</tool>");
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->name, "calculator");
  EXPECT_EQ(call->arguments, "2^10");
  EXPECT_FALSE(FindToolCall(format, "<tool>calculator 1</tool>").has_value());
}

TEST(ExtractFinalAnswer, TextBetweenTheAnswerMarkersTrimmed) {
  EXPECT_EQ(ExtractFinalAnswer({}, "So it is <answer> 84 \n</answer>. Done."), "84");
  EXPECT_EQ(ExtractFinalAnswer({}, "<answer>1</answer> or <answer>2</answer>"), "1");
  EXPECT_EQ(ExtractFinalAnswer({}, "<answer></answer>"), "");
}

TEST(ExtractFinalAnswer, WholeTurnTrimmedWithoutACompletePair) {
  EXPECT_EQ(ExtractFinalAnswer({}, "  The answer is 84.\n"), "The answer is 84.");
  EXPECT_EQ(ExtractFinalAnswer({}, "<answer>84"), "<answer>84");
  EXPECT_EQ(ExtractFinalAnswer({}, "84</answer>"), "84</answer>");
  EXPECT_EQ(ExtractFinalAnswer({}, " \t\n"), "");
}

TEST(ExtractFinalAnswer, CustomMarkers) {
  ToolCallFormat format;
  format.answer_open = "\\boxed{";
  format.answer_close = "}";
  EXPECT_EQ(ExtractFinalAnswer(format, "Thus \\boxed{42}."), "42");
}

TEST(FormatToolCallAndFinalAnswer, ReadBackAsWritten) {
  EXPECT_EQ(FormatToolCall({}, "calculator", "6*7"), "<tool>calculator 6*7</tool>");
  EXPECT_EQ(FormatFinalAnswer({}, "42"), "<answer>42</answer>");
  const ToolCallFormat custom{"[[", "]]", "\\boxed{", "}"};
  EXPECT_EQ(FormatToolCall(custom, "calculator", "(1 + 2) * 3"), "[[calculator (1 + 2) * 3]]");
  EXPECT_EQ(FormatFinalAnswer(custom, "9"), "\\boxed{9}");
  for (const ToolCallFormat& format : {ToolCallFormat{}, custom}) {
    const std::optional<ToolCall> call =
        FindToolCall(format, FormatToolCall(format, "calculator", "(1 + 2) * 3"));
    ASSERT_TRUE(call.has_value());
    EXPECT_EQ(call->name, "calculator");
    EXPECT_EQ(call->arguments, "(1 + 2) * 3");
    EXPECT_EQ(ExtractFinalAnswer(format, FormatFinalAnswer(format, "-12")), "-12");
    EXPECT_FALSE(FindToolCall(format, FormatFinalAnswer(format, "-12")).has_value());
  }
}

}  // namespace
}  // namespace sluice::rollout

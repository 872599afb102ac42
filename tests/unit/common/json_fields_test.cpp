#include <gtest/gtest.h>

#include "common/json/fields.h"

namespace sluice {
namespace json_fields_test {

using nlohmann::json;

const json kDoc = json::parse(R"({
  "name": "train", "count": 3, "ratio": 0.5, "digits": "7", "on": true, "off": false,
  "spec": {"replicas": 2, "labels": {"sluice.dev/rank": "1"}}, "items": [1, 2],
  "nothing": null
})");

TEST(JsonFieldsTest, StringFieldReadsOnlyStrings) {
  struct Case {
    json obj;
    std::string key;
    std::string fallback;
    std::string want;
  };
  const Case cases[] = {
      {kDoc, "name", "", "train"},
      {kDoc, "missing", "", ""},
      {kDoc, "missing", "dflt", "dflt"},
      {kDoc, "count", "x", "x"},
      {kDoc, "nothing", "x", "x"},
      {kDoc, "spec", "x", "x"},
      {json::array({"name"}), "name", "x", "x"},
      {json("name"), "name", "x", "x"},
      {json(), "name", "x", "x"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(StringField(c.obj, c.key, c.fallback), c.want) << c.obj.dump() << " " << c.key;
  }
}

TEST(JsonFieldsTest, IntFieldReadsOnlyIntegers) {
  EXPECT_EQ(IntField(kDoc, "count"), 3);
  EXPECT_EQ(IntField(kDoc, "ratio", -1), -1);   // a fraction is no integer
  EXPECT_EQ(IntField(kDoc, "digits", -1), -1);  // nor a string of digits
  EXPECT_EQ(IntField(kDoc, "on", -1), -1);      // nor a bool
  EXPECT_EQ(IntField(kDoc, "missing", 9), 9);
  EXPECT_EQ(IntField(json::array(), "count", 9), 9);
  EXPECT_EQ(OptionalIntField(kDoc, "count"), 3);
  EXPECT_EQ(OptionalIntField(kDoc, "ratio"), std::nullopt);
  EXPECT_EQ(OptionalIntField(json(), "count"), std::nullopt);
}

TEST(JsonFieldsTest, NumberReadersTakeIntegersAndFractions) {
  EXPECT_EQ(NumberField(kDoc, "ratio"), 0.5);
  EXPECT_EQ(NumberField(kDoc, "count"), 3.0);
  EXPECT_EQ(NumberField(kDoc, "digits", -1), -1);
  EXPECT_EQ(NumberField(kDoc, "on", -1), -1);
  EXPECT_EQ(OptionalNumberField(kDoc, "missing"), std::nullopt);
  EXPECT_EQ(NumberAt(kDoc, "/spec/replicas"), 2.0);
  EXPECT_EQ(OptionalNumberAt(kDoc, "/items/0"), 1.0);
  EXPECT_EQ(OptionalNumberAt(kDoc, "/name"), std::nullopt);
}

TEST(JsonFieldsTest, BoolFieldReadsOnlyBools) {
  EXPECT_TRUE(BoolField(kDoc, "on"));
  EXPECT_FALSE(BoolField(kDoc, "off", true));
  EXPECT_FALSE(BoolField(kDoc, "count"));
  EXPECT_TRUE(BoolField(kDoc, "name", true));
  EXPECT_TRUE(BoolField(json(42), "on", true));
}

TEST(JsonFieldsTest, AnyReadersTakeEveryTypeAndNullForMissing) {
  EXPECT_EQ(&AnyField(kDoc, "items"), &kDoc["items"]);
  EXPECT_EQ(AnyField(kDoc, "count"), 3);
  EXPECT_TRUE(AnyField(kDoc, "missing").is_null());
  const json array = json::array({1});
  EXPECT_TRUE(AnyField(array, "0").is_null());
  EXPECT_EQ(AnyAt(kDoc, "/spec/replicas"), 2);
  EXPECT_TRUE(AnyAt(kDoc, "/spec/missing/deeper").is_null());
  EXPECT_EQ(StringValue(json("x")), "x");
  EXPECT_EQ(StringValue(json(1), "f"), "f");
}

TEST(JsonFieldsTest, ObjectAndArrayFieldsFallBackToEmptyValues) {
  EXPECT_EQ(ObjectField(kDoc, "spec").value("replicas", 0), 2);
  EXPECT_TRUE(ObjectField(kDoc, "items").is_null());
  const json number = 1;
  EXPECT_TRUE(ObjectField(number, "spec").is_null());
  EXPECT_EQ(ArrayField(kDoc, "items").size(), 2u);
  EXPECT_TRUE(ArrayField(kDoc, "spec").is_array());
  EXPECT_TRUE(ArrayField(kDoc, "spec").empty());
  const json null;
  EXPECT_TRUE(ArrayField(null, "items").empty());
  // The reference points into the document.
  EXPECT_EQ(&ArrayField(kDoc, "items"), &kDoc["items"]);
  // ArrayValue: the same for a value already in hand.
  EXPECT_EQ(&ArrayValue(kDoc["items"]), &kDoc["items"]);
  EXPECT_TRUE(ArrayValue(null).is_array());
  EXPECT_TRUE(ArrayValue(number).empty());
  EXPECT_TRUE(ArrayValue(kDoc["spec"]).empty());
}

TEST(JsonFieldsTest, PointerReadersFollowEveryStep) {
  struct Case {
    std::string pointer;
    std::string want_string;
    int64_t want_int;
  };
  const Case cases[] = {
      {"/name", "train", -1},
      {"/count", "-", 3},
      {"/spec/replicas", "-", 2},
      {"/spec/labels/sluice.dev~1rank", "1", -1},  // ~1 escapes the slash
      {"/spec/missing", "-", -1},
      {"/name/deeper", "-", -1},  // through a string
      {"/items/1", "-", 2},       // an array index
      {"/items/9", "-", -1},
      {"/nothing/x", "-", -1},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(StringAt(kDoc, c.pointer, "-"), c.want_string) << c.pointer;
    EXPECT_EQ(IntAt(kDoc, c.pointer, -1), c.want_int) << c.pointer;
  }
  EXPECT_EQ(ValueAt(kDoc, "/spec/labels"), &kDoc["spec"]["labels"]);
  EXPECT_EQ(ValueAt(kDoc, "/nothing"), &kDoc["nothing"]);  // present, though null
  EXPECT_EQ(ValueAt(kDoc, "/spec/none"), nullptr);
  EXPECT_EQ(OptionalIntAt(kDoc, "/spec/replicas"), 2);
  EXPECT_EQ(OptionalIntAt(kDoc, "/spec/labels"), std::nullopt);
  EXPECT_TRUE(BoolAt(kDoc, "/on"));
  EXPECT_TRUE(BoolAt(kDoc, "/spec/on", true));
  EXPECT_EQ(ObjectAt(kDoc, "/spec/labels").size(), 1u);
  EXPECT_TRUE(ObjectAt(kDoc, "/items").is_null());
  EXPECT_EQ(ArrayAt(kDoc, "/items").size(), 2u);
  EXPECT_TRUE(ArrayAt(kDoc, "/spec/labels").empty());
  EXPECT_EQ(StringAt(json(), "/a/b", "x"), "x");
  EXPECT_EQ(StringAt(json(3), "/a", "x"), "x");
}

// A reader that returns a reference takes a document that outlives the call, not a temporary.
template <typename T>
concept ArrayAtTakes = requires(T&& doc) {
  ArrayAt(std::forward<T>(doc), "/a");
};
template <typename T>
concept AnyFieldTakes = requires(T&& doc) {
  AnyField(std::forward<T>(doc), "a");
};
static_assert(ArrayAtTakes<const json&> && ArrayAtTakes<json&>);
static_assert(!ArrayAtTakes<json>);
static_assert(AnyFieldTakes<const json&> && !AnyFieldTakes<json>);

TEST(JsonFieldsTest, AMalformedPointerIsABug) {
  EXPECT_THROW(StringAt(kDoc, "name"), nlohmann::json::parse_error);
}

}  // namespace json_fields_test
}  // namespace sluice

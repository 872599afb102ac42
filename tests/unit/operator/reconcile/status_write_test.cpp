// WriteStatusIfChanged (operator/controllers/status_write.h) against a real API server: no write
// when nothing changed, a conditional write refused from a stale read, the last writer winning
// without the precondition, and a deleted object counting as written.
#include "operator/controllers/status_write.h"

#include "tests/unit/operator/reconcile/reconcile_harness.h"

namespace sluice::op::reconcile_testing {
namespace status_write_test {

using controllers::StatusPrecondition;
using controllers::WriteStatusIfChanged;

const kube::GroupVersionResource kPolicies{"sluice.dev", "v1alpha1", "policies", true};

class StatusWriteTest : public ReconcileTest {
 protected:
  std::string Rv(const json& o) { return o.value("/metadata/resourceVersion"_json_pointer, ""); }
  int64_t Version() {
    return Get(kPolicies, "tiny").value("/status/version"_json_pointer, int64_t{-1});
  }
};

TEST_F(StatusWriteTest, WritesOnlyChangesAndRefusesAStaleConditionalWrite) {
  const json read = Get(kPolicies, "tiny");
  ASSERT_TRUE(read.is_object());
  // Unchanged: nothing is written.
  ASSERT_TRUE(
      WriteStatusIfChanged(*dynamic_, kPolicies, read, read.value("status", json::object())).ok());
  EXPECT_EQ(Rv(Get(kPolicies, "tiny")), Rv(read));

  // Changed, from a fresh read: written, with or without the precondition.
  ASSERT_TRUE(WriteStatusIfChanged(*dynamic_, kPolicies, read, {{"version", 3}},
                                   StatusPrecondition::kUnchangedSinceRead)
                  .ok());
  EXPECT_EQ(Version(), 3);

  // From the read before that write: refused with the precondition, nothing lost...
  const Status stale = WriteStatusIfChanged(*dynamic_, kPolicies, read, {{"version", 4}},
                                            StatusPrecondition::kUnchangedSinceRead);
  EXPECT_EQ(stale.code(), StatusCode::kConflict) << stale.ToString();
  EXPECT_EQ(Version(), 3);
  // ...and the last writer wins without it.
  ASSERT_TRUE(WriteStatusIfChanged(*dynamic_, kPolicies, read, {{"version", 4}}).ok());
  EXPECT_EQ(Version(), 4);

  // A deleted object has no status left to keep.
  ASSERT_TRUE(Client(kPolicies).Delete("tiny").ok());
  EXPECT_TRUE(WriteStatusIfChanged(*dynamic_, kPolicies, read, {{"version", 5}},
                                   StatusPrecondition::kUnchangedSinceRead)
                  .ok());
}

}  // namespace status_write_test
}  // namespace sluice::op::reconcile_testing

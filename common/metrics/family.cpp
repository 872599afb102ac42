#include "common/metrics/family.h"

#include <cstdio>

#include "common/check.h"

namespace sluice::metrics {

FamilySnapshot FamilyBase::EmptySnapshot() const {
  FamilySnapshot snapshot;
  snapshot.name = name_;
  snapshot.help = help_;
  snapshot.type = type_;
  snapshot.label_names = label_names_;
  return snapshot;
}

void FamilyBase::CheckLabelCount(size_t label_value_count) const {
  if (label_value_count == label_names_.size()) return;
  // SLUICE_CHECK alone would not say which metric was misused.
  std::fprintf(stderr, "metric %s: %zu label values given for %zu label names\n", name_.c_str(),
               label_value_count, label_names_.size());
  SLUICE_CHECK(label_value_count == label_names_.size());
}

}  // namespace sluice::metrics

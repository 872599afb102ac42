// Test helper: one series' value as a scrape of a metrics::Registry would show it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/metrics/registry.h"

namespace sluice::test_support {

// The value of family `name`'s child with `labels` at a scrape; nullopt when it is not exported.
inline std::optional<double> Scraped(const metrics::Registry& registry, const std::string& name,
                                     const std::vector<std::string>& labels) {
  for (const metrics::FamilySnapshot& f : registry.Collect()) {
    if (f.name != name) continue;
    for (const metrics::ChildSnapshot& c : f.children) {
      if (c.label_values == labels) return c.value;
    }
  }
  return std::nullopt;
}

}  // namespace sluice::test_support

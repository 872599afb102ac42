// Family: one metric name with its help text and label names, and a child metric per set of
// label values: `requests.WithLabels({"GET", "200"}).Inc();`.
//
// Families are created and owned by a Registry (registry.h) and live as long as it does. A
// family owns its children; a child, once created by WithLabels, is never removed, so the
// reference stays valid for the Registry's lifetime and hot paths should look it up once and
// keep it (WithLabels itself takes a lock and a map lookup). A family without labels has its
// single child created up front, so it is exported as 0 before its first update.
//
// Thread safety: every method may be called from any thread; children may be updated while the
// family is being collected.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/metrics/counter.h"
#include "common/metrics/gauge.h"
#include "common/metrics/histogram.h"
#include "common/metrics/snapshot.h"

namespace sluice::metrics {

// What the Registry needs from every kind of family, including callback families.
class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, MetricType type,
             std::vector<std::string> label_names)
      : name_(std::move(name)),
        help_(std::move(help)),
        type_(type),
        label_names_(std::move(label_names)) {}
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

  // Every child's current value, children sorted by label values.
  virtual FamilySnapshot Collect() const = 0;

 protected:
  // A snapshot with this family's metadata and no children.
  FamilySnapshot EmptySnapshot() const;
  // A wrong number of label values is a programming error: prints the family and aborts.
  void CheckLabelCount(size_t label_value_count) const;

 private:
  const std::string name_;
  const std::string help_;
  const MetricType type_;
  const std::vector<std::string> label_names_;
};

namespace internal {
inline void SnapshotChild(const Counter& c, ChildSnapshot& out) { out.value = c.Value(); }
inline void SnapshotChild(const Gauge& g, ChildSnapshot& out) { out.value = g.Value(); }
inline void SnapshotChild(const Histogram& h, ChildSnapshot& out) { out.histogram = h.Snapshot(); }
}  // namespace internal

template <typename Child>
class Family final : public FamilyBase {
 public:
  // Makes a new child; histograms need their bucket bounds, which the Registry captures here.
  using ChildFactory = std::function<std::unique_ptr<Child>()>;

  // Called by the Registry, which has validated the names.
  Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
         ChildFactory make_child)
      : FamilyBase(std::move(name), std::move(help), type, std::move(label_names)),
        make_child_(std::move(make_child)) {
    if (FamilyBase::label_names().empty())
      children_.emplace(std::vector<std::string>{}, make_child_());
  }

  // The child for `label_values`, one per label name in the same order (checked), created on
  // first use. Label values may be any string; the exposition escapes them.
  Child& WithLabels(const std::vector<std::string>& label_values) {
    CheckLabelCount(label_values.size());
    std::lock_guard<std::mutex> lock(mu_);
    auto it = children_.find(label_values);
    if (it == children_.end()) it = children_.emplace(label_values, make_child_()).first;
    return *it->second;
  }

  FamilySnapshot Collect() const override {
    FamilySnapshot snapshot = EmptySnapshot();
    std::lock_guard<std::mutex> lock(mu_);
    snapshot.children.reserve(children_.size());
    for (const auto& [label_values, child] : children_) {
      ChildSnapshot& out = snapshot.children.emplace_back();
      out.label_values = label_values;
      internal::SnapshotChild(*child, out);
    }
    return snapshot;
  }

 private:
  const ChildFactory make_child_;
  // Guards the map only; children are atomics updated without it.
  mutable std::mutex mu_;
  // Children are made by the factory and hold atomics, which cannot move: hence unique_ptr.
  std::map<std::vector<std::string>, std::unique_ptr<Child>> children_;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

}  // namespace sluice::metrics

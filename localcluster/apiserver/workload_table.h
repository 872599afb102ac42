// Table output for apps/v1 Deployments and ReplicaSets, as kube-apiserver prints them:
//   deployments: Name, Ready ("ready/desired"), Up-to-date, Available, Age; wide: Containers,
//                Images, Selector;
//   replicasets: Name, Desired, Current, Ready, Age; wide: Containers, Images, Selector.
// builtin_table.cpp serves them with the other built-in printers. WorkloadPrinters() also carries
// the printers of other kinds kept in files of their own (NetworkPolicies: network_policy_table.h),
// so builtin_table.cpp has one hook for all of them.
//
// Thread safety: pure functions; `now` is passed in.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "localcluster/apiserver/table.h"

namespace sluice::apiserver {

struct WorkloadPrinter {
  std::vector<PrinterColumn> columns;
  nlohmann::json (*row)(const nlohmann::json& object, Clock::WallTime now);  // {"cells": [...]}.
};

// By "<group>/<plural>": "apps/deployments", "apps/replicasets",
// "networking.k8s.io/networkpolicies".
const std::map<std::string, WorkloadPrinter>& WorkloadPrinters();

// A metav1.LabelSelector as kubectl prints it: "app=web,tier in (a,b),!x"; "<none>" when empty.
std::string FormatLabelSelector(const nlohmann::json& selector);

}  // namespace sluice::apiserver

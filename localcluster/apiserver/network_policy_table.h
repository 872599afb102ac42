// Table output for networking.k8s.io/v1 NetworkPolicies, as kube-apiserver prints them: Name,
// Pod-Selector (spec.podSelector as kubectl prints a label selector, "<none>" when it is empty,
// i.e. selects every pod of the namespace), Age. No -o wide columns, as in kube.
// WorkloadPrinters() (workload_table.h) carries it, so builtin_table.cpp serves it with the other
// built-in printers.
//
// Thread safety: pure functions; `now` is passed in.
#pragma once

#include "localcluster/apiserver/workload_table.h"

namespace sluice::apiserver {

// The printer of "networking.k8s.io/networkpolicies".
WorkloadPrinter NetworkPolicyPrinter();

}  // namespace sluice::apiserver

// ParseWatchNamespaces: the operator's --namespace value as the namespaces its informers watch.
//
//   ""          -> {""}: every namespace (one cluster-wide list and watch per kind)
//   "a"         -> {"a"}
//   "a, b,a"    -> {"a", "b"}: one reflector per namespace, in first-seen order, duplicates and
//                  spaces around names dropped
//
// Each name must be a DNS-1123 label (what Kubernetes accepts as a namespace name: at most 63
// characters of [a-z0-9-], starting and ending with a letter or digit); an empty element
// ("a,,b") or a bad name is InvalidArgument naming it.
//
// Thread safety: a pure function.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::kube {

Result<std::vector<std::string>> ParseWatchNamespaces(std::string_view flag);

}  // namespace sluice::kube

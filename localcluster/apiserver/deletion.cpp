#include "localcluster/apiserver/deletion.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <utility>
#include <vector>

#include "common/go_quote.h"
#include "common/json/fields.h"
#include "common/time_format.h"
#include "localcluster/apiserver/json_fields.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

constexpr int64_t kDefaultPodGraceSeconds = 30;  // corev1.DefaultTerminationGracePeriodSeconds.

bool IsCore(const ResourceInfo& info, std::string_view plural) {
  return info.group.empty() && info.plural == plural;
}

// The object's metadata, created when missing (callers have checked that object is an object).
json& MutableMetadata(json& object) {
  json& meta = object["metadata"];
  if (!meta.is_object()) meta = json::object();
  return meta;
}

void SetFinalizers(json& object, const std::vector<std::string>& finalizers) {
  json& meta = MutableMetadata(object);
  if (finalizers.empty()) {
    meta.erase("finalizers");
  } else {
    meta["finalizers"] = finalizers;
  }
}

void BumpGeneration(json& object) {
  json& meta = MutableMetadata(object);
  auto it = meta.find("generation");
  if (it != meta.end() && it->is_number_integer() && it->get<int64_t>() > 0) {
    *it = it->get<int64_t>() + 1;
  }
}

// kube's shouldOrphanDependents / shouldDeleteDependents for the generic store.
bool ShouldOrphan(const DeleteOptions& options, const std::vector<std::string>& finalizers) {
  if (options.orphan_dependents) return *options.orphan_dependents;
  if (options.propagation) return *options.propagation == Propagation::kOrphan;
  for (const std::string& f : finalizers) {
    if (f == kOrphanFinalizer) return true;
    if (f == kForegroundFinalizer) return false;
  }
  return false;  // The default policy is Background.
}

bool ShouldForeground(const DeleteOptions& options, const std::vector<std::string>& finalizers) {
  if (options.orphan_dependents) return false;
  if (options.propagation) return *options.propagation == Propagation::kForeground;
  return ContainsString(finalizers, kForegroundFinalizer);
}

// Removes the two propagation finalizers, then adds back the wanted ones; returns the old list
// when the set is unchanged (kube compares sets).
std::vector<std::string> WithPropagationFinalizers(const std::vector<std::string>& old, bool orphan,
                                                   bool foreground) {
  std::vector<std::string> updated;
  for (const std::string& f : old) {
    if (f != kOrphanFinalizer && f != kForegroundFinalizer) updated.push_back(f);
  }
  if (orphan) updated.emplace_back(kOrphanFinalizer);
  if (foreground) updated.emplace_back(kForegroundFinalizer);
  std::vector<std::string> a = old, b = updated;
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  return a == b ? old : updated;
}

Status PreconditionFailed(const ResourceInfo& info, const ObjectKey& key, std::string_view what,
                          std::string_view want, std::string_view have) {
  return Status::Conflict("Operation cannot be fulfilled on " + info.StorageResource() + " \"" +
                          key.name + "\": Precondition failed: " + std::string(what) +
                          " in precondition: " + std::string(want) + ", " + std::string(what) +
                          " in object meta: " + std::string(have));
}

Status CheckPreconditions(const ResourceInfo& info, const ObjectKey& key, const json& current,
                          const std::string& uid, const DeleteOptions& options) {
  const std::string have_uid = StringAt(current, "/metadata/uid");
  if (uid != have_uid) return PreconditionFailed(info, key, "UID", uid, have_uid);
  if (options.precondition_resource_version) {
    const std::string have_rv = StringAt(current, "/metadata/resourceVersion");
    if (*options.precondition_resource_version != have_rv) {
      return PreconditionFailed(info, key, "ResourceVersion",
                                *options.precondition_resource_version, have_rv);
    }
  }
  return Status::Ok();
}

enum class Action {
  kPending,    // Already being deleted: nothing to write; answer with the current object.
  kUpdate,     // Write `object` (marked for deletion) and keep it in storage.
  kDeleteNow,  // Remove from storage.
};

struct Decision {
  Action action = Action::kPending;
  json object;  // For kUpdate.
};

// kube's markAsDeleting: deletion with a zero grace period for an object kept by finalizers.
void MarkAsDeleting(json& object, Clock::WallTime now) {
  json& meta = MutableMetadata(object);
  const std::string existing = StringAt(object, "/metadata/deletionTimestamp");
  if (existing.empty()) BumpGeneration(object);
  const std::optional<Clock::WallTime> at = TryParseTime(existing);
  if (existing.empty() || !at || *at > now) meta["deletionTimestamp"] = FormatTime(now);
  meta["deletionGracePeriodSeconds"] = 0;
}

// The generic store's decision (kube's BeforeDelete plus updateForGracefulDeletionAndFinalizers).
Decision DecideGeneric(const ResourceInfo& info, const json& current, const DeleteOptions& options,
                       Clock::WallTime now) {
  json object = current;
  std::optional<int64_t> requested = options.grace_period_seconds;
  if (requested && *requested < 0) requested = 1;

  bool graceful = false;
  int64_t grace = 0;
  const std::string timestamp = StringAt(object, "/metadata/deletionTimestamp");
  if (!timestamp.empty()) {
    const std::optional<int64_t> running =
        OptionalIntAt(object, "/metadata/deletionGracePeriodSeconds");
    if (running && *running != 0) {
      // A graceful deletion is running: a request may only shorten it.
      if (!requested || *requested >= *running) return {Action::kPending, {}};
      const std::optional<Clock::WallTime> at = TryParseTime(timestamp);
      const Clock::WallTime start = at ? *at - std::chrono::seconds(*running) : now;
      json& meta = MutableMetadata(object);
      meta["deletionTimestamp"] = FormatTime(start + std::chrono::seconds(*requested));
      meta["deletionGracePeriodSeconds"] = *requested;
      graceful = true;
      grace = *requested;
    }
  } else if (IsCore(info, "pods")) {
    int64_t period = kDefaultPodGraceSeconds;
    if (requested) {
      period = *requested;
    } else if (std::optional<int64_t> spec =
                   OptionalIntAt(object, "/spec/terminationGracePeriodSeconds")) {
      period = *spec;
    }
    const std::string phase = StringAt(object, "/status/phase");
    if (StringAt(object, "/spec/nodeName").empty() || phase == "Failed" || phase == "Succeeded") {
      period = 0;
    }
    if (period < 0) period = 1;
    json& meta = MutableMetadata(object);
    meta["deletionTimestamp"] = FormatTime(now + std::chrono::seconds(period));
    meta["deletionGracePeriodSeconds"] = period;
    BumpGeneration(object);
    graceful = true;
    grace = period;
  }

  const std::vector<std::string> old = StringsAt(object, "metadata", "finalizers");
  const std::vector<std::string> finalizers =
      WithPropagationFinalizers(old, ShouldOrphan(options, old), ShouldForeground(options, old));
  if (finalizers != old) SetFinalizers(object, finalizers);
  const bool pending_finalizers = !finalizers.empty();

  if (!graceful) {
    if (!pending_finalizers) return {Action::kDeleteNow, {}};
    MarkAsDeleting(object, now);
    return {Action::kUpdate, std::move(object)};
  }
  if (pending_finalizers || grace > 0) return {Action::kUpdate, std::move(object)};
  return {Action::kDeleteNow, {}};
}

// Namespaces (kube's namespace REST Delete): the first DELETE only starts termination; later
// ones change nothing until spec.finalizers is empty, then act as the generic store.
Decision DecideNamespace(const ResourceInfo& info, const json& current,
                         const DeleteOptions& options, Clock::WallTime now) {
  if (StringAt(current, "/metadata/deletionTimestamp").empty()) {
    json object = current;
    MutableMetadata(object)["deletionTimestamp"] = FormatTime(now);
    json& status = object["status"];
    if (!status.is_object()) status = json::object();
    status["phase"] = "Terminating";
    const std::vector<std::string> old = StringsAt(object, "metadata", "finalizers");
    bool orphan = ContainsString(old, kOrphanFinalizer);
    bool foreground = ContainsString(old, kForegroundFinalizer);
    if (options.orphan_dependents) {
      orphan = *options.orphan_dependents;
      foreground = !*options.orphan_dependents;
    } else if (options.propagation) {
      orphan = *options.propagation == Propagation::kOrphan;
      foreground = *options.propagation == Propagation::kForeground;
    }
    const std::vector<std::string> finalizers = WithPropagationFinalizers(old, orphan, foreground);
    if (finalizers != old) SetFinalizers(object, finalizers);
    return {Action::kUpdate, std::move(object)};
  }
  if (!StringsAt(current, "spec", "finalizers").empty()) return {Action::kPending, {}};
  return DecideGeneric(info, current, options, now);
}

bool IsNamespaceObject(const ObjectKey& key, const json& object) {
  if (key.resource == "core/namespaces" || key.resource == "namespaces") return true;
  return object.is_object() && object.value("kind", "") == "Namespace" &&
         object.value("apiVersion", "") == "v1";
}

bool ReadyToRemove(const ObjectKey& key, const json& object) {
  if (StringAt(object, "/metadata/deletionTimestamp").empty()) return false;
  const std::optional<int64_t> grace =
      OptionalIntAt(object, "/metadata/deletionGracePeriodSeconds");
  if (!grace || *grace != 0) return false;
  if (!StringsAt(object, "metadata", "finalizers").empty()) return false;
  if (IsNamespaceObject(key, object) && !StringsAt(object, "spec", "finalizers").empty()) {
    return false;
  }
  return true;
}

// --- DeleteOptions parsing ---

constexpr std::string_view kInvalidPrefix = "DeleteOptions.meta.k8s.io \"\" is invalid: ";

Status InvalidType(std::string field, std::string_view want) {
  return Status::InvalidArgument(field + " must be " + std::string(want), field);
}

Result<Propagation> ParsePropagation(const std::string& value) {
  if (value == "Foreground") return Propagation::kForeground;
  if (value == "Background") return Propagation::kBackground;
  if (value == "Orphan") return Propagation::kOrphan;
  return Status::Unprocessable(std::string(kInvalidPrefix) +
                                   "propagationPolicy: Unsupported value: " + GoQuote(value) +
                                   ": supported values: \"Foreground\", \"Background\", "
                                   "\"Orphan\", \"nil\"",
                               "propagationPolicy");
}

Status ValidateDryRun(const std::vector<std::string>& values) {
  for (const std::string& v : values) {
    if (v == "All") continue;
    std::string list;
    for (const std::string& item : values) list += (list.empty() ? "" : ", ") + GoQuote(item);
    return Status::Unprocessable(std::string(kInvalidPrefix) +
                                     "dryRun: Unsupported value: []string{" + list +
                                     "}: supported values: \"All\"",
                                 "dryRun");
  }
  return Status::Ok();
}

Result<int64_t> ParseInt64(const std::string& field, const std::string& text) {
  const std::string error = field + " must be an integer: " + GoQuote(text);
  if (text.empty()) return Status::InvalidArgument(error, field);
  size_t i = (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (i == text.size()) return Status::InvalidArgument(error, field);
  int64_t value = 0;
  const bool negative = text[0] == '-';
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return Status::InvalidArgument(error, field);
    const int digit = text[i] - '0';
    if (value > (INT64_MAX - digit) / 10) return Status::InvalidArgument(error, field);
    value = value * 10 + digit;
  }
  return negative ? -value : value;
}

Result<bool> ParseBool(const std::string& field, const std::string& text) {
  // Go's strconv.ParseBool, which kube's query decoding uses.
  for (const char* t : {"1", "t", "T", "true", "TRUE", "True"}) {
    if (text == t) return true;
  }
  for (const char* f : {"0", "f", "F", "false", "FALSE", "False"}) {
    if (text == f) return false;
  }
  return Status::InvalidArgument(field + " must be true or false: " + GoQuote(text), field);
}

// The optional string member `name` of `object` (null counts as absent).
Result<std::optional<std::string>> OptionalString(const json& object, const char* name,
                                                  const std::string& field) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) return InvalidType(field, "a string");
  return std::optional<std::string>(it->get<std::string>());
}

// What the body and the query share once read: the policy against orphanDependents, the
// propagation, dryRun.
Result<DeleteOptions> Finish(DeleteOptions options, const std::optional<std::string>& policy,
                             const std::vector<std::string>& dry_run) {
  if (policy && options.orphan_dependents) {
    return Status::Unprocessable(
        std::string(kInvalidPrefix) + "propagationPolicy: Invalid value: " + GoQuote(*policy) +
            ": orphanDependents and deletionPropagation cannot be both set",
        "propagationPolicy");
  }
  if (policy) {
    SLUICE_ASSIGN_OR_RETURN(options.propagation, ParsePropagation(*policy));
  }
  SLUICE_RETURN_IF_ERROR(ValidateDryRun(dry_run));
  options.dry_run = !dry_run.empty();
  return options;
}

Result<DeleteOptions> FromBody(const json& body) {
  if (!body.is_object()) {
    return Status::InvalidArgument("DeleteOptions must be a JSON object", "body");
  }
  DeleteOptions options;
  if (auto kind = body.find("kind"); kind != body.end() && !kind->is_null()) {
    if (!kind->is_string() || kind->get<std::string>() != "DeleteOptions") {
      return Status::InvalidArgument("decoded object cannot be converted to DeleteOptions", "kind");
    }
  }
  if (auto it = body.find("gracePeriodSeconds"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || (it->is_number_unsigned() && it->get<uint64_t>() > INT64_MAX)) {
      return InvalidType("gracePeriodSeconds", "an integer");
    }
    options.grace_period_seconds = it->get<int64_t>();
  }
  if (auto it = body.find("preconditions"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return InvalidType("preconditions", "an object");
    SLUICE_ASSIGN_OR_RETURN(options.precondition_uid,
                            OptionalString(*it, "uid", "preconditions.uid"));
    SLUICE_ASSIGN_OR_RETURN(
        options.precondition_resource_version,
        OptionalString(*it, "resourceVersion", "preconditions.resourceVersion"));
  }
  SLUICE_ASSIGN_OR_RETURN(std::optional<std::string> policy,
                          OptionalString(body, "propagationPolicy", "propagationPolicy"));
  if (auto it = body.find("orphanDependents"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return InvalidType("orphanDependents", "a boolean");
    options.orphan_dependents = it->get<bool>();
  }
  std::vector<std::string> dry_run;
  if (auto it = body.find("dryRun"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return InvalidType("dryRun", "an array of strings");
    for (const json& item : *it) {
      if (!item.is_string()) return InvalidType("dryRun", "an array of strings");
      dry_run.push_back(item.get<std::string>());
    }
  }
  return Finish(std::move(options), policy, dry_run);
}

Result<DeleteOptions> FromQuery(const QueryParams& query) {
  DeleteOptions options;
  std::optional<std::string> policy;
  std::vector<std::string> dry_run;
  // Repeated scalar parameters: the first value counts, as Go's url.Values.Get.
  for (const auto& [name, value] : query) {
    if (name == "propagationPolicy") {
      if (!policy) policy = value;
    } else if (name == "gracePeriodSeconds") {
      if (!options.grace_period_seconds) {
        SLUICE_ASSIGN_OR_RETURN(options.grace_period_seconds,
                                ParseInt64("gracePeriodSeconds", value));
      }
    } else if (name == "orphanDependents") {
      if (!options.orphan_dependents) {
        SLUICE_ASSIGN_OR_RETURN(options.orphan_dependents, ParseBool("orphanDependents", value));
      }
    } else if (name == "dryRun") {
      dry_run.push_back(value);
    }
  }
  return Finish(std::move(options), policy, dry_run);
}

}  // namespace

Result<DeleteOptions> ParseDeleteOptions(const nlohmann::json* body, const QueryParams& query) {
  if (body != nullptr && !body->is_null()) return FromBody(*body);
  return FromQuery(query);
}

Result<DeleteOutcome> DeleteObject(Storage& storage, const ResourceInfo& info, const ObjectKey& key,
                                   const DeleteOptions& options, Clock::WallTime now) {
  // The UID the request is about: the one the caller gave, else the one first read, so that a
  // retry after a concurrent write never deletes an object re-created under the same name.
  std::optional<std::string> uid = options.precondition_uid;
  const bool is_namespace = IsCore(info, "namespaces");
  for (int attempt = 0; attempt < Storage::kGuaranteedUpdateAttempts; ++attempt) {
    SLUICE_ASSIGN_OR_RETURN(Stored current, storage.Get(key));
    if (!current.object.is_object()) return Status::Internal(key.ToString() + " is not an object");
    if (!uid) uid = StringAt(current.object, "/metadata/uid");
    SLUICE_RETURN_IF_ERROR(CheckPreconditions(info, key, current.object, *uid, options));

    Decision decision = is_namespace ? DecideNamespace(info, current.object, options, now)
                                     : DecideGeneric(info, current.object, options, now);
    switch (decision.action) {
      case Action::kPending:
        return DeleteOutcome{std::move(current.object), false};
      case Action::kUpdate: {
        // Judge a no-op as GuaranteedUpdate does: nothing to write.
        if (options.dry_run || decision.object == current.object) {
          return DeleteOutcome{std::move(decision.object), false};
        }
        Result<Stored> written = storage.Update(key, std::move(decision.object), current.revision);
        if (written.ok()) return DeleteOutcome{std::move(written->object), false};
        if (written.status().code() == StatusCode::kConflict) continue;
        return written.status();
      }
      case Action::kDeleteNow: {
        if (options.dry_run) return DeleteOutcome{std::move(current.object), true};
        Result<Stored> deleted = storage.Delete(key, current.revision);
        if (deleted.ok()) return DeleteOutcome{std::move(deleted->object), true};
        if (deleted.status().code() == StatusCode::kConflict) continue;
        return deleted.status();
      }
    }
  }
  return storage_internal::UpdateConflictError(key);
}

Result<Stored> CompleteDeletionIfReady(Storage& storage, const ObjectKey& key,
                                       const Stored& after_update) {
  Stored state = after_update;
  for (int attempt = 0; attempt < Storage::kGuaranteedUpdateAttempts; ++attempt) {
    if (!ReadyToRemove(key, state.object)) return state;
    Result<Stored> deleted = storage.Delete(key, state.revision);
    if (deleted.ok()) return deleted;
    if (deleted.status().code() == StatusCode::kNotFound) return state;
    if (deleted.status().code() != StatusCode::kConflict) return deleted.status();
    Result<Stored> reread = storage.Get(key);
    if (!reread.ok()) {
      if (reread.status().code() == StatusCode::kNotFound) return state;
      return reread.status();
    }
    state = std::move(reread).value();
  }
  return storage_internal::UpdateConflictError(key);
}

int DeleteHttpStatus(const DeleteOptions& options, const DeleteOutcome& outcome) {
  return !outcome.finished && options.orphan_dependents == false ? 202 : 200;
}

std::string StorageResourceKey(const ResourceInfo& info) {
  return (info.group.empty() ? std::string("core") : info.group) + "/" + info.plural;
}

}  // namespace sluice::apiserver

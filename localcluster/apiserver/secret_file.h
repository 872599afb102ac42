// Secret files: reading the small files the local API server keeps in its state directory (keys,
// certificates, the access token, kubeconfigs), with a size limit. They are written with
// common/file/atomic_file.h, which creates them with their final mode (a secret is never
// readable by others, not even briefly).
//
// Thread safety: a stateless function.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::apiserver {

// The whole content of `path`; NotFound when it does not exist. `what` names the file in errors
// ("CA certificate").
Result<std::string> ReadSmallFile(const std::filesystem::path& path, std::string_view what);

}  // namespace sluice::apiserver

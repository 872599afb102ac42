// Help text: the --help output of a Sluice binary, rendered from its Spec.
//
// Lists every option with its flag, type, bounds or allowed values, default (or "required"),
// environment variable, YAML key and help text, then the built-in --config, --help and
// --version, wrapped to 100 columns. The text ends with a newline.
//
// Thread safety: a pure function.
#pragma once

#include <string>
#include <string_view>

#include "common/config/spec.h"

namespace sluice::config {

std::string HelpText(const Spec& spec, std::string_view program, std::string_view summary);

// Words of `text` (split at spaces) wrapped to `width` columns, every line starting with `indent`
// spaces; a word longer than a line gets a line of its own. Newlines in `text` start new
// paragraphs. Used by HelpText; exposed for tests and other CLIs.
std::string Wrap(std::string_view text, size_t indent, size_t width = 100);

}  // namespace sluice::config

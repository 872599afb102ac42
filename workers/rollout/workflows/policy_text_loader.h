// LoadPolicyText: reads a hosted policy's tokenizer and picks its chat template, the part of a
// policy that turns text into tokens (workflow.h's PolicyText). Shared by the rollout worker,
// which samples with it, and the trainer's warm start, which renders supervised targets with it:
// one loader, so both render a prompt to the same tokens.
//
// Thread safety: a pure function apart from reading the tokenizer file.
#pragma once

#include <string>

#include "common/status.h"
#include "workers/rollout/workflows/workflow.h"

namespace sluice::rollout {

// `tokenizer` is "char" (the built-in character tokenizer) or "model" (BPE from
// `tokenizer_file`, a tokenizer.json). `chat_template` names a model::ChatTemplate; "auto" picks
// llama3 when the tokenizer knows <|start_header_id|>, else chatml. Errors carry
// "policy <name>" as context: an unreadable tokenizer, an unknown template, or a template whose
// markers the tokenizer lacks.
Result<PolicyText> LoadPolicyText(const std::string& name, const std::string& tokenizer,
                                  const std::string& tokenizer_file,
                                  const std::string& chat_template);

}  // namespace sluice::rollout

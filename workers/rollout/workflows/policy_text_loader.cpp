#include "workers/rollout/workflows/policy_text_loader.h"

#include <memory>
#include <utility>

#include "workers/model/bpe_tokenizer.h"
#include "workers/model/char_tokenizer.h"

namespace sluice::rollout {

Result<PolicyText> LoadPolicyText(const std::string& name, const std::string& tokenizer,
                                  const std::string& tokenizer_file,
                                  const std::string& chat_template) {
  PolicyText out;
  std::string template_name = chat_template;
  if (tokenizer == "char") {
    out.tokenizer = std::make_shared<model::CharTokenizer>();
  } else {
    Result<std::unique_ptr<model::BpeTokenizer>> t = model::BpeTokenizer::FromFile(tokenizer_file);
    if (!t.ok()) return t.status().WithContext("policy " + name + " tokenizer");
    out.tokenizer = std::shared_ptr<const model::Tokenizer>(std::move(*t));
    if (template_name == "auto") {
      template_name =
          out.tokenizer->TokenId("<|start_header_id|>").has_value() ? "llama3" : "chatml";
    }
  }
  Result<model::ChatTemplate> tmpl = model::ChatTemplate::ByName(template_name);
  if (!tmpl.ok()) return tmpl.status().WithContext("policy " + name);
  if (Status s = tmpl->CheckTokenizer(*out.tokenizer); !s.ok()) {
    return s.WithContext("policy " + name + " chat template " + template_name);
  }
  out.chat_template = std::make_shared<model::ChatTemplate>(*tmpl);
  return out;
}

}  // namespace sluice::rollout

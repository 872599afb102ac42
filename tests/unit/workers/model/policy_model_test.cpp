// A Policy's model as workers resolve it: model sources (builtin, path, pvc, uri) and tokenizer
// settings.
#include "workers/model/policy_model.h"

#include <gtest/gtest.h>

#include <string>

#include "workers/model/model_download.h"

namespace sluice::model {
namespace {

TEST(PolicyModelTest, ResolvesModelSources) {
  api::PolicySpecModelSource src;
  src.path = "/models/qwen3";
  EXPECT_EQ(ResolveModelSource("actor", src)->directory, "/models/qwen3");
  src = {};
  src.uri = "hf://Qwen/Qwen3-0.6B";
  EXPECT_EQ(ResolveModelSource("actor", src).status().field(), "spec.model.source.uri");
}

TEST(PolicyModelTest, UriModelsResolveToTheirCacheEntry) {
  // The URL is kept for the download; the directory is its cache entry, nothing fetched yet.
  api::PolicySpecModelSource src;
  src.uri = "https://models.example.com/qwen3";
  Result<ModelSource> m = ResolveModelSource("actor", src, "/cache");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->uri, "https://models.example.com/qwen3");
  EXPECT_EQ(m->directory, ModelCacheDir("/cache", "https://models.example.com/qwen3"));
  EXPECT_EQ(m->directory.rfind("/cache/", 0), 0u) << m->directory;
  EXPECT_TRUE(m->builtin_uri.empty());
  // No root: the default one under $TMPDIR.
  EXPECT_EQ(ResolveModelSource("actor", src)->directory,
            ModelCacheDir(DefaultModelCacheRoot(), *src.uri));
  // Text settings read the downloaded directory's tokenizer.json.
  Result<TextSettings> text = ResolveTextSettings(*m, api::PolicySpecTokenizer{});
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(text->tokenizer, "model");
  EXPECT_EQ(text->tokenizer_file, m->directory + "/tokenizer.json");
  // Only http(s) URLs of a directory.
  for (const char* bad : {"s3://bucket/m", "ftp://host/m", "https://host/m?rev=main"}) {
    src.uri = bad;
    Result<ModelSource> r = ResolveModelSource("actor", src, "/cache");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().field(), "spec.model.source.uri") << bad;
  }
}

TEST(PolicyModelTest, PvcModelsLiveUnderThePolicysOwnMount) {
  // The operator mounts each Policy's claim at /var/lib/sluice/model/<policy>
  // (operator/controllers/policy_model_volumes.h); the model is the claim's path inside it.
  EXPECT_EQ(PolicyModelDir("actor"), "/var/lib/sluice/model/actor");
  api::PolicySpecModelSource src;
  src.pvc = api::PolicySpecModelSourcePvc{"models", "/qwen3/"};
  EXPECT_EQ(ResolveModelSource("actor", src)->directory, "/var/lib/sluice/model/actor/qwen3");
  EXPECT_EQ(ResolveModelSource("judge", src)->directory, "/var/lib/sluice/model/judge/qwen3");
  src.pvc = api::PolicySpecModelSourcePvc{"models", "/"};
  EXPECT_EQ(ResolveModelSource("actor", src)->directory, "/var/lib/sluice/model/actor");
  // Without the Policy's name there is no directory to look in.
  EXPECT_EQ(ResolveModelSource("", src).status().field(), "metadata.name");
}

TEST(PolicyModelTest, ResolvesTextSettingsForBuiltinAndHfModels) {
  ModelSource builtin;
  builtin.builtin_uri = "builtin:tiny?vocab=char";
  ModelSource hf;
  hf.directory = "/models/qwen";
  api::PolicySpecTokenizer tok;  // type auto, chatTemplate auto.
  Result<TextSettings> t = ResolveTextSettings(builtin, tok);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->tokenizer, "char");
  EXPECT_EQ(t->chat_template, "plain");
  t = ResolveTextSettings(hf, tok);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->tokenizer, "model");
  EXPECT_EQ(t->tokenizer_file, "/models/qwen/tokenizer.json");
  EXPECT_EQ(t->chat_template, "auto");
  tok.path = "tok/tokenizer.json";
  tok.chat_template = "chatml";
  t = ResolveTextSettings(hf, tok);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->tokenizer_file, "/models/qwen/tok/tokenizer.json");
  EXPECT_EQ(t->chat_template, "chatml");
  tok.chat_template = "none";
  EXPECT_EQ(ResolveTextSettings(hf, tok).status().field(), "spec.tokenizer.chatTemplate");
}

}  // namespace
}  // namespace sluice::model

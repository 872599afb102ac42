// HfExport: the exported directory read back with the torch-free readers (safetensors, config),
// idempotent re-export, refusal to clobber, cleanup on error, and atomic appearance.
#include "workers/weights/hf_export.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/read_file.h"
#include "tests/unit/workers/weights/weight_fixtures.h"
#include "workers/model/model_config.h"
#include "workers/model/safetensors.h"
#include "workers/weights/weight_digest.h"

namespace sluice::weights {
namespace {

namespace fs = std::filesystem;
using fixtures::Model;
using fixtures::TinyConfig;
using fixtures::TinyWeights;
using nlohmann::json;

void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::set<std::string> Entries(const fs::path& dir) {
  std::set<std::string> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    out.insert(e.path().filename().string());
  }
  return out;
}

WeightSnapshot Snapshot(const Model& m, int64_t version) {
  Result<WeightSnapshot> s = WeightSnapshot::Build(m.Views(), version);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

class HfExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-hf-export-XXXXXX";
    root_ = mkdtemp(tmpl);
    source_ = root_ / "source";
    fs::create_directories(source_);
    WriteFile(source_ / "tokenizer.json", R"({"model": {"type": "BPE"}})");
    WriteFile(source_ / "tokenizer_config.json", R"({"eos_token": "<eos>"})");
  }
  void TearDown() override { fs::remove_all(root_); }

  HfExportOptions Options() const {
    HfExportOptions o;
    o.extra_files = {(source_ / "tokenizer.json").string(),
                     (source_ / "tokenizer_config.json").string()};
    o.policy = "actor";
    return o;
  }

  fs::path root_;
  fs::path source_;
};

TEST_F(HfExportTest, WritesAnHfDirectoryThatReadsBack) {
  const Model m = TinyWeights(model::DType::kBF16, 1);
  const WeightSnapshot snap = Snapshot(m, 3);
  const model::ModelConfig config = TinyConfig();
  const fs::path dir = root_ / "exports" / HfExportName("actor", 3);
  EXPECT_EQ(dir.filename(), "actor-v3");

  Result<HfExport> e = ExportHfDirectory(snap, config, Options(), dir.string());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(e->created);
  EXPECT_EQ(e->path, dir.string());
  EXPECT_EQ(e->version, 3);
  EXPECT_EQ(e->digest, snap.digest());
  EXPECT_EQ(Entries(dir),
            (std::set<std::string>{"config.json", "model.safetensors", "sluice_export.json",
                                   "tokenizer.json", "tokenizer_config.json"}));
  uint64_t bytes = 0;
  for (const fs::directory_entry& f : fs::directory_iterator(dir)) bytes += f.file_size();
  EXPECT_EQ(e->bytes, bytes);

  // model.safetensors is the image byte for byte, and every tensor reads back as written.
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "model.safetensors"), snap.image());
  Result<model::ShardedCheckpoint> ckpt = model::ShardedCheckpoint::Open(dir.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  ASSERT_EQ(ckpt->size(), m.tensors.size());
  for (const fixtures::Tensor& t : m.tensors) {
    const model::TensorView* v = ckpt->Find(t.name);
    ASSERT_NE(v, nullptr) << t.name;
    EXPECT_EQ(v->dtype, model::DType::kBF16) << t.name;
    EXPECT_EQ(v->shape, t.shape) << t.name;
    EXPECT_TRUE(std::equal(v->data.begin(), v->data.end(), t.data.begin(), t.data.end())) << t.name;
  }
  EXPECT_EQ(ckpt->files()[0]->metadata().at("format"), "pt");

  // config.json parses back to the config, with the weights' dtype.
  Result<model::ModelConfig> back = model::LoadHfConfig(dir.string());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  model::ModelConfig want = config;
  want.torch_dtype = "bfloat16";
  want.model_type = back->model_type;
  want.architectures = back->architectures;
  EXPECT_EQ(*back, want);
  EXPECT_EQ(back->model_type, "llama");
  EXPECT_EQ(json::parse(test_support::ReadFileOrEmpty(dir / "config.json"))["torch_dtype"],
            "bfloat16");

  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "tokenizer.json"),
            test_support::ReadFileOrEmpty(source_ / "tokenizer.json"));
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "tokenizer_config.json"),
            test_support::ReadFileOrEmpty(source_ / "tokenizer_config.json"));
  const json record = json::parse(test_support::ReadFileOrEmpty(dir / "sluice_export.json"));
  EXPECT_EQ(record["version"], 3);
  EXPECT_EQ(record["digest"], snap.digest());
  EXPECT_EQ(record["modelDigest"], snap.digest());
  EXPECT_EQ(record["policy"], "actor");
  // Only the directory itself was left in the parent: no temporary.
  EXPECT_EQ(Entries(root_ / "exports"), (std::set<std::string>{"actor-v3"}));
}

TEST_F(HfExportTest, TorchDtypeFollowsTheWeights) {
  for (model::DType dtype : {model::DType::kF32, model::DType::kF16}) {
    const WeightSnapshot snap = Snapshot(TinyWeights(dtype, 2), 1);
    const fs::path dir = root_ / std::string(HfDtypeName(dtype));
    ASSERT_TRUE(ExportHfDirectory(snap, TinyConfig(), {}, dir.string()).ok());
    EXPECT_EQ(json::parse(test_support::ReadFileOrEmpty(dir / "config.json"))["torch_dtype"],
              HfDtypeName(dtype));
    EXPECT_EQ(Entries(dir),
              (std::set<std::string>{"config.json", "model.safetensors", "sluice_export.json"}));
    EXPECT_FALSE(
        json::parse(test_support::ReadFileOrEmpty(dir / "sluice_export.json")).contains("policy"));
  }
}

TEST_F(HfExportTest, ATiedLmHeadIsLeftOut) {
  const WeightSnapshot snap = Snapshot(TinyWeights(model::DType::kF32, 3, 8, /*tie=*/true), 1);
  const fs::path dir = root_ / "tied";
  ASSERT_TRUE(ExportHfDirectory(snap, TinyConfig(8, /*tie=*/true), {}, dir.string()).ok());
  Result<model::SafetensorsFile> f =
      model::SafetensorsFile::Open((dir / "model.safetensors").string());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->Find("lm_head.weight"), nullptr);
  EXPECT_TRUE(json::parse(test_support::ReadFileOrEmpty(dir / "config.json"))["tie_word_embeddings"]
                  .get<bool>());

  // A separate lm_head with a tied config is refused, naming the tensor.
  const WeightSnapshot untied = Snapshot(TinyWeights(model::DType::kF32, 3), 2);
  Result<HfExport> e =
      ExportHfDirectory(untied, TinyConfig(8, /*tie=*/true), {}, (root_ / "bad").string());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.status().field(), "tensors.lm_head.weight");
  EXPECT_FALSE(fs::exists(root_ / "bad"));
}

TEST_F(HfExportTest, AnImageWithoutFormatPtIsRewrittenWithTheSameTensors) {
  const Model m = TinyWeights(model::DType::kF32, 4);
  Result<std::vector<std::byte>> bytes =
      model::SerializeSafetensors(m.Views(), {{"sluice.version", "5"}});
  ASSERT_TRUE(bytes.ok());
  Result<WeightSnapshot> snap = WeightSnapshot::Parse(
      std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  const fs::path dir = root_ / "rewritten";
  Result<HfExport> e = ExportHfDirectory(*snap, TinyConfig(), {}, dir.string());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->digest, snap->digest());

  Result<model::SafetensorsFile> f =
      model::SafetensorsFile::Open((dir / "model.safetensors").string());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->metadata().at("sluice.version"), "5");
  ASSERT_EQ(f->tensors().size(), m.tensors.size());
  for (const fixtures::Tensor& t : m.tensors) {
    const model::TensorView* v = f->Find(t.name);
    ASSERT_NE(v, nullptr) << t.name;
    EXPECT_TRUE(std::equal(v->data.begin(), v->data.end(), t.data.begin(), t.data.end()));
  }
  const json record = json::parse(test_support::ReadFileOrEmpty(dir / "sluice_export.json"));
  EXPECT_EQ(record["digest"], snap->digest());
  EXPECT_NE(record["modelDigest"], snap->digest());
  EXPECT_EQ(record["modelDigest"],
            DigestOf(test_support::ReadFileOrEmpty(dir / "model.safetensors")));
}

TEST_F(HfExportTest, ASecondExportOfTheSameVersionReturnsTheFirst) {
  const WeightSnapshot snap = Snapshot(TinyWeights(model::DType::kBF16, 5), 7);
  const fs::path dir = root_ / "actor-v7";
  Result<HfExport> first = ExportHfDirectory(snap, TinyConfig(), Options(), dir.string());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const auto mtime = fs::last_write_time(dir / "model.safetensors");
  const std::string config_text = test_support::ReadFileOrEmpty(dir / "config.json");

  // Even with other extra files: the directory is the version's, and it is left as it is.
  Result<HfExport> second = ExportHfDirectory(snap, TinyConfig(), {}, dir.string() + "/");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_FALSE(second->created);
  EXPECT_EQ(second->path, dir.string());
  EXPECT_EQ(second->digest, first->digest);
  EXPECT_EQ(second->bytes, first->bytes);
  EXPECT_EQ(fs::last_write_time(dir / "model.safetensors"), mtime);
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "config.json"), config_text);
  EXPECT_EQ(Entries(root_), (std::set<std::string>{"actor-v7", "source"}));
}

TEST_F(HfExportTest, AnExistingDirectoryWithOtherContentIsRefused) {
  const Model m = TinyWeights(model::DType::kF32, 6);
  const WeightSnapshot v1 = Snapshot(m, 1);
  const fs::path dir = root_ / "actor-v1";
  ASSERT_TRUE(ExportHfDirectory(v1, TinyConfig(), {}, dir.string()).ok());
  const std::string record = test_support::ReadFileOrEmpty(dir / "sluice_export.json");

  // Another version, and the same version number with other weights.
  Model changed = m;
  changed.tensors[0].data[0] ^= std::byte{1};
  for (const WeightSnapshot& other : {Snapshot(m, 2), Snapshot(changed, 1)}) {
    Result<HfExport> e = ExportHfDirectory(other, TinyConfig(), {}, dir.string());
    EXPECT_EQ(e.status().code(), StatusCode::kAlreadyExists) << e.status().ToString();
    EXPECT_NE(e.status().message().find(dir.string()), std::string::npos) << e.status().message();
  }
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "sluice_export.json"), record);
  EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "model.safetensors"), v1.image());

  // A directory that is not an export at all, an empty one, and a file.
  fs::create_directories(root_ / "other");
  WriteFile(root_ / "other" / "notes.txt", "mine");
  fs::create_directories(root_ / "empty");
  WriteFile(root_ / "file", "x");
  for (const char* name : {"other", "empty", "file"}) {
    Result<HfExport> e = ExportHfDirectory(v1, TinyConfig(), {}, (root_ / name).string());
    EXPECT_EQ(e.status().code(), StatusCode::kAlreadyExists) << name;
    EXPECT_NE(e.status().message().find((root_ / name).string()), std::string::npos)
        << e.status().message();
  }
  EXPECT_EQ(Entries(root_ / "other"), (std::set<std::string>{"notes.txt"}));
  EXPECT_TRUE(Entries(root_ / "empty").empty());
}

TEST_F(HfExportTest, AMissingExtraFileIsNotFoundAndLeavesNothing) {
  const WeightSnapshot snap = Snapshot(TinyWeights(model::DType::kF32, 7), 1);
  HfExportOptions o = Options();
  const std::string missing = (source_ / "special_tokens_map.json").string();
  o.extra_files.push_back(missing);
  const fs::path dir = root_ / "exports" / "actor-v1";
  Result<HfExport> e = ExportHfDirectory(snap, TinyConfig(), o, dir.string());
  EXPECT_EQ(e.status().code(), StatusCode::kNotFound);
  EXPECT_NE(e.status().message().find(missing), std::string::npos) << e.status().message();
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(!fs::exists(root_ / "exports") || Entries(root_ / "exports").empty());

  // Two extra files with one name, or one shadowing a file of the export, are refused too.
  fs::create_directories(root_ / "elsewhere");
  WriteFile(root_ / "elsewhere" / "tokenizer.json", "{}");
  WriteFile(root_ / "elsewhere" / "config.json", "{}");
  for (const char* name : {"tokenizer.json", "config.json"}) {
    HfExportOptions dup = Options();
    dup.extra_files.push_back((root_ / "elsewhere" / name).string());
    Result<HfExport> d = ExportHfDirectory(snap, TinyConfig(), dup, dir.string());
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(d.status().field(), "extra_files") << name;
  }
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(!fs::exists(root_ / "exports") || Entries(root_ / "exports").empty());
}

TEST_F(HfExportTest, WeightsThatDoNotFitTheConfigAreRefusedNamingTheField) {
  const WeightSnapshot snap = Snapshot(TinyWeights(model::DType::kF32, 8), 1);
  // A config of another width.
  Result<HfExport> e = ExportHfDirectory(snap, TinyConfig(/*d=*/16), {}, (root_ / "wide").string());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.status().field(), "tensors.model.embed_tokens.weight.shape");

  // Mixed dtypes: config.json has a single torch_dtype.
  Model mixed = TinyWeights(model::DType::kF32, 8);
  mixed.tensors[1] = TinyWeights(model::DType::kBF16, 8).tensors[1];
  e = ExportHfDirectory(Snapshot(mixed, 1), TinyConfig(), {}, (root_ / "mixed").string());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.status().field(), "tensors." + mixed.tensors[1].name + ".dtype");

  // An invalid config.
  model::ModelConfig bad = TinyConfig();
  bad.rms_norm_eps = 0;
  e = ExportHfDirectory(snap, bad, {}, (root_ / "badconfig").string());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.status().field(), "rms_norm_eps");
  EXPECT_EQ(Entries(root_), (std::set<std::string>{"source"}));
}

// A watcher polls the target while exports run: whenever the directory exists it is complete.
TEST_F(HfExportTest, NoPartialDirectoryIsEverVisible) {
  // 1 MiB of float32 per matrix: big enough that writing takes many polls.
  const WeightSnapshot snap = Snapshot(TinyWeights(model::DType::kF32, 9, /*d=*/512), 1);
  const model::ModelConfig config = TinyConfig(512);
  for (int round = 0; round < 5; ++round) {
    const fs::path dir = root_ / ("actor-v" + std::to_string(round));
    std::atomic<bool> done{false};
    std::atomic<int> seen{0};
    std::atomic<int> partial{0};
    std::thread watcher([&] {
      // One last look after the exports returned, so a starved watcher (a loaded machine) still
      // sees the directory at least once.
      for (bool last = false; !last;) {
        last = done;
        std::error_code ec;
        if (!fs::exists(dir, ec)) continue;
        ++seen;
        // Complete means: the record is there and model.safetensors has all its bytes.
        const bool complete = fs::exists(dir / "sluice_export.json", ec) &&
                              fs::file_size(dir / "model.safetensors", ec) == snap.size_bytes() &&
                              fs::exists(dir / "config.json", ec);
        if (!complete) ++partial;
      }
    });
    // Two exporters of the same version race: one creates it, the other finds it.
    Result<HfExport> a = Status::Internal("not run");
    Result<HfExport> b = Status::Internal("not run");
    std::thread other([&] { b = ExportHfDirectory(snap, config, Options(), dir.string()); });
    a = ExportHfDirectory(snap, config, Options(), dir.string());
    other.join();
    done = true;
    watcher.join();
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_NE(a->created, b->created);
    EXPECT_EQ(a->bytes, b->bytes);
    EXPECT_GT(seen, 0);
    EXPECT_EQ(partial, 0);
    EXPECT_EQ(test_support::ReadFileOrEmpty(dir / "model.safetensors"), snap.image());
  }
  // No temporaries left behind by the losers.
  std::set<std::string> want = {"source"};
  for (int round = 0; round < 5; ++round) want.insert("actor-v" + std::to_string(round));
  EXPECT_EQ(Entries(root_), want);
}

TEST_F(HfExportTest, SidecarFilesAreTheTokenizerAndGenerationFiles) {
  for (const char* name :
       {"special_tokens_map.json", "merges.txt", "vocab.json", "generation_config.json",
        "config.json", "model.safetensors", "README.md", "tokenizer.model"}) {
    WriteFile(source_ / name, "x");
  }
  fs::create_directories(source_ / "tokenizer_extra.json");  // A directory: not a file.
  Result<std::vector<std::string>> files = HfSidecarFiles(source_.string());
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  std::vector<std::string> want;
  for (const char* name :
       {"generation_config.json", "merges.txt", "special_tokens_map.json", "tokenizer.json",
        "tokenizer.model", "tokenizer_config.json", "vocab.json"}) {
    want.push_back((source_ / name).string());
  }
  EXPECT_EQ(*files, want);
  EXPECT_EQ(HfSidecarFiles((root_ / "absent").string()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace sluice::weights

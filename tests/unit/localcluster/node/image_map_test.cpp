#include "localcluster/node/image_map.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace sluice::node {
namespace image_map_test {

namespace fs = std::filesystem;

const fs::path kBin = "/opt/sluice/bin";

ImageMap MustParse(const std::string& yaml) {
  Result<ImageMap> map = ImageMap::Parse(yaml);
  EXPECT_TRUE(map.ok()) << map.status().ToString();
  return map.ok() ? *map : ImageMap();
}

fs::path MustResolve(const ImageMap& map, const std::string& image) {
  Result<fs::path> p = map.Resolve(image, kBin);
  EXPECT_TRUE(p.ok()) << image << ": " << p.status().ToString();
  return p.ok() ? *p : fs::path();
}

Status ParseError(const std::string& yaml) {
  Result<ImageMap> map = ImageMap::Parse(yaml);
  EXPECT_FALSE(map.ok()) << yaml;
  return map.status();
}

// --- ImageRepository ---------------------------------------------------------------------------

TEST(ImageMapRepositoryTest, BareNameUnchanged) {
  EXPECT_EQ(ImageRepository("python"), "python");
  EXPECT_EQ(ImageRepository("sluice/rollout"), "sluice/rollout");
}

TEST(ImageMapRepositoryTest, StripsTag) {
  EXPECT_EQ(ImageRepository("python:3.12"), "python");
  EXPECT_EQ(ImageRepository("sluice/rollout:dev"), "sluice/rollout");
  EXPECT_EQ(ImageRepository("ghcr.io/org/sluice/rollout:1.2.3"), "ghcr.io/org/sluice/rollout");
}

TEST(ImageMapRepositoryTest, StripsDigest) {
  EXPECT_EQ(ImageRepository("sluice/rollout@sha256:abcdef"), "sluice/rollout");
  EXPECT_EQ(ImageRepository("ghcr.io/x/sluice/rollout:1.2@sha256:0123"),
            "ghcr.io/x/sluice/rollout");
}

TEST(ImageMapRepositoryTest, KeepsRegistryPort) {
  EXPECT_EQ(ImageRepository("localhost:5000/sluice/rollout"), "localhost:5000/sluice/rollout");
  EXPECT_EQ(ImageRepository("localhost:5000/sluice/rollout:dev"), "localhost:5000/sluice/rollout");
  EXPECT_EQ(ImageRepository("registry:5000/app@sha256:ff"), "registry:5000/app");
}

TEST(ImageMapRepositoryTest, Empty) { EXPECT_EQ(ImageRepository(""), ""); }

// --- Default rule ------------------------------------------------------------------------------

TEST(ImageMapResolveTest, DefaultRuleSluiceName) {
  ImageMap map;
  EXPECT_EQ(MustResolve(map, "sluice/rollout"), kBin / "sluice-rollout");
  EXPECT_EQ(MustResolve(map, "sluice/rollout:dev"), kBin / "sluice-rollout");
  EXPECT_EQ(MustResolve(map, "sluice/trainer@sha256:abc"), kBin / "sluice-trainer");
}

TEST(ImageMapResolveTest, DefaultRuleWithRegistryPrefix) {
  ImageMap map;
  EXPECT_EQ(MustResolve(map, "ghcr.io/org/sluice/rollout:1.0"), kBin / "sluice-rollout");
  EXPECT_EQ(MustResolve(map, "localhost:5000/sluice/operator"), kBin / "sluice-operator");
  EXPECT_EQ(MustResolve(map, "docker.io/sluice/gateway:v2"), kBin / "sluice-gateway");
}

TEST(ImageMapResolveTest, DefaultRuleNeedsSluiceOwner) {
  ImageMap map;
  for (const std::string image :
       {"python", "python:3.12", "notsluice/rollout", "ghcr.io/org/notsluice/rollout", "sluice",
        "sluice/", "ghcr.io/sluicex/rollout", "rollout/sluice"}) {
    Result<fs::path> p = map.Resolve(image, kBin);
    EXPECT_FALSE(p.ok()) << image << " -> " << (p.ok() ? p->string() : "");
    if (!p.ok()) {
      EXPECT_EQ(p.status().code(), StatusCode::kNotFound) << image;
    }
  }
}

TEST(ImageMapResolveTest, UnmappedImageMessage) {
  ImageMap map;
  Result<fs::path> p = map.Resolve("python:3.12", kBin);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(p.status().message(),
            "image \"python:3.12\" is not in the image map (sluice-node --image-map; only "
            "sluice/<name> images map to binaries by default)");
}

// --- Entries -----------------------------------------------------------------------------------

TEST(ImageMapResolveTest, RepositoryEntryMatchesAnyTag) {
  ImageMap map = MustParse("images:\n  - image: python\n    executable: /usr/bin/python3\n");
  EXPECT_EQ(MustResolve(map, "python"), fs::path("/usr/bin/python3"));
  EXPECT_EQ(MustResolve(map, "python:3.12"), fs::path("/usr/bin/python3"));
  EXPECT_EQ(MustResolve(map, "python@sha256:aa"), fs::path("/usr/bin/python3"));
  EXPECT_FALSE(map.Resolve("docker.io/library/python:3", kBin).ok());
}

TEST(ImageMapResolveTest, ExactReferenceOnlyMatchesThatReference) {
  ImageMap map =
      MustParse("images:\n  - image: python:3.11\n    executable: /usr/bin/python3.11\n");
  EXPECT_EQ(MustResolve(map, "python:3.11"), fs::path("/usr/bin/python3.11"));
  EXPECT_FALSE(map.Resolve("python:3.12", kBin).ok());
  EXPECT_FALSE(map.Resolve("python", kBin).ok());
}

TEST(ImageMapResolveTest, ExactReferenceBeatsRepositoryEntry) {
  // The repository entry comes first in the file, but the exact reference still wins.
  ImageMap map = MustParse(
      "images:\n"
      "  - image: python\n"
      "    executable: /usr/bin/python3\n"
      "  - image: python:2.7\n"
      "    executable: /usr/bin/python2\n");
  EXPECT_EQ(MustResolve(map, "python:2.7"), fs::path("/usr/bin/python2"));
  EXPECT_EQ(MustResolve(map, "python:3.12"), fs::path("/usr/bin/python3"));
}

TEST(ImageMapResolveTest, EntryBeatsDefaultRule) {
  ImageMap map = MustParse(
      "images:\n"
      "  - image: sluice/rollout:dev\n"
      "    executable: custom-rollout\n"
      "  - image: sluice/trainer\n"
      "    executable: /usr/local/bin/trainer\n");
  EXPECT_EQ(MustResolve(map, "sluice/rollout:dev"), kBin / "custom-rollout");
  EXPECT_EQ(MustResolve(map, "sluice/rollout:v1"), kBin / "sluice-rollout");
  EXPECT_EQ(MustResolve(map, "sluice/trainer:any"), fs::path("/usr/local/bin/trainer"));
}

TEST(ImageMapResolveTest, FirstMatchingEntryWins) {
  ImageMap map = MustParse(
      "images:\n"
      "  - {image: app, executable: /a}\n"
      "  - {image: app, executable: /b}\n");
  EXPECT_EQ(MustResolve(map, "app:1"), fs::path("/a"));
}

TEST(ImageMapResolveTest, AbsoluteAndRelativeExecutables) {
  ImageMap map = MustParse(
      "images:\n"
      "  - {image: abs, executable: /usr/bin/env}\n"
      "  - {image: rel, executable: tools/run.sh}\n");
  EXPECT_EQ(MustResolve(map, "abs"), fs::path("/usr/bin/env"));
  EXPECT_EQ(MustResolve(map, "rel"), fs::path("/opt/sluice/bin/tools/run.sh"));
  Result<fs::path> other_bin = map.Resolve("rel", "/tmp/b");
  ASSERT_TRUE(other_bin.ok());
  EXPECT_EQ(*other_bin, fs::path("/tmp/b/tools/run.sh"));
}

TEST(ImageMapResolveTest, RegistryPortRepositoryEntry) {
  ImageMap map = MustParse("images:\n  - {image: \"localhost:5000/app\", executable: /bin/app}\n");
  EXPECT_EQ(MustResolve(map, "localhost:5000/app:7"), fs::path("/bin/app"));
  EXPECT_EQ(MustResolve(map, "localhost:5000/app"), fs::path("/bin/app"));
  EXPECT_FALSE(map.Resolve("localhost:5001/app", kBin).ok());
}

// --- Parse -------------------------------------------------------------------------------------

TEST(ImageMapParseTest, Entries) {
  ImageMap map = MustParse(
      "images:\n"
      "  - image: sluice/rollout:dev\n"
      "    executable: sluice-rollout\n"
      "  - image: python\n"
      "    executable: /usr/bin/python3\n");
  ASSERT_EQ(map.entries().size(), 2u);
  EXPECT_EQ(map.entries()[0].image, "sluice/rollout:dev");
  EXPECT_EQ(map.entries()[0].executable, "sluice-rollout");
  EXPECT_EQ(map.entries()[1].image, "python");
  EXPECT_EQ(map.entries()[1].executable, "/usr/bin/python3");
}

TEST(ImageMapParseTest, EmptyInputsGiveNoEntries) {
  EXPECT_TRUE(MustParse("").entries().empty());
  EXPECT_TRUE(MustParse("images: []\n").entries().empty());
  EXPECT_TRUE(MustParse("{}\n").entries().empty());
}

TEST(ImageMapParseTest, ErrorsNameTheEntryField) {
  Status missing_image = ParseError("images:\n  - executable: /bin/x\n");
  EXPECT_EQ(missing_image.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(missing_image.field(), "images[0].image");
  EXPECT_EQ(missing_image.message(), "must be a non-empty string");

  Status empty_exe =
      ParseError("images:\n  - {image: a, executable: /bin/a}\n  - {image: b, executable: \"\"}\n");
  EXPECT_EQ(empty_exe.field(), "images[1].executable");
  EXPECT_EQ(empty_exe.message(), "must be a non-empty string");

  EXPECT_EQ(ParseError("images:\n  - {image: a}\n").field(), "images[0].executable");
  EXPECT_EQ(ParseError("images:\n  - {image: [a], executable: x}\n").field(), "images[0].image");
  EXPECT_EQ(ParseError("images:\n  - {image: \"\", executable: x}\n").field(), "images[0].image");
  EXPECT_EQ(ParseError("images:\n  - {image: a, executable: {x: 1}}\n").field(),
            "images[0].executable");
}

TEST(ImageMapParseTest, EntryMustBeMapping) {
  Status s = ParseError("images:\n  - {image: a, executable: x}\n  - python\n");
  EXPECT_EQ(s.field(), "images[1]");
  EXPECT_EQ(s.message(), "must be a mapping");
}

TEST(ImageMapParseTest, ImagesMustBeList) {
  Status s = ParseError("images: {a: b}\n");
  EXPECT_EQ(s.field(), "images");
  EXPECT_EQ(s.message(), "must be a list");
}

TEST(ImageMapParseTest, MustBeOneMapping) {
  EXPECT_EQ(ParseError("- a\n").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseError("images: []\n---\nimages: []\n").code(), StatusCode::kInvalidArgument);
}

TEST(ImageMapParseTest, LoadFileAndMissingFile) {
  const fs::path path = fs::temp_directory_path() / "sluice_image_map_test.yaml";
  {
    std::ofstream out(path);
    out << "images:\n  - {image: app, executable: /bin/app}\n";
  }
  Result<ImageMap> map = ImageMap::Load(path);
  fs::remove(path);
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  ASSERT_EQ(map->entries().size(), 1u);
  EXPECT_EQ(map->entries()[0].image, "app");

  Result<ImageMap> missing = ImageMap::Load("/nonexistent/sluice/images.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace image_map_test
}  // namespace sluice::node

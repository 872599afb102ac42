#!/usr/bin/env python3
"""Shows that scripts/check-images.py catches broken images: each case copies docker/ (and the
chart's values.yaml, the Makefile or the build's binary where it breaks those), breaks one thing
and expects the check to fail naming the image and the problem. The unmodified copy must pass
first, or the failures would prove nothing.

Usage: check_images_test.py --bin-dir DIR --source-dir DIR
Exit status: 0 every case caught, 1 otherwise, 77 when the check skips (not Debian 12).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def drop_package(package):
    """Removes one word from the run-time `apt-get install` list (wherever it sits)."""
    def edit(text):
        before, run, after = text.rpartition("apt-get install")
        new = re.sub(r"(?<=\s)" + re.escape(package) + r"(?=\s)", "", after, count=1)
        assert new != after, f"{package} is not in the run-time list"
        return before + run + new
    return edit


def add_package(package):
    def edit(text):
        return text.replace("--no-install-recommends \\\n",
                            f"--no-install-recommends \\\n      {package} \\\n", 1)
    return edit


def replace(old, new):
    def edit(text):
        assert old in text, f"{old!r} not found"
        return text.replace(old, new, 1)
    return edit


# (name, image whose Dockerfile changes or None, edit of that Dockerfile, other file to edit
#  (values/makefile/binary), its edit, text the failure must contain)
CASES = [
    ("drop a directly linked library's package", "operator", drop_package("libyaml-cpp0.7"),
     None, None, "operator: sluice-operator links libyaml-cpp.so.0.7 directly"),
    ("drop a package another listed one depends on", "dataflow", drop_package("libssl3"),
     None, None, "dataflow: sluice-dataflow links libcrypto.so.3 directly"),
    ("drop the BLAS the build resolved", "rollout", drop_package("libopenblas0-pthread"),
     None, None, "rollout: sluice-rollout: libblas.so.3"),
    ("list a package nothing links", "operator", add_package("libsqlite3-0"),
     None, None, "operator: libsqlite3-0 is in the run-time list but sluice-operator needs"),
    ("drop a declared run-time-only package", "rollout", drop_package("python3"),
     None, None, "rollout: python3 is declared unlinked"),
    ("COPY a path the repository lacks", "trainer", replace("COPY crds/ crds/", "COPY crd/ crds/"),
     None, None, "COPY crd/: no such path in the repository"),
    ("forget a directory the build reads", "dataflow", replace("COPY tests/ tests/\n", ""),
     None, None, "dataflow: the build reads tests/"),
    ("build another target than the one copied", "dataflow",
     replace("--target sluice-dataflow", "--target sluice-operator"),
     None, None, "does not build sluice-dataflow"),
    ("run as root", "operator", replace("USER 65532:65532", "USER root"),
     None, None, "operator: USER should be 65532:65532"),
    ("a run-time base the check cannot vouch for", "trainer",
     replace("ARG BASE=debian:bookworm-slim", "ARG BASE=ubuntu:24.04"),
     None, None, "trainer: the run-time stage is FROM ubuntu:24.04"),
    ("rename the final stage", "operator", replace("AS operator", "AS runtime"),
     None, None, "operator: the final stage is named 'runtime'"),
    ("the chart's default repository differs", None, None, "values",
     replace("repository: sluice/dataflow", "repository: acme/dataflow"),
     "images.dataflow.repository is 'acme/dataflow'"),
    ("the Makefile builds fewer images", None, None, "makefile",
     replace("IMAGES := operator dataflow rollout trainer", "IMAGES := operator dataflow rollout"),
     "IMAGES lacks trainer"),
    ("a library ldd cannot find", "operator", None, "binary", None,
     "operator: sluice-operator: ldd cannot find libyaml-cpX.so.0.7"),
    ("the binary is not built", "operator", None, "nobinary", None,
     "sluice-operator is not in the build"),
]


def run_check(script, args, docker_dir, values, makefile, bin_dir, image):
    argv = [sys.executable, script, "--bin-dir", bin_dir, "--source-dir", args.source_dir,
            "--docker-dir", docker_dir, "--values", values, "--makefile", makefile,
            # The chart and Makefile comparison covers every image whatever --image says.
            "--image", image or "operator"]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    return result.returncode, result.stdout + result.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    args.source_dir = os.path.abspath(args.source_dir)
    script = os.path.join(args.source_dir, "scripts/check-images.py")
    values = os.path.join(args.source_dir, "helm/sluice/values.yaml")
    makefile = os.path.join(args.source_dir, "Makefile")
    docker = os.path.join(args.source_dir, "docker")

    with tempfile.TemporaryDirectory(prefix="check-images-test-") as tmp:
        rc, out = run_check(script, args, docker, values, makefile, args.bin_dir, "operator")
        if rc == SKIP:
            print(out, end="")
            return SKIP
        if rc != 0:
            print(out + "check_images_test: the unmodified files fail; fix that first")
            return 1

        failures = 0
        for number, (title, image, edit, other, other_edit, expected) in enumerate(CASES):
            if image and not os.path.isfile(os.path.join(args.bin_dir, "sluice-" + image)):
                print(f"SKIP  {title}: sluice-{image} is not built")
                continue
            case = os.path.join(tmp, str(number))
            shutil.copytree(docker, os.path.join(case, "docker"))
            paths = {"values": values, "makefile": makefile, "bin": args.bin_dir}
            if edit:
                path = os.path.join(case, "docker", image + ".Dockerfile")
                with open(path, encoding="utf-8") as f:
                    text = edit(f.read())
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
            if other in ("values", "makefile"):
                paths[other] = os.path.join(case, os.path.basename(paths[other]))
                with open({"values": values, "makefile": makefile}[other],
                          encoding="utf-8") as f:
                    text = other_edit(f.read())
                with open(paths[other], "w", encoding="utf-8") as f:
                    f.write(text)
            elif other in ("binary", "nobinary"):
                paths["bin"] = os.path.join(case, "bin")
                os.makedirs(paths["bin"])
                if other == "binary":
                    # The same ELF with one NEEDED name changed (same length): ldd finds no
                    # such library.
                    with open(os.path.join(args.bin_dir, "sluice-" + image), "rb") as f:
                        data = f.read().replace(b"libyaml-cpp.so.0.7", b"libyaml-cpX.so.0.7")
                    target = os.path.join(paths["bin"], "sluice-" + image)
                    with open(target, "wb") as f:
                        f.write(data)
                    os.chmod(target, 0o755)
            rc, out = run_check(script, args, os.path.join(case, "docker"), paths["values"],
                                paths["makefile"], paths["bin"], image)
            caught = rc == 1 and expected in out
            print(f"{'OK' if caught else 'MISS'}  {title}: exit {rc}")
            if not caught:
                failures += 1
                print(f"  expected exit 1 and {expected!r} in:\n" +
                      "".join("    " + line + "\n" for line in out.splitlines()))
            shutil.rmtree(case)
        print(f"check_images_test: {len(CASES) - failures} of {len(CASES)} cases handled, "
              f"{failures} missed")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

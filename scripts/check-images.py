#!/usr/bin/env python3
"""Checks the container images (docker/<name>.Dockerfile) without a Docker engine.

No engine runs in CI, so this checks what the build machine can tell about each image:
  a. every path a Dockerfile COPYs from the build context exists in the repository, every
     top-level directory the CMake build reads is copied, and each binary COPY'd from the build
     stage is built there (`--target`) and exists in the build's bin directory;
  b. the run-time stage installs exactly the packages the binary needs: `readelf -d` lists the
     libraries it links directly, `ldd` resolves the whole tree, `dpkg -S` maps each file to its
     Debian package. Every directly linked library's package is in the stage's `apt-get install`
     list (except libc6, libgcc-s1 and libstdc++6, the toolchain's run time, in every Debian
     image); every library ldd resolves comes from a listed package, one of their dependencies
     (as apt installs them, from dpkg's records of the installed packages) or the
     debian:bookworm-slim base (Essential and Priority required packages, apt, and their
     dependencies); nothing is "not found"; and every listed package provides a library, changes
     which library ldd resolves (an alternative such as the BLAS) or is declared on a
     `# check-images: unlinked <package>...` line (with the reason beside it);
  c. the chart's default images (helm/sluice/values.yaml images.<name>.repository) are
     sluice/<name> for exactly the Dockerfiles' names (besides the external engines' servers,
     ENGINE_IMAGES, which Sluice does not build), which are the final stages' names and
     the Makefile's IMAGES, and the images run as the user the chart and the worker pods use.
The libraries and packages are this machine's, so the check means something only on Debian 12
(bookworm, the images' release); elsewhere it exits 77 (ctest: skipped).

Usage: check-images.py --bin-dir DIR [--source-dir DIR] [--docker-dir DIR] [--values FILE]
                       [--makefile FILE] [--image NAME]... [--only-built]
Exit status: 0 all good, 1 problems (each printed as "check-images: <image>: <problem>"),
2 bad usage, 77 not Debian 12.
"""

import argparse
import glob
import json
import os
import re
import shlex
import subprocess
import sys

RUNTIME_BASE = "debian:bookworm-slim"
BUILD_BASE = "debian:bookworm"
# The toolchain's run time: in every Debian image, and the images need not list them.
TOOLCHAIN = {"libc6", "libgcc-s1", "libstdc++6"}
OCI_LABELS = ("title", "description", "source", "licenses", "version")
REPOSITORY_PREFIX = "sluice/"
BINARY_DIR = "/usr/local/bin/"
SKIP = 77


class Problems:
    def __init__(self):
        self.items = []

    def add(self, image, message):
        self.items.append((image, message))
        print(f"check-images: {image}: {message}", flush=True)


# ---------------------------------------------------------------- Dockerfile parsing


class Instruction:
    def __init__(self, line, keyword, args):
        self.line, self.keyword, self.args = line, keyword, args


class Stage:
    def __init__(self, index, base, name, line):
        self.index, self.base, self.name, self.line = index, base, name, line
        self.instructions = []

    def label(self):
        return self.name if self.name else str(self.index)


class Dockerfile:
    def __init__(self, path):
        self.path = path
        self.global_args = {}  # ARGs before the first FROM: usable in FROM lines.
        self.stages = []
        self.directives = []  # The words after each "# check-images:".
        self._parse()

    def _parse(self):
        with open(self.path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        pending, start = "", 0
        for number, raw in enumerate(lines, 1):
            stripped = raw.strip()
            if stripped.startswith("#"):
                # Docker drops comment lines, also inside a continued instruction.
                m = re.match(r"#\s*check-images:\s*(.*)$", stripped)
                if m:
                    self.directives.append((number, m.group(1).split()))
                continue
            if not stripped:
                continue  # Docker skips empty lines, also inside a continued instruction.
            if not pending:
                start = number
            if stripped.endswith("\\"):
                pending += stripped[:-1] + " "
                continue
            pending += stripped
            self._add(start, pending)
            pending = ""
        if pending.strip():
            self._add(start, pending)

    def _add(self, line, text):
        keyword, _, args = text.strip().partition(" ")
        keyword, args = keyword.upper(), args.strip()
        if keyword == "FROM":
            words = args.split()
            words = [w for w in words if not w.startswith("--")]  # --platform=...
            base = self.substitute(words[0]) if words else ""
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            self.stages.append(Stage(len(self.stages), base, name, line))
        elif not self.stages:
            if keyword == "ARG":
                key, _, value = args.partition("=")
                self.global_args[key.strip()] = value.strip().strip('"')
        else:
            self.stages[-1].instructions.append(Instruction(line, keyword, args))

    def substitute(self, text):
        def value(m):
            name = m.group(1) or m.group(2)
            return self.global_args.get(name, "")

        return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)", value, text)

    def stage(self, name):
        for s in self.stages:
            if s.name == name or str(s.index) == name:
                return s
        return None


def copy_arguments(args):
    """(flags, sources, destination) of a COPY or ADD, in shell or JSON form."""
    flags, rest = {}, args.strip()
    while True:
        m = re.match(r"--([A-Za-z-]+)(?:=(\S*))?\s+", rest)
        if not m:
            break
        flags[m.group(1)] = m.group(2) or ""
        rest = rest[m.end():]
    try:
        words = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
    except ValueError:
        return flags, [], None
    if len(words) < 2:
        return flags, [], None
    return flags, words[:-1], words[-1]


def apt_packages(stage):
    """Packages the stage's RUN instructions `apt-get install`, in order."""
    packages = []
    for ins in stage.instructions:
        if ins.keyword != "RUN":
            continue
        for m in re.finditer(r"\bapt(?:-get)?\s+install\b(.*?)(?:&&|\|\||;|\||$)", ins.args):
            for word in m.group(1).split():
                if word.startswith("-"):
                    continue
                packages.append(word.split("=", 1)[0])
    return packages


def labels(stage):
    found = {}
    for ins in stage.instructions:
        if ins.keyword != "LABEL":
            continue
        for word in shlex.split(ins.args):
            key, _, value = word.partition("=")
            found[key] = value
    return found


def last(stage, keyword):
    matches = [ins for ins in stage.instructions if ins.keyword == keyword]
    return matches[-1] if matches else None


# ---------------------------------------------------------------- the repository's other files


def yaml_scalars(path):
    """{"a.b.c": "value"} for the block mappings of a YAML file (enough for values.yaml: no
    anchors or multi-line scalars are needed by this check; list items are skipped)."""
    result, stack = {}, []  # stack of (indent, key)
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#") or line.lstrip().startswith("-"):
                continue
            m = re.match(r"^(\s*)([A-Za-z0-9_.-]+):(?:\s+(.*))?$", line)
            if not m:
                continue
            indent, key, value = len(m.group(1)), m.group(2), (m.group(3) or "")
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append((indent, key))
            value = re.sub(r"\s+#.*$", "", value).strip()
            if value:
                result[".".join(k for _, k in stack)] = value.strip("\"'")
    return result


def makefile_images(path):
    """(IMAGES, the text of the `image` function) of the Makefile."""
    images, image_ref = None, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^IMAGES\s*:?=\s*(.*)$", line)
            if m:
                images = m.group(1).split()
            m = re.match(r"^image\s*:?=\s*(.*)$", line)
            if m:
                image_ref = m.group(1).strip()
    return images, image_ref


def required_top_level(source_dir, copied):
    """Top-level entries the build reads: the root CMakeLists.txt's add_subdirectory, any
    ${CMAKE_SOURCE_DIR}/<x> in a CMake file, and <x> in a copied source's #include "<x>/...".
    Only entries the repository has count (.tools, for one, is made by install-deps.sh)."""
    needed = set()
    root_cmake = os.path.join(source_dir, "CMakeLists.txt")
    if os.path.exists(root_cmake):
        with open(root_cmake, encoding="utf-8") as f:
            needed.update(re.findall(r"add_subdirectory\(\s*([A-Za-z0-9_.-]+)", f.read()))
    cmake_files, sources = [], []
    for top in copied:
        base = os.path.join(source_dir, top)
        files = [base] if os.path.isfile(base) else \
            [os.path.join(d, f) for d, _, names in os.walk(base) for f in names]
        for path in files:
            name = os.path.basename(path)
            if name == "CMakeLists.txt" or name.endswith(".cmake"):
                cmake_files.append(path)
            elif name.endswith((".cpp", ".h", ".cc", ".hpp", ".cu", ".cuh")):
                sources.append(path)
    for path in cmake_files:
        with open(path, encoding="utf-8", errors="replace") as f:
            needed.update(re.findall(r"\$\{(?:CMAKE|PROJECT)_SOURCE_DIR\}/([A-Za-z0-9_.-]+)",
                                     f.read()))
    for path in sources:
        with open(path, encoding="utf-8", errors="replace") as f:
            needed.update(re.findall(r'^\s*#\s*include\s+"([A-Za-z0-9_.-]+)/', f.read(), re.M))
    return {n for n in needed
            if not n.startswith(".") and os.path.exists(os.path.join(source_dir, n))}


# ---------------------------------------------------------------- dpkg and the dynamic linker


def run(argv):
    env = dict(os.environ, LC_ALL="C")
    return subprocess.run(argv, capture_output=True, text=True, env=env, check=False)


class PackageDatabase:
    """The installed packages' dependencies and provides, as dpkg records them."""

    def __init__(self):
        fields = "${Package}\t${Status}\t${Essential}\t${Priority}\t${Provides}\t" \
                 "${Pre-Depends}\t${Depends}\n"
        out = run(["dpkg-query", "-W", "-f", fields]).stdout
        self.depends, self.providers, self.base_roots = {}, {}, {"apt"}
        for line in out.splitlines():
            parts = line.split("\t")
            if len(parts) != 7 or not parts[1].endswith(" installed"):
                continue
            name, _, essential, priority, provides, pre, deps = parts
            groups = [g for g in (pre + "," + deps).split(",") if g.strip()]
            self.depends[name] = [[alternative(a) for a in g.split("|")] for g in groups]
            for p in provides.split(","):
                if p.strip():
                    self.providers.setdefault(alternative(p), set()).add(name)
            if essential == "yes" or priority == "required":
                self.base_roots.add(name)
        self.base = self.closure(self.base_roots)

    def installed(self, name):
        return name in self.depends

    def closure(self, roots):
        """The packages apt installs for `roots`: their dependencies, where an alternative
        ("a | b", or a virtual package) is satisfied by a package already chosen, else by its
        first alternative installed here (the one apt would pick, as far as dpkg can tell)."""
        chosen = {r for r in roots if r in self.depends}
        queue = sorted(chosen)
        while queue:
            for group in self.depends.get(queue.pop(0), []):
                if any(a in chosen or self.providers.get(a, set()) & chosen for a in group):
                    continue
                pick = None
                for a in group:
                    if a in self.depends:
                        pick = a
                    elif self.providers.get(a):
                        pick = sorted(self.providers[a])[0]
                    if pick:
                        break
                if pick and pick not in chosen:
                    chosen.add(pick)
                    queue.append(pick)
        return chosen


def alternative(text):
    """'libfoo1:any (>= 1.2)' -> 'libfoo1'."""
    return text.strip().split(" ")[0].split("(")[0].split(":")[0].strip()


def merged_usr_variants(path):
    """The path as dpkg may record it: /lib and /usr/lib are one directory on Debian 12."""
    variants = [path]
    for a, b in (("/lib/", "/usr/lib/"), ("/lib64/", "/usr/lib64/"), ("/bin/", "/usr/bin/")):
        if path.startswith(a):
            variants.append(b + path[len(a):])
        elif path.startswith(b):
            variants.append(a + path[len(b):])
    return variants


def owners_of(paths):
    """{path: set of packages} for each path `dpkg -S` knows (one call for all of them)."""
    owners = {}
    if not paths:
        return owners
    out = run(["dpkg", "-S"] + sorted(paths)).stdout
    for line in out.splitlines():
        if line.startswith(("diversion by", "local diversion")):
            continue
        m = re.match(r"^(.*?): (/.*)$", line)
        if m:
            pkgs = {alternative(p) for p in m.group(1).split(",")}
            owners.setdefault(m.group(2), set()).update(pkgs)
    return owners


class Library:
    def __init__(self, soname, path):
        self.soname, self.path, self.packages = soname, path, set()


def ldd(binary):
    """(libraries ldd resolves, sonames it cannot find), or raises on failure."""
    result = run(["ldd", binary])
    if result.returncode != 0:
        raise RuntimeError(f"ldd {binary} failed: {(result.stderr or result.stdout).strip()}")
    found, missing = [], []
    for line in result.stdout.splitlines():
        line = line.strip()
        m = re.match(r"^(\S+)\s+=>\s+not found", line)
        if m:
            missing.append(m.group(1))
            continue
        m = re.match(r"^(\S+)\s+=>\s+(/\S+)\s+\(", line)
        if m:
            found.append(Library(m.group(1), m.group(2)))
            continue
        m = re.match(r"^(/\S+)\s+\(", line)  # The dynamic loader.
        if m:
            found.append(Library(os.path.basename(m.group(1)), m.group(1)))
    return found, missing


def needed(binary):
    out = run(["readelf", "-d", binary]).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def resolve_packages(libraries):
    """Fills Library.packages: the owner of the file itself (its realpath, e.g. an alternative's
    target) first, else of the path ldd printed; each in its /lib and /usr/lib spelling."""
    candidates = {}
    for lib in libraries:
        real = os.path.realpath(lib.path)
        candidates[lib] = (merged_usr_variants(real), merged_usr_variants(lib.path))
    all_paths = {p for pair in candidates.values() for group in pair for p in group}
    owners = owners_of(all_paths)
    for lib, groups in candidates.items():
        for group in groups:
            for p in group:
                lib.packages |= owners.get(p, set())
            if lib.packages:
                break


# ---------------------------------------------------------------- the checks


def check_copies(name, df, args, problems):
    """(a): context paths exist; build-stage binaries are built and exist. Returns the
    binaries the final stage copies from the build stage."""
    final = df.stages[-1]
    binaries, copied = [], set()
    for stage in df.stages:
        for ins in stage.instructions:
            if ins.keyword not in ("COPY", "ADD"):
                continue
            flags, sources, dest = copy_arguments(ins.args)
            if dest is None:
                problems.add(name, f"line {ins.line}: cannot read {ins.keyword} {ins.args}")
                continue
            source_stage = flags.get("from")
            for src in sources:
                if source_stage is None:
                    rel = os.path.normpath(src.lstrip("/"))
                    if rel.startswith(".."):
                        problems.add(name, f"line {ins.line}: {src} is outside the build context")
                        continue
                    if not glob.glob(os.path.join(args.source_dir, rel)):
                        problems.add(name, f"line {ins.line}: {ins.keyword} {src}: no such path "
                                           f"in the repository ({args.source_dir})")
                    copied.add(rel.split(os.sep)[0])
                    continue
                build = df.stage(source_stage)
                if build is None:
                    problems.add(name, f"line {ins.line}: COPY --from={source_stage}: no such "
                                       f"stage in {df.path}")
                    continue
                binary = os.path.basename(src)
                runs = " ".join(i.args for i in build.instructions if i.keyword == "RUN")
                if not re.search(r"--target\s+" + re.escape(binary) + r"(\s|$)", runs):
                    problems.add(name, f"line {ins.line}: stage {build.label()} does not build "
                                       f"{binary} (no `cmake --build ... --target {binary}`)")
                if not os.path.isfile(os.path.join(args.bin_dir, binary)):
                    problems.add(name, f"line {ins.line}: {binary} is not in the build "
                                       f"({args.bin_dir}); build it first")
                if stage is final:
                    binaries.append((binary, dest, ins.line))
    for top in sorted(required_top_level(args.source_dir, copied) - copied):
        problems.add(name, f"the build reads {top}/ but the Dockerfile does not COPY it")
    return binaries


def check_final_stage(name, df, binaries, problems, uid):
    final = df.stages[-1]
    if final.name != name:
        problems.add(name, f"the final stage is named {final.label()!r}, expected {name!r} "
                           f"(the image and Makefile target name)")
    if final.base != RUNTIME_BASE:
        problems.add(name, f"the run-time stage is FROM {final.base or '?'}; this check knows "
                           f"only {RUNTIME_BASE} (its libraries are compared with this machine's)")
    for stage in df.stages[:-1]:
        if stage.base != BUILD_BASE:
            problems.add(name, f"stage {stage.label()} is FROM {stage.base}; build on "
                               f"{BUILD_BASE}, the release the run-time base's libraries match")
    binary = "sluice-" + name
    if [b for b, _, _ in binaries] != [binary]:
        problems.add(name, f"the final stage should COPY exactly {binary} from the build stage, "
                           f"copies {[b for b, _, _ in binaries]}")
    for b, dest, line in binaries:
        if dest.rstrip("/") + "/" != BINARY_DIR and dest != BINARY_DIR + b:
            problems.add(name, f"line {line}: {b} goes to {dest}, expected {BINARY_DIR}")
    entry = last(final, "ENTRYPOINT")
    try:
        argv = json.loads(entry.args) if entry else None
    except ValueError:
        argv = None
    if not argv or argv[0] != BINARY_DIR + binary:
        problems.add(name, f"ENTRYPOINT should be the exec form [\"{BINARY_DIR}{binary}\"], is "
                           f"{entry.args if entry else 'missing'}")
    user = last(final, "USER")
    if user is None or user.args.split(":")[0] != str(uid) or \
            user.args.split(":")[-1] != str(uid):
        problems.add(name, f"USER should be {uid}:{uid} (numeric, so runAsNonRoot can verify "
                           f"it; the chart's runAsUser), is {user.args if user else 'missing'}")
    found = labels(final)
    for key in OCI_LABELS:
        if not found.get("org.opencontainers.image." + key):
            problems.add(name, f"the final stage has no org.opencontainers.image.{key} label")
    title = found.get("org.opencontainers.image.title")
    if title and title != REPOSITORY_PREFIX + name:
        problems.add(name, f"org.opencontainers.image.title is {title!r}, expected "
                           f"{REPOSITORY_PREFIX + name!r}")


def check_libraries(name, df, binaries, args, db, problems):
    """(b): the run-time packages against ldd and dpkg -S. Returns a summary line."""
    final = df.stages[-1]
    listed = apt_packages(final)
    if not listed:
        problems.add(name, "the run-time stage installs no packages (apt-get install)")
    unlinked = set()
    for line, words in df.directives:
        if words[:1] == ["unlinked"]:
            unlinked.update(words[1:])
    for pkg in sorted(unlinked - set(listed)):
        problems.add(name, f"{pkg} is declared unlinked but the run-time stage does not "
                           f"install it")
    for pkg in listed:
        if not db.installed(pkg) and pkg not in unlinked:
            problems.add(name, f"{pkg} (run-time list) is not installed on this machine, so the "
                               f"binary here cannot have linked it")
    summary = []
    for binary, _, _ in binaries:
        path = os.path.join(args.bin_dir, binary)
        if not os.path.isfile(path):
            continue  # check_copies said so.
        try:
            libraries, missing = ldd(path)
        except RuntimeError as e:
            problems.add(name, str(e))
            continue
        for soname in missing:
            problems.add(name, f"{binary}: ldd cannot find {soname}")
        resolve_packages(libraries)
        direct = set(needed(path))
        provided = {}  # package -> sonames
        for lib in libraries:
            if not lib.packages:
                problems.add(name, f"{binary}: {lib.soname} ({lib.path}) belongs to no Debian "
                                   f"package (dpkg -S); an image cannot install it")
            for pkg in lib.packages:
                provided.setdefault(pkg, set()).add(lib.soname)
        for lib in libraries:
            if lib.soname in direct and lib.packages and not lib.packages & (
                    set(listed) | TOOLCHAIN):
                problems.add(name, f"{binary} links {lib.soname} directly; add its package "
                                   f"{' or '.join(sorted(lib.packages))} to the run-time "
                                   f"apt-get install list")

        def uncovered(packages):
            have = db.closure(packages) | db.base
            return [lib for lib in libraries if lib.packages and not lib.packages & have]

        for lib in uncovered(listed):
            problems.add(name, f"{binary}: {lib.soname} ({lib.path}) comes from "
                               f"{' or '.join(sorted(lib.packages))}, which neither the run-time "
                               f"packages, their dependencies nor {RUNTIME_BASE} install")
        # Exactness: a listed package that no directly linked library needs must change what
        # ldd resolves (e.g. which BLAS), or be declared unlinked with a reason.
        direct_packages = {p for lib in libraries if lib.soname in direct for p in lib.packages}
        for pkg in listed:
            if pkg in direct_packages or pkg in unlinked or not db.installed(pkg):
                continue
            if not uncovered([p for p in listed if p != pkg]):
                problems.add(name, f"{pkg} is in the run-time list but {binary} needs no "
                                   f"library from it; remove it, or declare it on a "
                                   f"`# check-images: unlinked {pkg}` line with the reason")
        deps = db.closure(listed) - set(listed) - db.base
        summary.append(f"{binary}: {len(libraries)} libraries ({len(direct)} linked directly) "
                       f"from {len(provided)} packages; installs {' '.join(listed)} "
                       f"(+{len(deps)} dependencies not in {RUNTIME_BASE})")
    return summary


# The chart's images that Sluice does not build: the inference servers of RolloutPools with
# spec.engine.type vllm or sglang (the operator's --vllm-image and --sglang-image).
ENGINE_IMAGES = {"vllm": "vllm/vllm-openai", "sglang": "lmsysorg/sglang"}


def check_chart_and_makefile(args, dockerfiles, problems):
    """(c): values.yaml's images, the Makefile's IMAGES and the Dockerfiles agree."""
    values = yaml_scalars(args.values)
    chart = set()
    for key, value in values.items():
        m = re.match(r"^images\.([^.]+)\.repository$", key)
        if m and m.group(1) in ENGINE_IMAGES:
            if value != ENGINE_IMAGES[m.group(1)]:
                problems.add(m.group(1), f"{args.values}: images.{m.group(1)}.repository is "
                                         f"{value!r}, expected {ENGINE_IMAGES[m.group(1)]!r}")
        elif m:
            chart.add(m.group(1))
            if value != REPOSITORY_PREFIX + m.group(1):
                problems.add(m.group(1), f"{args.values}: images.{m.group(1)}.repository is "
                                         f"{value!r}, but the image is built as "
                                         f"{REPOSITORY_PREFIX}{m.group(1)}")
    for n in sorted(chart - set(dockerfiles)):
        problems.add(n, f"{args.values} has images.{n} but there is no docker/{n}.Dockerfile")
    for n in sorted(set(dockerfiles) - chart):
        problems.add(n, f"docker/{n}.Dockerfile has no images.{n}.repository in {args.values}")
    images, image_ref = makefile_images(args.makefile)
    if images is None:
        problems.add("Makefile", f"{args.makefile} defines no IMAGES")
    else:
        for n in sorted(set(images) ^ set(dockerfiles)):
            where = "IMAGES lists" if n in images else "IMAGES lacks"
            problems.add(n, f"{args.makefile}: {where} {n}, docker/ has "
                            f"{sorted(dockerfiles)}")
    if image_ref is None or REPOSITORY_PREFIX + "$(1)" not in image_ref:
        problems.add("Makefile", f"{args.makefile}: the `image` function should tag "
                                 f"[$(REGISTRY)/]{REPOSITORY_PREFIX}$(1):$(TAG), is {image_ref!r}")
    uid = values.get("operator.podSecurityContext.runAsUser")
    hardening = os.path.join(args.source_dir, "operator/controllers/pod_hardening.h")
    if os.path.exists(hardening):
        with open(hardening, encoding="utf-8") as f:
            m = re.search(r"kWorkerUid\s*=\s*(\d+)", f.read())
        if m and uid and m.group(1) != uid:
            problems.add("chart", f"runAsUser {uid} differs from the worker pods' kWorkerUid "
                                  f"{m.group(1)}")
    return int(uid) if uid and uid.isdigit() else 65532


def debian_12():
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return False
    return bool(re.search(r'^ID="?debian"?$', text, re.M)) and \
        bool(re.search(r'^VERSION_ID="?12"?$', text, re.M))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", required=True, help="the build's bin directory")
    parser.add_argument("--source-dir", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--docker-dir", help="default: <source-dir>/docker")
    parser.add_argument("--values", help="default: <source-dir>/helm/sluice/values.yaml")
    parser.add_argument("--makefile", help="default: <source-dir>/Makefile")
    parser.add_argument("--image", action="append", default=[],
                        help="check only these images' files and libraries (repeatable); the "
                             "chart/Makefile comparison always covers every Dockerfile")
    parser.add_argument("--only-built", action="store_true",
                        help="skip the images whose binary (sluice-<name>) the bin directory "
                             "lacks, saying so (a build without libtorch has no rollout/trainer)")
    args = parser.parse_args()
    args.source_dir = os.path.abspath(args.source_dir)
    args.docker_dir = args.docker_dir or os.path.join(args.source_dir, "docker")
    args.values = args.values or os.path.join(args.source_dir, "helm/sluice/values.yaml")
    args.makefile = args.makefile or os.path.join(args.source_dir, "Makefile")

    if not debian_12() or run(["sh", "-c", "command -v dpkg && command -v ldd && "
                                           "command -v readelf"]).returncode != 0:
        print("check-images: skipped: needs Debian 12 (the images' release) with dpkg, ldd and "
              "readelf", flush=True)
        return SKIP

    dockerfiles = {}
    for path in sorted(glob.glob(os.path.join(args.docker_dir, "*.Dockerfile"))):
        dockerfiles[os.path.basename(path)[:-len(".Dockerfile")]] = path
    problems = Problems()
    if not dockerfiles:
        problems.add("docker", f"no *.Dockerfile in {args.docker_dir}")
    for n in args.image:
        if n not in dockerfiles:
            problems.add(n, f"no {args.docker_dir}/{n}.Dockerfile")
    uid = check_chart_and_makefile(args, dockerfiles, problems)

    db, checked = PackageDatabase(), []
    for name, path in dockerfiles.items():
        if args.image and name not in args.image:
            continue
        if args.only_built and not os.path.isfile(os.path.join(args.bin_dir, "sluice-" + name)):
            print(f"check-images: {name}: skipped: sluice-{name} is not in {args.bin_dir}",
                  flush=True)
            continue
        checked.append(name)
        df = Dockerfile(path)
        if len(df.stages) < 2:
            problems.add(name, "needs a build stage and a run-time stage")
            continue
        binaries = check_copies(name, df, args, problems)
        check_final_stage(name, df, binaries, problems, uid)
        for line in check_libraries(name, df, binaries, args, db, problems):
            print(f"check-images: {name}: {line}", flush=True)

    if problems.items:
        print(f"check-images: FAILED: {len(problems.items)} problem(s) in {checked}", flush=True)
        return 1
    if not checked:
        print(f"check-images: skipped: no image's binary is in {args.bin_dir}", flush=True)
        return SKIP
    print(f"check-images: OK: {checked}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Checks that scripts/check-time-sources.py catches direct clock reads: a tree with a direct
steady_clock::now(), one through an alias, and one in a main.cpp or an allowed file."""
import pathlib
import subprocess
import sys
import tempfile

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "check-time-sources.py"


def run(tree):
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        for rel, text in tree.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        r = subprocess.run([sys.executable, str(SCRIPT), "--source-dir", str(root)],
                           capture_output=True, text=True)
        return r.returncode, r.stdout


def main():
    failures = []

    def expect(name, tree, code, needle=""):
        got, out = run(tree)
        if got != code or needle not in out:
            failures.append(f"{name}: exit {got} (want {code}), output:\n{out}")

    direct = "auto t = std::chrono::steady_clock::now();\n"
    expect("direct read", {"workers/x/a.cpp": "int a;\n" + direct}, 1, "workers/x/a.cpp:2")
    expect("system clock", {"operator/b.h": "auto w = std::chrono::system_clock::now();\n"}, 1,
           "operator/b.h:1")
    expect("alias", {"kube/c.cpp": "using Steady = std::chrono::steady_clock;\n"
                                   "void F() { auto t = Steady::now(); }\n"}, 1, "kube/c.cpp:2")
    expect("main.cpp may", {"workers/x/main.cpp": direct}, 0)
    expect("a sluice::Clock", {"workers/x/d.cpp": "auto t = clock.Now();\n"
                                                  "std::chrono::steady_clock::time_point p;\n"}, 0)
    expect("an allowed edge", {"common/http/server.cpp": direct}, 0)
    expect("tests not checked", {"tests/t.cpp": direct}, 0)
    # The real tree is clean.
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    if r.returncode != 0:
        failures.append("the source tree:\n" + r.stdout)
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

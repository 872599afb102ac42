#!/usr/bin/env python3
"""Fails when code below main reads a std::chrono clock directly instead of a sluice::Clock.

Decisions and the durations a component reports take their time from common/clock.h (a Clock
passed in, SystemClock::Instance() by default), so tests can drive them with a FakeClock. The
files listed in ALLOWED are I/O edges: timeouts of blocking calls (sockets, processes, condition
variables) and latencies measured around them, which must be real time. A program's main.cpp
may read the clocks too. Tests and benchmarks are not checked.

Usage: check-time-sources.py [--source-dir DIR]    exit 0: clean; 1: offenders listed.
"""
import argparse
import pathlib
import re
import sys

CHECKED_DIRS = ["api", "common", "demo", "kube", "localcluster", "operator", "workers"]

# path -> why it may read real time directly.
ALLOWED = {
    "common/clock.h": "the system clock itself",
    "common/process/cancellation.cpp": "real-time waits on a condition variable",
    "common/http/connection_stream.cpp": "socket waits bounded by a request's deadline",
    "common/http/deadline_server.cpp": "a request's read deadline and a refusal's linger",
    "common/http/server.cpp": "request latencies and the shutdown drain of an HTTP server",
    "kube/exec_credential.cpp": "the time limit of the credential plugin's process",
    "localcluster/apiserver/api_server_watch.cpp": "watch requests' timeouts",
    "localcluster/apiserver/watch_hub.cpp": "a watcher's wait on a condition variable",
    "localcluster/cli/crd_install.cpp": "the CLI waits for the API server to serve the CRDs",
    "localcluster/cli/detached_process.cpp": "the CLI waits for a started process",
    "localcluster/cli/health.cpp": "the CLI waits for a server's /readyz",
    "localcluster/cli/run_command.cpp": "sluice run's polling of a live job",
    "localcluster/node/container_process.cpp": "process waits and the CRI log's real stamps",
    "localcluster/node/kubelet_server.cpp": "sinceSeconds against the CRI log's real stamps",
    "localcluster/node/pod_worker.cpp": "the grace of stopping real processes",
    "localcluster/node/probe.cpp": "probe timeouts on sockets and processes",
    "workers/dataflow/dataflow_core_status.cpp": "the long-poll's condition variable wait",
    "workers/dataflow/dataflow_service.cpp": "long-poll deadlines and request latencies",
    "workers/dataflow/write_ahead_log.cpp": "the latency of fsync",
    "workers/rollout/environments/http_environment.cpp": "an HTTP environment call's timeout",
    "workers/rollout/sandbox/sandboxed_process.cpp": "a sandboxed program's time limit",
}

STD_CLOCK = r"std::chrono::(?:steady_clock|system_clock|high_resolution_clock)"
ALIAS = re.compile(r"using\s+(\w+)\s*=\s*" + STD_CLOCK + r"\s*;")


def offending_lines(text):
    """Line numbers of direct reads of a std::chrono clock (through an alias too)."""
    names = [STD_CLOCK] + [re.escape(a) for a in ALIAS.findall(text)]
    now = re.compile(r"(?<![\w:])(?:" + "|".join(names) + r")::now\s*\(")
    return [i + 1 for i, line in enumerate(text.splitlines()) if now.search(line)]


def check(source_dir):
    # In the project tree (not a test's), a stale entry is an error too.
    offenders = [f"{rel}: listed in ALLOWED but missing" for rel in ALLOWED
                 if (source_dir / "CMakeLists.txt").is_file()
                 and not (source_dir / rel).is_file()]
    for top in CHECKED_DIRS:
        root = source_dir / top
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.suffix not in (".h", ".cpp", ".cc") or path.name == "main.cpp":
                continue
            rel = path.relative_to(source_dir).as_posix()
            if rel in ALLOWED:
                continue
            lines = offending_lines(path.read_text(errors="replace"))
            offenders += [f"{rel}:{n}" for n in lines]
    return offenders


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source-dir", default=pathlib.Path(__file__).resolve().parent.parent,
                        type=pathlib.Path)
    args = parser.parse_args()
    offenders = check(args.source_dir)
    if offenders:
        print("direct reads of a std::chrono clock below main (take a sluice::Clock from "
              "common/clock.h, or list an I/O edge in scripts/check-time-sources.py):")
        for o in offenders:
            print("  " + o)
        return 1
    print(f"time sources: clean ({len(ALLOWED)} I/O edges allowed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""What a server's threads wait behind for a CPU, from the scheduler's trace.

A thread that is woken (or preempted) is runnable but waits on a run queue until it is switched
in. For the threads of --pid whose name starts with --threads (oxbowd's put path: gRPC's
`grpcpp_sync_ser` threads), this prints, for each phase, how long those waits were, what ran on
the CPUs during them (or whether a CPU sat idle), and from whom each wait's thread got its CPU.

Each second of the trace is a phase by what the rest of --pid did in it: "background busy" when
its other threads ran more than --busy-ms, "background quiet" when less than --quiet-ms, and
skipped otherwise or when the --threads threads ran less than --min-ms (no load to speak of).
For lake_bench.py's flat-out pair that splits tiering on from tiering off (docs/bench.md).

Usage, as root:
    perf record -e sched:sched_switch -e sched:sched_wakeup -a -o sched.data -- sleep 60
    perf script -i sched.data -F comm,pid,tid,cpu,time,event,trace > sched.txt
    sched_wait.py sched.txt --pid <oxbowd> [--client-pid <producers>] [--threads grpc]
"""

from __future__ import annotations

import argparse
import bisect
import collections
import re
import sys

HEADER = re.compile(r"^\s*(\S.*?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)$")
SWITCH = re.compile(r"prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> "
                    r"next_comm=(.*?) next_pid=(\d+)")
WAKEUP = re.compile(r"comm=(.*?) pid=(\d+) prio=\d+ target_cpu=(\d+)")
PHASES = ("background busy", "background quiet")


class Trace:
    """Who ran on each CPU when, and each runnable-to-running wait, from `perf script` lines."""

    def __init__(self, lines):
        self.pid_of, self.comm_of = {}, {}
        self.runs = collections.defaultdict(list)  # cpu -> [(start, end, tid)]
        self.waits = []  # (tid, runnable since, switched in, tid it took the CPU from)
        self.start = None
        running, runnable = {}, {}
        for line in lines:
            m = HEADER.match(line)
            if not m:
                continue
            comm, pid, tid, cpu, now, event, rest = m.groups()
            pid, tid, cpu, now = int(pid), int(tid), int(cpu), float(now)
            self.start = now if self.start is None else self.start
            if tid:
                self.pid_of[tid], self.comm_of[tid] = pid, comm
            if event.endswith("sched_switch"):
                s = SWITCH.search(rest)
                if not s:
                    continue
                prev, state, nxt = int(s.group(2)), s.group(3), int(s.group(5))
                self.comm_of.setdefault(nxt, s.group(4))
                if cpu in running:
                    self.runs[cpu].append((running[cpu][1], now, running[cpu][0]))
                running[cpu] = (nxt, now)
                if state.startswith("R") and prev:  # preempted: runnable at once
                    runnable[prev] = now
                if nxt in runnable:
                    self.waits.append((nxt, runnable.pop(nxt), now, prev))
            elif event.endswith("sched_wakeup"):
                w = WAKEUP.search(rest)
                if w:
                    self.comm_of.setdefault(int(w.group(2)), w.group(1))
                    runnable.setdefault(int(w.group(2)), now)
        for runs in self.runs.values():
            runs.sort()
        self.run_starts = {cpu: [r[0] for r in runs] for cpu, runs in self.runs.items()}

    def ran_during(self, a: float, b: float):
        """(tid, seconds) of every run overlapping [a, b], on every CPU."""
        for cpu, runs in self.runs.items():
            i = max(0, bisect.bisect_right(self.run_starts[cpu], a) - 1)
            while i < len(runs) and runs[i][0] < b:
                overlap = min(runs[i][1], b) - max(runs[i][0], a)
                if overlap > 0:
                    yield runs[i][2], overlap
                i += 1


def analyse(trace: Trace, args) -> dict:
    def is_target(tid):
        return trace.pid_of.get(tid) == args.pid and trace.comm_of.get(tid, "").startswith(args.threads)

    def category(tid):
        if tid == 0:
            return "idle"
        pid, comm = trace.pid_of.get(tid), trace.comm_of.get(tid, "?")
        if pid == args.pid:
            return f"server {args.threads}*" if comm.startswith(args.threads) else "server, other threads"
        if args.client_pid and pid == args.client_pid:
            return "client"
        return "kworker" if comm.startswith("kworker") else comm.split("/")[0]

    target_s, background_s = collections.Counter(), collections.Counter()
    cpu_s = collections.defaultdict(collections.Counter)
    for runs in trace.runs.values():
        for a, b, tid in runs:
            second = int(a - trace.start)
            cpu_s[second][category(tid)] += b - a
            if trace.pid_of.get(tid) == args.pid:
                (target_s if is_target(tid) else background_s)[second] += b - a

    def phase(second):
        if target_s[second] * 1e3 < args.min_ms:
            return None
        busy = background_s[second] * 1e3
        return PHASES[0] if busy > args.busy_ms else PHASES[1] if busy < args.quiet_ms else None

    result = {p: {"seconds": set(), "waits": 0, "wait_s": 0.0, "during": collections.Counter(),
                  "took_from": collections.Counter(), "cpu": collections.Counter()} for p in PHASES}
    for second, counts in cpu_s.items():
        if (p := phase(second)):
            result[p]["seconds"].add(second)
            result[p]["cpu"].update(counts)
    for tid, a, b, prev in trace.waits:
        p = phase(int(a - trace.start))
        if not p or not is_target(tid):
            continue
        r = result[p]
        r["waits"] += 1
        r["wait_s"] += b - a
        r["took_from"][category(prev)] += b - a
        for other, overlap in trace.ran_during(a, b):
            if other != tid:
                r["during"][category(other)] += overlap
    return result


def report(result: dict, threads: str) -> None:
    for p in PHASES:
        r = result[p]
        n = len(r["seconds"])
        if not n:
            print(f"{p}: no seconds in this phase")
            continue
        print(f"{p}: {n} s; {threads}* threads waited for a CPU {r['waits'] / n:.0f} times a second, "
              f"{1e3 * r['wait_s'] / n:.1f} ms per s in all, mean {1e6 * r['wait_s'] / max(r['waits'], 1):.0f} us")
        for title, counts in (("  ran on the CPUs during those waits, ms per s (both CPUs):", r["during"]),
                              ("  took the CPU from, ms of wait per s:", r["took_from"]),
                              ("  all CPU time in the phase, ms per s:", r["cpu"])):
            print(title)
            for name, s in counts.most_common(8):
                print(f"    {name}: {1e3 * s / n:.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace", help="`perf script -F comm,pid,tid,cpu,time,event,trace` output")
    parser.add_argument("--pid", type=int, required=True, help="the server's process id")
    parser.add_argument("--threads", default="grpc", help="name prefix of the threads to follow")
    parser.add_argument("--client-pid", type=int, default=0, help="the load generator's process id")
    parser.add_argument("--busy-ms", type=float, default=200, help="other server threads' ms per s for 'busy'")
    parser.add_argument("--quiet-ms", type=float, default=50, help="... and for 'quiet'")
    parser.add_argument("--min-ms", type=float, default=300, help="the followed threads' least ms per s")
    args = parser.parse_args()
    with open(args.trace, errors="replace") as f:
        trace = Trace(f)
    if trace.start is None:
        print(f"{args.trace}: no perf script lines", file=sys.stderr)
        return 1
    report(analyse(trace, args), args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())

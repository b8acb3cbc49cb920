"""What the side-by-side benchmarks against JVM peers share (bench/vs_kafka.py, bench/vs_fluss.py):
fetching the peer's jars with Maven, compiling the Java load generator, sampling the servers'
memory, and progress lines."""

from __future__ import annotations

import ctypes
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import threading
import time

from server_bench import proc_status

BENCH_DIR = pathlib.Path(__file__).resolve().parent
MAVEN_GOAL = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def busy_cpus(seconds: float) -> float:
    """How many CPUs the whole machine kept busy over the next `seconds` (from /proc/stat)."""
    def sample() -> tuple[int, int]:
        fields = [int(v) for v in open("/proc/stat").readline().split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return sum(fields[:8]) - idle, sum(fields[:8])
    busy0, total0 = sample()
    time.sleep(seconds)
    busy1, total1 = sample()
    cpus = os.cpu_count() or 1
    return cpus * (busy1 - busy0) / max(1, total1 - total0)


def wait_until_quiet(limit: float = 0.2, timeout: float = 30.0) -> bool:
    """Waits (at most `timeout` s) until the machine keeps under `limit` CPUs busy over half a
    second, so that one system's background work (a flush, a compaction, a collection) does not
    run inside the other's measurement. False when it stayed busy."""
    deadline = time.monotonic() + timeout
    while busy_cpus(0.5) > limit:
        if time.monotonic() > deadline:
            return False
    return True


def die_with_parent() -> None:
    """In a child before exec: SIGTERM it if this driver dies, so no server outlives a crash."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def maven_pom(artifact: str, dependencies: list[tuple[str, str, str]]) -> str:
    """A POM whose only content is its (group, artifact, version) dependencies."""
    deps = "".join(f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
                   f"<version>{v}</version></dependency>\n" for g, a, v in dependencies)
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n"
            "  <modelVersion>4.0.0</modelVersion>\n"
            f"  <groupId>oxbow</groupId><artifactId>{artifact}</artifactId><version>1</version>\n"
            f"  <dependencies>\n{deps}  </dependencies>\n</project>\n")


def fetch_classpath(what: str, pom_text: str, directory: pathlib.Path) -> str:
    """The classpath of `pom_text`'s dependencies, resolved by Maven into `directory` on first
    use (its m2/ holds the jars)."""
    directory.mkdir(parents=True, exist_ok=True)
    pom, classpath_file = directory / "pom.xml", directory / "classpath.txt"
    for _ in range(2):
        if pom.is_file() and pom.read_text() == pom_text and classpath_file.is_file():
            jars = classpath_file.read_text().strip().split(":")
            if all(os.path.isfile(jar) for jar in jars):
                return ":".join(jars)
        if shutil.which("mvn") is None:
            sys.exit(f"{sys.argv[0]}: mvn not found: run scripts/setup.sh (Debian package maven)")
        log(f"fetching {what} from Maven Central into {directory}")
        pom.write_text(pom_text)
        classpath_file.unlink(missing_ok=True)
        proc = subprocess.run(
            ["mvn", "-q", "-B", "-f", str(pom), f"-Dmaven.repo.local={directory / 'm2'}",
             MAVEN_GOAL, f"-Dmdep.outputFile={classpath_file}"],
            capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            sys.exit(f"{sys.argv[0]}: mvn failed ({proc.returncode}):\n{proc.stdout[-3000:]}")
    sys.exit(f"{sys.argv[0]}: {classpath_file} names jars that Maven did not fetch")


def compile_java(main: str, classpath: str, classes: pathlib.Path) -> pathlib.Path:
    """Compiles bench/<main>.java with bench/BenchSupport.java into `classes` when a source is
    newer than its class file."""
    sources = [BENCH_DIR / f"{main}.java", BENCH_DIR / "BenchSupport.java"]
    compiled = classes / f"{main}.class"
    newest = max(source.stat().st_mtime for source in sources)
    if not compiled.is_file() or compiled.stat().st_mtime < newest:
        if shutil.which("javac") is None:
            sys.exit(f"{sys.argv[0]}: javac not found: run scripts/setup.sh "
                     "(Debian package openjdk-17-jdk-headless)")
        log(f"compiling bench/{main}.java")
        classes.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["javac", "-d", str(classes), "-cp", classpath,
                               *map(str, sources)],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            sys.exit(f"{sys.argv[0]}: javac failed:\n{proc.stderr}")
    return classes


class MemorySampler:
    """Polls VmRSS and RssAnon of some processes every 50 ms and keeps each one's peaks."""

    def __init__(self, pids: dict[str, int]):
        self.pids = pids
        self._lock = threading.Lock()
        self.reset()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            for name, pid in self.pids.items():
                try:
                    rss, anon = proc_status(pid, "VmRSS"), proc_status(pid, "RssAnon")
                except (FileNotFoundError, ProcessLookupError):
                    continue
                with self._lock:
                    self._rss[name] = max(self._rss[name], rss)
                    self._anon[name] = max(self._anon[name], anon)

    def reset(self) -> None:
        with self._lock:
            self._rss, self._anon = dict.fromkeys(self.pids, 0), dict.fromkeys(self.pids, 0)

    def peaks(self) -> tuple[dict[str, int], dict[str, int]]:
        """Peak VmRSS and peak RssAnon of each process since the last reset()."""
        with self._lock:
            return dict(self._rss), dict(self._anon)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

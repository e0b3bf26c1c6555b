"""The official RocketMQ 4.9.8 Java client and mqadmin (vendored in `integration_tests/java/`) as test clients.

    java = JavaClients.prepare(workdir)                # per session: apt when needed, the drivers compiled once
    out = java.mqadmin("clusterList", "-n", namesrv)   # mqadmin's output (stdout + stderr); it always exits 0
    outs = java.mqadmin_batch([["topicList", "-n", namesrv], ["clusterList", "-n", namesrv]])  # one JVM for all
    handle = java.start("PushConsume", namesrv, "CLUSTERING", "GID", 10, 30, timeout=60, home=tmp_path)
    handle.wait_for("consumer_started", 20)            # a cppclient.DriverHandle: JSON-line events
    java.run("Produce", namesrv, 10, timeout=60)       # start + wait

The two jars need Debian's netty/commons/slf4j/logback jars at run time and `javac` to compile the drivers:
when any is missing, `apt-get install` brings them (as the container test installs Podman). Each driver runs with
`-Duser.home=<home>`: the client's logs (`logs/rocketmqlogs/`) and broadcasting offsets (`.rocketmq_offsets/`)
go there, so a test chooses whether two runs share a client's local state.

The drivers (integration_tests/java/src/*.java and the parity suite's ParityClient.java) are compiled once per
machine into `~/.cache/rocketmq-emulator-tests/java-classes-<hash of the sources and jars>`, under a file lock:
parallel test workers (pytest-xdist) wait for the first one's javac instead of running their own, and apt-get
runs under the same lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from filelock import FileLock

from .cppclient import DriverHandle

HERE = Path(__file__).resolve().with_name("java")
DEBIAN_JARS = Path("/usr/share/java")
#: what the client and mqadmin need at run time (netty 4.1, commons-*, snakeyaml, slf4j; logback for mqadmin)
RUNTIME_JARS = ("netty-buffer", "netty-codec", "netty-common", "netty-handler", "netty-resolver", "netty-transport",
                "netty-transport-native-epoll", "netty-transport-native-unix-common", "commons-lang3",
                "commons-validator", "commons-collections3", "commons-cli", "commons-codec", "snakeyaml",
                "slf4j-api", "zstd-jni", "lz4-java")
TOOLS_JARS = ("logback-classic", "logback-core")
APT_PACKAGES = ("default-jdk-headless", "libnetty-java", "libcommons-lang3-java", "libcommons-cli-java",
                "libcommons-validator-java", "libcommons-collections3-java", "libcommons-codec-java",
                "libyaml-snake-java", "libslf4j-java", "liblogback-java", "libzstd-jni-java", "liblz4-java")
DRIVERS = ("Produce", "PushConsume", "LitePull", "MQAdminPlus", "RequestReply", "SqlConsume", "TxProduce",
           "AclClient")
#: the parity suite's driver (ordered sends, a failing consumer): compiled with the others
PARITY_CLIENT = HERE.parents[1] / "tests" / "parity" / "clients" / "java" / "ParityClient.java"


def _cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rocketmq-emulator-tests"


def _missing() -> list[str]:
    missing = [] if shutil.which("javac") and shutil.which("java") else ["javac"]
    return missing + [j for j in RUNTIME_JARS + TOOLS_JARS if not (DEBIAN_JARS / f"{j}.jar").exists()]


def install_prerequisites() -> None:
    """apt-get install the JDK and the jars when any is missing (CI machines are root, as the project's are)."""
    if not _missing():
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", "install", "-y", "-q", *APT_PACKAGES], check=True, env=env, stdout=subprocess.DEVNULL)
    still = _missing()
    if still:
        raise RuntimeError(f"after apt-get install, still missing: {', '.join(still)}")


class JavaClients:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.classes = workdir / "classes"
        self.rmq_home = workdir / "rmqhome"
        jars = [HERE / "lib" / "rocketmq-4.9.8-all.jar", HERE / "lib" / "fastjson-1.2.69.jar"]
        self.client_cp = [str(self.classes), *map(str, jars), *(str(DEBIAN_JARS / f"{j}.jar") for j in RUNTIME_JARS)]
        self.tools_cp = self.client_cp + [str(DEBIAN_JARS / f"{j}.jar") for j in TOOLS_JARS]

    @classmethod
    def prepare(cls, workdir: str | os.PathLike) -> JavaClients:
        """Install what is missing, compile the drivers (once per machine), lay out mqadmin's home in `workdir`."""
        cache = _cache_root()
        cache.mkdir(parents=True, exist_ok=True)
        sources = [HERE / "src" / f"{name}.java" for name in DRIVERS] + [PARITY_CLIENT]
        with FileLock(str(cache / "java.lock"), timeout=900):
            install_prerequisites()
            self = cls(Path(workdir))
            key = hashlib.sha256()
            for path in [*sources, *map(Path, self.tools_cp[1:])]:
                key.update(str(path).encode() + b"\0" + (path.read_bytes() if path.suffix == ".java" else
                                                         str(path.stat().st_mtime_ns).encode()))
            self.classes = cache / f"java-classes-{key.hexdigest()[:16]}"
            if not (self.classes / ".complete").exists():
                staging = self.classes.with_name(f"{self.classes.name}.tmp-{os.getpid()}")
                shutil.rmtree(staging, ignore_errors=True)
                staging.mkdir()
                subprocess.run(["javac", "-nowarn", "--release", "8", "-cp", os.pathsep.join(self.tools_cp[1:]),
                                "-d", str(staging), *map(str, sources)], check=True, capture_output=True, text=True)
                (staging / ".complete").write_text("")
                shutil.rmtree(self.classes, ignore_errors=True)
                staging.rename(self.classes)
        self.client_cp[0] = self.tools_cp[0] = str(self.classes)
        shutil.copytree(HERE / "conf", self.rmq_home / "conf", dirs_exist_ok=True)
        return self

    def _java(self, home: Path, cp: list[str], main: str, args: tuple[object, ...],
              props: dict[str, str] | None = None) -> list[str]:
        home.mkdir(parents=True, exist_ok=True)
        return ["java", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", f"-Duser.home={home}",
                f"-Drocketmq.home.dir={self.rmq_home}", "-Drocketmq.client.logUseSlf4j=false",
                *(f"-D{k}={v}" for k, v in (props or {}).items()), "-cp", os.pathsep.join(cp), main, *map(str, args)]

    def mqadmin(self, *args: object, timeout: float = 60, home: Path | None = None) -> str:
        """Run `mqadmin ARGS` (plus getConsumerStatus, which 4.9.8 ships but does not register); its output.
        mqadmin prints an exception and still exits 0, so callers judge the text. It runs in `home` (default:
        the session's), where consumerStatus writes its `<now>/<clientId>` files."""
        home = home or self.workdir / "home"
        cmd = self._java(home, self.tools_cp, "MQAdminPlus", args)
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout,
                              stdin=subprocess.DEVNULL, cwd=home)
        return proc.stdout + proc.stderr

    def mqadmin_batch(self, commands: list[list[object] | tuple[list[object], float]], timeout: float = 300,
                      home: Path | None = None) -> list[str | None]:
        """Run several mqadmin commands in one JVM (MQAdminPlus --batch); each one's output (stdout and stderr
        together), None for those that never ran (mqadmin exits on arguments it cannot parse, after printing
        its usage under the command that had them). `(args, seconds)`: a command that never ends by itself
        (clusterRT, startMonitoring), left running in the background after `seconds`; put those last."""
        home = home or self.workdir / "home"
        cmd = self._java(home, self.tools_cp, "MQAdminPlus", ("--batch",))

        def line(c: list[object] | tuple[list[object], float]) -> str:
            if isinstance(c, tuple):
                return json.dumps({"args": [str(a) for a in c[0]], "seconds": c[1]})
            return json.dumps([str(a) for a in c])
        lines = "".join(line(c) + "\n" for c in commands)
        proc = subprocess.run(cmd, input=lines, capture_output=True, text=True, errors="replace", timeout=timeout,
                              cwd=home)
        outputs: list[str | None] = [None] * len(commands)
        for m in re.finditer(r"@@@mqadmin-begin (\d+)\n(.*?)(?:\n@@@mqadmin-end \1\n|\Z)", proc.stdout, re.S):
            outputs[int(m.group(1))] = m.group(2)
        return outputs

    def start(self, driver: str, *args: object, timeout: float, home: str | os.PathLike | None = None,
              props: dict[str, str] | None = None) -> DriverHandle:
        """Start a driver (`Produce`, `PushConsume`, `LitePull`); JSON-line events; killed after `timeout`.
        `props`: Java system properties (`{"rmq.namespace": "ns"}`: Produce and PushConsume set that namespace)."""
        home = Path(home) if home is not None else self.workdir / "home"
        proc = subprocess.Popen(self._java(home, self.client_cp, driver, args, props), cwd=home,
                                stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
        return DriverHandle(proc, timeout, None)

    def run(self, driver: str, *args: object, timeout: float, home: str | os.PathLike | None = None,
            props: dict[str, str] | None = None) -> DriverHandle:
        handle = self.start(driver, *args, timeout=timeout, home=home, props=props)
        handle.wait()
        return handle

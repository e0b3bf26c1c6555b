#!/usr/bin/env python3
"""The release smoke test: what a user does first with a freshly installed package, run with the interpreter of
the virtual environment it was installed in (no test dependency, no import of this repository):

    VENV/bin/python integration_tests/release_smoke.py [--grpc] [--dashboard]

`serve` on free ports (with the gRPC endpoint and the dashboard when asked: their extras must be installed),
`produce`, `consume` what was produced, `admin exportEntities`, the dashboard's API, a 5.x route query over gRPC,
then a clean stop. One line per check on stdout; exit status 1 at the first failure. integration_tests/
test_release.py runs it against the wheel and the sdist `python -m build` makes; the release workflow
(.github/workflows/release.yml) runs it too.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent
CLI = str(BIN / "rocketmq-emulator")


def check(what: str, ok: bool, detail: str = "") -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail and not ok else ''}", flush=True)
    if not ok:
        sys.exit(1)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NAMESRV_ADDR": ""})


GRPC_QUERY = """
import sys
import grpc
from rocketmq_emulator.protocol.grpc_v2 import SERVICE, v2
with grpc.insecure_channel(sys.argv[1]) as channel:
    route = channel.unary_unary(f"/{SERVICE}/QueryRoute", request_serializer=v2.QueryRouteRequest.SerializeToString,
                                response_deserializer=v2.QueryRouteResponse.FromString)
    answer = route(v2.QueryRouteRequest(topic=v2.Resource(name=sys.argv[2])), timeout=10,
                   metadata=(("x-mq-client-id", "release-smoke"),))
print("OK" if answer.status.code == v2.Code.OK else answer.status.code, len(answer.message_queues))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grpc", action="store_true", help="also check the gRPC endpoint (the [grpc] extra)")
    ap.add_argument("--dashboard", action="store_true", help="also check the dashboard (the [dashboard] extra)")
    args = ap.parse_args()
    version = cli("--version")
    check("rocketmq-emulator --version", version.returncode == 0 and version.stdout.startswith("rocketmq-emulator "),
          version.stdout + version.stderr)
    with tempfile.TemporaryDirectory(prefix="rocketmq-release-smoke-") as tmp:
        ready = Path(tmp) / "ready.json"
        serve = [CLI, "serve", "--namesrv-port", "0", "--broker-port", "0", "--ephemeral", "--ready-file", str(ready),
                 *(["--grpc-port", "0"] if args.grpc else []), *(["--dashboard-port", "0"] if args.dashboard else [])]
        log = open(Path(tmp) / "serve.log", "w+")
        proc = subprocess.Popen(serve, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            log.seek(0)
            check("serve starts and writes its ready file", ready.exists(), log.read()[-2000:])
            info = json.loads(ready.read_text())
            ns = info["namesrvAddr"]
            sent = cli("produce", "-n", ns, "-t", "Smoke", "-m", "smoke {i}", "-c", "5", "--json")
            check("produce 5 messages", sent.returncode == 0 and sent.stdout.count('"SEND_OK"') == 5, sent.stderr)
            got = cli("consume", "-n", ns, "-t", "Smoke", "--from-beginning", "--max-messages", "5", "--json")
            bodies = sorted(json.loads(line)["body"] for line in got.stdout.splitlines()) if got.returncode == 0 else []
            check("consume them", bodies == [f"smoke {i}" for i in range(5)], got.stderr or str(bodies))
            exported = cli("admin", "exportEntities", "-n", ns)
            check("admin exportEntities", exported.returncode == 0 and
                  any(t["name"] == "Smoke" for t in json.loads(exported.stdout or "{}").get("topics", [])),
                  exported.stderr)
            if args.dashboard:
                with urllib.request.urlopen(info["dashboardUrl"] + "api/overview", timeout=10) as answer:
                    check("the dashboard's API answers", answer.status == 200 and "brokers" in json.loads(answer.read()))
            if args.grpc:
                route = subprocess.run([sys.executable, "-c", GRPC_QUERY, info["grpcAddr"], "Smoke"],
                                       capture_output=True, text=True, timeout=60)
                check("a 5.x route query over gRPC", route.returncode == 0 and route.stdout.split()[0] == "OK",
                      route.stdout + route.stderr)
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(30)
        log.seek(0)
        check("a clean stop (SIGTERM: exit 0, ready file removed)", code == 0 and not ready.exists(),
              log.read()[-2000:])


if __name__ == "__main__":
    main()

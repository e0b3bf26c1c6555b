"""Container figures for README: image size, build time, start-to-healthy and stop times, with Podman on this
machine (`integration_tests/podman.py` prepares Podman and the local base image as containers.md shows).

    .venv/bin/python benchmarks/container_bench.py [--runs 5]

Prints one line per figure; start-to-healthy is measured from `podman run` to the first passing HEALTHCHECK
(`podman healthcheck run`, polled every 0.1 s), stop is `podman stop` (SIGTERM) until the container exited.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from integration_tests import podman  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5, help="start/stop cycles (default 5)")
    args = parser.parse_args()
    reason = podman.prepare()
    if reason:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 1
    print("building (cached layers dropped) ...", flush=True)
    subprocess.run([*podman.PODMAN, "rmi", "-f", podman.IMAGE], capture_output=True)
    t0 = time.perf_counter()
    podman.sh("podman", "build", "--no-cache", "--format", "docker", "--isolation=chroot", "--network=host",
              "-v", "/etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro",
              "--build-arg", f"BASE_IMAGE={podman.base_image()}", "-t", podman.IMAGE, str(podman.ROOT), timeout=900)
    build_s = time.perf_counter() - t0
    size = podman.image_size()
    base = podman.image_size(podman.base_image())
    print(f"image: {size / 1e6:.0f} MB ({podman.base_image()} base {base / 1e6:.0f} MB + {(size - base) / 1e6:.0f} MB "
          f"of layers); build {build_s:.1f} s from scratch on a cached base")
    healthy, stops = [], []
    for i in range(args.runs):
        name = f"rmq-emu-bench-{i}"
        t0 = time.perf_counter()
        podman.run(name, "-p", "9876", "-p", "10911")  # random host ports
        podman.wait_healthy(name)
        healthy.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        code = podman.stop(name, 10)
        stops.append(time.perf_counter() - t0)
        podman.remove(name)
        print(f"  run {i + 1}/{args.runs}: healthy after {healthy[-1]:.2f} s, stopped in {stops[-1]:.2f} s "
              f"(exit {code})", flush=True)
    print(f"start to healthy: median {statistics.median(healthy):.2f} s (min {min(healthy):.2f}, max "
          f"{max(healthy):.2f}); stop: median {statistics.median(stops):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

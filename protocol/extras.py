"""How to install an optional part (an extra of pyproject.toml), in one place for every layer's error messages and
the docs: from a clone of the repository (what works today) and from a package registry (once a release is
published there; README "Releases").

    install_hint("grpc")  # "pip install -e '.[grpc]' in a clone of rocketmq-emulator (from a registry: ...)"
"""

from __future__ import annotations

#: the distribution's name on a registry
DISTRIBUTION = "rocketmq-emulator"


def install_hint(extra: str) -> str:
    """The two commands that install `extra`, as one phrase for an error message."""
    return (f"pip install -e '.[{extra}]' in a clone of {DISTRIBUTION}, or pip install '{DISTRIBUTION}[{extra}]' "
            f"from a package registry once released")

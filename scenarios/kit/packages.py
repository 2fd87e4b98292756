"""Optional packages (``tqdm``, ``matplotlib``): one line saying what to install, instead of an internal error.

A scenario that needs one checks it while parsing (:func:`require_packages`: every party stops with the same
line); :func:`missing_package_message` turns a later ``ModuleNotFoundError`` into that line.  Threat model: none."""
from __future__ import annotations

import importlib.util

from secure.errors import InputError

__all__ = ["OPTIONAL_PACKAGES", "PROJECT", "install_hint", "installed", "require_packages", "missing_package_message"]

#: the distribution name on the package index (pyproject.toml)
PROJECT = "private-ustats"

#: optional package -> the extra of :data:`PROJECT` that installs it
OPTIONAL_PACKAGES = {"tqdm": "plot", "matplotlib": "plot"}


def install_hint(package: str) -> str:
    """``needs the 'tqdm' package: pip install 'private-ustats[plot]'``."""
    extra = OPTIONAL_PACKAGES.get(package)
    command = f"pip install '{PROJECT}[{extra}]'" if extra else f"pip install {package}"
    return f"needs the '{package}' package: {command}"


def installed(package: str) -> bool:
    """Whether ``package`` can be imported (a finder that refuses it, or a broken installation: no)."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def require_packages(*packages: str, purpose: str = "this scenario") -> None:
    """Refuse to start when an optional package (an import name) is missing: :class:`secure.errors.InputError`
    ``<purpose> needs the 'tqdm' package: pip install ...`` (exit 2 at every party, when raised while parsing)."""
    for package in packages:
        if not installed(package):
            raise InputError(f"{purpose} {install_hint(package)}")


def missing_package_message(error: ModuleNotFoundError) -> str | None:
    """The one-line message for a missing optional package, or ``None`` for any other module."""
    top = (error.name or "").split(".")[0]
    return f"this scenario {install_hint(top)}" if top in OPTIONAL_PACKAGES else None

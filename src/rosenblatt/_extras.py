"""Which optional extra provides which module, and errors that say so.

The core (``pip install rosenblatt``) needs numpy, scipy, boost-histogram, hist
and awkward only; everything else comes with an extra of
``[project.optional-dependencies]``. A module of rosenblatt that needs an extra
imports it inside :func:`optional_imports`, so that without the extra the import
fails with a :class:`MissingExtraError` naming it::

    with optional_imports(__name__):
        import fastjet

The command line checks a command's extras before it does anything
(:func:`missing_extras`) and turns any other :class:`ModuleNotFoundError` into
one line naming the extra (:func:`extra_for`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from rosenblatt.exceptions import MissingExtraError

__all__ = [
    "DISTRIBUTIONS",
    "EXTRA_OF",
    "PROVIDES",
    "MissingExtraError",
    "extra_for",
    "importable",
    "install_hint",
    "missing_extras",
    "needs_message",
    "optional_imports",
    "progress_bar",
    "require",
]

#: extra -> the modules it provides, as ``[project.optional-dependencies]`` declares
#: them (the extras it includes expanded); tests/test_core_install.py checks the two agree
PROVIDES: dict[str, tuple[str, ...]] = {
    "plot": ("matplotlib", "mplhep"),
    "study": ("matplotlib", "mplhep", "yaml", "tqdm", "uhi"),
    "io": ("uproot", "h5py", "pandas", "tables", "pyarrow"),
    "hep": (
        "uproot",
        "h5py",
        "pandas",
        "tables",
        "pyarrow",
        "coffea",
        "fastjet",
        "vector",
        "pythia8mc",
        "tqdm",
        "dask",
        "distributed",
    ),
    "ml": ("torch", "zuko", "sklearn", "threadpoolctl", "tqdm", "yaml", "pyarrow"),
    "correctionlib": ("correctionlib", "tqdm"),
    "xgboost": ("xgboost",),
    "fast": ("numba",),
    "stats": ("pyhf",),
    "notebook": ("nbclient", "nbformat", "ipykernel"),
    "fairness": ("sklearn", "sklego", "fairlearn", "pandas"),
}

#: module -> the extra named when it is missing (one that provides it, the lightest)
EXTRA_OF: dict[str, str] = {
    "matplotlib": "plot",
    "mplhep": "plot",
    "yaml": "study",
    "tqdm": "study",
    "uhi": "study",
    "uproot": "io",
    "h5py": "io",
    "pandas": "io",
    "tables": "io",
    "pyarrow": "io",
    "coffea": "hep",
    "fastjet": "hep",
    "vector": "hep",
    "pythia8mc": "hep",
    "dask": "hep",
    "distributed": "hep",
    "torch": "ml",
    "zuko": "ml",
    "threadpoolctl": "ml",
    "sklearn": "fairness",
    "sklego": "fairness",
    "fairlearn": "fairness",
    "correctionlib": "correctionlib",
    "xgboost": "xgboost",
    "numba": "fast",
    "pyhf": "stats",
    "nbclient": "notebook",
    "nbformat": "notebook",
    "ipykernel": "notebook",
}

#: distribution (as pyproject names it) -> the module it provides, where they differ
DISTRIBUTIONS: dict[str, str] = {
    "pyyaml": "yaml",
    "scikit-learn": "sklearn",
    "scikit-lego": "sklego",
    "xgboost-cpu": "xgboost",
}


def install_hint(extras: Iterable[str]) -> str:
    """``pip install "rosenblatt[a,b]"`` for the given extras."""
    return f'pip install "rosenblatt[{",".join(extras)}]"'


def needs_message(what: str, extras: Iterable[str], missing: str | None = None) -> str:
    """One line: ``<what> needs the 'hep' extra: pip install "rosenblatt[hep]"``.

    ``missing``, the module found missing, is named in parentheses before the hint.
    """
    names = list(dict.fromkeys(extras))
    quoted = [f"'{name}'" for name in names]
    if len(quoted) == 1:
        listed = f"the {quoted[0]} extra"
    else:
        listed = f"the {', '.join(quoted[:-1])} and {quoted[-1]} extras"
    detail = f" ({missing} is not installed)" if missing else ""
    return f"{what} needs {listed}{detail}: {install_hint(names)}"


def extra_for(module: str | None) -> str | None:
    """The extra that provides ``module`` (a dotted name is looked up by its top level)."""
    if not module:
        return None
    return EXTRA_OF.get(module.partition(".")[0])


def importable(module: str) -> bool:
    """Whether ``module`` can be imported (looked up without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_extras(extras: Iterable[str]) -> list[str]:
    """The extras among ``extras`` of which some module cannot be imported, in order."""
    return [
        extra
        for extra in dict.fromkeys(extras)
        if not all(importable(module) for module in PROVIDES[extra])
    ]


@contextmanager
def optional_imports(what: str) -> Iterator[None]:
    """Raise :class:`MissingExtraError` naming the extra when an import inside fails.

    Parameters
    ----------
    what : str
        Who needs the modules, for the message (a module's ``__name__``).

    Raises
    ------
    MissingExtraError
        When a module of an extra is missing; any other ``ModuleNotFoundError``
        (and one that already names its extra) propagates unchanged.
    """
    try:
        yield
    except MissingExtraError:
        raise
    except ModuleNotFoundError as err:
        extra = extra_for(err.name)
        if extra is None:
            raise
        message = needs_message(what, [extra], err.name)
        raise MissingExtraError(message, name=err.name, extras=[extra]) from None


def require(what: str, extras: Iterable[str]) -> None:
    """Raise :class:`MissingExtraError` unless every module of ``extras`` imports.

    Parameters
    ----------
    what : str
        Who needs them, for the message (``"rosenblatt generate"``).
    extras : iterable of str
        Names of extras (keys of :data:`PROVIDES`).
    """
    missing = missing_extras(extras)
    if missing:
        module = next(m for m in PROVIDES[missing[0]] if not importable(m))
        raise MissingExtraError(needs_message(what, missing), name=module, extras=missing)


class _SilentBar:
    """What :func:`progress_bar` returns where no bar is shown and nothing is iterated."""

    def update(self, n: float = 1) -> None:
        """Do nothing."""

    def close(self) -> None:
        """Do nothing."""


def progress_bar(iterable: Iterable[Any] | None = None, **options: Any) -> Any:
    """A ``tqdm.auto`` progress bar, or none where tqdm (an extra) is missing.

    Takes tqdm's arguments. Without a bar it returns ``iterable`` itself, or an
    object whose ``update`` and ``close`` do nothing.
    """
    if not options.get("disable"):
        try:
            from tqdm.auto import tqdm
        except ModuleNotFoundError:
            pass
        else:
            return tqdm(iterable, **options)
    return iterable if iterable is not None else _SilentBar()

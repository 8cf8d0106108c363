"""Sphinx configuration of the rosenblatt documentation.

Build: ``sphinx-build -W --keep-going -n -b html docs docs/_build/html`` (warnings are
errors, every cross-reference must resolve), and ``-b doctest`` for the code blocks.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

import rosenblatt

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "rosenblatt"
author = "The rosenblatt developers"
copyright = "2026, The rosenblatt developers"
release = rosenblatt.__version__
version = release

extensions = [
    "myst_nb",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx_copybutton",
    "api_pages",
    "study_keys",
    "cli_help",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints", "results/*/table.md"]
root_doc = "index"

# --- theme -------------------------------------------------------------------------
html_theme = "furo"
html_title = f"rosenblatt {release}"
html_static_path = ["_static"]
html_css_files = ["rosenblatt.css"]
html_theme_options = {"navigation_with_keys": True}
pygments_style = "default"

# --- MyST and the notebooks ----------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3
# the tutorials are executed at every build; an error in a cell fails the build
nb_execution_mode = os.environ.get("ROSENBLATT_DOCS_EXECUTE", "force")
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

# --- API reference -----------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_inherit_docstrings = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()
numpydoc_xref_param_type = False

# --- warnings as errors, every reference resolved --------------------------------------
nitpicky = True

# The libraries the API speaks of. Their inventories are fetched from the projects' sites
# when those can be reached; a build without network (this project's CI) uses none, and
# the references into those packages (and only those) are then left unresolved on purpose:
# `nitpick_ignore_regex` below names them. References into rosenblatt must always resolve.
INTERSPHINX = {
    "python": "https://docs.python.org/3",
    "numpy": "https://numpy.org/doc/stable",
    "scipy": "https://docs.scipy.org/doc/scipy",
    "hist": "https://hist.readthedocs.io/en/latest",
    "boost_histogram": "https://boost-histogram.readthedocs.io/en/latest",
    "awkward": "https://awkward-array.org/doc/main",
    "coffea": "https://coffea-hep.readthedocs.io/en/latest",
    "pyhf": "https://pyhf.readthedocs.io/en/stable",
    "sklearn": "https://scikit-learn.org/stable",
    "matplotlib": "https://matplotlib.org/stable",
    "torch": "https://docs.pytorch.org/docs/stable",
}
EXTERNAL_MODULES = (
    "numpy|np|numpy.typing|npt|scipy|hist|boost_histogram|bh|awkward|ak|coffea|pyhf|sklearn"
    "|matplotlib|torch|pandas|pd|uproot|dask|distributed|correctionlib|xgboost|zuko|h5py|pyarrow"
    "|fastjet|vector|yaml|concurrent|collections|os|pathlib|typing|types|enum|dataclasses"
    "|argparse|json|io|logging|multiprocessing|numba|jupyter_client|_io"
)


def _reachable(url: str, timeout: float = 2.0) -> bool:
    """Whether the host of ``url`` accepts a connection (the inventories are then fetched)."""
    if os.environ.get("ROSENBLATT_DOCS_OFFLINE"):
        return False
    host = urlsplit(url).hostname or ""
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
    except OSError:
        return False
    return True


intersphinx_mapping = {name: (url, None) for name, url in INTERSPHINX.items() if _reachable(url)}
intersphinx_timeout = 10

nitpick_ignore_regex = [
    # references into the libraries above, resolved by intersphinx when it is reachable
    (r"py:.*", rf"({EXTERNAL_MODULES})(\..*)?"),
    # builtins and typing names (resolved through python's inventory when reachable)
    (
        r"py:.*",
        (
            r"(int|float|str|bool|bytes|dict|list|tuple|set|frozenset|object|None|type|callable"
            r"|Any|Callable|Iterable|Iterator|Mapping|Sequence|Literal|Self|ClassVar|Path"
            r"|ArrayLike|NDArray|Exception|ValueError|TypeError|KeyError|RuntimeError"
            r"|ModuleNotFoundError|UserWarning|Warning|NamedTuple|Generator|PathLike"
            r"|TextIO|Protocol|Enum|MutableMapping|TypeVar|TypeAlias|Union|Optional"
            r"|optional|array_like|array-like|default)"
        ),
    ),
    # matplotlib's and awkward's classes as the signatures name them (imported for typing)
    (r"py:class", r"(Axes|Figure|Array)"),
]

# --- doctests of the code blocks ----------------------------------------------------------
doctest_global_setup = """
import numpy as np
import rosenblatt as rb
"""

copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True

"""Write the API reference from the packages' ``__all__`` before Sphinx reads the sources.

Every public name of :mod:`rosenblatt` and of each sub-package or public top-level module
that declares ``__all__`` gets a page. A class or function exported by several of them
(``rosenblatt.IRGI`` is ``rosenblatt.transforms.IRGI``) is documented once, under the first
exporter in :data:`PACKAGES_FIRST` order, and linked from the others. The pages are written
to ``reference/api/`` (not kept in git), so the reference follows the code.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

from sphinx.application import Sphinx
from sphinx.pycode import ModuleAnalyzer

#: the folder of the generated pages, relative to the documentation's source folder
API_FOLDER = Path("reference") / "api"
#: modules documented first (they own the names they share with later ones)
PACKAGES_FIRST = ("rosenblatt",)
#: public modules left to other pages of the reference (the command line)
SKIPPED = {"rosenblatt.cli"}


def public_modules() -> list[ModuleType]:
    """:mod:`rosenblatt` and its public sub-packages and top-level modules with ``__all__``."""
    import rosenblatt

    found = [rosenblatt]
    for info in pkgutil.walk_packages(rosenblatt.__path__, "rosenblatt."):
        parts = info.name.split(".")
        if any(part.startswith("_") for part in parts) or info.name in SKIPPED:
            continue
        if not info.ispkg and len(parts) > 2:
            continue
        module = importlib.import_module(info.name)
        if getattr(module, "__all__", None):
            found.append(module)
    return found


def _is_alias(obj: Any) -> bool:
    """Whether ``obj`` is a type alias (``rosenblatt.typing``'s): callable, but not a function."""
    return typing.get_origin(obj) is not None


def _kind(obj: Any) -> str:
    if _is_alias(obj):
        return "data"
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj):
        return "function"
    return "data"


def _shared(obj: Any) -> bool:
    """Whether ``obj`` is the same object wherever it is exported (a class or a function)."""
    return inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)


def summary(obj: Any) -> str:
    """The first sentence of an object's docstring, on one line."""
    doc = inspect.getdoc(obj) if _kind(obj) != "data" else None
    if not doc:
        return ""
    first = doc.strip().split("\n\n")[0]
    return " ".join(first.split())


def _object_page(full: str, obj: Any) -> str:
    kind = _kind(obj)
    lines = [full.rsplit(".", 1)[1].replace("_", r"\_"), "=" * (len(full) + 4), ""]
    lines.append(f".. currentmodule:: {full.rsplit('.', 1)[0]}")
    lines.append("")
    name = full.rsplit(".", 1)[1]
    if kind in {"class", "exception"}:
        # members inherited from rosenblatt's own bases are shown; those of other
        # libraries' classes (a torch module, an exception, a tuple) are not
        foreign = sorted(
            {base.__name__ for base in obj.__mro__ if not base.__module__.startswith("rosenblatt")}
        )
        lines += [f".. auto{kind}:: {name}", "   :members:"]
        lines.append(f"   :inherited-members: {', '.join(foreign)}")
    elif kind == "function":
        lines.append(f".. autofunction:: {name}")
    elif _is_alias(obj):
        # autodoc would give the alias the signature of the class it stands for
        lines.append(f".. py:data:: {name}")
        lines.append("")
        lines += [f"   {line}" if line else "" for line in _attribute_doc(full)]
    else:
        lines.append(f".. autodata:: {name}")
    return "\n".join(lines) + "\n"


def _attribute_doc(full: str) -> list[str]:
    """The ``#:`` comment above the module-level name ``full``, as lines."""
    module, name = full.rsplit(".", 1)
    return list(ModuleAnalyzer.for_module(module).find_attr_docs().get(("", name), []))


def _module_page(module: ModuleType, owned: dict[int, str]) -> tuple[str, list[str]]:
    """The page of one module: its docstring, a table of its names, and the names it owns."""
    name = module.__name__
    lines = [name, "=" * len(name), "", f".. automodule:: {name}", "   :no-members:", ""]
    lines += [".. list-table::", "   :widths: 30 70", ""]
    pages: list[str] = []
    for public in module.__all__:
        obj = getattr(module, public)
        full = f"{name}.{public}"
        owner = owned.setdefault(id(obj), full) if _shared(obj) else full
        if owner == full:
            pages.append(full)
        role = "py:obj"
        text = summary(obj).replace("|", r"\|")
        lines += [f"   * - :{role}:`~{owner}`", f"     - {text}"]
    lines.append("")
    if pages:
        lines += [".. toctree::", "   :hidden:", ""]
        lines += [f"   {page}" for page in pages]
    return "\n".join(lines) + "\n", pages


def owners() -> dict[str, str]:
    """Every public ``module.name`` -> the full name of the page that documents it."""
    owned: dict[int, str] = {}
    found = {}
    for module in public_modules():
        for public in module.__all__:
            obj = getattr(module, public)
            full = f"{module.__name__}.{public}"
            found[full] = owned.setdefault(id(obj), full) if _shared(obj) else full
    return found


def write_pages(srcdir: Path) -> list[str]:
    """Write every page into ``srcdir / API_FOLDER`` and return the modules' names.

    A page is rewritten only when its text changes (atomically, so that a build reading the
    folder at the same time sees whole files), and pages of names no longer public are
    removed.
    """
    folder = srcdir / API_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    owned: dict[int, str] = {}
    texts: dict[str, str] = {}
    names = []
    for module in public_modules():
        text, pages = _module_page(module, owned)
        texts[f"{module.__name__}.rst"] = text
        for full in pages:
            obj = getattr(module, full.rsplit(".", 1)[1])
            texts[f"{full}.rst"] = _object_page(full, obj)
        names.append(module.__name__)
    index = ["API", "===", "", ".. toctree::", "   :maxdepth: 1", ""]
    index += [f"   {name}" for name in names]
    texts["index.rst"] = "\n".join(index) + "\n"
    for name, text in texts.items():
        path = folder / name
        if not path.is_file() or path.read_text() != text:
            partial = path.with_name(f".{name}.{os.getpid()}")
            partial.write_text(text)
            os.replace(partial, path)
    for stale in folder.glob("*.rst"):
        if stale.name not in texts:
            stale.unlink(missing_ok=True)
    return names


def _generate(app: Sphinx) -> None:
    app.env.rosenblatt_api_pages = write_pages(Path(app.srcdir))  # type: ignore[attr-defined]


def _lookup(path: str) -> tuple[bool, Any]:
    """``(found, object)`` of a dotted path inside rosenblatt (a module, or attributes of one)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError:
            return False, None
        return True, obj
    return False, None


def _candidates(node: Any) -> list[str]:
    """The full paths a Python reference may mean, as Sphinx's own lookup tries them."""
    target = node["reftarget"].lstrip("~.")
    module = node.get("py:module") or ""
    klass = node.get("py:class") or ""
    found = []
    if module and klass:
        found.append(f"{module}.{klass}.{target}")
        # a docstring names things relative to the module it was written in: the class's
        # own, or a base class's for an inherited member
        ok, cls = _lookup(f"{module}.{klass}")
        if ok and inspect.isclass(cls):
            found += [f"{base.__module__}.{target}" for base in cls.__mro__]
    if module:
        found.append(f"{module}.{target}")
    found.append(target)
    return [path for path in found if path.startswith("rosenblatt")]


def _documented(env: Any, obj: Any) -> str | None:
    """The documented name of ``obj`` (a public name it is exported as), if any."""
    objects = env.domains["py"].objects
    names = getattr(env, "rosenblatt_documented", None)
    if names is None or names[0] != len(objects):
        by_id: dict[int, str] = {}
        for name in objects:
            found, other = _lookup(name)
            if found and _shared(other):
                by_id.setdefault(id(other), name)
        names = (len(objects), by_id)
        env.rosenblatt_documented = names
    return names[1].get(id(obj))


def _resolve_alias(app: Sphinx, env: Any, node: Any, contnode: Any) -> Any:
    """Resolve a reference to a rosenblatt object under another of its names.

    ``rosenblatt.metrics.distance_correlation_sqr`` is documented as
    ``rosenblatt.distance_correlation_sqr``; a module's page stands for the modules
    inside it. A reference to a name that exists but is not public (not in any
    ``__all__``) is rendered as code without a link; a reference to a name that does not
    exist stays unresolved, and the nitpicky build fails on it.
    """
    if node.get("refdomain") != "py":
        return None
    from sphinx.util.nodes import make_refnode

    py = env.domains["py"]
    for path in _candidates(node):
        found, obj = _lookup(path)
        if not found:
            continue
        if path in py.objects:
            entry = py.objects[path]
            return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode)
        name = _documented(env, obj) if _shared(obj) else None
        if name is None and inspect.ismodule(obj):
            parents = [path.rsplit(".", k)[0] for k in range(1, path.count(".") + 1)]
            name = next((parent for parent in parents if parent in py.modules), None)
            if name is not None:
                entry = py.modules[name]
                return make_refnode(
                    app.builder, node["refdoc"], entry.docname, entry.node_id, contnode
                )
        if name is not None:
            entry = py.objects[name]
            return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode)
        return contnode
    return _resolve_short(app, env, node, contnode)


def _resolve_short(app: Sphinx, env: Any, node: Any, contnode: Any) -> Any:
    """Resolve a short name (``register_writer``, ``Class.method``) written in a docstring.

    A docstring shown on another page (a method inherited by a subclass) names things
    relative to the module where it was written. The name is looked up in every loaded
    rosenblatt module; when it names one object, the reference is resolved as above.
    """
    import sys

    target = node["reftarget"].lstrip("~.")
    if target.startswith("rosenblatt"):
        return None
    found = {}
    for name in [name for name in sys.modules if name.startswith("rosenblatt")]:
        ok, obj = _lookup(f"{name}.{target}")
        if ok:
            found[id(obj)] = f"{name}.{target}"
    if len(found) != 1:
        return None
    path = next(iter(found.values()))
    alias = node.deepcopy()
    alias["reftarget"] = path
    alias["py:module"] = alias["py:class"] = None
    return _resolve_alias(app, env, alias, contnode) if path != target else None


def _skip_foreign(app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any) -> Any:
    """Leave out members that other libraries add to a class (scikit-learn's request setters)."""
    module = getattr(obj, "__module__", None)
    if (
        what in {"class", "exception"}
        and callable(obj)
        and module
        and not module.startswith("rosenblatt")
    ):
        return True
    return None


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the page generation with Sphinx."""
    app.connect("builder-inited", _generate)
    app.connect("missing-reference", _resolve_alias)
    app.connect("autodoc-skip-member", _skip_foreign)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

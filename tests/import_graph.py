"""The first-party import graph, read from the source tree with ``ast`` (nothing is imported).

The tree's packages are the folders that pyproject.toml's ``[tool.setuptools]`` installs under a name:
``erp_sim/`` as ``erp_sim`` and each ``package-dir`` entry (``envs/`` as ``erp_sim.envs``, ``agents/`` as
``erp_sim.agents``). Every ``.py`` file below them is a module, named as installed. Each import statement
becomes one ``Import`` per imported module or name, with where it runs:

- ``top``: at import time (module and class bodies, including their ``if``/``try`` blocks);
- ``type``: in an ``if TYPE_CHECKING:`` block (never run, but a dependency all the same);
- ``local``: inside a function (run on the first call).

``from pkg import name`` points at ``pkg.name`` when that is a module of the tree, else at ``pkg`` (a name
defined there). A package's ``__init__`` is its own node: importing ``a.b.c`` does not add edges to ``a``
and ``a.b``, which Python also runs, since every module would otherwise sit in a circle with a package
that re-exports it. The readers of the graph are tests/test_floor_plan.py and tests/test_readme.py.
"""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parent.parent

Where = Literal["top", "type", "local"]
# layers lowest first: (name, prefixes of the module names it holds)
Layers = list[tuple[str, tuple[str, ...]]]


@dataclass(frozen=True)
class Module:
    name: str  # as installed: erp_sim.agents.runner
    path: Path
    is_package: bool  # an __init__.py

    @property
    def package(self) -> str:
        """The package (folder) the module lies in; a package's __init__ lies in its own."""
        return self.name if self.is_package else self.name.rpartition(".")[0]


@dataclass(frozen=True)
class Import:
    importer: str
    target: str  # the module imported, or the module a name is imported from
    name: str | None  # the name taken from ``target`` (None: the module itself)
    where: Where
    line: int


@dataclass(frozen=True)
class PrivateUse:
    importer: str
    owner: str  # the module whose private name is used
    name: str
    line: int
    how: str  # "from-import" or "attribute"


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def package_roots(root: Path = ROOT) -> dict[str, Path]:
    """Installed name -> folder, from pyproject.toml: ``erp_sim`` and the ``package-dir`` entries."""
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {"erp_sim": root / "erp_sim", **{name: root / folder for name, folder in setuptools["package-dir"].items()}}


def find_modules(root: Path = ROOT) -> dict[str, Module]:
    roots = package_roots(root)
    folders = set(roots.values())
    modules: dict[str, Module] = {}
    for prefix, folder in roots.items():
        for path in sorted(folder.rglob("*.py")):
            relative = path.relative_to(folder)
            # a folder installed under another name (none today) belongs to that root, not this one
            if any(parent in folders for parent in list(path.parents)[: len(relative.parts) - 1]):
                continue
            if "__pycache__" in relative.parts:
                continue
            parts = [*relative.parts[:-1], path.stem]
            is_package = path.name == "__init__.py"
            if is_package:
                parts = parts[:-1]
            name = ".".join([prefix, *parts])
            modules[name] = Module(name, path, is_package)
    return modules


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def resolve_relative(module: Module, level: int, target: str | None) -> str:
    base = module.package.split(".")
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


class _Reader(ast.NodeVisitor):
    """One module's imports (with where each runs) and the names it binds to modules of the tree."""

    def __init__(self, module: Module, modules: dict[str, Module]) -> None:
        self.module, self.modules = module, modules
        self.where: Where = "top"
        self.imports: list[Import] = []
        self.bound: dict[str, str] = {}  # local name -> module of the tree (any scope: names rarely shadow)
        self.first_party = {name.split(".")[0] for name in modules}  # erp_sim

    def add(self, target: str, name: str | None, line: int) -> None:
        self.imports.append(Import(self.module.name, target, name, self.where, line))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] not in self.first_party:
                continue
            self.add(alias.name, None, node.lineno)
            if alias.asname:
                self.bound[alias.asname] = alias.name
            else:
                self.bound[alias.name.split(".")[0]] = alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        source = resolve_relative(self.module, node.level, node.module) if node.level else node.module or ""
        if source.split(".")[0] not in self.first_party:
            return
        for alias in node.names:
            submodule = f"{source}.{alias.name}"
            if submodule in self.modules:
                self.add(submodule, None, node.lineno)
                self.bound[alias.asname or alias.name] = submodule
            else:
                self.add(source, alias.name, node.lineno)

    def visit_If(self, node: ast.If) -> None:
        if is_type_checking(node.test) and self.where == "top":
            self.where = "type"
            for statement in node.body:
                self.visit(statement)
            self.where = "top"
            for statement in node.orelse:
                self.visit(statement)
        else:
            self.generic_visit(node)

    def visit_function(self, node: ast.AST) -> None:
        outer, self.where = self.where, "local"
        self.generic_visit(node)
        self.where = outer

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_function


def _attribute_chain(node: ast.Attribute) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"], or None when it does not start at a plain name."""
    chain: list[str] = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        chain.append(current.attr)
        current = current.value
    if not isinstance(current, ast.Name):
        return None
    return [current.id, *reversed(chain)]


@dataclass
class Graph:
    root: Path
    modules: dict[str, Module]
    imports: list[Import]
    private_uses: list[PrivateUse]

    def edges(self, where: set[Where]) -> dict[str, set[str]]:
        """importer -> the modules of the tree it imports, counting imports that run ``where``."""
        graph: dict[str, set[str]] = {name: set() for name in self.modules}
        for item in self.imports:
            if item.where in where and item.target in self.modules and item.target != item.importer:
                graph[item.importer].add(item.target)
        return graph

    def at(self, importer: str, line: int) -> str:
        return f"{self.modules[importer].path.relative_to(self.root).as_posix()}:{line}"


def read_graph(root: Path = ROOT) -> Graph:
    modules = find_modules(root)
    imports: list[Import] = []
    private_uses: list[PrivateUse] = []
    for module in modules.values():
        tree = ast.parse(module.path.read_text(), filename=str(module.path))
        reader = _Reader(module, modules)
        reader.visit(tree)
        imports += reader.imports
        for item in reader.imports:
            if item.name is not None and is_private(item.name):
                private_uses.append(PrivateUse(module.name, item.target, item.name, item.line, "from-import"))
            owner, _, last = item.target.rpartition(".")
            if is_private(last):  # a private module, imported or imported from
                private_uses.append(PrivateUse(module.name, owner, last, item.line, "from-import"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not is_private(node.attr):
                continue
            chain = _attribute_chain(node)
            if chain is None or chain[0] not in reader.bound:
                continue
            # the longest prefix of the chain that names a module of the tree; the next part is the name used
            dotted = reader.bound[chain[0]]
            used = 1
            while used < len(chain) - 1 and f"{dotted}.{chain[used]}" in modules:
                dotted, used = f"{dotted}.{chain[used]}", used + 1
            if used == len(chain) - 1 and dotted in modules:
                private_uses.append(PrivateUse(module.name, dotted, chain[-1], node.lineno, "attribute"))
    return Graph(root, modules, imports, private_uses)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's circles: its strongly connected components of more than one module (Tarjan's algorithm,
    iterative), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def shortest_circle(graph: dict[str, set[str]], members: list[str]) -> list[str]:
    """One shortest circle through the first member of a component, as [a, b, ..., a] (breadth first)."""
    start, inside = members[0], set(members)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & inside):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise ValueError(f"no circle through {start}")


# The rules of issue 35 over a graph; tests/test_floor_plan.py holds the tables and the decisions.


def private_imports_across_packages(graph: Graph) -> list[str]:
    """Each use of a private name (``_x``) of a module from a module of another package (folder)."""
    found = []
    for use in graph.private_uses:
        owner = graph.modules.get(use.owner)
        if owner is not None and owner.package != graph.modules[use.importer].package:
            found.append(f"{graph.at(use.importer, use.line)}: {use.importer} uses {use.owner}.{use.name} ({use.how})")
    return by_place(set(found))


def by_place(findings: set[str] | list[str]) -> list[str]:
    """Findings that start with ``path:line``, in the order of the files and their lines."""

    def place(finding: str) -> tuple[str, int, str]:
        path, line = re.match(r"([^:]+):(\d+)", finding).groups()  # type: ignore[union-attr]
        return path, int(line), finding

    return sorted(findings, key=place)


def module_level_circles(graph: Graph) -> list[str]:
    """Each circle of imports that run at import time or under ``if TYPE_CHECKING:``: the modules that
    reach each other (a strongly connected component), one shortest circle among them and the import
    statements between them."""
    edges = graph.edges({"top", "type"})
    found = []
    for members in strongly_connected(edges):
        inside = set(members)
        statements = by_place(
            {
                f"    {graph.at(item.importer, item.line)} ({item.where}) {item.importer} -> {item.target}"
                for item in graph.imports
                if item.where != "local" and item.importer in inside and item.target in inside
                if item.importer != item.target
            }
        )
        circle = " -> ".join(shortest_circle(edges, members))
        found.append(f"{', '.join(members)} (shortest: {circle})\n" + "\n".join(statements))
    return found


def within(module: str, base: str) -> bool:
    return not base or module == base or module.startswith(base + ".")


def layer_of(module: str, layers: Layers, base: str = "") -> str | None:
    """The layer with the longest prefix that matches the module's name relative to ``base`` (a prefix names
    a module or a package with all below it; "" names ``base`` itself)."""
    relative = module[len(base) :].lstrip(".") if base else module
    matches = [
        (len(prefix), layer)
        for layer, prefixes in layers
        for prefix in prefixes
        if relative == prefix or (prefix and relative.startswith(prefix + "."))
    ]
    return max(matches)[1] if matches else None


def upward_imports(graph: Graph, layers: Layers, base: str = "") -> list[str]:
    """Each import, wherever it runs, from a module of one layer into a module of a later layer (``layers``
    lists them lowest first). Only modules within ``base`` are compared; one in no layer is not."""
    rank = {layer: position for position, (layer, _) in enumerate(layers)}
    found: dict[str, list[str]] = {}
    for item in graph.imports:
        if item.target not in graph.modules or not (within(item.importer, base) and within(item.target, base)):
            continue
        lower, upper = layer_of(item.importer, layers, base), layer_of(item.target, layers, base)
        if lower is not None and upper is not None and rank[lower] < rank[upper]:
            statement = (
                f"{graph.at(item.importer, item.line)} ({item.where}) {lower} -> {upper}: "
                f"{item.importer} imports {item.target}"
            )
            found.setdefault(statement, []).extend([item.name] if item.name else [])
    return by_place([f"{statement} ({', '.join(names)})" if names else statement for statement, names in found.items()])


# Function-local imports (issue 35, item 5): every import of a module of the tree runs at its top, but in
# the facades and in the named loaders that keep a heavy library off a start-up path.

#: A loader's docstring says so and names what measures it (or the extra it loads).
LOADER_MARK = "imported on first use"
LOADER_REASONS = ("scripts/bench_", "tests/test_startup.py", " extra")
LOADER_STATEMENTS = 3  # a loader's statements besides its docstring and imports: a check, a setting, the return


def _catches_import_error(node: ast.Try) -> bool:
    names = {"ImportError", "ModuleNotFoundError"}
    for handler in node.handlers:
        caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(isinstance(item, ast.Name) and item.id in names for item in caught):
            return True
    return False


def _is_loader(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A small function that imports on first use and says why in its docstring."""
    doc = ast.get_docstring(function) or ""
    if LOADER_MARK not in " ".join(doc.split()) or not any(reason in doc for reason in LOADER_REASONS):
        return False
    body = function.body[1:] if ast.get_docstring(function) is not None else function.body
    return sum(not isinstance(node, ast.Import | ast.ImportFrom) for node in body) <= LOADER_STATEMENTS


def stray_local_imports(facades: set[str], root: Path = ROOT) -> list[str]:
    """Each import inside a function of the tree's modules, but in ``facades`` (module names), in a loader
    (``_is_loader``) or in a ``try:`` that catches ImportError (a probe for a module that may be missing)."""
    found = []

    def visit(node: ast.AST, module: Module, function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, module, child)
            elif isinstance(child, ast.Try) and _catches_import_error(child):
                for handler in child.handlers:  # the body's imports are the probe; a handler's are not
                    visit(handler, module, function)
                for statements in (child.orelse, child.finalbody):
                    for statement in statements:
                        visit(ast.Module([statement], []), module, function)
            elif isinstance(child, ast.Import | ast.ImportFrom) and function is not None and not _is_loader(function):
                place = f"{module.path.relative_to(root).as_posix()}:{child.lineno}"
                found.append(f"{place} {function.name}: {ast.unparse(child)}")
            else:
                visit(child, module, function)

    for module in find_modules(root).values():
        if module.name not in facades:
            visit(ast.parse(module.path.read_text(), filename=str(module.path)), module, None)
    return by_place(found)

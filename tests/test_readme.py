"""The README and the docs/ pages as written: every JSON block is one valid file, every Python block runs
as a script and prints something, the README's test command is the one CI runs, every docs/ page is
linked from the README and every relative link resolves (to a file, and to a heading when it names one)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from import_graph import find_modules, package_roots

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TEXT = {page: page.read_text() for page in PAGES}
README = TEXT[ROOT / "README.md"]


def blocks(text: str) -> list[tuple[str, str]]:
    return re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M)


def name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


BLOCKS = blocks(README)
PYTHON = [
    (f"{name(page)}:block{i}", code)
    for page in PAGES
    for i, code in enumerate(code for kind, code in blocks(TEXT[page]) if kind == "python")
]


def test_every_json_block_is_one_valid_file():
    found = [code for page in PAGES for kind, code in blocks(TEXT[page]) if kind == "json"]
    assert len(found) >= 3
    for code in found:
        assert isinstance(json.loads(code), dict), code  # json.loads refuses two objects in one block


# A block that imports a training integration (erp_sim.envs.trl_adapter, openenv, verifiers_env) is one of
# the extras' tests: CI runs it after installing them.
EXTRA_IMPORT = re.compile(r"^\s*(?:from|import) [\w.]*\b(?:trl|openenv|verifiers)", flags=re.M)


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(code, id=block_id, marks=[pytest.mark.extras] * bool(EXTRA_IMPORT.search(code)))
        for block_id, code in PYTHON
    ],
)
def test_every_python_block_runs_as_a_script(code, tmp_path):
    script = tmp_path / "snippet.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    missing = re.search(r"No module named '(trl|openenv|verifiers)'", done.stderr)
    if done.returncode and missing:  # a training example whose extra is not installed (CI installs them all)
        pytest.skip(f"the {missing.group(1)} extra is not installed")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip(), "the block prints nothing when run as a script"


def test_the_readme_test_command_is_what_ci_runs():
    """The README's test command is CI's core stage: the same install into .venv, the same pytest line."""
    ci = (ROOT / ".ci" / "run").read_text()
    (command,) = [code for kind, code in BLOCKS if kind == "bash" and "pytest" in code]
    install = re.search(r'pip install (-e "\.\[[\w,]+\]")', command).group(1)
    assert f".venv/bin/python -m pip install --quiet {install}\n" in ci
    pytest_line = command[command.index(".venv/bin/python -m pytest") :].strip()
    assert pytest_line.startswith(".venv/bin/python -m pytest -q") and f"\n{pytest_line}\n" in ci
    assert '-m "not extras"' in pytest_line and "-m extras\n" in ci  # the core stage, then the extras'
    everything = "".join(TEXT.values())
    assert (
        "npx -y @modelcontextprotocol/inspector --cli" in everything and "npx @modelcontextprotocol" not in everything
    )


def test_every_docs_page_is_linked_from_the_readme():
    linked = set(re.findall(r"\]\(([^)#\s]+)", README))
    assert len(PAGES) > 1
    for page in PAGES[1:]:
        assert name(page) in linked, f"{name(page)} is not linked from README.md"


def anchors(text: str) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens (headings in code blocks are not headings)."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    headings = re.findall(r"^#+ (.+)$", prose, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_every_relative_link_resolves():
    checked = 0
    for page in PAGES:
        prose = re.sub(r"^```.*?^```", "", TEXT[page], flags=re.S | re.M)
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not relative
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            assert file.is_file(), f"{name(page)}: {target} does not resolve"
            if anchor and file.suffix == ".md":
                assert anchor in anchors(file.read_text()), f"{name(page)}: {target} names no heading"
            checked += 1
    assert checked >= len(PAGES) - 1


# The Layout section: a code block of paragraphs, each starting at column 0 with a folder (`erp_sim/`,
# `erp_sim/mcp/`) and going on in indented lines.
DATA_SUFFIXES = {"json", "jsonl", "md", "html", "css", "js", "txt"}
NAME = re.compile(r"(?<![\w.-])([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*)(?![\w-])(/(?!\w))?")


def layout_paragraphs(readme: str) -> dict[str, str]:
    """Folder -> its paragraph of the README's Layout block."""
    section = re.split(r"^## Layout\n", readme, maxsplit=1, flags=re.M)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"^```\n(.*?)^```", section, flags=re.S | re.M)
    paragraphs: dict[str, str] = {}
    folder = ""
    for line in block.splitlines():
        if line and not line[0].isspace():
            folder, _, line = line.partition(" ")
            paragraphs[folder] = ""
        paragraphs[folder] += " " + line.strip()
    return paragraphs


def layout_problems(readme: str, root: Path) -> list[str]:
    """What the Layout section misses of the tree's packages and modules, and what it names that is not there.

    A module (``x.py``) is named by its name (``x``), a package or any folder by ``x/``, in the paragraph of
    the nearest folder above it that has one; a module below a subfolder of that folder needs the subfolder
    named there too (``evaluation/`` ... ``report``). Names with an underscore or a dot, and folders, must
    exist below the paragraph's folder (a dotted name: as an installed module). A one-word name cannot be
    told from prose, so a stale one (``oracle`` after oracle.py is gone) passes unseen.
    """
    paragraphs = layout_paragraphs(readme)
    modules = find_modules(root)
    package_folders = {folder.relative_to(root).as_posix() + "/" for folder in package_roots(root).values()}
    problems = [f"{folder} is not a folder" for folder in paragraphs if not (root / folder).is_dir()]
    for folder, text in paragraphs.items():
        if not any(folder.startswith(package) for package in package_folders) or not (root / folder).is_dir():
            continue
        names = {match.group(1) + (match.group(2) or "") for match in NAME.finditer(text)}
        below = [
            path.relative_to(root / folder) for path in (root / folder).rglob("*") if "__pycache__" not in path.parts
        ]
        folders = {part + "/" for path in below for part in (path.parts if path.suffix != ".py" else path.parts[:-1])}
        stems = {path.stem for path in below if path.suffix == ".py"}
        files = {path.name for path in below}
        for name in sorted(names):
            if name.endswith("/"):
                known = name in folders
            elif name.rpartition(".")[2] in DATA_SUFFIXES:  # a data file (rules.md, schema.json) lies below
                known = name in files
            elif "." in name:
                known = name in modules
            else:
                known = "_" not in name.strip("_") or name in stems or name + "/" in folders
            if not known:
                problems.append(f"{folder}: names {name}, which is not there")
    for module in modules.values():
        path = module.path.relative_to(root).as_posix()
        above = [folder for folder in paragraphs if path.startswith(folder)]
        if not above:
            problems.append(f"{path}: no paragraph of the Layout covers it")
            continue
        folder = max(above, key=len)
        parts = path[len(folder) :].split("/")
        wanted = [part + "/" for part in parts[:-1]]
        if not module.path.name.startswith("__"):
            wanted.append(module.path.stem)
        names = {match.group(1) + (match.group(2) or "") for match in NAME.finditer(paragraphs[folder])}
        missing = [name for name in wanted if name not in names]
        if missing:
            problems.append(f"{path}: {folder} does not name {', '.join(missing)}")
    return problems


def test_the_layout_names_every_package_and_module_and_nothing_else():
    problems = layout_problems(README, ROOT)
    assert not problems, f"{len(problems)}:\n" + "\n".join(problems)


def test_layout_problems_finds_what_is_missing_and_what_is_not_there(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.setuptools.package-dir]\n"erp_sim.agents" = "agents"\n')
    files = (
        "erp_sim/__init__.py erp_sim/tool_registry.py erp_sim/world.py erp_sim/mcp/__init__.py erp_sim/mcp/server.py"
    )
    for name in [*files.split(), "agents/__init__.py", "agents/evaluation/__init__.py", "agents/evaluation/report.py"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    readme = textwrap.dedent("""\
        ## Layout

        ```
        erp_sim/   simulator: world (the world), tool_registry,
                   odata_query (gone), mcp/
        erp_sim/mcp/  the MCP server: server
        agents/    (erp_sim.agents) harness: evaluation/ (report + report_plots)
        docs/      pages
        ```
        """)
    assert layout_problems(readme, tmp_path) == [
        "docs/ is not a folder",
        "erp_sim/: names odata_query, which is not there",
        "agents/: names report_plots, which is not there",
    ]
    readme = readme.replace("evaluation/ (report", "evaluation (reports")
    assert layout_problems(readme, tmp_path)[-2:] == [
        "agents/evaluation/__init__.py: agents/ does not name evaluation/",
        "agents/evaluation/report.py: agents/ does not name evaluation/, report",
    ]

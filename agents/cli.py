"""The ``erp-sim`` command: one entry point over the three faces of the project.

Subcommands import their module only when used, so ``erp-sim --help`` loads nothing heavy,
``erp-sim serve`` does not load the agent harness and ``erp-sim eval`` does not load the MCP stack.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# subcommand -> (module with main(argv) -> int, one-line help)
COMMANDS = {
    "demo": ("erp_sim.agents.demo", "Solve one task with the scripted oracle and print the graded result."),
    "serve": ("erp_sim.mcp.server", "Serve the fake ERP over MCP (stdio, or --http)."),
    "play": ("erp_sim.envs.play", "Play an episode in the terminal."),
    "eval": ("erp_sim.agents.evaluation.eval_cli", "Run the offline evaluation (presets C1-C4 by default)."),
    "sweep": ("erp_sim.agents.evaluation.sweep", "Run a grid over context-policy parameters."),
    "scale": (
        "erp_sim.agents.evaluation.scale",
        "Cost of each context policy against the horizon (long_horizon ladder).",
    ),
    "report": ("erp_sim.agents.evaluation.report.cli", "Write report.md and plots for a results directory."),
    "show": ("erp_sim.agents.evaluation.show", "Print what the model was shown at each step of one evaluated episode."),
    "view": (
        "erp_sim.agents.evaluation.report.view",
        "Write one self-contained HTML page to browse a results directory.",
    ),
    "acon": ("erp_sim.agents.acon.cli", "ACON: optimise the compression guideline (UT, CO); export distillation data."),
}


def main(argv: list[str] | None = None) -> int:
    try:
        code = _run(list(sys.argv[1:] if argv is None else argv))
        if sys.stdout is not None:  # None: started with fd 1 closed
            sys.stdout.flush()  # a reader that went away (`erp-sim demo | head -1`) shows up here at the latest
        return code
    except KeyboardInterrupt:  # a command without a message of its own for Ctrl-C: no traceback either
        print("\nerp-sim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # As the Python docs recommend for SIGPIPE: no traceback for output nobody reads; stdout goes to
        # devnull so that the interpreter's own flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _run(argv: list[str]) -> int:
    # Every command ships in the one wheel; its module is imported only when it runs (finding it
    # here would import its package: Gymnasium and NumPy for `play`, just to print the help).
    available = COMMANDS
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in available:
        parser = argparse.ArgumentParser(
            prog="erp-sim", description="erp-sim: a Dynamics 365 expense ERP simulator for LLM agents."
        )
        sub = parser.add_subparsers(dest="command", metavar="COMMAND")
        for name, (_, help_text) in available.items():
            sub.add_parser(name, help=help_text, add_help=False)
        if argv and argv[0] not in ("-h", "--help"):
            parser.error(f"unknown command {argv[0]!r}")
        parser.print_help()
        return 0 if argv else 2
    if argv[0] == "serve" and "--openenv" in argv[1:]:
        return _serve_openenv([arg for arg in argv[1:] if arg != "--openenv"])
    module = importlib.import_module(available[argv[0]][0])
    return int(module.main(argv[1:]) or 0)


def _serve_openenv(argv: list[str]) -> int:
    """``erp-sim serve --openenv``: the env over OpenEnv, with options of its own (``erp-sim serve --openenv --help``).
    Chosen here, not by the MCP server's ``serve``: the env is a layer above the simulator, which imports nothing
    from it."""
    try:
        from erp_sim.envs.openenv import main as serve_openenv
    except ImportError as exc:
        print(
            f"erp-sim serve --openenv needs the openenv extra (pip install 'erp-sim[openenv]'): {exc}", file=sys.stderr
        )
        return 2
    return serve_openenv(argv)


if __name__ == "__main__":
    sys.exit(main())

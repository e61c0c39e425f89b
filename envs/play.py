"""Play one episode in the terminal: type tool calls or messages, read the ERP's answers.

    erp-sim play --env erp_sim/MealsItemization-v0 --task 3
    erp[step 0]> tools
    erp[step 0]> form_find_menu_item {"menuItemFilter": "expense"}
    erp[step 1]> say I'm done, the remaining amount is 0.00.

Only tool calls and messages to the user take a step; every other command (help, tools, prompt,
task, raw, grade) is answered here, and an unknown word or a stray escape sequence is refused
without reaching the ERP. In a terminal the prompt has GNU readline's line editing, history (Up
and Down) and Tab completion of commands and tool names: the standard library's readline does
all of this, so no extra dependency (prompt_toolkit would add one for features we do not use).
Input that is not a terminal is read line by line, so a session can be scripted:
``printf 'help\\nquit\\n' | erp-sim play``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys

import gymnasium as gym

from erp_sim.envs import DEFAULT_ENV_ID, ENV_IDS
from erp_sim.envs.expense_env import expense_env_of
from erp_sim.envs.observation_text import readable
from erp_sim.verbosity import VERBOSITIES

HELP = """\
Commands (only tool calls and 'say' take a step):
  <tool> {json arguments}   call a tool, e.g. form_open_menu_item {"name": "TrvExpenses"}
  <tool>                    call a tool without arguments, e.g. form_save_form
  {"name": ..., ...}        a raw action: {"name": tool, "arguments": {...}} or {"message": text}
  say <text>                send a message to the user
  tools [name]              list the tools with their arguments, or one tool in full
  prompt                    show the agent's system prompt (its procedure and the task's rules)
  task                      show the task (the user's first message) again
  raw                       show the last response as the agent sees it (JSON)
  grade                     show the grade of the current state
  help                      show this help
  quit                      end the episode (also Ctrl-D)
Line editing: arrows, Ctrl-A/Ctrl-E, Up/Down for history, Tab completes commands and tool names."""

LOCAL_COMMANDS = ("help", "tools", "prompt", "task", "raw", "grade", "quit")
ALIASES = {"?": "help", "exit": "quit"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="erp-sim play", description="Play one episode in the terminal.")
    parser.add_argument("--env", default=DEFAULT_ENV_ID, help=f"registered env id ({', '.join(ENV_IDS)})")
    parser.add_argument("--task", help="task id (hotel-007) or index within the task set; default: drawn from --seed")
    parser.add_argument("--seed", type=int, default=0, help="reset seed (default 0)")
    parser.add_argument("--verbosity", choices=VERBOSITIES, default="default")
    parser.add_argument("--user", choices=("rule", "none"), default="rule", help="simulated user, or none (C1)")
    parser.add_argument(
        "--receipt", action="store_true", help="list the task's documents in the instruction (a receipt's charges)"
    )
    parser.add_argument("--faults", help='fault profile, e.g. 0.1 or "rate=0.1,seed=3"')
    parser.add_argument("--max-steps", type=int, help="override max_episode_steps")
    parser.add_argument("--raw", action="store_true", help="print responses exactly as sent (default: a readable view)")
    return parser


def parse_command(line: str, tool_names) -> tuple[str, object]:
    """A typed line -> ("action", action) | ("say", text) | (command, argument) | ("error", message)."""
    text = line.strip()
    if not text:
        return "empty", None
    if any((ord(ch) < 32 and ch != "\t") or ord(ch) == 127 for ch in text):
        return "error", "Ignored a line with control characters or a terminal escape sequence; nothing was sent."
    word, _, rest = text.partition(" ")
    rest = rest.strip()
    command = ALIASES.get(word.lower(), word.lower())
    if command in LOCAL_COMMANDS and (not rest or command == "tools"):
        return command, rest or None
    if command == "say":
        return ("action", {"message": rest}) if rest else ("error", "Say what? e.g. say Should I add all charges?")
    if text.startswith("{"):
        try:
            action = json.loads(text)
        except ValueError as exc:
            return "error", f"Not valid JSON ({exc}); nothing was sent."
        if not isinstance(action, dict) or ("name" not in action and "message" not in action):
            return "error", 'A raw action is {"name": tool, "arguments": {...}} or {"message": text}.'
        if "name" in action and action["name"] not in tool_names:
            return "error", unknown(str(action["name"]), tool_names)
        return "action", text
    if word not in tool_names:
        return "error", unknown(word, tool_names)
    if rest and not rest.startswith("{"):
        return "error", 'Arguments must be a JSON object, e.g. form_find_menu_item {"menuItemFilter": "expense"}.'
    return "action", json.dumps({"name": word, "arguments": rest or {}})


def unknown(word: str, tool_names) -> str:
    close = difflib.get_close_matches(word, [*LOCAL_COMMANDS, "say", *tool_names], n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(close)}?" if close else ""
    return f"Unknown command or tool {word!r}; nothing was sent.{hint} Type 'help' for commands, 'tools' for tools."


# --- tools from the registry ---------------------------------------------------------------------
def type_of(schema: dict, defs: dict) -> str:
    """A JSON schema as a short type: string, list[...], {field: type}, a|b."""
    if "$ref" in schema:
        target = defs[schema["$ref"].rsplit("/", 1)[-1]]
        return (
            "{"
            + ", ".join(f"{name}: {type_of(prop, defs)}" for name, prop in target.get("properties", {}).items())
            + "}"
        )
    if "anyOf" in schema:
        return "|".join(type_of(option, defs) for option in schema["anyOf"])
    if "enum" in schema:
        return "|".join(json.dumps(value) for value in schema["enum"])
    if schema.get("type") == "array":
        return f"list[{type_of(schema.get('items', {}), defs)}]"
    return str(schema.get("type", "any"))


def tool_signature(parameters: dict) -> list[tuple[str, str, str]]:
    """(name, type, description) per argument; optional ones end in '?'."""
    required, defs = set(parameters.get("required", ())), parameters.get("$defs", {})
    return [
        (name + ("" if name in required else "?"), type_of(prop, defs), prop.get("description", ""))
        for name, prop in parameters.get("properties", {}).items()
    ]


def describe_tools(tools: list[dict], name: str | None = None) -> str:
    functions = [tool["function"] for tool in tools]
    if name:
        chosen = [f for f in functions if f["name"] == name]
        if not chosen:
            return unknown(name, [f["name"] for f in functions]).replace("; nothing was sent", "")
        function = chosen[0]
        lines = [f"{function['name']}: {function['description']}", "Arguments (? = optional):"]
        lines += [f"  {arg}: {kind}\n      {text}" for arg, kind, text in tool_signature(function["parameters"])] or [
            "  (none)"
        ]
        return "\n".join(lines)
    lines = []
    for function in functions:
        arguments = ", ".join(f"{arg}: {kind}" for arg, kind, _ in tool_signature(function["parameters"]))
        lines.append(f"  {function['name']}({arguments})\n      {function['description'].split('. ')[0].rstrip('.')}.")
    return "\n".join(lines) + "\n'tools NAME' shows one tool with its arguments' descriptions."


# --- the terminal loop ---------------------------------------------------------------------------
def complete_with(words: list[str]) -> None:
    """Tab completion of ``words`` at the prompt, where readline exists."""
    try:
        import readline
    except ImportError:  # e.g. Windows without pyreadline: plain input() still works
        return
    readline.set_completer(lambda text, state: ([w + " " for w in words if w.startswith(text)] + [None])[state])
    readline.set_completer_delims(" ")
    readline.parse_and_bind("tab: complete")


def line_reader(words: list[str]):
    """A function prompt -> line or None at end of input; readline editing when stdin is a terminal."""
    if not sys.stdin.isatty():
        return lambda prompt: sys.stdin.readline() or None
    complete_with(words)

    def read(prompt: str) -> str | None:
        while True:
            try:
                return input(prompt)
            except EOFError:
                print()
                return None
            except KeyboardInterrupt:  # Ctrl-C clears the line, as in a shell; quit or Ctrl-D ends
                print("^C (type quit or press Ctrl-D to end)")

    return read


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.env not in gym.registry:  # gymnasium's own message suggests one near name, not the ids there are
        ids = ", ".join(ENV_IDS)
        print(f"{parser.prog}: error: --env {args.env}: not a registered env id; erp-sim's: {ids}", file=sys.stderr)
        return 2

    out = sys.stdout
    kwargs = {
        "verbosity": args.verbosity,
        "user_model": args.user,
        "receipt_in_instruction": args.receipt,
        "faults": args.faults,
    }
    if args.max_steps is not None:
        kwargs["max_episode_steps"] = args.max_steps
    try:
        env = gym.make(args.env, **kwargs)
        options: dict[str, int | str] = {}
        if args.task is not None:
            options = {"task_index": int(args.task)} if args.task.isdigit() else {"task_id": args.task}
        observation, info = env.reset(seed=args.seed, options=options)
    except (gym.error.Error, KeyError, ValueError) as exc:
        reason = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc  # a KeyError's str() adds quotes
        print(f"{parser.prog}: error: {reason}", file=sys.stderr)  # argparse's form and status, as for its own
        return 2
    task, tools, system_prompt, instruction = info["task"], info["tools"], info["system_prompt"], observation
    tool_names = [tool["function"]["name"] for tool in tools]
    session = expense_env_of(env).session
    assert session is not None  # reset opened it
    workflow = session.workflow
    print(f"Task {task['task_id']} ({workflow.describe_task(task)}). Type 'help' for commands.\n", file=out)
    print(f"USER: {observation}\n", file=out)
    read = line_reader([*LOCAL_COMMANDS, "say", *tool_names])
    last_response, steps, reason = None, 0, None
    try:  # Ctrl-C at the prompt only clears the line (see line_reader); elsewhere it ends the episode
        while (line := read(f"erp[step {steps}]> ")) is not None:
            kind, payload = parse_command(line, tool_names)
            if kind == "quit":
                reason = "quit"
                break
            if kind == "help":
                print(HELP, file=out)
            elif kind == "tools":
                print(describe_tools(tools, payload if isinstance(payload, str) else None), file=out)
            elif kind == "prompt":
                print(system_prompt, file=out)
            elif kind == "task":
                print(f"USER: {instruction}", file=out)
            elif kind == "raw":
                print(last_response if last_response is not None else "No tool call yet.", file=out)
            elif kind == "grade":
                print(format_grade(expense_env_of(env).grade(), workflow.progress_line(info["grade"])), file=out)
            elif kind == "error":
                print(payload, file=out)
            elif kind == "action":
                observation, reward, terminated, truncated, info = env.step(payload)
                steps = info["counts"]["steps"]
                if info["action"]["kind"] == "message":
                    print(f"USER: {observation}", file=out)
                else:
                    last_response = observation
                    print(f"ERP: {observation}" if args.raw else readable(observation), file=out)
                print(f"[reward {reward:g}, {workflow.progress_line(info['grade'])}, step {steps}]\n", file=out)
                if terminated or truncated:
                    reason = info["termination_reason"] or "step limit"
                    break
    except KeyboardInterrupt:
        reason = "interrupted"
        print(file=out)
    print(f"Episode ended: {reason or 'end of input'}.", file=out)
    print(format_grade(expense_env_of(env).grade(), workflow.progress_line(info["grade"])), file=out)
    env.close()
    return 0


def format_grade(grade, progress: str) -> str:
    """The grade's verdicts, the live progress (its workflow's ``progress_line``) and any collateral change."""
    lines = [f"Grade: success={grade.success} strict_success={grade.strict_success}; {progress}"]
    collateral = getattr(grade, "collateral", None)  # a workflow's grade may name no collateral check
    if collateral:
        lines.append("Collateral changes: " + "; ".join(collateral))
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())

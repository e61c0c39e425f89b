"""Play one episode in the terminal: type tool calls or messages, read the ERP's answers.

    erp-sim play --env erp_sim/MealsItemization-v0 --task 3
    > form_find_menu_item {"menuItemFilter": "expense"}
    > say I'm done, the remaining amount is 0.00.
    > grade

Reads commands from stdin, so a session can be scripted: ``printf 'help\\nquit\\n' | erp-sim play``.
"""

from __future__ import annotations

import argparse
import json
import sys

HELP = """\
Commands:
  <tool> {json arguments}   call a tool, e.g. form_open_menu_item {"name": "TrvExpenses"}
  <tool>                    call a tool without arguments, e.g. form_save_form
  {"name": ..., ...}        a raw action: {"name": tool, "arguments": {...}} or {"message": text}
  say <text>                send a message to the user
  tools                     list the tools
  grade                     show the grade of the current state
  help                      show this help
  quit                      end the episode (also end of input)"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="erp-sim play", description="Play one itemization episode in the terminal.")
    parser.add_argument("--env", default="erp_sim/ExpenseItemization-v0", help="registered env id")
    parser.add_argument("--task", help="task id (hotel-007) or index within the task set; default: drawn from --seed")
    parser.add_argument("--seed", type=int, default=0, help="reset seed (default 0)")
    parser.add_argument("--verbosity", choices=("default", "compact"), default="default")
    parser.add_argument("--user", choices=("rule", "none"), default="rule", help="simulated user, or none (C1)")
    parser.add_argument("--receipt", action="store_true", help="list the receipt's charges in the instruction")
    parser.add_argument("--faults", help='fault profile, e.g. 0.1 or "rate=0.1,seed=3"')
    parser.add_argument("--max-steps", type=int, help="override max_episode_steps")
    parser.add_argument("--raw", action="store_true", help="print responses exactly as sent (default: indented JSON)")
    return parser


def parse_command(line: str):
    """A typed line -> ("action", action) | ("say", text) | (command, None) | ("error", message)."""
    text = line.strip()
    word, _, rest = text.partition(" ")
    if not text:
        return "empty", None
    if word.lower() in ("help", "?", "quit", "exit", "grade", "tools") and not rest:
        return word.lower().replace("?", "help").replace("exit", "quit"), None
    if word.lower() == "say":
        return "action", {"message": rest.strip()}
    if text.startswith("{"):
        return "action", text
    if rest.strip() and not rest.strip().startswith("{"):
        return "error", "Arguments must be a JSON object, e.g. form_find_menu_item {\"menuItemFilter\": \"expense\"}."
    return "action", json.dumps({"name": word, "arguments": rest.strip() or {}})


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import gymnasium as gym

    import erp_sim.envs  # noqa: F401  (registers the ids)
    import erp_sim

    out = sys.stdout
    kwargs = {"verbosity": args.verbosity, "user_model": args.user, "receipt_in_instruction": args.receipt,
              "faults": args.faults}
    if args.max_steps is not None:
        kwargs["max_episode_steps"] = args.max_steps
    try:
        env = gym.make(args.env, **kwargs)
        options = {}
        if args.task is not None:
            options = {"task_index": int(args.task)} if args.task.isdigit() else {"task_id": args.task}
        observation, info = env.reset(seed=args.seed, options=options)
    except (gym.error.Error, KeyError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    task = info["task"]
    print(f"Task {task['task_id']} ({task['expense_type']}, {task['difficulty']}, {task['item_count']} receipt charges). "
          "Type 'help' for commands.\n", file=out)
    print(f"USER: {observation}\n", file=out)
    reason = None
    for line in sys.stdin:
        kind, payload = parse_command(line)
        if kind == "quit":
            reason = "quit"
            break
        if kind == "help":
            print(HELP, file=out)
        elif kind == "tools":
            print("\n".join(f"  {t.name}: {t.description}" for t in erp_sim.TOOLS.values()), file=out)
        elif kind == "grade":
            print(format_grade(env.unwrapped.grade()), file=out)
        elif kind == "error":
            print(payload, file=out)
        elif kind == "action":
            observation, reward, terminated, truncated, info = env.step(payload)
            speaker = "USER" if info["action"]["kind"] == "message" else "ERP"
            print(f"{speaker}: {observation if args.raw else pretty(observation)}", file=out)
            print(f"[reward {reward:g}, remaining {info['grade']['remaining_amount']}, step {info['counts']['steps']}]\n",
                  file=out)
            if terminated or truncated:
                reason = info["termination_reason"] or "step limit"
                break
    print(f"Episode ended: {reason or 'end of input'}.", file=out)
    print(format_grade(env.unwrapped.grade()), file=out)
    env.close()
    return 0


def pretty(observation: str) -> str:
    """Indented JSON for people; plain text (user replies) unchanged."""
    try:
        return json.dumps(json.loads(observation), indent=2, ensure_ascii=False)
    except ValueError:
        return observation


def format_grade(grade) -> str:
    lines = [f"Grade: success={grade.success} strict_success={grade.strict_success} "
             f"itemized={grade.itemized_fraction:.2%} remaining={grade.remaining_amount} "
             f"saved_lines={grade.saved_lines}/{grade.expected_lines} unsaved_rows={grade.unsaved_rows} "
             f"itemization_form_open={grade.itemization_form_open}"]
    if grade.collateral:
        lines.append("Collateral changes: " + "; ".join(grade.collateral))
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())

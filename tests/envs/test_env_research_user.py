"""A research user's solver, written from docs/envs.md, the env docstring, ``info["tools"]``,
``info["system_prompt"]`` and the observations only (not the oracle): it reads every value it
needs from what ``env.step`` returns, so it checks that the documented path is really there."""

import json
import re

import gymnasium as gym
import pytest

import erp_sim.envs  # noqa: F401  (registers the ids)

TRANSIENT = {"FormBusy", "SessionLost", "RequestTimeout"}  # the fault codes the env docstring names


def find(node, kind, name):
    """The control or grid called ``name`` in a list keyed ``kind`` anywhere under ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == kind and isinstance(value, list):
                hit = next((x for x in value if isinstance(x, dict) and x.get("Name") == name), None)
                if hit is not None:
                    return hit
            if (hit := find(value, kind, name)) is not None:
                return hit
    elif isinstance(node, list):
        return next((hit for x in node if (hit := find(x, kind, name)) is not None), None)
    return None


class DocsOnlySolver:
    def __init__(self, env):
        self.env = env

    def call(self, tool, **arguments):
        self.last = self.env.step(json.dumps({"name": tool, "arguments": arguments}))
        while self.last[4]["action"]["error_code"] in TRANSIENT:  # a faulted call changed nothing: send it again
            self.last = self.env.step(json.dumps({"name": tool, "arguments": arguments}))
        response, info = json.loads(self.last[0]), self.last[4]
        assert not info["action"]["is_error"], (tool, arguments, response["Result"])
        return response

    def all_rows(self, response, grid):
        rows = find(response["FormState"], "Grid", grid)
        found = list(rows["Rows"])
        while rows["Pagination"]["HasNextPage"]:
            rows = find(
                self.call("form_click_control", controlName=grid, actionId="LoadNextPage")["FormState"], "Grid", grid
            )
            found += rows["Rows"]
        return found

    def solve(self, instruction, info):
        report, line = re.search(r"(EXP-\d+): line (\d+)", instruction).groups()
        wording = {
            w.lower(): sub.strip()
            for words, sub in re.findall(r"^- (.+) -> (.+)$", info["system_prompt"], re.M)
            for w in re.findall(r"'([^']+)'", words)
        }
        self.call("form_open_menu_item", name="TrvExpenses")
        self.call(
            "form_filter_grid",
            gridName="ExpenseReportsGrid",
            gridColumnName="TrvExpTable_ExpNumber",
            filterValue=report,
        )
        self.call("form_select_grid_row", gridName="ExpenseReportsGrid", rowNumber="1")
        lines = self.all_rows(self.call("form_click_control", controlName="EditReport"), "ExpenseLinesGrid")
        row = next(r for r in lines if r["Values"]["TrvExpTrans_LineNum"] == line)  # may sit on a later page
        self.call("form_select_grid_row", gridName="ExpenseLinesGrid", rowNumber=row["RowNumber"])
        charges = self.all_rows(self.call("form_click_control", controlName="ViewReceipt"), "ReceiptItemsGrid")
        self.call("form_close_form")
        self.call("form_click_control", controlName="Itemize")
        for charge in (c["Values"] for c in charges):
            self.call("form_click_control", controlName="NewLine")
            self.call(
                "form_set_control_values",
                controlValues=[
                    {
                        "controlName": "TrvExpTrans_ExpSubCategory",
                        "value": wording[charge["ReceiptItem_Description"].lower()],
                    },
                    {"controlName": "TrvExpTrans_TransDate", "value": charge["ReceiptItem_Date"]},
                    {"controlName": "TrvExpTrans_AmountCurr", "value": charge["ReceiptItem_Amount"]},
                ],
            )
        saved = self.call("form_save_form")
        assert find(saved["FormState"], "RealInput", "ItemizationRemaining")["Value"] == "0.00"
        self.call("form_close_form")
        return self.last


@pytest.mark.parametrize(
    "env_id, kwargs",
    [
        ("erp_sim/ExpenseItemization-v0", {}),
        ("erp_sim/AllExpenseTypes-v0", {}),
        ("erp_sim/ExpenseItemization-v0", {"faults": "rate=0.1,seed=3"}),
        ("erp_sim/ExpenseItemization-v0", {"verbosity": "compact"}),
    ],
)
def test_a_docs_only_solver_earns_the_strict_reward_on_every_task(env_id, kwargs):
    env = gym.make(env_id, reward="strict", **kwargs)
    for index in range(len(env.unwrapped.tasks)):
        obs, info = env.reset(options={"task_index": index})
        _, reward, terminated, truncated, info = DocsOnlySolver(env).solve(obs, info)
        assert (reward, terminated, truncated) == (1.0, True, False), info["task"]["task_id"]
        assert info["termination_reason"] == "success" and info["final_grade"]["strict_success"]


def test_refusals_say_how_to_recover():
    env = gym.make("erp_sim/ExpenseItemization-v0")
    obs, info = env.reset(seed=0)
    solver = DocsOnlySolver(env)
    report = re.search(r"EXP-\d+", obs).group()

    def refusal(tool, **arguments):
        return json.loads(env.step(json.dumps({"name": tool, "arguments": arguments}))[0])["Error"]["Message"]

    solver.call("form_open_menu_item", name="TrvExpenses")
    assert "select a report in ExpenseReportsGrid first" in refusal("form_click_control", controlName="EditReport")
    solver.call(
        "form_filter_grid", gridName="ExpenseReportsGrid", gridColumnName="TrvExpTable_ExpNumber", filterValue=report
    )
    solver.call("form_select_grid_row", gridName="ExpenseReportsGrid", rowNumber="1")
    solver.call("form_click_control", controlName="EditReport")
    assert "select the expense line in ExpenseLinesGrid first" in refusal("form_click_control", controlName="Itemize")
    solver.call("form_select_grid_row", gridName="ExpenseLinesGrid", rowNumber=str(info["task"]["line_number"]))
    solver.call("form_click_control", controlName="Itemize")
    amount = [{"controlName": "TrvExpTrans_AmountCurr", "value": "1.00"}]
    assert "click NewLine" in refusal("form_set_control_values", controlValues=amount)
    solver.call("form_click_control", controlName="NewLine")
    assert "Select row 1 of ItemizationGrid (form_select_grid_row) and complete it" in refusal("form_save_form")
    solver.call(
        "form_set_control_values",
        controlValues=[*amount, {"controlName": "TrvExpTrans_ExpSubCategory", "value": "Room tax"}],
    )
    solver.call(
        "form_set_control_values", controlValues=[{"controlName": "TrvExpTrans_AmountCurr", "value": "99,999.00"}]
    )
    warning = solver.call("form_save_form")["Messages"][0]
    assert warning["Level"] == "Warning" and "correct its amount or delete it (DeleteLine)" in warning["Text"]

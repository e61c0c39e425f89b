"""Grading a bank reconciliation episode from the final ERP state, never from the transcript.

Everything is judged against the task's ground truth (which transactions clear which statement line, which
lines the user says to post and where), never against what the agent may have changed in the ERP:

- ``success``: the rule (``rules.ReconciliationSummary.complete``: no open line, a difference of exactly 0.00,
  marked reconciled), every match right, every posting right, and no collateral change. A match is right when
  it clears the right items: it is one of the task's groups, or several of them matched at once (coarser than
  the statement, but no transaction cleared against a line it does not belong to). A wrong match fails even
  when the difference nets to zero (another payment of the same amount, a payment and its reversal added in).
  A posting is right when it posts a line the user authorises, to the account the user names, once.
- ``strict_success``: success, and the match groups equal the task's exactly (each statement line matched on
  its own to its own transactions).
- ``reconciled_fraction``: the statement lines cleared rightly (in a right match, or rightly posted) / the lines.
- ``collateral``: every change outside the target reconciliation (another account's worksheet, ...), like
  AppWorld's DB diffs (``erp_sim.grading.collateral``).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from erp_sim.database import Row
from erp_sim.database.schema import load_schema
from erp_sim.grading import collateral
from erp_sim.grading.collateral import Expected
from erp_sim.json_values import JsonObject
from erp_sim.money import money_text
from erp_sim.workflows import Grader
from erp_sim.workflows.bank_reconciliation import SCHEMA_FILE, rules
from erp_sim.workflows.bank_reconciliation.catalog import MAIN_ACCOUNT_BY_ID
from erp_sim.workflows.bank_reconciliation.task import Task, task_of

if TYPE_CHECKING:
    from erp_sim.forms.base import FormHost

SCHEMA = load_schema(SCHEMA_FILE)


class Grade(BaseModel):
    success: bool = Field(
        description="Marked reconciled with no open line and a difference of 0.00, every match and posting right, "
        "no collateral change."
    )
    strict_success: bool = Field(description="Success, and the match groups equal the task's exactly.")
    reconciled_fraction: float = Field(description="Statement lines cleared rightly / statement lines.")
    reconciled: bool = Field(description="The target reconciliation is marked reconciled.")
    statement_total: str = Field(description="The sum of the statement's lines.")
    matched_amount: str = Field(description="Bank transactions matched to the statement's lines.")
    posted_amount: str = Field(description="Bank transactions posted from the statement's lines.")
    difference: str = Field(description="Statement total minus matched and posted amounts.")
    statement_lines: int = Field(description="Lines on the statement.")
    cleared_lines: int = Field(description="Lines in a match group (right or wrong).")
    right_lines: int = Field(description="Lines cleared rightly.")
    unmatched_lines: list[int] = Field(default_factory=list, description="Line numbers in no match group.")
    wrong_matches: list[str] = Field(default_factory=list, description="Match groups that clear the wrong items.")
    over_posted_fees: list[str] = Field(
        default_factory=list,
        description="Postings the user did not authorise (wrong line or account, twice, unmatched).",
    )
    coarse_matches: list[str] = Field(
        default_factory=list, description="Right match groups that join several of the task's groups (not strict)."
    )
    collateral: list[str] = Field(default_factory=list, description="Changes outside the target reconciliation.")


@dataclass(frozen=True)
class Verdict:
    """The match groups judged against the task: what ``Progress`` and the grade read."""

    right_lines: frozenset[int]
    wrong_matches: tuple[str, ...]
    over_posted: tuple[str, ...]
    coarse: tuple[str, ...]
    unmatched: tuple[int, ...]


@dataclass(frozen=True)
class Progress:
    """The cheap part of a grade: the reconciliation's figures, the verdict on its matches, collateral (only
    computed once everything else holds)."""

    summary: rules.ReconciliationSummary
    verdict: Verdict
    collateral_free: bool = False

    @property
    def matches_right(self) -> bool:
        return not self.verdict.wrong_matches and not self.verdict.over_posted

    @property
    def success(self) -> bool:
        return self.summary.complete and self.matches_right and self.collateral_free

    @property
    def strict_success(self) -> bool:
        return self.success and not self.verdict.coarse

    @property
    def done_fraction(self) -> Decimal:
        """(lines cleared rightly + marked reconciled - wrong matches - wrong postings) / (lines + 1), in 0-1."""
        verdict = self.verdict
        done = (
            len(verdict.right_lines) + self.summary.reconciled - len(verdict.wrong_matches) - len(verdict.over_posted)
        )
        return max(Decimal(0), Decimal(done) / (self.summary.line_count + 1))


def target_reconciliation(session: FormHost) -> int:
    """The RecId of the task's reconciliation (of its statement)."""
    row = session.db.execute(
        "SELECT r.id FROM bank_reconciliation r JOIN bank_statement s ON s.id = r.statement_id WHERE s.statement_id = ?",
        (task_of(session).statement_id,),
    ).fetchone()
    return int(row[0])


@dataclass(frozen=True)
class _Group:
    match_id: str
    lines: frozenset[int]  # line numbers
    vouchers: frozenset[str]


def _groups(db: sqlite3.Connection, rec_id: int) -> list[_Group]:
    by_match: dict[str, tuple[set[int], set[str]]] = {}
    for item in rules.match_items(db, rec_id):
        lines, vouchers = by_match.setdefault(item.match_id, (set(), set()))
        if item.line is not None:
            lines.add(item.line["line_number"])
        elif item.transaction is not None:
            vouchers.add(item.transaction["voucher"])
    return [_Group(m, frozenset(lines), frozenset(vouchers)) for m, (lines, vouchers) in by_match.items()]


def _postings(db: sqlite3.Connection, rec_id: int) -> dict[str, tuple[int, str]]:
    """Transactions posted from the statement's lines: voucher -> (line number, ledger account)."""
    rows = db.execute(
        "SELECT t.voucher, l.line_number, t.offset_account FROM bank_transaction t JOIN bank_statement_line l "
        "ON l.id = t.statement_line_id WHERE l.statement_id = (SELECT statement_id FROM bank_reconciliation WHERE id = ?)",
        (rec_id,),
    )
    return {voucher: (line, account or "") for voucher, line, account in rows}


def judge(task: Task, groups: list[_Group], postings: dict[str, tuple[int, str]], line_count: int) -> Verdict:
    """Each match group against the task's groups and postings (see the module's docstring)."""
    truth = {next(iter(lines)): vouchers for lines, vouchers in task.groups}  # every true group has one line
    fee_accounts = task.fee_accounts
    right: set[int] = set()
    wrong, over, coarse = [], [], []
    posted_right: set[str] = set()
    for group in groups:
        posted = group.vouchers & postings.keys()
        if len(group.lines) == 1 and len(group.vouchers) == 1 and posted:  # a line and a posting: judged below
            (line,), (number,) = group.lines, group.vouchers
            posted_line, account = postings[number]
            if posted_line == line:
                if fee_accounts.get(line) == account:
                    right.add(line)
                    posted_right.add(number)
                continue
        expected = set().union(*(truth.get(line, frozenset({"?"})) for line in group.lines))
        if group.lines <= truth.keys() and expected == group.vouchers:
            right |= group.lines
            if len(group.lines) > 1:
                coarse.append(f"{group.match_id}: lines {_numbers(group.lines)} matched as one group")
        else:
            wrong.append(f"{group.match_id}: lines {_numbers(group.lines)} with {', '.join(sorted(group.vouchers))}")
    cleared = {line for group in groups for line in group.lines}
    seen: set[int] = set()
    for number, (line, account) in sorted(postings.items()):
        if number in posted_right:
            seen.add(line)
            continue
        if line not in fee_accounts:
            over.append(f"{number}: line {line} was posted as new, but it has bank transaction(s) in the ledger")
        elif account != fee_accounts[line]:
            over.append(
                f"{number}: line {line} was posted to {_label(account)}, not {_label(fee_accounts[line])} as the user said"
            )
        else:
            over.append(f"{number}: line {line} was posted more than once, or its posting is not matched to it")
    unmatched = tuple(n for n in range(1, line_count + 1) if n not in cleared)
    return Verdict(frozenset(right), tuple(wrong), tuple(over), tuple(coarse), unmatched)


def _numbers(lines: frozenset[int]) -> str:
    return ", ".join(map(str, sorted(lines)))


def _label(account: str) -> str:
    spec = MAIN_ACCOUNT_BY_ID.get(account)
    return spec.label if spec else account or "no account"


def progress(session: FormHost, rec_id: int) -> Progress:
    """Cheap: it depends only on the database (cached until its next write)."""
    return session.cached_read(f"grade/progress/{rec_id}", lambda: _progress(session, rec_id))


def _progress(session: FormHost, rec_id: int) -> Progress:
    figures = rules.summary(session.db, rec_id)
    verdict = judge(task_of(session), _groups(session.db, rec_id), _postings(session.db, rec_id), figures.line_count)
    state = Progress(figures, verdict)
    if not (figures.complete and state.matches_right):
        return state
    return replace(state, collateral_free=not _collateral(session, rec_id))


def _collateral(session: FormHost, rec_id: int) -> list[str]:
    """``collateral_changes``, cached until the database next changes (callers must not mutate it)."""
    return session.cached_read(f"grade/collateral/{rec_id}", lambda: collateral_changes(session, rec_id))


def _asked_for(db: sqlite3.Connection, task: Task, rec_id: int) -> Expected:
    """What the task asks to change: its reconciliation (header, statement status, matches and their items) and
    its account's transactions (reconciled flags; postings from its statement, judged as postings)."""
    rec = rules.reconciliation_by_id(db, rec_id)
    statement_lines = {line["id"] for line in rules.statement_lines(db, rec["statement_id"])}

    def match_of_target(match_rec_id: object) -> bool:
        row = db.execute(
            "SELECT reconciliation_id FROM bank_reconciliation_match WHERE id = ?", (match_rec_id,)
        ).fetchone()
        return row is not None and row[0] == rec_id

    def expected(table: str, cols: list[str], old: Row | None, new: Row | None) -> bool:
        rows = [row for row in (old, new) if row is not None]
        field = {name: index for index, name in enumerate(cols)}
        if table == "bank_reconciliation":
            return all(row[0] == rec_id for row in rows)
        if table == "bank_statement":
            return all(row[0] == rec["statement_id"] for row in rows)
        if table == "bank_reconciliation_match":
            return all(row[field["reconciliation_id"]] == rec_id for row in rows)
        if table == "bank_reconciliation_match_item":
            return all(match_of_target(row[field["match_id"]]) for row in rows)
        if table == "bank_transaction" and all(row[field["account_id"]] == task.account_id for row in rows):
            if old is None and new is not None:  # a posting: from one of the statement's lines
                return new[field["statement_line_id"]] in statement_lines
            if old is not None and new is not None:  # only its reconciled flag may change
                return all(x == y or c == "reconciled" for c, x, y in zip(cols, old, new))
        return False

    return expected


def collateral_changes(session: FormHost, rec_id: int) -> list[str]:
    """Row-level diff against the task's initial database, minus the target reconciliation's own changes."""
    return collateral.collateral_changes(
        session.db, session.task, SCHEMA, _asked_for(session.db, task_of(session), rec_id)
    )


def full_collateral_changes(session: FormHost, rec_id: int) -> list[str]:
    """The same diff over every row of every table (slow; what tests check the logged diff against)."""
    return collateral.full_collateral_changes(
        session.db, session.task, SCHEMA, _asked_for(session.db, task_of(session), rec_id)
    )


def grade_dict(session: FormHost, rec_id: int | None = None, state: Progress | None = None) -> JsonObject:
    """The full grade as ``Grade.model_dump(mode="json")`` would give it, without the model's cost."""
    rec_id = target_reconciliation(session) if rec_id is None else rec_id
    state = state or progress(session, rec_id)
    figures, verdict = state.summary, state.verdict
    return {
        "success": state.success,
        "strict_success": state.strict_success,
        "reconciled_fraction": len(verdict.right_lines) / figures.line_count if figures.line_count else 0.0,
        "reconciled": figures.reconciled,
        "statement_total": money_text(figures.statement_total),
        "matched_amount": money_text(figures.matched_amount),
        "posted_amount": money_text(figures.posted_amount),
        "difference": money_text(figures.difference),
        "statement_lines": figures.line_count,
        "cleared_lines": figures.line_count - figures.open_line_count,
        "right_lines": len(verdict.right_lines),
        "unmatched_lines": list(verdict.unmatched),
        "wrong_matches": list(verdict.wrong_matches),
        "over_posted_fees": list(verdict.over_posted),
        "coarse_matches": list(verdict.coarse),
        "collateral": list(_collateral(session, rec_id)),
    }


def grade_session(session: FormHost, rec_id: int | None = None, state: Progress | None = None) -> Grade:
    return Grade.model_validate(grade_dict(session, rec_id, state))


GRADER: Grader[int, Progress] = Grader(
    model=Grade, target=target_reconciliation, progress=progress, grade=grade_dict, fraction="reconciled_fraction"
)

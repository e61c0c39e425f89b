"""What every bank reconciliation task shares: the company's bank accounts, its ledger accounts, the
bank's wording of each kind of statement line, and the matching rules an accountant works by.

Statement lines never say which bank transaction they clear; the bank's reference does
(``MATCHING_RULES``): a payment id, a check number or a deposit slip, printed the same way on the
ledger's transaction. Bank charges and interest have no transaction until someone posts one, to the
ledger account the user names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from erp_sim.workflows import Cell, Rows


@dataclass(frozen=True)
class BankAccountSpec:
    account_id: str  # BankAccountTable.AccountID
    code: str  # the short code in statement ids (BS-202603-OPER)
    name: str
    bank_name: str
    account_number: str
    main_account_id: str  # the balance-sheet account it posts to


BANK_ACCOUNTS: tuple[BankAccountSpec, ...] = (
    BankAccountSpec("USMF OPER", "OPER", "Operating account", "Contoso Bank", "34567-0041", "110110"),
    BankAccountSpec("USMF PAYR", "PAYR", "Payroll account", "Contoso Bank", "34567-0058", "110120"),
    BankAccountSpec("USMF RCPT", "RCPT", "Customer receipts", "Woodgrove Bank", "88120-3317", "110130"),
    BankAccountSpec("USMF DISB", "DISB", "Vendor disbursements", "Woodgrove Bank", "88120-3390", "110140"),
)


@dataclass(frozen=True)
class MainAccountSpec:
    main_account_id: str
    name: str
    account_type: str

    @property
    def label(self) -> str:
        """How the worksheet's lookup and the user name it: ``618160 Bank charges``."""
        return f"{self.main_account_id} {self.name}"


MAIN_ACCOUNTS: tuple[MainAccountSpec, ...] = (
    MainAccountSpec("110110", "Bank - operating", "Balance sheet"),
    MainAccountSpec("110120", "Bank - payroll", "Balance sheet"),
    MainAccountSpec("110130", "Bank - receipts", "Balance sheet"),
    MainAccountSpec("110140", "Bank - disbursements", "Balance sheet"),
    MainAccountSpec("618160", "Bank charges", "Expense"),
    MainAccountSpec("618170", "Card processing fees", "Expense"),
    MainAccountSpec("618180", "Wire transfer fees", "Expense"),
    MainAccountSpec("618190", "Other financial expenses", "Expense"),
    MainAccountSpec("801100", "Interest income", "Revenue"),
    MainAccountSpec("801200", "Other financial income", "Revenue"),
)
MAIN_ACCOUNT_BY_ID = {spec.main_account_id: spec for spec in MAIN_ACCOUNTS}
#: The accounts a statement line may be posted to (Mark as new): expenses for charges, revenue for interest.
POSTING_ACCOUNTS: tuple[MainAccountSpec, ...] = tuple(a for a in MAIN_ACCOUNTS if a.account_type != "Balance sheet")


# Statement line kinds: the bank's wording, the reference prefix and digits, the ledger's transaction type.
# Fixed-width references, so a grid filter on one ("contains") never finds another.
@dataclass(frozen=True)
class LineKind:
    name: str
    wording: tuple[str, ...]  # the bank's description, ``{party}`` filled in
    prefix: str
    digits: int
    trans_type: str  # the ledger transaction's type (a fee line has none until posted)
    ledger_wording: str  # the ledger transaction's description
    sign: int  # +1 credit, -1 debit


LINE_KINDS: dict[str, LineKind] = {
    kind.name: kind
    for kind in (
        LineKind(
            "customer_receipt",
            ("ACH CREDIT {party}", "ACH DEPOSIT {party}"),
            "CPY-",
            6,
            "Deposit",
            "Customer payment {party}",
            1,
        ),
        LineKind(
            "wire_in", ("WIRE IN {party}", "INCOMING WIRE {party}"), "WRI-", 6, "Deposit", "Incoming wire {party}", 1
        ),
        LineKind(
            "vendor_payment",
            ("ACH DEBIT {party}", "ACH PAYMENT {party}"),
            "PMT-",
            6,
            "Payment",
            "Vendor payment {party}",
            -1,
        ),
        LineKind(
            "wire_out", ("WIRE OUT {party}", "OUTGOING WIRE {party}"), "WRO-", 6, "Payment", "Outgoing wire {party}", -1
        ),
        LineKind("check", ("CHECK PAID", "CHECK CLEARED"), "CHK-", 6, "Payment", "Check to {party}", -1),
        LineKind("deposit", ("BRANCH DEPOSIT", "COUNTER DEPOSIT"), "DEP-", 4, "Deposit", "Customer check {party}", 1),
        LineKind(
            "booked_fee", ("LOCKBOX SERVICE FEE", "CARD PROCESSING FEE"), "FEE-", 5, "Fee", "Bank fee {party}", -1
        ),
        LineKind(
            "bank_fee",
            ("MONTHLY SERVICE CHARGE", "WIRE TRANSFER FEE", "ACCOUNT ANALYSIS FEE"),
            "SVC-",
            5,
            "Fee",
            "",
            -1,
        ),
        LineKind("interest", ("INTEREST CREDIT", "INTEREST PAID"), "INT-", 5, "Interest", "", 1),
    )
}
#: Kinds whose line has no bank transaction: the user decides whether and where to post it (Mark as new).
FEE_KINDS = ("bank_fee", "interest")
#: Which accounts the user may name for a fee line's wording (drawn per task, so the agent must ask).
FEE_ACCOUNTS: dict[str, tuple[str, ...]] = {
    "MONTHLY SERVICE CHARGE": ("618160", "618190"),
    "WIRE TRANSFER FEE": ("618180", "618160"),
    "ACCOUNT ANALYSIS FEE": ("618160", "618190"),
    "INTEREST CREDIT": ("801100", "801200"),
    "INTEREST PAID": ("801100", "801200"),
}

MATCHING_RULES = """\
- Each statement line's Reference is the payment reference of its bank transaction(s) in the ledger:
  CPY- customer payments, WRI- incoming wires, PMT- vendor ACH payments, WRO- outgoing wires, CHK- checks,
  FEE- bank fees the accountant has already booked. Match a line only to transactions with that reference
  whose amounts add up to the line's amount; a transaction with the same amount but another reference is
  another payment.
- A deposit slip (DEP-) covers several customer checks: the statement shows one line for the whole slip,
  the ledger one transaction per check, each with the slip's reference. Match the line to all of them at once.
- Leave open what the statement does not show: checks not yet cashed, deposits in transit, a payment and
  its reversal (the same reference, opposite amounts), transactions after the cut-off date.
- Bank charges (SVC-) and interest (INT-) have no bank transaction until one is posted. Ask the user before
  posting one, and post it (Mark as new) to the ledger account the user names, once.
- Bank transactions of other bank accounts never belong on this account's worksheet."""

# Faker's word lists (erp_sim/data/world_names.json, as itemization's world reads them): party names drawn
# with our own seeded rng.
_NAMES = json.loads((Path(__file__).parents[2] / "data" / "world_names.json").read_text(encoding="utf-8"))
LAST_NAMES: list[str] = _NAMES["last_names"]
COMPANY_SUFFIXES: list[str] = _NAMES["company_suffixes"]
FIRST_NAMES = (
    "Alex",
    "Avery",
    "Casey",
    "Dana",
    "Drew",
    "Elena",
    "Farah",
    "Hiro",
    "Ines",
    "Jamal",
    "Jordan",
    "Kai",
    "Lena",
    "Marta",
    "Mei",
    "Noor",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sam",
    "Taylor",
    "Uma",
    "Viktor",
)
USER_TITLES = ("treasury accountant", "accounts receivable lead", "staff accountant", "cash manager")


def voucher(number: int) -> str:
    """A bank transaction's voucher: BNK-004471."""
    return f"BNK-{number:06d}"


def match_number(rec_id: int) -> str:
    """A match's id as the worksheet shows it, from its RecId (never reused): MATCH-00012."""
    return f"MATCH-{rec_id:05d}"


def shared_rows() -> Rows:
    """The rows every task's database starts with: the bank accounts and the ledger accounts."""
    accounts: list[dict[str, Cell]] = [
        {
            "id": n,
            "account_id": spec.account_id,
            "name": spec.name,
            "bank_name": spec.bank_name,
            "account_number": spec.account_number,
            "currency": "USD",
            "main_account_id": spec.main_account_id,
        }
        for n, spec in enumerate(BANK_ACCOUNTS, start=1)
    ]
    ledger: list[dict[str, Cell]] = [
        {"id": n, "main_account_id": a.main_account_id, "name": a.name, "account_type": a.account_type}
        for n, a in enumerate(MAIN_ACCOUNTS, start=1)
    ]
    return {"bank_account": accounts, "main_account": ledger}

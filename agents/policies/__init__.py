"""Context policies: wrappers that decide what an agent's model sees at each step.

Build a stack from a spec string with ``wrap(agent, "head_tail:chars=800+last_n:n=5")``;
see ``spec`` for the grammar, ``units`` for the invariants every policy keeps, and
``presets`` for the study's C1-C4.
"""

from agents.policies.acon import AconHistory, AconObservation
from agents.policies.base import ContextPolicy, PolicyParams
from agents.policies.generic_agent import BudgetEviction, HeadTail, WorkingMemoryAnchor
from agents.policies.presets import PRESETS, Preset, preset
from agents.policies.recency import Fifo, Full, LastN, LastNSummary
from agents.policies.registry import POLICIES, LayerSpec, PolicySpec, parse_policy, wrap
from agents.policies.spec import PolicySpecError
from agents.policies.tool_clearing import ClearToolUses
from agents.policies.units import Split, TranscriptError, Unit, split_transcript, validate_messages

__all__ = [
    "AconHistory",
    "AconObservation",
    "BudgetEviction",
    "ClearToolUses",
    "ContextPolicy",
    "Fifo",
    "Full",
    "HeadTail",
    "LastN",
    "LastNSummary",
    "LayerSpec",
    "POLICIES",
    "PRESETS",
    "PolicyParams",
    "PolicySpec",
    "PolicySpecError",
    "Preset",
    "Split",
    "TranscriptError",
    "Unit",
    "WorkingMemoryAnchor",
    "parse_policy",
    "preset",
    "split_transcript",
    "validate_messages",
    "wrap",
]

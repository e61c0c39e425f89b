"""Context policies: wrappers that decide what an agent's model sees at each step.

Build a stack from a spec string: ``wrap(agent, "head_tail:chars=800+last_n:n=5")`` (the
leftmost layer sees the full transcript first). ``spec`` has the grammar, ``units`` the
invariants every policy keeps, ``presets`` the study's C1-C4.

| spec name | defaults | source | what the model sees |
|---|---|---|---|
| full | | study C2 | everything |
| last_n | n=5 | study C3 | the last n tool-call units (and what lies between them) |
| last_n_summary | n=5, w=3 | study C4 | the same plus a summary of evicted units, folded w at a time |
| fifo | k=5 | ACON baseline | the last k units of any kind |
| acon_history | t=4096, k=1, mode=accumulate, guideline=FILE (unset) | ACON | past t history tokens, all but k units summarized into the instruction (guideline: the compressor prompt) |
| acon_observation | t=1024, recent=3, guideline=FILE (unset) | ACON | tool results over t tokens replaced by refined ones (guideline: the compressor prompt) |
| head_tail | chars=800, tokens=0, keep_recent=1, tool_chars=, tool_tokens= | GenericAgent | old tool results cut to head + tail |
| budget_eviction | budget=30000, target=0.6, min_units=3 | GenericAgent | oldest units evicted past the budget |
| working_memory_anchor | at=start | GenericAgent | plus a task/constraints/progress block |
| retrieval | k=3, keep=5, backend=auto | ACON baseline | the last keep units plus the k evicted units most similar to the latest one |
| ga_memory | dir="" | GenericAgent | plus meta rules and the L1 memory index (system), the working checkpoint, the memory tools |
| clear_tool_uses | trigger=100000, keep=3, clear_at_least=0, exclude_tools=, clear_tool_inputs=false, placeholder | Anthropic | old tool results replaced by a placeholder |

Summarizing policies use ``wrap(..., summarizer=...)``: an ``LLMSummarizer`` over any chat
model, or (the default) the offline ``StructuredSummarizer``.
"""

from erp_sim.agents.policies.acon import AconHistory, AconObservation
from erp_sim.agents.policies.base import ContextPolicy, PolicyParams
from erp_sim.agents.policies.generic_agent import BudgetEviction, HeadTail, WorkingMemoryAnchor
from erp_sim.agents.policies.presets import PRESETS, Preset, preset
from erp_sim.agents.policies.recency import Fifo, Full, LastN, LastNSummary
from erp_sim.agents.policies.registry import (
    POLICIES,
    SUMMARIZING_POLICIES,
    LayerSpec,
    PolicySpec,
    parse_policy,
    summarizes,
    wrap,
)
from erp_sim.agents.policies.spec import PolicySpecError
from erp_sim.agents.policies.tool_clearing import ClearToolUses
from erp_sim.agents.policies.units import Split, TranscriptError, Unit, split_transcript, validate_messages

__all__ = [
    "POLICIES",
    "PRESETS",
    "SUMMARIZING_POLICIES",
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
    "summarizes",
    "validate_messages",
    "wrap",
]

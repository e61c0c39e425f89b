"""Default verbosity gives form responses of 500-3,000 o200k tokens, as in the study; compact is smaller."""

from __future__ import annotations

import statistics

from bpe_openai import get_encoding

from erp_sim import ErpSession, load_task_set, run_oracle
from erp_sim.verbosity import Verbosity


def form_response_tokens(verbosity: Verbosity) -> list[int]:
    encoding = get_encoding("o200k_base")
    counts = []
    for task in load_task_set("hotel_50"):
        for response in run_oracle(ErpSession(task, verbosity=verbosity)):
            if response.form_state is not None:
                counts.append(len(encoding.encode(response.text)))
    return counts


def test_default_form_responses_weigh_500_to_3000_tokens_and_compact_is_lighter():
    default = form_response_tokens("default")
    compact = form_response_tokens("compact")
    print(f"default: median {statistics.median(default)}, range {min(default)}-{max(default)}, n={len(default)}")
    print(f"compact: median {statistics.median(compact)}, range {min(compact)}-{max(compact)}")
    assert min(default) >= 500 and max(default) <= 3000
    assert statistics.median(compact) < 0.6 * statistics.median(default)

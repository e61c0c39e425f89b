"""Long-term memory across episodes (GenericAgent): a layered store, agent-side tools, consolidation.

- ``store``: L1 index (at most 30 lines, always shown), L2 facts, L3 SOPs, L4 archive (never shown),
  in a directory or a SQLite file, byte-deterministic;
- ``memory_tools``: ``memory_read``, ``update_working_checkpoint``, ``start_long_term_update``, answered by
  the harness (not the ERP): a ``HarnessTools`` (``erp_sim.agents.types``);
- ``consolidate``: "no execution, no memory": only graded successes become SOPs.

Its users sit above it: the ``ga_memory`` context policy (``erp_sim.agents.policies.ga_memory``: index in the
system prompt, checkpoint block, the tools offered), the scripted agent (which reads SOPs), and
``erp-sim eval --sequential`` (``erp_sim.agents.evaluation.sequential``: tasks in order with memory carried over,
and the learning curve).
"""

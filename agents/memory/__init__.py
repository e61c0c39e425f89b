"""Long-term memory across episodes (GenericAgent): a layered store, agent-side tools, consolidation.

- ``store``: L1 index (at most 30 lines, always shown), L2 facts, L3 SOPs, L4 archive (never shown),
  in a directory or a SQLite file, byte-deterministic;
- ``tools``: ``memory_read``, ``update_working_checkpoint``, ``start_long_term_update``, answered by
  the harness (not the ERP);
- ``consolidate``: "no execution, no memory": only graded successes become SOPs;
- ``policy``: the ``ga_memory`` context policy (index in the system prompt, checkpoint block);
- ``sequential``: ``erp-sim eval --sequential``, tasks in order with memory carried over, and the
  learning curve.
"""

"""ACON on erp-sim: compression-guideline optimisation and compressor distillation data.

ACON (Kang et al., 2025, "ACON: Optimizing Context Compression for Long-horizon LLM
Agents", arXiv 2510.00615) compresses an agent's history (past ``T_hist`` tokens) and long
observations (past ``T_obs``) with an LLM compressor that follows a natural-language
guideline, and optimises that guideline from failures:

- UT (utility): tasks the agent solves with its full context but fails with compression
  form the contrastive set; an optimizer LLM compares the two contexts of each and writes
  feedback; the aggregated feedback yields k candidate guidelines, each scored on the
  train split, the best kept;
- CO (compression): from episodes that still succeed, the optimizer rewrites the guideline
  shorter, keeping what was used; it is scored again.

The optimised compressor is then distilled into a small model from its (input, output)
pairs. ``optimize`` runs the loop (``erp-sim acon optimize``), ``export_sft`` writes the
distillation data (``erp-sim acon export-sft``); the optimizer's instructions are the files
in ``prompts/``.
"""

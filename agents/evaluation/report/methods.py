"""The report's methods section: how every figure in report.md is computed, in words (what the grade's figures
mean is each workflow's own: ``HarnessFace.grade_terms``)."""

from __future__ import annotations

from collections.abc import Iterable

_METHODS = """\
- **Scored episodes**: rows without `infra_error`; one row per (config, task, run), its last
  attempt (a run killed during `--resume` leaves several; a scored attempt is never displaced by a
  later infrastructure error), earlier attempts listed below. Infrastructure errors are counted
  once per episode and listed, never scored.
- **Per configuration** (Outcomes, Cost): each metric is reduced to one value per run (a run
  is one pass over the task set): the mean over the run's episodes for rates and per-episode
  metrics; for per-benchmark totals, that mean times the number of tasks (= the sum over
  tasks when the run is complete). The table gives the mean over runs R and the Student t
  interval mean ± t(0.975, R-1) · s/√R (`scipy.stats.t`, s with ddof 1): tasks are fixed,
  runs are the replicates. With one run, a BCa bootstrap over tasks
  (`scipy.stats.bootstrap`, 9999 resamples, fixed seed) instead. Intervals are clipped to
  the feasible range (rates to [0, 100]%, counts to ≥ 0).
{grade_terms}
- **Peak tokens** = the largest single
  model input of an episode; **dependency** = Σ over steps (n_in + 2·n_out)·n_out / 2 (ACON).
  Wall time per benchmark is the sum of episode wall times (serial-equivalent, whatever the
  concurrency of the run).
- **Against the baseline**, on tasks present in both configurations: d_t = (success rate of
  task t over its runs) − (the same for the baseline); Δ = mean_t d_t with a BCa bootstrap
  interval over tasks (paired, 9999 resamples, fixed seed). Cohen's h = 2·asin√p − 2·asin√p_base
  with p the mean success rate over the matched tasks (|h| 0.2 small, 0.5 medium, 0.8 large).
  p-value: two-sided sign-flip permutation test of mean d_t = 0 over tasks
  (`scipy.stats.permutation_test`, exact up to 13 non-zero tasks, else R = 9999 resamples); with
  one run per task and up to 13 tasks that differ it is McNemar's exact test (beyond, its resampled
  estimate). With resampling the smallest p it can give is
  2/(R+1) (two-sided, counting the observed statistic); a p at that floor is printed as
  "≤ 2/(R+1)", since the exact p may be smaller. Token changes: Σ_t tokens(t) / Σ_t
  tokens_base(t) − 1 (tokens(t) = mean over runs), paired BCa bootstrap over tasks. When no
  task is shared, a Welch t interval and test over run-level success rates instead.
- **pass^k** (tau-bench): for a task with c successes in n scored runs, C(c,k)/C(n,k) is
  the probability that k runs drawn without replacement all succeed; pass^k is its mean over
  tasks with n ≥ k (a cell names how many tasks when that is not all of them). pass^1 is the mean of
  the tasks' success rates, the success rate when every task has as many scored runs; the fall from
  pass^1 to pass^k shows how unreliable a configuration is from run to run.
- **Failure taxonomy**: `failure_category` of each scored episode, classified from the
  trajectory and final ERP state by the runner (`erp_sim.agents.failures`, which
  lists the categories and the order they are checked in; `context_overflow` is an episode
  whose request exceeded the model's context window); failed episodes without a category
  are counted as `unclassified`.
- **Prompt caching**: for every model call of a role (agent, summarizer, LLM user),
  `cacheable_prefix_tokens` = the o200k tokens of the longest prefix of its request identical to
  an earlier request of the same role in the same episode, the request being its tool schemas
  (one unit, first: changed tools make nothing cacheable) then its messages in the order sent;
  the first differing message is compared token by token (`erp_sim.agents.tokens.prompt_cache`).
  Cacheable share = Σ cacheable prefix / Σ input tokens over a configuration's scored episodes.
  It is an upper bound: o200k counts stand in for the provider's own tokenizer, and a provider
  may cache less (a minimum prefix length such as 1024 tokens, block granularity, eviction after
  minutes idle, a cache per server). A provider's own figure (`prompt_tokens_details.cached_tokens`)
  is kept apart as `provider_cached_tokens` and never mixed with ours.
- **Cost** (with `--price ROLE=input,cached_input,output[,cache_write]`, USD per 1M tokens, no
  default prices): per episode and priced role, without caching input·p_input + output·p_output;
  with caching cacheable·p_cached + (input − cacheable)·p_uncached + output·p_output, p_uncached
  being cache_write when given, else p_input (all o200k counts); summed over priced roles, then
  reduced per run and given with an interval like every per-benchmark total. Unpriced roles are
  named and left out. When a service reported counts, the same formula over its own figures
  (reported input and output, its cached tokens as the cached part) is a column of its own.
- **Token units**: every token figure is o200k_base unless named "reported" / "service": those are
  the model service's own counts (`usage.prompt_tokens`, `completion_tokens`), kept in fields of
  their own (`reported_*`, `*_reported_*`, `*provider_cached_tokens`).
- **Sources**: the study (Lodha et al., "Less context, smarter agents: efficient context
  engineering for long-horizon tool-using LLM agents", arXiv 2606.10209: the hotel itemization
  task in Dynamics 365, configurations C1-C4 and their figures); ACON (Kang et al., "ACON:
  optimizing context compression for long-horizon LLM agents", arXiv 2510.00615:
  history/observation compression, the dependency measure); GenericAgent
  (working-memory anchor, head/tail truncation, budget eviction policies); tau-bench (pass^k).
"""


def methods(grade_terms: Iterable[str]) -> str:
    """The section, with the grade terms of the rows' workflows (a bullet each, in the order given)."""
    return _METHODS.format(grade_terms="\n".join(terms.rstrip() for terms in grade_terms if terms.strip())).rstrip()

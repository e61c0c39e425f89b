"""Offline evaluation: run configurations x tasks x runs, then report with statistics and plots.

``evaluate`` runs and resumes (``erp-sim eval``), ``failures`` classifies failed episodes,
``statistics`` computes intervals and tests, ``report`` writes report.md and the plots,
``sweep`` runs the N x W grid.
"""

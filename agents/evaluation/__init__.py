"""Offline evaluation: run configurations x tasks x runs, then report with statistics and plots.

From the bottom up: ``episode_row`` is the typed row and the results file, ``statistics`` (with
``intervals``, ``runs``, ``attempts``) and ``costs`` compute over rows; ``eval_options``, ``episode_models``,
``output_lock``, ``recording_run`` and ``resume_check`` set up a run, ``evaluate`` runs and resumes it;
``report/`` writes report.md, the plots and the run page; ``sweep``, ``scale``, ``show`` and ``sequential`` are
commands over these, and ``eval_cli`` is ``erp-sim eval``'s command line.
"""

"""Vector envs with the settings text observations need.

``AsyncVectorEnv`` copies observations through shared memory by default, which encodes a
``Text`` observation as character indices of the space's charset: a response with a character
outside it fails in the worker, and every step copies ``max_length`` integers per env. Our
observations are free text, so the async path passes them through pipes
(``shared_memory=False``); ``make_vec`` sets that for you.
"""

from __future__ import annotations

from typing import Literal

import gymnasium as gym

from erp_sim.envs import DEFAULT_ENV_ID  # (importing erp_sim.envs registers the ids)


def make_vec(
    env_id: str = DEFAULT_ENV_ID,
    num_envs: int = 2,
    *,
    vectorization_mode: Literal["sync", "async"] = "async",
    vector_kwargs: dict | None = None,
    **env_kwargs,
) -> gym.vector.VectorEnv:
    """``gym.make_vec`` for an erp_sim id; async envs use ``shared_memory=False``.

    ``vector_kwargs`` pass on to the vector env (``autoreset_mode``, ``context="spawn"``, ...);
    the vector env's ``metadata["autoreset_mode"]`` says which mode is in force.
    """
    vector_kwargs = dict(vector_kwargs or {})
    if vectorization_mode == "async":
        vector_kwargs.setdefault("shared_memory", False)
    return gym.make_vec(
        env_id, num_envs=num_envs, vectorization_mode=vectorization_mode, vector_kwargs=vector_kwargs, **env_kwargs
    )

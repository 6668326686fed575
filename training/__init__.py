"""Training, evaluation and play: the torch/SB3 layer on top of bergen_env.

One import name, ``bergen_env.training``: the repository's ``training/`` folder, reached through
the link ``bergen_env/training`` in a checkout and installed under that name (no generic top-level
``training`` is installed, so a user's own ``training`` package never shadows it).
``python -m bergen_env.training.<module>`` and the console scripts run the same module objects.
The rest of the library never imports it: the agent kinds it adds (``ppo``, ``rllib``) reach the
agent registry through the ``bergen_env.agents`` entry-point group. Evaluation, play and replay
need only the base install; training needs the ``[train]`` extra (:mod:`.cli`).
"""

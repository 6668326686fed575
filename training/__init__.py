"""Training, evaluation and play: the torch/SB3 layer on top of bergen_env.

One import name, ``training``, installed or run from the repository's ``training/`` folder
(``python -m training.<module>`` and the console scripts run the same module objects). The
library (``bergen_env``) never imports it: the agent kinds it adds (``ppo``, ``rllib``) reach the
agent registry through the ``bergen_env.agents`` entry-point group (:mod:`.agent_kinds`).
Evaluation, play and replay need only the base install; training needs the ``[train]`` extra
(:mod:`.cli`).
"""

"""Training, evaluation and play: the torch/SB3 layer on top of bergen_env.

Installed as ``bergen_env.training`` (the repository keeps it in ``training/``, where
``python -m training.<module>`` runs it); its modules import each other relatively, so both
names work. Evaluation, play and replay need only the base install; training needs the
``[train]`` extra (:mod:`.cli`).
"""

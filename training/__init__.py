"""Training, evaluation and play: the torch/SB3 layer on top of bergen_env."""

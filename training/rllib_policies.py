"""RLlib checkpoints as agents: ``make_agent("rllib:PATH[:POLICY]")``.

It provides the agent kind ``"rllib"`` (:func:`make_rllib_agent`, the ``bergen_env.agents`` entry
point in pyproject.toml), so every tool that takes agent strings (the arena,
``bergen_env.training.evaluate``) can play a policy trained by
:mod:`bergen_env.training.train_rllib`. ``PATH`` is an algorithm checkpoint
(``Algorithm.save_to_path``, e.g. ``runs/rllib/<run>/checkpoints/final``) or a single RLModule
checkpoint (``RLModule.save_to_path``); ``POLICY`` is the module id (``shared``, ``side_0``, ...),
needed only when the checkpoint holds several and none is called ``shared``. The key=value form
works too: ``rllib:path=PATH,policy=side_1``.

Loading a checkpoint unpickles its ``class_and_ctor_args.pkl``, which can run code from the
file, so a checkpoint is loaded only when the caller says it is trusted:
``rllib:path=PATH,trust_pickle=true``, ``RLlibAgent(PATH, trust_pickle=True)``, or
``--trust-pickle`` on the command lines. Without it loading raises
:class:`UntrustedCheckpointError`.

The agent acts greedily: the most probable legal action of the RLModule's masked logits.

Importing this module is cheap and works without Ray: Ray and torch are imported when the first
``rllib`` agent is built (a clear error then names the missing ``[rllib]`` extra).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from bergen_env.agents.base import Agent, checked_legal_actions
from bergen_env.engine import PublicView
from bergen_env.errors import install_hint
from bergen_env.rules import Rules
from bergen_env.validation import check_keywords

#: The file every RLlib component checkpoint holds.
_CTOR_FILE = "class_and_ctor_args.pkl"
#: Where an algorithm checkpoint keeps its RLModules (RLlib's component names).
_MODULES_DIR = Path("learner_group", "learner", "rl_module")


class RLlibCheckpointError(ValueError):
    """A checkpoint that is missing, not an RLlib checkpoint, or lacks the asked policy."""


class UntrustedCheckpointError(RLlibCheckpointError):
    """A checkpoint loaded without ``trust_pickle``: unpickling it could run code from the file."""


def untrusted_message(path: str | Path) -> str:
    """Why an RLlib checkpoint is not loaded without ``trust_pickle``, and how to allow it."""
    return (
        f"RLlib checkpoint {str(path)!r}: loading it unpickles {_CTOR_FILE}, which can run code "
        "from the file; for a checkpoint you made yourself pass --trust-pickle "
        "(trust_pickle=True in Python, rllib:path=PATH,trust_pickle=true as an agent string)"
    )


def _require_ray() -> None:
    try:
        import ray.rllib  # noqa: F401
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != "ray":
            raise
        raise RLlibCheckpointError(
            f"agent kind 'rllib' needs Ray RLlib, the [rllib] extra: {install_hint('rllib')}"
        ) from None


def module_dirs(path: str | Path) -> dict[str, Path]:
    """The RLModule folders of a checkpoint by policy id (one unnamed entry ``""`` for a module
    checkpoint)."""
    path = Path(path).resolve()  # Ray reads checkpoints by URI: relative paths have no scheme
    if not path.exists():
        raise RLlibCheckpointError(f"RLlib checkpoint {str(path)!r} does not exist")
    if not path.is_dir():
        raise RLlibCheckpointError(f"RLlib checkpoint {str(path)!r} is not a directory")
    root = path / _MODULES_DIR
    if root.is_dir():
        return {
            d.name: d for d in sorted(root.iterdir()) if d.is_dir() and (d / _CTOR_FILE).is_file()
        }
    if (path / _CTOR_FILE).is_file() and not any(
        (d / _CTOR_FILE).is_file() for d in path.iterdir() if d.is_dir()
    ):
        return {"": path}
    raise RLlibCheckpointError(
        f"{str(path)!r} is not an RLlib algorithm checkpoint (no {_MODULES_DIR}) nor an "
        "RLModule checkpoint"
    )


def load_module(
    path: str | Path, policy: str | None = None, trust_pickle: bool = False
) -> tuple[Any, str]:
    """The RLModule of ``policy`` in checkpoint ``path`` and its id (see the module docstring).

    Unpickles the checkpoint, so ``trust_pickle=True`` is required (else
    :class:`UntrustedCheckpointError`).
    """
    dirs = module_dirs(path)
    if not dirs:
        raise RLlibCheckpointError(f"RLlib checkpoint {str(path)!r} holds no RLModule")
    if policy is None:
        if len(dirs) == 1:
            policy = next(iter(dirs))
        elif "shared" in dirs:
            policy = "shared"
        else:
            raise RLlibCheckpointError(
                f"RLlib checkpoint {str(path)!r} holds policies {sorted(dirs)}: name one, "
                f"e.g. rllib:{path}:{sorted(dirs)[0]}"
            )
    if policy not in dirs:
        if list(dirs) == [""]:
            raise RLlibCheckpointError(
                f"{str(path)!r} is a single RLModule checkpoint; it has no policy {policy!r}"
            )
        raise RLlibCheckpointError(
            f"RLlib checkpoint {str(path)!r} has no policy {policy!r}; it holds {sorted(dirs)}"
        )
    if trust_pickle is not True:
        raise UntrustedCheckpointError(untrusted_message(path))
    _require_ray()
    from ray.rllib.core.rl_module.rl_module import RLModule

    module = RLModule.from_checkpoint(dirs[policy])
    module.eval()
    return module, policy


class RLlibAgent(Agent):
    """A policy of an RLlib checkpoint as an :class:`Agent` (greedy, masked, CPU)."""

    needs_view = False  # acts from the observation and the mask only

    def __init__(
        self, path: str | Path | None = None, policy: str | None = None, trust_pickle: bool = False
    ) -> None:
        if path is None:
            raise RLlibCheckpointError("RLlibAgent needs a checkpoint path (rllib:PATH[:POLICY])")
        path = str(path)
        if policy is None and not Path(path).exists() and ":" in path:
            path, _, policy = path.rpartition(":")
        self.path = path
        self.module, self.policy = load_module(path, policy or None, trust_pickle=trust_pickle)
        from ray.rllib.core.columns import Columns

        from .rllib_env import MASK_KEY, OBS_KEY

        self._keys = (Columns.OBS, OBS_KEY, MASK_KEY, Columns.ACTION_DIST_INPUTS)
        self.num_actions = int(self.module.action_space.n)
        self.obs_shape = tuple(self.module.observation_space[OBS_KEY].shape)
        self.name = f"rllib:{path}" + (f":{self.policy}" if self.policy else "")

    def reset(self, rules: Rules, seat: int, rng: np.random.Generator) -> None:
        if rules.num_actions != self.num_actions:
            raise RLlibCheckpointError(
                f"policy {self.policy!r} of {self.path!r} has {self.num_actions} actions but the "
                f"rules {rules.name!r} (sets={rules.sets}) have {rules.num_actions}"
            )
        super().reset(rules, seat, rng)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PublicView | None) -> int:
        legal = checked_legal_actions(
            self.name,
            observation,
            self.obs_shape,
            action_mask,
            self.num_actions,
            lambda shape: ValueError(
                f"agent {self.name!r} has {self.num_actions} actions but the action mask has "
                f"shape {shape}"
            ),
        )
        if len(legal) == 1:
            return int(legal[0])
        return int(legal[np.argmax(self.logits(observation, action_mask)[legal])])

    def logits(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The module's masked action logits for one observation."""
        import torch

        obs_col, obs_key, mask_key, logits_col = self._keys
        batch = {
            obs_col: {
                obs_key: torch.as_tensor(observation, dtype=torch.float32).reshape(1, -1),
                mask_key: torch.as_tensor(action_mask, dtype=torch.float32).reshape(1, -1),
            }
        }
        with torch.no_grad():
            out = self.module.forward_inference(batch)
        return out[logits_col][0].numpy()


def make_rllib_agent(
    path: str | None = None, policy: str | None = None, trust_pickle: bool = False, **kwargs: Any
) -> RLlibAgent:
    """The factory of the ``rllib`` agent kind (the ``bergen_env.agents`` entry point)."""
    valid = ["path", "policy", "trust_pickle"]  # make_agent names the agent string
    check_keywords(kwargs, valid, label="parameter", error=RLlibCheckpointError)
    if not isinstance(trust_pickle, bool):
        raise RLlibCheckpointError(
            f"agent 'rllib': trust_pickle must be true or false, got {trust_pickle!r}"
        )
    return RLlibAgent(path, policy, trust_pickle=trust_pickle)

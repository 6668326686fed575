"""Where the network runs, and how the rollout's inputs reach it.

``device`` of a config (:func:`resolve_device`): ``cpu``, ``cuda`` or ``auto`` (CUDA when torch
sees a GPU). The batched env always runs on the CPU. With the network on CUDA:

- the adapter of the batched env (:class:`~bergen_env.training.batched_env.BatchedVecEnv`)
  hands out its observations and action masks in page-locked (pinned) host memory
  (:func:`host_array`), alternating between two buffers of each so that the arrays of the step
  before stay intact while SB3 still reads them (the rollout buffer stores an observation one
  step after the network saw it);
- :class:`OverlappedMaskablePPO` copies them to the GPU with ``non_blocking=True``. The copy of
  the env step's observations is issued as soon as the step returns, so it runs while the host
  books the step (callbacks, episode statistics, the rollout buffer); the values and
  log-probabilities of the step come to the host with its actions, so the booking waits for
  nothing on the GPU (but for a match cut by the time limit, whose last value the GPU
  computes). The masks' copy is issued without waiting too: the host goes on to launch the
  network's kernels, which the GPU runs after the copy (one stream). The env step itself needs
  the actions of the forward before it and produces the observations of the forward after it,
  so no copy can overlap it.

On the CPU none of this applies: :func:`pins_memory` is False, the adapter returns ordinary
arrays and ``bergen_env.training.train`` builds a plain ``MaskablePPO``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBuffer, MaskableRolloutBuffer
from sb3_contrib.common.maskable.utils import is_masking_supported
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv

__all__ = ["OverlappedMaskablePPO", "host_array", "pins_memory", "resolve_device", "rollout_masks"]


def resolve_device(device: str) -> str:
    """``auto``: ``cuda`` when torch sees a GPU, else ``cpu``; other names as given."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def pins_memory(device: str | torch.device) -> bool:
    """Whether host buffers feeding a network on ``device`` are pinned: only for a CUDA device
    that torch can reach (pinning needs the CUDA driver)."""
    if isinstance(device, str):
        device = resolve_device(device)
    return torch.device(device).type == "cuda" and torch.cuda.is_available()


def host_array(shape: tuple[int, ...], dtype: Any, pinned: bool) -> np.ndarray:
    """A zeroed host array; with ``pinned``, a numpy view of a page-locked torch tensor (which
    the array keeps alive), the memory a non-blocking host→device copy needs."""
    if not pinned:
        return np.zeros(shape, dtype=dtype)
    like = torch.from_numpy(np.empty(0, dtype=dtype)).dtype
    return torch.zeros(shape, dtype=like, pin_memory=True).numpy()


def rollout_masks(env: VecEnv) -> np.ndarray:
    """The action masks of ``env``'s rows, ``(n_envs, A)``: the batched env's own buffer as it
    is (no copy), other envs' per-env masks stacked (as sb3-contrib's ``get_action_masks``)."""
    masks = env.env_method("action_masks")
    return masks if isinstance(masks, np.ndarray) else np.stack(masks)


class OverlappedMaskablePPO(MaskablePPO):
    """``MaskablePPO`` whose rollout copies its inputs to the device without blocking the host
    (``non_blocking``, on when the device is CUDA); see the module docstring. Its rollout is
    sb3-contrib's ``MaskablePPO.collect_rollouts`` with the copies moved, and fills the same
    rollout buffer (tested on the CPU, where the copies are no-ops)."""

    def _setup_model(self) -> None:
        super()._setup_model()
        #: Issue the host→device copies without waiting for them.
        self.non_blocking = self.device.type == "cuda"

    def host_to_device(self, array: np.ndarray) -> torch.Tensor:
        """``array`` on the model's device (on the CPU: the same memory, no copy)."""
        return torch.from_numpy(array).to(self.device, non_blocking=self.non_blocking)

    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback,
        rollout_buffer: RolloutBuffer,
        n_rollout_steps: int,
        use_masking: bool = True,
    ) -> bool:
        """Fill ``rollout_buffer`` with ``n_rollout_steps`` steps of every env (False: a
        callback stopped the rollout), as ``MaskablePPO.collect_rollouts`` does."""
        if not isinstance(rollout_buffer, (MaskableRolloutBuffer, MaskableDictRolloutBuffer)):
            raise TypeError("the rollout buffer does not support action masking")
        if not isinstance(self._last_obs, np.ndarray):
            raise TypeError("OverlappedMaskablePPO takes array observations (no Dict spaces)")
        self.policy.set_training_mode(False)
        n_steps = 0
        action_masks = None
        rollout_buffer.reset()
        if use_masking and not is_masking_supported(env):
            raise ValueError("Environment does not support action masking")
        callback.on_rollout_start()
        obs_tensor = self.host_to_device(self._last_obs)
        while n_steps < n_rollout_steps:
            with torch.no_grad():
                device_masks = None
                if use_masking:
                    action_masks = rollout_masks(env)
                    device_masks = self.host_to_device(action_masks)
                actions, values, log_probs = self.policy(obs_tensor, action_masks=device_masks)
            actions = actions.cpu().numpy()
            values, log_probs = values.cpu(), log_probs.cpu()  # ready: no wait when booked
            new_obs, rewards, dones, infos = env.step(actions)
            obs_tensor = self.host_to_device(new_obs)  # under way during the bookkeeping below
            self.num_timesteps += env.num_envs
            callback.update_locals(locals())
            if not callback.on_step():
                return False
            self._update_info_buffer(infos, dones)
            n_steps += 1
            if isinstance(self.action_space, spaces.Discrete):
                actions = actions.reshape(-1, 1)
            # a match cut by the time limit: bootstrap from its last observation's value
            for idx, done in enumerate(dones):
                if (
                    done
                    and infos[idx].get("terminal_observation") is not None
                    and infos[idx].get("TimeLimit.truncated", False)
                ):
                    terminal_obs = self.policy.obs_to_tensor(infos[idx]["terminal_observation"])[0]
                    with torch.no_grad():
                        terminal_value = self.policy.predict_values(terminal_obs)[0]
                    rewards[idx] += self.gamma * terminal_value
            rollout_buffer.add(
                self._last_obs,
                actions,
                rewards,
                self._last_episode_starts,
                values,
                log_probs,
                action_masks=action_masks,
            )
            self._last_obs = new_obs
            self._last_episode_starts = dones
        with torch.no_grad():
            values = self.policy.predict_values(obs_tensor)  # the last observation's value
        rollout_buffer.compute_returns_and_advantage(last_values=values, dones=dones)
        callback.on_rollout_end()
        return True

"""Trained policies as agents: load a MaskablePPO (or PPO) zip and play it in any Bergen env.

It provides the agent kind ``"ppo"`` (:func:`make_ppo_agent`, found by bergen_env's agent registry
through the ``bergen_env.agents`` entry point in pyproject.toml). An SB3 zip holds pickled Python
objects, and unpickling a file can run any code in it, so a zip loads only when the caller says it
trusts the file: ``load_policy(path, trust_pickle=True)``,
``make_agent("ppo:path=PATH,trust_pickle=true")``, or ``--trust-pickle`` on the command lines.
Without it loading raises :class:`UntrustedPolicyError`. To share or run a policy, convert it to the
portable format (:mod:`bergen_env.policy_file`; ``python -m bergen_env.training.export_policy ZIP``,
which reads the zip without unpickling) and play it with ``policy:PATH``, which needs no torch.

A policy file is an sb3-contrib ``MaskablePPO`` zip plus one extra member, ``bergen_policy.json``,
with the rules and observation/action sizes it was trained for (:func:`save_policy` writes it).
A plain ``model.save()`` zip of a ``MaskablePPO`` or ``PPO`` model trained on this package's env
loads too: it records no rules, so it plays any rules with its number of actions (the
registered env's default, standard for 2 players, unless told otherwise). The agent acts
deterministically: the most probable legal action.

Acting in the AEC env from user code::

    import numpy as np
    import bergen_env
    from bergen_env.training.ppo_policies import load_policy

    agent = load_policy("policies/standard_2p.zip", trust_pickle=True)  # a file you made
    env = bergen_env.env(num_players=2)
    env.reset(seed=0)
    agent.reset(env.unwrapped.rules, seat=0, rng=np.random.default_rng(0))
    for name in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        if terminated or truncated:
            action = None
        elif name == "player_0":
            action = agent.act(obs["observation"], obs["action_mask"], None)
        else:
            action = int(np.flatnonzero(obs["action_mask"])[0])
        env.step(action)
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .cli import require_extra

try:
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import PPO
except ImportError:  # e.g. the agent registry loading the "ppo" kind on a base install
    require_extra("train", "bergen_env.training.ppo_policies", ["torch", "sb3_contrib"])
    raise

from bergen_env.agents.base import Agent, checked_legal_actions
from bergen_env.engine import PublicView
from bergen_env.observation import OBS_SIZE
from bergen_env.policy_file import PolicyFileError, check_trained_rules
from bergen_env.rules import Rules
from bergen_env.validation import check_bool

META_NAME = "bergen_policy.json"
META_FORMAT = 1

__all__ = [
    "PPOAgent",
    "PolicyFileError",
    "UntrustedPolicyError",
    "load_model",
    "load_policy",
    "read_metadata",
    "save_policy",
]


class UntrustedPolicyError(PolicyFileError):
    """An SB3 zip loaded without ``trust_pickle``: unpickling it could run code from the file."""


def untrusted_message(path: str | Path) -> str:
    """Why a zip was not loaded, and the two ways on."""
    portable = Path(path).with_suffix(".safetensors")
    return (
        f"policy file {str(path)!r} is a Stable-Baselines3 zip: loading it unpickles data from "
        f"the file, which can run any code on this machine, so it is not loaded by default. "
        f"Convert it to the portable format (arrays and JSON only; the conversion does not "
        f"unpickle): `bergen-export-policy {path}` (add --rules/--players if it was trained "
        f"for other rules than the env's default), then play it as policy:{portable}; or, for "
        f"a file you made yourself, pass --trust-pickle (trust_pickle=True in Python, "
        f"ppo:path=PATH,trust_pickle=true as an agent string)"
    )


def save_policy(model: MaskablePPO, path: str | Path, rules: Rules, **extra: Any) -> Path:
    """Save ``model`` to ``path`` (a ``.zip``) with the Bergen metadata member."""
    path = Path(path)
    if path.suffix != ".zip":
        path = path.with_suffix(".zip")
    model.save(path)
    meta = {
        "format": META_FORMAT,
        "obs_size": OBS_SIZE,
        "num_actions": rules.num_actions,
        "rules": rules.to_dict(),
        **extra,
    }
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr(META_NAME, json.dumps(meta, indent=1))
    return path


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The Bergen metadata of a policy file (errors name the file)."""
    meta = find_metadata(path)
    if meta is None:
        raise PolicyFileError(
            f"policy file {str(path)!r} has no {META_NAME} member: not saved by "
            f"bergen_env.training.ppo_policies.save_policy"
        )
    return meta


def find_metadata(path: str | Path) -> dict[str, Any] | None:
    """The Bergen metadata of a policy file, or ``None`` for a plain SB3 zip (``model.save()``),
    which has none (errors name the file)."""
    path = Path(path)
    if not path.is_file():
        raise PolicyFileError(f"policy file {str(path)!r} does not exist")
    try:
        with zipfile.ZipFile(path) as archive:
            if META_NAME not in archive.namelist():
                return None
            meta = json.loads(archive.read(META_NAME))
    except (zipfile.BadZipFile, json.JSONDecodeError, OSError, KeyError) as exc:
        raise PolicyFileError(f"policy file {str(path)!r} is corrupted ({exc})") from None
    for key in ("obs_size", "num_actions", "rules"):
        if key not in meta:
            raise PolicyFileError(f"policy file {str(path)!r}: metadata lacks {key!r}")
    return meta


def algorithm_of(path: str | Path) -> type[MaskablePPO] | type[PPO]:
    """``MaskablePPO`` or ``PPO``, as the policy class named in the zip's ``data`` member (JSON
    text, read without unpickling) says."""
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read("data"))
    except (KeyError, zipfile.BadZipFile, json.JSONDecodeError, OSError) as exc:
        raise PolicyFileError(f"policy file {str(path)!r} is not an SB3 zip ({exc})") from None
    module = str(data.get("policy_class", {}).get("__module__", ""))
    return MaskablePPO if module.startswith("sb3_contrib.common.maskable") else PPO


def load_model(
    path: str | Path, trust_pickle: bool = False
) -> tuple[MaskablePPO | PPO, dict[str, Any] | None]:
    """Load a policy zip on CPU and check it against this package's observation size; its
    Bergen metadata (``None``: a plain ``model.save()`` zip).

    Unpickles the file, so ``trust_pickle=True`` is required (else :class:`UntrustedPolicyError`).
    """
    meta = find_metadata(path)  # reads only the JSON member
    if trust_pickle is not True:
        raise UntrustedPolicyError(untrusted_message(path))
    try:
        model = algorithm_of(path).load(path, device="cpu")
    except PolicyFileError:
        raise
    except Exception as exc:  # SB3 raises many kinds on a damaged archive
        raise PolicyFileError(f"policy file {str(path)!r} is corrupted ({exc})") from None
    obs_shape = tuple(model.observation_space.shape or ())
    recorded = OBS_SIZE if meta is None else meta["obs_size"]
    if obs_shape != (OBS_SIZE,) or recorded != OBS_SIZE:
        raise PolicyFileError(
            f"policy file {str(path)!r} was trained on inputs of shape {obs_shape} "
            f"(metadata obs_size={recorded}), but this package's observation has shape "
            f"{(OBS_SIZE,)}"
        )
    if meta is not None and int(model.action_space.n) != meta["num_actions"]:
        raise PolicyFileError(
            f"policy file {str(path)!r}: model has {model.action_space.n} actions but its "
            f"metadata says {meta['num_actions']}"
        )
    return model, meta


class PPOAgent(Agent):
    """A saved MaskablePPO (or PPO) policy as an :class:`Agent` (deterministic, CPU).

    ``PPOAgent(path, trust_pickle=True)`` loads the file (see :func:`load_model`);
    ``PPOAgent.from_model(model, rules)`` wraps a model in memory (used during training). Rules
    other than the ones it was trained for are refused unless ``allow_mismatch=True`` (then a
    warning); a zip that records no rules plays any rules with its number of actions.
    """

    needs_view = False  # acts from the observation and the mask only

    def __init__(
        self,
        path: str | Path | None = None,
        trust_pickle: bool = False,
        allow_mismatch: bool = False,
    ) -> None:
        if path is None:
            raise PolicyFileError("PPOAgent needs the path of a policy file (ppo:PATH)")
        for flag, value in (("trust_pickle", trust_pickle), ("allow_mismatch", allow_mismatch)):
            check_bool(flag, value, label="parameter", error=ValueError)
        model, meta = load_model(path, trust_pickle=trust_pickle)
        self.path = str(path)
        self.allow_mismatch = allow_mismatch
        if meta is None:
            self._setup(model, int(model.action_space.n), None)
        else:
            self._setup(model, meta["num_actions"], Rules.from_dict(meta["rules"]))

    @classmethod
    def from_model(
        cls,
        model: MaskablePPO,
        rules: Rules,
        path: str = "<memory>",
        allow_mismatch: bool = False,
    ) -> PPOAgent:
        """Wrap a model in memory (no file)."""
        agent = cls.__new__(cls)
        agent.path = path
        agent.allow_mismatch = allow_mismatch
        agent._setup(model, int(model.action_space.n), rules)
        return agent

    def _setup(self, model: MaskablePPO | PPO, num_actions: int, rules: Rules | None) -> None:
        self.model = model
        self.policy = model.policy
        self.policy.set_training_mode(False)
        self.num_actions = num_actions
        #: The rules the policy was trained for (``None``: the file does not say).
        self.trained_rules = rules
        self.name = f"ppo:{self.path}"

    def __deepcopy__(self, memo: dict) -> PPOAgent:
        """A second seat for the same policy: shares the (read-only) model."""
        twin = PPOAgent.from_model(
            self.model, self.trained_rules, path=self.path, allow_mismatch=self.allow_mismatch
        )
        twin.num_actions, twin.name = self.num_actions, self.name
        return twin

    def reset(self, rules: Rules, seat: int, rng: np.random.Generator) -> None:
        source = f"policy file {self.path!r}"
        if self.trained_rules is not None:
            check_trained_rules(source, self.trained_rules, rules, self.allow_mismatch)
        elif rules.num_actions != self.num_actions:
            raise PolicyFileError(
                f"{source} has {self.num_actions} actions but the rules to play have "
                f"{rules.num_actions}: it was trained for other rules (it records none; name "
                f"them with --rules/--players)"
            )
        super().reset(rules, seat, rng)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PublicView | None) -> int:
        legal = checked_legal_actions(
            self.name,
            observation,
            (OBS_SIZE,),
            action_mask,
            self.num_actions,
            lambda shape: PolicyFileError(
                f"policy file {self.path!r} has {self.num_actions} actions but the action mask "
                f"has shape {shape}"
            ),
        )
        if len(legal) == 1:
            return int(legal[0])
        logits = self.logits(np.reshape(observation, (1, -1)))[0]
        return int(legal[np.argmax(logits[legal])])

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """:meth:`act` for a batch of rows in one forward pass: ``(M, 240)`` observations,
        ``(M, A)`` masks, the ``(M,)`` actions. This makes the agent (a frozen snapshot for
        self-play) an opponent of the batched env: ``BergenLearnerVectorEnv(opponents=agent)``."""
        legal = np.asarray(action_masks).astype(bool)
        if legal.ndim != 2 or not legal.any(axis=1).all():
            raise ValueError(f"agent {self.name!r}: every row of the masks needs a legal action")
        logits = self.logits(observations)
        return np.where(legal, logits, -np.inf).argmax(axis=1)

    def logits(self, observations: np.ndarray) -> np.ndarray:
        """The policy network's action logits for a batch of observations (float32), on the
        CPU wherever the network is (a model training on CUDA plays its evaluations)."""
        with torch.inference_mode():
            policy = self.policy
            obs = torch.as_tensor(observations, dtype=torch.float32, device=policy.device)
            features = policy.extract_features(obs, policy.pi_features_extractor)
            latent = policy.mlp_extractor.forward_actor(features)
            return policy.action_net(latent).cpu().numpy()


def load_policy(
    path: str | Path, trust_pickle: bool = False, allow_mismatch: bool = False
) -> PPOAgent:
    """Load a policy zip as an agent: ``load_policy("run/final_model.zip", trust_pickle=True)``."""
    return PPOAgent(path, trust_pickle=trust_pickle, allow_mismatch=allow_mismatch)


def make_ppo_agent(
    path: str | None = None, trust_pickle: bool = False, allow_mismatch: bool = False
) -> PPOAgent:
    """The factory of the ``ppo`` agent kind (the ``bergen_env.agents`` entry point)."""
    return PPOAgent(path, trust_pickle=trust_pickle, allow_mismatch=allow_mismatch)

"""Convert MaskablePPO (or PPO) policies to the portable format (:mod:`bergen_env.policy_file`).

    bergen-export-policy policies/standard_2p.zip          # -> policies/standard_2p.safetensors
    bergen-export-policy run/final_model.zip --out my.safetensors \\
        --config run/config.yaml --evaluation run/final_eval.json
    bergen-export-policy model.zip --rules fives --players 4  # a plain model.save() zip

(``python -m bergen_env.training.export_policy`` is the same program.)

Converting a zip does not unpickle it: the weights come from its ``policy.pth`` through
``torch.load(weights_only=True)`` (tensors only), the architecture from the JSON text of its
``data`` member and the rules from its ``bergen_policy.json`` member (a plain ``model.save()`` zip
has none: the rules are then ``--rules`` and ``--players``, by default the registered env's,
standard for 2 players). So a zip from anyone can be converted safely. Policies the numpy network
cannot express (a features extractor other than flatten, an activation other than ReLU/tanh, layers
other than dense) are refused with the reason. Training calls :func:`export_model` to write
``final_model.safetensors`` beside its zip.
"""

from __future__ import annotations

if __name__ == "__main__":  # run as its console script runs it (bergen_env.training.cli)
    from .cli import program

    raise SystemExit(program("export_policy"))

import hashlib
import io
import json
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from bergen_env.observation import OBS_SIZE
from bergen_env.policy_file import SUFFIX, PolicyFileError, save_policy_file
from bergen_env.rules import PRESETS, Rules, build_rules

from .cli import ArgumentParser, UsageError, require_extra, run

PROG = "bergen-export-policy"

#: torch activation classes the numpy network reproduces, by their qualified name.
TORCH_ACTIVATIONS = {
    "torch.nn.modules.activation.ReLU": "relu",
    "torch.nn.modules.activation.Tanh": "tanh",
}
#: SB3 policy classes whose actor is ``mlp_extractor.policy_net`` then ``action_net``.
POLICY_CLASSES = ("MaskableActorCriticPolicy", "ActorCriticPolicy")
FLATTEN = "stable_baselines3.common.torch_layers.FlattenExtractor"


def actor_layers(
    state_dict: Mapping[str, Any], activation: str, source: str
) -> tuple[list[np.ndarray], list[np.ndarray], list[str]]:
    """The actor's dense layers from a MaskablePPO policy's ``state_dict``.

    The actor is ``mlp_extractor.policy_net`` (Linear, activation, Linear, activation, ...)
    followed by ``action_net`` (Linear, no activation): SB3's ``create_mlp`` layout.
    """
    prefix = "mlp_extractor.policy_net."
    indices = sorted(
        {int(k[len(prefix) :].split(".")[0]) for k in state_dict if k.startswith(prefix)}
    )
    if indices != list(range(0, 2 * len(indices), 2)):
        raise PolicyFileError(
            f"{source}: the policy network's layers {indices} are not SB3's dense layout "
            f"(Linear at 0, 2, 4, ... with an activation between)"
        )
    names = [f"{prefix}{i}" for i in indices] + ["action_net"]
    weights, biases = [], []
    for name in names:
        if f"{name}.weight" not in state_dict or f"{name}.bias" not in state_dict:
            raise PolicyFileError(f"{source}: no dense layer {name!r} in the policy's weights")
        weights.append(np.asarray(state_dict[f"{name}.weight"].cpu().numpy(), dtype=np.float32))
        biases.append(np.asarray(state_dict[f"{name}.bias"].cpu().numpy(), dtype=np.float32))
    return weights, biases, [activation] * len(indices) + ["identity"]


def export_model(
    model: Any, rules: Rules, path: str | Path, provenance: dict[str, Any] | None = None
) -> Path:
    """Write the policy of a MaskablePPO model in memory as a portable policy file."""
    from stable_baselines3.common.torch_layers import FlattenExtractor

    policy = model.policy
    source = f"model {type(policy).__name__}"
    if type(policy).__name__ not in POLICY_CLASSES:
        raise PolicyFileError(f"{source}: cannot export policy class {type(policy).__name__}")
    if type(policy.pi_features_extractor) is not FlattenExtractor:
        raise PolicyFileError(
            f"{source}: features extractor {type(policy.pi_features_extractor).__name__} is "
            f"not expressible in the portable format (only flatten)"
        )
    act_cls = policy.activation_fn
    activation = TORCH_ACTIVATIONS.get(f"{act_cls.__module__}.{act_cls.__qualname__}")
    if activation is None:
        raise PolicyFileError(f"{source}: activation {act_cls} is not one of {TORCH_ACTIVATIONS}")
    weights, biases, activations = actor_layers(policy.state_dict(), activation, source)
    prov = {"source": "sb3-contrib MaskablePPO", "timesteps": int(model.num_timesteps)}
    return save_policy_file(path, rules, weights, biases, activations, prov | (provenance or {}))


def export_zip(
    zip_path: str | Path,
    out: str | Path | None = None,
    provenance: dict[str, Any] | None = None,
    rules: Rules | None = None,
) -> Path:
    """Convert a policy zip (from :func:`bergen_env.training.ppo_policies.save_policy`, or a plain
    ``model.save()`` trained for ``rules``, default standard for 2 players) without unpickling.

    ``out`` defaults to the zip's path with the ``.safetensors`` suffix.
    """
    import torch

    zip_path = Path(zip_path)
    source = f"policy file {str(zip_path)!r}"
    from .ppo_policies import find_metadata  # JSON only

    meta = find_metadata(zip_path)
    try:
        with zipfile.ZipFile(zip_path) as archive:
            data = json.loads(archive.read("data"))
            weights_bytes = archive.read("policy.pth")
    except (KeyError, json.JSONDecodeError, zipfile.BadZipFile, OSError) as exc:
        raise PolicyFileError(f"{source} is not an SB3 policy zip ({exc})") from None
    policy_class = data.get("policy_class", {})
    kwargs = data.get("policy_kwargs", {})
    obs_shape = tuple(data.get("observation_space", {}).get("_shape", ()))
    module = policy_class.get("__module__", "?")
    if not any(f"<function {name}." in json.dumps(policy_class) for name in POLICY_CLASSES):
        raise PolicyFileError(
            f"{source}: policy class from {module!r} is not one of {POLICY_CLASSES}"
        )
    extractor = kwargs.get("features_extractor_class")
    if extractor is not None and FLATTEN not in str(extractor):
        raise PolicyFileError(
            f"{source}: features extractor {extractor} is not expressible in the portable "
            f"format (only flatten)"
        )
    act_text = str(kwargs.get("activation_fn", "<class 'torch.nn.modules.activation.Tanh'>"))
    activation = next((v for k, v in TORCH_ACTIVATIONS.items() if f"'{k}'" in act_text), None)
    if activation is None:
        raise PolicyFileError(f"{source}: activation {act_text} is not one of {TORCH_ACTIVATIONS}")
    if obs_shape != (OBS_SIZE,):
        raise PolicyFileError(f"{source}: observation shape {obs_shape} is not this package's")
    try:
        state_dict = torch.load(io.BytesIO(weights_bytes), map_location="cpu", weights_only=True)
    except Exception as exc:  # torch refuses anything but tensors and plain containers
        raise PolicyFileError(f"{source}: policy.pth holds more than tensors ({exc})") from None
    weights, biases, activations = actor_layers(state_dict, activation, source)
    if meta is not None:
        rules = Rules.from_dict(meta["rules"])
    elif rules is None:
        rules = Rules.preset("standard")
    num_actions = len(biases[-1])
    if num_actions != rules.num_actions:
        raise PolicyFileError(
            f"{source} has {num_actions} actions but {rules.describe()} has "
            f"{rules.num_actions}: name the rules it was trained for (--rules, --players)"
        )
    prov: dict[str, Any] = {
        "source": f"{'sb3-contrib MaskablePPO' if 'Maskable' in module else 'SB3 PPO'}",
        "exported_from": zip_path.name,
        "exported_from_sha256": hashlib.sha256(zip_path.read_bytes()).hexdigest(),
        "timesteps": int((meta or {}).get("timesteps", data.get("num_timesteps", 0))),
    }
    out = Path(out) if out is not None else zip_path.with_suffix(SUFFIX)
    return save_policy_file(out, rules, weights, biases, activations, prov | (provenance or {}))


def _read_provenance(config: Path | None, evaluation: Path | None) -> dict[str, Any]:
    prov: dict[str, Any] = {}
    if config is not None:
        import yaml

        prov["config"] = yaml.safe_load(config.read_text(encoding="utf-8"))
        prov["config_file"] = config.name
    if evaluation is not None:
        prov["evaluation"] = json.loads(evaluation.read_text(encoding="utf-8"))
    return prov


def main(argv: list[str] | None = None) -> int:
    """The command line: exit status 0, or 2 after a one-line error on stderr."""
    return run(PROG, convert, argv)


def convert(argv: list[str] | None = None) -> int:
    """Check the arguments (a user error is a :class:`UsageError`) and convert every zip."""
    p = ArgumentParser(
        prog=PROG,
        description="Convert MaskablePPO policy zips to portable policy files (safetensors + "
        "JSON header), without unpickling them.",
    )
    p.add_argument("zips", nargs="+", type=Path, metavar="ZIP")
    p.add_argument("--out", type=Path, help="output file (one ZIP only); default ZIP.safetensors")
    p.add_argument("--config", type=Path, help="YAML training config to record as provenance")
    p.add_argument("--evaluation", type=Path, help="JSON evaluation to record as provenance")
    p.add_argument(
        "--rules",
        choices=PRESETS,
        default=None,
        help="the rules a zip without Bergen metadata (a plain model.save()) was trained for "
        "(default: standard, the registered env's)",
    )
    p.add_argument(
        "--players", type=int, default=None, help="seats of those rules (default: the preset's)"
    )
    args = p.parse_args(argv)
    if args.out is not None and len(args.zips) > 1:
        raise UsageError("--out takes one ZIP only")
    for extra in (args.config, args.evaluation):
        if extra is not None and not extra.is_file():
            raise UsageError(f"file {str(extra)!r} does not exist")
    require_extra("train", "converting a policy zip", ["torch", "sb3_contrib"])
    if args.config is not None:
        require_extra("train", "--config", ["yaml"])
    try:
        rules = None
        if args.rules is not None or args.players is not None:
            rules = build_rules(args.rules or "standard", num_players=args.players)
        prov = _read_provenance(args.config, args.evaluation)
        for zip_path in args.zips:
            out = export_zip(zip_path, args.out, prov, rules)
            print(f"wrote {out} ({out.stat().st_size:,} bytes)")
    except (PolicyFileError, OSError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return 0

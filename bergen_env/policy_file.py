"""The portable policy format: weights as arrays (safetensors) plus a JSON header, played in numpy.

A policy file (``*.safetensors``) holds only arrays and text, so loading one never runs code from
the file, and playing it needs numpy and the small ``safetensors`` package (both in the base
install), not torch. The layout, described in full in ``docs/policy-format.md``:

- tensors ``layers.{i}.weight`` (shape ``(out, in)``) and ``layers.{i}.bias`` (``(out,)``), float32;
- the safetensors metadata entry ``bergen_policy``: a JSON object with ``format``
  (``"bergen-policy"``), ``version`` (1), ``rules`` (:meth:`Rules.to_dict`, so the player count
  and partnerships too), ``obs_size``, ``num_actions``, ``network`` (``layers``: one
  ``{"weight", "bias", "activation"}`` entry per layer, applied in order to the observation; the
  last layer's outputs are the action logits) and ``provenance`` (``source``, ``config``,
  ``timesteps``, ``evaluation``; free-form, not read when playing).

Version 2 adds an *action scorer* (``network.scorer``: ``features`` (the name of the feature set
of :mod:`bergen_env.action_features`) and ``layers``, tensors ``scorer.{i}.weight`` and
``scorer.{i}.bias``): each legal action's logit gets the scorer's output on the last hidden
layer's activations followed by that action's features. Files without a scorer stay version 1.

>>> import numpy as np
>>> net = PolicyNetwork(
...     [np.eye(2, dtype=np.float32)], [np.zeros(2, dtype=np.float32)], ["identity"]
... )
>>> net.logits(np.array([1.0, 3.0], dtype=np.float32)).tolist()
[1.0, 3.0]
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bergen_env.action_features import FEATURES_NAME, NUM_ACTION_FEATURES, action_features
from bergen_env.atomic_files import atomic_path
from bergen_env.errors import BergenError
from bergen_env.observation import OBS_SIZE
from bergen_env.rules import Rules

FORMAT_NAME = "bergen-policy"
FORMAT_VERSION = 1
#: The version of policy files whose network has an action scorer.
SCORER_VERSION = 2
#: The safetensors metadata key that holds the JSON header.
HEADER_KEY = "bergen_policy"
#: The file suffix of the portable format.
SUFFIX = ".safetensors"


def _identity(x: np.ndarray) -> np.ndarray:
    return x


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0, out=x)


def _tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(x, out=x)


#: The activations a layer may name (module functions, so networks pickle).
ACTIVATIONS = {"identity": _identity, "relu": _relu, "tanh": _tanh}


class PolicyFileError(BergenError, ValueError):
    """A policy file that is missing, unreadable, or does not fit the game; names the file."""


class PolicyMismatchWarning(UserWarning):
    """A policy plays rules it was not trained for (allowed explicitly with ``allow_mismatch``)."""


class PolicyNetwork:
    """A multilayer perceptron in numpy: ``x -> act_i(W_i x + b_i)`` for each layer in order.

    With a ``scorer`` (a network of one output reading the last hidden layer's activations and
    :func:`~bergen_env.action_features.action_features`), each legal action's logit also gets
    the scorer's value of that action; :meth:`logits` then needs the action mask.
    """

    def __init__(
        self,
        weights: Sequence[np.ndarray],
        biases: Sequence[np.ndarray],
        activations: Sequence[str],
        scorer: PolicyNetwork | None = None,
    ) -> None:
        if not (len(weights) == len(biases) == len(activations)) or not weights:
            raise ValueError(
                f"a network needs one weight, bias and activation per layer, got "
                f"{len(weights)}, {len(biases)} and {len(activations)}"
            )
        for i, (w, b, act) in enumerate(zip(weights, biases, activations)):
            if w.ndim != 2 or b.shape != (w.shape[0],):
                raise ValueError(
                    f"layer {i}: weight {w.shape} and bias {b.shape} do not form a dense layer"
                )
            if i and w.shape[1] != weights[i - 1].shape[0]:
                raise ValueError(
                    f"layer {i} reads {w.shape[1]} inputs but layer {i - 1} has "
                    f"{weights[i - 1].shape[0]} outputs"
                )
            if act not in ACTIVATIONS:
                raise ValueError(
                    f"layer {i}: unknown activation {act!r}; known: {sorted(ACTIVATIONS)}"
                )
        # transposed once, so a batch of rows is ``x @ w_t + b``
        self._layers = [
            (np.ascontiguousarray(w.T, dtype=np.float32), b.astype(np.float32), ACTIVATIONS[a])
            for w, b, a in zip(weights, biases, activations)
        ]
        self.activations = list(activations)
        self.input_size = int(weights[0].shape[1])
        self.output_size = int(weights[-1].shape[0])
        #: The output size of each layer, in order.
        self.layer_sizes = [int(w.shape[0]) for w in weights]
        if scorer is not None:
            hidden = int(weights[-1].shape[1])
            if scorer.input_size != hidden + NUM_ACTION_FEATURES or scorer.output_size != 1:
                raise ValueError(
                    f"the action scorer must map {hidden} hidden activations and "
                    f"{NUM_ACTION_FEATURES} action features to 1 output, got "
                    f"{scorer.input_size} -> {scorer.output_size}"
                )
            if scorer.scorer is not None:
                raise ValueError("an action scorer cannot have a scorer of its own")
        self.scorer = scorer

    def arrays(self) -> tuple[list[np.ndarray], list[np.ndarray], list[str]]:
        """The layers as a file holds them: weights ``(out, in)``, biases, activation names."""
        weights = [w_t.T for w_t, _, _ in self._layers]
        return weights, [b for _, b, _ in self._layers], list(self.activations)

    def logits(self, observation: np.ndarray, action_mask: np.ndarray | None = None) -> np.ndarray:
        """The output of the last layer for one observation ``(in,)`` or a batch ``(n, in)``;
        with a scorer, plus its value of each action legal in ``action_mask`` (required then;
        the other actions keep the last layer's output)."""
        obs = x = np.asarray(observation, dtype=np.float32)
        for w_t, b, act in self._layers:
            hidden = x
            x = act(x @ w_t + b)
        if self.scorer is None:
            return x
        if action_mask is None:
            raise ValueError("this network scores each legal action: logits() needs the mask")
        legal = np.asarray(action_mask).astype(bool)
        if legal.shape != x.shape:
            raise ValueError(f"action mask of shape {legal.shape} for logits of shape {x.shape}")
        rows, actions = np.nonzero(np.atleast_2d(legal))
        features = action_features(np.atleast_2d(obs)[rows], actions)
        inputs = np.concatenate([np.atleast_2d(hidden)[rows], features], axis=1)
        out = np.atleast_2d(x)  # a view: the scores are added in place
        out[rows, actions] += self.scorer.logits(inputs)[:, 0]
        return x

    def probabilities(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The policy's action distribution with illegal actions at probability zero."""
        legal = legal_actions_mask(action_mask)
        return masked_softmax(self.logits(observation, legal), legal)


def legal_actions_mask(action_mask: np.ndarray) -> np.ndarray:
    """``action_mask`` as booleans; raises if a row has no legal action."""
    legal = np.asarray(action_mask).astype(bool)
    if not legal.any(axis=-1).all():
        raise ValueError("the action mask has no legal action")
    return legal


def masked_softmax(logits: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """The softmax of ``logits`` over the ``legal`` actions (float64; zero on the others)."""
    masked = np.where(legal, logits.astype(np.float64), -np.inf)
    masked -= masked.max(axis=-1, keepdims=True)
    p = np.exp(masked)
    return p / p.sum(axis=-1, keepdims=True)


def make_header(
    rules: Rules,
    activations: Sequence[str],
    num_layers: int,
    provenance: dict[str, Any] | None = None,
    scorer_activations: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The JSON header for a network of ``num_layers`` dense layers trained for ``rules`` (and
    an action scorer with ``scorer_activations``, one per layer, if given)."""
    header = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "rules": rules.to_dict(),
        "obs_size": OBS_SIZE,
        "num_actions": rules.num_actions,
        "network": {
            "input": "observation",
            "output": "logits",
            "layers": [
                {"weight": f"layers.{i}.weight", "bias": f"layers.{i}.bias", "activation": a}
                for i, a in zip(range(num_layers), activations)
            ],
        },
        "provenance": provenance or {},
    }
    if scorer_activations is not None:
        header["version"] = SCORER_VERSION
        header["network"]["scorer"] = {
            "features": FEATURES_NAME,
            "layers": [
                {"weight": f"scorer.{i}.weight", "bias": f"scorer.{i}.bias", "activation": a}
                for i, a in enumerate(scorer_activations)
            ],
        }
    return header


#: An action scorer as plain arrays: (weights, biases, activations).
ScorerArrays = tuple[Sequence[np.ndarray], Sequence[np.ndarray], Sequence[str]]


def save_policy_file(
    path: str | Path,
    rules: Rules,
    weights: Sequence[np.ndarray],
    biases: Sequence[np.ndarray],
    activations: Sequence[str],
    provenance: dict[str, Any] | None = None,
    scorer: ScorerArrays | None = None,
    check: tuple[np.ndarray, np.ndarray] | None = None,
    atol: float = 1e-4,
) -> Path:
    """Write a portable policy file (``.safetensors`` is added to a path without it), with an
    action scorer's layers if ``scorer`` is given (a version-2 file).

    ``check=(observations, logits)``: the logits the source network (torch, JAX, ...) gives
    for a batch of observations; nothing is written unless the file's network gives the same
    within ``atol`` (a scorer network is checked with every action legal). This catches a
    wrong activation, a transposed weight or layers out of order.
    """
    path = Path(path)
    if path.suffix != SUFFIX:
        path = path.with_name(path.name + SUFFIX)
    scorer_network = None if scorer is None else PolicyNetwork(*scorer)
    # checks the shapes and activations
    network = PolicyNetwork(weights, biases, activations, scorer_network)
    if network.input_size != OBS_SIZE or network.output_size != rules.num_actions:
        raise ValueError(
            f"a policy for {rules.name!r} maps {OBS_SIZE} inputs to {rules.num_actions} "
            f"actions, got a network of {network.input_size} -> {network.output_size}"
        )
    if check is not None:
        _check_logits(network, *check, atol=atol, where=str(path))
    header = make_header(
        rules, activations, len(weights), provenance, None if scorer is None else scorer[2]
    )
    return write_network_file(path, HEADER_KEY, header, weights, biases, scorer)


def _check_logits(
    network: PolicyNetwork, observations: np.ndarray, expected: np.ndarray, atol: float, where: str
) -> None:
    obs = np.atleast_2d(np.asarray(observations, dtype=np.float32))
    expected = np.atleast_2d(np.asarray(expected, dtype=np.float64))
    if obs.shape[1:] != (network.input_size,) or expected.shape != (len(obs), network.output_size):
        raise ValueError(
            f"check for {where}: observations {obs.shape} and logits {expected.shape} do not fit "
            f"a network of {network.input_size} -> {network.output_size}"
        )
    mask = np.ones(expected.shape, dtype=bool) if network.scorer is not None else None
    gap = float(np.abs(network.logits(obs, mask) - expected).max())
    if not gap <= atol:
        raise ValueError(
            f"{where} not written: its network's logits differ from the given ones by up to "
            f"{gap:.3g} (atol {atol:g}); check the activations, the weights' (out, in) shape "
            f"and the order of the layers"
        )


def write_network_file(
    path: str | Path,
    header_key: str,
    header: dict[str, Any],
    weights: Sequence[np.ndarray],
    biases: Sequence[np.ndarray],
    scorer: ScorerArrays | None = None,
) -> Path:
    """Write dense layers as float32 tensors named by ``header["network"]["layers"]`` (and the
    scorer's by ``header["network"]["scorer"]["layers"]``) and the JSON ``header`` under the
    metadata key ``header_key`` (any network file of this package)."""
    from safetensors.numpy import save_file

    path = Path(path)
    tensors: dict[str, np.ndarray] = {}
    named = list(zip(header["network"]["layers"], weights, biases))
    if scorer is not None:
        named += list(zip(header["network"]["scorer"]["layers"], scorer[0], scorer[1]))
    for layer, w, b in named:
        tensors[layer["weight"]] = np.ascontiguousarray(w, dtype=np.float32)
        tensors[layer["bias"]] = np.ascontiguousarray(b, dtype=np.float32)
    _check_finite(tensors, f"{str(path)!r} not written")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={header_key: json.dumps(header, sort_keys=True)})
    return path


class PolicyFile:
    """A loaded policy file: its header, the rules it was trained for, and its network."""

    def __init__(self, path: str | Path, header: dict[str, Any], network: PolicyNetwork) -> None:
        self.path = str(path)
        self.header = header
        self.network = network
        #: The rules (player count and partnerships included) the policy was trained for.
        self.rules = Rules.from_dict(header["rules"])
        self.num_actions = int(header["num_actions"])

    @property
    def provenance(self) -> dict[str, Any]:
        return self.header.get("provenance", {})


def read_policy_file(path: str | Path) -> PolicyFile:
    """Load and check a portable policy file; every error names the file and the problem."""

    path = Path(path)
    where = f"policy file {str(path)!r}"
    if not path.is_file():
        raise PolicyFileError(f"{where} does not exist")
    if path.suffix == ".zip":
        raise PolicyFileError(
            f"{where} is a Stable-Baselines3 zip, not a portable policy: convert it with "
            f"`bergen-export-policy {path}` (or load it with ppo:PATH and the trust-pickle flag if "
            f"you made it yourself)"
        )
    return _checked_policy(path, read_network_file(path, *_POLICY_FORMAT, where), where)


def read_policy_bytes(data: bytes, where: str = "the policy file") -> PolicyFile:
    """Load and check the bytes of a portable policy file (an upload: no file is written);
    the same checks and errors as :func:`read_policy_file`, each starting with ``where``."""
    return _checked_policy(where, read_network_file(data, *_POLICY_FORMAT, where), where)


#: The header key, format name and versions of a policy file (:func:`read_network_file`).
_POLICY_FORMAT = (HEADER_KEY, FORMAT_NAME, (FORMAT_VERSION, SCORER_VERSION))


def _checked_policy(
    source: str | Path, loaded: tuple[dict[str, Any], PolicyNetwork], where: str
) -> PolicyFile:
    """A loaded policy file whose header fits this package's observation and its rules."""
    header, network = loaded
    for key in ("rules", "obs_size", "num_actions"):
        if key not in header:
            raise PolicyFileError(f"{where}: header lacks {key!r}")
    try:
        rules = Rules.from_dict(header["rules"])
    except (KeyError, TypeError, ValueError) as exc:
        raise PolicyFileError(f"{where}: {exc}") from None
    if header["obs_size"] != OBS_SIZE or network.input_size != OBS_SIZE:
        raise PolicyFileError(
            f"{where} reads observations of size {network.input_size} (header obs_size="
            f"{header['obs_size']}), but this package's observation has size {OBS_SIZE}"
        )
    if not header["num_actions"] == network.output_size == rules.num_actions:
        raise PolicyFileError(
            f"{where}: the network has {network.output_size} outputs, the header says "
            f"{header['num_actions']} actions, and its rules have {rules.num_actions}"
        )
    return PolicyFile(source, header, network)


def read_safetensors(
    source: str | Path | bytes, where: str
) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    """The metadata and the tensors (numpy) of a safetensors file, given by its path or its
    bytes (both read the same way: the same result, the same errors); a
    :class:`PolicyFileError` starting with ``where`` if it cannot be read."""
    from safetensors import SafetensorError
    from safetensors.numpy import load

    try:
        data = source if isinstance(source, bytes) else Path(source).read_bytes()
        tensors = load(data)
        # the format: 8 bytes (little-endian length), then the JSON header, which ``load``
        # has checked; its "__metadata__" entry holds the text metadata
        size = int.from_bytes(data[:8], "little")
        metadata = json.loads(data[8 : 8 + size]).get("__metadata__") or {}
    except OSError as exc:
        raise PolicyFileError(f"{where} is not readable ({exc.strerror or exc})") from None
    except (SafetensorError, ValueError) as exc:
        raise PolicyFileError(f"{where} is not a readable safetensors file ({exc})") from None
    return metadata, tensors


def read_network_file(
    source: str | Path | bytes,
    header_key: str,
    format_name: str,
    version: int | tuple[int, ...],
    where: str,
) -> tuple[dict[str, Any], PolicyNetwork]:
    """Load the JSON header (metadata ``header_key``, ``format`` == ``format_name``, ``version``
    one of those given) and the dense network of a network file, given by its path or its
    bytes (with its action scorer from ``network.scorer``, which only version
    :data:`SCORER_VERSION` may hold); every error is a :class:`PolicyFileError` that starts
    with ``where`` (the file's description)."""
    versions = (version,) if isinstance(version, int) else tuple(version)
    metadata, tensors = read_safetensors(source, where)
    _check_finite(tensors, where)
    if header_key not in metadata:
        raise PolicyFileError(f"{where} has no {header_key!r} header: not a {format_name} file")
    try:
        header = json.loads(metadata[header_key])
    except json.JSONDecodeError as exc:
        raise PolicyFileError(f"{where}: its header is not JSON ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != format_name:
        raise PolicyFileError(f"{where}: header format is not {format_name!r}")
    if header.get("version") not in versions:
        raise PolicyFileError(
            f"{where}: format version {header.get('version')!r}; this package reads version "
            f"{' or '.join(map(str, versions))}"
        )
    if "network" not in header:
        raise PolicyFileError(f"{where}: header lacks 'network'")
    try:
        scorer = None
        spec = header["network"].get("scorer")
        if spec is not None:
            if header["version"] != SCORER_VERSION:
                raise PolicyFileError(
                    f"{where}: an action scorer needs format version {SCORER_VERSION}, the "
                    f"header says {header['version']!r}"
                )
            if spec.get("features") != FEATURES_NAME:
                raise PolicyFileError(
                    f"{where}: its action scorer reads features {spec.get('features')!r}; "
                    f"this package computes {FEATURES_NAME!r}"
                )
            scorer = PolicyNetwork(*_dense(spec["layers"], tensors))
        elif header["version"] == SCORER_VERSION:
            raise PolicyFileError(
                f"{where}: format version {SCORER_VERSION} without an action scorer"
            )
        weights, biases, activations = _dense(header["network"]["layers"], tensors)
        network = PolicyNetwork(weights, biases, activations, scorer)
    except KeyError as exc:
        raise PolicyFileError(f"{where}: missing entry or tensor {exc}") from None
    except (TypeError, ValueError) as exc:
        raise PolicyFileError(f"{where}: {exc}") from None
    return header, network


def _check_finite(tensors: dict[str, np.ndarray], where: str) -> None:
    """Refuse NaN or infinite values, naming the first tensor that holds one."""
    for name, array in tensors.items():
        if np.issubdtype(array.dtype, np.number) and not np.isfinite(array).all():
            bad = int(np.size(array) - np.isfinite(array).sum())
            raise PolicyFileError(
                f"{where}: tensor {name!r} holds {bad} non-finite value(s) (NaN or infinity)"
            )


def _dense(
    layers: list[dict[str, str]], tensors: dict[str, np.ndarray]
) -> tuple[list[np.ndarray], list[np.ndarray], list[str]]:
    """The (weights, biases, activations) that ``layers`` names; a missing key or tensor
    raises KeyError."""
    weights = [tensors[layer["weight"]] for layer in layers]
    biases = [tensors[layer["bias"]] for layer in layers]
    return weights, biases, [layer["activation"] for layer in layers]


def check_trained_rules(source: str, trained: Rules, rules: Rules, allow_mismatch: bool) -> None:
    """Refuse to play ``rules`` with a policy trained for other ones (``source`` names it).

    The rules must be equal in every option, player count and partnerships included. With
    ``allow_mismatch`` a mismatch only warns (:class:`PolicyMismatchWarning`), unless the action
    count differs, which no policy can play.
    """
    differ = [
        f"{key}={value!r} (playing {played!r})" for key, value, played in _differing(trained, rules)
    ]
    if not differ:
        return
    message = (
        f"{source} was trained for {describe_rules(trained)} but is asked to play "
        f"{describe_rules(rules)}: it was trained with {', '.join(differ)}"
    )
    if trained.num_actions != rules.num_actions or not allow_mismatch:
        if trained.num_actions != rules.num_actions:
            message += f"; its {trained.num_actions} actions cannot play {rules.num_actions}"
        else:
            message += " (pass allow_mismatch=true to play it anyway)"
        raise PolicyFileError(message)
    warnings.warn(message, PolicyMismatchWarning, stacklevel=3)


def _differing(a: Rules, b: Rules) -> list[tuple[str, Any, Any]]:
    """``(option, value in a, value in b)`` for every option (seating included) that differs."""
    b_values = b.to_dict()
    return [(k, v, b_values[k]) for k, v in a.to_dict().items() if k != "name" and v != b_values[k]]


def rules_difference(a: Rules, b: Rules) -> list[str]:
    """Every option (player count and partnerships included) in which ``a`` and ``b`` differ, as
    ``"option: a's value vs b's value"``; empty if they are the same rules."""
    return [f"{key}: {x!r} vs {y!r}" for key, x, y in _differing(a, b)]


def describe_rules(rules: Rules) -> str:
    """The preset and seating of ``rules`` in words: ``"'fives' rules, 2 players"``."""
    teams = ", partnerships" if rules.partnerships else ""
    return f"{rules.name!r} rules, {rules.num_players} players{teams}"

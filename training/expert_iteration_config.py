"""The expert-iteration run's config (:class:`ExpertIterationConfig`), loaded from YAML with a
``default:`` block; see :mod:`bergen_env.training.expert_iteration` for what each step does."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bergen_env.agents.base import make_agent
from bergen_env.agents.search import SearchAgent
from bergen_env.policy_file import read_policy_file
from bergen_env.rules import Rules

from .config import EnvBlock, load_dataclass_config
from .config_checks import ConfigError, key_error
from .config_ranges import EXPERT_ITERATION, check_ranges

#: The ``player`` entry that means the network being trained.
NETWORK = "network"


@dataclass
class ExpertIterationConfig(EnvBlock):
    """An expert-iteration run. Each field is one YAML key under ``default:`` (the env keys come
    from :class:`bergen_env.training.config.EnvBlock`; ``reward`` must stay ``match``: the targets
    are search's values)."""

    name: str = "expert_iteration"
    """Prefix of the run folder (a config file's stem when loaded from a file)."""
    seed: int = 0
    """Seed of the positions, the labels, the network initialisation and the evaluations."""
    iterations: int = 1
    """Rounds of positions, labels and fitting."""
    decisions: int = 20_000
    """Labelled learner decisions per iteration."""
    job_decisions: int = 2_000
    """Decisions per collection job (jobs are seeded by index)."""
    workers: int = 1
    """Processes collecting and labelling decisions."""
    ray: str | None = None
    """Label (and evaluate) as Ray tasks instead of ``workers`` processes: ``local`` (a local Ray
    instance), ``auto`` (the cluster this machine joined) or a cluster's address (docs/scale.md);
    null: local processes. The fit stays in this process."""
    player: list[str] = field(default_factory=lambda: [NETWORK])
    """Who plays the learner seat while positions are collected, drawn uniformly each match:
    ``network`` (the current network) or agent strings."""
    opponents: list[str] = field(default_factory=lambda: ["heuristic"])
    """Agent strings of the other seats, in turn order after the learner: one for every seat, or
    one per seat (in partnerships with ``partner: opponents`` the partner is the second)."""
    partner: str = "learner"
    """Partnerships: ``learner`` (the partner seat is played like the learner seat: by the
    network when ``player`` draws it) or ``opponents`` (the partner is an ``opponents`` entry)."""
    teacher: str = "search:samples=400"
    """The ``search`` agent string whose action values label the decisions."""
    temperature: float = 0.03
    """Softmax temperature of the targets, in match units (``2 P(win) - 1``)."""
    init_policy: str | None = None
    """Portable policy file the network starts from (null: random weights of ``net_arch``)."""
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    """Hidden layers of a network started from random weights."""
    activation: str = "relu"
    """``relu`` or ``tanh`` (a network started from random weights)."""
    scorer: list[int] = field(default_factory=list)
    """Hidden layers of an action scorer (empty: none): a network shared by every action that
    adds to each legal action's logit its value of the last hidden layer's activations and the
    action's features (:mod:`bergen_env.action_features`). Its last layer starts at zero, so
    the network starts playing as ``init_policy`` does. An ``init_policy`` with a scorer brings
    its own (``scorer`` must then be empty or the same)."""
    keep_data: bool = True
    """Fit each iteration on the decisions of every iteration so far (else on its own)."""
    epochs: int = 4
    """Passes over the decisions in each fit."""
    learning_rate: float = 3e-4
    """Adam step size."""
    batch_size: int = 512
    """Minibatch size."""
    held_out: float = 0.05
    """Fraction of the matches held out of the fit to measure agreement and regret."""
    torch_threads: int = 1
    """Torch threads of the fitting process."""
    eval_opponents: list[str] = field(default_factory=lambda: ["heuristic"])
    """Opponents of the duplicate evaluation after each iteration (empty: none)."""
    eval_matches: int = 200
    """Duplicate matches per opponent in each evaluation."""
    eval_workers: int = 1
    """Worker processes of the evaluations."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, source: str = "<config>") -> None:
        """Check every field; errors name ``source`` and the key."""
        check_ranges(self, EXPERT_ITERATION, source)

        rules = self.env_options(source).rules
        others = len(self.opponent_seats(rules))
        if len(self.opponents) not in (1, others):
            if others == 1:
                why = "must hold 1 agent string (the one seat besides the learner)"
            else:
                seats = (
                    "the opposing side's seats (the partner plays like the learner)"
                    if rules.partnerships and self.partner == "learner"
                    else "the other seats, the partner second in partnerships"
                )
                why = f"must hold 1 agent string (for every seat) or {others}, one for each of "
                why += seats
            raise key_error(self, source, "opponents", why)
        try:
            for spec in {*self.player, *self.opponents} - {NETWORK}:
                make_agent(spec)
        except ValueError as exc:
            raise ConfigError(f"{source}: key 'player'/'opponents': {exc}") from None
        if NETWORK in self.opponents:
            raise key_error(
                self,
                source,
                "opponents",
                f"must be agent strings ({NETWORK!r} plays the learner only)",
            )
        try:
            teacher = make_agent(self.teacher) if isinstance(self.teacher, str) else None
        except ValueError as exc:
            raise ConfigError(f"{source}: key 'teacher': {exc}") from None
        if not isinstance(teacher, SearchAgent):
            raise key_error(self, source, "teacher", "must be a search agent string (search:...)")
        if teacher.budget_ms is not None:
            raise key_error(
                self,
                source,
                "teacher",
                "must not set budget_ms (labels must not depend on the machine)",
            )
        if self.init_policy is not None:
            try:
                policy = read_policy_file(self.init_policy)
            except ValueError as exc:  # names the file and the problem
                raise ConfigError(f"{source}: key 'init_policy': {exc}") from None
            if policy.rules.to_dict() | {"name": ""} != rules.to_dict() | {"name": ""}:
                raise key_error(
                    self, source, "init_policy", "was trained for other rules than the config's"
                )
            scorer = policy.network.scorer
            if scorer is not None and self.scorer:
                widths = scorer.layer_sizes[:-1]
                if widths != self.scorer:
                    raise key_error(
                        self,
                        source,
                        "scorer",
                        f"must be empty or {widths} (the init_policy's scorer)",
                    )

    def opponent_seats(self, rules: Rules) -> list[int]:
        """The seats (relative to the learner: 1 is the next) that ``opponents`` plays."""
        partner = rules.num_players // 2 if rules.partnerships and self.partner == "learner" else 0
        return [k for k in range(1, rules.num_players) if k != partner]

    def make_rules(self) -> Rules:
        """The rules of the run (preset, seating and overrides)."""
        return self.env_options().rules

    def env_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :class:`bergen_env.single_agent.BergenSingleAgentEnv` (the
        reward is not used)."""
        return self.env_block_kwargs() | {"reward": "match", "auto_forced": True}


def load_config(path: str | Path, overrides: list[str] | None = None) -> ExpertIterationConfig:
    """Load ``path`` (YAML with a ``default:`` block) and apply ``key=value`` overrides."""
    return load_dataclass_config(ExpertIterationConfig, path, overrides)

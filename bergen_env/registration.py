"""Registers ``bergen_env/Bergen-v0`` with Gymnasium and PettingZoo without importing them.

``import bergen_env`` must keep the rules engine numpy-only, yet
``gymnasium.make("bergen_env/Bergen-v0")`` must work after it. Neither Gymnasium 1.x nor
PettingZoo loads plugin entry points, so :func:`register_envs` registers at once with a library
that is already imported and otherwise when that library is first imported: a post-import hook
(a :data:`sys.meta_path` finder that runs the registration right after the module has executed,
as ``wrapt.register_post_import_hook`` does).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from types import ModuleType

ENV_ID = "bergen_env/Bergen-v0"
GYMNASIUM_ENTRY_POINT = "bergen_env.single_agent:BergenSingleAgentEnv"
PETTINGZOO_ENTRY_POINT = "bergen_env.aec_env:env"


def register_gymnasium(gymnasium: ModuleType) -> None:
    """The single-agent env (one learner against agents) in Gymnasium's registry."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point=GYMNASIUM_ENTRY_POINT)


def register_pettingzoo(pettingzoo: ModuleType) -> None:
    """The AEC env in PettingZoo's registry, where the installed PettingZoo has one."""
    registry = getattr(pettingzoo, "aec_registry", None)
    if registry is not None and ENV_ID not in registry:
        pettingzoo.register("aec", ENV_ID, entry_point=PETTINGZOO_ENTRY_POINT)


HOOKS: dict[str, Callable[[ModuleType], None]] = {
    "gymnasium": register_gymnasium,
    "pettingzoo": register_pettingzoo,
}


class _HookedLoader(importlib.abc.Loader):
    """Executes a module with its own loader, then runs the registration hook on it."""

    def __init__(self, loader: importlib.abc.Loader, hook: Callable[[ModuleType], None]) -> None:
        self.loader = loader
        self.hook = hook

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = module.__spec__.loader = self.loader  # the module keeps its loader
        self.loader.exec_module(module)
        self.hook(module)


class _PostImportFinder(importlib.abc.MetaPathFinder):
    """Finds the hooked modules with the other finders and wraps their loaders."""

    def __init__(self, pending: dict[str, Callable[[ModuleType], None]]) -> None:
        self.pending = pending

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        hook = self.pending.pop(fullname, None)
        if hook is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _HookedLoader(spec.loader, hook)
                return spec
        return None


def register_envs() -> None:
    """Register now with each library already imported, and on first import with the others."""
    waiting = {}
    for name, hook in HOOKS.items():
        module = sys.modules.get(name)
        if module is not None:
            hook(module)
        else:
            waiting[name] = hook
    if waiting and not any(isinstance(f, _PostImportFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _PostImportFinder(waiting))

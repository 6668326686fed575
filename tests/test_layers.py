"""The code's imports keep the layers of docs/architecture.md: no cycle, every import pointing
down the layer table of ``tests/layers.py``, the library never importing training; and the
page's picture is the one the imports draw. The checker itself is tested on small fake packages,
so that it is known to fail where it should."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.layers import (
    PAGE,
    Layer,
    computed_import_problems,
    cycles,
    diagram,
    import_graph,
    in_training,
    layer_of,
    layer_problems,
    page_with_diagram,
)


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_no_import_cycle(graph) -> None:
    assert cycles(graph) == []


def test_every_import_points_down_the_layers(graph) -> None:
    assert layer_problems(graph) == []


def test_no_import_by_a_computed_name_but_the_declared_ones(graph) -> None:
    assert computed_import_problems(graph) == []


def test_the_library_imports_neither_training_nor_frameworks_below_the_envs(graph) -> None:
    """The facts the layer table stands for, checked directly on the graph."""
    for module, targets in graph.edges.items():
        if not in_training(module):
            assert not any(in_training(t) for t in targets), module
    engine = [m for m in graph.modules if layer_of(m) == 0]
    assert "bergen_env.engine" in engine and "bergen_env.vector.kernels" in engine
    for module in engine:
        assert not graph.libraries[module] & {"gymnasium", "pettingzoo", "torch", "starlette"}


def test_architecture_page_is_what_the_imports_draw(graph) -> None:
    text = PAGE.read_text()
    assert page_with_diagram(text, diagram(graph)) == text, (
        "docs/architecture.md is stale: run `python -m tests.layers`"
    )


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_checker_finds_a_cycle_hidden_inside_a_function(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "fake/__init__.py": "from fake.a import A\n",
            "fake/a.py": "from fake.b import B\nA = 1\n",
            "fake/b.py": "def f():\n    from fake import a\n    return a\nB = 2\n",
            "fake/c.py": "import importlib\nM = importlib.import_module('fake.d')\n",
            "fake/d.py": "from . import c\n",
            "fake/e.py": "import fake.a\n",
        },
    )
    graph = import_graph(root, {"fake": "fake"})
    # a <-> b through an import inside a function; c <-> d through import_module and a relative
    # import; the package __init__ importing its own module is not a cycle
    assert cycles(graph) == [["fake.a", "fake.b"], ["fake.c", "fake.d"]]
    assert graph.edges["fake.e"] == {"fake.a"}


def test_checker_refuses_a_computed_module_name(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "fake/__init__.py": "",
            "fake/a.py": "import importlib\nN = 'b'\nM = importlib.import_module(f'fake.{N}')\n",
            "fake/b.py": "M = __import__('fake.a')\n",
        },
    )
    problems = computed_import_problems(import_graph(root, {"fake": "fake"}))
    assert problems[0].startswith("fake.a, line 3: an import with a computed module name")
    assert not any(p.startswith("fake.b") for p in problems)  # a literal name is drawn


def test_checker_finds_layer_crossings_and_forbidden_libraries(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "low/__init__.py": "",
            "low/core.py": "def f():\n    import gymnasium\n    from high import app\n",
            "high/__init__.py": "",
            "high/app.py": "import low.core\n",
            "low/stray.py": "",
        },
    )
    layers = (
        Layer("low", "", ("low", "low.core"), ("gymnasium",)),
        Layer("high", "", ("high", "high.*")),
    )
    problems = layer_problems(import_graph(root, {"low": "low", "high": "high"}), layers, {})
    assert problems == [
        "low.core (low) imports gymnasium",
        "low.stray is in no layer of tests/layers.py",
        "low.core (low) imports high.app (high), a later layer",
    ]

"""Named exceptions. Every one says what was wrong (the option, tile, deal or action)."""


class BergenError(Exception):
    """Base class of every error raised by bergen_env."""


class InvalidOptionError(BergenError, ValueError):
    """A rule option, or a combination of options, that cannot be played."""


class InvalidTileError(BergenError, ValueError):
    """A tile id, pair or text that is not a tile of a double-six set."""


class InvalidDealError(BergenError, ValueError):
    """A fixed deal that is not a valid split of the set for these rules."""


class IllegalActionError(BergenError, ValueError):
    """An action that is out of range or not legal in the current position."""


class GameOverError(BergenError, RuntimeError):
    """An action applied to a match that has already ended."""


def install_hint(extra: str) -> str:
    """The command that installs ``extra``, from PyPI and from a clone of the repository."""
    return (
        f"pip install 'bergen_env[{extra}]' (from a clone of the repository: "
        f"pip install -e '.[{extra}]')"
    )

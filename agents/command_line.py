"""What every ``erp-sim`` command's parser shares: help texts in plain words, and one-line errors.

Module docstrings double as command descriptions; their reST markup (````erp-sim eval````,
``:func:`x```) is for readers of the source, not for a terminal, so the help formatter drops it.
"""

from __future__ import annotations

import argparse
import contextlib
import re
from collections.abc import Iterator
from typing import NoReturn

_MARKUP = re.compile(r"(?::[a-z]+:)?(``?)([^`]+)\1")  # ``literal``, `text`, :role:`target`


def plain(text: str) -> str:
    """``text`` without reST inline markup: ````erp-sim eval```` -> ``erp-sim eval``."""
    return _MARKUP.sub(r"\2", text)


class PlainHelpFormatter(argparse.HelpFormatter):
    """Descriptions, epilogs and argument help without reST markup."""

    def _format_text(self, text: str) -> str:
        return super()._format_text(plain(text))

    def _expand_help(self, action: argparse.Action) -> str:
        return plain(super()._expand_help(action))


class PlainDefaultsHelpFormatter(PlainHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """``PlainHelpFormatter`` that also states each argument's default."""


class UsageError(ValueError):
    """A wrong option value found after parsing (an unknown task set or agent kind, a malformed price, no API key
    for the model named): the command ends as argparse ends a usage error, ``PROG: error: MESSAGE`` and exit 2."""


@contextlib.contextmanager
def usage_errors(parser: argparse.ArgumentParser) -> Iterator[None]:
    """Run a command's body so that a ``UsageError`` from anywhere in it is ``refuse``d with its message."""
    try:
        yield
    except UsageError as error:
        refuse(parser, error)


def refuse(parser: argparse.ArgumentParser, message: object) -> NoReturn:
    """Exit 2 with ``PROG: error: MESSAGE`` alone: for a wrong value (a policy spec), whose message already
    says what is allowed, where ``parser.error`` would print the whole usage block first."""
    parser.exit(2, f"{parser.prog}: error: {message}\n")

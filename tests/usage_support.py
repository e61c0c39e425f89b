"""Test helper: a command's usage error, as argparse ends one (issue 39, point 5)."""

from __future__ import annotations

import pytest


def usage_error(capsys, command, argv) -> str:
    """Run ``command(argv)``, which must end as argparse ends a usage error (exit 2, one ``PROG: error: ...`` line
    on stderr), and return that line's message (after ``error: ``)."""
    capsys.readouterr()  # what came before is not this command's
    with pytest.raises(SystemExit) as stop:
        command(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2, (stop.value.code, err)
    assert err.count("\n") == 1 and err.startswith("erp-sim ") and ": error: " in err, err
    return err.split(": error: ", 1)[1].rstrip("\n")

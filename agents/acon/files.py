"""ACON run files: atomic writes (a killed run leaves the old file or the new one) and gzipped JSON
written without a timestamp, so the same run gives the same bytes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any


def write_text(path: Path, text: str) -> None:
    """Atomic write: a killed run leaves the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def write_json(path: Path, value: Any) -> None:
    write_text(path, json.dumps(value, ensure_ascii=False, indent=1) + "\n")


def write_gz_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
        out.write(json.dumps(value, ensure_ascii=False).encode())
    tmp.replace(path)


def read_gz_json(path: Path) -> Any:
    with gzip.open(path, "rb") as data:
        return json.loads(data.read())

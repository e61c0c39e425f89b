"""Model roles on the command line: which model plays each role, with which request settings.

A run may call a model in several roles: the agent, an LLM user, the summarizer of a
summarizing policy, the GenericAgent memory consolidator, and in ``acon optimize`` the
compressor and the optimizer. ``--model-param [ROLE:]KEY=VALUE`` (repeatable) puts a key in
the body of every request of that role, or of every role without a prefix (a prefixed item
wins over an unprefixed one); VALUE is JSON when it parses (``64``, ``null``, ``"auto"``,
``{"type": "text"}``), else the text as it is. ``--timeout`` and ``--max-retries`` set the
client of every role.

``ModelSettings`` is what a row's ``sampling`` shows for a role and what a recording keeps in
``cassettes/models.json`` (the manifest), so a replay reports the recorded models and settings
and refuses a command line that names other ones.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, Field, ValidationError

from erp_sim.agents.types import InfrastructureError, ModelRequestError, unset

EVAL_ROLES = ("agent", "user", "summarizer", "consolidator")
ACON_ROLES = ("agent", "compressor", "optimizer")
HARNESS_KEYS = frozenset({"model", "messages", "tools", "stream"})  # the harness sets these itself
MANIFEST = "models.json"
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_UNSET = object()


class ModelSettings(BaseModel):
    """One role's model and what goes with each of its requests."""

    model: str | None = Field(
        None,
        description="The model name sent in every request (None: unknown, a replay "
        "of a recording made before manifests).",
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="Request body keys sent with every request (temperature, seed, --model-param).",
    )
    timeout: float | None = Field(None, description="Seconds the client waits for one answer.")
    max_retries: int | None = Field(None, description="Retries of a transient failure before the call fails.")
    base_url: str | None = Field(
        None,
        description="The server the requests went to, without credentials or query (None: OpenAI's API); "
        "a local server serving a model under an OpenAI name is told apart by it; for Azure, the endpoint.",
    )
    api: str | None = Field(
        None,
        exclude_if=unset,
        description="The model API (MODEL_APIS: anthropic, openai-responses, azure, azure-responses); "
        "absent: openai (Chat Completions), as in every recording made before the others.",
    )
    api_version: str | None = Field(None, exclude_if=unset, description="Azure's API version (absent: not Azure).")


ModelParam = tuple[str | None, str, Any]  # (role or None for every role, key, value)


def parse_model_param(item: str, roles: Iterable[str]) -> ModelParam:
    """``[ROLE:]KEY=VALUE`` -> (role, key, value); ValueError says what is wrong, in one line."""
    roles = tuple(roles)
    target, sep, raw = item.partition("=")
    if not sep:
        raise ValueError(f"{item!r}: expected [ROLE:]KEY=VALUE")
    role: str | None
    role, colon, key = target.partition(":")
    if not colon:
        role, key = None, target
    elif role not in roles:
        raise ValueError(f"{item!r}: unknown role {role!r} (roles: {', '.join(roles)})")
    key = key.strip()
    if not _KEY.match(key):
        raise ValueError(f"{item!r}: {key!r} is not a request key")
    if key in HARNESS_KEYS:
        raise ValueError(f"{item!r}: {key!r} is set by the harness, not by --model-param")
    if key in ("timeout", "max_retries"):  # client settings, not request keys
        raise ValueError(f"{item!r}: use --{key.replace('_', '-')}, which sets the client of every role")
    try:  # NaN and Infinity are not JSON (Python's parser takes them): they stay text
        value = json.loads(raw, parse_constant=_not_json)
    except ValueError:
        value = raw
    return role, key, value


def _not_json(constant: str):
    raise ValueError(f"{constant} is not JSON")


# OpenAI refuses both in one request; a role's own limit replaces an unprefixed one of the other name
TOKEN_LIMITS = ("max_tokens", "max_completion_tokens")


def params_by_role(items: Iterable[ModelParam], roles: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Each role's params: unprefixed items first, then the role's own, each in command-line order. Both token
    limits for one role from the same level (both unprefixed, or both the role's) is a usage error."""
    items = list(items)
    result = {}
    for role in roles:
        params = {key: value for target, key, value in items if target is None}
        own = {key: value for target, key, value in items if target == role}
        if any(own.get(key) is not None for key in TOKEN_LIMITS):
            params = {key: value for key, value in params.items() if key not in TOKEN_LIMITS}
        params.update(own)
        if all(params.get(key) is not None for key in TOKEN_LIMITS):
            raise SystemExit(
                f"erp-sim: --model-param: the {role}'s requests would carry both max_tokens and "
                "max_completion_tokens, which the OpenAI API refuses; set one (reasoning models take "
                "max_completion_tokens)"
            )
        if params:
            result[role] = params
    return result


def add_model_arguments(parser: argparse.ArgumentParser, roles: Iterable[str]) -> None:
    """``--model-param``, ``--timeout`` and ``--max-retries`` for the given roles."""
    roles = tuple(roles)

    def model_param(item: str) -> ModelParam:
        try:
            return parse_model_param(item, roles)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    parser.add_argument(
        "--model-param",
        action="append",
        default=[],
        type=model_param,
        metavar="[ROLE:]KEY=VALUE",
        help=f"a request body key for one role ({', '.join(roles)}) or, without ROLE:, for every model "
        "role, e.g. agent:tool_choice=auto, max_tokens=512, temperature=null (not sent); VALUE is "
        "JSON when it parses, else text (repeatable)",
    )
    parser.add_argument(
        "--timeout",
        type=positive(float),
        metavar="SECONDS",
        help="seconds a model call waits for its answer, every role (None: the client's 300)",
    )
    parser.add_argument(
        "--max-retries",
        type=positive(int, zero=True),
        metavar="N",
        help="retries of a transient model failure (429, 5xx, timeout), every role (None: the client's 5)",
    )


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of the backends other than Chat Completions: Azure's endpoint and API version, the Messages
    API's cache breakpoints, and what becomes of reasoning items (each a switch of the roles whose API reads
    it, recorded like a ``--model-param``)."""
    parser.add_argument(
        "--azure-endpoint", help="azure: roles' endpoint, https://NAME.openai.azure.com (None: AZURE_OPENAI_ENDPOINT)"
    )
    parser.add_argument("--api-version", help="azure: roles' API version (None: OPENAI_API_VERSION)")
    parser.add_argument(
        "--cache-breakpoints",
        choices=["auto", "none"],
        help="anthropic: roles' prompt-cache breakpoints: auto puts them where the context policy says its next "
        "request starts the same, none sends none (None: auto)",
    )
    parser.add_argument(
        "--reasoning-items",
        choices=["keep", "drop"],
        help="openai-responses/azure-responses: whether a kept step's reasoning items (encrypted) go back with it; "
        "anthropic: its thinking blocks (None: keep; a step a policy drops takes its reasoning with it)",
    )


def positive(kind, zero: bool = False):
    """An argparse type: a positive (or, with ``zero``, non-negative) finite int or float."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not value >= 0 or value == float("inf") or (value == 0 and not zero):
            raise argparse.ArgumentTypeError(
                f"{text!r}: expected a {'non-negative' if zero else 'positive'} "
                f"{'integer' if kind is int else 'number'}"
            )
        return value

    return parse


# OpenAI's reasoning models (o1, o3, o4-mini, gpt-5, ...) refuse any temperature but their default (HTTP 400)
_REASONING_MODEL = re.compile(r"(?:.*/)?(?:o\d|gpt-5)(?:$|[-.])", re.IGNORECASE)


def default_temperature(name: str) -> float | None:
    """0.0 (repeatable runs), or None (not sent) for an OpenAI reasoning model, which refuses it."""
    return None if _REASONING_MODEL.match(name) else 0.0


# The model APIs a role may name, as ``API:MODEL`` (for Azure, ``API:DEPLOYMENT``).
MODEL_APIS = {
    "openai": "Chat Completions: OpenAI, or any OpenAI-compatible server (vLLM, llama.cpp, Ollama, ...)",
    "openai-responses": "OpenAI's Responses API, stateless (store: false)",
    "anthropic": "Anthropic's Messages API (pip install 'erp-sim[anthropic]')",
    "azure": "an Azure OpenAI deployment, Chat Completions",
    "azure-responses": "an Azure OpenAI deployment, Responses",
}
MODEL_CHOICES = " | ".join(f"{api}:MODEL" for api in MODEL_APIS)
# max_tokens of a role whose API needs one in every request (the Messages API) when --model-param sets none:
# enough for a tool call or a question (the agent), a reply (the user), a summary or an SOP
DEFAULT_MAX_TOKENS = {"agent": 4096, "user": 1024, "summarizer": 2048, "consolidator": 2048, "compressor": 2048}
DEFAULT_MAX_TOKENS_OTHER = 4096  # the ACON optimizer writes whole guidelines
# switches of ours that a role's API reads (never sent as request keys): cache breakpoints (the Messages API)
# and reasoning items (the Responses API's reasoning, Claude's thinking blocks)
SWITCHES = {
    "cache_breakpoints": ("anthropic",),
    "reasoning_items": ("anthropic", "openai-responses", "azure-responses"),
}


def model_spec(value: str | None) -> tuple[str, str] | None:
    """``(api, model)`` of a role's ``API:MODEL`` (None: anything else, e.g. an offline choice)."""
    api, sep, name = (value or "").partition(":")
    return (api, name) if sep and api in MODEL_APIS and name else None


def names_a_model(value: str | None) -> bool:
    return model_spec(value) is not None


def label(settings: ModelSettings) -> str:
    """A recorded role as the command line names it: ``API:MODEL``."""
    return f"{settings.api or 'openai'}:{settings.model}"


def with_switches(params: Mapping[str, Any], api: str, switches: Mapping[str, str | None]) -> dict[str, Any]:
    """``params`` plus the flags' switches that ``api`` reads, where a flag gave one and no param did."""
    result = dict(params)
    for key, value in switches.items():
        if value is not None and api in SWITCHES[key]:
            result.setdefault(key, value)
    return result


def settings_of(model: Any) -> ModelSettings | None:
    """What a chat model (live, recording or replaying) sends: its recorded settings when it replays."""
    if model is None:
        return None
    recorded = getattr(model, "settings", None)
    if isinstance(recorded, ModelSettings):
        return recorded
    inner = getattr(model, "inner", model)  # a RecordingModel records for the model it wraps
    name = getattr(inner, "model", None)
    params = getattr(model, "recorded_params", None) or getattr(model, "sampling_params", {}) or {}
    base_url = getattr(inner, "base_url", None)
    api = getattr(inner, "api", None)
    azure = getattr(inner, "azure", None)
    return ModelSettings(
        model=name if isinstance(name, str) else None,
        params=dict(params),
        timeout=getattr(inner, "timeout", None),
        max_retries=getattr(inner, "max_retries", None),
        base_url=public_url(base_url) if isinstance(base_url, str) else None,
        api=api if isinstance(api, str) and api != "openai" else None,
        api_version=getattr(azure, "api_version", None),
    )


def public_url(url: str) -> str:
    """``url`` without what may be secret: a user and password, a query (an API key there), a fragment; and
    without a trailing slash, which names the same server to the client."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address goes back in brackets
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host + (f":{port}" if port is not None else "")
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def sampling(model: Any) -> dict[str, Any] | None:
    """A role's entry in a row's ``sampling`` (None: no model plays it)."""
    settings = settings_of(model)
    return None if settings is None else settings.model_dump(mode="json", exclude_none=True)


@contextlib.contextmanager
def failures_named(role: str) -> Iterator[None]:
    """A model failure inside, named as ``role``'s, keeping its kind: a service error (an unscored,
    resumable row) stays one, a refused request (a scored failure) stays one; a context overflow
    becomes a plain refused request, since the context that overflowed is not the agent's."""
    try:
        yield
    except ModelRequestError as error:
        raise ModelRequestError(f"{role}: {error}", error.status_code) from error
    except InfrastructureError as error:
        raise type(error)(f"{role}: {error}") from error


def no_text(message: Mapping[str, Any]) -> str:
    """Why a model's answer is unusable as text: empty, or a refusal (its words kept, shortened)."""
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal.strip():
        return f"the model refused: {refusal.strip()[:300]}"
    return "the model answered with no text"


# --- the recording's manifest ----------------------------------------------------------------
def read_manifest(cassettes: Path) -> dict[str, ModelSettings] | None:
    """The roles recorded in ``cassettes/models.json`` (None: a recording made before manifests)."""
    path = Path(cassettes) / MANIFEST
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {role: ModelSettings.model_validate(value) for role, value in data.items()}
    except (ValueError, AttributeError, ValidationError) as error:
        raise ValueError(f"{path}: not a model manifest ({str(error).splitlines()[0]})") from None


def write_manifest(cassettes: Path, roles: Mapping[str, ModelSettings]) -> None:
    """Add ``roles`` to the manifest; a role already recorded with other settings is refused (ValueError)."""
    save_manifest(cassettes, merged_manifest(cassettes, roles))


def merged_manifest(cassettes: Path, roles: Mapping[str, ModelSettings]) -> dict[str, ModelSettings]:
    """The manifest with ``roles`` added, not written; a role already recorded with other settings: ValueError."""
    cassettes = Path(cassettes)
    recorded = read_manifest(cassettes) or {}
    for role, settings in roles.items():
        if role in recorded and recorded[role] != settings:
            raise ValueError(
                f"{cassettes.parent} holds a recording whose {role} is {_describe(recorded[role])}, not "
                f"{_describe(settings)}; record into another directory"
            )
    return {**recorded, **roles}


def save_manifest(cassettes: Path, merged: Mapping[str, ModelSettings]) -> None:
    cassettes = Path(cassettes)
    cassettes.mkdir(parents=True, exist_ok=True)
    tmp = cassettes / (MANIFEST + ".tmp")
    # params keep the order they were sent in, so a replay's rows and reports are byte-identical to the recording's
    tmp.write_text(
        json.dumps({role: merged[role].model_dump(mode="json") for role in sorted(merged)}, indent=1) + "\n",
        encoding="utf-8",
    )
    tmp.replace(cassettes / MANIFEST)


def named_servers(
    base_url: str | None, roles: tuple[str, ...], own: Mapping[str, tuple[str, str | None]]
) -> dict[str, tuple[str, str]]:
    """Role -> (option, URL) each role would send to, as live: its own option's URL (``own``: role -> (option,
    URL or None)), else ``--base-url``; a role neither names is left out (the client's default server)."""
    servers: dict[str, tuple[str, str]] = {}
    for role in roles:
        option, url = own.get(role, ("--base-url", None))
        if url:
            servers[role] = (option, url)
        elif base_url:
            servers[role] = ("--base-url", base_url)
    return servers


def replay_contradiction(
    recorded: Mapping[str, ModelSettings],
    named: Mapping[str, str | None],
    where: Path,
    *,
    params: Mapping[str, Mapping[str, Any]] | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    base_urls: Mapping[str, tuple[str, str]] | None = None,
) -> str | None:
    """What on the command line contradicts the recording, in one line (None: nothing).

    ``named``: role -> the model the command names for it, as ``API:MODEL`` (None: no model plays it). Model
    params, ``timeout``, ``max_retries`` and ``base_urls`` (role -> the option and the server it names) are
    checked only where given; what is not given is the recording's. A replay sends nothing, so a
    server other than the recorded one can only be a mistake (a recording from before servers were
    recorded has none to check against).
    """
    for role, name in named.items():
        settings = recorded.get(role)
        if name is None and settings is not None:
            return (
                f"the recording in {where} has a {role} model, {label(settings)}; "
                f"pass --{role} {label(settings)} to replay it"
            )
        if name is None:
            continue
        if settings is None:
            return f"--{role} {name}: the recording in {where} has no {role} model"
        if name != label(settings):
            return f"--{role} {name} contradicts the recording in {where}, whose {role} is {label(settings)}"
        for key, value in (params or {}).get(role, {}).items():
            was = settings.params.get(key, _UNSET)
            if was != value:
                shown = "not sent" if was is _UNSET else json.dumps(was)
                return (
                    f"--model-param {role}:{key}={json.dumps(value)} contradicts the recording in {where} "
                    f"({role} {key}: {shown})"
                )
        for option, value in (("timeout", timeout), ("max_retries", max_retries)):
            if value is not None and getattr(settings, option) != value:
                return (
                    f"--{option.replace('_', '-')} {value} contradicts the recording in {where} "
                    f"({role}: {getattr(settings, option)})"
                )
        flag, url = (base_urls or {}).get(role, ("", None))
        recorded_url = public_url(settings.base_url) if settings.base_url is not None else None
        if url is not None and "base_url" in settings.model_fields_set and public_url(url) != recorded_url:
            server = settings.base_url or "OpenAI's API"
            return f"{flag} {public_url(url)} contradicts the recording in {where} ({role}'s server: {server})"
    return None


def _describe(settings: ModelSettings) -> str:
    return f"{label(settings)} {json.dumps(settings.model_dump(exclude={'model', 'api'}), sort_keys=True)}"

"""``initialize``, one normalized view of what the agent supports, and its messages read under the agreed version.

``initialize`` works for v1 and v2; the agent's answers and requests are held to the
negotiated version's schema by :func:`read_answer`, :func:`read_request` and
:func:`parse_request`.

The v1 and v2 ``initialize`` shapes do not collide (``clientCapabilities``/``clientInfo`` vs
``capabilities``/``info``), so in ``auto`` mode one request carries both: a v1 agent learns the
client's v1 capabilities (file system, terminals) and a v2 agent reads the v2 fields. v2 has no
client file-system or terminal methods, so those are never advertised in the v2 fields.

Whatever the version, the rest of acpcli asks :class:`AgentFeatures` -- never the raw
capability objects -- whether a method or field may be sent. The mapping (read from the v1
schema and the v2 draft and latest schemas)::

    feature            v2 draft (seed)             v2 latest                      v1
    load with replay   session.load -> session/load session present -> resume+replayFrom  loadSession: true
    resume             session.resume              baseline                       sessionCapabilities.resume
    close              session.close               baseline                       sessionCapabilities.close
    list               session.list                baseline                       sessionCapabilities.list
    extra roots        session.additionalDirectories  same                        sessionCapabilities.additionalDirectories
    MCP stdio / http   session.mcp.stdio / .http   same                           always / mcpCapabilities.http

Both v2 schemas answer ``protocolVersion: 2``. An agent whose ``capabilities.session`` carries any
of the draft's own markers (load/resume/close/list) is read as the draft; otherwise acpcli reads
it as the draft too (the conservative choice: nothing unadvertised is called) unless the caller
asks for the ``latest`` reading, where ``capabilities.session`` implies the baseline methods.

Every answer acpcli reads and every request the agent makes passes through this module on its way
in, so what is checked (:mod:`acpcli.protocol`'s run-time contract) and how a failure reads is
decided once: an answer acpcli cannot read is a :class:`~acpcli.errors.ProtocolError` (exit 7;
a :class:`~acpcli.errors.HandshakeError` for ``initialize``), an invalid request is answered
``-32602``; both one line naming the method and the member.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from acpcli import protocol
from acpcli._version import __version__
from acpcli.errors import AuthRequired, HandshakeError, ProtocolError, RpcError, UsageError

log = logging.getLogger("acpcli.wire.negotiate")

if TYPE_CHECKING:
    from acpcli.wire.connection import Connection

ProtocolChoice = Literal["auto", "1", "2", "2-latest"]

#: ``--protocol`` values: ``2-latest`` speaks v2 and reads the later v2 draft (session/load
#: gone, ``capabilities.session`` implying resume/close/list; loading is ``session/resume``
#: with ``replayFrom``); plain ``2`` and ``auto`` keep the seed's draft reading.
PROTOCOL_CHOICES: tuple[str, ...] = ("auto", "1", "2", "2-latest")
V2Reading = Literal["draft", "latest"]

#: The versions this client speaks, newest first.
SUPPORTED_VERSIONS = (2, 1)

_DRAFT_MARKERS = ("load", "resume", "close", "list")


@dataclass(frozen=True)
class ClientOffer:
    """What the client offers in ``initialize`` (v1 client capabilities only exist in v1)."""

    read_text_file: bool = True
    write_text_file: bool = True
    terminal: bool = True
    # v1 extensions acpcli handles: boolean config options (`/config NAME on`) and terminal
    # login methods (`acpcli auth` runs the agent's own login in the terminal).
    config_boolean: bool = True
    auth_terminal: bool = True
    # v1 elicitation (`elicitation/create`): forms drawn in the REPL, answered by --answer in
    # scripts; links shown, never opened. Both modes, each explicitly (the spec's gate).
    elicitation: bool = True
    name: str = "acpcli"
    title: str = "acpcli"
    version: str = __version__


@dataclass(frozen=True)
class AgentFeatures:
    """One normalized view of the agent's capabilities, whatever the protocol version.

    ``load_via`` says how a load with replay is done: ``"session/load"`` (v1, v2 draft),
    ``"session/resume"`` with ``replayFrom`` (v2 latest), or ``None`` when unsupported.
    """

    protocol_version: int
    reading: str  # "v1", "v2-draft" or "v2-latest"
    agent_name: str | None = None
    agent_title: str | None = None
    agent_version: str | None = None
    load_via: str | None = None
    resume: bool = False
    close: bool = False
    list: bool = False
    delete: bool = False
    fork: bool = False  # unstable upstream (session/fork, acp-v2-draft.schema.unstable.json)
    additional_directories: bool = False
    mcp_stdio: bool = True
    mcp_http: bool = False
    mcp_sse: bool = False
    prompt_image: bool = False
    prompt_audio: bool = False
    prompt_embedded_context: bool = False
    auth_methods: tuple[dict[str, Any], ...] = ()
    auth_logout: bool = False  # v1 agentCapabilities.auth.logout; v2 auth/logout needs no marker
    # What the client advertised and the agent may therefore call (v1 only).
    client_fs_read: bool = False
    client_fs_write: bool = False
    client_terminal: bool = False
    client_elicitation: bool = False
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def load(self) -> bool:
        return self.load_via is not None

    @property
    def display_name(self) -> str:
        name = self.agent_title or self.agent_name or "the agent"
        return f"{name} {self.agent_version}" if self.agent_version else name

    def supports_mcp_transport(self, transport: str) -> bool:
        """Whether an MCP server of this transport may be sent. ``_``-prefixed custom
        transports are passed through: their support is advertised by extensions we cannot
        read, and the agent is the judge."""
        if transport.startswith("_"):
            return True
        return {"stdio": self.mcp_stdio, "http": self.mcp_http, "sse": self.mcp_sse}.get(transport, False)

    def summary(self) -> dict[str, Any]:
        """A flat, JSON-friendly description of what the agent offers (logged at debug level
        after every ``initialize``: ``ACPCLI_DEBUG=1`` shows it in the log file)."""
        return {
            "protocolVersion": self.protocol_version,
            "reading": self.reading,
            "agent": self.display_name,
            "load": self.load_via,
            "resume": self.resume,
            "close": self.close,
            "list": self.list,
            "delete": self.delete,
            "fork": self.fork,
            "additionalDirectories": self.additional_directories,
            "mcp": [t for t in ("stdio", "http", "sse") if self.supports_mcp_transport(t)],
            "prompt": [
                t
                for t, ok in (
                    ("image", self.prompt_image),
                    ("audio", self.prompt_audio),
                    ("embeddedContext", self.prompt_embedded_context),
                )
                if ok
            ],
            "authMethods": [m.get("id") or m.get("methodId") for m in self.auth_methods],
        }


def parse_protocol_choice(value: str) -> ProtocolChoice:
    """Validate a ``--protocol`` value."""
    if value not in PROTOCOL_CHOICES:
        raise UsageError(f"--protocol must be auto, 1, 2 or 2-latest (got {value!r})")
    return value  # type: ignore[return-value]


def protocol_of(features: AgentFeatures) -> str:
    """The protocol choice that speaks to this agent the way this connection did: ``"1"``,
    ``"2"`` (the seed's v2 draft) or ``"2-latest"``. Recorded with a session, so that later
    commands on it speak the same (a v1 session is not resumed over v2, a 2-latest session
    is loaded with ``session/resume``)."""
    if features.protocol_version == 1:
        return "1"
    return "2-latest" if features.reading == "v2-latest" else "2"


def initialize_params(choice: ProtocolChoice, offer: ClientOffer) -> dict[str, Any]:
    """The ``initialize`` params for a protocol choice.

    ``auto`` offers version 2 and carries both the v1 and the v2 fields.
    """
    params: dict[str, Any] = {"protocolVersion": 1 if choice == "1" else 2}
    if choice in ("auto", "1"):
        params["clientCapabilities"] = {
            "fs": {"readTextFile": offer.read_text_file, "writeTextFile": offer.write_text_file},
            "terminal": offer.terminal,
        }
        if offer.config_boolean:
            params["clientCapabilities"]["session"] = {"configOptions": {"boolean": {}}}
        if offer.auth_terminal:
            params["clientCapabilities"]["auth"] = {"terminal": True}
        if offer.elicitation:
            params["clientCapabilities"]["elicitation"] = {"form": {}, "url": {}}
        params["clientInfo"] = {"name": offer.name, "title": offer.title, "version": offer.version}
    if choice in ("auto", "2", "2-latest"):
        # v2 defines no standard client capability fields: fs and terminals are gone.
        params["capabilities"] = {}
        params["info"] = {"name": offer.name, "title": offer.title, "version": offer.version}
    return params


def _marker(obj: Any, key: str) -> bool:
    """v2 presence check: an object (``{}`` or with fields) means supported; absent/null not."""
    return isinstance(obj, dict) and isinstance(obj.get(key), dict)


def _flag(obj: Any, key: str) -> bool:
    """v1 mixed markers: ``true`` or an object means supported."""
    if not isinstance(obj, dict):
        return False
    value = obj.get(key)
    return value is True or isinstance(value, dict)


def _info(obj: Any) -> tuple[str | None, str | None, str | None]:
    if not isinstance(obj, dict):
        return None, None, None

    def text(key: str) -> str | None:
        value = obj.get(key)
        return value if isinstance(value, str) and value else None

    return text("name"), text("title"), text("version")


def _auth_methods(result: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    methods = result.get("authMethods")
    if not isinstance(methods, list):
        return ()
    return tuple(m for m in methods if isinstance(m, dict))


def features_from_result(
    result: Any,
    *,
    choice: ProtocolChoice = "auto",
    offer: ClientOffer | None = None,
    v2_reading: V2Reading = "draft",
) -> AgentFeatures:
    """Normalize an ``initialize`` result. Raises :class:`HandshakeError` for an answer we
    cannot speak (a version we do not know, or not the one that was insisted on)."""
    offer = offer or ClientOffer()
    if not isinstance(result, dict):
        raise HandshakeError(f"the agent answered initialize with {type(result).__name__}, not an object")
    version = result.get("protocolVersion")
    if isinstance(version, bool) or not isinstance(version, int) or version not in SUPPORTED_VERSIONS:
        raise HandshakeError(
            f"the agent answered with protocol version {version!r}; acpcli speaks 1 and 2",
            hint="upgrade acpcli or the agent",
        )
    if choice == "1" and version != 1:
        raise HandshakeError(f"--protocol 1 was asked for but the agent answered version {version}")
    if choice in ("2", "2-latest") and version != 2:
        raise HandshakeError(
            f"--protocol {choice} was asked for but the agent speaks version {version} only",
            hint="use --protocol auto (the default) or --protocol 1",
        )
    try:
        protocol.check_result(version, "initialize", result)
    except protocol.InvalidMessage as bad:
        raise HandshakeError(f"initialize: the agent's answer is not valid ACP v{version}: {bad.detail}") from None
    if version == 1:
        return _features_v1(result, offer)
    return _features_v2(result, "latest" if choice == "2-latest" else v2_reading)


def _features_v1(result: dict[str, Any], offer: ClientOffer) -> AgentFeatures:
    caps = result.get("agentCapabilities")
    caps = caps if isinstance(caps, dict) else {}
    session = caps.get("sessionCapabilities")
    prompt = caps.get("promptCapabilities")
    mcp = caps.get("mcpCapabilities")
    name, title, version = _info(result.get("agentInfo"))
    return AgentFeatures(
        protocol_version=1,
        reading="v1",
        agent_name=name,
        agent_title=title,
        agent_version=version,
        load_via="session/load" if caps.get("loadSession") is True else None,
        resume=_flag(session, "resume"),
        close=_flag(session, "close"),
        list=_flag(session, "list"),
        delete=_flag(session, "delete"),
        fork=_flag(session, "fork"),
        additional_directories=_flag(session, "additionalDirectories"),
        mcp_stdio=True,  # v1: every agent must support stdio MCP servers
        mcp_http=_flag(mcp, "http"),
        mcp_sse=_flag(mcp, "sse"),
        prompt_image=_flag(prompt, "image"),
        prompt_audio=_flag(prompt, "audio"),
        prompt_embedded_context=_flag(prompt, "embeddedContext"),
        auth_methods=_auth_methods(result),
        auth_logout=_flag(caps.get("auth"), "logout"),
        client_fs_read=offer.read_text_file,
        client_fs_write=offer.write_text_file,
        client_terminal=offer.terminal,
        client_elicitation=offer.elicitation,
        raw=result,
    )


def _features_v2(result: dict[str, Any], v2_reading: V2Reading) -> AgentFeatures:
    caps = result.get("capabilities")
    caps = caps if isinstance(caps, dict) else {}
    raw_session = caps.get("session")
    has_session = isinstance(raw_session, dict)
    session: dict[str, Any] = raw_session if isinstance(raw_session, dict) else {}
    draft = any(key in session for key in _DRAFT_MARKERS) or v2_reading == "draft"
    prompt = session.get("prompt")
    mcp = session.get("mcp")
    name, title, version = _info(result.get("info"))
    common: dict[str, Any] = {
        "protocol_version": 2,
        "agent_name": name,
        "agent_title": title,
        "agent_version": version,
        "delete": _marker(session, "delete"),
        "fork": _marker(session, "fork"),
        "additional_directories": _marker(session, "additionalDirectories"),
        "mcp_stdio": _marker(mcp, "stdio"),
        "mcp_http": _marker(mcp, "http"),
        "prompt_image": _marker(prompt, "image"),
        "prompt_audio": _marker(prompt, "audio"),
        "prompt_embedded_context": _marker(prompt, "embeddedContext"),
        "auth_methods": _auth_methods(result),
        "raw": result,
    }
    if draft:
        return AgentFeatures(
            reading="v2-draft",
            load_via="session/load" if _marker(session, "load") else None,
            resume=_marker(session, "resume"),
            close=_marker(session, "close"),
            list=_marker(session, "list"),
            **common,
        )
    # v2 latest: advertising `session` at all commits the agent to the baseline methods.
    return AgentFeatures(
        reading="v2-latest",
        load_via="session/resume" if has_session else None,
        resume=has_session,
        close=has_session,
        list=has_session,
        **common,
    )


async def initialize(
    conn: Connection,
    *,
    choice: ProtocolChoice = "auto",
    offer: ClientOffer | None = None,
    v2_reading: V2Reading = "draft",
) -> AgentFeatures:
    """Send ``initialize`` and return the normalized features.

    A JSON-RPC error answer becomes a :class:`HandshakeError` (auth errors stay
    :class:`~acpcli.errors.AuthRequired` so the caller can offer to log in).
    """
    offer = offer or ClientOffer()
    try:
        result = await conn.request("initialize", initialize_params(choice, offer))
    except RpcError as err:
        if isinstance(err, AuthRequired):
            raise
        raise HandshakeError(f"the agent refused initialize: {err.rpc_message} ({err.code})") from err
    features = features_from_result(result, choice=choice, offer=offer, v2_reading=v2_reading)
    if log.isEnabledFor(logging.DEBUG):
        log.debug("initialized: %s", json.dumps(features.summary()))
    return features


def read_answer(version: int, method: str, result: Any) -> dict[str, Any]:
    """The agent's answer to ``method``, checked where it is read
    (:func:`acpcli.protocol.check_result`): an object (``null`` is ``{}`` when nothing is
    required), or :class:`~acpcli.errors.ProtocolError` naming what acpcli cannot read past."""
    try:
        return protocol.check_result(version, method, result)
    except protocol.InvalidMessage as bad:
        raise ProtocolError(method, f"the agent's answer is not valid ACP v{version}: {bad.detail}") from None


def read_request(version: int, method: str, params: Any) -> dict[str, Any]:
    """The params of a request from the agent, checked where they are read
    (:func:`acpcli.protocol.check_params`, no pydantic: a permission request comes in the
    middle of an ordinary turn); :class:`~acpcli.errors.ProtocolError` with code ``-32602``
    (the answer the agent gets) naming the member at fault."""
    try:
        return protocol.check_params(version, method, params)
    except protocol.InvalidMessage as bad:
        raise ProtocolError(method, f"invalid params: {bad.detail}", code=RpcError.INVALID_PARAMS) from None


def parse_request(version: int, method: str, params: Any) -> Any:
    """The params of a request from the agent as their generated model, validated whole
    (:func:`acpcli.protocol.parse_params`); :class:`~acpcli.errors.ProtocolError` with code
    ``-32602`` naming the member at fault. For the file-system and terminal handlers, which
    build their answers with the models too."""
    try:
        return protocol.parse_params(version, method, params)
    except protocol.InvalidMessage as bad:
        raise ProtocolError(method, f"invalid params: {bad.detail}", code=RpcError.INVALID_PARAMS) from None


#: :func:`send_now_way`'s answers.
QUEUEING = "promptQueueing"
STEERING = "steering"


def _meta_flag(meta: Any, *path: str) -> bool:
    for key in path:
        if not isinstance(meta, dict):
            return False
        meta = meta.get(key)
    return meta is True


def send_now_way(raw: dict[str, Any] | None) -> str | None:
    """How this agent takes a prompt during a turn, read from its ``initialize`` answer
    (``raw``): :data:`STEERING`, :data:`QUEUEING`, or ``None`` (it does not say it can)."""
    if not isinstance(raw, dict):
        return None
    caps = raw.get("agentCapabilities")
    caps_meta = caps.get("_meta") if isinstance(caps, dict) else None
    if _meta_flag(raw.get("_meta"), "steering", "supported") or _meta_flag(caps_meta, "steering", "supported"):
        return STEERING
    if _meta_flag(caps_meta, "claudeCode", "promptQueueing"):
        return QUEUEING
    return None

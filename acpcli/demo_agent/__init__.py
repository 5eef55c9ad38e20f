"""acpcli's built-in demo agent: a real ACP agent over stdio, speaking protocol v1 and v2.

Run it as ``python -m acpcli.demo_agent`` (``--help`` lists every flag). It is stdlib only and
imports nothing from acpcli but :mod:`acpcli.errors`, so it starts fast and does not depend on
the client's layers. It is what ``make demo`` drives and a fixture for the client's tests.

Wire: newline-delimited JSON-RPC 2.0 on stdin/stdout; logs only on stderr; exits with status 0
when stdin closes (cancelling any running turn first).

Versions: ``initialize`` answers the lower of the client's ``protocolVersion`` and ``--protocol``
(default 2; ``--protocol 1`` behaves like today's real agents and answers 1 even when offered 2).

Capabilities: everything is advertised unless withheld with ``--without`` (repeatable):
``load``, ``resume``, ``close``, ``list``, ``additional-directories``, ``mcp-http``,
``mcp-stdio`` (v2 only: v1 makes stdio mandatory), ``modes`` (v1 ``modes`` and
``session/set_mode``), ``config-options`` (``configOptions`` and ``session/set_config_option``),
``embedded-context`` (``resource`` prompt blocks). ``--with image`` / ``--with audio`` turn on
prompt capabilities that are off by default. Calling a withheld or unknown method (or one of
the other protocol version) answers -32601 and logs ``UNADVERTISED METHOD CALLED: <method>``;
sending a withheld field (``additionalDirectories``, an MCP server of a withheld transport, a
prompt block of a kind not advertised) answers -32602 and logs
``UNADVERTISED FIELD SENT: <what> in <method>``.

Settings (:mod:`.session_config`): new/load/resume answers carry v1 ``modes`` (ask, code, plan) and
``configOptions`` (``mode``, ``model``, ``effort``; v1 adds the boolean ``brave`` for clients
that advertised ``session.configOptions.boolean``), stored with the session. v1 ``id`` vs v2
``configId``; a change through modes is announced as ``config_option_update`` and vice versa.

Auth (:mod:`.credentials`): ``--require-auth`` advertises the ``demo-login`` method; until
``authenticate`` (v1) / ``auth/login`` (v2), new/load/resume/prompt fail with -32000
"Authentication required". The login is kept in ``<state-dir>/credentials.json`` across
processes; ``logout`` (v1, advertised) / ``auth/logout`` (v2) / ``--forget-auth`` drop it.

Sessions: stored as JSON in ``$ACPCLI_HOME/demo-agent/sessions/<sessionId>.json`` (or under
``--state-dir``), ids ``demo-<uuid hex>``; ``session/load`` (replay styles: ``--replay``,
``--load-answers-first``), ``session/resume``, ``session/list`` (``--page-size``) and
``session/close`` work across processes. ``--v2-flavour latest`` speaks the later v2 draft in
v2: no ``session/load`` and no per-method markers (``capabilities.session`` implies resume,
close and list); a load is ``session/resume`` with ``replayFrom: {type: "start"}``.

Prompt keywords (anywhere in the prompt's text, case-insensitive) make it a controllable
fixture:

``slow``           stream a long answer slowly, so cancellation can be tested
``refuse``         end the turn with stopReason ``refusal``
``max tokens``     cut the answer short with stopReason ``max_tokens``
``crash``          write a line to stderr and exit with status 3 mid-turn
``no-permission``  skip the ``session/request_permission`` step of the edit
``read PATH``      v1: ``fs/read_text_file`` (if the client advertised ``fs.readTextFile``),
                   quoted in the answer
``write PATH``     v1: the demo edit targets PATH and, once allowed, is written with
                   ``fs/write_text_file`` (if advertised)
``run CMD...``     v1: ``terminal/create`` + ``wait_for_exit`` + ``output`` + ``release`` for the
                   rest of the line (if the client advertised ``terminal``)
``plan mode``      switch the session to mode ``plan`` mid-turn and announce it
``status``         a short turn answering ``mode=<id> model=<id> effort=<id>``
``form``           v1: ``elicitation/create`` asking for a coffee order (name, drink, cups,
                   sugar; if the client advertised ``elicitation.form``); says what came back

Every answer states the settings and lists the prompt's non-text blocks, one
``received <kind> ...`` line each (:mod:`.content`).

Modules (named for what they do here; none shares a name with a client module): :mod:`.flags`
(command-line flags), :mod:`.rpc` (framing, ids, cancellation), :mod:`.agent` (method table,
main loop), :mod:`.turn` (the prompt turn), :mod:`.script` (its texts), :mod:`.translate`
(canonical updates → v1/v2 shapes), :mod:`.replay` (load replay styles), :mod:`.storage`
(session files), :mod:`.caps` (initialize answer and gates), :mod:`.live` (an active session),
:mod:`.session_config` (a session's modes and config options), :mod:`.credentials` (login,
credentials), :mod:`.content` (prompt blocks).
"""

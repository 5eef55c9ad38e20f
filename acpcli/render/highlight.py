"""Syntax highlighting for code blocks on the terminal, in one regex pass.

pygments' lexers are exact and slow: its Python lexer takes about 0.5 ms for three lines
(some forty regex attempts a token), so a streamed answer with code would spend most of
its drawing time lexing. The languages agents write most (Python, JavaScript/TypeScript,
JSON, Rust, Go, the C family, shells, SQL, YAML, TOML, diffs) are highlighted here with one
compiled pattern each -- comments, strings, numbers, words, decorators, operators -- and a
word table per language, coloured by the token types pygments would give. Other languages
go to pygments. The colours (:data:`PALETTES`) suit the terminal's background: plain code in
its default colour, no background of their own (the ``theme`` config key, ``ACPCLI_THEME``,
``COLORFGBG``).

The spans always join back to exactly the code given (a test checks it on arbitrary text):
highlighting never hides, adds or reorders a character.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pygments.token import Comment, Generic, Keyword, Name, Number, Operator, String, Text

if TYPE_CHECKING:
    from pygments.token import _TokenType
    from rich.style import Style

_C_COMMENT = r"//[^\n]*|/\*[\s\S]*?(?:\*/|\Z)"
_HASH_COMMENT = r"#[^\n]*"
_DQ = r'"(?:\\.|[^"\\\n])*"?'
_SQ = r"'(?:\\.|[^'\\\n])*'?"
_CHAR = r"'(?:\\.|[^'\\\n])'"  # a character literal: 'a' in Rust is a lifetime otherwise
_NUMBER = r"(?<![\w.])(?:0[xXbBoO][0-9a-fA-F_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)\w*"
_WORD = r"[A-Za-z_$][\w$]*"
_OPERATOR = r"[-+*/%=<>!&|^~]+"


class _Language:
    """A language's pattern (groups ``comment``, ``string``, ``number``, ``word``,
    ``variable``, ``decorator``, ``key``, ``operator``) and what its words are."""

    def __init__(
        self,
        *,
        comment: str,
        string: str,
        keywords: str,
        constants: str = "",
        namespace: str = "",
        word_operators: str = "",
        builtins: str = "",
        definers: str = "",
        types: str = "",
        decorator: str | None = None,
        variable: str | None = None,
        key: str | None = None,
        ignore_case: bool = False,
    ) -> None:
        parts = [f"(?P<comment>{comment})", f"(?P<string>{string})"]
        if key is not None:
            parts.insert(0, f"(?P<key>{key})")
        if decorator is not None:
            parts.append(f"(?P<decorator>{decorator})")
        if variable is not None:
            parts.append(f"(?P<variable>{variable})")
        parts += [f"(?P<number>{_NUMBER})", f"(?P<word>{_WORD})", f"(?P<operator>{_OPERATOR})"]
        self._source = "|".join(parts)
        self._pattern: re.Pattern[str] | None = None
        self.ignore_case = ignore_case
        fold = str.lower if ignore_case else str
        self.words: dict[str, _TokenType] = {}
        for names, token in (
            (builtins, Name.Builtin),
            (types, Keyword.Type),
            (keywords, Keyword),
            (definers, Keyword),
            (word_operators, Operator.Word),
            (namespace, Keyword.Namespace),
            (constants, Keyword.Constant),
        ):
            for name in names.split():
                self.words[fold(name)] = token
        self.definers = frozenset(fold(name) for name in definers.split())

    @property
    def pattern(self) -> re.Pattern[str]:
        """Compiled on first use: a command that draws no code compiles none."""
        if self._pattern is None:
            self._pattern = re.compile(self._source, re.MULTILINE)
        return self._pattern


_PYTHON = _Language(
    comment=_HASH_COMMENT,
    string=r"(?<![\w])[rRbBuUfF]{0,2}(?:\"\"\"[\s\S]*?(?:\"\"\"|\Z)|'''[\s\S]*?(?:'''|\Z)|" + _DQ + "|" + _SQ + ")",
    keywords="as assert async await break continue del elif else except finally for global if lambda "
    "nonlocal pass raise return try while with yield match case",
    constants="True False None",
    namespace="import from",
    word_operators="and or not in is",
    builtins="abs all any bool bytes callable dict dir enumerate filter float format frozenset getattr "
    "hasattr hash id input int isinstance issubclass iter len list map max min next object open "
    "print property range repr reversed round set setattr slice sorted staticmethod str sum super "
    "tuple type vars zip classmethod self cls Exception ValueError TypeError KeyError IndexError "
    "RuntimeError OSError NotImplementedError StopIteration AttributeError",
    definers="def class",
    decorator=r"^[ \t]*@[\w.]+",
)
_JAVASCRIPT = _Language(
    comment=_C_COMMENT,
    string=_DQ + "|" + _SQ + r"|`(?:\\.|[^`\\])*`?",
    keywords="async await break case catch const continue debugger default do else extends finally "
    "for if let of return static switch throw try var while with yield get set as implements "
    "private protected public readonly declare abstract",
    constants="true false null undefined NaN Infinity this super",
    namespace="import export from require",
    word_operators="typeof instanceof in new delete void keyof",
    builtins="console Math JSON Object Array Promise String Number Boolean Map Set Date Error "
    "RegExp Symbol window document process",
    definers="function class interface type enum",
    types="string number boolean any unknown never object",
    decorator=r"@[\w.]+",
)
_JSON = _Language(
    comment=_C_COMMENT,
    key=r"\"(?:\\.|[^\"\\\n])*\"(?=\s*:)",
    string=_DQ,
    keywords="",
    constants="true false null",
)
_RUST = _Language(
    comment=_C_COMMENT,
    string=r"b?r#*\"[\s\S]*?\"#*|" + _DQ + "|" + _CHAR,
    keywords="as async await break const continue crate dyn else extern for if impl in let loop "
    "match move mut pub ref return static super unsafe where while",
    constants="true false self Self None Some Ok Err",
    namespace="use mod",
    builtins="println print eprintln format vec panic assert assert_eq Box Vec String Option Result",
    definers="fn struct enum trait type",
    types="i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str",
    decorator=r"#!?\[[^\]\n]*\]",
)
_GO = _Language(
    comment=_C_COMMENT,
    string=_DQ + r"|`[^`]*`?|" + _CHAR,
    keywords="break case chan const continue default defer else fallthrough for go goto if "
    "interface map range return select switch var",
    constants="true false nil iota",
    namespace="import package",
    builtins="append cap close copy delete len make new panic print println recover",
    definers="func type struct",
    types="bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune "
    "string uint uint8 uint16 uint32 uint64 uintptr any",
)
_C_FAMILY = _Language(
    comment=_C_COMMENT,
    string=_DQ + "|" + _CHAR,
    keywords="auto break case catch const constexpr continue default delete do else extends final "
    "finally for goto if implements inline namespace new operator override private protected "
    "public register return sizeof static switch template this throw throws try typedef typename "
    "union using virtual volatile while val var when fun override lateinit suspend internal "
    "open data object companion let guard func init extension where is as in out",
    constants="true false null nullptr NULL nil",
    namespace="import package include",
    definers="class struct enum interface record",
    types="bool char double float int long short signed unsigned void size_t String Integer "
    "Boolean Object auto",
    decorator=r"@\w+|^[ \t]*#[ \t]*\w+",
)
_SHELL = _Language(
    comment=r"(?<![\w$\\])#[^\n]*",
    string=r"\"(?:\\.|[^\"\\])*\"?|'[^']*'?",
    keywords="if then else elif fi for while until do done case esac in function return select "
    "break continue local export readonly declare unset shift",
    builtins="echo cd ls cat grep sed awk find printf read source test exit set eval exec cp mv rm "
    "mkdir chmod chown curl git make python python3 pip npm npx uv sudo tar",
    variable=r"\$(?:\{[^}\n]*\}?|\w+|[@*#?$!0-9-])",
)
_SQL = _Language(
    comment=r"--[^\n]*|/\*[\s\S]*?(?:\*/|\Z)",
    string=_SQ + "|" + _DQ,
    keywords="select from where insert into values update set delete create table index view drop "
    "alter add column primary key foreign references join left right inner outer full cross on "
    "group by order having limit offset union all distinct as case when then else end begin "
    "commit rollback transaction with returning default unique check constraint if exists "
    "asc desc",
    constants="null true false",
    word_operators="and or not in is like between",
    types="integer int text varchar char real float double boolean blob date timestamp numeric",
    ignore_case=True,
)
_YAML = _Language(
    comment=r"(?<!\S)#[^\n]*",
    key=r"^[ \t]*(?:- )?[\w.\-/]+(?=[ \t]*:(?:\s|$))",
    string=_DQ + "|" + _SQ,
    keywords="",
    constants="true false null yes no on off",
)
_TOML = _Language(
    comment=r"[#;][^\n]*",
    key=r"^[ \t]*\[[^\]\n]*\]+|^[ \t]*[\w.\-\"]+(?=[ \t]*=)",
    string=r"\"\"\"[\s\S]*?(?:\"\"\"|\Z)|'''[\s\S]*?(?:'''|\Z)|" + _DQ + "|" + _SQ,
    keywords="",
    constants="true false",
)

_LANGUAGES: dict[str, _Language] = {}
for _names, _language in (
    ("python py py3 python3 pycon sage gyp bazel starlark", _PYTHON),
    ("javascript js jsx mjs cjs node typescript ts tsx mts", _JAVASCRIPT),
    ("json jsonc json5 jsonl geojson", _JSON),
    ("rust rs", _RUST),
    ("go golang", _GO),
    ("c h cpp c++ cc cxx hpp hh java kotlin kt kts swift csharp cs c# scala dart objective-c objc", _C_FAMILY),
    ("bash sh shell zsh console shell-session ksh fish sh-session dockerfile docker", _SHELL),
    ("sql sqlite postgresql postgres psql mysql plpgsql", _SQL),
    ("yaml yml", _YAML),
    ("toml ini cfg conf editorconfig properties", _TOML),
):
    for _name in _names.split():
        _LANGUAGES[_name] = _language

_DIFF_LINE = re.compile(r"^[^\n]*\n?", re.MULTILINE)
_DIFF_TOKENS = (("+++", Generic.Heading), ("---", Generic.Heading), ("@@", Generic.Subheading), ("+", Generic.Inserted), ("-", Generic.Deleted))


_DIFFS = frozenset(("diff", "patch", "udiff"))
_PLAIN = frozenset(("", "text", "plain", "txt"))


def tokens(lang: str, code: str) -> list[tuple[_TokenType, str]]:
    """``code`` cut into (pygments token type, text), joining back to ``code`` exactly."""
    lang = lang.lower()
    if lang in _DIFFS:
        return _diff(code)
    language = _LANGUAGES.get(lang)
    if language is None:
        if lang in _PLAIN:
            return [(Text, code)] if code else []
        return _pygments(lang, code)
    out: list[tuple[_TokenType, str]] = []
    words, definers = language.words, language.definers
    fold = str.lower if language.ignore_case else None
    pos = 0
    define = False  # the last word defines the next name (def, class, fn, ...)
    for m in language.pattern.finditer(code):
        start, end = m.span()
        if start > pos:
            out.append((Text, code[pos:start]))
        kind = m.lastgroup
        text = m.group()
        if kind == "word":
            name = fold(text) if fold else text
            if define:
                token: _TokenType = Name.Function
                define = False
            else:
                token = words.get(name, Name)
                define = name in definers
        else:
            define = False
            token = _GROUP_TOKENS[kind]  # type: ignore[index]
        out.append((token, text))
        pos = end
    if pos < len(code):
        out.append((Text, code[pos:]))
    return out


_GROUP_TOKENS: dict[str, _TokenType] = {
    "comment": Comment.Single,
    "string": String,
    "number": Number,
    "decorator": Name.Decorator,
    "variable": Name.Variable,
    "key": Name.Tag,
    "operator": Operator,
}


def _diff(code: str) -> list[tuple[_TokenType, str]]:
    out: list[tuple[_TokenType, str]] = []
    for m in _DIFF_LINE.finditer(code):
        line = m.group()
        if not line:
            continue
        token = next((t for prefix, t in _DIFF_TOKENS if line.startswith(prefix)), Text)
        out.append((token, line))
    return out


@lru_cache(maxsize=64)
def _pygments_lexer(lang: str) -> Any:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(lang, stripnl=False, ensurenl=False, tabsize=4)
    except ClassNotFound:
        return None


def _pygments(lang: str, code: str) -> list[tuple[_TokenType, str]]:
    lexer = _pygments_lexer(lang)
    if lexer is None:
        return [(Text, code)] if code else []
    out = [(token, text) for token, text in lexer.get_tokens(code) if text]
    # a lexer may add a final newline (or drop one): keep the code exactly as given
    joined = "".join(text for _, text in out)
    if joined != code:
        return [(Text, code)] if code else []
    return out


#: The code colours: ``dark`` (monokai's, for a dark background), ``light`` (pygments'
#: default theme's, for a light one) and ``ansi`` (the terminal's own palette, which it fits
#: to its background: what ``auto`` uses when nothing says which background it is). Plain code
#: text is in the terminal's default colour, on its own background, in all three.
PALETTES: dict[str, dict[_TokenType, str]] = {
    "dark": {
        Comment: "italic #959077",
        Keyword: "#66d9ef",
        Keyword.Namespace: "#f92672",
        Operator: "#f92672",
        Name.Function: "#a6e22e",
        Name.Class: "#a6e22e",
        Name.Decorator: "#a6e22e",
        Name.Attribute: "#a6e22e",
        Name.Exception: "#a6e22e",
        Name.Tag: "#f92672",
        Name.Variable: "#fd971f",
        String: "#e6db74",
        String.Escape: "#ae81ff",
        Number: "#ae81ff",
        Generic.Inserted: "#a6e22e",
        Generic.Deleted: "#f92672",
        Generic.Heading: "bold",
        Generic.Subheading: "#959077",
    },
    "light": {
        Comment: "italic #3d7b7b",
        Keyword: "bold #008000",
        Keyword.Type: "#b00040",
        Operator: "#666666",
        Operator.Word: "bold #aa22ff",
        Name.Builtin: "#008000",
        Name.Function: "#0000ff",
        Name.Class: "bold #0000ff",
        Name.Decorator: "#aa22ff",
        Name.Attribute: "#687822",
        Name.Exception: "bold #cb3f38",
        Name.Tag: "bold #008000",
        Name.Variable: "#19177c",
        String: "#ba2121",
        String.Escape: "bold #aa5d1f",
        Number: "#666666",
        Generic.Inserted: "#008400",
        Generic.Deleted: "#a00000",
        Generic.Heading: "bold #000080",
        Generic.Subheading: "bold #800080",
    },
    "ansi": {
        Comment: "italic dim",
        Keyword: "magenta",
        Keyword.Constant: "cyan",
        Keyword.Type: "cyan",
        Operator.Word: "magenta",
        Name.Builtin: "cyan",
        Name.Function: "bold",
        Name.Class: "bold",
        Name.Decorator: "magenta",
        Name.Exception: "bold",
        Name.Tag: "bold",
        Name.Variable: "cyan",
        String: "green",
        Number: "cyan",
        Generic.Inserted: "green",
        Generic.Deleted: "red",
        Generic.Heading: "bold",
        Generic.Subheading: "bold magenta",
    },
}
def palette_for(setting: str | None, colorfgbg: str | None) -> str:
    """The palette a ``theme`` setting picks: ``dark`` or ``light`` as said; for ``auto`` (or
    nothing), the background ``COLORFGBG`` names (``15;0``: its last number, the background
    colour: 0-6 or 8 dark, any other light, as vim reads it), else ``ansi``."""
    if setting in ("dark", "light"):
        return setting
    last = (colorfgbg or "").rsplit(";", 1)[-1].strip()
    if last.isdigit():
        return "dark" if int(last) in (0, 1, 2, 3, 4, 5, 6, 8) else "light"
    return "ansi"


def configured_palette() -> str:
    """The palette of this process: ``ACPCLI_THEME``, else the config's ``theme`` key, else
    ``auto``, read with ``COLORFGBG`` (:func:`palette_for`). A bad ``ACPCLI_THEME`` or a
    broken config is warned about once and read as ``auto``: drawing never stops for it."""
    import os

    from acpcli import notices
    from acpcli.config import THEME_ENV, THEMES
    from acpcli.errors import ConfigError

    setting = os.environ.get(THEME_ENV, "").strip() or None
    if setting is not None and setting not in THEMES:
        notices.warn("bad-theme", f"{THEME_ENV} must be one of {', '.join(THEMES)} (got {setting[:40]!r}): using auto")
        setting = "auto"
    if setting is None:
        from acpcli.config import load_config

        try:
            setting = load_config().theme
        except ConfigError as err:  # (a command that needs the config has said so already)
            notices.warn("bad-config", f"{err.message}: code is drawn in the auto colours")
            setting = "auto"
    return palette_for(setting, os.environ.get("COLORFGBG"))


def syntax_theme(palette: str) -> Any:
    """A rich ``SyntaxTheme`` of ``palette``: no background, plain text in the terminal's
    default colour (``Markdown(code_theme=...)`` draws with it as acpcli does)."""
    from rich.style import Style
    from rich.syntax import ANSISyntaxTheme

    return ANSISyntaxTheme({tuple(token): Style.parse(style) for token, style in PALETTES[palette].items()})


class Theme:
    """A palette's styles as rich ``Style`` (cached per token type); ``palette`` None: the
    configured one (:func:`configured_palette`)."""

    def __init__(self, palette: str | None = None) -> None:
        self.palette = configured_palette() if palette is None else palette
        self._theme = syntax_theme(self.palette)
        self.background: Style = self._theme.get_background_style()
        self._styles: dict[_TokenType, Style] = {}

    def style(self, token: _TokenType) -> Style:
        style = self._styles.get(token)
        if style is None:
            style = self._styles[token] = self.background + self._theme.get_style_for_token(token)
        return style

    def spans(self, lang: str, code: str) -> list[tuple[str, Style]]:
        """``code`` highlighted: a (text, style) span per token."""
        style_of = self.style
        return [(text, style_of(token)) for token, text in tokens(lang, code)]

"""Code highlighting (acpcli/render/highlight.py): exact text, pygments' token types for
what matters, pygments itself for languages it does not know."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygments.token import Comment, Keyword, Name, Number, Operator, String, Text

from acpcli.render.highlight import _LANGUAGES, PALETTES, Theme, palette_for, tokens


def kinds(lang: str, code: str) -> dict[str, object]:
    """Each non-blank token's text -> its type."""
    return {text.strip(): token for token, text in tokens(lang, code) if text.strip()}


def test_python() -> None:
    code = (
        "import os\n@cached\ndef area(r: float = 1.5e2) -> float:\n"
        '    """Doc\n    string."""\n    # note\n    return r * 0x1F if r is not None else f"{r}"\n'
    )
    got = kinds("python", code)
    assert got["import"] == Keyword.Namespace
    assert got["@cached"] == Name.Decorator
    assert got["def"] == Keyword and got["area"] == Name.Function
    assert got["float"] == Name.Builtin and got["None"] == Keyword.Constant
    assert got['"""Doc\n    string."""'] == String  # one token across lines
    assert got["# note"] == Comment.Single
    assert got["1.5e2"] == Number and got["0x1F"] == Number
    assert got["is"] == Operator.Word and got["*"] == Operator
    assert got['f"{r}"'] == String


@pytest.mark.parametrize(
    ("lang", "code", "expected"),
    [
        ("ts", "const x: string = `a${b}` // c", {"const": Keyword, "string": Keyword.Type, "`a${b}`": String, "// c": Comment.Single}),
        ("js", "/* multi\nline */ function go() {}", {"/* multi\nline */": Comment.Single, "function": Keyword, "go": Name.Function}),
        ("rust", "fn f<'a>(s: &'a str) -> char { 'x' }", {"fn": Keyword, "f": Name.Function, "str": Keyword.Type, "'x'": String}),
        ("go", "package main\nfunc main() { fmt.Println(`raw`, nil) }", {"package": Keyword.Namespace, "func": Keyword, "`raw`": String, "nil": Keyword.Constant}),
        ("bash", 'echo "$HOME" # done\nexport X=${Y}', {"echo": Name.Builtin, '"$HOME"': String, "# done": Comment.Single, "${Y}": Name.Variable}),
        ("sql", "SELECT name FROM users WHERE id = 1 -- one", {"SELECT": Keyword, "FROM": Keyword, "-- one": Comment.Single, "1": Number}),
        ("json", '{"key": "value", "n": 1, "ok": true}', {'"key"': Name.Tag, '"value"': String, "true": Keyword.Constant}),
        ("yaml", "name: acpcli  # app\nlist:\n  - a", {"name": Name.Tag, "# app": Comment.Single}),
        ("toml", '[project]\nname = "x"', {"[project]": Name.Tag, "name": Name.Tag, '"x"': String}),
        ("c", "#include <stdio.h>\nint main(void) { return 0; }", {"#include": Name.Decorator, "int": Keyword.Type, "return": Keyword}),
    ],
)
def test_languages(lang: str, code: str, expected: dict[str, object]) -> None:
    got = kinds(lang, code)
    for text, token in expected.items():
        assert got.get(text) == token, (text, got.get(text))


def test_diff_lines() -> None:
    got = [token for token, _ in tokens("diff", "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n same\n")]
    assert got[:5] == [token for token, _ in tokens("diff", "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n")]
    from pygments.token import Generic

    assert got == [Generic.Heading, Generic.Heading, Generic.Subheading, Generic.Deleted, Generic.Inserted, Text]


def test_other_languages_go_to_pygments_and_unknown_ones_are_plain() -> None:
    # highlighted here: known names, case-insensitively, and the plain ones; haskell is not
    assert "haskell" not in _LANGUAGES and "python" in _LANGUAGES
    assert tokens("Python", "def f(): pass") == tokens("python", "def f(): pass")
    assert tokens("", "def f(): pass") == [(Text, "def f(): pass")]
    got = kinds("haskell", "main = putStrLn \"hi\" -- greet")
    assert got["-- greet"] in Comment and got["hi"] in String
    assert tokens("no-such-language", "x = 1") == [(Text, "x = 1")]
    assert tokens("", "x = 1") == [(Text, "x = 1")]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from([*sorted(_LANGUAGES), "diff", "haskell", "", "nope"]),
       st.text(alphabet=st.sampled_from(list("ab1 \n\t\"'`#/*-+$@{}[]<>=\\.:;")), max_size=80))  # fmt: skip
def test_tokens_join_back_to_the_code_exactly(lang: str, code: str) -> None:
    assert "".join(text for _, text in tokens(lang, code)) == code


@pytest.mark.parametrize(
    ("setting", "colorfgbg", "palette"),
    [
        (None, None, "ansi"),
        ("auto", "", "ansi"),
        ("auto", "15;0", "dark"),
        ("auto", "0;15", "light"),
        ("auto", "0;default;15", "light"),
        ("auto", "7;8", "dark"),
        ("auto", "0;7", "light"),
        ("auto", "garbage", "ansi"),
        ("light", "15;0", "light"),
        ("dark", "0;15", "dark"),
    ],
)
def test_the_palette_follows_the_setting_then_colorfgbg(setting: str | None, colorfgbg: str | None, palette: str) -> None:
    assert palette_for(setting, colorfgbg) == palette


@pytest.mark.parametrize("palette", sorted(PALETTES))
def test_every_palette_leaves_plain_code_and_the_background_to_the_terminal(palette: str) -> None:
    theme = Theme(palette)
    assert theme.background.bgcolor is None
    spans = theme.spans("python", "@dataclass\nclass A:\n    x = f(1, 'a')  # c\n")
    assert all(style.bgcolor is None for _, style in spans)
    plain = {text.strip(): style for text, style in spans if text.strip() in ("x", "(", ",")}
    assert plain and all(style.color is None for style in plain.values()), plain  # the default foreground
    coloured = {style for text, style in spans if text.strip() in ("class", "'a'", "1", "# c", "@dataclass")}
    assert len(coloured) >= 4  # keywords, strings, numbers, comments, decorators told apart


def test_theme_styles_are_the_themes_on_its_background() -> None:
    theme = Theme()
    spans = theme.spans("python", "def f(): pass")
    assert "".join(text for text, _ in spans) == "def f(): pass"
    assert all(style.bgcolor == theme.background.bgcolor for _, style in spans)
    assert len({style for _, style in spans}) >= 3  # keyword, name, punctuation at least

"""``@path`` mentions: the syntax, completion inside the root set, and the content blocks sent
for each combination of the agent's prompt capabilities (shapes checked against the generated
v1 and v2 models)."""

from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acpcli.errors import ExitCode, UsageError
from acpcli.protocol import dump, parse_params, wire
from acpcli.services.mentions import (
    MAX_EMBED_BYTES,
    Mention,
    build_prompt,
    complete_mention,
    find_mentions,
    mention_prefix,
    unresolved,
)
from acpcli.wire.negotiate import AgentFeatures


def features(image: bool = False, embed: bool = False) -> AgentFeatures:
    return AgentFeatures(protocol_version=1, reading="v1", prompt_image=image, prompt_embedded_context=embed)


def tiny_png() -> bytes:
    """A real 1x1 PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0\0")) + chunk(b"IEND", b"")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``root/`` (the session's cwd and only root) next to ``outside/``::

    root/ a.txt B.txt notes.md. .env .git/ .hidden/ docs/ src/main.py "my dir/a b.txt"
          pic.png fake.png pic.dat blob.bin big.txt latin1.txt
          inlink -> src   escape -> ../outside   secret -> ../outside/secret.txt   dangling -> nowhere
    """
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    for d in (root / "docs", root / "src", root / "my dir", root / ".git", root / ".hidden", outside):
        d.mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "B.txt").write_text("bravo\n")
    (root / "notes.md.").write_text("a name ending in a full stop\n")
    (root / ".env").write_text("X=1\n")
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "my dir" / "a b.txt").write_text("spaced\n")
    (root / "pic.png").write_bytes(tiny_png())
    (root / "pic.dat").write_bytes(tiny_png())  # an image whatever its name says
    (root / "fake.png").write_text("not an image at all\n")
    (root / "blob.bin").write_bytes(b"\x00\x01\x02\xff" * 64)
    (root / "big.txt").write_text("x" * (MAX_EMBED_BYTES + 1))
    (root / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (outside / "secret.txt").write_text("secret\n")
    (root / "inlink").symlink_to(root / "src")
    (root / "escape").symlink_to(outside)
    (root / "secret").symlink_to(outside / "secret.txt")
    (root / "dangling").symlink_to(root / "nowhere")
    return root


def uri(path: Path) -> str:
    return Path(os.path.realpath(path)).as_uri()


# -- find_mentions ---------------------------------------------------------------------------


def paths(text: str, cwd: str | None = None) -> list[str]:
    return [m.path for m in find_mentions(text, cwd)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("@a.txt", ["a.txt"]),
        ("look at @src/main.py and @docs", ["src/main.py", "docs"]),
        ("tab\t@x\nnewline\n@y", ["x", "y"]),
        ("mail a@b.com", []),
        (r"\@literal", []),
        (r"not \@literal either", []),
        ("(@paren)", []),
        ("@ alone", []),
        ("@", []),
        ('@""', []),
        ('read @"my dir/a b.txt" now', ["my dir/a b.txt"]),
        ('unclosed @"my dir/a b\nnext @x', ["my dir/a b", "x"]),
        ("see @notes.md.", ["notes.md"]),
        ("what of @a.txt?!", ["a.txt"]),
        ("(see @a.txt).", ["a.txt"]),
        ("up @.. and @../x. and @dir/.", ["..", "../x", "dir/."]),
        ("@@x", ["@x"]),
    ],
)
def test_find_mentions(text: str, expected: list[str]) -> None:
    assert paths(text) == expected


def test_mention_spans() -> None:
    text = 'see @a.txt, and @"my dir/a b.txt".'
    first, second = find_mentions(text)
    assert first == Mention(4, 10, "@a.txt", "a.txt")
    assert second == Mention(16, 33, '@"my dir/a b.txt"', "my dir/a b.txt", quoted=True)
    assert text[second.start : second.end] == second.raw


def test_trailing_punctuation_kept_when_that_path_exists(tree: Path) -> None:
    assert paths("see @notes.md.", str(tree)) == ["notes.md."]
    assert paths("see @a.txt.", str(tree)) == ["a.txt"]  # "a.txt." does not exist
    assert paths("see @notes.md.)", str(tree)) == ["notes.md."]  # the longest that exists
    assert paths("see @nothing.", str(tree)) == ["nothing"]


def test_unresolved_lists_the_mentions_naming_nothing(tree: Path) -> None:
    text = "@dataclass\nclass A:  # see @a.txt and @src/ and @nowhere/x.py"
    assert [m.raw for m in unresolved(text, str(tree))] == ["@dataclass", "@nowhere/x.py"]
    blocks = build_prompt(text, str(tree), [str(tree)], features(), strict=False)
    assert [b["type"] for b in blocks] == ["text", "resource_link", "resource_link"]


@given(st.text(alphabet=st.sampled_from(list('ab @."\\\n\t.,)/')), max_size=40))
def test_mentions_are_well_formed(text: str) -> None:
    for m in find_mentions(text):
        assert text[m.start : m.end] == m.raw
        assert m.start == 0 or text[m.start - 1].isspace()
        assert m.path and "\n" not in m.path
        if m.quoted:
            assert m.raw in (f'@"{m.path}"', f'@"{m.path}') and '"' not in m.path
        else:
            assert m.raw == "@" + m.path and not any(c.isspace() for c in m.path)


# -- mention_prefix --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "expected"),
    [
        ("see @src/ma", "@src/ma"),
        ("@", "@"),
        ("see @src/ma ", None),
        ('x @"my dir/fi', '@"my dir/fi'),
        ('x @"my dir/a b.txt"', None),
        ('x @"a\nb', None),
        ("mail a@b", None),
        ("no mention", None),
        ("", None),
    ],
)
def test_mention_prefix(before: str, expected: str | None) -> None:
    assert mention_prefix(before) == expected


# -- complete_mention ------------------------------------------------------------------------


def complete(word: str, cwd: Path, roots: list[Path], **kw) -> list[tuple[str, str]]:
    return complete_mention(word, str(cwd), [str(r) for r in roots], **kw)


def test_completes_the_cwd_dirs_first_without_dotfiles(tree: Path) -> None:
    got = complete("@", tree, [tree])
    assert [r for r, _ in got] == [
        "@docs/",
        "@inlink/",  # a symlink to a directory inside the roots is a directory
        '@"my dir/',  # quoted, and left open to type on into it
        "@src/",
        "@a.txt",
        "@B.txt",
        "@big.txt",
        "@blob.bin",
        "@fake.png",
        "@latin1.txt",
        "@notes.md.",
        "@pic.dat",
        "@pic.png",
    ]  # not: .env .git .hidden, escape/secret (outside), dangling (missing)
    meta = dict(got)
    assert meta["@docs/"] == "dir"
    assert meta["@a.txt"] == "6 B"
    assert meta["@big.txt"] == "256.0 KiB"


def test_dotfiles_only_when_asked_and_never_git(tree: Path) -> None:
    assert [r for r, _ in complete("@.", tree, [tree])] == ["@.hidden/", "@.env"]
    assert complete("@.g", tree, [tree]) == []


def test_completes_inside_a_directory_and_by_prefix(tree: Path) -> None:
    assert complete("@src/m", tree, [tree]) == [("@src/main.py", "12 B")]
    assert complete("@inlink/", tree, [tree]) == [("@inlink/main.py", "12 B")]
    assert [r for r, _ in complete("@b", tree, [tree])] == ["@big.txt", "@blob.bin"]
    assert complete("@zzz", tree, [tree]) == []


def test_paths_with_spaces_use_the_quoted_form(tree: Path) -> None:
    assert complete("@my", tree, [tree]) == [('@"my dir/', "dir")]
    assert complete('@"my dir/', tree, [tree]) == [('@"my dir/a b.txt"', "7 B")]
    assert complete('@"my dir/a b.txt"', tree, [tree]) == []  # already complete


def test_relative_stays_relative_and_absolute_absolute(tree: Path) -> None:
    src = tree / "src"
    assert [r for r, _ in complete("@../d", src, [tree])] == ["@../docs/"]
    assert complete(f"@{tree}/src/", tree, [tree]) == [(f"@{tree}/src/main.py", "12 B")]


def test_nothing_outside_the_roots(tree: Path) -> None:
    assert complete("@../", tree, [tree]) == []
    assert complete("@escape/", tree, [tree]) == []  # a symlink out of the roots
    assert complete("@/", tree, [tree]) == []
    assert complete("@e", tree, [tree]) == []  # "escape" itself is not offered
    assert complete("@s", tree, [tree]) == [("@src/", "dir")]  # nor "secret"
    # ... but a second root is inside the root set
    outside = tree.parent / "outside"
    assert complete("@escape/", tree, [tree, outside]) == [("@escape/secret.txt", "7 B")]


def test_never_raises(tree: Path) -> None:
    assert complete("@nope/", tree, [tree]) == []
    assert complete("@a.txt/", tree, [tree]) == []  # not a directory
    assert complete("@a\0b/", tree, [tree]) == []
    assert complete("no at sign", tree, [tree]) == []
    assert complete("@", tree / "missing-cwd", [tree]) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory")
def test_unreadable_directory_yields_nothing(tree: Path) -> None:
    locked = tree / "docs"
    locked.chmod(0)
    try:
        assert complete("@docs/", tree, [tree]) == []
    finally:
        locked.chmod(0o755)


def test_limit(tree: Path) -> None:
    many = tree / "docs"
    for i in range(30):
        (many / f"f{i:02d}.txt").write_text("")
    got = complete("@docs/", tree, [tree], limit=5)
    assert [r for r, _ in got] == [f"@docs/f{i:02d}.txt" for i in range(5)]


# -- build_prompt: block choice --------------------------------------------------------------


def test_no_mention_is_just_the_text(tree: Path) -> None:
    text = r"hello a@b.com \@x"
    assert build_prompt(text, str(tree), [str(tree)], features(True, True)) == [wire.text_block(text)]


def block_types(tree: Path, image: bool, embed: bool) -> dict[str, str]:
    names = ["a.txt", "pic.png", "pic.dat", "fake.png", "blob.bin", "big.txt", "latin1.txt", "docs"]
    text = " ".join("@" + n for n in names)
    blocks = build_prompt(text, str(tree), [str(tree)], features(image, embed))
    assert blocks[0] == {"type": "text", "text": text}
    assert len(blocks) == len(names) + 1
    return {n: b["type"] for n, b in zip(names, blocks[1:], strict=False)}


L, R, IMG = "resource_link", "resource", "image"


@pytest.mark.parametrize(
    ("image", "embed", "expected"),
    [
        (False, False, [L, L, L, L, L, L, L, L]),
        (True, False, [L, IMG, IMG, L, L, L, L, L]),
        (False, True, [R, L, L, R, L, L, L, L]),
        (True, True, [R, IMG, IMG, R, L, L, L, L]),
    ],
    ids=["baseline", "image", "embeddedContext", "both"],
)
def test_blocks_follow_the_capabilities(tree: Path, image: bool, embed: bool, expected: list[str]) -> None:
    got = block_types(tree, image, embed)
    assert list(got.values()) == expected


def test_block_contents(tree: Path) -> None:
    text = "@a.txt @pic.png @blob.bin @docs @src/main.py"
    a, png, blob, docs, main = build_prompt(text, str(tree), [str(tree)], features(True, True))[1:]
    assert a == {"type": "resource", "resource": {"uri": uri(tree / "a.txt"), "mimeType": "text/plain", "text": "alpha\n"}}
    assert main["resource"]["mimeType"] == "text/x-python"
    assert png == {
        "type": "image",
        "mimeType": "image/png",
        "data": base64.b64encode(tiny_png()).decode(),
        "uri": uri(tree / "pic.png"),
    }
    assert blob == {"type": "resource_link", "uri": uri(tree / "blob.bin"), "name": "blob.bin", "mimeType": "application/octet-stream", "size": 256}
    assert docs == {"type": "resource_link", "uri": uri(tree / "docs"), "name": "docs"}


def test_links_carry_mime_and_size(tree: Path) -> None:
    blocks = build_prompt("@pic.dat @a.txt @big.txt @fake.png", str(tree), [str(tree)], features())
    assert blocks[1] == {
        "type": "resource_link",
        "uri": uri(tree / "pic.dat"),
        "name": "pic.dat",
        "mimeType": "image/png",  # from the magic bytes, not the name
        "size": len(tiny_png()),
    }
    assert blocks[2] == {"type": "resource_link", "uri": uri(tree / "a.txt"), "name": "a.txt", "mimeType": "text/plain", "size": 6}
    assert blocks[3]["size"] == MAX_EMBED_BYTES + 1
    assert blocks[4]["mimeType"] == "image/png"  # the name's guess, for a plain link


def test_text_named_like_an_image_is_embedded_as_text(tree: Path) -> None:
    block = build_prompt("@fake.png", str(tree), [str(tree)], features(True, True))[1]
    assert block["type"] == "resource"
    assert block["resource"]["mimeType"] == "text/plain"


def test_text_with_nul_bytes_is_not_embedded(tree: Path) -> None:
    (tree / "nul.txt").write_bytes(b"abc\0def")
    assert build_prompt("@nul.txt", str(tree), [str(tree)], features(embed=True))[1]["type"] == L


@pytest.mark.parametrize(
    ("magic", "mime"),
    [(b"\xff\xd8\xff\xe0" + b"\0" * 12, "image/jpeg"), (b"GIF89a" + b"\0" * 10, "image/gif"), (b"RIFF\0\0\0\0WEBPVP8 ", "image/webp")],
)
def test_image_kinds(tree: Path, magic: bytes, mime: str) -> None:
    (tree / "img").write_bytes(magic)
    block = build_prompt("@img", str(tree), [str(tree)], features(image=True))[1]
    assert (block["type"], block["mimeType"]) == ("image", mime)


def test_mentions_are_resolved_against_cwd_and_deduplicated(tree: Path) -> None:
    text = "@a.txt, @./a.txt and @src/../a.txt; then @inlink/main.py @src/main.py @\"my dir/a b.txt\"."
    blocks = build_prompt(text, str(tree), [str(tree)], features())
    assert blocks[0]["text"] == text  # as typed
    assert [b["uri"] for b in blocks[1:]] == [
        uri(tree / "a.txt"),
        uri(tree / "src" / "main.py"),  # the resolved path, not the symlink's
        uri(tree / "my dir" / "a b.txt"),
    ]
    assert blocks[3]["uri"].endswith("/my%20dir/a%20b.txt")
    assert blocks[3]["name"] == "a b.txt"


def test_trailing_punctuation_that_is_part_of_a_name(tree: Path) -> None:
    blocks = build_prompt("see @notes.md.", str(tree), [str(tree)], features())
    assert blocks[1]["name"] == "notes.md."


def test_a_second_root_and_absolute_paths(tree: Path) -> None:
    outside = tree.parent / "outside"
    roots = [str(tree), str(outside)]
    blocks = build_prompt(f"@escape/secret.txt @{outside}/secret.txt", str(tree), roots, features())
    assert [b["uri"] for b in blocks[1:]] == [uri(outside / "secret.txt")]


def test_a_fifo_is_linked_not_opened(tree: Path) -> None:
    os.mkfifo(tree / "pipe")
    block = build_prompt("@pipe", str(tree), [str(tree)], features(True, True))[1]
    assert block == {"type": "resource_link", "uri": uri(tree / "pipe"), "name": "pipe"}


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_becomes_a_link(tree: Path) -> None:
    (tree / "a.txt").chmod(0)
    block = build_prompt("@a.txt", str(tree), [str(tree)], features(True, True))[1]
    assert block["type"] == L


# -- build_prompt: refusals ------------------------------------------------------------------


@pytest.mark.parametrize(
    "mention",
    ["@secret", "@escape/secret.txt", "@../outside/secret.txt", "@src/../../outside/secret.txt", "@{outside}/secret.txt", "@/etc"],
    ids=["file-symlink", "dir-symlink", "dotdot", "dotdot-inside", "absolute", "root"],
)
def test_escapes_are_usage_errors(tree: Path, mention: str) -> None:
    mention = mention.format(outside=tree.parent / "outside")
    with pytest.raises(UsageError) as info:
        build_prompt(f"look at {mention}", str(tree), [str(tree)], features(True, True))
    message = str(info.value)
    assert mention in message and str(tree) in message and "outside" in message
    assert "\n" not in message
    assert info.value.exit_code == ExitCode.USAGE


def test_symlink_escape_names_where_it_resolves(tree: Path) -> None:
    with pytest.raises(UsageError, match=r"resolves to .*outside/secret\.txt"):
        build_prompt("@secret", str(tree), [str(tree)], features())


@pytest.mark.parametrize("mention", ["@missing.txt", "@dangling", '@"no such/file"', "@src/nope.py."])
def test_missing_files_are_usage_errors(tree: Path, mention: str) -> None:
    with pytest.raises(UsageError, match="no such file or directory") as info:
        build_prompt(f"{mention} please", str(tree), [str(tree)], features())
    assert mention.rstrip(".") in str(info.value)
    assert "\n" not in str(info.value)


def test_one_bad_mention_fails_the_whole_prompt(tree: Path) -> None:
    with pytest.raises(UsageError, match="@missing"):
        build_prompt("@a.txt @missing", str(tree), [str(tree)], features())


# -- shapes against the generated models -----------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_blocks_match_the_models(tree: Path, version: int) -> None:
    text = '@a.txt @pic.png @blob.bin @docs @big.txt @"my dir/a b.txt"'
    for image in (False, True):
        for embed in (False, True):
            blocks = build_prompt(text, str(tree), [str(tree)], features(image, embed))
            params = wire.prompt_params("s1", blocks)
            model = parse_params(version, "session/prompt", params)
            assert dump(model) == params
            kinds = {
                "text": "TextContent",
                "image": "ImageContent",
                "resource": "EmbeddedResource",
                "resource_link": "ResourceLink",
            }
            assert [type(b).__name__ for b in model.prompt] == [kinds[b["type"]] for b in blocks]
            for parsed in model.prompt:
                if type(parsed).__name__ == "EmbeddedResource":
                    assert type(parsed.resource).__name__ == "TextResourceContents"


# -- import cost -----------------------------------------------------------------------------


def test_import_is_cheap(python_exe: str) -> None:
    probe = (
        "import json, sys, acpcli.services.mentions\n"
        "print(json.dumps([m for m in ('pydantic', 'rich', 'prompt_toolkit', 'anyio', 'acpcli.protocol.v1')"
        " if m in sys.modules]))"
    )
    out = subprocess.run([python_exe, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(out.stdout) == []


def test_not_strict_keeps_an_at_word_naming_nothing_as_text(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("x")
    text = "@dataclass\nclass A: see @real.txt"
    blocks = build_prompt(text, str(tmp_path), [str(tmp_path)], features(embed=True), strict=False)
    assert [b["type"] for b in blocks] == ["text", "resource"]  # only the file that exists
    with pytest.raises(UsageError, match="no such file"):
        build_prompt(text, str(tmp_path), [str(tmp_path)], features(embed=True))
    outside = tmp_path.parent / "outside-of-root.txt"
    outside.write_text("no")
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(UsageError, match="outside the session's directories"):  # still refused
        build_prompt(f"@{outside}", str(root), [str(root)], features(), strict=False)
    # naming nothing, wherever it points: text (a pasted `curl -d @/tmp/x.json`)
    for word in ("@/nonexistent/x.json", "@../nowhere.txt", "@~/no-such-file-here"):
        assert build_prompt(f"curl -d {word}", str(root), [str(root)], features(), strict=False) == [
            {"type": "text", "text": f"curl -d {word}"}
        ]

"""fs/read_text_file and fs/write_text_file: confinement to the root set, line/limit, atomic
writes; directly against ClientServices and end to end through an SDK-written agent."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from acpcli.errors import RpcError
from acpcli.services.files import confine
from acpcli.services.requests import ClientServices
from acpcli.wire.negotiate import ClientOffer
from tests.helpers.sdk_driver import drive


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """root/ (the cwd), extra/ (an additional root), outside/ (neither)."""
    root, extra, outside = tmp_path / "root", tmp_path / "extra", tmp_path / "outside"
    for d in (root, extra, outside):
        d.mkdir()
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    (extra / "x.txt").write_text("extra\n")
    (outside / "secret.txt").write_text("secret\n")
    return {"root": root, "extra": extra, "outside": outside, "tmp": tmp_path}


def services_for(tree: dict[str, Path], **kwargs: Any) -> ClientServices:
    roots = {"s1": (str(tree["root"]), [str(tree["extra"])])}
    return ClientServices(roots.get, **kwargs)


async def read(services: ClientServices, path: Any, **extra: Any) -> dict[str, Any]:
    return await services.read_text_file({"sessionId": "s1", "path": str(path), **extra})


async def write(services: ClientServices, path: Any, content: str) -> Any:
    return await services.write_text_file({"sessionId": "s1", "path": str(path), "content": content})


# -- confinement --------------------------------------------------------------------------------


def test_confine_accepts_paths_in_any_root_and_resolves_them(tree) -> None:
    roots = [str(tree["root"]), str(tree["extra"])]
    assert confine(str(tree["root"] / "a.txt"), roots) == str(tree["root"] / "a.txt")
    assert confine(str(tree["extra"] / "new" / "f"), roots) == str(tree["extra"] / "new" / "f")
    assert confine(str(tree["root"] / "sub" / ".." / "a.txt"), roots) == str(tree["root"] / "a.txt")
    assert confine(str(tree["root"]), roots) == str(tree["root"])


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda t: str(t["outside"] / "secret.txt"), id="absolute-outside"),
        pytest.param(lambda t: str(t["root"] / ".." / "outside" / "secret.txt"), id="dotdot"),
        pytest.param(lambda t: str(t["root"] / "nope" / ".." / ".." / "outside" / "x"), id="dotdot-via-missing"),
        pytest.param(lambda t: str(t["tmp"] / "root-evil" / "f"), id="sibling-with-root-prefix"),
        pytest.param(lambda t: "/", id="filesystem-root"),
    ],
)
def test_confine_refuses_escapes(tree, make) -> None:
    path = make(tree)
    with pytest.raises(RpcError) as err:
        confine(path, [str(tree["root"]), str(tree["extra"])])
    assert err.value.code == RpcError.INVALID_PARAMS
    assert path in err.value.rpc_message and str(tree["root"]) in err.value.rpc_message
    assert err.value.data["roots"] == [str(tree["root"]), str(tree["extra"])]


def test_confine_follows_symlinks_before_checking(tree) -> None:
    root = tree["root"]
    (root / "to-outside").symlink_to(tree["outside"])
    (root / "file-link").symlink_to(tree["outside"] / "secret.txt")
    (root / "dangling").symlink_to(tree["outside"] / "not-yet")
    (root / "to-extra").symlink_to(tree["extra"])
    roots = [str(root), str(tree["extra"])]
    for escape in ("to-outside/secret.txt", "file-link", "dangling", "to-outside/new/file"):
        with pytest.raises(RpcError) as err:
            confine(str(root / escape), roots)
        assert "resolves to" in err.value.rpc_message
    # A link from one root into another stays inside the set.
    assert confine(str(root / "to-extra" / "x.txt"), roots) == str(tree["extra"] / "x.txt")


def test_confine_accepts_roots_given_through_a_symlink(tree) -> None:
    alias = tree["tmp"] / "alias"
    alias.symlink_to(tree["root"])
    assert confine(str(alias / "a.txt"), [str(alias)]) == str(tree["root"] / "a.txt")
    assert confine(str(tree["root"] / "a.txt"), [str(alias)]) == str(tree["root"] / "a.txt")


def test_confine_refuses_relative_and_odd_paths(tree) -> None:
    roots = [str(tree["root"])]
    for bad in ("a.txt", "./a.txt", "", "../root/a.txt"):
        with pytest.raises(RpcError) as err:
            confine(bad, roots)
        assert err.value.code == RpcError.INVALID_PARAMS
    with pytest.raises(RpcError):
        confine(str(tree["root"] / "a\0b"), roots)


# -- reading ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_read_whole_file_and_line_limit(tree) -> None:
    services = services_for(tree)
    path = tree["root"] / "a.txt"
    assert await read(services, path) == {"content": "one\ntwo\nthree\n"}
    assert (await read(services, path, line=2))["content"] == "two\nthree\n"
    assert (await read(services, path, line=2, limit=1))["content"] == "two\n"
    assert (await read(services, path, limit=2))["content"] == "one\ntwo\n"
    assert (await read(services, path, line=0, limit=1))["content"] == "one\n"  # schema allows 0
    assert (await read(services, path, line=9))["content"] == ""
    assert (await read(services, path, limit=0))["content"] == ""
    assert (await read(services, tree["extra"] / "x.txt"))["content"] == "extra\n"


@pytest.mark.anyio
async def test_read_keeps_line_endings_and_multibyte_text(tree) -> None:
    services = services_for(tree)
    path = tree["root"] / "crlf.txt"
    path.write_bytes("héllo\r\nwörld\r\n€ last".encode())
    assert (await read(services, path))["content"] == "héllo\r\nwörld\r\n€ last"
    assert (await read(services, path, line=3))["content"] == "€ last"
    # \r, form feeds and U+2028 are not line ends: only \n is.
    odd = tree["root"] / "odd.txt"
    odd.write_text("a\rb\x0cc\u2028d\ne\n", newline="")
    assert (await read(services, odd, line=2))["content"] == "e\n"


@pytest.mark.anyio
async def test_missing_file_inside_roots_reads_empty_with_marker(tree) -> None:
    services = services_for(tree)
    answer = await read(services, tree["root"] / "new" / "file.py")
    assert answer == {"content": "", "_meta": {"acpcli": {"missing": True}}}
    # An empty file that exists carries no marker.
    (tree["root"] / "empty").write_text("")
    assert await read(services, tree["root"] / "empty") == {"content": ""}


@pytest.mark.anyio
async def test_missing_file_outside_roots_is_refused_not_reported_empty(tree) -> None:
    with pytest.raises(RpcError) as err:
        await read(services_for(tree), tree["outside"] / "nothing")
    assert err.value.code == RpcError.INVALID_PARAMS


@pytest.mark.anyio
async def test_read_refuses_binary_and_directories(tree) -> None:
    services = services_for(tree)
    blob = tree["root"] / "blob.bin"
    blob.write_bytes(b"ok\n\xff\xfe\x00")
    with pytest.raises(RpcError) as err:
        await read(services, blob)
    assert err.value.code == RpcError.INVALID_PARAMS and "not UTF-8" in err.value.rpc_message
    assert (await read(services, blob, limit=1))["content"] == "ok\n"  # the text part is readable
    with pytest.raises(RpcError) as err:
        await read(services, tree["root"])
    assert err.value.code == RpcError.INVALID_PARAMS


@pytest.mark.anyio
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
async def test_read_refuses_a_fifo_instead_of_hanging(tree) -> None:
    fifo = tree["root"] / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(RpcError) as err:
        await read(services_for(tree), fifo)
    assert err.value.code == RpcError.INVALID_PARAMS and "not a regular file" in err.value.rpc_message


@pytest.mark.anyio
async def test_unknown_session_and_malformed_params(tree) -> None:
    services = services_for(tree)
    with pytest.raises(RpcError) as err:
        await services.read_text_file({"sessionId": "nope", "path": str(tree["root"] / "a.txt")})
    assert err.value.code == RpcError.INVALID_PARAMS and "nope" in err.value.rpc_message
    with pytest.raises(RpcError) as err:
        await services.read_text_file({"sessionId": "s1"})
    assert err.value.code == RpcError.INVALID_PARAMS
    with pytest.raises(RpcError) as err:
        await services.write_text_file({"sessionId": "s1", "path": str(tree["root"] / "a.txt")})
    assert err.value.code == RpcError.INVALID_PARAMS


@pytest.mark.anyio
async def test_read_refuses_symlink_escape(tree) -> None:
    (tree["outside"] / "secret.txt").write_text("TOPSECRET")
    (tree["root"] / "leak").symlink_to(tree["outside"] / "secret.txt")
    with pytest.raises(RpcError) as err:
        await read(services_for(tree), tree["root"] / "leak")
    assert err.value.code == RpcError.INVALID_PARAMS
    assert "TOPSECRET" not in json.dumps(err.value.to_wire())


# -- writing ------------------------------------------------------------------------------------


def temp_leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith(".acpcli-tmp")]


@pytest.mark.anyio
async def test_write_creates_file_and_parents_inside_roots(tree) -> None:
    services = services_for(tree)
    target = tree["root"] / "deep" / "er" / "new.txt"
    assert await write(services, target, "héllo\n") == {}
    assert target.read_bytes() == "héllo\n".encode()
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert temp_leftovers(target.parent) == []


@pytest.mark.anyio
async def test_write_replaces_atomically_and_keeps_mode(tree) -> None:
    services = services_for(tree)
    target = tree["root"] / "script.sh"
    target.write_text("old\n")
    target.chmod(0o751)
    before = target.stat().st_ino
    with open(target) as held:  # a reader of the old file keeps seeing the old file
        await write(services, target, "new\n")
        assert held.read() == "old\n"
    assert target.read_text() == "new\n"
    assert target.stat().st_ino != before  # replaced by rename, not rewritten in place
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert temp_leftovers(tree["root"]) == []


@pytest.mark.anyio
async def test_failed_write_leaves_the_old_file_and_no_temp(tree, monkeypatch) -> None:
    services = services_for(tree)
    target = tree["root"] / "a.txt"

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(RpcError) as err:
        await write(services, target, "half written")
    assert err.value.code == RpcError.INTERNAL_ERROR and "No space left" in err.value.rpc_message
    assert target.read_text() == "one\ntwo\nthree\n"
    assert temp_leftovers(tree["root"]) == []


@pytest.mark.anyio
async def test_write_through_a_link_inside_the_roots_writes_the_target(tree) -> None:
    services = services_for(tree)
    (tree["root"] / "alias.txt").symlink_to(tree["root"] / "a.txt")
    await write(services, tree["root"] / "alias.txt", "via link\n")
    assert (tree["root"] / "a.txt").read_text() == "via link\n"
    assert (tree["root"] / "alias.txt").is_symlink()


@pytest.mark.anyio
async def test_write_refuses_escapes_and_creates_nothing_outside(tree) -> None:
    services = services_for(tree)
    root, outside = tree["root"], tree["outside"]
    (root / "dangling").symlink_to(outside / "planted.txt")
    (root / "dir-link").symlink_to(outside)
    attempts = [
        outside / "planted.txt",
        root / ".." / "outside" / "planted.txt",
        root / "dangling",
        root / "dir-link" / "sub" / "planted.txt",
    ]
    for path in attempts:
        with pytest.raises(RpcError) as err:
            await write(services, path, "pwned")
        assert err.value.code == RpcError.INVALID_PARAMS
    with pytest.raises(RpcError):
        await services.write_text_file({"sessionId": "s1", "path": "rel.txt", "content": "x"})
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert not (root / "rel.txt").exists()


@pytest.mark.anyio
async def test_write_refuses_directories_and_lone_surrogates(tree) -> None:
    services = services_for(tree)
    with pytest.raises(RpcError) as err:
        await write(services, tree["root"], "x")
    assert err.value.code == RpcError.INVALID_PARAMS
    with pytest.raises(RpcError) as err:
        await write(services, tree["root"] / "bad.txt", "a\ud800b")
    assert err.value.code == RpcError.INVALID_PARAMS
    assert not (tree["root"] / "bad.txt").exists()


# -- which methods are served -------------------------------------------------------------------


def test_handlers_hold_only_what_is_offered(tree) -> None:
    fs_methods = {"fs/read_text_file", "fs/write_text_file"}
    term_methods = {"terminal/create", "terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release"}
    assert set(services_for(tree).handlers()) == fs_methods | term_methods
    assert set(services_for(tree, fs=False).handlers()) == term_methods
    assert set(services_for(tree, terminal=False).handlers()) == fs_methods
    assert set(services_for(tree, fs_write=False, terminal=False).handlers()) == {"fs/read_text_file"}
    offer = ClientOffer(write_text_file=False, terminal=False)
    assert set(ClientServices.for_offer({}.get, offer).handlers()) == {"fs/read_text_file"}


@pytest.mark.anyio
async def test_restrict_to_a_v2_connection_answers_method_not_found(tree) -> None:
    from acpcli.wire.negotiate import AgentFeatures

    services = services_for(tree)
    handler = services.handlers()["fs/read_text_file"]
    services.restrict(AgentFeatures(protocol_version=2, reading="v2-draft"))
    with pytest.raises(RpcError) as err:
        await handler({"sessionId": "s1", "path": str(tree["root"] / "a.txt")})
    assert err.value.code == RpcError.METHOD_NOT_FOUND


# -- end to end, through an agent written with the official SDK ---------------------------------


@pytest.mark.anyio
async def test_sdk_agent_reads_and_writes_inside_the_root_set(tree) -> None:
    root, extra, outside = tree["root"], tree["extra"], tree["outside"]
    (root / "link-out").symlink_to(outside)
    async with drive(root, (extra,)) as agent:
        assert (await agent.ask(f"read {root}/a.txt"))["ok"] == {"content": "one\ntwo\nthree\n"}
        assert (await agent.ask(f"read {root}/a.txt 2 1"))["ok"] == {"content": "two\n"}
        assert (await agent.ask(f"read {extra}/x.txt"))["ok"] == {"content": "extra\n"}
        missing = await agent.ask(f"read {root}/new.py")
        assert missing["ok"]["content"] == "" and missing["ok"]["_meta"] == {"acpcli": {"missing": True}}

        assert "ok" in await agent.ask(f"write {extra}/made/here.txt multi\nline €")
        assert (extra / "made" / "here.txt").read_text() == "multi\nline €"

        refused = [
            f"read {outside}/secret.txt",
            f"read {root}/../outside/secret.txt",
            f"read {root}/link-out/secret.txt",
            "read a.txt",
            f"write {outside}/planted.txt x",
            f"write {root}/link-out/planted.txt x",
        ]
        for command in refused:
            error = (await agent.ask(command))["error"]
            assert error["code"] == RpcError.INVALID_PARAMS, (command, error)
        assert "outside the session's directories" in (await agent.ask(f"read {outside}/secret.txt"))["error"]["message"]
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


@pytest.mark.anyio
async def test_sdk_agent_gets_method_not_found_without_fs(tree) -> None:
    async with drive(tree["root"], fs=False) as agent:
        read_error = (await agent.ask(f"read {tree['root']}/a.txt"))["error"]
        write_error = (await agent.ask(f"write {tree['root']}/b.txt x"))["error"]
        assert read_error["code"] == write_error["code"] == RpcError.METHOD_NOT_FOUND
        # Terminals are still served.
        ran = (await agent.ask("run -- echo still here"))["ok"]
        assert ran["output"]["output"] == "still here\n"
    assert not (tree["root"] / "b.txt").exists()


@pytest.mark.anyio
async def test_sdk_agent_read_only_fs_refuses_writes_only(tree) -> None:
    async with drive(tree["root"], fs_write=False, terminal=False) as agent:
        assert (await agent.ask(f"read {tree['root']}/a.txt"))["ok"]["content"].startswith("one")
        assert (await agent.ask(f"write {tree['root']}/a.txt x"))["error"]["code"] == RpcError.METHOD_NOT_FOUND
        assert (await agent.ask("run -- true"))["error"]["code"] == RpcError.METHOD_NOT_FOUND
    assert (tree["root"] / "a.txt").read_text() == "one\ntwo\nthree\n"


def _lines_reference(data: bytes, line: int | None, limit: int | None) -> str:
    """What ``fs/read_text_file`` must answer, from the whole file: lines end at ``\\n`` (kept),
    ``line`` is 1-based (0 or absent: the first), ``limit`` lines at most."""
    pieces = data.split(b"\n")
    lines = [piece + b"\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
    start = max((line or 1) - 1, 0)
    return b"".join(lines[start : None if limit is None else start + limit]).decode()


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64])
def test_streamed_lines_match_the_whole_file_across_chunk_boundaries(tree, monkeypatch, chunk: int) -> None:
    import random

    from acpcli.services import files

    monkeypatch.setattr(files, "_READ_CHUNK", chunk)
    rnd = random.Random(chunk)
    path = tree["root"] / "lines.txt"
    for _ in range(200):
        data = bytes(rnd.choice(b"ab\n\n\r") for _ in range(rnd.randrange(0, 40)))
        path.write_bytes(data)
        line = rnd.choice([None, 0, 1, 2, 3, 5, 10, 50])
        limit = rnd.choice([None, 0, 1, 2, 3, 10])
        assert files.read_text(str(path), line, limit) == _lines_reference(data, line, limit), (data, line, limit)


def test_a_selection_over_the_cap_is_refused_after_reading_just_past_it(tree, monkeypatch) -> None:
    from acpcli.services import files

    monkeypatch.setattr(files, "MAX_READ_BYTES", 100)
    monkeypatch.setattr(files, "_READ_CHUNK", 16)
    path = tree["root"] / "long.txt"
    path.write_text("short\n" + "x" * 1000 + "\nafter\n")
    reads: list[int] = []
    real_pread = os.pread

    def counting_pread(fd: int, size: int, offset: int) -> bytes:
        reads.append(size)
        return real_pread(fd, size, offset)

    monkeypatch.setattr(files.os, "pread", counting_pread)
    assert files.read_text(str(path), 1, 1) == "short\n"
    assert files.read_text(str(path), 3, 1) == "after\n"
    reads.clear()
    with pytest.raises(RpcError) as err:
        files.read_text(str(path), 2, 1)
    assert err.value.code == RpcError.INVALID_PARAMS and "read it in parts" in err.value.rpc_message
    assert reads and sum(reads) <= 100 + 2 * 16  # stopped just past the cap, not at the end of the line

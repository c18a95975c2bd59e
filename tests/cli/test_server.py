"""`gradlint server` end to end: a real LSP client (pytest-lsp) drives the server over stdio."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types as lsp  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from support import BUGGY, FIXTURES, ROOT, UNSCALED  # noqa: E402

CLEAN = BUGGY.replace("    opt.step()\n", "    opt.step()\n    opt.zero_grad()\n")


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["GRADLINT_CACHE_DIR"] = str(cache)
    return env


CACHE = Path(tempfile.mkdtemp(prefix="gradlint-server-cache-"))


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "gradcheck_lint", "server"],
                                              server_env=_env(CACHE)))
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
        initialization_options={"debounce": 50},
    ))
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, path: Path, text: str, version: int = 1) -> list[lsp.Diagnostic]:
    uri = from_fs_path(str(path))
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
    await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return list(client.diagnostics[uri])


@pytest.mark.asyncio
async def test_diagnostics_code_actions_and_hover(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(BUGGY)
    found = await _open(client, path, BUGGY)
    assert [(d.code, d.range.start.line, d.range.start.character, d.source) for d in found] == [("GL001", 5, 4, "gradlint")]
    d = found[0]
    assert d.severity == lsp.DiagnosticSeverity.Error and "`opt.step()`" in d.message and "help:" in d.message
    assert d.code_description is not None and d.code_description.href.endswith("GL001-missing-zero-grad.md")

    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=from_fs_path(str(path))), range=d.range,
        context=lsp.CodeActionContext(diagnostics=[d])))
    assert actions is not None
    titles = [a.title for a in actions if isinstance(a, lsp.CodeAction)]
    fix = next(a for a in actions if isinstance(a, lsp.CodeAction) and a.kind == lsp.CodeActionKind.QuickFix and a.is_preferred)
    assert "GL001" in fix.title and "unsafe" not in fix.title
    assert fix.edit is not None and fix.edit.changes is not None
    [edit] = fix.edit.changes[from_fs_path(str(path))]
    assert edit.new_text.strip() == "opt.zero_grad()"
    assert any("suppress GL001" in t for t in titles)
    assert any(a.kind == "source.fixAll.gradlint" for a in actions if isinstance(a, lsp.CodeAction))

    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=from_fs_path(str(path))), position=lsp.Position(line=5, character=6)))
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    assert "**GL001**" in hover.contents.value and "missing-zero-grad" in hover.contents.value
    assert "GL001-missing-zero-grad.md" in hover.contents.value  # the link to the rule's document
    # The result went to the cache the command line reads: `gradlint train.py` run there is answered from it.
    cli = subprocess.run([sys.executable, "-m", "gradcheck_lint", "-v", "train.py"], capture_output=True, text=True,
                         cwd=tmp_path, env=_env(CACHE), timeout=120)
    assert cli.returncode == 1 and "1 answered from the cache" in cli.stderr, cli.stderr
    nothing = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=from_fs_path(str(path))), position=lsp.Position(line=0, character=0)))
    assert nothing is None


@pytest.mark.asyncio
async def test_changes_are_relinted_with_fixes_and_close_clears(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    uri = from_fs_path(str(path))
    assert [d.code for d in await _open(client, path, CLEAN)] == []
    # The buffer becomes a four-micro-batch window whose losses are not divided: GL003, once typing pauses.
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=UNSCALED)]))
    await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    [d] = client.diagnostics[uri]
    assert d.code == "GL003" and d.range.start.line == 4
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), range=d.range, context=lsp.CodeActionContext(diagnostics=[d])))
    fixes = [a for a in actions or [] if isinstance(a, lsp.CodeAction) and a.title.startswith("gradlint:") and "suppress" not in a.title
             and a.kind == lsp.CodeActionKind.QuickFix]
    assert fixes, [a.title for a in actions or []]
    assert all(a.edit is not None for a in fixes)
    # Saving lints again (the buffer is what was saved); a burst of changes is linted once typing pauses,
    # on the last text.
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert [d.code for d in client.diagnostics[uri]] == ["GL003"]
    for version, text in ((3, BUGGY), (4, UNSCALED), (5, CLEAN)):
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))
    await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []


@pytest.mark.asyncio
async def test_unsafe_fixes_are_offered_labelled_never_preferred(client: LanguageClient, tmp_path: Path) -> None:
    text = (FIXTURES / "unscaled_accumulated_loss" / "split_by_size_unscaled.py").read_text(encoding="utf-8")
    path = tmp_path / "split.py"
    [d] = [d for d in await _open(client, path, text) if d.code == "GL003"]
    assert "[unsafe fix available]" in d.message
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=from_fs_path(str(path))), range=d.range,
        context=lsp.CodeActionContext(diagnostics=[d])))
    [fix] = [a for a in actions or [] if isinstance(a, lsp.CodeAction) and "GL003" in a.title and "suppress" not in a.title]
    assert "(unsafe: review it)" in fix.title and not fix.is_preferred
    assert fix.edit is not None and fix.edit.changes is not None
    [edit] = fix.edit.changes[from_fs_path(str(path))]
    assert "/ len(batch.split(micro_size))" in edit.new_text
    # fix-all applies the safe fixes only: there is none here
    assert not [a for a in actions or [] if isinstance(a, lsp.CodeAction) and a.kind == "source.fixAll.gradlint"]


@pytest.mark.asyncio
async def test_project_configuration_is_honoured(client: LanguageClient, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.gradlint.per-file-ignores]\n"scripts/*.py" = ["GL001"]\n')
    (tmp_path / "scripts").mkdir()
    assert await _open(client, tmp_path / "scripts" / "train.py", BUGGY) == []
    assert [d.code for d in await _open(client, tmp_path / "train.py", BUGGY)] == ["GL001"]


@pytest.mark.asyncio
async def test_positions_are_in_the_clients_encoding(client: LanguageClient, tmp_path: Path) -> None:
    """VS Code counts UTF-16 code units: a character outside the BMP before the finding counts two."""
    prefix = '    s = "\U0001f600"; '
    found = await _open(client, tmp_path / "wide.py", BUGGY.replace("    opt.step()\n", prefix + "opt.step()\n"))
    [d] = [d for d in found if d.code == "GL001"]
    assert (d.range.start.line, d.range.start.character) == (5, len(prefix.encode("utf-16-le")) // 2)
    assert d.range.end.character == d.range.start.character + len("opt.step()")

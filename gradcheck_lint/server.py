"""`gradlint server`: a Language Server Protocol server over standard input and output (pygls).

What an editor gets:
- diagnostics when a Python file is opened, saved, or changed (changes are debounced: the buffer is
  linted once typing pauses for `debounce` milliseconds, 300 by default, an `initializationOptions` key);
- code actions: each diagnostic's fix, labelled safe or unsafe (an unsafe fix needs review: it is
  offered but never preferred), a line comment suppressing the finding, and `source.fixAll.gradlint`,
  which applies the safe fixes of the whole file as `gradlint --fix` would;
- hover on a finding: its rule's summary, the help line and a link to the rule's document.

Each document is linted under the `[tool.gradlint]` found for its path, with paths relative to that
configuration's directory (the project root), so per-file ignores and messages match `gradlint` run
from the root; results go through the same cache as the command line (`.gradlint_cache`, or
`$GRADLINT_CACHE_DIR`). Analyses run one at a time in a worker thread, so the server keeps answering
while a large file is analysed. Notebooks are not handled here (use `gradlint` on `.ipynb` files).
Needs the `server` extra: `pip install '.[server]'`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import ServerTextPosition, ServerTextRange, TextDocument

from . import __version__
from .add_noqa import directive_edits
from .buffers import lint_text
from .cache import ResultCache, default_cache_dir
from .config import ConfigError, Settings, load_settings
from .diagnostics import Applicability, Diagnostic, Edit, Severity
from .fixes import CodemodsUnavailable, fix_source, materialise
from .registry import PARSE_ERROR_SUMMARY, catalogue
from .render.location import relative_to
from .rule_docs import doc_path

SOURCE = "gradlint"
DEFAULT_DEBOUNCE_MS = 300
FIX_ALL_KIND = "source.fixAll.gradlint"
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Linted:
    """The last result of one document: the text and version it was computed on, and its findings."""

    version: int | None
    text: str
    path: str  # as the diagnostics name it (relative to the project root)
    settings: Settings
    diagnostics: tuple[Diagnostic, ...]


class GradlintServer(LanguageServer):
    """The language server, with its per-document state."""

    def __init__(self) -> None:
        super().__init__(name="gradlint", version=__version__)
        self.debounce = DEFAULT_DEBOUNCE_MS / 1000
        self.linted: dict[str, Linted] = {}
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.generation: dict[str, int] = {}
        self.lock = threading.Lock()  # one analysis at a time: it changes the working directory


server = GradlintServer()


def _settings_for(path: str) -> Settings:
    """The settings `gradlint` would use for `path` (its nearest `[tool.gradlint]`). Without a configuration
    file the project root is the workspace folder holding the file, else the file's directory."""
    settings = load_settings([path])
    if settings.config_file is not None:
        return settings
    folders = [to_fs_path(f.uri) for f in server.workspace.folders.values()] if server.protocol.workspace else []
    holding = [f for f in folders if f and relative_to(path, f) is not None]
    return replace(settings, root=max(holding, key=len) if holding else os.path.dirname(path))


def lint_document(uri: str, text: str, version: int | None) -> Linted:
    """Lint one buffer as the file its URI names; runs in the worker thread.

    Raises:
        ConfigError: the project's configuration is invalid.
    """
    absolute = to_fs_path(uri) or uri
    settings = _settings_for(absolute)
    shown = relative_to(absolute, settings.root) or absolute
    with _at_root(settings):
        found = lint_text(text, shown, settings, ResultCache(default_cache_dir(settings.root)))
    return Linted(version, text, shown, settings, tuple(found))


@contextlib.contextmanager
def _at_root(settings: Settings) -> Iterator[None]:
    """Analyse in the project root, one analysis at a time: patterns and paths then resolve as for
    `gradlint` run from the root."""
    with server.lock:
        previous = os.getcwd()
        os.chdir(settings.root)
        try:
            yield
        finally:
            os.chdir(previous)


def to_lsp(d: Diagnostic, document: TextDocument) -> lsp.Diagnostic:
    """The LSP form of a diagnostic (positions in the client's encoding)."""
    rng = document.range_to_client_units(ServerTextRange(
        start=ServerTextPosition(line=max(d.span.line - 1, 0), character=max(d.span.column - 1, 0)),
        end=ServerTextPosition(line=max(d.span.end_line - 1, 0), character=max(d.span.end_column - 1, 0)),
    ))
    doc = doc_path(d.code)
    fix = d.fix
    fixable = "" if fix is None else f" [{'fix' if fix.applicability is Applicability.SAFE else 'unsafe fix'} available]"
    return lsp.Diagnostic(
        range=rng,
        message=f"{d.message}{fixable}\nhelp: {d.help}",
        severity=lsp.DiagnosticSeverity.Error if d.severity is Severity.ERROR else lsp.DiagnosticSeverity.Warning,
        code=d.code,
        code_description=lsp.CodeDescription(href=from_fs_path(str(doc)) or "") if doc else None,
        source=SOURCE,
        tags=[lsp.DiagnosticTag.Unnecessary] if d.code == "GL100" else None,
        data={"name": d.name, "certainty": d.certainty.value},
    )


def _edit_to_lsp(edit: Edit, document: TextDocument) -> lsp.TextEdit:
    s = edit.span
    rng = document.range_to_client_units(ServerTextRange(
        start=ServerTextPosition(line=s.line - 1, character=s.column - 1),
        end=ServerTextPosition(line=s.end_line - 1, character=s.end_column - 1),
    ))
    return lsp.TextEdit(range=rng, new_text=edit.content)


async def _relint(ls: GradlintServer, uri: str, delay: float) -> None:
    """Lint the document after `delay` seconds unless a newer change comes first, then publish."""
    generation = ls.generation.get(uri, 0) + 1
    ls.generation[uri] = generation
    if delay:
        await asyncio.sleep(delay)
        if ls.generation.get(uri) != generation:
            return  # a later change supersedes this one
    try:
        document = ls.workspace.get_text_document(uri)
    except KeyError:
        return
    text, version = document.source, document.version
    try:
        linted = await asyncio.get_running_loop().run_in_executor(None, lint_document, uri, text, version)
    except ConfigError as exc:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"gradlint: {exc}"))
        return
    if ls.generation.get(uri) != generation or uri not in ls.workspace.text_documents:
        return
    ls.linted[uri] = linted
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
        uri=uri, version=version, diagnostics=[to_lsp(d, document) for d in linted.diagnostics]))


def _is_python(uri: str) -> bool:
    return uri.endswith((".py", ".pyi"))


@server.feature(lsp.INITIALIZE)
def initialize(ls: GradlintServer, params: lsp.InitializeParams) -> None:
    options = params.initialization_options
    if isinstance(options, dict) and isinstance(options.get("debounce"), (int, float)):
        ls.debounce = max(0.0, float(options["debounce"]) / 1000)


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: GradlintServer, params: lsp.DidOpenTextDocumentParams) -> None:
    if params.text_document.language_id == "python" or _is_python(params.text_document.uri):
        await _relint(ls, params.text_document.uri, 0)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: GradlintServer, params: lsp.DidChangeTextDocumentParams) -> None:
    if params.text_document.uri in ls.generation:
        await _relint(ls, params.text_document.uri, ls.debounce)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: GradlintServer, params: lsp.DidSaveTextDocumentParams) -> None:
    if params.text_document.uri in ls.generation:
        await _relint(ls, params.text_document.uri, 0)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: GradlintServer, params: lsp.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.generation.pop(uri, None)
    ls.linted.pop(uri, None)
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def _current(ls: GradlintServer, uri: str) -> tuple[Linted, TextDocument] | None:
    """The last result of a document, if it was computed on the text the editor holds now."""
    linted = ls.linted.get(uri)
    try:
        document = ls.workspace.get_text_document(uri)
    except KeyError:
        return None
    if linted is None or linted.text != document.source:
        return None
    return linted, document


def _overlaps(d: Diagnostic, rng: lsp.Range, document: TextDocument) -> bool:
    r = document.range_from_client_units(rng)
    start, end = (r.start.line + 1, r.start.character + 1), (r.end.line + 1, r.end.character + 1)
    return (d.span.line, d.span.column) <= end and start <= (d.span.end_line, d.span.end_column)


@server.feature(
    lsp.TEXT_DOCUMENT_CODE_ACTION,
    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=False),
)
async def code_action(ls: GradlintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    uri = params.text_document.uri
    state = _current(ls, uri)
    if state is None:
        return []
    linted, document = state
    wanted = params.context.only
    actions: list[lsp.CodeAction] = []
    if not wanted or any(k.startswith(lsp.CodeActionKind.QuickFix) for k in wanted):
        here = [d for d in linted.diagnostics if _overlaps(d, params.range, document)]
        if here:
            actions.extend(await asyncio.get_running_loop().run_in_executor(None, _quick_fixes, linted, here, document))
    if not wanted or any(FIX_ALL_KIND.startswith(k) for k in wanted):
        if any(d.fix is not None and d.fix.applies(False) for d in linted.diagnostics):
            fixed = await asyncio.get_running_loop().run_in_executor(None, _fix_all, linted)
            if fixed is not None and fixed != linted.text:
                lines = document.lines
                whole = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=len(lines), character=0))
                actions.append(lsp.CodeAction(
                    title="gradlint: fix all safe problems", kind=FIX_ALL_KIND,
                    edit=lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(range=whole, new_text=fixed)]})))
    return actions


def _quick_fixes(linted: Linted, here: list[Diagnostic], document: TextDocument) -> list[lsp.CodeAction]:
    """One action per fix that removes its finding, then one suppression comment per finding."""
    actions: list[lsp.CodeAction] = []
    with_fix = [d for d in here if d.fix is not None]
    if with_fix:
        verified = _verified(linted, with_fix)
        for d in verified:
            if d.fix is None or not d.fix.edits:
                continue
            safe = d.fix.applicability is Applicability.SAFE
            label = "" if safe else " (unsafe: review it)"
            actions.append(lsp.CodeAction(
                title=f"gradlint: {d.fix.description} ({d.code}){label}",
                kind=lsp.CodeActionKind.QuickFix,
                diagnostics=[to_lsp(d, document)],
                is_preferred=safe,
                edit=lsp.WorkspaceEdit(changes={document.uri: [_edit_to_lsp(e, document) for e in d.fix.edits]}),
            ))
    lines = linted.text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    normalised = "\n".join(lines)
    for d in here:
        if d.code in ("GL000", "GL100", "GL101") or d.cell is not None:
            continue
        edits = directive_edits(normalised, lines, d.line, [d.code])
        actions.append(lsp.CodeAction(
            title=f"gradlint: suppress {d.code} on line {d.line} (# gradlint: ignore[{d.code}])",
            kind=lsp.CodeActionKind.QuickFix,
            diagnostics=[to_lsp(d, document)],
            edit=lsp.WorkspaceEdit(changes={document.uri: [_edit_to_lsp(e, document) for e in edits]}),
        ))
    return actions


def _verified(linted: Linted, wanted: list[Diagnostic]) -> list[Diagnostic]:
    """`wanted` with their fixes' edits computed (codemods), less the fixes that would not remove their finding."""
    out = []
    for d in wanted:
        try:
            [d] = materialise(linted.text, [d], unsafe=True)
        except CodemodsUnavailable:
            continue
        if d.fix is None:
            continue
        unsafe = d.fix.applicability is Applicability.UNSAFE
        # The finding's code alone, the other findings of that code without their fixes: the trial applies
        # this fix only, and tells whether the finding is reported as often as before.
        others = [replace(o, fix=None) for o in linted.diagnostics if o.code == d.code and o != d]
        with _at_root(linted.settings):
            trial = fix_source(linted.text, linted.path, None, unsafe, _only(linted.settings, d), [d, *others])
        if trial.applied:
            out.append(d)
    return out


def _only(settings: Settings, d: Diagnostic) -> Settings:
    """Settings enabling the finding's code alone: a trial fix only needs to see that finding again."""
    return replace(settings, enabled=frozenset({d.code}))


def _fix_all(linted: Linted) -> str | None:
    with _at_root(linted.settings):
        result = fix_source(linted.text, linted.path, None, False, linted.settings, linted.diagnostics)
    return result.text if result.applied and result.error is None else None


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
def hover(ls: GradlintServer, params: lsp.HoverParams) -> lsp.Hover | None:
    state = _current(ls, params.text_document.uri)
    if state is None:
        return None
    linted, document = state
    point = lsp.Range(start=params.position, end=params.position)
    here = [d for d in linted.diagnostics if _overlaps(d, point, document)]
    if not here:
        return None
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="\n\n---\n\n".join(hover_text(d) for d in here)))


def hover_text(d: Diagnostic) -> str:
    """Markdown for one finding: code and name, the rule's summary, the help, a link to the rule's document."""
    rule = catalogue().get(d.code)
    summary = rule.summary if rule is not None else PARSE_ERROR_SUMMARY
    doc = doc_path(d.code)
    link = f"\n\n[{d.code}: {d.name}]({from_fs_path(str(doc))}) (rule document; also `gradlint rule {d.code}`)" if doc else ""
    certainty = "" if d.certainty.value == "certain" else " (possible: one fact was assumed)"
    return f"**{d.code}** `{d.name}`{certainty}\n\n{summary}\n\n*help:* {d.help}{link}"


def serve(args: Any = None) -> int:
    """Run the server on standard input and output until the client exits."""
    logging.basicConfig(level=logging.WARNING)
    server.start_io()
    return 0

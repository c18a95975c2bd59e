"""Pure analysis: source text in, diagnostics out. Parse once (CPython's parser), build the model once, run
the rules, apply suppressions."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import gc
import os
from collections.abc import Iterator
from dataclasses import dataclass

from .analysis import TrainingModel
from .analysis.apimodels import ModelFile, catalogue_for
from .analysis.flow import forget_transitions
from .analysis.gradstate import forget_canonical
from .analysis.provenance import Assumption, assumed, assumptions
from .analysis.saved_tensors import saved_table
from .analysis.syntax import forget_code
from .analysis.walk import forget_walks
from .config import Settings
from .diagnostics import NOTICE_CODE, NOTICE_NAME, Applicability, Diagnostic, RelatedLocation, Severity, Span
from .fixplan import resolve as resolve_fix
from .framestack import on_roomy_stack
from .prefilter import Text, clips_and_steps, keeps_in_hook, might_train, syncs_backward, trains_itself, triggers_for
from .project import Evidence, ProjectView, index_for
from .project.callers import settle_with_callers
from .project.index import ProjectIndex
from .project.launches import settle_one_process_launches
from .project.off_switches import settle_off_switches
from .project.reachability import settle_unreached
from .project.unimportable import ABSENT, MissingImport, missing_import
from .project.unset_defaults import settle_unset_defaults
from .registry import NOTICE_HELP, PARSE_ERROR_CODE, PARSE_ERROR_HELP, PARSE_ERROR_NAME, Rule, all_rules
from .sources import parse_python, universal_newlines
from .suppressions import UnusedSuppression, apply_suppressions

# Larger files (generated code, data dumps) are parsed for syntax only.
MAX_ANALYSED_CHARS = 3_000_000

__all__ = ["MAX_ANALYSED_CHARS", "FileReport", "analyse_text", "check_text", "might_train", "prepare", "screened",
           "syntax_problems", "unanalysable"]


def unanalysable(path: str, reason: str, line: int = 1, column: int = 1, help: str | None = None) -> Diagnostic:
    """The one GL000 diagnostic of a file that could not be analysed; it is never suppressed or deselected."""
    return Diagnostic(
        path=path,
        span=Span(line, column, line, column),
        code=PARSE_ERROR_CODE,
        name=PARSE_ERROR_NAME,
        message=f"{path} {reason}; it was not analysed.",
        help=help or PARSE_ERROR_HELP,
        severity=Severity.ERROR,
    )


@dataclass(frozen=True, slots=True)
class FileReport:
    """What the analysis of one file found, and whether that result may be cached."""

    diagnostics: list[Diagnostic]
    # False when the wall-clock budget cut the analysis short: a rerun on an idle machine may find more.
    reproducible: bool = True
    # the other files of the project the analysis read, with their contents' SHA-256: the result holds
    # while they are unchanged (the result cache checks them)
    dependencies: tuple[tuple[str, str], ...] = ()


def check_text(text: str, path: str, settings: Settings | None = None) -> list[Diagnostic]:
    """Analyse one file's source text under `settings` (default: built-in) and return its diagnostics, sorted; never raises."""
    return analyse_text(text, path, settings).diagnostics


def analyse_text(text: str, path: str, settings: Settings | None = None, *, prefilter: bool = True,
                 project: bool = True, callers: bool = True) -> FileReport:
    """`check_text` with the result's reproducibility; `prefilter=False` analyses even files the textual
    prefilter rules out (the prefilter's own tests use it); `project=False` reads the file alone, not
    following calls into the other files of its project; `callers=False` leaves out the settling of its
    findings with the files that call it (`project.callers`)."""
    settings = settings or Settings.default()
    report = _analyse(text, path, settings, prefilter, project)
    return _settled(report, text, path, settings, prefilter, project, callers)


def prepare(settings: Settings) -> None:
    """Build once what every file's analysis under `settings` reads (the API-model catalogue and its trigger
    words, the table of saved tensors): a process about to fork workers calls it first, so that they do not
    each build them again."""
    triggers_for(catalogue_for(settings.api_models()))
    saved_table()


def screened(text: str, path: str, settings: Settings) -> FileReport | None:
    """What `analyse_text` gives a file the textual prefilter rules out (it is not parsed); None for a
    file that needs the analysis. A process spreading files over others answers these itself."""
    report = _analyse(text, path, settings, True, True, screen=True)
    return None if report is _PASSES else _settled(report, text, path, settings, True, True, True)


def _settled(report: FileReport, text: str, path: str, settings: Settings, prefilter: bool, project: bool,
             callers: bool) -> FileReport:
    """The report with its findings settled by the files that call this one, where they can be."""
    index = index_for(path, settings.root, settings.trees) if project and callers else None
    if index is None:
        return report
    if any(_settled_by_callers(d) for d in report.diagnostics):
        chosen = settings
        # (a caller is read whole: one that trains nothing itself, and calls the training of a module it does not
        # import through one it does, `trainer = Factory.build(...); trainer.train()`, is what proves the finding)
        settled = settle_with_callers(report, text, path, index, settings,
                                      lambda t, p: analyse_text(t, p, chosen, prefilter=False, callers=False))
        if settled is not None:
            report = dataclasses.replace(report, diagnostics=settled[0], dependencies=settled[1])
    return _unreached_settled(report, text, path, index)


def _unreached_settled(report: FileReport, text: str, path: str, index: ProjectIndex) -> FileReport:
    """The report with its certain findings in code nothing in the project names made possible
    (`project.reachability`), those about windows no run of the project makes (`project.unset_defaults`), and those
    about several processes where every launch of the script the project writes starts one (`project.launches`), and
    those that hold only where a GradScaler scales when every scaler of the file is off on every run (`project.off_switches`)."""
    for settle in (settle_unreached, settle_unset_defaults, settle_off_switches, settle_one_process_launches):
        settled = settle(report.diagnostics, universal_newlines(text), index, os.path.abspath(path))
        if settled is None or settled[0] == report.diagnostics and not settled[1]:
            continue
        deps = dict(report.dependencies)
        deps.update(settled[1])
        deps.pop(os.path.abspath(path), None)
        report = dataclasses.replace(report, diagnostics=settled[0], dependencies=tuple(sorted(deps.items())))
    return report


def _settled_by_callers(d: Diagnostic) -> bool:
    """A finding of the analysis that rests on an assumption a caller may settle, or on another file's code."""
    return d.code not in (PARSE_ERROR_CODE, NOTICE_CODE, UnusedSuppression.code) and (d.possible or bool(d.related))


# What `_analyse` gives, when asked to screen, for a file the prefilter lets through.
_PASSES = FileReport([])


def _analyse(text: str, path: str, settings: Settings, prefilter: bool, project: bool,
             screen: bool = False) -> FileReport:
    """The file's report; with `screen`, `_PASSES` instead when the prefilter lets the file through."""
    enabled = settings.codes_for(path)
    text = universal_newlines(text)  # files are read so already; text given directly may not be
    catalogue = catalogue_for(settings.api_models())
    # what the prefilter reads: the file, and the project modules it imports (its training calls may sit there)
    seen_text: Text = text
    index = index_for(path, settings.root, settings.trees) if project else None
    read: dict[str, str] = {}  # the other files of the project read (with their SHA-256): the result depends on them
    if index is not None:
        index.recording = read
    if index is not None and prefilter and not trains_itself(text, catalogue):
        # the file's text and theirs, read as one text joined by line breaks (each module's answers kept)
        imported = index.imported_texts(path, text)
        seen_text = triggers_for(catalogue).joined([text, *(t for t, _ in imported)] if imported else [text, ""],
                                                   [None, *(m for _, m in imported)] if imported else [None, None])
    if prefilter and not might_train(seen_text, catalogue):
        # No rule can fire without a backward pass and a step: the file is not parsed, only its
        # suppression comments are read (a blanket one is still reported), unless it is generated-size.
        if len(text) > MAX_ANALYSED_CHARS:
            return FileReport([])
        return FileReport(_finish(apply_suppressions([], text, lambda: _statement_tree(text), path, enabled), enabled),
                          dependencies=tuple(sorted(read.items())))
    if screen:
        return _PASSES
    if len(text) > MAX_ANALYSED_CHARS:
        return FileReport([unanalysable(
            path, f"is too large to analyse ({len(text) / 1e6:.1f} MB; the limit is {MAX_ANALYSED_CHARS / 1e6:.0f} MB)",
            help="training scripts are far smaller: this is probably generated code; exclude it from the checked paths.",
        )])
    # CPython's own parser: it names syntax errors the way Python does, its nodes carry their positions,
    # and the same tree gives the statement ranges suppressions need.
    tree, problems = _parse_python(text, path)
    if tree is None:
        return FileReport(problems)
    missing = missing_import(tree, path, index) if index is not None else None
    if missing is not None:  # ImportError before any of its code is defined: nothing in it can run
        absent = tuple((c, ABSENT) for c in missing.candidates)  # re-checked once one of them appears
        return FileReport([cannot_import(path, missing)], dependencies=tuple(sorted(read.items())) + absent)
    # An unused suppression is judged against every analysis rule, selected or not.
    run_all = UnusedSuppression.code in enabled
    rules = [cls for code, cls in all_rules().items() if run_all or code in enabled]
    if not rules:
        return FileReport(_finish(apply_suppressions([], text, lambda: tree, path, enabled), enabled))
    try:
        # A file that only defines a framework's loss hook (`def compute_loss(`) has nothing else to check:
        # without a backward and a step of its own (or a clip and a step: GL007; a backward and a sync switch:
        # GL006; an automatic hook growing an attribute of its object: GL008) no other rule fires, so the
        # interpreter does not run.
        hooks_only = prefilter and not (trains_itself(seen_text, catalogue) or clips_and_steps(seen_text, catalogue)
                                        or syncs_backward(seen_text, catalogue) or keeps_in_hook(seen_text, catalogue))
        view = ProjectView(index, path, catalogue, read) if index is not None and not hooks_only else None
        out, cut_short = on_roomy_stack(_run_rules, tree, text, path, rules, settings.api_models(), hooks_only=hooks_only,
                                        project=view)
        out = apply_suppressions(out, text, lambda: tree, path, enabled)
    except RecursionError:
        return FileReport([unanalysable(path, "is nested too deeply to analyse (recursion limit)")])
    except Exception as exc:
        return FileReport([unanalysable(path, f"could not be analysed: internal error {type(exc).__name__}: {exc}",
                                        help="this is a bug in gradlint; please report it with the file. Other files were still checked.")])
    # the work budget is counted, so every result is reproducible; a file analysed in part says so
    notice = [budget_notice(path, cut_short)] if cut_short else []
    return FileReport(sorted(_finish(out, enabled) + notice, key=Diagnostic.sort_key), dependencies=tuple(sorted(read.items())))


def budget_notice(path: str, what: str) -> Diagnostic:
    """The GL099 notice of a file whose analysis stopped at the work budget or dropped paths at the cap
    on path states: what was left out."""
    return Diagnostic(
        path=path, span=Span(1, 1, 1, 1), code=NOTICE_CODE, name=NOTICE_NAME,
        message=f"{path} was analysed only in part: {what}.", help=NOTICE_HELP, severity=Severity.NOTE,
    )


def cannot_import(path: str, missing: MissingImport) -> Diagnostic:
    """The GL099 notice of a file that cannot be imported (`project.unimportable`): it was not checked."""
    line = missing.stmt.lineno
    return Diagnostic(
        path=path, span=Span(line, missing.stmt.col_offset + 1, line, missing.stmt.col_offset + 1), code=NOTICE_CODE,
        name=NOTICE_NAME, severity=Severity.NOTE,
        message=(f"{path} cannot be imported: line {line} imports `{missing.module}`, a module the project does not "
                 "hold (ImportError before any of its code runs), so its code was not checked."),
        help="restore that module or remove the stale file; if a build step makes the module, build it first.",
    )


def _finish(diagnostics: list[Diagnostic], enabled: frozenset[str]) -> list[Diagnostic]:
    return sorted({d for d in diagnostics if d.code in enabled}, key=Diagnostic.sort_key)


def _statement_tree(text: str) -> ast.Module | None:
    """CPython's tree, parsed only when a suppression comment needs statement ranges; None if invalid."""
    return _parse_python(text, "<suppressions>")[0]


def syntax_problems(text: str, path: str) -> list[Diagnostic]:
    """Parse with CPython's parser only; return one GL000 if the text is not valid Python."""
    return _parse_python(text, path)[1]


def _run_rules(module: ast.Module, text: str, path: str, rules: list[type[Rule]],
               models: tuple[ModelFile, ...] = (), *, hooks_only: bool = False,
               project: ProjectView | None = None) -> tuple[list[Diagnostic], str | None]:
    """Build the semantic model once and run `rules` over it; also say what the work budget and the cap
    on path states left out."""
    with _fewer_collections():
        # The model and the per-file memos are dropped before the collector's thresholds are restored: a
        # collection due then would otherwise scan all of them, still alive, and age them into the older
        # generations (a third of the collector's time on accelerate + timm), just before they are freed.
        try:
            return _model_findings(module, text, path, rules, models, hooks_only, project)
        finally:
            forget_code()
            forget_canonical()
            forget_transitions()
            forget_walks()


def _model_findings(module: ast.Module, text: str, path: str, rules: list[type[Rule]], models: tuple[ModelFile, ...],
                    hooks_only: bool, project: ProjectView | None) -> tuple[list[Diagnostic], str | None]:
    model = TrainingModel(module, text, models, hooks_only=hooks_only, project=project,
                          notebook=path.endswith(".ipynb"))
    left_out = "; ".join(what for what in (model.cut_short, model.paths_left_out) if what)
    return _findings(model, text, path, rules), left_out or None


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """The interpreter allocates path states by the hundred thousand and frees nearly all of them by
    reference counting (some 27,000 objects of minimind's train_ppo.py end in cycles): the cyclic
    collector's youngest generation, collected every 700 allocations by default, scans them mostly in
    vain (7-10 % of the time on a 3,000-line trainer). Collected every 50,000 here; restored after."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], 50_000), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _findings(model: TrainingModel, text: str, path: str, rules: list[type[Rule]]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for rule_cls in rules:
        for finding in rule_cls().check(model):
            if id(finding.node) in model.unreliable:
                continue  # at an event of a root the work budget cut short (see EntryPoints.root)
            anchor, evidence = model.anchor(finding.node, finding.via)
            if model.is_foreign(anchor):
                continue  # code of another file reached from nowhere in this one: reported with that file
            if model.purposes.measures(anchor) or model.purposes.drives(anchor) or model.purposes.tests(anchor, path):
                # a benchmark's loop, a test's calls in sequence, a test of a test module: that they train is an
                # assumption
                finding = dataclasses.replace(finding, facts=(*finding.facts, assumed(Assumption.INTENT)))
            out.append(
                Diagnostic(
                    path=path,
                    span=model.span(anchor),
                    code=rule_cls.code,
                    name=rule_cls.name,
                    message=finding.message + _evidence_note(evidence, path, anchor, text),
                    related=tuple(RelatedLocation(e.path, Span(e.line, e.column, e.end_line, e.end_column), f"`{e.text}`")
                                  for e in evidence),
                    help=finding.help,
                    severity=rule_cls.severity,
                    certainty=finding.certainty,
                    assumptions=tuple(a.value for a in assumptions(finding.facts)),
                    fix=resolve_fix(model, text, finding.fix, finding.certainty),
                )
            )
    return _one_per_place(out)


def _evidence_note(evidence: tuple[Evidence, ...], path: str, anchor: ast.AST | None = None, text: str = "") -> str:
    """The sentence naming where in other files a finding's evidence is (`losses.py:42`), and the code of this file
    that reached it (the call the finding is reported at)."""
    if not evidence:
        return ""
    places = [f"`{e.text}` at {e.shown}:{e.line}" for e in evidence]
    segment = ast.get_source_segment(text, anchor) if anchor is not None and text and not path.endswith(".ipynb") \
        else None
    here = " ".join(segment.split())[:80] if segment and isinstance(anchor, ast.Call) else ""
    reached = f", reached by `{here}` here" if here else ""
    return f" (In another file of the project: {', called from '.join(places)}{reached}.)"


def _one_per_place(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """One diagnostic per code and place. A statement reached in two contexts (a helper called twice,
    a step inlined into each branch of a dispatch) can be found twice, worded for each context: one
    line is kept, the most certain (the first of equals), since a user reads one finding there. If the
    contexts disagree on a fix, the fix is only as safe as the least safe of them (a safe fix must be
    right in every context)."""
    kept: dict[tuple[object, ...], Diagnostic] = {}
    for d in diagnostics:
        key = (d.code, d.span)
        first = kept.get(key)
        if first is None:
            kept[key] = d
            continue
        lead, other = (d, first) if first.possible and not d.possible else (first, d)
        if lead.fix is None or other.fix == lead.fix:
            kept[key] = lead
        elif other.fix is None:
            kept[key] = dataclasses.replace(lead, fix=None)
        else:
            kept[key] = dataclasses.replace(lead, fix=dataclasses.replace(lead.fix, applicability=Applicability.UNSAFE))
    return list(kept.values())


def _parse_python(text: str, path: str) -> tuple[ast.Module | None, list[Diagnostic]]:
    """Parse with CPython: the tree (statement ranges for suppressions), or a GL000 diagnostic."""
    try:
        return parse_python(text), []
    except SyntaxError as exc:
        return None, [unanalysable(path, f"has a syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1)]
    except (RecursionError, MemoryError):
        return None, [unanalysable(path, "is nested too deeply to parse (recursion limit)")]
    except ValueError as exc:
        return None, [unanalysable(path, f"could not be parsed ({exc})")]

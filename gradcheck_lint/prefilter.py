"""The cheap textual test run before any parsing (the flake8 plugin relies on it too).

Every rule reports at an optimizer step and about gradients a backward pass wrote, so a file the
analysis can flag calls both. Which calls those are is the catalogue's knowledge (`analysis.apimodels`):
each row whose effects include a backward pass or a step gives its name as a *trigger word*, spelt
right before the call's `(`:

- a backward pass: `loss.backward()`, `accelerator.backward(loss)`, `scaler.scale(loss).backward()`,
  `self.manual_backward(loss)`, `optim_wrapper.update_params(loss)`, a name bound by importing one
  (`from torch.autograd import backward as bw`: then the import names it), or an object whose calling
  is one (`loss_scaler(loss, optimizer)`: the name the catalogue's heuristic recognises);
- a step: `opt.step()`, `scaler.step(opt)`, `xm.optimizer_step(opt)`, `update_params(...)`, ...

A file that defines a loss hook the catalogue models with a `normaliser` (`def compute_loss(`: the
framework backpropagates and steps on what it returns) passes too: its backward and step are the framework's;
so does one that defines a hook whose returned loss the framework divides by its window (`def training_step(`,
`divides_returned`) and names accumulation (GL010: the hook divides it too), and one that defines a hook the
framework steps after (`optimization = "automatic"`) and grows an attribute of its object (`self.outputs.append(`:
GL008, the framework calls the hook once per batch and backpropagates what it returns).
So does a file that clips gradients and steps (`clip_grad_norm_(...)` then `scaler.step(opt)`): GL007 flags a
clip of gradients a GradScaler then steps on, whichever file ran their backward. And a file that calls a
backward and switches a data-parallel wrapper's sync (`with model.no_sync(): loss.backward()`): GL006 flags a
switch made only after the forward pass, whichever file steps.

Spaces, line continuations and closing parentheses may stand between the word and the call's `(`
(`(loss.backward)()`), as the parser allows. A file with no such call of either kind is never parsed.
`tests/test_prefilter.py` proves on every fixture, every rule example, generated training programs
and mutants of them that no file the analysis flags is dropped.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .analysis.apimodels import Catalogue, catalogue_for
from .sources import at_line_starts

# An attribute of the object grown in place: `self.outputs.append(`, `self.history["loss"].extend(`, `self.total +=`.
_SELF_STORE = re.compile(r"\bself\.\w+(?:\.\w+|\[[^\]\n]*\])*[ \t]*(?:\+=|\.(?:append|extend|insert)[ \t]*\()")

# The words every catalogue has: torch's own backward and step.
REQUIRED_WORDS = ("backward", "step")
_CALL = r"[\s\\)]*\("


@dataclass(frozen=True)
class Triggers:
    """The words whose call marks a backward pass and a step, for one catalogue."""

    backward_words: tuple[str, ...]
    step_words: tuple[str, ...]
    backward: re.Pattern[str]  # the words before a call's `(`, found at a word's start by `_at_word_start`
    step: re.Pattern[str]
    backward_imports: LineStart  # `from torch.autograd import backward as bw`
    backward_patterns: re.Pattern[str] | None  # objects whose call is a backward pass, by name
    step_patterns: re.Pattern[str] | None
    loss_hooks: re.Pattern[str] | None = None  # `def compute_loss(`: a hook whose loss the framework trains on
    clip_words: tuple[str, ...] = ()
    clip: re.Pattern[str] | None = None  # a clip that does not unscale (`clip_grad_norm_(`)

    sync_words: tuple[str, ...] = ()  # calls and attributes that switch a data-parallel wrapper's gradient sync
    divided_hooks: re.Pattern[str] | None = None  # `def training_step(`: a hook whose loss the framework divides
    automatic_hooks: re.Pattern[str] | None = None  # `def training_step(`: a hook the framework steps and clears after

    # Whether a heuristic pattern may match across a line break (then a `Joined` text is read joined).
    multiline: bool = True
    # `backward_patterns` and `step_patterns` one alternative each: searched apart, a pattern with a literal
    # start is found by the engine's fast scan instead of being tried at every position with the others
    backward_alternatives: tuple[Searched, ...] = ()
    step_alternatives: tuple[Searched, ...] = ()

    def might_train(self, text: Text) -> bool:
        return (self.trains_itself(text) or self.defines_loss_hook(text) or self.clips_and_steps(text)
                or self.syncs_backward(text) or self.keeps_in_hook(text))

    def syncs_backward(self, text: Text) -> bool:
        """The file switches gradient sync and calls a backward pass (GL006: sync switched off only after the
        forward), with the step elsewhere (a trainer's base class)."""
        return any(_contains(text, w) for w in self.sync_words) and self._has(
            text, self.backward_words, self.backward, self.backward_alternatives, self.backward_imports)

    def clips_and_steps(self, text: Text) -> bool:
        """The file clips gradients and steps, with the backward elsewhere (a step helper handed the scaler)."""
        return self.clip is not None and any(_contains(text, w) for w in self.clip_words) \
            and _word_start(self.clip, text) and self._has(text, self.step_words, self.step, self.step_alternatives)

    def trains_itself(self, text: Text) -> bool:
        """The file calls a backward pass and a step of its own."""
        return self._has(text, self.backward_words, self.backward, self.backward_alternatives, self.backward_imports) \
            and self._has(text, self.step_words, self.step, self.step_alternatives)

    def defines_loss_hook(self, text: Text) -> bool:
        if not _contains(text, "def"):
            return False
        if self.loss_hooks is not None and _word_start(self.loss_hooks, text):
            return True
        # a hook whose returned loss the framework divides by its window, in a file that names accumulation
        if self.divided_hooks is not None and _contains(text, "accum") and _word_start(self.divided_hooks, text):
            return True
        # an automatic hook that clears (GL002: the framework clears only after its window's step)
        return self.automatic_hooks is not None and _contains(text, "zero_grad") \
            and _word_start(self.automatic_hooks, text)

    def keeps_in_hook(self, text: Text) -> bool:
        """The file defines a hook the framework calls once per batch and steps after, and grows an attribute
        of its object (GL008: `self.outputs.append(loss)` in `training_step` outlives the framework's calls)."""
        # the hook's `def` first: a literal the regex engine skips ahead to, where `_SELF_STORE` is tried at
        # every `self.` of every file (a quarter of the prefilter's time on accelerate + timm)
        return self.automatic_hooks is not None and _contains(text, "self.") \
            and _word_start(self.automatic_hooks, text) and _found(_SELF_STORE, text)

    def joined(self, parts: Sequence[str], memos: Sequence[dict[object, bool] | None]) -> Text:
        """`"\\n".join(parts)` as the prefilter reads it: each part asked alone (its answers kept in its memo,
        when it has one) where no match can cross from one part into the next; else the joined text."""
        if self.multiline or not _separable(parts, memos):
            return "\n".join(parts)
        return Joined(tuple(parts), tuple(memos))

    @staticmethod
    def _has(text: Text, words: tuple[str, ...], exact: re.Pattern[str], patterns: tuple[Searched, ...],
             imports: LineStart | None = None) -> bool:
        # The plain substring tests first: most files fail them, and they are faster than any regex.
        if any(_contains(text, w) for w in words) and (
                _word_start(exact, text) or imports is not None and _found(imports, text)):
            return True
        return any(_found(p, text) for p in patterns)


@dataclass(frozen=True, slots=True)
class Joined:
    """Texts the prefilter reads as if joined by line breaks (a file and the project modules it imports),
    asked part by part: every test here is whether something occurs, so the joined text has it when a part
    has it, as long as no match spans a line break between parts (`Triggers.joined` checks that). A part's
    answers are kept in its memo (None: not kept), so a module many files import is searched once."""

    parts: tuple[str, ...]
    memos: tuple[dict[object, bool] | None, ...]

    def any(self, key: object, test: Callable[[str], bool]) -> bool:
        for part, memo in zip(self.parts, self.memos):
            kept = memo.get(key) if memo is not None else None
            if kept is None:
                kept = test(part)
                if memo is not None:
                    memo[key] = kept
            if kept:
                return True
        return False


Text = str | Joined


@dataclass(frozen=True)
class LineStart:
    """`^[ \\t]*` + `pattern` under `re.MULTILINE`, searched as `pattern` (which starts with a literal) and each
    match start checked to stand after blanks alone on its line (`sources.at_line_starts`): the same matches,
    but the regex engine skips ahead to the literal instead of trying the pattern at every line start. The
    import pattern on every file of accelerate + timm (7 MB): 0.069 -> 0.015 s of CPU (2026-12-01)."""

    pattern: re.Pattern[str]

    def search(self, text: str) -> re.Match[str] | None:
        # every start where `pattern` matches, an overlapping one too: an import's parentheses span lines
        return next(at_line_starts(self.pattern, text, every=True), None)


# The letters and digits whose case-blind match in a regex is only themselves and characters that `str.lower`
# turns into them (`K`, the Kelvin sign, is a `k`): not `i` (it also matches the dotless `ı`) nor `s` (the long
# `ſ`). A run of them in a case-blind pattern is found in the lowered text wherever the pattern matches.
_CASE_SAFE = frozenset("abcdefghjklmnopqrtuvwxyzABCDEFGHJKLMNOPQRTUVWXYZ0123456789_")


@dataclass(frozen=True)
class Gated:
    """A case-blind pattern searched only in a text whose lowered form holds `needle`, a run of letters every
    match holds (in any case): Python's regex engine has no fast scan for a case-blind start, and tries it at
    every position. `(?i:loss_?scaler)` on every file of accelerate + timm (7 MB): 0.074 -> 0.022 s of CPU
    (2026-12-01)."""

    pattern: re.Pattern[str]
    needle: str

    def search(self, text: str) -> re.Match[str] | None:
        return self.pattern.search(text) if self.needle in text.lower() else None


Searched = re.Pattern[str] | Gated


def _case_blind_needle(heuristic: re.Pattern[str]) -> str | None:
    """For a case-blind heuristic made of word characters and `?`, `*`, `+` only (`loss_?scaler`): its longest
    run of `_CASE_SAFE` characters that every match spells out, lowered (`caler`); None for any other."""
    text = re.sub(r"^\(\?[a-zA-Z]+\)", "", heuristic.pattern).removeprefix("^").removesuffix("$")
    if not heuristic.flags & re.IGNORECASE or not re.fullmatch(r"(?:\w[?*+]?)+", text):
        return None
    runs, run = [], ""
    for char, quantifier in re.findall(r"(\w)([?*+]?)", text):
        if quantifier in ("?", "*") or char not in _CASE_SAFE:
            runs.append(run)
            run = ""
        elif quantifier == "+":  # once at least: it ends the run that holds it
            runs.append(run + char)
            run = ""
        else:
            run += char
    needle = max([*runs, run], key=len)
    return needle.lower() or None


def _contains(text: Text, word: str) -> bool:
    if isinstance(text, str):
        return word in text
    return text.any(word, lambda part: word in part)


def _word_start(pattern: re.Pattern[str], text: Text) -> bool:
    if isinstance(text, str):
        return _at_word_start(pattern, text)
    return text.any(("word", pattern), lambda part: _at_word_start(pattern, part))


def _found(pattern: Searched | LineStart, text: Text) -> bool:
    if isinstance(text, str):
        return pattern.search(text) is not None
    return text.any(("search", pattern), lambda part: pattern.search(part) is not None)


# What may stand between a trigger word and its call's `(`: the only pattern part that crosses a line break
# besides an import's open parenthesis and a backslash continuation.
_BETWEEN = re.compile(r"[\s\\)]*")


def _separable(parts: Sequence[str], memos: Sequence[dict[object, bool] | None]) -> bool:
    """No match of the trigger patterns can span the line break between two parts: no part but the first
    starts (after blanks, backslashes and closing parentheses) with the `(` a trigger word's call would
    take from the part before; and no part but the last ends in a backslash continuation or leaves a
    parenthesis open (`from x import (` reaching into the next part)."""
    last = len(parts) - 1
    for i, (part, memo) in enumerate(zip(parts, memos)):
        if i > 0 and _opens_with_call(part, memo):
            return False
        if i < last and _left_open(part, memo):
            return False
    return True


def _opens_with_call(part: str, memo: dict[object, bool] | None) -> bool:
    found = memo.get("opens with (") if memo is not None else None
    if found is None:
        end = _BETWEEN.match(part).end()  # type: ignore[union-attr]  # it matches the empty string
        found = end < len(part) and part[end] == "("
        if memo is not None:
            memo["opens with ("] = found
    return found


def _left_open(part: str, memo: dict[object, bool] | None) -> bool:
    found = memo.get("left open") if memo is not None else None
    if found is None:
        found = part.endswith("\\") or part.rfind("(") > part.rfind(")")
        if memo is not None:
            memo["left open"] = found
    return found


def _at_word_start(pattern: re.Pattern[str], text: str) -> bool:
    """`pattern` (which starts with a word character) matches somewhere at the start of a word: the
    same as searching `\\b` + pattern, but a pattern that starts with a literal lets the regex engine
    skip ahead to it, several times faster on files that do not match."""
    for m in pattern.finditer(text):
        start = m.start()
        if start == 0:
            return True
        before = text[start - 1]
        if not (before.isalnum() or before == "_"):
            return True
    return False


@functools.lru_cache(maxsize=8)
def triggers_for(catalogue: Catalogue) -> Triggers:
    """The trigger words of a catalogue: names of the calls modelled as a backward pass or a step."""
    words: dict[str, set[str]] = {"backward": set(REQUIRED_WORDS[:1]), "step": set(REQUIRED_WORDS[1:]), "clip": set(), "sync": set()}
    called: dict[str, set[str]] = {"backward": set(), "step": set(), "clip": set(), "sync": set()}  # types whose objects are called
    for f in catalogue.files:
        rows = [(c.name, "", c.effects) for c in f.calls] + [(m.name, m.type, m.effects) for m in f.methods]
        for name, owner, effects in rows:
            last = name.rsplit(".", 1)[-1]
            for effect in effects:
                kind = "backward" if effect.kind == "schedule" else effect.kind  # a schedule backpropagates
                if kind not in words or kind == "clip" and effect.value("unscales"):
                    continue
                if last == "__call__":
                    called[kind].add(catalogue.canonical(owner))
                elif "*" not in last:
                    words[kind].add(last)
    patterns: dict[str, list[str]] = {"backward": [], "step": [], "clip": [], "sync": []}
    needles: dict[str, str | None] = {}  # a fragment's `_case_blind_needle`
    # attributes that switch sync when set (`model.require_backward_grad_sync = last`): found as plain words
    sync_attributes = {a.name for f in catalogue.files for a in f.attributes if any(e.kind == "sync" for e in a.effects)}
    for f in catalogue.files:
        for h in f.heuristics:
            for kind, types in called.items():
                if h.target == "receiver" and catalogue.canonical(h.type) in types:
                    patterns[kind].append(_scoped(h.pattern))
                    needles[_scoped(h.pattern)] = _case_blind_needle(h.pattern)
            # a function known by its name alone that backpropagates (a schedule handed in: `forward_backward_func`)
            if h.target == "callee" and any(e.kind in ("backward", "schedule") for e in h.effects):
                patterns["backward"].append(_scoped(h.pattern))
                needles[_scoped(h.pattern)] = _case_blind_needle(h.pattern)

    def alternatives(kind: str) -> str:
        return "|".join(sorted(map(re.escape, words[kind])))

    def exact(kind: str) -> re.Pattern[str]:
        return re.compile(rf"(?:{alternatives(kind)}){_CALL}")  # at a word's start: see `_at_word_start`

    # or an import naming a backward pass: `from torch.autograd import (grad, backward as bw)`, at a line's start
    imports = re.compile(rf"from[ \t]+[\w.]+[ \t]+import[ \t]*(?:\([^)]*|(?:[^\n]|\\\n)*)\b(?:{alternatives('backward')})\b")

    def named(kind: str) -> re.Pattern[str] | None:
        return re.compile("|".join(f"(?:{p}){_CALL}" for p in patterns[kind])) if patterns[kind] else None

    def apart(kind: str) -> tuple[Searched, ...]:
        """`named(kind)`'s alternatives, each alone: one of them matches exactly where the whole does (a
        case-blind one only in a text holding its needle)."""
        return tuple(_gated(re.compile(f"(?:{p}){_CALL}"), needles.get(p)) for p in patterns[kind])

    def defining(methods: set[str]) -> re.Pattern[str] | None:
        """`def name(` of any of these methods."""
        return re.compile(rf"def[ \t]+(?:{'|'.join(map(re.escape, sorted(methods)))})[ \t]*\(") if methods else None

    loss_hooks = defining({h.method for h in catalogue.hooks() if h.normaliser})
    divided_hooks = defining({h.method for h in catalogue.hooks() if h.divides_returned})
    automatic_hooks = defining({h.method for h in catalogue.hooks() if h.optimization == "automatic"})
    every_word = [w for kind in words.values() for w in kind] + sorted(sync_attributes)
    multiline = any(not _one_line(p) for kind in ("backward", "step") for p in patterns[kind]) or any(
        not re.fullmatch(r"\w+", w) for w in every_word)
    return Triggers(tuple(sorted(words["backward"])), tuple(sorted(words["step"])), exact("backward"), exact("step"),
                    LineStart(imports), named("backward"), named("step"), loss_hooks, tuple(sorted(words["clip"])),
                    exact("clip") if words["clip"] else None, tuple(sorted(words["sync"] | sync_attributes)), divided_hooks,
                    automatic_hooks, multiline, apart("backward"), apart("step"))


def _gated(pattern: re.Pattern[str], needle: str | None) -> Searched:
    return pattern if needle is None else Gated(pattern, needle)


def _one_line(fragment: str) -> bool:
    """A heuristic's pattern (as `_scoped` makes it) that matches within one line: names, optional
    letters, alternatives and groups only (`(?i:loss_?scaler)`), nothing that could match a line break."""
    rest = fragment.replace(r"\b\w*", "").replace("(?i:", "(").replace("(?:", "(")
    return re.fullmatch(r"[\w?|()*+]*", rest) is not None


def _scoped(pattern: re.Pattern[str]) -> str:
    """A receiver heuristic's pattern as a fragment matching the called name (`(?i)loss_?scaler$`)."""
    text = pattern.pattern.rstrip("$")
    text = text[1:] if text.startswith("^") else text
    flags = "i" if pattern.flags & re.IGNORECASE else ""
    text = re.sub(r"^\(\?[a-zA-Z]+\)", "", text)
    # `\b\w*` before a pattern that starts with a word character matches wherever the pattern does:
    # left out, the engine can skip ahead to the pattern's literal start
    prefix = "" if re.match(r"\w", text) else r"\b\w*"
    return rf"(?{flags}:{prefix}{text})" if flags else rf"{prefix}{text}"


def might_train(text: Text, catalogue: Catalogue | None = None) -> bool:
    """Cheap textual test: can this file contain a training step at all?"""
    return triggers_for(catalogue or catalogue_for()).might_train(text)


def trains_itself(text: Text, catalogue: Catalogue | None = None) -> bool:
    """Does the file call a backward pass and a step itself (not only define a framework's loss hook)?"""
    return triggers_for(catalogue or catalogue_for()).trains_itself(text)


def syncs_backward(text: Text, catalogue: Catalogue | None = None) -> bool:
    """Does the file switch gradient sync and call a backward pass (its step elsewhere)?"""
    return triggers_for(catalogue or catalogue_for()).syncs_backward(text)


def keeps_in_hook(text: Text, catalogue: Catalogue | None = None) -> bool:
    """Does the file grow an attribute of its object in a file defining a framework's automatic hook?"""
    return triggers_for(catalogue or catalogue_for()).keeps_in_hook(text)


def clips_and_steps(text: Text, catalogue: Catalogue | None = None) -> bool:
    """Does the file clip gradients and step (its backward elsewhere)?"""
    return triggers_for(catalogue or catalogue_for()).clips_and_steps(text)

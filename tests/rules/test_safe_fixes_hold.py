"""A safe fix is never wrong: applied alone, its result parses, its finding is gone, and gradlint reports
nothing new on it; a rewrite that could fail on some branch, or undo another fix, is not safe."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint import fixes
from gradcheck_lint.api import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.diagnostics import Applicability, Diagnostic, Span
from gradcheck_lint.fixcheck import check_safe_fixes
from gradcheck_lint.registry import all_rules
from support import load_fixtures

ALL = Settings.default().with_enabled(all_rules())


def test_every_safe_fix_of_the_fixtures_holds() -> None:
    checked, broken = 0, []
    for fixture in load_fixtures():
        for outcome in check_safe_fixes(fixture.path.read_text(encoding="utf-8"), str(fixture.path), ALL):
            checked += 1
            if not outcome.ok:
                broken.append((fixture.id, outcome.diagnostic.line, outcome.diagnostic.code, outcome.parses, outcome.resolved,
                               [(d.code, d.message) for d in outcome.new]))
    assert checked > 30  # the fixtures do offer safe fixes
    assert broken == []


# A GAN whose `opt_D.zero_grad()` sits between `d_loss.backward()` and `opt_D.step()`: it drops D's own
# gradients (GL002), and also those `g_loss.backward()` wrote into D. Moving it after the step lets the
# latter into `opt_D.step()` (GL005 on the fixed code): the move is no safe fix.
GAN = """
import torch
from torch import nn
G, D = nn.Linear(2, 4), nn.Linear(4, 1)
opt_G = torch.optim.Adam(G.parameters())
opt_D = torch.optim.Adam(D.parameters())
bce = nn.BCEWithLogitsLoss()
for real in torch.randn(8, 4, 4):
    fake = G(torch.randn(4, 2))
    opt_G.zero_grad()
    g_loss = bce(D(fake), torch.ones(4, 1))
    g_loss.backward()
    opt_G.step()
    d_loss = bce(D(real), torch.ones(4, 1)) + bce(D(fake.detach()), torch.zeros(4, 1))
    d_loss.backward()
    opt_D.zero_grad()
    opt_D.step()
"""


def test_gan_clear_move_is_unsafe_and_names_the_own_loss() -> None:
    found = [d for d in check_source(GAN, "gan.py", settings=ALL) if d.code == "GL002"]
    assert len(found) == 1
    assert "`d_loss.backward()` at line 15" in found[0].message  # not g_loss, which opt_D must never apply
    assert found[0].fix is not None and found[0].fix.applicability is Applicability.UNSAFE
    assert all(o.ok for o in check_safe_fixes(GAN, "gan.py", ALL))


def test_single_model_clear_move_stays_safe() -> None:
    one = textwrap.dedent("""
        import torch
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in torch.randn(8, 2, 4):
            model(x).sum().backward()
            opt.zero_grad()
            opt.step()
    """)
    outcomes = check_safe_fixes(one, "train.py", ALL)
    assert [o.diagnostic.code for o in outcomes] == ["GL002"] and outcomes[0].ok


KEPT = """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
history = []
for i, x in enumerate(torch.randn(8, 2, 4)):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    {store}
"""


@pytest.mark.parametrize(("lines", "safe"), [
    (["history.append(loss)"], True),
    # `.detach()` of the conditional would raise AttributeError on the float branch
    (["history.append(loss if i % 2 else 0.0)"], False),
    # `kept` is a float on the paths that skip the assignment from the loss
    (["kept = 0.0", "if i % 2:", "    kept = loss", "history.append(kept)"], False),
])
def test_gl008_detach_is_safe_only_on_a_tensor_of_every_branch(lines: list[str], safe: bool) -> None:
    text = KEPT.replace("{store}", "\n    ".join(lines))
    found = [d for d in check_source(text, "train.py", settings=ALL) if d.code == "GL008"]
    assert len(found) == 1 and found[0].fix is not None
    assert (found[0].fix.applicability is Applicability.SAFE) is safe


def test_new_findings_ignore_moved_positions() -> None:
    def diag(line: int, code: str, message: str) -> Diagnostic:
        return Diagnostic("f.py", Span(line, 1, line, 2), code, "n", message, "h")
    before = [diag(5, "GL001", "`opt.step()` at line 5"), diag(9, "GL002", "x")]
    after = [diag(6, "GL001", "`opt.step()` at line 6")]
    assert fixes.new_findings(before, after) == []
    assert fixes.new_findings(before, [*after, diag(2, "GL005", "leak")]) == [diag(2, "GL005", "leak")]
    # with the texts, lines map through the edit: a message quoting rewritten code is still the old finding
    old_text = "a\nloss.backward()\nb\n"
    new_text = "x\na\n(loss / n).backward()\nb\n"
    was = [diag(2, "GL006", "`loss.backward()` ...")]
    assert fixes.new_findings(was, [diag(3, "GL006", "`(loss / n).backward()` ...")], old_text, new_text) == []
    assert fixes.new_findings(was, [diag(1, "GL006", "x")], old_text, new_text) == [diag(1, "GL006", "x")]


def test_fixer_refuses_a_safe_fix_that_makes_a_new_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a rule's plan says, `--fix` keeps the text when gradlint would report something new on
    the fixed one (here the relint is made to: the real rules offer no such fix on the fixtures)."""
    text = textwrap.dedent("""
        import torch
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in torch.randn(8, 2, 4):
            model(x).sum().backward()
            opt.step()
    """)
    real = fixes.check_source

    def relint(source: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        found = real(source, *args, **kwargs)
        if source != text:
            found = [*found, Diagnostic("train.py", Span(1, 1, 1, 2), "GL005", "cross-model-grad-leak", "a new leak", "h")]
        return found

    monkeypatch.setattr(fixes, "check_source", relint)
    assert fixes.fix_source(text, "train.py", None, unsafe=False, settings=ALL).applied == 0
    assert fixes.fix_source(text, "train.py", None, unsafe=True, settings=ALL).applied == 1

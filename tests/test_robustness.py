"""Pathological input never crashes the analyzer: it answers with diagnostics or one GL000."""

from __future__ import annotations

import os
import random

import pytest

from gradcheck_lint import check_file, check_paths, check_source
from support import load_fixtures

TRAIN = "import torch\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"


def codes(diags) -> list[str]:  # type: ignore[no-untyped-def]
    return [d.code for d in diags]


def test_ten_megabyte_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    plain = tmp_path / "data.py"
    plain.write_text("VALUES = [\n" + "    1.0,\n" * 1_250_000 + "]\n")
    assert plain.stat().st_size > 10_000_000
    assert check_file(str(plain)) == []
    training = tmp_path / "generated_train.py"
    training.write_text(TRAIN + "# backward\n" + "x = 1\n" * 600_000)
    diags = check_file(str(training))
    assert codes(diags) == ["GL000"] and "too large" in diags[0].message


def test_deeply_nested_expression() -> None:
    src = "loss.backward()\nx = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    assert codes(check_source(src)) == ["GL000"]


def test_twenty_thousand_loops_in_one_file() -> None:
    src = TRAIN + "".join(f"for x{i} in range(2):\n    model(x{i}).sum().backward()\n" for i in range(20_000))
    diags = check_source(src)
    assert all(d.code in ("GL000",) or d.code.startswith("GL0") for d in diags)


@pytest.mark.parametrize(
    "data",
    [
        b"x = '\xff\xfe'  # backward\n",  # not UTF-8, no cookie
        b"# -*- coding: ascii -*-\nx = '\xe9'  # backward\n",  # cookie that does not fit
        b"# -*- coding: no-such-codec -*-\nloss.backward()\n",
        b"loss.backward()\x00\n",
        b"print 'hello'\nloss.backward()\n",  # Python 2
        b"",
        b"\n\n# just a comment about backward\n",
    ],
)
def test_odd_bytes(tmp_path, data: bytes) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "odd.py"
    f.write_bytes(data)
    diags = check_file(str(f))
    assert codes(diags) in ([], ["GL000"])


def test_latin1_with_cookie_is_analysed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "latin.py"
    f.write_bytes(b"# -*- coding: latin-1 -*-\n" + TRAIN.encode() + b"s = '\xe9'\nfor x in range(3):\n    model(x).sum().backward()\n    opt.step()\n")
    assert codes(check_file(str(f))) == ["GL001"]


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root reads any file")
def test_unreadable_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "secret.py"
    f.write_text("loss.backward()\n")
    f.chmod(0)
    assert codes(check_file(str(f))) == ["GL000"]


def test_symlink_loops_in_directories(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "train.py").write_text(TRAIN)
    os.symlink(tmp_path, tmp_path / "a" / "loop")
    os.symlink(tmp_path / "a" / "self.py", tmp_path / "a" / "self.py") if False else None
    diags, files = check_paths([str(tmp_path)])
    assert files == 1 and diags == []


def test_mutated_fixtures_never_crash() -> None:
    """Deleted lines, swapped statements, truncation and random bytes over every fixture."""
    rng = random.Random(1234)
    for fixture in rng.sample(load_fixtures(), 30):
        lines = fixture.path.read_text(encoding="utf-8").splitlines(keepends=True)
        variants = []
        for _ in range(3):
            cut = list(lines)
            del cut[rng.randrange(len(cut))]
            variants.append("".join(cut))
            swapped = list(lines)
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            swapped[i], swapped[j] = swapped[j], swapped[i]
            variants.append("".join(swapped))
        text = "".join(lines)
        variants.append(text[: rng.randrange(len(text))])
        noisy = bytearray(text.encode())
        for _ in range(5):
            noisy[rng.randrange(len(noisy))] = rng.randrange(256)
        variants.append(noisy.decode("utf-8", errors="replace"))
        for v in variants:
            for d in check_source(v, fixture.id):
                assert d.code.startswith("GL0"), d

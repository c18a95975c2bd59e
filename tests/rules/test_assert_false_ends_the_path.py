"""`assert False` raises on every run not made with `python -O`: nothing after it runs (openclip, lockbox 43: an
`assert False` left before the epoch loop, two certain GL006 read false). An assertion of anything else may hold, and
the code after it runs."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint import check_source

SCRIPT = """
import torch


def main(data):
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    {stop}
    for x in data:
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main([torch.randn(2, 4)] * 4)
"""


@pytest.mark.parametrize(("stop", "expected"), [
    ("assert False", []),
    ('assert False, "training is not ready"', []),
    ("assert 0", []),
    ("assert data", ["GL001"]),  # may hold
    ("assert True", ["GL001"]),
    ("pass", ["GL001"]),
])
def test_assert_false_ends_the_path(stop: str, expected: list[str]) -> None:
    found = check_source(textwrap.dedent(SCRIPT.format(stop=stop)), "train.py")
    assert [d.code for d in found if d.code.startswith("GL0") and d.code != "GL099"] == expected

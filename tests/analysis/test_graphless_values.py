"""Values that hold no autograd graph are not kept graphs (GL008), however they are stored.

What a statement keeps is what *it* adds: a comparison's booleans, an index tensor, a count, or a sum made with
autograd off, stored in an accumulator that also holds a real graph, keeps nothing of its own. The operators whose
result holds no graph are data, generated from PyTorch's derivatives.yaml (`apimodels/torch_no_graph.toml`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gradcheck_lint.api import check_source

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "gradcheck_lint" / "analysis" / "apimodels" / "torch_no_graph.toml"

LOOP = """
import torch
net = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
kept = []
for e in range(10):
    x = torch.randn(8, 4)
    t = torch.randint(0, 2, (8,))
    optimizer.zero_grad()
    out = net(x)
    loss = torch.nn.functional.cross_entropy(out, t)
    loss.backward()
    optimizer.step()
{body}
"""


def gl008_lines(body: str) -> list[int]:
    src = textwrap.dedent(LOOP).format(body=textwrap.indent(textwrap.dedent(body), "    "))
    return [d.line for d in check_source(src) if d.code == "GL008"]


@pytest.mark.parametrize("stored", [
    "torch.eq(out.argmax(1), t).float().mean()",  # DTU's accuracy: booleans, then a mean of them
    "out.argmax(1).eq(t).sum()",
    "torch.ne(out.argmax(1), t).sum()",
    "torch.isnan(out).any()",
    "out.max(1).indices",
    "torch.logical_and(out > 0, out < 1).sum()",
    "torch.count_nonzero(out > 0)",
])
def test_a_comparison_or_index_result_keeps_no_graph(stored: str) -> None:
    assert gl008_lines(f"kept.append({stored})") == []


def test_the_loss_itself_is_still_kept() -> None:
    assert gl008_lines("kept.append(loss)") == [14]


def test_an_accumulator_holding_a_graph_does_not_taint_what_is_added_next() -> None:
    """`kept.append(out)` keeps a graph; the next `kept.append(accuracy)` does not: one finding, at the first."""
    accuracy = "kept.append((out.argmax(1) == t).float().mean())"
    assert gl008_lines("kept.append(out)\n" + accuracy) == [14]
    assert gl008_lines(accuracy + "\nkept.append(out)") == [15]


def test_an_accuracy_helper_of_the_notebook_is_read() -> None:
    src = textwrap.dedent("""
        import torch
        net = torch.nn.Linear(4, 2)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)

        def accuracy(ys, ts):
            correct_prediction = torch.eq(torch.max(ys, 1)[1], torch.max(ts, 1)[1])
            return torch.mean(correct_prediction.float())

        train_accs = []
        for e in range(10):
            x, t = torch.randn(8, 4), torch.randn(8, 2)
            optimizer.zero_grad()
            out = net(x)
            loss = ((out - t) ** 2).mean()
            loss.backward()
            optimizer.step()
            train_accs.append(accuracy(out, t))
        """)
    assert [d.code for d in check_source(src)] == []


HYDRA = """
import torch
net = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)

def train(loader):
    total_error = torch.tensor(0.0)
    for x, t in loader:
        optimizer.zero_grad()
        loss = ((net(x) - t) ** 2).mean()
        loss.backward()
        optimizer.step()
{sum}
    return total_error / 10

history = {{}}
for epoch in range(10):
    history[epoch] = train([(torch.randn(8, 4), torch.randn(8, 2))])
"""


def test_a_sum_made_under_no_grad_keeps_no_graph() -> None:
    """HydraGNN: `with torch.no_grad(): total_error += loss * n` in the training function, the result stored
    per epoch by its caller."""
    quiet = HYDRA.format(sum="        with torch.no_grad():\n            total_error += loss * x.shape[0]")
    assert [d.code for d in check_source(quiet)] == []
    leaking = HYDRA.format(sum="        total_error += loss * x.shape[0]")
    assert "GL008" in [d.code for d in check_source(leaking)]


def test_the_table_is_generated_from_derivatives_yaml_and_regenerates_the_same(tmp_path: Path) -> None:
    head = TABLE.read_text(encoding="utf-8").splitlines()[:3]
    assert any("derivatives.yaml" in line and "commit" in line for line in head)
    pytest.importorskip("torchgen")
    out = tmp_path / "no_graph.toml"
    commit = next(line for line in head if "derivatives.yaml (" in line).split("derivatives.yaml (", 1)[1].rsplit("),", 1)[0]
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gen_no_graph_ops.py"), "--commit", commit, "-o", str(out)],
                   check=True, capture_output=True)
    assert out.read_text(encoding="utf-8") == TABLE.read_text(encoding="utf-8")
    text = out.read_text(encoding="utf-8")
    for op in ("torch.eq", "torch.ne", "torch.nonzero", "torch.isnan"):
        assert f'name = "{op}"' in text
    assert 'name = "torch.argmax"' not in text  # written by hand in torch.toml: left to it


def test_the_claims_of_the_table_hold_in_torch() -> None:
    """Every operator the table lists gives a result that does not require grad, from an input that does."""
    torch = pytest.importorskip("torch")
    import tomllib

    rows = tomllib.loads(TABLE.read_text(encoding="utf-8"))["call"]
    x = torch.randn(6, 4, requires_grad=True)
    checked = 0
    args = {"torch.bucketize": (x, torch.tensor([0.0, 1.0])), "torch.searchsorted": (torch.tensor([0.0, 1.0]), x),
            "torch.histc": (x,), "torch.multinomial": (x.softmax(-1), 2)}
    for row in rows:
        fn = getattr(torch, row["name"].removeprefix("torch."), None)
        if fn is None or row["name"] in ("torch.hash_tensor",) or "indices" in row["name"]:
            continue
        call = args.get(row["name"], (x, x))
        try:
            result = fn(*call)
        except (TypeError, RuntimeError):
            result = fn(call[0])
        if isinstance(result, torch.Tensor):
            assert not result.requires_grad, row["name"]
        checked += 1
    assert checked >= 20


UNREAD_DICT = """
import torch
import utils

model = utils.import_module("model", "models/x.py")


def train(cf):
    net = model.net(cf).cuda()
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    for epoch in range(cf.num_epochs):
        train_results_list = []
        for bix in range(cf.num_train_batches):
            batch = next(cf.gen)
            results_dict = net.train_forward(batch)
            optimizer.zero_grad()
            results_dict["torch_loss"].backward()
            optimizer.step()
            train_results_list.append([results_dict[{key}], batch["pid"]])
        cf.evaluate(train_results_list)
"""


def test_another_item_of_an_unread_dict_than_the_one_backpropagated_is_not_known_to_hold_a_graph() -> None:
    """medicaldetectiontoolkit: `results_dict["torch_loss"].backward()` proves that item's graph, not the NumPy
    `results_dict["boxes"]` the model (a class of a module imported by path) also returns."""
    assert [d.code for d in check_source(UNREAD_DICT.format(key='"boxes"'))] == []
    kept = check_source(UNREAD_DICT.format(key='"torch_loss"'))
    assert [d.line for d in kept] == [19]
    assert "on each element of" in kept[0].help  # a list written in place has no `.item()`

"""The runtime guard and verifier on real models (a small CNN and a small transformer)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import warnings
import weakref
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from gradcheck_lint.runtime import GradientContractError, GradientContractWarning, guard, verify_accumulation  # noqa: E402
from runtime_models import SmallCNN, TinyTransformer, cnn_batch, token_batch  # noqa: E402

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"))]
HERE = Path(__file__).resolve()


def cnn_loss(model: nn.Module, device: str) -> torch.Tensor:
    x, y = cnn_batch()
    return nn.functional.cross_entropy(model(x.to(device)), y.to(device))


def lm_loss(model: nn.Module, device: str) -> torch.Tensor:
    x, y = token_batch()
    logits = model(x.to(device))
    return nn.functional.cross_entropy(logits.flatten(0, 1), y.to(device).flatten())


MODELS = [pytest.param(SmallCNN, cnn_loss, id="cnn"), pytest.param(TinyTransformer, lm_loss, id="transformer")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("make,loss_of", MODELS)
@pytest.mark.parametrize("set_to_none", [True, False])
def test_correct_loop_is_silent(device: str, make, loss_of, set_to_none: bool) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    model = make().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with guard(model, opt) as g:
        for _ in range(4):
            opt.zero_grad(set_to_none=set_to_none)
            loss_of(model, device).backward()
            opt.step()
    assert list(g.report()) == []


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("make,loss_of", MODELS)
def test_missing_zero_grad_raises_at_the_users_step(device: str, make, loss_of) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    model = make().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    with pytest.raises(GradientContractError) as info:
        with guard(model, opt):
            for _ in range(3):
                loss_of(model, device).backward()
                opt.step()
    d = info.value.diagnostics[0]
    assert d.code == "GL001" and d.path == str(HERE)
    assert "`opt.step()`" in d.message and "`loss_of(model, device).backward()`" in d.message
    # the guard is gone: backward is torch's own again, hooks removed
    assert torch.autograd.backward.__module__ == "torch.autograd"


def test_modes_warn_and_record() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with guard(model, opt, mode="warn"):
            for _ in range(3):
                model(torch.randn(2, 4)).sum().backward()
                opt.step()
    assert any(issubclass(w.category, GradientContractWarning) and "GL001" in str(w.message) for w in caught)
    with guard(model, opt, mode="record") as g:
        for _ in range(3):
            model(torch.randn(2, 4)).sum().backward()
            opt.step()
    assert {d.code for d in g.report()} == {"GL001"}
    with pytest.raises(ValueError):
        guard(model, opt, mode="loud")  # type: ignore[arg-type]


def test_decorator_and_zero_grad_between_backward_and_step() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    @guard(model, opt)
    def train() -> None:
        for _ in range(2):
            model(torch.randn(2, 4)).sum().backward()
            opt.zero_grad()
            opt.step()

    with pytest.raises(GradientContractError) as info:
        train()
    assert [d.code for d in info.value.diagnostics] == ["GL002"]
    assert "opt.zero_grad()" in info.value.diagnostics[0].message


def test_gan_leak_and_freezing() -> None:
    torch.manual_seed(0)
    G, D = nn.Linear(2, 4), nn.Linear(4, 1)
    opt_G, opt_D = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())

    def run(freeze: bool) -> list[str]:
        with guard({"G": G, "D": D}, [opt_G, opt_D], mode="record") as g:
            for _ in range(3):
                fake = G(torch.randn(4, 2))
                opt_G.zero_grad()
                if freeze:
                    D.requires_grad_(False)
                (-D(fake).mean()).backward()
                D.requires_grad_(True)
                opt_G.step()
                (D(torch.randn(4, 4)).mean() - D(fake.detach()).mean()).backward()
                opt_D.step()
                opt_D.zero_grad()
        return [d.code for d in g.report()]

    leaky = run(freeze=False)
    assert leaky and set(leaky) == {"GL005"}
    assert run(freeze=True) == []


def test_param_groups_shared_and_frozen_parameters() -> None:
    torch.manual_seed(0)
    body, head, frozen = nn.Linear(4, 4), nn.Linear(4, 1), nn.Linear(4, 4)
    frozen.requires_grad_(False)
    opt_a = torch.optim.SGD([{"params": body.parameters()}, {"params": head.parameters(), "lr": 1e-2}], lr=1e-3)
    opt_b = torch.optim.SGD(head.parameters(), lr=1e-3)  # head shared by both optimizers
    with guard([body, head, frozen], [opt_a, opt_b]) as g:
        for _ in range(3):
            opt_a.zero_grad()
            opt_b.zero_grad()
            head(body(frozen(torch.randn(2, 4)))).sum().backward()
            opt_a.step()
            opt_b.step()
    assert list(g.report()) == []


def test_amp_grad_scaler_unscale_clip_and_skipped_steps() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    with guard(model, opt) as g:
        for i in range(4):
            x = torch.randn(2, 4)
            if i == 1:
                x = x * float("inf")  # this step is skipped by the scaler
            scaler.scale(model(x).sum()).backward()
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
    assert list(g.report()) == []


def test_accumulation_window_declared() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def run(first_based: bool) -> list[str]:
        with guard(model, opt, accumulation_steps=4, mode="record") as g:
            for i in range(12):
                (model(torch.randn(2, 4)).sum() / 4).backward()
                if (i % 4 == 0) if first_based else ((i + 1) % 4 == 0):
                    opt.step()
                    opt.zero_grad()
        return [d.code for d in g.report()]

    assert run(first_based=True) == ["GL004"]
    assert run(first_based=False) == []


def test_hooks_come_off_when_the_body_raises_and_models_are_held_weakly() -> None:
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    original = torch.autograd.backward
    with pytest.raises(KeyError):
        with guard(model, opt):
            raise KeyError("boom")
    assert torch.autograd.backward is original
    assert "zero_grad" not in vars(opt) and "zero_grad" not in vars(model)
    assert not opt._optimizer_step_pre_hooks and not opt._optimizer_step_post_hooks
    g = guard(model, opt)
    g.start()
    ref = weakref.ref(model)
    g.stop()
    del model, opt
    gc.collect()
    assert ref() is None


def test_training_numerics_are_bitwise_unchanged() -> None:
    def train(with_guard: bool) -> list[torch.Tensor]:
        torch.manual_seed(0)
        model = TinyTransformer(dropout=0.1)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        ctx = guard(model, opt) if with_guard else None
        if ctx:
            ctx.start()
        try:
            for _ in range(5):
                opt.zero_grad()
                lm_loss(model, "cpu").backward()
                nn.utils.clip_grad_norm_(model.parameters(), 0.5)
                opt.step()
        finally:
            if ctx:
                ctx.stop()
        return [p.detach().clone() for p in model.parameters()]

    for a, b in zip(train(False), train(True)):
        assert torch.equal(a, b)


def test_lbfgs_closure_is_silent() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.LBFGS(model.parameters(), max_iter=4)
    x, y = torch.randn(16, 4), torch.randn(16, 1)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    with guard(model, opt) as g:
        for _ in range(3):
            opt.step(closure)
    assert list(g.report()) == []


# -- the accumulation-equivalence verifier --------------------------------------------------------

def _micro(divide: int):  # type: ignore[no-untyped-def]
    def step(model: nn.Module, batch, n: int) -> None:  # type: ignore[no-untyped-def]
        x, y = batch
        loss = nn.functional.cross_entropy(model(x), y)
        (loss / n ** divide).backward()

    return step


def test_verifier_agrees_and_explains() -> None:
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    batch = (torch.randn(8, 6), torch.randint(0, 3, (8,)))
    before = [p.detach().clone() for p in mlp.parameters()]
    ok = verify_accumulation(mlp, batch, _micro(1), 4)
    assert ok.ok and ok.cause is None
    unscaled = verify_accumulation(mlp, batch, _micro(0), 4)
    assert not unscaled.ok and unscaled.cause == "unscaled-loss" and unscaled.code == "GL003"
    assert abs(unscaled.scale - 4) < 1e-3
    twice = verify_accumulation(mlp, batch, _micro(2), 4)
    assert twice.cause == "scaled-twice"
    assert all(torch.equal(a, p) for a, p in zip(before, mlp.parameters()))
    assert all(p.grad is None for p in mlp.parameters())


def test_verifier_blames_batchnorm_and_dropout_not_the_loop() -> None:
    torch.manual_seed(0)
    bn = SmallCNN().train()
    report = verify_accumulation(bn, cnn_batch(8), _micro(1), 2)
    assert not report.ok and report.cause == "batchnorm"
    # The verifier replays the RNG, so element-wise dropout masks over the batch agree; a mask drawn
    # once per forward (DropConnect on a weight) differs between one batch and two micro-batches.
    class FeatureDropout(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inp, self.drop, self.out = nn.Linear(6, 16), nn.Dropout(0.5), nn.Linear(16, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.linear(self.inp(x), self.drop(self.out.weight), self.out.bias)

    drop = FeatureDropout().train()
    report = verify_accumulation(drop, (torch.randn(8, 6), torch.randint(0, 3, (8,))), _micro(1), 2)
    assert not report.ok and report.cause == "dropout"
    assert drop.training


def test_verifier_mean_of_means() -> None:
    torch.manual_seed(0)
    model = nn.Linear(6, 3)
    batch = (torch.randn(7, 6), torch.randint(0, 3, (7,)))  # 7 samples in 2 micro-batches: 4 + 3
    report = verify_accumulation(model, batch, _micro(1), 2)
    assert not report.ok and report.cause == "mean-of-means"


# -- process-wide, environment variable, pytest plugin, no torch ----------------------------------

BUGGY_SCRIPT = """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
"""


def test_enable_catches_every_optimizer(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(BUGGY_SCRIPT)
    code = f"from gradcheck_lint.runtime import enable, disable; import runpy; enable(mode='record'); runpy.run_path({str(script)!r}); print(sorted({{(d.line, d.code) for d in disable()}}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "[(7, 'GL001')]", out.stderr


def test_environment_variable_without_code_change(tmp_path: Path) -> None:
    import site

    pth = [Path(p) / "gradcheck_lint_guard.pth" for p in site.getsitepackages()]
    if not any(p.exists() for p in pth):
        pytest.skip("an editable install has no .pth file; CI installs the wheel")
    script = tmp_path / "train.py"
    script.write_text(BUGGY_SCRIPT)
    env = {**os.environ, "GRADLINT_GUARD": "1"}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode != 0 and "GradientContractError" in out.stderr and "GL001" in out.stderr


def test_pytest_plugin(tmp_path: Path) -> None:
    (tmp_path / "test_train.py").write_text(textwrap.dedent(
        """
        import torch

        def train(clear):
            model = torch.nn.Linear(4, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for _ in range(4):
                if clear:
                    opt.zero_grad()
                model(torch.randn(2, 4)).sum().backward()
                opt.step()

        def test_good():
            train(clear=True)

        def test_bad():
            train(clear=False)

        def test_fixture(grad_guard):
            train(clear=False)
        """
    ))
    # The plugin is loaded through its pytest11 entry point, as in any project that installs gradcheck-lint.
    # Both sessions run in one interpreter, which imports torch once (each `pytest.main` makes a new
    # configuration and loads the entry points again): a second interpreter cost ~6 s of CPU here.
    code = textwrap.dedent(
        f"""
        import pytest
        base = ["-q", "-p", "no:cacheprovider", {str(tmp_path)!r}]
        pytest.main(base)
        print("=== guarded ===", flush=True)
        pytest.main(base + ["--gradlint-guard"])
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    plain, guarded = out.stdout.split("=== guarded ===")
    assert "1 failed, 2 passed" in plain, out.stdout + out.stderr[-2000:]  # only the fixture-using test is guarded
    assert "2 failed, 1 passed" in guarded, out.stdout + out.stderr[-2000:]
    assert "GL001" in guarded


def test_pytest_runs_without_torch_with_the_plugin_loaded(tmp_path: Path) -> None:
    """pytest imports the module named by the `pytest11` entry point in every environment where the package
    is installed, torch or not: it must import without torch (it once lived in `gradcheck_lint.runtime`,
    whose import needs torch, and pytest stopped at start-up in a torch-less environment)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib

    entry = tomllib.loads((HERE.parents[2] / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]["pytest11"]
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['torch'] = None\n")
    (tmp_path / "test_plain.py").write_text("def test_option(pytestconfig):\n    assert pytestconfig.getoption('--gradlint-guard') is False\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", entry["gradlint"], str(tmp_path)],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0 and "1 passed" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]


def test_static_package_imports_without_torch(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['torch'] = None\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    code = textwrap.dedent(
        """
        import gradcheck_lint
        print(len(gradcheck_lint.check_source("loss.backward()\\n")))
        try:
            import gradcheck_lint.runtime
        except ImportError as exc:
            print("runtime:", exc)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "0", out.stderr
    assert lines[1].startswith("runtime:") and "pip install" in lines[1] and "gradlint" in lines[1]


def test_ddp_two_processes_gloo(tmp_path: Path) -> None:
    import json

    import own_process

    if not torch.distributed.is_available():
        pytest.skip("torch.distributed is not available")
    worker = HERE.parent.parent / "ddp_worker.py"
    # under a time limit, its ranks killed with it and run once more on a timeout: gloo can hang (own_process)
    out = own_process.run_command([sys.executable, str(worker), str(tmp_path)], timeout=180, what="ddp_worker.py")
    assert out.returncode == 0, out.stderr[-3000:]
    for rank in (0, 1):
        results = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert results["correct"] == [] and results["buggy"] == ["GL001"], (rank, results)
        # GL006 exactly where DDP all-reduced on micro-batches that do not step (counted by a comm hook)
        assert results["no_sync_missing"] == ["GL006"], (rank, results)
        assert results["no_sync_missing_off_boundary_reductions"] > 0, (rank, results)
        assert results["correct_off_boundary_reductions"] == 0 and results["buggy_off_boundary_reductions"] == 0, (rank, results)


def test_late_window_is_gl004() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with guard(model, opt, accumulation_steps=4, mode="record") as g:
        for i in range(12):
            (model(torch.randn(2, 4)).sum() / 4).backward()
            if i > 0 and i % 4 == 0:  # first window holds 5 micro-batches
                opt.step()
                opt.zero_grad()
    assert [d.code for d in g.report()] == ["GL004"]
    assert "5 micro-batches" in g.report()[0].message


def test_loss_scale_reads_constant_factors_from_the_graph() -> None:
    """The guard's GL003 check reads the factors applied to a loss's terms, without a device sync."""
    from gradcheck_lint.runtime.probe import loss_scale

    x = torch.ones(3, requires_grad=True)
    a, b = x.sum(), x.pow(2).mean()
    assert loss_scale(a) == (1.0,)
    assert loss_scale(a / 4) == (0.25,)
    assert loss_scale(a * 0.5) == (0.5,)
    assert loss_scale(-(a / 2)) == (0.5,)
    assert loss_scale((a + 0.1 * b) / 4) == pytest.approx((0.025, 0.25))
    assert loss_scale(a / 4 + b / 4) == (0.25,)
    assert loss_scale(torch.amp.GradScaler("cpu").scale(a / 4)) == (0.25,)  # the scaler's 2**16 is neutral
    assert loss_scale(a * x[0]) is None  # a factor that requires grad: not a constant, the scale is unknown
    assert loss_scale(torch.tensor(1.0)) is None  # no graph
    y = torch.zeros(3)
    assert loss_scale(torch.nn.functional.mse_loss(x, y) / 4) == (0.25,)
    summed = torch.nn.functional.mse_loss(x, y, reduction="sum")
    assert loss_scale(summed) is None  # summed over its samples on purpose: micro-batch sums add up, nothing to judge
    assert loss_scale(summed / 4 + b) is None


def _rescaled_window(strict: bool, loss_divisor: float, device: str = "cpu") -> list[str]:
    """Four micro-batches per step, the gradients divided by 4 in place before the step (the fix of
    GL003), the loss maybe divided too; the only parameter is too large for the default mode's
    small-CPU-parameter measurement."""
    torch.manual_seed(0)
    model = torch.nn.Linear(80, 80, bias=False).to(device)  # 6,400 elements > SENTINEL_MAX_NUMEL
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with guard(model, opt, mode="record", strict=strict) as g:
        for _ in range(2):
            for x in torch.randn(4, 3, 80, device=device):
                (model(x).pow(2).mean() / loss_divisor).backward()
            for p in model.parameters():
                p.grad /= 4
            opt.step()
            opt.zero_grad()
    return [d.code for d in g.report()]


def _window_after_single_passes(loss_divisor: float, first_only: bool) -> list[str]:
    """Windows of one pass and of three passes in turn, the gradients of a window of three divided by
    3 through `.data` (no version counter shows it: only the default mode's copy of a small
    CPU parameter measures it), the loss maybe divided too. With `first_only`, the measured parameter
    gets a gradient from the first pass of each window only."""
    torch.manual_seed(0)
    model, head = torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)
    opt = torch.optim.SGD([*model.parameters(), *head.parameters()], lr=0.01)
    with guard([model, head], opt, mode="record") as g:
        for n in (1, 3, 1, 3):
            for k, x in enumerate(torch.randn(n, 2, 4)):
                features = model(x) if k == 0 or not first_only else x
                (head(features).pow(2).mean() / (loss_divisor if n > 1 else 1)).backward()
            for p in opt.param_groups[0]["params"]:
                p.grad.data /= n
            opt.step()
            opt.zero_grad()
    return [d.code for d in g.report()]


def test_the_default_copy_of_a_window_that_follows_single_pass_steps_is_measured() -> None:
    """No copy is made of a pass after a step of a single pass; when the window accumulates after
    all, the first pass gets its copy when the next pass starts, so `.data /= N` is measured as before."""
    for first_only in (False, True):
        assert _window_after_single_passes(loss_divisor=1, first_only=first_only) == []  # divided once, in place
        assert _window_after_single_passes(loss_divisor=3, first_only=first_only) == ["GL003"]  # divided twice


def test_strict_mode_measures_in_place_rescaling_of_any_parameter() -> None:
    from gradcheck_lint.runtime.probe import SENTINEL_MAX_NUMEL

    assert 80 * 80 > SENTINEL_MAX_NUMEL
    assert _rescaled_window(strict=False, loss_divisor=4) == []  # divided twice, but not measurable: silent
    assert _rescaled_window(strict=True, loss_divisor=4) == ["GL003"]  # 1/16 for a window of 4
    assert _rescaled_window(strict=True, loss_divisor=1) == []  # divided once, in place: correct
    assert _rescaled_window(strict=False, loss_divisor=1) == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_strict_mode_on_cuda() -> None:
    assert _rescaled_window(strict=True, loss_divisor=4, device="cuda") == ["GL003"]
    assert _rescaled_window(strict=True, loss_divisor=1, device="cuda") == []
    assert _rescaled_window(strict=False, loss_divisor=1, device="cuda") == []


def test_strict_mode_from_the_environment(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import importlib

    guard_module = importlib.import_module("gradcheck_lint.runtime.guard")

    monkeypatch.setenv("GRADLINT_GUARD", "record")
    monkeypatch.setenv("GRADLINT_GUARD_STRICT", "1")
    g = guard_module.enable_from_environment()
    try:
        assert g is not None and g.strict and g.mode == "record"
    finally:
        guard_module.disable()

"""The guard inside real frameworks (pinned in the `test` extra), on tiny CPU models: a Lightning
callback, a Hugging Face TrainerCallback, and Accelerate's own accumulation."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from gradcheck_lint.runtime import GradientContractError, guard  # noqa: E402
from gradcheck_lint.runtime.guard import disable, enable  # noqa: E402

HERE = str(Path(__file__).resolve())


def _line_of(marker: str) -> int:
    lines = Path(HERE).read_text().splitlines()
    return next(i + 1 for i, text in enumerate(lines) if text.rstrip().endswith(f"# {marker}"))


def _dataset(n: int = 32) -> torch.utils.data.TensorDataset:
    g = torch.Generator().manual_seed(0)
    return torch.utils.data.TensorDataset(torch.randn(n, 6, generator=g), torch.randn(n, 1, generator=g))


# -- Lightning --------------------------------------------------------------------------------

def _lightning():  # type: ignore[no-untyped-def]
    return pytest.importorskip("lightning.pytorch")


def _fit(module, callback, tmp_path: Path, **trainer_args) -> None:  # type: ignore[no-untyped-def]
    L = _lightning()
    trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path,
                        callbacks=[callback], **trainer_args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(module, torch.utils.data.DataLoader(_dataset(), batch_size=4))


def _regressor():  # type: ignore[no-untyped-def]
    L = _lightning()

    class Regressor(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))

        def training_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
            x, y = batch
            return nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self):  # type: ignore[no-untyped-def]
            return torch.optim.SGD(self.parameters(), lr=0.01)

    return Regressor()


def _gan(clears_d: bool):  # type: ignore[no-untyped-def]
    L = _lightning()

    class GAN(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = False
            self.G = nn.Linear(3, 6)
            self.D = nn.Sequential(nn.Linear(6, 4), nn.Tanh(), nn.Linear(4, 1))

        def training_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
            x, _y = batch
            opt_g, opt_d = self.optimizers()
            fake = self.G(torch.randn(x.shape[0], 3))
            self.toggle_optimizer(opt_g)  # D frozen while G trains
            opt_g.zero_grad()
            self.manual_backward(-self.D(fake).mean())
            opt_g.step()
            self.untoggle_optimizer(opt_g)
            if clears_d:
                opt_d.zero_grad()
            self.manual_backward(self.D(fake.detach()).mean() - self.D(x).mean())
            opt_d.step()  # lightning:opt_d.step

        def configure_optimizers(self):  # type: ignore[no-untyped-def]
            return torch.optim.Adam(self.G.parameters()), torch.optim.Adam(self.D.parameters())

    return GAN()


def test_lightning_automatic_optimization_with_accumulation_is_silent(tmp_path: Path) -> None:
    from gradcheck_lint.runtime.integrations.lightning import GradientContractCallback

    callback = GradientContractCallback(mode="raise")
    _fit(_regressor(), callback, tmp_path, accumulate_grad_batches=4)
    assert len(callback.report()) == 0
    assert callback.steps_checked() == 2  # 8 batches, windows of 4
    assert torch.autograd.backward.__module__ == "torch.autograd"


def test_lightning_automatic_optimization_is_checked(tmp_path: Path) -> None:
    """The same fit with Lightning's own clearing switched off: the guard sees its steps (GL001)."""
    from gradcheck_lint.runtime.integrations.lightning import GradientContractCallback

    module = _regressor()
    module.optimizer_zero_grad = lambda *args, **kwargs: None  # type: ignore[method-assign]
    callback = GradientContractCallback(mode="record")
    _fit(module, callback, tmp_path)
    assert callback.report().codes == {"GL001"}


def test_lightning_manual_optimization_missing_clear(tmp_path: Path) -> None:
    from gradcheck_lint.runtime.integrations.lightning import GradientContractCallback

    callback = GradientContractCallback(mode="record")
    _fit(_gan(clears_d=True), callback, tmp_path)
    assert len(callback.report()) == 0
    callback = GradientContractCallback(mode="record")
    _fit(_gan(clears_d=False), callback, tmp_path)
    report = callback.report()
    assert len(report) == 1, str(report)
    (finding,) = report
    assert finding.code == "GL001" and finding.path == HERE and finding.line == _line_of("lightning:opt_d.step")
    assert finding.message.startswith("`opt_d.step()` applies gradients") and finding.optimizer == "opt_d"
    assert finding.steps == 7 and finding.first_step == 2


def test_lightning_raise_mode_stops_the_fit_and_takes_its_hooks_off(tmp_path: Path) -> None:
    from gradcheck_lint.runtime.integrations.lightning import GradientContractCallback

    with pytest.raises(GradientContractError):
        _fit(_gan(clears_d=False), GradientContractCallback(mode="raise"), tmp_path)
    assert torch.autograd.backward.__module__ == "torch.autograd"
    import importlib

    assert not importlib.import_module("torch.optim.optimizer")._global_optimizer_pre_hooks


# -- Hugging Face Trainer ---------------------------------------------------------------------

class _HFRegressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
        out = self.net(x)
        return {"loss": nn.functional.mse_loss(out, labels), "logits": out}


class _Rows(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __init__(self) -> None:
        self.data = _dataset(24)

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        x, y = self.data[i]
        return {"x": x, "labels": y}


@pytest.mark.parametrize("accumulation", [1, 3])
def test_hf_trainer_with_gradient_accumulation_is_silent(tmp_path: Path, accumulation: int) -> None:
    transformers = pytest.importorskip("transformers")
    from gradcheck_lint.runtime.integrations.transformers import GradientContractCallback

    torch.manual_seed(0)
    callback = GradientContractCallback(mode="raise")
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), per_device_train_batch_size=4, gradient_accumulation_steps=accumulation,
        num_train_epochs=2, learning_rate=1e-3, report_to=[], save_strategy="no", logging_strategy="no",
        use_cpu=True, disable_tqdm=True, dataloader_num_workers=0,
    )
    trainer = transformers.Trainer(model=_HFRegressor(), args=args, train_dataset=_Rows(), callbacks=[callback])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()
    assert len(callback.report()) == 0, str(callback.report())
    assert trainer.state.global_step == callback.steps_checked() == 2 * 6 // accumulation
    assert torch.autograd.backward.__module__ == "torch.autograd"


class _KwargsRegressor(_HFRegressor):
    """A forward that accepts loss kwargs, as Hugging Face models do: the Trainer then passes
    `num_items_in_batch` to `compute_loss` and stops dividing its loss by the accumulation steps."""

    def forward(self, x: torch.Tensor, labels: torch.Tensor | None = None, **kwargs: object) -> dict[str, torch.Tensor]:
        return {"logits": self.net(x)}


@pytest.mark.parametrize("divides", [False, True])
def test_hf_compute_loss_that_ignores_num_items_in_batch_is_gl003(tmp_path: Path, divides: bool) -> None:
    """The runtime side of the static GL003 on a `compute_loss` override (clipping off: a clip rescales
    the window in place, which hides the missing 1/N from the guard)."""
    transformers = pytest.importorskip("transformers")
    from gradcheck_lint.runtime.integrations.transformers import GradientContractCallback

    class Distiller(transformers.Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):  # type: ignore[no-untyped-def]
            outputs = model(x=inputs["x"])
            loss = nn.functional.mse_loss(outputs["logits"], inputs["labels"])
            if divides and model.training:
                loss = loss / self.args.gradient_accumulation_steps
            return (loss, outputs) if return_outputs else loss

    torch.manual_seed(0)
    callback = GradientContractCallback(mode="record")
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), per_device_train_batch_size=4, gradient_accumulation_steps=3, max_grad_norm=0.0,
        num_train_epochs=1, learning_rate=1e-3, report_to=[], save_strategy="no", logging_strategy="no",
        use_cpu=True, disable_tqdm=True, dataloader_num_workers=0,
    )
    trainer = Distiller(model=_KwargsRegressor(), args=args, train_dataset=_Rows(), callbacks=[callback])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()
    assert callback.steps_checked() == 2
    assert {d.code for d in callback.report()} == (set() if divides else {"GL003"}), str(callback.report())


# -- Accelerate -------------------------------------------------------------------------------

def _accelerate_loop(accumulation: int, through_accelerator: bool, process_wide: bool):  # type: ignore[no-untyped-def]
    accelerate = pytest.importorskip("accelerate")
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    torch.manual_seed(0)
    accelerator = accelerate.Accelerator(gradient_accumulation_steps=accumulation, cpu=True)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(_dataset(), batch_size=4)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    g = guard(model, opt, mode="record")
    if process_wide:
        g = enable(mode="record")
    else:
        g.start()
    try:
        for x, y in loader:
            with accelerator.accumulate(model):
                loss = nn.functional.mse_loss(model(x), y)
                if through_accelerator:
                    accelerator.backward(loss)
                else:
                    loss.backward()  # accelerate:plain backward
                opt.step()
                opt.zero_grad()
    finally:
        report = disable() if process_wide else (g.stop() or g.report())
    return report, g.steps_checked()


@pytest.mark.parametrize("process_wide", [False, True], ids=["guard", "process-wide"])
def test_accelerate_accumulate_with_accelerator_backward_is_silent(process_wide: bool) -> None:
    report, steps = _accelerate_loop(4, through_accelerator=True, process_wide=process_wide)
    assert len(report) == 0, str(report)
    assert steps == 2  # 8 micro-batches, windows of 4: the prepared optimizer steps on boundaries only


def test_accelerate_plain_backward_is_unscaled() -> None:
    report, _steps = _accelerate_loop(4, through_accelerator=False, process_wide=False)
    (finding,) = report
    assert finding.code == "GL003" and finding.line == _line_of("accelerate:plain backward")

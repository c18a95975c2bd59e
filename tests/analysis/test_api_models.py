"""The catalogue of API models: the built-in files, their schema, and users' `[tool.gradlint.models]`."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
import tomllib

from gradcheck_lint import check_source
from gradcheck_lint.analysis.apimodels import EFFECTS, ModelError, builtin_files, catalogue_for, parse_model_file
from gradcheck_lint.analysis.apimodels import rows as rows_of
from gradcheck_lint.cache import cache_key
from gradcheck_lint.config import ConfigError, load_settings
from gradcheck_lint.prefilter import might_train
from support import ROOT

FRAMEWORK_FILES = {
    "torch.toml", "torch_amp.toml", "torch_distributed.toml", "accelerate.toml", "lightning.toml", "fabric.toml",
    "deepspeed.toml", "apex.toml", "torch_xla.toml", "timm.toml", "mmengine.toml", "transformers.toml", "python.toml",
    "diffusers.toml", "yolo.toml", "horovod.toml", "transformer_lens.toml", "hydra.toml", "megatron.toml",
    "ignite.toml", "torch_no_graph.toml", "torch_nonlinear.toml", "peft.toml", "torch_parameter_free.toml",
}
FOREIGN_FILE = "other_frameworks.toml"  # no rows: the packages of other deep-learning frameworks

TRAINER_MODELS = """
[tool.gradlint]

[[tool.gradlint.models.type]]
name = "mylab.engine.Trainer"
kind = "tool"

[[tool.gradlint.models.call]]
name = "mylab.engine.Trainer"
effect = { effect = "construct", type = "mylab.engine.Trainer" }

[[tool.gradlint.models.method]]
type = "mylab.engine.Trainer"
name = "backward_and_step"
effects = [{ effect = "backward", loss = "0|loss" }, { effect = "step", optimizer = "1|optimizer" }]

[[tool.gradlint.models.method]]
type = "mylab.engine.Trainer"
name = "reset"
effect = { effect = "clear", target = "0|optimizer" }
"""

TRAIN = """
import torch
from mylab.engine import Trainer

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
engine = Trainer()
for x in torch.randn(8, 2, 4):
{clear}    loss = model(x).pow(2).mean()
    engine.backward_and_step(loss, opt)
"""


def test_every_builtin_model_file_parses_and_covers_its_framework() -> None:
    files = {f.origin.rsplit("/", 1)[-1]: f for f in builtin_files()}
    assert set(files) == FRAMEWORK_FILES | {FOREIGN_FILE}
    foreign = files.pop(FOREIGN_FILE)
    assert rows_of([foreign]) == 0 and {"tensorflow", "jax", "mxnet"} <= set(foreign.foreign_packages)
    for name, f in files.items():
        assert rows_of([f]) >= 4, name
        assert not f.foreign_packages, name
    # each framework names the packages that make a file PyTorch code (torch's own AMP and
    # distributed files are inside `torch`; Horovod and diffusers also serve other frameworks)
    declared = {name for name, f in files.items() if f.packages}
    assert declared == {"torch.toml", "lightning.toml", "fabric.toml", "accelerate.toml", "deepspeed.toml", "timm.toml",
                        "transformers.toml", "apex.toml", "torch_xla.toml", "mmengine.toml", "megatron.toml",
                        "ignite.toml", "peft.toml"}


@pytest.mark.parametrize(
    "qualified,effect",
    [
        ("torch.optim.AdamW", "construct"),
        ("torch.optim.lr_scheduler.OneCycleLR", "construct"),
        ("torch.nn.functional.cross_entropy", "nonlinear"),
        ("torch.nn.functional.nll_loss", "tensor"),
        ("torch.autograd.backward", "backward"),
        ("torch.nn.utils.clip_grad_norm_", "clip"),
        ("torch.no_grad", "no_grad"),
        ("accelerate.Accelerator", "construct"),
        ("torch_xla.core.xla_model.optimizer_step", "step"),
        ("deepspeed.initialize", "construct"),
        ("apex.amp.scale_loss", "returns"),  # the context unscales as it exits
        ("torch.amp.GradScaler", "construct"),
        ("fire.Fire", "invoke"),
        ("diffusers.training_utils.EMAModel", "construct"),
        ("utils.loss.ComputeLossOTA", "construct"),
        ("horovod.torch.allreduce", "tensor"),
        ("hydra.utils.instantiate", "construct"),
        ("megatron.core.pipeline_parallel.get_forward_backward_func", "construct"),
        ("megatron.core.pipeline_parallel.schedules.forward_backward_pipelining_with_interleaving", "schedule"),
        ("megatron.core.optimizer.get_megatron_optimizer", "construct"),
    ],
)
def test_qualified_names_resolve_to_their_rows(qualified: str, effect: str) -> None:
    row = catalogue_for().call(qualified)
    assert row is not None and row.effects[0].kind == effect


def test_methods_are_inherited_and_aliases_resolve() -> None:
    cat = catalogue_for()
    assert cat.method("pytorch_lightning.LightningModule", "manual_backward").effects[0].kind == "backward"  # type: ignore[union-attr]
    assert cat.method("pytorch_lightning.LightningModule", "zero_grad").effects[0].kind == "clear"  # from torch.nn.Module  # type: ignore[union-attr]
    assert cat.method("torch.cuda.amp.GradScaler", "unscale_").effects[0].kind == "unscale"  # type: ignore[union-attr]
    clip = cat.method("lightning.pytorch.LightningModule", "clip_gradients")
    assert clip is not None and [e.kind for e in clip.effects] == ["clip"]  # Lightning's clip clears nothing


def test_heuristics_come_last_and_name_types() -> None:
    cat = catalogue_for()
    assert cat.receiver_type("self.accelerator") == "accelerate.Accelerator"
    assert cat.receiver_type("loss_scaler") == "timm.utils.NativeScaler"
    assert cat.receiver_type("scaler") == "torch.amp.GradScaler"
    optimizer = cat.callee_heuristic("AdamWScheduleFree")  # a schedule-free optimizer, not a scheduler
    assert optimizer is not None and optimizer.effects[0].value("type") == "torch.optim.Optimizer"


def test_a_receiver_named_like_a_type_is_one_only_for_a_method_of_that_type() -> None:
    """MTGNN's `scaler.inverse_transform(output)`: a data normaliser named `scaler`. Taken for a GradScaler by
    its name at its first call, each later call was a method of a tool no row describes, read as a number:
    the predictions of the loop lost the model's graph, and keeping them was not reported."""
    text = textwrap.dedent("""\
        import torch
        from torch import nn


        def fit(scaler, loader, probe):
            model = nn.Linear(4, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            print(scaler.inverse_transform(model(probe).detach()).mean())
            predictions = []
            for x, y in loader:
                optimizer.zero_grad()
                predict = scaler.inverse_transform(model(x))
                loss = torch.mean(torch.abs(predict - y))
                loss.backward()
                optimizer.step()
                predictions.append(predict)
            return predictions
        """)
    found = [(d.span.line, d.code) for d in check_source(text, "train.py")]
    assert found == [(16, "GL008")]


@pytest.mark.parametrize(
    "rows,message",
    [
        ({"call": [{"name": "a.b", "effect": "explode"}]}, "unknown effect 'explode'"),
        ({"call": [{"name": "a.b", "effect": {"effect": "backward", "loss": "0 + 1"}}]}, "is not an argument reference"),
        ({"call": [{"name": "a.b", "effect": {"effect": "step", "optimiser": "0"}}]}, "has no field 'optimiser'"),
        ({"method": [{"type": "a.B", "name": "x-y", "effect": "inert"}]}, "is not an identifier"),
        ({"type": [{"name": "a.B", "kind": "gizmo"}]}, "kind 'gizmo' is not one of"),
        ({"heuristic": [{"receiver": "(", "type": "a.B"}]}, "is not a regular expression"),
        ({"calls": []}, "unknown section 'calls'"),
        ({"call": [{"name": "a.b", "effect": "inert", "effects": ["inert"]}]}, "either 'effect'"),
        ({"call": [{"name": "a.b", "effect": {"effect": "backward", "scales": "twice"}}]}, "scales must be one of"),
        ({"type": [{"name": "a.B", "kind": "model", "bare": "a.B"}]}, "bare 'a.B' is not an identifier"),
        ({"packages": "torch"}, "'packages' must be a list of dotted names"),
        ({"call": [{"name": "a.b", "effect": {"effect": "construct", "type": "a.B", "variant": "plugin:a.C"}}]},
         "a variant is `keyword=type`"),
    ],
)
def test_invalid_rows_name_the_row_and_field(rows: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ModelError, match=message) as info:
        parse_model_file(rows, "x.toml")
    assert str(info.value).startswith("x.toml: ")


def test_effects_vocabulary_is_documented_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [e for e in EFFECTS if f"`{e}`" not in readme]
    assert not missing, f"effects not described in README: {missing}"


def test_user_models_model_an_in_house_trainer(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(TRAINER_MODELS, encoding="utf-8")
    settings = load_settings([str(tmp_path)])
    buggy = TRAIN.format(clear="")
    fixed = TRAIN.format(clear="    engine.reset(opt)\n")
    assert [(d.code, d.line) for d in check_source(buggy, settings=settings)] == [("GL001", 10)]
    assert check_source(fixed, settings=settings) == []
    assert check_source(buggy) == []  # without the rows the trainer is opaque: nothing is claimed


def test_user_models_feed_the_prefilter(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(TRAINER_MODELS, encoding="utf-8")
    settings = load_settings([str(tmp_path)])
    text = TRAIN.format(clear="")
    assert not might_train(text)  # neither `backward(` nor `step(` is spelt
    assert might_train(text, catalogue_for(settings.api_models()))


def test_timm_loss_scaler_calls_pass_the_prefilter() -> None:
    text = "loss_scaler(loss, optimizer, parameters=model.parameters(), update_grad=True)\n"
    assert might_train(text)
    assert not might_train(text.replace("loss_scaler", "log_metrics"))


def test_user_models_change_the_cache_key(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(TRAINER_MODELS, encoding="utf-8")
    with_models = load_settings([str(tmp_path)])
    plain = load_settings([str(tmp_path)], isolated=True)
    data = TRAIN.encode()
    assert cache_key(data, "t.py", ["GL001"], with_models.models) != cache_key(data, "t.py", ["GL001"], plain.models)
    assert with_models.fingerprint() != plain.fingerprint()


def test_invalid_user_models_stop_the_run_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.gradlint]\n[[tool.gradlint.models.call]]\nname = "mylab.fit"\neffect = "teleport"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"pyproject\.toml: \[tool\.gradlint\.models\]: call #1 effect #1: unknown effect 'teleport'"):
        load_settings([str(tmp_path)])
    (tmp_path / "t.py").write_text("x = 1\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "gradcheck_lint", str(tmp_path / "t.py")], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 2 and "unknown effect 'teleport'" in run.stderr


def test_user_rows_replace_builtin_rows_of_the_same_name(tmp_path: Path) -> None:
    """A team whose `torch.optim.SGD` wrapper clears on every step says so; their row wins."""
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.gradlint]
        [[tool.gradlint.models.method]]
        type = "torch.optim.Optimizer"
        name = "step"
        effect = { effect = "step", optimizer = "self", clears = true }
        """), encoding="utf-8")
    settings = load_settings([str(tmp_path)])
    loop = textwrap.dedent("""
        import torch
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in torch.randn(8, 2, 4):
            model(x).sum().backward()
            opt.step()
        """)
    assert [d.code for d in check_source(loop)] == ["GL001"]
    assert check_source(loop, settings=settings) == []


def test_readme_models_example_works(tmp_path: Path) -> None:
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```toml\n(.*?)```", readme, re.S) if "[[tool.gradlint.models.type]]" in b)
    (tmp_path / "pyproject.toml").write_text("[tool.gradlint]\n" + block, encoding="utf-8")
    settings = load_settings([str(tmp_path)])
    assert [d.code for d in check_source(TRAIN.format(clear=""), settings=settings)] == ["GL001"]
    by_name = TRAIN.format(clear="").replace("from mylab.engine import Trainer\n", "").replace("engine = Trainer()\n", "")
    by_name = by_name.replace("engine.", "trainer.")  # a receiver of unknown origin, recognised by its name
    found = check_source(by_name, settings=settings)
    assert [d.code for d in found] == ["GL001"]


@pytest.mark.parametrize("cls", ["DistributedShampoo", "Shampoo", "DistMuon", "Muon"])
def test_optimizers_of_other_libraries_are_named_like_optimizers(cls: str) -> None:
    # modded-nanogpt's Shampoo record: `DistributedShampoo(...)` stepped through a list of optimizers and
    # cleared by `model.zero_grad()`; read as an opaque object, its gradients looked never cleared (GL001)
    text = textwrap.dedent(f"""\
        import torch
        from some_library import {cls}

        model = torch.nn.Linear(4, 2)
        adam = torch.optim.AdamW([model.bias])
        other = {cls}([model.weight], lr=0.01)
        optimizers = [adam, other]
        for x in torch.randn(8, 3, 4):
            model(x).sum().backward()
            for opt in optimizers:
                opt.step()
            model.zero_grad(set_to_none=True)
        """)
    assert check_source(text) == []
    assert [d.code for d in check_source(text.replace("    model.zero_grad(set_to_none=True)\n", ""))] == ["GL001"]


EMA_LOOP = """\
import torch
{imports}

unet = torch.nn.Linear(4, 2)
optimizer = torch.optim.AdamW(unet.parameters())
ema_unet = {ema}(unet.parameters())
for x in torch.randn(8, 3, 4):
    unet(x).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
    ema_unet.step(unet.parameters())
"""


@pytest.mark.parametrize("imports,ema", [
    ("from diffusers.training_utils import EMAModel", "EMAModel"),  # modelled by qualified name
    ("from torch_ema import ExponentialMovingAverage", "ExponentialMovingAverage"),  # by its name
    ("from mylab import ModelEMA", "ModelEMA"),
])
def test_a_moving_average_of_weights_is_no_optimizer(imports: str, ema: str) -> None:
    # diffusers' examples step an EMAModel after the optimizer: it touches no gradient (GL001 false
    # alarms on unseen code before it was modelled)
    assert check_source(EMA_LOOP.format(imports=imports, ema=ema)) == []


def test_an_optimizer_of_unknown_class_built_from_parameters_is_still_one() -> None:
    # the same shape with a class not named like an average: stepped, built from parameters, never cleared
    text = """\
import torch
from mylab import Tuner

unet = torch.nn.Linear(4, 2)
tuner = Tuner(unet.parameters())
for x in torch.randn(8, 3, 4):
    unet(x).sum().backward()
    tuner.step()
"""
    assert [d.code for d in check_source(text)] == ["GL001"]
    assert check_source(text.replace("Tuner", "WeightAverager")) == []


# -- what the analyzer knows of frameworks by name comes from the rows: packages, bare names, methods

MIXED = """
import {framework} as fw
{extra}
model = Net()
opt = Opt(model.parameters())
for x in data:
    loss = model(x)
    loss.backward()
    opt.step()
"""


def test_a_file_of_another_framework_is_not_analysed_unless_it_imports_pytorch(tmp_path: Path) -> None:
    """A TensorFlow or MXNet trainer's `backward`/`step` follow other rules: such a file is skipped,
    unless it also imports a package of a PyTorch framework (a model file's `packages`)."""
    tf_only = MIXED.format(framework="tensorflow", extra="")
    assert check_source(tf_only) == []
    with_torch = MIXED.format(framework="tensorflow", extra="import torch")
    assert [d.code for d in check_source(with_torch)] == ["GL001"]
    assert [d.code for d in check_source(MIXED.format(framework="mxnet.gluon", extra="import lightning"))] == ["GL001"]
    # a team's own framework, declared in their rows, counts as PyTorch code too
    (tmp_path / "pyproject.toml").write_text('[tool.gradlint.models]\npackages = ["mylab"]\n', encoding="utf-8")
    settings = load_settings([str(tmp_path)])
    mylab = MIXED.format(framework="tensorflow", extra="import mylab.engine")
    assert check_source(mylab) == []
    assert [d.code for d in check_source(mylab, settings=settings)] == ["GL001"]


STAR = """
from {package} import *

class Net({base}):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = self.fc(batch).sum()
        self.manual_backward(loss)
        opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""


def test_a_base_named_with_no_import_is_the_type_whose_bare_name_it_is() -> None:
    """`from pytorch_lightning import *` then `class Net(LightningModule)`: the type whose row says
    `bare = "LightningModule"`, so its manual optimization is checked (the step never clears)."""
    found = check_source(STAR.format(package="pytorch_lightning", base="LightningModule")
                         .replace("        opt = self.optimizers()", "        self.automatic_optimization = False\n        opt = self.optimizers()"))
    assert [d.code for d in found] == ["GL001"]
    cat = catalogue_for()
    assert cat.bare_type("LightningModule") == "lightning.pytorch.LightningModule"
    assert cat.bare_type("Module") == "torch.nn.Module"
    assert cat.bare_type("Trainer") is None  # no row names a bare `Trainer`


CONFIGURED = """
import torch
from mylab import LabModule

class Net(LabModule):
    def __init__(self):
        super().__init__()
        self.g, self.d = torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)

    def make_optimizers(self):
        return [torch.optim.Adam(self.g.parameters()), torch.optim.Adam(self.d.parameters())]

    def train_batch(self, x):
        opt_g, opt_d = self.optimizers()
        fake = self.g(x)
        opt_g.zero_grad()
        (-self.d(fake)).mean().backward()
        opt_g.step()
{clear_d}        (self.d(fake.detach()).mean() - self.d(x).mean()).backward()
        opt_d.step()
        opt_d.zero_grad()
"""

LAB_MODELS = """
[tool.gradlint]
[[tool.gradlint.models.type]]
name = "mylab.LabModule"
kind = "model"
bases = ["torch.nn.Module"]

[[tool.gradlint.models.method]]
type = "mylab.LabModule"
name = "optimizers"
effect = { effect = "optimizers", configured_by = "make_optimizers" }

[[tool.gradlint.models.hook]]
type = "mylab.LabModule"
method = "train_batch"
counter = "1|step"
optimization = "manual"
"""


def test_the_optimizers_effect_reads_the_method_its_row_names(tmp_path: Path) -> None:
    """`configured_by`: which method of the class makes the optimizers `self.optimizers()` returns
    (Lightning's row says `configure_optimizers`; a team's framework names its own)."""
    buggy, fixed = CONFIGURED.format(clear_d=""), CONFIGURED.format(clear_d="        opt_d.zero_grad()\n")
    for method, found in (("make_optimizers", [("GL005", 20)]), ("configure_optimizers", [])):
        # the generator's loss writes into the discriminator, whose step then applies it: seen only
        # when the rows say which method makes the two optimizers (else their parameters are unknown)
        (tmp_path / "pyproject.toml").write_text(LAB_MODELS.replace("make_optimizers", method), encoding="utf-8")
        settings = load_settings([str(tmp_path)])
        assert [(d.code, d.line) for d in check_source(buggy, settings=settings)] == found, method
        assert check_source(fixed, settings=settings) == []


WINDOW_THROUGH_CALL = """
import torch
model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def train(batches, n):
    opt.zero_grad()
    for x in batches:
        loss = model(x).mean()
        loss /= n
        {backward}
    opt.step()
"""


def test_a_wildcard_of_inert_functions_does_not_swallow_a_loss_under_a_name_it_does_not_list() -> None:
    # MONAI's LR finder: `torch.cuda.amp.scale_loss` (apex's `amp.scale_loss` misspelt) matched the inert
    # family `torch.cuda.*.*` and returned nothing, so the divided loss lost its division: a certain GL003
    row = catalogue_for().call("torch.cuda.amp.scale_loss")
    assert row is not None and "*" in row.name  # the family row is what the name meets
    through = "with torch.cuda.amp.scale_loss(loss, opt) as scaled:\n            scaled.backward()"
    assert [d.code for d in check_source(WINDOW_THROUGH_CALL.format(backward=through), "train.py")] == []
    # a member of the family beside the loss is still inert, and the undivided window still found
    plain = WINDOW_THROUGH_CALL.replace("loss /= n", "torch.cuda.synchronize()").format(backward="loss.backward()")
    assert [(d.code, d.certainty.name) for d in check_source(plain, "train.py")] == [("GL003", "CERTAIN")]


def test_an_optimizer_a_framework_builds_from_its_configuration_is_of_an_assumed_class() -> None:
    # DeepSpeed's unit test (lockbox 3): `deepspeed.initialize` hands back a ZeRO optimizer, which clears the
    # gradients in its own `step()`, or a plain one, as the configuration says: a missing clear is possible
    source = """
import torch, deepspeed
model = torch.nn.Linear(2, 2)
engine, optimizer, _, _ = deepspeed.initialize(config=cfg, model=model, model_parameters=model.parameters())
for x in data:
    loss = engine(x)
    engine.backward(loss)
    optimizer.step()
"""
    assert [(d.code, d.certainty.name) for d in check_source(source, "train.py")] == [("GL001", "POSSIBLE")]
    built = source.replace("engine, optimizer, _, _ = deepspeed.initialize(", "optimizer = torch.optim.SGD(model.parameters())\nengine, _, _, _ = deepspeed.initialize(")
    assert [(d.code, d.certainty.name) for d in check_source(built, "train.py")] == [("GL001", "CERTAIN")]


def test_no_model_file_describes_one_call_or_method_twice() -> None:
    """The first row of a name wins: a second one (an `inert` `add_module` below its `set_attribute`) is dead data
    that reads as if it meant something."""
    for f in builtin_files():
        data = tomllib.loads(Path(f.origin).read_text())
        rows = Counter(("call", r["name"]) for r in data.get("call", [])) + Counter(
            ("method", r.get("type"), r["name"]) for r in data.get("method", []))
        assert [k for k, n in rows.items() if n > 1] == [], f.origin

"""What `self.parameters()` of a module holds: its registered parts only.

`nn.Module` registers an attribute as a part only when it is a module or a parameter: a plain dict or list kept on
a module (per-task copies of the network, `self.models[t] = deepcopy(self.net)`) is not a part, so an optimizer over
`self.parameters()` never steps what a backward through `self.models[t](x)` writes, and `self.net.zero_grad()`
clears everything that optimizer steps. And torch's loss classes hold no parameters, by whichever module they are
imported from (`torch.nn.modules.loss`). Lockbox 27's continual-learning learner (two certain GL001, judged false)
read both as parts the clear left uncleared."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint import check_source

# the fixture's continual learner (runnable: `python fixtures/correct_idioms/...`, and clean under the guard)
LEARNER = (Path(__file__).resolve().parents[2] / "fixtures" / "correct_idioms"
           / "module_keeps_task_copies_in_plain_dict.py").read_text(encoding="utf-8")
STEP = 36  # `self.opt.step()`


def _found(text: str) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in check_source(text)]


def test_a_plain_dict_of_copies_on_a_module_is_not_among_its_parameters() -> None:
    assert _found(LEARNER) == []


def test_a_registered_container_is_among_them_and_its_gradients_pile_up() -> None:
    # `nn.ModuleDict`: the copies are parts of the learner, stepped by `self.opt` and never cleared
    registered = LEARNER.replace("self.models: dict[int, nn.Module] = {}", "self.models = nn.ModuleDict()").replace(
        "self.models[t] = deepcopy(self.net)", "self.models[str(t)] = deepcopy(self.net)").replace(
        "if not self.net.training and t in self.models:\n            return self.models[t](x)",
        "if str(t) in self.models:\n            return self.models[str(t)](x) + self.net(x)")
    assert registered.count("str(t)") == 3
    assert (STEP, "GL001") in _found(registered)


def test_a_list_attribute_rebound_to_a_module_list_is_a_part() -> None:
    # one binding of the attribute is a module: it may be a part, as before
    rebound = LEARNER.replace("self.models[t] = deepcopy(self.net)",
                              "self.models = nn.ModuleList([deepcopy(self.net)])").replace(
        "if not self.net.training and t in self.models:\n            return self.models[t](x)",
        "if self.models:\n            return self.models[0](x) + self.net(x)")
    assert (STEP, "GL001") in _found(rebound)


def test_a_loss_class_of_torch_holds_no_parameters_by_its_defining_module() -> None:
    only_loss = LEARNER.replace("self.models: dict[int, nn.Module] = {}", "self.models = None").replace(
        "if not self.net.training and t in self.models:\n            return self.models[t](x)\n", "")
    assert "self.models" not in only_loss.split("def forward")[1].split("def observe")[0]  # the variant took
    assert _found(only_loss) == []
    # the one torch class named ...Loss that holds weights: stepped by `self.opt`, and `self.net.zero_grad()`
    # leaves them
    adaptive = only_loss.replace("from torch.nn.modules.loss import CrossEntropyLoss",
                                 "from torch.nn.modules.adaptive import AdaptiveLogSoftmaxWithLoss").replace(
        "self.bce = CrossEntropyLoss()", "self.bce = AdaptiveLogSoftmaxWithLoss(4, 4, [2])").replace(
        "loss = self.bce(self.forward(x, t), y)", "loss = self.bce(self.forward(x, t), y).loss")
    assert (STEP - 2, "GL001") in _found(adaptive)

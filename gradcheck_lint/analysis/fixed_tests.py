"""Branch tests whose outcome this call already fixes: `if p.grad is not None:` for gradients that
exist, a literal flag the function was handed (`do_backward=False`), `hasattr(self, "x")` for a name
nothing in the file defines, `if loss is not None:` on a value known not to be None (`loss = 0; loss += ...`),
`if device == "cuda":` on a `torch.device(...)`, which never equals a str, a command-line flag no command line can
turn (`command_line`), membership in a container no run fills (`empty_containers`)."""

from __future__ import annotations

import ast

from . import names as N
from . import pathcond
from .command_line import flag_value
from .definitions import ClassInfo
from .empty_containers import empty_membership
from .flow import Flow, Frame
from .names import dotted
from .parts import FixedTestsHost
from .release_tests import ReleaseTests
from .resets import holds_every_time
from .strided_indices import strided_truth
from .values import Value, truthless
from .walk import iter_tree
from .window_arithmetic import grad_existence_test


class FixedTests:
    def __init__(self, interp: FixedTestsHost) -> None:
        self.interp = interp
        self._defined_names: set[str] | None = None
        self._releases: ReleaseTests | None = None  # made on first use: the interpreter sets its imports later
        self._every: dict[int, bool] = {}  # `_every_time`, by test

    def outcome(self, test: ast.expr, flow: Flow, frame: Frame) -> bool | None:
        """True or False when the test goes one way on this call; None when both may happen. A part of an
        `and` decided False decides it (`if self.args.fp16 and _use_apex:` with `_use_apex` False), as
        does a part of an `or` decided True."""
        if isinstance(test, ast.BoolOp):
            decisive = isinstance(test.op, ast.Or)
            parts = [self.outcome(v, flow, frame) for v in test.values]
            if decisive in parts:
                return decisive
            if None not in parts:
                return not decisive
        if isinstance(test, ast.Constant):
            return bool(test.value)  # `if True:`, `if 0:`: code switched on or off by hand takes one arm
        fixed = grad_existence_test(test)
        if fixed is None and frame.grad_on and _grad_enabled_test(test):
            fixed = True  # `if torch.is_grad_enabled():` in a closure an optimizer's step runs
        if fixed is None:
            fixed = self.constant_flag(test, flow, frame)
        if fixed is None and isinstance(test, (ast.Attribute, ast.UnaryOp)):
            fixed = flag_value(test, self.interp.module)  # `args.use_amp` of `store_true` with `default=True`
        if fixed is None:
            fixed = empty_membership(test, self.interp.module)  # `model in _AMP_MODELS`, a set no run fills
        if fixed is None and self.missing_attribute(test):
            fixed = False  # `if hasattr(self, "_training_step"):` where nothing defines it: a deprecated hook
        if fixed is None and isinstance(test, ast.Call) and isinstance(test.func, ast.Name) \
                and test.func.id == "hasattr" and self.interp.expressions.lacks_attribute(test, flow, frame):
            fixed = False  # `if hasattr(optimizer, "first_step"):` of accelerate's prepared optimizer (its wrapper's)
        if fixed is None and self.constructed_attribute(test, frame):
            fixed = True  # `if hasattr(self, "optimizer"):` where `__init__` always sets it
        if fixed is None and self._every_time(test):
            fixed = True  # `if num_iter == 1: ... num_iter = 0` after `num_iter += 1`: a window of one
        if fixed is None and isinstance(test, (ast.Compare, ast.UnaryOp)):
            fixed = strided_truth(test, self.interp.parent)  # `(i + s) % s == 0` of `for i in range(0, n, s)`
        if fixed is None and isinstance(test, ast.Compare):
            fixed = self.modulo_one(test, flow, frame)  # `(i + 1) % accumulation_steps == 0` with the steps 1
        if fixed is None:
            fixed = self.none_test(test, flow, frame)
        if fixed is None:
            fixed = self.object_truth(test, flow, frame)
        if fixed is None:
            fixed = self.unequal_test(test, flow, frame)
        if fixed is None:
            if self._releases is None:
                self._releases = ReleaseTests(self.interp.module, self.interp.imports, self.interp.catalogue)
            fixed = self._releases.outcome(test)  # `version.parse(torch.__version__) < version.parse("1.6")`
        return fixed

    def modulo_one(self, test: ast.Compare, flow: Flow, frame: Frame) -> bool | None:
        """`x % n == 0` (`!=`, either side) where `n` is 1 here (a literal, or a name this path bound to the int 1:
        PPG-Distill's `accumulation_steps = 1`): every number is a multiple of 1, the window is one micro-batch."""
        if len(test.ops) != 1 or not isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
            return None
        left, right = test.left, test.comparators[0]
        if isinstance(left, ast.Constant):
            left, right = right, left
        if not (isinstance(right, ast.Constant) and type(right.value) is int and right.value == 0
                and isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod)):
            return None
        divisor = left.right
        if isinstance(divisor, ast.Constant):
            one = type(divisor.value) is int and divisor.value == 1
        elif isinstance(divisor, ast.Name):
            v = self.interp.expressions.lookup(divisor.id, flow, frame)
            counted = v is not None and v.counter is not None and v.counter.incremented
            one = v is not None and type(v.const) is int and v.const == 1 and not counted
        else:
            return None
        return isinstance(test.ops[0], ast.Eq) if one else None

    def _every_time(self, test: ast.expr) -> bool:
        known = self._every.get(id(test))
        if known is None:
            known = self._every[id(test)] = isinstance(test, ast.Compare) and holds_every_time(test, self.interp.parent)
        return known

    def unequal_test(self, test: ast.expr, flow: Flow, frame: Frame) -> bool | None:
        """`device == "cuda"` (`!=`, either side, also under `not`, `and`, `or`) where `device` names an object
        that on every path is of a catalogue type which never equals a literal of that type (`never_equal`:
        `torch.device("cuda") == "cuda"` is False): the outcome; None otherwise. `device.type == "cuda"` (a str),
        a parameter, `args.device` or `device = "cuda"` leave both ways open."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self.unequal_test(test.operand, flow, frame)
            return None if inner is None else not inner
        if isinstance(test, ast.BoolOp):
            # `a and b` is False when one part is, True when all are (`or` the other way round)
            decisive = isinstance(test.op, ast.Or)
            parts = [self.unequal_test(v, flow, frame) for v in test.values]
            if decisive in parts:
                return decisive
            return None if None in parts else not decisive
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
            return None
        left, right = test.left, test.comparators[0]
        if isinstance(left, ast.Constant):
            left, right = right, left
        if not isinstance(right, ast.Constant):
            return None
        key = N.ref_text(left)
        v = self.interp.expressions.lookup(key, flow, frame) if key is not None else None
        if v is None or not v.objects_only or not v.entities or v.opaque:
            return None
        literal = type(right.value).__name__
        if not all(e.certain and literal in self.interp.catalogue.never_equal(e.api) for e in v.entities):
            return None
        return isinstance(test.ops[0], ast.NotEq)

    def none_test(self, test: ast.expr, flow: Flow, frame: Frame) -> bool | None:
        """`x is not None` (`is None`, `== None`, `!= None`, `not ...`) where `x` names a value known to be an
        object on every path that reaches the test (`Value.present`): the outcome; None otherwise. A value
        that may be None (`loss = None`, then `if cond: loss = ...`) leaves both ways open."""
        negated = False
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            negated, test = not negated, test.operand
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1
                and isinstance(test.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq))):
            return None
        left, right = test.left, test.comparators[0]
        if _is_none(left):
            left, right = right, left
        if not _is_none(right):
            return None
        key = N.ref_text(left)
        if key is None:
            return None
        v = self.interp.expressions.lookup(key, flow, frame)
        if v is None or not v.present:
            return None
        return isinstance(test.ops[0], (ast.IsNot, ast.NotEq)) != negated

    def object_truth(self, test: ast.expr, flow: Flow, frame: Frame) -> bool | None:
        """`if scaler:` (or `not ...`) where `scaler` names, on every path that reaches the test, an object whose class
        defines no truth (an optimizer, a GradScaler: `values.truthless`), never None: true; None otherwise."""
        negated = False
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            negated, test = not negated, test.operand
        if not isinstance(test, (ast.Name, ast.Attribute)):
            return None
        key = N.ref_text(test)
        v = self.interp.expressions.lookup(key, flow, frame) if key is not None else None
        if v is None or not v.present or not truthless(v):
            return None
        return not negated

    def constructed_attribute(self, test: ast.expr, frame: Frame) -> bool:
        """`hasattr(self, "name")` (or `not ...`: the caller negates) in a method of a class whose
        `__init__` (its own, or a base's in this file) sets `self.name` on every path, and which nothing
        in the file deletes."""
        if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "hasattr" and len(test.args) == 2
                and isinstance(test.args[0], ast.Name) and test.args[0].id == "self"
                and isinstance(test.args[1], ast.Constant) and isinstance(test.args[1].value, str)):
            return False
        target = f"self.{test.args[1].value}"
        seen: set[str] = set()
        todo = [frame.cls] if frame.cls is not None else []
        while todo:
            info = todo.pop()
            if info.name in seen:  # type: ignore[attr-defined]
                continue
            seen.add(info.name)  # type: ignore[attr-defined]
            init = info.methods.get("__init__")  # type: ignore[attr-defined]
            if init is not None:
                if not pathcond.sets_on_every_path(init.body, target) or self._deletes(test.args[1].value):
                    return False  # the `__init__` that runs is the first one found
                return True
            todo.extend(self.interp.classes[b] for b in info.bases if b in self.interp.classes)  # type: ignore[attr-defined]
        return False

    def _deletes(self, name: str) -> bool:
        """`del self.name` or `delattr(self, "name")` somewhere in the file."""
        for n in iter_tree(self.interp.module):
            if isinstance(n, ast.Delete) and any(isinstance(t, ast.Attribute) and t.attr == name for t in n.targets):
                return True
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "delattr" and len(n.args) == 2 \
                    and isinstance(n.args[1], ast.Constant) and n.args[1].value == name:
                return True
        return False

    def constant_flag(self, test: ast.expr, flow: Flow, frame: Frame) -> bool | None:
        """`if do_backward:` in a helper called with `do_backward=False` (or left at its default): the
        flag's value on this call, when it is a literal True/False/None."""
        if isinstance(test, ast.Compare):
            return self.constant_comparison(test, flow, frame)
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        key = self._setting_key(test.operand if negated else test, frame)  # type: ignore[attr-defined]
        if key is None:
            return None
        v = self.interp.expressions.lookup(key, flow, frame)
        if v is not None and type(v.const) is int and _setting_int(key, v):
            truth = v.const != 0  # `if self.mode:` of a setting `__init__` fixed at a literal int (`self.mode = 18`)
            return not truth if negated else truth
        if v is None or v.const not in ("True", "False", "None"):
            return None
        truth = v.const == "True"
        return not truth if negated else truth

    def _setting_key(self, node: ast.expr, frame: Frame) -> str | None:
        """The name a tested value is looked up by: a plain name, or `self.x` set once (`if self.gan:` of
        `self.gan = gan` in `__init__`, given `gan=True`); None for anything else."""
        if isinstance(node, ast.Attribute) and self._set_once(node, frame):
            return f"self.{node.attr}"
        return node.id if isinstance(node, ast.Name) else None

    def _set_once(self, node: ast.Attribute, frame: Frame) -> bool:
        """`self.x` in a method of a class none of whose methods but `__init__` (nor its bases') assigns it:
        what `__init__` left there holds for the whole run (a setting, `self.gan = gan`)."""
        if not (isinstance(node.value, ast.Name) and node.value.id == "self") or not isinstance(frame.cls, ClassInfo):
            return False
        return f"self.{node.attr}" not in self.interp.objects.assigned_outside_init(frame.cls)

    def constant_comparison(self, test: ast.Compare, flow: Flow, frame: Frame) -> bool | None:
        """`if optimizer_idx == 0:` in a loss module's `forward` called with `optimizer_idx=1`: a name this
        call bound to a literal int, compared with a literal int."""
        if len(test.ops) != 1 or not isinstance(test.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
            return None
        left, right = test.left, test.comparators[0]
        if isinstance(left, ast.Constant):
            left, right = right, left
        if isinstance(right, ast.Constant) and right.value is None:
            return self._none_comparison(left, isinstance(test.ops[0], (ast.Eq, ast.Is)), flow, frame)
        if isinstance(test.ops[0], (ast.Is, ast.IsNot)):
            return None
        # a name this call bound, or `self.x` that only `__init__` sets (`self.mode = 18`, then `if self.mode == 0:`)
        key = left.id if isinstance(left, ast.Name) else self._setting_key(left, frame)
        if key is None:
            return None
        if isinstance(right, ast.Constant) and type(right.value) is str:
            return self._literal_choice(key, right.value, isinstance(test.ops[0], ast.Eq), flow, frame)
        if not (isinstance(right, ast.Constant) and type(right.value) is int):
            return None
        v = self.interp.expressions.lookup(key, flow, frame)
        if v is None or type(v.const) is not int or v.counter is not None and not _setting_int(key, v):
            return None
        return (v.const == right.value) == isinstance(test.ops[0], ast.Eq)

    def _literal_choice(self, name: str, literal: str, equal: bool, flow: Flow, frame: Frame) -> bool | None:
        """`if type == 'first':` in a helper called with `type='first'` (recohut's `get_params_group(model,
        'first')`): a name this call bound to string literals only, none of them or only this one."""
        v = self.interp.expressions.lookup(name, flow, frame)
        if v is None or v.choices is None or v.entities or v.modules or v.opaque or v.counter is not None:
            return None
        if repr(literal) not in v.choices:
            return not equal
        return equal if v.choices == {repr(literal)} else None

    def _none_comparison(self, subject: ast.expr, is_none: bool, flow: Flow, frame: Frame) -> bool | None:
        """`if lm_labels is not None:` in a forward called without `lm_labels` (its default None), or `if self.x is
        None:` of a setting `__init__` left None: decided when the name holds None, or a literal, on this call."""
        key = self._setting_key(subject, frame)
        if key is None:
            return None
        v = self.interp.expressions.lookup(key, flow, frame)
        if v is None or v.counter is not None:
            return None
        if v.const == "None" and not (v.entities or v.modules or v.reach or v.opaque or v.items):
            return is_none
        if v.const in ("True", "False") or type(v.const) is int or v.choices is not None:
            return not is_none  # a literal is no None
        return None

    def missing_attribute(self, test: ast.expr) -> bool:
        """`hasattr(self, "name")` for a name no class here defines and nothing here assigns."""
        if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "hasattr" and len(test.args) == 2
                and isinstance(test.args[0], ast.Name) and test.args[0].id == "self"
                and isinstance(test.args[1], ast.Constant) and isinstance(test.args[1].value, str)):
            return False
        name = test.args[1].value
        if self._defined_names is None:
            # the names `hasattr` tests are not definitions: every such test is left out, not only this one (the
            # same test in two methods made the answer depend on which method ran first)
            tested: set[int] = set()
            strings: list[ast.Constant] = []
            defined: set[str] = set()
            for n in iter_tree(self.interp.module):  # one walk of a file that may be thousands of lines long
                kind = type(n)
                if kind is ast.Call and isinstance(n.func, ast.Name) and n.func.id == "hasattr" and len(n.args) == 2:  # type: ignore[attr-defined]
                    tested.add(id(n.args[1]))  # type: ignore[attr-defined]
                elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                    defined.add(n.name)  # type: ignore[attr-defined]
                elif kind is ast.Attribute and isinstance(n.ctx, ast.Store):  # type: ignore[attr-defined]
                    defined.add(n.attr)  # type: ignore[attr-defined]
                elif kind is ast.Constant and isinstance(n.value, str):  # type: ignore[attr-defined]
                    strings.append(n)  # type: ignore[arg-type]
            self._defined_names = defined | {n.value for n in strings if id(n) not in tested}
        return name not in self._defined_names


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _grad_enabled_test(test: ast.expr) -> bool:
    """`torch.is_grad_enabled()` (however `torch` is imported: the call's last name)."""
    return isinstance(test, ast.Call) and not test.args and dotted(test.func) in (
        "torch.is_grad_enabled", "is_grad_enabled")


def _setting_int(key: str, value: Value) -> bool:
    """A literal int that `__init__` alone set on `self` (the caller checked `_set_once`) and nothing counted up:
    what looks like a counter's start (`self.mode = 18`) is a setting for the whole run."""
    return key.startswith("self.") and (value.counter is None or not value.counter.incremented)

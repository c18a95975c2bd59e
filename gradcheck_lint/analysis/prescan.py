"""One pass over a module before interpretation: which branches can matter, which functions touch
gradients, counters tested against windows, and how names are used (evidence of roles)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from . import names as N
from .apimodels import Catalogue
from .conditions import analyse_test
from .conventions import convention
from .flags import presence_test
from .relations import relation
from .syntax import FUNCTIONS, TESTS, arguments, code
from .walk import breadth_first, child_nodes, children
from .window_arithmetic import modulo_atoms

_COMPREHENSIONS: tuple[type, ...] = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_LEAVING = frozenset({ast.Continue, ast.Break, ast.Return, ast.Raise})
# The effects that make a call a training event whatever its receiver (backward, a schedule's, step, clears, freezing,
# toggling, unscaling, clipping, scaling a loss: it decides per path whether gradients come out
# scaled): the names of the catalogue's rows with one of them are events ...
EVENT_EFFECTS = ("backward", "schedule", "step", "clear", "freeze", "toggle", "unscale", "clip", "scale")
# ... and so are these in-place calls on gradients themselves, which no API row models: `p.grad.zero_()`,
# `.fill_(0)`, `.mul_(scale)`, `.div_(n)`, and `x.detach_()`
GRADIENT_CALLS = frozenset({"zero_", "fill_", "mul_", "div_", "detach_"})
_LOSS_SCALER = convention("loss_scaler")


def _scaler_named(receiver: ast.expr) -> bool:
    """`scaler`, `self.grad_scaler`: a receiver named like an AMP loss scaler."""
    text = N.ref_text(receiver)
    return text is not None and _LOSS_SCALER.search(text.rsplit(".", 1)[-1]) is not None


def event_attrs(catalogue: Catalogue) -> frozenset[str]:
    """The method names that make a call a training event whatever its receiver, from the catalogue in force."""
    return catalogue.named_by_effect(*EVENT_EFFECTS) | GRADIENT_CALLS


@dataclass
class _Marks:
    """What a branch (or a function body) holds that can matter to gradients."""

    direct: bool = False  # a training event, a `.grad` access, a statement leaving the block
    names: set[str] = field(default_factory=set)  # functions it calls by name
    attrs: set[str] = field(default_factory=set)  # methods it calls (`self.m(...)`, `trainer.m(...)`)
    self_attrs: set[str] = field(default_factory=set)  # of which called on `self`
    passed: set[str] = field(default_factory=set)  # of `names`, those only passed as arguments (callbacks?)


class Prescan:
    """What the interpreter needs to know up front, from one iterative pass over the module."""

    def __init__(self, module: ast.Module, catalogue: Catalogue, imports: N.ImportMap | None = None) -> None:
        self.catalogue = catalogue
        # (what a call's name stands for: `DDP(model)` after `from torch.nn.parallel import
        # DistributedDataParallel as DDP`)
        self._imports = imports if imports is not None else N.ImportMap.of(module)
        self.event_attrs = event_attrs(catalogue)
        # `torch.set_grad_enabled(False)` on its own line: the mode holds past the branch that set it (`grad_mode`)
        self.mode_setters = catalogue.mode_setters()
        self.called_names: set[str] = set()
        self.called_refs: set[str] = set()  # texts called like functions (`self.vqgan(imgs)`)
        self.called_attrs: set[str] = set()
        self.models: set[str] = set()
        # `x.requires_grad_()`: a model, unless `x` is also used as a tensor (`x.backward()`, `x.detach()`): a
        # tensor made to require grad (`loss = loss.detach(); loss.requires_grad_(True)`) is no model
        self.grad_switched: set[str] = set()
        self.tensors: set[str] = set()  # receivers of a method tensors have and modules do not
        self._tensor_only: dict[str, bool] = {}
        self.called_models: set[str] = set()
        self.saved: set[str] = set()  # texts whose `state_dict()` is taken: models, unless named otherwise
        self.stepped: set[str] = set()
        self.zeroed: set[str] = set()
        self.synced: set[str] = set()  # texts whose gradient sync is switched (`x.no_sync()`): data-parallel wrappers
        self._synced_in: dict[int, frozenset[str]] = {}  # function id -> the plain names it switches the sync of
        self.windows: dict[str, set[str]] = {}
        # counters of more than one per micro-batch (`seen += x.size(0)`, `tokens += batch["n"]`): the counter's
        # text -> what it is incremented by; a window tested on it is counted in samples, not micro-batches
        self.sample_counters: dict[str, str] = {}
        self.test_keys: dict[str, int] = {}  # how many `if`/`while` statements test each text
        self._keys: dict[int, str] = {}  # id of such a test -> its text (`ast.dump`)
        # operands of a two-operand comparison (`relations.relation`) -> the texts of the tests comparing them
        self.compared_pairs: dict[tuple[str, str], set[str]] = {}
        self.assigned_calls: dict[int, str] = {}  # id of a call -> the name its result is assigned to
        # `self.model = accelerator.prepare(model)`: (the text assigned, the texts handed to a call that returns the
        # model it is given wrapped for data parallelism): what is handed in is a model when the result is one
        self._parallelised: list[tuple[str, list[str]]] = []
        self._parallelising = catalogue.parallelising_names()
        self._marks: dict[int, _Marks] = {}
        self._defs: dict[str, list[_Marks]] = {}  # every function and method of the module, by name
        self._bodies: dict[int, _Marks] = {}  # the same, by the id of the definition
        self._gates: list[tuple[int, list[tuple[str, str]]]] = []  # `if` statements testing `counter % N`
        self._flag_gates: list[int] = []  # window gates whose arms set a flag to a literal (`flags`)
        self.presence_tested: set[str] = set()  # names tested `x is None` / `x is not None`
        self.globals_declared: set[str] = set()  # names some function declares `global` (`filled_globals`)
        self._none_arms: list[tuple[int, set[str]]] = []  # `if`s an arm of which assigns names None
        self._self_stored: set[str] = set()  # attributes assigned on `self` somewhere (`self.model = ...`)
        # names read, and names bound in any scope (assigned, defined, parameters, imported): `unbound_names`
        # looks for a misspelt one only when some name read is bound nowhere
        self.names_read: set[str] = set()
        self.names_bound: set[str] = set()
        # `if args.train_text_encoder and args.gradient_accumulation_steps > 1 and accelerator.num_processes > 1:
        # raise ValueError(...)`: the script refuses some accumulation on several processes (diffusers' and
        # peft's DreamBooth scripts), so a model the accumulation context leaves out is not synced there
        self.refuses_distributed_accumulation = False
        self._scan(module)
        self.models |= self.grad_switched - self.tensors
        for _ in range(2):  # (a chain: `net = DDP(model)`, `self.model = accelerator.prepare(net)`)
            for target, handed in self._parallelised:
                if target in self.models or target in self.called_models:
                    self.models.update(handed)
        self.touching = self._touching()
        self._inert: set[str] | None = None
        self.interesting = {key: self._matters(m) for key, m in self._marks.items()}
        for key in self._flag_gates:  # `if count >= accum: apply_gradient = True`: the flag carries the gate
            self.interesting[key] = True
        for key, nones in self._none_arms:
            # `if use_emb: opt = Adam(...) else: opt = None`, with `opt is not None` tested elsewhere: the path
            # that built it knows the test it was built under (`flags.presence_flags`)
            if nones & self.presence_tested:
                self.interesting[key] = True
        # A counter's window phase is followed only where a test of it guards something that touches
        # gradients: `if step % log_interval == 0: log(...)` would multiply the paths for nothing.
        for key, atoms in self._gates:
            if self.interesting.get(key, True):
                for counter, window in atoms:
                    self.windows.setdefault(counter, set()).add(window)

    def stores_on_self(self, attr: str) -> bool:
        """Some code of the module assigns `self.<attr> = ...`."""
        return attr in self._self_stored

    def compares_otherwise(self, test: ast.expr) -> bool:
        """Another `if`/`while` test compares the same two operands differently (`iteration == n`
        and `iteration < n`): what a path learns at one decides the other."""
        rel = relation(test) if type(test) is ast.Compare else None
        return rel is not None and len(self.compared_pairs.get(rel[:2], ())) > 1

    def tests_of(self, test: ast.expr) -> int:
        """How many `if`/`while` statements of the module test the text of `test`."""
        key = self._keys.get(id(test))
        return self.test_keys.get(key if key is not None else _test_dump(test), 0)

    def _scan(self, module: ast.Module) -> None:
        """Every node, each carrying the `if`s and comprehensions around it and its function's marks."""
        todo: list[tuple[ast.AST, tuple[int, ...], _Marks | None]] = [(module, (), None)]
        marks = self._marks
        while todo:
            node, around, fn = todo.pop()
            kind = node.__class__
            if kind is ast.If or kind is ast.While:
                test = node.test
                key = self._keys[id(test)] = _test_dump(test)
                self.test_keys[key] = self.test_keys.get(key, 0) + 1
                if type(test) is ast.Compare:
                    rel = relation(test)
                    if rel is not None:
                        self.compared_pairs.setdefault(rel[:2], set()).add(key)
                atoms = modulo_atoms(test)
                if kind is ast.If and not self.refuses_distributed_accumulation:
                    self.refuses_distributed_accumulation = _refuses_distributed_accumulation(node)  # type: ignore[arg-type]
                if kind is ast.If:
                    if isinstance(node, ast.If) and _sets_flag(node) and analyse_test(0, node, test).is_accumulation_gate:
                        self._flag_gates.append(id(node))
                    if isinstance(node, ast.If):
                        tested_presence = presence_test(test)
                        if tested_presence is not None:
                            self.presence_tested.add(tested_presence[0])
                        nones = _assigns_none(node)
                        if nones:
                            self._none_arms.append((id(node), nones))
                    marks[id(node)] = _Marks()
                    around = around + (id(node),)
                    if atoms:
                        self._gates.append((id(node), atoms))
                else:
                    for counter, window in atoms:
                        self.windows.setdefault(counter, set()).add(window)
            elif isinstance(node, ast.Global):
                self.globals_declared.update(node.names)
            elif kind is ast.Name:
                (self.names_read if type(node.ctx) is ast.Load else self.names_bound).add(node.id)
            elif kind in FUNCTIONS:
                args = node.args
                self.names_bound.add(node.name)
                every = (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
                self.names_bound.update(a.arg for a in every if a is not None)
                body = self._bodies[id(node)] = _Marks()
                self._defs.setdefault(node.name, []).append(body)
                for decorator in node.decorator_list:
                    todo.append((decorator, around, fn))
                for arg in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
                    todo.append((arg, around, fn))
                # a nested function's body is its own; the ifs around its definition do not hold it
                todo.extend((stmt, (), body) for stmt in node.body)
                continue
            elif kind in _COMPREHENSIONS:
                # the element is outside the clauses; the `for` clauses are keyed by the first one
                for part in (node.key, node.value) if kind is ast.DictComp else (node.elt,):
                    todo.append((part, around, fn))
                key = id(node.generators[0])
                marks[key] = _Marks()
                inner = around + (key,)
                todo.extend((clause, inner, fn) for clause in node.generators)
                continue
            elif kind is ast.Call:
                self._call(node, [marks[k] for k in around] + ([fn] if fn is not None else []))  # type: ignore[arg-type]
            elif kind in _LEAVING:
                for key in around:
                    marks[key].direct = True
            elif kind is ast.Attribute:
                # `.grad` read or written; `.requires_grad` set (a freeze), not merely read (`if p.requires_grad:`)
                attr = node.attr
                # (`torch.autograd.grad(...)` returns gradients and leaves every `.grad` as it was)
                if attr == "grad" and code(node.value).rpartition(".")[2] != "autograd" \
                        or attr == "requires_grad" and type(node.ctx) is not ast.Load:
                    for m in [marks[k] for k in around] + ([fn] if fn is not None else []):
                        m.direct = True
                elif attr == "no_sync":  # `model.no_sync` chosen into a variable, entered later: a wrapper too
                    recv = N.ref_text(node.value)
                    if recv is not None:
                        self.synced.add(recv)
            elif kind is ast.ClassDef:
                self.names_bound.add(node.name)
            elif kind is ast.Import or kind is ast.ImportFrom:  # (`from x import *` binds "*": any name may be bound)
                self.names_bound.update(a.asname or a.name.split(".", 1)[0] for a in node.names)
            elif kind is ast.ExceptHandler and node.name:
                self.names_bound.add(node.name)
            elif kind is ast.Lambda:
                self.names_bound.update(a.arg for a in node.args.args)
            elif kind is ast.AugAssign:
                if type(node.op) is ast.Add and _counts_more_than_one(node.value):
                    target = N.ref_text(node.target)
                    if target is not None:
                        self.sample_counters[target] = code(node.value)
            elif kind is ast.Assign:
                value = node.value
                for target in node.targets:
                    if type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id == "self":
                        self._self_stored.add(target.attr)
                if type(value) is ast.Call and len(node.targets) == 1:
                    target = N.ref_text(node.targets[0])
                    if target is not None:
                        self.assigned_calls[id(value)] = target
                        if type(value.func) is ast.Attribute and value.func.attr in self._parallelising:
                            given = [*value.args, *(k.value for k in value.keywords if k.arg in ("model", "module"))]
                            handed = [t for a in given if (t := N.ref_text(a)) is not None
                                      and not N.OPTIMIZER_NAME.search(t.rsplit(".", 1)[-1])]
                            self._parallelised.append((target, handed))
                elif type(value) is ast.BinOp and not _builds_sequence(value):
                    # `loss = loss * (1 + penalty)`: arithmetic makes a tensor (or a number), never a module, so a
                    # `loss.requires_grad_(True)` elsewhere switches a tensor (pytorch-forecasting's `step`)
                    self.tensors.update(t for t in map(N.ref_text, node.targets) if t is not None)
                elif isinstance(value, TESTS):
                    for counter, window in modulo_atoms(value):
                        self.windows.setdefault(counter, set()).add(window)
            todo.extend((child, around, fn) for child in children(node))

    def _wraps(self, func: ast.expr) -> bool:
        """A call making a data-parallel wrapper of a model (`DDP(model)`, `accelerator.prepare(model)`)."""
        if type(func) is ast.Attribute and func.attr in self._parallelising:
            return True
        qualified = self._imports.qualify(func) if type(func) in (ast.Name, ast.Attribute) else None
        return qualified is not None and "." in qualified and self.catalogue.wraps_for_data_parallel(qualified)

    def synced_here(self, text: str, fn: ast.AST | None) -> bool:
        """`text` is a data-parallel wrapper by how the code switches its sync: an attribute (`self.model.no_sync()`)
        wherever the file does, a plain name only where the function using it does (`model.no_sync()` in
        `train_ddp` says nothing of the `model` of `train`, another local)."""
        if text not in self.synced:
            return False
        if "." in text or "[" in text or fn is None:
            return True
        found = self._synced_in.get(id(fn))
        if found is None:
            switches = ("no_sync", "set_requires_gradient_sync")
            found = self._synced_in[id(fn)] = frozenset(
                t for n in ast.walk(fn) if isinstance(n, ast.Attribute) and n.attr in switches
                and (t := N.ref_text(n.value)) is not None)
        return text in found

    def _call(self, node: ast.Call, here: list[_Marks]) -> None:
        """Note what a call says about names, and what it makes the blocks around it hold."""
        func = node.func
        called = N.ref_text(func)
        if called is not None:
            self.called_refs.add(called)
        if called is not None and N.MODEL_NAME.search(called.rsplit(".", 1)[-1]) and not N.OPTIMIZER_NAME.search(called):
            self.called_models.add(called)  # `encoder(x)`: a callable named like a model
        if here and self._wraps(func):
            # `if distributed: model = DDP(model)`: what a backward through the model does depends on the arm, so
            # the paths remember which way they went (`arm_facts`)
            for m in here:
                m.direct = True
        if isinstance(func, ast.Name):
            self.called_names.add(func.id)
            if func.id in self.mode_setters:
                for m in here:
                    m.direct = True
            for m in here:
                m.names.add(func.id)
                m.passed.discard(func.id)
        elif isinstance(func, ast.Attribute):
            attr = func.attr
            receiver = func.value
            is_self = isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")
            if is_self:
                self.called_attrs.add(attr)
            for m in here:
                m.attrs.add(attr)
                if is_self:
                    m.self_attrs.add(attr)
                if attr in self.event_attrs or attr in self.mode_setters:
                    m.direct = True
            if attr == "update" and not node.args and not node.keywords and _scaler_named(receiver):
                # `if use_amp: scaler.update()` on the path that skips the step: the scaler's state after it differs
                # by arm (`update` is too common a name to be an event on any receiver: `dict.update`, a meter's)
                for m in here:
                    m.direct = True
            recv = N.ref_text(receiver) or N.member_ref(receiver)  # `opts[i].step()`: a member of `opts`
            if recv is not None:
                if attr in ("parameters", "named_parameters", "train", "eval", "modules", "children"):
                    self.models.add(recv)
                elif attr == "requires_grad_":
                    self.grad_switched.add(recv)
                elif attr == "state_dict":  # models have one, and so do optimizers, schedulers and scalers
                    self.saved.add(recv)
                elif attr == "step":
                    self.stepped.add(recv)
                    optimizer = self._stepped_argument(recv, node)
                    if optimizer is not None:  # `scaler.step(optimizer)`
                        self.stepped.add(optimizer)
                        self.zeroed.add(optimizer)
                elif attr == "zero_grad":
                    self.zeroed.add(recv)
                elif attr in ("no_sync", "set_requires_gradient_sync"):
                    self.synced.add(recv)
                elif self._only_tensors_have(attr):
                    self.tensors.add(recv)
        if called is not None and N.callee_is_passive(called) and called.rsplit(".", 1)[-1] not in self._defs:
            return  # `save_checkpoint(model, optimizer)`, `lm_checkpoint(...)`: reads what it is handed
        for arg in arguments(node):  # functions passed as callbacks (closures, map, Thread)
            if isinstance(arg.value, ast.Name):
                name = arg.value.id
                self.called_names.add(name)
                for m in here:
                    if name not in m.names:
                        m.passed.add(name)
                    m.names.add(name)

    def _only_tensors_have(self, attr: str) -> bool:
        """`attr` is a method of `torch.Tensor` in the catalogue and not one of `torch.nn.Module` (`backward`, `detach`)."""
        found = self._tensor_only.get(attr)
        if found is None:
            cat = self.catalogue
            found = self._tensor_only[attr] = cat.method("torch.Tensor", attr) is not None and cat.method("torch.nn.Module", attr) is None
        return found

    def _stepped_argument(self, receiver: str, node: ast.Call) -> str | None:
        """The optimizer a `step(...)` of a framework object applies (`scaler.step(optimizer)`)."""
        api = self.catalogue.receiver_type(receiver)
        model = self.catalogue.method(api, "step") if api else None
        if model is None:
            return None
        for effect in model.effects:
            ref = effect.ref("optimizer") if effect.kind == "step" else None
            if ref is not None and ref.positions:
                args = [a for a in arguments(node) if a.keyword is None]
                if len(args) > ref.positions[0]:
                    return N.ref_text(args[ref.positions[0]].value)
        return None

    def _touching(self, strict: bool = False) -> set[str]:
        """Functions and method names of this module that can (transitively) touch gradients; `strict`:
        names only passed as arguments count only when they name a function of this module."""
        touching = {name for name, ms in self._defs.items() if any(m.direct for m in ms)}
        changed = True
        while changed:
            changed = False
            for name, ms in self._defs.items():
                if name not in touching and any(self._reaches(m, touching, strict) for m in ms):
                    touching.add(name)
                    changed = True
        return touching

    def _reaches(self, m: _Marks, touching: set[str], strict: bool = False) -> bool:
        """Calls a touching function, an unknown function named for a gradient effect, or an
        inherited `self` method (defined elsewhere: it may do anything)."""
        if (m.names | m.attrs) & touching:
            return True
        if any(n not in self._defs and N.callee_suggests_grad_effect(n) and not (strict and n in m.passed) for n in m.names):
            return True
        # (strict: `self.model(x)` calls an object stored on `self`, not an inherited method)
        return any(a not in self._defs and self.catalogue.method("torch.nn.Module", a) is None and not (strict and a in self._self_stored)
                   for a in m.self_attrs)

    def _matters(self, m: _Marks) -> bool:
        return m.direct or self._reaches(m, self.touching)

    def calls_events(self, fn: ast.AST, *words: str) -> bool:
        """Whether the body of function `fn` (nested functions aside) calls, for each word, a training
        event whose method name contains it (`step` and `backward`)."""
        marks = self._bodies.get(id(fn))
        return marks is None or all(any(w in a for a in marks.attrs if a in self.event_attrs) for w in words)

    def trains(self, name: str) -> bool:
        """Whether a function or method of this name can touch gradients."""
        return name in self.touching

    def surely_inert(self, name: str) -> bool:
        """Whether a function or method of this name is expected to touch no gradient even by the
        names of what it is handed (`isinstance(m, PreTrainedModel)`, `save(optimizer=opt)` do not
        call `PreTrainedModel` or `opt`). A prediction only: `inlining` checks it as the callee runs."""
        if self._inert is None:
            self._inert = set(self._defs) - self._touching(strict=True)
        return name in self._inert

    def function_inert(self, fn: ast.AST) -> bool:
        """`surely_inert` for one function of this module rather than every function of its name (a file
        holds many `forward`s: one that runs a loss and backward does not make the others train)."""
        marks = self._bodies.get(id(fn))
        if marks is None:
            return False
        if self._inert is None:
            self._inert = set(self._defs) - self._touching(strict=True)
        return not marks.direct and not self._reaches(marks, set(self._defs) - self._inert, strict=True)

    def function_touches(self, fn: ast.AST) -> bool:
        """A function of this module read whose own body calls a training event (`self.zero_grad()`, `loss.backward()`,
        `opt.step()`): a `return` or a call of an unread helper is not enough."""
        if id(fn) not in self._bodies:
            return False
        known: bool | None = getattr(fn, "_calls_training_event", None)  # kept on the node: freed with its tree
        if known is not None:
            return known
        found = self._calls_training_event(fn)
        setattr(fn, "_calls_training_event", found)  # noqa: B010 (an attribute ast nodes do not declare)
        return found

    def _calls_training_event(self, fn: ast.AST) -> bool:
        todo = child_nodes(fn)
        while todo:
            node = todo.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in self.event_attrs:
                return True
            todo.extend(child_nodes(node))
        return False

    def _named_as_other(self, text: str) -> bool:
        """A name the catalogue types as something other than a model (`scaler`: a GradScaler)."""
        api = self.catalogue.receiver_type(text)
        return api is not None and self.catalogue.kind(api) not in (None, "model")

    def evidence(self) -> tuple[frozenset[str], frozenset[str]]:
        """Texts used like models (`x.parameters()`) and like optimizers (`x.step()` and zero_grad)."""
        # (a member of a collection, `opts[*]` or `optimizer[1]`, is named by the collection: `student_optimizers`)
        optimizers = {s for s in self.stepped if N.OPTIMIZER_NAME.search(s.split("[", 1)[0].rsplit(".", 1)[-1])
                      and not N.SCHEDULER_NAME.search(s) and not N.AVERAGE_NAME.search(s.rsplit(".", 1)[-1])}
        optimizers |= {s for s in self.stepped & self.zeroed if s not in self.models}
        models = self.models | self.called_models | {s for s in self.saved if not self._named_as_other(s)}
        # `loss_fn.discriminator.parameters()`: `loss_fn` holds a model, so calling it may run that model
        models |= {m.rsplit(".", 1)[0] for m in self.models if m.count(".") == 1 and not m.startswith("self.")}
        # `self.vqgan(imgs)` and `self.vqgan.encoder.parameters()`: a called object whose attributes are models is
        # a module holding them, and calling it runs them
        models |= {m.rsplit(".", 1)[0] for m in self.models if "." in m and m.rsplit(".", 1)[0] in self.called_refs
                   and m.rsplit(".", 1)[0] != "self"}
        return frozenset(models - optimizers), frozenset(optimizers)


_PROCESS_COUNTS = frozenset({"num_processes", "world_size", "n_gpu", "num_gpus"})


def _counts_more_than_one(amount: ast.expr) -> bool:
    """An increment that counts what a micro-batch holds (`x.size(0)`, `len(batch)`, `inputs.shape[0]`,
    `curr_batch_size`, the items that pass a test: `sum(labels != 0)`, `(mask > 0).sum()`), not the micro-batch
    itself: a count of samples or tokens. Only the count itself,
    never a product (`loss.item() * x.size(0)` is a running sum, not a counter)."""
    if isinstance(amount, ast.Call):
        func = amount.func
        if isinstance(func, ast.Name) and func.id == "sum" and len(amount.args) == 1:
            return isinstance(amount.args[0], ast.Compare)  # `sum(labels != 0)`: how many items pass a test
        if isinstance(func, ast.Attribute) and func.attr == "item":
            return _counts_more_than_one(func.value)  # `(mask > 0).sum().item()`
        return ((isinstance(func, ast.Name) and func.id == "len")
                or (isinstance(func, ast.Attribute) and func.attr in ("size", "numel"))
                or (isinstance(func, ast.Attribute) and func.attr in ("sum", "count_nonzero")
                    and isinstance(func.value, ast.Compare)))  # `(labels != -100).sum()`
    if isinstance(amount, ast.Subscript):
        return isinstance(amount.value, ast.Attribute) and amount.value.attr == "shape"
    if isinstance(amount, (ast.Name, ast.Attribute)):
        return bool(_SAMPLE_COUNT.fullmatch(amount.id if isinstance(amount, ast.Name) else amount.attr))
    return False


# the last name of a count of what a micro-batch holds: `batch_size`, `curr_batch_size`, `bs`, `n_tokens`, `num_samples`
_SAMPLE_COUNT = convention("sample_count")


def _refuses_distributed_accumulation(node: ast.If) -> bool:
    """An `if` testing an accumulation count and a process count whose body raises."""
    if not any(type(stmt) is ast.Raise for stmt in node.body):
        return False
    names = {n.id if type(n) is ast.Name else n.attr for n in breadth_first(node.test) if type(n) in (ast.Name, ast.Attribute)}
    return bool(names & _PROCESS_COUNTS) and any("accum" in n for n in names)


def _sets_flag(node: ast.If) -> bool:
    """An arm of the `if` assigns a name a literal boolean (`apply_gradient = True`)."""
    return any(isinstance(st, ast.Assign) and isinstance(st.value, ast.Constant) and type(st.value.value) is bool
               and any(isinstance(t, ast.Name) for t in st.targets) for st in (*node.body, *node.orelse))


def _builds_sequence(node: ast.BinOp) -> bool:
    """`layers + [nn.Linear(4, 4)]`, `blocks * 2`: a list or tuple joined or repeated, not arithmetic."""
    return any(isinstance(side, (ast.List, ast.Tuple, ast.ListComp)) for side in (node.left, node.right))


def _test_dump(test: ast.expr) -> str:
    """A test's structure, the parts of `and`/`or` in one order (`conditions.test_key`: one fact however the
    parts are ordered)."""
    if isinstance(test, ast.BoolOp):
        return f"{type(test.op).__name__}({', '.join(sorted(_test_dump(v) for v in test.values))})"
    return ast.dump(test)


def _assigns_none(stmt: ast.If) -> set[str]:
    """The names an arm of the `if` (or of an `if` nested in it) assigns `None` (`opt = None`)."""
    out: set[str] = set()
    todo: list[ast.stmt] = [*stmt.body, *stmt.orelse]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is None:
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.If):
            todo.extend((*node.body, *node.orelse))
    return out

"""Expressions and assignments: the abstract value of each expression, and what storing it does."""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import replace

from . import bound_tests, class_refs, filled_globals, named_tuples, param_groups, periods, type_tests
from . import names as N
from .accumulation import combined_terms
from .concatenation import REST_KEY as _REST_KEY
from .concatenation import concatenated
from .constant_comprehensions import unrolled
from .conventions import convention
from .deferred import defer, may_make_context, synthetic_call
from .definitions import ClassInfo, Function
from .empty_containers import always_false
from .flags import assign as assign_flag
from .flags import emptiness_flags, literal_flags, presence_flags
from .flags import forget as forget_flag
from .flow import SYNC_OFF, SYNC_SET, Flow, Frame, Outcome, appended_last
from .gradstate import PathState
from .item_rewrites import every_item_rewritten
from .no_grad_results import made_without_grad
from .parts import ExpressionsHost
from .provenance import Assumption, assumed, weakest
from .sync_choices import choice_of
from .syntax import TESTS, code, int_value, is_int, is_number, local_names, reads_grad_of
from .unpacking import indices_item, unpack
from .unregistered import plain_container
from .values import (
    EMPTY,
    OPAQUE,
    PRESENT,
    Counter,
    Holder,
    Kind,
    Value,
    blank,
    display,
    holding,
    join,
    present,
    union_as_tensor,
)
from .walk import breadth_first, iter_tree

_ANY_KEY = "?*"  # the item of a dict stored under a key the analysis does not know (`d[name] = ...`)
# what any other key of a dict made out of sight holds, once an item was stored into it (`config = load_config(opt)`,
# then `config["optimizer"] = ...`): what the whole read before
_COMPREHENSIONS: tuple[type, ...] = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_NO_GRADIENT_ATTRS = frozenset({"data", "grad", "indices"})  # `out.max(1).indices`: the positions, integers
# what describes a tensor, never None: its size (`bs, n = x.shape`: numbers), type, device, flags
_DESCRIPTION_ATTRS = frozenset({"shape", "dtype", "device", "requires_grad", "is_cuda", "ndim"})


# env key prefix: the object a subscript item was stored into (`%item:loss_dict["loss"]` -> `loss_dict`'s value)
_ITEM_OF = "%item:"

_SIZE_ATTRIBUTE = convention("size_attribute")


class Expressions:
    """Evaluate expressions to abstract values; store values into names, attributes and `.grad`."""

    def __init__(self, interp: ExpressionsHost) -> None:
        self.interp = interp
        self.table = interp.table
        self._flags: list[int] = []
        self._numeric_arrays: dict[tuple[int, str], bool] = {}  # (scope, name) -> bound only to NumPy calls
        # (slot key, id of the value stored) -> that value, and the container and index it was stored under
        self._slot_witnesses: dict[tuple[str, int], tuple[Value, Value, Value, int, int]] = {}
        self._rebound: dict[str, int] = {}  # reference -> how many times a name or attribute was bound (any path)
        self._own_data_attributes: dict[int, bool] = {}  # by module node: the file sets `self.data` (`_parameter_data`)
        self._fills: dict[int, tuple[ast.Module, dict[str, list[tuple[Function, ast.expr | None]]]]] = {}

    def ref(self, expr: ast.AST) -> str | None:
        return N.ref_text(expr)

    def lookup(self, key: str, flow: Flow, frame: Frame | None) -> Value | None:
        if key in flow.env:
            return flow.env[key]
        if key == "self" and frame is not None and frame.self_value is not None:
            return frame.self_value
        if frame is not None and frame.closure_env is not None and key in frame.closure_env:
            return frame.closure_env[key]
        return self.interp.module_env.get(key)

    def _arms(self, expr: ast.IfExp, flow: Flow, frame: Frame, gates: list[int]) -> list[Value]:
        """The values of a conditional expression's two arms. When an arm can touch gradients
        (`opt.step() if c else opt.step(bs)`), each runs on the paths of its side of the test only, and
        the flow becomes their join: one step, not two; otherwise both are read on the one flow."""
        touching = [n for arm in (expr.body, expr.orelse) for n in breadth_first(arm)
                    if isinstance(n, ast.Call) and self.interp.touches_gradients(N.last_name(n.func) or "")]
        if not touching:
            arms = [self.eval(expr.body, flow, frame), self.eval(expr.orelse, flow, frame)]
            subject = type_tests.tensor_tested(expr.test, self.interp.imports)
            if subject is not None and subject == code(expr.orelse):
                # `x.item() if hasattr(x, "item") else x`: where the test fails, `x` is no tensor
                arms[1] = type_tests.without_graph(arms[1])
            if type_tests.graphless_tested(expr.test, self.interp.imports) == code(expr.body):
                arms[0] = type_tests.without_graph(arms[0])  # `x if isinstance(x, float) else x.item()`
            return arms
        _cond, t, f = self.interp.branch(expr, expr.test, flow, gates, frame)
        values = [self.eval(expr.body, t, frame) if t is not None else EMPTY,
                  self.eval(expr.orelse, f, frame) if f is not None else EMPTY]
        joined = Flow.join([t, f])
        flow.env, flow.states = (joined.env, joined.states) if joined is not None else (flow.env, frozenset())
        return values

    def gate_flags(self, test: ast.expr, flow: Flow, frame: Frame) -> list[int]:
        """Evaluate a branch test; return the framework objects whose window-boundary flag it reads."""
        self._flags = []
        self.eval(test, flow, frame)
        flags, self._flags = self._flags, []
        return flags

    def note_flag(self, owner: int) -> None:
        self._flags.append(owner)

    # ------------------------------------------------------------------ expressions
    def eval(self, expr: ast.expr | None, flow: Flow, frame: Frame) -> Value:
        if expr is None:
            return EMPTY
        kind = type(expr)
        if kind is ast.Name:
            return self.eval_name(expr.id, flow, frame)
        if kind is ast.Attribute:
            return self.eval_attribute(expr, flow, frame)
        if kind is ast.Call:
            called = self.interp.calls.eval_call(expr, flow, frame)
            if isinstance(expr.func, ast.Name) and expr.func.id == "bool" and always_false(expr, self.interp.module):
                return Value(const="False")  # `bool(args.amp and args.model in _AMP_MODELS)`, a set no run fills
            if isinstance(expr.func, ast.Name) and expr.func.id == "hasattr" \
                    and self.lacks_attribute(expr, flow, frame):
                return Value(const="False")  # `hasattr(optimizer, "first_step")` of accelerate's prepared optimizer
            return called
        if kind is ast.Lambda:  # a function value: what calls it runs its body (`callables.handed_lambda`)
            return self.interp.callables.handed_lambda(expr, flow, frame)
        if kind is ast.Constant:
            value = expr.value
            if value is None:
                return Value(const="None")
            if value is True or value is False:
                return Value(const=str(value), present=True)
            if type(value) is str or type(value) is bytes:  # what a test `x == "model"` can compare it with
                return Value(choices=frozenset({repr(value)}), present=True)
            return Value(const=value, present=True) if type(value) is int else PRESENT
        if kind is ast.BinOp:
            return present(self.eval_binop(expr, flow, frame))
        if kind is ast.UnaryOp:
            return present(self.eval(expr.operand, flow, frame).as_tensor())
        if kind is ast.BoolOp:
            joined = join([self.eval(v, flow, frame) for v in expr.values])
            if always_false(expr, self.interp.module):
                return Value(const="False")  # `amp = args.amp and args.model in _AMP_MODELS`, a set no run fills
            return joined
        if kind is ast.Compare:
            self.eval(expr.left, flow, frame)
            for c in expr.comparators:
                self.eval(c, flow, frame)
            return EMPTY
        if kind is ast.IfExp:
            gates = self.gate_flags(expr.test, flow, frame)
            fixed = self.interp.fixed_tests.outcome(expr.test, flow, frame)
            if fixed is not None:  # `loss.item() if reduce else loss` with `reduce = True` above: one arm runs
                return self.eval(expr.body if fixed else expr.orelse, flow, frame)
            arms = self._arms(expr, flow, frame, gates)
            choice = choice_of(expr, arms, self.interp.cond_aliases)
            if choice is not None:  # `model.no_sync() if <test> else ...`: compared with the step's gate later
                self.interp.sync_choices[id(expr)] = choice
            unwrapped = self._not_a_sync_wrapper(expr.test, expr.orelse)
            if unwrapped:
                # `m.module if isinstance(m, DistributedDataParallel) else m`: the bare module either way
                wrappers = set(self.interp.objects.sync_wrappers(arms[1]))
                arms[1] = replace(arms[1], entities=frozenset(e for e in arms[1].entities if e.uid not in wrappers))
            syncs = [v.const for v in arms if isinstance(v.const, tuple) and v.const[:2] == ("context", "sync")]
            if syncs:  # `nullcontext() if last else model.no_sync()`: sync off on some micro-batches
                return Value(const=("context", "sync", frozenset().union(*(c[2] for c in syncs)), False))
            # (`partial(accelerator.no_sync, model) if not last else nullcontext`: the join of a deferred context
            # with another value is that context, off on some micro-batches; see `values._joined_context`)
            return join(arms)
        if kind in (ast.Tuple, ast.List, ast.Set):
            return display([(str(i), self.eval(el, flow, frame)) for i, el in enumerate(expr.elts)])
        if kind is ast.Starred:
            return self.eval(expr.value, flow, frame)
        if kind is ast.Dict:
            pairs = []
            for k_node, v_node in zip(expr.keys, expr.values):
                v = self.eval(v_node, flow, frame)
                k = N.literal_key(k_node) if k_node is not None else None
                pairs.append((k if k is not None else f"?{len(pairs)}", v))
            j = join([v for _, v in pairs]) if pairs else EMPTY
            return Value(entities=j.entities, modules=j.modules, params=j.params, reach=j.reach, opaque=j.opaque, vague=j.vague,
                         items=tuple(pairs), present=True)
        if kind is ast.Subscript:
            return self.eval_subscript(expr, flow, frame)
        if kind in (ast.ListComp, ast.SetComp, ast.GeneratorExp):
            return self.eval_comprehension(expr, expr.elt, flow, frame)
        if kind is ast.DictComp:
            return self.eval_comprehension(expr, expr.value, flow, frame)
        if kind is ast.Await:
            return self.eval(expr.value, flow, frame)
        if kind is ast.Yield or kind is ast.YieldFrom:
            # what iterating the generator gives, and where a `with` body runs (`context_helpers`)
            given = self.eval(expr.value, flow, frame) if expr.value is not None else EMPTY
            self.interp.yield_contexts.met(frame, given)
            return EMPTY
        if kind is ast.NamedExpr:
            v = self.eval(expr.value, flow, frame)
            self.assign(expr.target, v, flow, frame, expr.value, expr)
            return v
        if kind is ast.JoinedStr:
            for part in expr.values:
                if type(part) is ast.FormattedValue:
                    self.eval(part.value, flow, frame)
            return PRESENT
        return EMPTY  # lambdas, slices, literals of other types

    def eval_name(self, name: str, flow: Flow, frame: Frame) -> Value:
        v = self.lookup(name, flow, frame)
        if v is not None:
            return v
        interp = self.interp
        if name in interp.imports.aliases:  # `SGD` of `from torch.optim import SGD`: the class, if a factory
            held = self._project_global(name)
            if held is not None:  # `from config import criterion`: the object config.py binds
                return held
            return class_refs.reference(name, interp.imports, interp.catalogue) or EMPTY
        if name in frame.local_defs:
            return interp.callables.nested_function(name, flow, frame)  # `return closure`: the function, to be called
        if name in interp.functions or name in interp.classes:
            return EMPTY
        function = frame.function
        module_global = function is not None and frame.closure_env is None and name not in local_names(function)
        if module_global and interp.project is not None:
            home = interp.project.module_of(function)  # another file's code run here: what that file binds `name` to
            bound = interp.project.module_global(interp, home, name) if home is not None else None
            if isinstance(bound, Value):  # (`accelerator = Accelerator()` at its top, read as `self.acc = accelerator`)
                return bound
        if module_global:
            filled = self._filled_global(name, function, frame)
            if filled is not None:  # every function, and every later call, sees the same object
                interp.module_env[name] = filled
                return filled
        minted = interp.objects.entity_for_unknown_ref(name, module_global)
        if minted is not None:
            if module_global:  # every function, and every later call, sees the same object
                interp.module_env[name] = minted
            else:
                flow.env[name] = minted
            return minted
        return OPAQUE

    def _filled_global(self, name: str, function: Function, frame: Frame) -> Value | None:
        """A global of the running function's module that its functions fill through `global name`, read where
        no fill ran in sight: what any fill gives (`filled_globals`), None when no fill gives anything."""
        interp = self.interp
        if name not in interp.prescan.globals_declared:  # (the running function's module's prescan)
            return None
        tree = interp.module
        if interp.project is not None:
            other = interp.project.module_of(function)
            tree = getattr(other, "tree", tree) if other is not None else tree
        known = self._fills.get(id(tree))
        if known is None or known[0] is not tree:
            known = self._fills[id(tree)] = (tree, filled_globals.fills(tree))
        sites = known[1].get(name)
        if not sites:
            return None
        values = []
        for fn, expr in sites:
            if expr is None:
                values.append(OPAQUE)
                continue
            env: dict[str, Value] = dict.fromkeys(local_names(fn), OPAQUE)
            top = Frame(function=None, cls=None, self_value=None, depth=frame.depth, local_defs={})
            values.append(self.eval(expr, Flow(env, frozenset()), top))
        live = [v for v in values if not blank(v)]
        return join(live) if live else None

    def _project_global(self, ref: str) -> Value | None:
        """What another file of the project binds `ref` (an imported name or a module's attribute) to in its
        top-level code, when it binds it once (`ProjectView.global_value`)."""
        interp = self.interp
        head, _, rest = ref.partition(".")
        base = interp.imports.aliases.get(head)
        if interp.project is None or base is None:
            return None
        found = interp.project.global_value(interp, f"{base}.{rest}" if rest else base)
        return found if isinstance(found, Value) else None

    def eval_subscript(self, expr: ast.Subscript, flow: Flow, frame: Frame) -> Value:
        base = self.eval(expr.value, flow, frame)
        if type(expr.slice) is ast.Name and (remembered := self._remembered_slot(expr, flow, frame)) is not None:
            return remembered  # `hidden[s_id]` right after `hidden[s_id] = repackage_hidden(hidden[s_id])`
        if type(expr.slice) is ast.Name and (base.params or base.modules):
            picked = _picked_by_name(base, self.eval(expr.slice, flow, frame))
            if picked is not None:
                return picked  # `params_dict[n]` for `n` among the names a test picked: those parameters
        index = expr.slice
        key = None
        if type(index) not in (ast.Tuple, ast.Slice):
            key = N.literal_key(index)
            self.eval(index, flow, frame)
        if key is not None and indices_item(expr.value, key):
            return Value(present=True)  # `torch.max(output, 1)[1]`: indices, no graph
        if isinstance(base.const, tuple) and base.const[:1] == ("instance",) and type(index) is not ast.Slice \
                and (key is None or key.isdigit()):
            info = self.interp.calls.class_of_instance(base)
            if info is not None and self.interp.definitions.find_method(info, "__getitem__") is None:
                return base  # `threads[i]` of a list of `Worker` objects: one of them (`values.join` keeps the class)
        if key is not None:
            item = base.item(key)
            if item is not None:
                if base.modules and item.modules:  # a child of a container, referred to as `self.critics[0]`
                    wholes = {self.table.label(e.uid) for e in base.entities}
                    for m in item.modules & base.modules:
                        self.table.name_part(m.uid, code(expr), wholes)
                return item
            ref = N.ref_text(expr)
            if ref is not None and flow.env.get(f"{_ITEM_OF}{ref}") is base and ref in flow.env:
                return flow.env[ref]  # stored into this very object: `d["loss"] = d["loss"] / N`
            rest = base.item(_REST_KEY)
            if rest is not None:  # another key of a dict made out of sight: what it read before
                return param_groups.part_of(rest, replace(rest, items=(), counter=None, const=None))
            if base.items and not any(k.isdigit() for k, _ in base.items):
                # a key the dict built in sight does not hold (`opt["scheduler"]` of `{"optimizer": opt,
                # "lr_scheduler": {...}}`, read under `if "scheduler" in opt:`): none of its values, whatever it is
                return OPAQUE
        elif _is_last(index) and (ref := N.ref_text(expr.value)) is not None:
            last = appended_last(flow, ref, base)
            if last is not None:
                return last  # `losses[-1]` right after `losses.append(loss)`: that loss, not any earlier one
        if base.items:
            return join([v for _, v in base.items])
        unread = self.table.results_unread
        if key is not None and not base.entities and any(site in unread for _h, _g, site in base.built):
            # `outputs[1]` of a model whose forward was not read: which item holds this forward's graph is
            # not seen (transformers' heads return `(loss, per_example.detach(), mask, ...)`), so what the
            # item reaches through the model is assumed, as an unpacked part's is (`unpacking`)
            return self._other_item(expr, base, replace(base, vague=base.vague | base.reach))
        member = N.member_ref(expr)
        unknown = not (base.entities or base.modules or base.reach or base.params) and (base.opaque or blank(base))
        if member is not None and unknown:
            # `self.student_optimizers[i].step()` of a list made out of sight: a member of it, the same object a
            # loop over the list names (`Counters._member`), when the code uses members as one
            minted = self.interp.objects.entity_for_unknown_ref(member, member_of=member[:-3])
            if minted is not None:
                return minted
        # an optimizer is no sequence: `optimizer[1]` of a name also stepped whole elsewhere (`if isinstance(optimizer,
        # tuple): optimizer[1].step() else: optimizer.step()`) is an item of a tuple on this arm
        of_optimizer = (bool(base.entities) and all(e.kind is Kind.OPTIMIZER for e in base.entities)
                        and not (base.modules or base.reach or base.params or base.items)
                        and not (isinstance(expr.value, ast.Attribute) and expr.value.attr == "param_groups"))
        if key is not None and (unknown or of_optimizer) and (item_ref := N.ref_text(expr)) is not None:
            # `optimizer[0].step(); optimizer[1].step()` of a tuple handed in: two objects, each used as the code
            # uses it, not the tuple twice
            minted = self.interp.objects.entity_for_unknown_ref(item_ref)
            if minted is not None:
                return minted
        if of_optimizer and key is not None and not key.isdigit() and key != "params" and type(expr.value) is ast.Name:
            # nor a mapping: `optimizer["net"]`, `optimizer["aux"]` of a dict a library built (CompressAI's
            # `net_aux_optimizer(net, conf)`), the name taken for an optimizer by how another function uses it, are
            # two objects made out of sight, not that name's optimizer twice (ParisaO, lockbox 42)
            return OPAQUE
        whole = replace(base, items=(), counter=None, const=None, present=False)
        if key is not None:
            whole = self._other_item(expr, base, whole)
        # (`opt.param_groups[1]["params"]`: one of its groups' lists, still the optimizer's)
        return param_groups.part_of(base, whole)

    def _other_item(self, expr: ast.Subscript, base: Value, item: Value) -> Value:
        """`item`, read by a key of `base`, unless a backward pass ran through another item of it: another item of
        a dict made out of sight than the one backpropagated (`results["boxes"]` after `results["torch_loss"]
        .backward()`, `out["acc"]` after `loss = out["loss"]; loss.backward()`): whether it holds a graph too is not
        read (NumPy boxes, an accuracy returned by `.item()`)."""
        if not base.graph or not isinstance(expr.value, ast.Name):
            return item
        if base.built and not any(site in self.table.results_unread for _h, _g, site in base.built):
            return item  # of a forward read: its items are known as far as they were (a blur of what it returned)
        proven = self.interp.keepalives.item_graphs.get(expr.value.id)
        if proven is None or proven == N.ref_text(expr):
            return item
        return replace(item, graph=False, opaque=True, vague=item.vague | item.reach)

    def eval_binop(self, expr: ast.BinOp, flow: Flow, frame: Frame) -> Value:
        left = self.eval(expr.left, flow, frame)
        right = self.eval(expr.right, flow, frame)
        op = type(expr.op)
        if op is ast.Add and (joined := concatenated(left, right)) is not None:
            return joined  # `(loss, per_example.detach()) + outputs`: each item at its place
        if (op is ast.Div or op is ast.FloorDiv) and right.divisors and not right.reach and not right.opaque:
            # a denominator's own divisions invert: `grad_acc / group_size`, with `group_size` made from
            # `(i // grad_acc) * grad_acc`, is not divided by `grad_acc` (only by `group_size`)
            right = replace(right, divisors=frozenset(), divided_twice=frozenset())
        if op is ast.Mult and not (left.reach and right.reach):
            # `(i // N) * N`: the factor cancels the division by its own text
            for this, other_node in ((left, expr.right), (right, expr.left)):
                if code(other_node) in this.divisors and not this.reach:
                    cancelled = this.divisors - {code(other_node)}
                    if this is left:
                        left = replace(left, divisors=cancelled, divided_twice=left.divided_twice - {code(other_node)})
                    else:
                        right = replace(right, divisors=cancelled,
                                        divided_twice=right.divided_twice - {code(other_node)})
        result = union_as_tensor([left, right])
        if (op is ast.Add or op is ast.Sub) and result.unread_factors:
            # a factor scales a sum only when it scales every term with a graph (`loss + w * aux`: `w` weighs a term)
            terms = [v for v in (left, right) if v.reach or v.opaque or v.built]
            result = replace(result, unread_factors=frozenset.intersection(*(v.unread_factors for v in terms))
                             if terms else frozenset())
        if op is ast.Add and (left.params or right.params):  # list(a.parameters()) + [...]
            # a list of parameters and a list naming one a module registered (`+ [mtl_loss.log_sigma]`, a
            # path of that module): the concatenation holds both, as the constructor's groups would
            result = replace(result, params=left.params | right.params, opaque=left.opaque or right.opaque,
                             modules=left.modules | right.modules)
        if op is ast.Div or op is ast.FloorDiv:
            # (a divisor that is 1 here, `accumulation_steps = 1` handed in, divides nothing: it is the window as
            # written, and no scaling to judge: `unit_divisors`)
            if not right.reach and _one(right):
                result = result.with_unit_divisor(code(expr.right))
            elif not right.reach:
                result = result.with_divisor(code(expr.right))
                if op is ast.Div and _weighted(expr.left, left):  # `loss * n / total`
                    result = replace(result, shares=result.shares | {code(expr.right)})
        elif op is ast.Mult:
            for side, factor, term in ((expr.left, left, right), (expr.right, right, left)):
                div = self.reciprocal(side)
                if div is not None:
                    result = _times_reciprocal(result, div, factor, term)
                elif term.reach and not factor.reach and not is_number(side):
                    result = replace(result, multipliers=result.multipliers | {code(side)})
                    if _unread_factor(factor):
                        result = replace(result, unread_factors=result.unread_factors | {code(side)})
                    if _sample_count(side, frame.function):
                        # `(lbox + lobj + lcls) * bs` of `bs = tobj.shape[0]`: the batch's mean times its size, a
                        # sum over its samples (the YOLOv5 family's own `utils/loss.py`, lockbox 37)
                        result = replace(result, summed=True)
                if not factor.reach and (term.reach or term.opaque) and (share := share_denominator(side)) is not None:
                    result = replace(result, shares=result.shares | {share})  # `loss * (n / total)`
                elif (not factor.reach and (term.reach or term.opaque) and factor.divisors
                      and isinstance(side, (ast.Name, ast.Attribute))):
                    # `ratio = mini_batch_size / batch_size` ... `loss * ratio`: the share, under a name
                    result = replace(result, shares=result.shares | factor.divisors)
        if is_int(expr.left) and is_int(expr.right):
            result = replace(result, const=None)
        if op is ast.FloorDiv and not (left.entities or left.modules or left.params):
            # `(total + size - 1) // size`: floor division has no gradient (torch's floor_divide is not
            # differentiable), so the result is a number that carries no graph, whatever it was made from; an
            # integer count (`len(loader) // accumulation_steps` optimizer steps), as `math.floor` makes: what is
            # computed from it (an annealing weight's cycle) divides no loss by its divisor
            result = Value(counter=result.counter, const=result.const)
        if op is ast.Add:  # `len(loader) * epoch + i`: the batches done, counted like `i` in the first epoch
            for this, other, other_node in ((left, right, expr.right), (right, left, expr.left)):
                if this.counter is not None and other.counter is None and isinstance(other_node, ast.BinOp) \
                        and isinstance(other_node.op, ast.Mult):
                    counter = this.counter
                    if self._starts_past_zero(other_node, flow, frame):
                        # `for epoch in range(1, n)`: the first epoch's offset is len(loader), whose
                        # place in a window is unknown
                        counter = replace(counter, zero_based=False, start=None)
                    result = replace(result, counter=counter)
                    break
        if op is ast.Add or op is ast.Sub:  # `start_step + i`, `i - 1`: the loop's counter, shifted
            shifted = self.interp.counters.aliases.offset(expr, left, right, frame.function, result.counter)
            if shifted is not None:
                result = replace(result, counter=shifted)
        return result

    def _starts_past_zero(self, product: ast.BinOp, flow: Flow, frame: Frame) -> bool:
        """`len(loader) * epoch` where every factor is known to be non-zero at first (`epoch` from
        `range(1, ...)`); a factor of unknown first value counts as zero, as before."""
        for factor in (product.left, product.right):
            value = self.eval(factor, flow.copy(), frame)
            c = value.counter
            if value.const == 0 or (c is not None and (c.zero_based or c.start == 0)):
                return False
            if c is not None and c.start is not None and c.start != 0:
                return True
        return False

    def eval_comprehension(self, expr: ast.expr, elt: ast.expr, flow: Flow, frame: Frame) -> Value:
        interp = self.interp
        generators = expr.generators
        first = generators[0]
        counters = interp.counters
        results: list[Value] = []
        if not interp.prescan.interesting.get(id(first), True):
            each = unrolled(self, expr, elt, flow, frame)
            if each is not None:
                return each  # `{key: make_optimizer(key) for key in ["net", "aux"]}`: two optimizers, by key
        if interp.prescan.interesting.get(id(first), True):
            # `[self.train_step(b) for b in loader]` is a training loop.
            loop = interp.loop_for(first, counters.loop_count(first.iter, self.eval(first.iter, flow.copy(), frame)))

            def body(f: Flow, fr: Frame) -> Outcome:
                for clause in generators:
                    it = self.eval(clause.iter, f, fr)
                    self.assign(clause.target, counters.element_of(clause.iter, it, f, fr), f, fr, clause.iter, expr)
                    for cond in clause.ifs:
                        self.eval(cond, f, fr)
                results.append(self.eval(elt, f, fr))
                return Outcome(normal=f)

            out = interp.run_loop(flow.copy(), frame, loop, body, None)
            if out.normal is not None:
                flow.states = out.normal.states
        else:
            scratch = flow.copy()
            for clause in generators:
                it = self.eval(clause.iter, scratch, frame)
                self.assign(clause.target, counters.element_of(clause.iter, it, scratch, frame), scratch, frame, clause.iter, expr)
            results.append(self.eval(elt, scratch, frame))
            flow.states = scratch.states
        v = join(results)
        if generators[0].ifs and _selects_parameters(generators[0].iter) and (v.modules or v.params):
            v = self._selected(v, generators, flow)
        elif generators[0].ifs and _names_selected(generators[0], elt):
            # `{n for n, p in net.named_parameters() if n.endswith(".quantiles")}`: the names of the parameters a
            # test picks, standing for those parameters where a dict of them by name is read with one of the names
            # (CompressAI's `params_dict[n] for n in sorted(aux_parameters)`, an optimizer for each pick)
            owner = self.eval(generators[0].iter.func.value, flow.copy(), frame)
            if owner.modules or owner.params:
                picked = self._selected(Value(modules=owner.modules, params=owner.params), generators, flow)
                v = replace(v, params=v.params | picked.modules | picked.params)
        # the elements' graphs come along (`sum([criterion(g) for g in outs])` backpropagates through `outs`), and
        # what the losses went through: the data-parallel forwards (GL006), a GradScaler, a sum over samples
        return Value(entities=v.entities, modules=v.modules, params=v.params, reach=v.reach, opaque=v.opaque, vague=v.vague,
                     divisors=v.divisors, divided_twice=v.divided_twice, multipliers=v.multipliers, shares=v.shares,
                     unread_factors=v.unread_factors,
                     built=v.built, vague_sites=v.vague_sites, graph=v.graph, graph_assumed=v.graph_assumed,
                     sync=v.sync, amp=v.amp, summed=v.summed,
                     unseen_reduction=v.unseen_reduction, present=True)

    def _selected(self, value: Value, generators: list[ast.comprehension], flow: Flow) -> Value:
        """`[p for n, p in model.named_parameters() if "embed_1" in n]`: some of the module's parameters, picked
        by a test the analysis does not evaluate. They are a part of the module of its own, named by the test
        (names bound to a literal read as the literal: a helper's `table in n` called with "first"), so two
        selections by different tests are different parts (an optimizer for each of two embedding tables), and
        a selection and the whole module overlap."""
        tests = [t for g in generators for t in g.ifs]
        text = " and ".join(code(t) for t in tests)
        for name in sorted({n.id for t in tests for n in iter_tree(t) if isinstance(n, ast.Name)}):
            bound = flow.env.get(name)
            if bound is not None and bound.choices is not None and len(bound.choices) == 1:  # a string literal
                literal = next(iter(bound.choices)).replace("\\", "\\\\")  # (a replacement template)
                text = re.sub(rf"\b{re.escape(name)}\b", literal, text)
        part = f"[{text}]"

        def narrowed(holders: frozenset[Holder]) -> frozenset[Holder]:
            return frozenset(h if h.pseudo else Holder(h.uid, h.path + (part,), h.pseudo) for h in holders)

        return replace(value, modules=narrowed(value.modules), params=narrowed(value.params))

    def eval_attribute(self, expr: ast.Attribute, flow: Flow, frame: Frame) -> Value:
        interp = self.interp
        key = N.ref_text(expr)
        if key is not None:
            v = self.lookup(key, flow, frame)
            if v is not None:
                return v
        dotted = N.dotted(expr)
        factory = class_refs.reference(dotted, interp.imports, interp.catalogue) if dotted is not None else None
        if factory is not None and dotted is not None and self.lookup(dotted.split(".", 1)[0], flow, frame) is None:
            return factory  # `optim.SGD` handed around uncalled (`opt_func=optim.SGD`)
        if dotted is not None and dotted.split(".", 1)[0] in interp.imports.aliases \
                and self.lookup(dotted.split(".", 1)[0], flow, frame) is None:
            held = self._project_global(dotted)
            if held is not None:  # `config.criterion` of `import config`: the object config.py binds
                return held
        base = self.eval(expr.value, flow, frame)
        attr = expr.attr
        if base.entities and type(expr.ctx) is ast.Load:
            base = self._past_a_missing_attribute(expr, base, flow)
        if attr in _NO_GRADIENT_ATTRS:
            return EMPTY
        if attr in _DESCRIPTION_ATTRS:
            return PRESENT
        held = self.property_value(expr, base, flow, frame)
        if held is not None:
            return held
        if type(expr.value) is ast.Name and expr.value.id == "self" and type(expr.ctx) is ast.Load \
                and isinstance(frame.cls, ClassInfo) and interp.definitions.find_method(frame.cls, attr) is not None:
            method = interp.callables.method_of_self(expr, frame)  # `crit = self.process_loss`: the bound method
            if method is not None:
                return method
        held = named_tuples.field(base, attr)  # `losses.total_loss` of `losses = LossTuple(...)`
        if held is not None:
            return held
        if may_make_context(interp.catalogue, attr) and interp.calls.makes_context(base, expr.value, attr, flow):
            # `model.no_sync` referenced, entered later (`ctx = model.no_sync if ... else nullcontext; with ctx():`)
            return defer(interp.calls.eval_call(synthetic_call(expr, expr, [], []), flow, frame))
        if isinstance(base.const, tuple) and base.const[:1] == ("instance",):
            inst = base.item(attr)
            unread = inst is not None and not (inst.entities or inst.modules or inst.items or inst.const is not None)
            if unread and key is not None:
                # `self.net = build(name)` in its `__init__`, `build` unreadable: read from how it is used
                minted = interp.objects.entity_for_unknown_ref(key)
                if minted is not None:
                    flow.env[key] = minted
                    return minted
            if inst is not None:
                return inst
        if base.modules and base.items:
            # `self.optimizer = Adam(self.parameters())` in a local module's `__init__`: that optimizer
            # (submodules keep their paths below, and so does a parameter its `__init__` registered,
            # `self.log_sigma = nn.Parameter(...)`: a part of the module, whose forward writes it and whose
            # `zero_grad()` clears it, as the module's holder says)
            held = base.item(attr)
            if held is not None and held.entities and not held.modules and not held.params:
                return held
            if held is not None and held.present and held.const is None and held.flag is None \
                    and not (held.modules or held.params or held.entities or held.items or held.opaque):
                # a tensor its `__init__` stored (`self.register_buffer("inv_timescales", t)`, `self.mask =
                # torch.ones(n)`): what was stored, not a part of the module whose forward runs
                return held
            if held is not None and holding(held).built and not (held.modules or held.params or held.entities):
                # graphs its methods stored (`self.memory.append((prob, reward))` of ActorCritic's `save_memory`):
                # what they hold, not a submodule
                return held
        for ent in sorted(base.entities, key=lambda e: e.uid):
            model = interp.catalogue.attribute(ent.api, attr) if ent.api else None
            if model is None:
                continue
            if model.holds:
                return Value(modules=base.modules) if base.modules else EMPTY
            if any(e.kind == "gate_flag" for e in model.effects):
                self.note_flag(ent.uid)
                return Value(const=("gate_flag", ent.uid))
            return EMPTY
        if base.modules and _SIZE_ATTRIBUTE.search(attr) and not (key is not None and key in interp.model_refs):
            return EMPTY  # `self.vqgan.img_channels` handed to a constructor: a number, not a part of the model
        if base.modules:
            if attr in ("module", "_orig_mod"):  # DDP / torch.compile wrappers: the same parameters
                wrappers = set(interp.objects.sync_wrappers(base)) if attr == "module" else set()
                # `ddp_model.module(x)` runs the bare module: no all-reduce (DDP's forward never runs)
                return replace(base, entities=frozenset(e for e in base.entities if e.uid not in wrappers)) if wrappers else base
            if key is not None and key in interp.optimizer_refs:
                # `self.optimizer = Adam(self.parameters())` kept on the model: an optimizer, not a submodule
                minted = interp.objects.entity_for_unknown_ref(key)
                if minted is not None:
                    flow.env[key] = minted
                    return minted
            outside = self._unregistered_attribute(base, attr, key)
            if outside is not None:
                return outside
            part = Value(modules=frozenset(Holder(m.uid, m.path + (attr,)) for m in base.modules if not m.pseudo))
            stored = base.item(attr)
            if stored is not None and stored.modules and stored.items:
                # a part whose own parts were read (`model.encoder` of `self.encoder = Enc()`): its methods reach them
                return replace(part, items=stored.items)
            return part
        opts = base.of_kind(Kind.OPTIMIZER)
        if opts and attr == "param_groups":
            holders = frozenset().union(*(self.table.optimizer_holders(o) for o in opts))
            return param_groups.groups_value(opts, holders)
        if opts and key is not None and (key in interp.prescan.zeroed or key in interp.prescan.stepped):
            # an optimizer's attribute used as one (`optimizer_x.opt.zero_grad()`, `wrapper.optimizer.step()`):
            # the optimizer it wraps (PULSE's SphericalOptimizer, SAM's base_optimizer, ScheduledOptim's
            # _optimizer), built from the same parameters. Stepped and cleared, it is used as an optimizer in sight;
            # stepped only, a guess: an object holding an optimizer may hold other steppable things (archai's
            # `OptimSched(optim, sched)`: `optim_sched.sched.step()` is a learning-rate scheduler's)
            if not (key in interp.prescan.zeroed and key in interp.prescan.stepped):
                interp.assumed_links[key] = assumed(Assumption.WRAPPED)
            return Value(entities=frozenset(opts))
        # an attribute `__init__` did not set (`self.optimizer = None` there, built by `create_optimizer()`),
        # not a method or property of the class
        instance = isinstance(base.const, tuple) and base.const[:1] == ("instance",) and not (
            isinstance(frame.cls, ClassInfo) and interp.definitions.find_method(frame.cls, attr) is not None)
        if key is not None and not base.entities and (base.opaque or blank(base) or instance):
            minted = interp.objects.entity_for_unknown_ref(key)
            if minted is not None:
                flow.env[key] = minted
                return minted
        # (`outputs.loss` of a model's output keeps the sync state of the forward that made it)
        return Value(reach=base.reach, opaque=base.opaque, params=base.params, vague=base.vague, built=base.built,
                     vague_sites=base.vague_sites, kept=base.kept, sync=base.sync)

    def _unregistered_attribute(self, base: Value, attr: str, key: str | None) -> Value | None:
        """`self.models` of a module whose class only ever keeps a plain container there (`self.models = {}`): not a
        part of the module (`unregistered`), so the modules it holds are an object of their own, one per module and
        attribute, whose parameters no optimizer of the module's `parameters()` holds. None for anything else."""
        roots = [m for m in base.modules if not m.pseudo]
        if len(roots) != 1:
            return None
        interp = self.interp
        info = interp.objects.class_of_module(base)
        if info is None or not info.is_module or not plain_container(info, attr, interp.definitions.ancestors):
            return None
        root = roots[0]
        ent = interp.objects.mint(Kind.MODEL, key or attr, ("kept in", root.uid, root.path, attr),
                                  api="torch.nn.Module", provenance=assumed(Assumption.OPAQUE))
        return interp.objects.model_value(ent)

    def _past_a_missing_attribute(self, expr: ast.Attribute, base: Value, flow: Flow) -> Value:
        """`model.config` where `model` may hold a DistributedDataParallel wrapper, which has no such attribute
        (a closed catalogue type, `Catalogue.lacks`): on the paths where it holds the wrapper the read raises
        AttributeError, so the paths that go on hold what else the name may be (the bare module of a
        single-process run), and so does the name from here (FreeLB's `model.encoder.embeddings` read after
        `if args.local_rank != -1: model = DDP(model)`: the distributed run stops there, before any backward).
        Not when the module sets or may set such an attribute on some object (`x.config = ...`, `setattr`)."""
        catalogue = self.interp.catalogue
        lacking = frozenset(e for e in base.entities if e.api and catalogue.lacks(e.api, expr.attr))
        if not lacking or self._evaluated_on_condition(expr):
            return base
        stored = self._stored_attributes
        if expr.attr in stored or "*" in stored:
            return base
        rest = replace(base, entities=base.entities - lacking)
        if not (rest.entities or rest.modules):
            return base
        key = N.ref_text(expr.value)
        if key is not None and flow.env.get(key) is base:
            flow.env[key] = rest
        return rest

    def _evaluated_on_condition(self, expr: ast.expr) -> bool:
        """Whether its statement evaluates `expr` only on a condition: an arm of a conditional expression
        (`model.config.n if hasattr(model, "config") else model.module.config.n`), a later operand of `and`/`or`,
        a lambda's or a comprehension's body."""
        parent = self.interp.parent
        child: ast.AST = expr
        node = parent(expr)
        while node is not None and not isinstance(node, ast.stmt):
            if isinstance(node, ast.IfExp) and child is not node.test or isinstance(node, ast.BoolOp) \
                    and child is not node.values[0] or isinstance(node, (ast.Lambda, *_COMPREHENSIONS)):
                return True
            child, node = node, parent(node)
        return False

    @functools.cached_property
    def _stored_attributes(self) -> frozenset[str]:
        """Attribute names the module assigns on objects other than `self`; `*` (every name) when it calls `setattr`."""
        out: set[str] = set()
        for node in iter_tree(self.interp.module):
            if isinstance(node, ast.Attribute) and type(node.ctx) is not ast.Load \
                    and not (isinstance(node.value, ast.Name) and node.value.id == "self"):
                out.add(node.attr)  # (what a class's methods set on `self` is its instances', not a wrapper's)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
                return frozenset({"*"})
        return frozenset(out)

    def _made_by_call(self, source: ast.AST | None, frame: Frame) -> bool:
        """Whether `source` is the result of a function or class the module names (a helper, an import):
        `build_backbone(cfg)`, `registry.build(cfg).to(device)`. Each run of such a call makes a new object;
        `model.to(device)` on a value the function was given, or a module global, is that same object."""
        if type(source) is not ast.Call:
            return False
        root: ast.AST = source
        while isinstance(root, (ast.Call, ast.Attribute)):
            root = root.func if isinstance(root, ast.Call) else root.value
        if not isinstance(root, ast.Name):
            return False
        interp = self.interp
        name = root.id
        function = frame.function
        if function is not None and name in local_names(function) and not _imported_in(function, name):
            return False  # a parameter or a local variable (`self`, `model`): a value the code already holds
        return name in interp.imports.aliases or name in interp.functions or name in interp.classes or (
            function is not None and _imported_in(function, name))

    def property_value(self, expr: ast.Attribute, base: Value, flow: Flow, frame: Frame) -> Value | None:
        """`self.model` where `model` is a property of the class (or of a base class, in any file of the
        project): its getter's body runs on `self` and its return value is the attribute's value
        (`@property def model(self): return self._ddp_model`). None when the attribute is no property."""
        interp = self.interp
        if isinstance(expr.value, ast.Name) and expr.value.id == "self" and isinstance(frame.cls, ClassInfo):
            info: ClassInfo | None = frame.cls
        else:
            info = interp.calls.class_of_instance(base)
        getter = interp.definitions.find_property(info, expr.attr)
        if getter is None:
            return None
        return interp.calls.inline(getter, info, base, [], {}, flow, frame)

    def _not_a_sync_wrapper(self, test: ast.expr, orelse: ast.expr) -> bool:
        """`isinstance(m, DistributedDataParallel)` tested, and `m` the else arm: there it is not one."""
        if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" and len(test.args) == 2):
            return False
        subject, kinds = test.args
        names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
        qualified = [self.interp.imports.qualify(n) or N.ref_text(n) or "" for n in names]
        return N.ref_text(subject) == N.ref_text(orelse) and any(
            q.endswith(("DistributedDataParallel", "FullyShardedDataParallel", "DataParallel")) for q in qualified)

    def reciprocal(self, expr: ast.expr) -> str | None:
        """`1 / N` or `1.0 / N` -> `N`."""
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):
            left = expr.left
            if is_number(left) and left.value == 1:
                return code(expr.right)
        return None

    def loss_text(self, node: ast.expr) -> str:
        """`scaler.scale(loss)` -> `loss`; `(loss / n)` -> `loss / n`."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "scale" and node.args:
            return code(node.args[0])
        return code(node)

    # ------------------------------------------------------------------ assignment
    def assign(self, target: ast.expr, value: Value, flow: Flow, frame: Frame, source: ast.AST | None, stmt: ast.AST,
               keep_phases: bool = False) -> None:
        interp = self.interp
        if type(target) is ast.Name:
            interp.keepalives.tuple_parts.discard(target.id)
            scope = frame.function or interp.module
            if target.id in emptiness_flags(scope, interp.touches_gradients):
                # `grads = []`: empty on every path; anything else: not known
                if isinstance(source, ast.List) and not source.elts or isinstance(source, ast.Call) and not source.args:
                    assign_flag(flow, target.id, False)
                else:
                    forget_flag(flow, target.id)
            if target.id in interp.prescan.presence_tested \
                    and target.id in presence_flags(scope, interp.touches_gradients):
                # `opt = None`: absent on every path; a value known present: present; anything else: not known
                if value.const == "None" or value.present:
                    assign_flag(flow, target.id, value.const != "None")
                else:
                    forget_flag(flow, target.id)
            if type(source) is ast.Constant and type(source.value) is bool \
                    and target.id in literal_flags(scope, interp.touches_gradients):
                assign_flag(flow, target.id, source.value)
                value = replace(value, flag=target.id)
                gates = tuple(c for c in frame.ifs
                              if (cond := interp.conditions.get(c)) is not None and cond.is_accumulation_gate)
                if source.value and gates:
                    interp.flag_gates[target.id] = gates
        if isinstance(target, (ast.Tuple, ast.List)):
            unpack(self, target.elts, value, flow, frame, source, stmt, keep_phases)
            return
        if isinstance(target, ast.Attribute) and target.attr == "grad":
            self.assign_grad(target, source, flow, frame, stmt)
            return
        if (isinstance(target, ast.Attribute) and target.attr == "data" and isinstance(target.value, ast.Attribute)
                and target.value.attr == "grad"):
            # `p.grad.data = p.grad.data / N` writes the gradient as `p.grad = ...` does (as `p.grad.data /= N` does)
            self.assign_grad(target.value, source, flow, frame, stmt)
            return
        if isinstance(target, ast.Attribute) and target.attr == "requires_grad":
            owner = self.eval(target.value, flow.copy(), frame)
            holders = interp.holders_of_params(owner)
            flag = source.value if isinstance(source, ast.Constant) and isinstance(source.value, bool) else None
            if flag is None and value.const in ("True", "False"):  # a helper's `requires_grad` argument
                flag = value.const == "True"
            if holders and flag is not None:
                flow.map(lambda s: s.freeze(holders, not flag))
            elif flag is True and isinstance(target.value, ast.Name) and not owner.entities and not owner.modules:
                # `x = latents.detach().clone(); x.requires_grad = True`: a new leaf each time this runs,
                # with no gradient yet (diffusers' pix2pix-zero optimizes such a latent every timestep)
                leaf = interp.model_value(interp.mint(Kind.PARAM, target.value.id, ("param", id(stmt)), api="torch.Tensor"))
                interp.effects.fresh(leaf, flow)
                flow.env[target.value.id] = leaf
            return
        if isinstance(target, ast.Attribute) and self._api_attribute_store(target, source, value, flow, frame):
            return
        key = N.ref_text(target)
        if key is not None and not isinstance(target, ast.Subscript):
            self._rebound[key] = self._rebound.get(key, 0) + 1  # (a slot remembered under it is another one now)
        if key is None:
            if isinstance(target, ast.Subscript):
                self.eval(target.value, flow, frame)
                self._store_item(target, source, value, flow, frame, stmt)
                self.remember_slot(target, value, flow, frame)
                if value.entities or _instance(value):  # `optimizers[name] = AdamW(...)`: kept under a key not known here
                    self._replace_item(target, value, flow, frame)
                elif (stmt is not None and self._holds_no_graph(source)
                      and (base_key := every_item_rewritten(target, stmt, self.interp.parent))):
                    # `for k, v in d.items(): d[k] = v.item()`: every item of `d` now holds a number
                    flow.env[base_key] = Value(items=((_ANY_KEY, value),))
                elif stmt is not None and source is not None:
                    self._rewrite_each_item(target, source, stmt, flow, frame)
            return
        if frame.no_grad:
            value = made_without_grad(value, source)
        if isinstance(target, ast.Subscript):
            self._replace_item(target, value, flow, frame)
        start = int_value(source)
        if value.counter is not None and value.counter.key is not None and not keep_phases \
                and interp.counters.aliases.root(value.counter.key) == key:
            # `i = i + 1` in the loop of `i`: the name no longer holds the loop's counter, whose phases stay its own
            value = replace(value, counter=replace(value.counter, key=None, shift=0))
        if value.const == 0 and start is not None:
            value = replace(value, counter=Counter(f"{key} = 0", zero_based=True, start=0))
        elif start is not None and value.counter is None:
            value = replace(value, counter=Counter(f"{key} = {code(source)}", zero_based=False, start=start))
        value = interp.objects.stored_on_self(key, value, frame)
        if isinstance(source, (ast.BinOp, ast.Call, ast.IfExp, ast.UnaryOp)):
            # `total = total + loss`, `ema = a * loss + (1 - a) * ema`: the previous value and a new graph
            stored = self._accumulated(source, key, flow, frame)
            if stored is not None:
                value = interp.keepalives.note(stmt, key, stored, value, frame, code(target), rebinds=True)
        if not value.entities and not value.modules and value.opaque and not value.items:
            # `self.model = model.to(device)` with `model` of unknown origin: how `self.model` is used
            # elsewhere (`.parameters()`, `.step()`) says what it is. (A dict or list built here is what it is,
            # whatever its items are: `optimizer = {"net": ..., "aux": ...}` is no optimizer.)
            made = key.startswith("self.") and self._made_by_call(source, frame)
            minted = interp.objects.entity_for_unknown_ref(key, made=made)
            if minted is not None:
                value = minted
        if interp.prescan.synced_here(key, frame.function) and value.entities:
            # `self.model = build_model(...)`, later `self.model.no_sync()`: wrapped for data parallelism out of sight;
            # not a module built here of a class read or modelled as none (`model = nn.Linear(4, 1)`, then
            # `model = DDP(model)`)
            table = interp.table
            interp.table.wrapped_everywhere([e.uid for e in value.entities if e.kind is Kind.MODEL and not (
                e.uid in table.made_at and e.api and not e.provenance.assumed and e.uid not in table.unknown_origin)])
        flow.env[key] = value
        if isinstance(target, ast.Attribute) and value.modules:
            self.insert_module(target.value, value, flow, frame)
        if isinstance(target, ast.Attribute) and type(target.value) is ast.Name and target.value.id != "self":
            _set_field(flow, target.value.id, target.attr, value)
        if key.isidentifier():
            interp.keepalives.bound(key, source, value, flow)
        if "[" in key or "." in key:
            self._item_replaced(key, value, flow)
        if "." not in key and (test := source if isinstance(source, TESTS) else bound_tests.flag_test(source)) is not None:
            interp.cond_aliases.bind(key, test, frame.loops)
        if not keep_phases and interp.counters.aliases.running(key):
            interp.counters.aliases.unalias(flow.env, key)  # `i = ...` in its loop: a name bound to `i` is stale
        literal = start  # `step = 0`: where the counter's phases stand
        reset_to = start if is_int(source) else None  # `task_step = 0`: a period starts
        # `self.global_step = 0` of `progress.reset()` resets the caller's `progress.global_step` too
        for counted in (key, *_as_owner(key, frame)):
            if counted in interp.windows and not keep_phases:
                first = interp.counters.phases_at(counted, interp.windows[counted], literal)
                flow.map(functools.partial(_restart, counter=counted, first=first))
                interp.counter_floors.pop(counted, None)  # no longer a loop's counter from its first value up
            if counted in interp.period_counters and not keep_phases:
                period = periods.key(interp.scope(frame), counted)
                flow.map_quiet(functools.partial(_reset_period, period=period, value=reset_to))
        for ent in value.in_order():
            self.table.name_after(ent.uid, key)
        for m in value.modules:
            if not m.path and not m.pseudo:
                self.table.name_after(m.uid, key)
        self.forget(key, flow, frame)
        for alias in _as_owner(key, frame):
            self.forget(alias, flow, frame)

    def _item_replaced(self, key: str, value: Value, flow: Flow) -> None:
        """`output["loss"] = output["loss"].detach()`: the item through which `output` held a graph
        (`recorder._container_holds_graph`) now holds none, and neither does `output`."""
        base = key.split("[", 1)[0].split(".", 1)[0]
        items = self.interp.keepalives.item_graphs
        if items.get(base) != key or value.graph or value.built:
            return
        container = flow.env.get(base)
        if container is not None and container.graph:
            flow.env[base] = replace(container, graph=False)
        del items[base]

    def _replace_item(self, target: ast.Subscript, value: Value, flow: Flow, frame: Frame) -> None:
        """`loss_dict["loss"] = loss_dict["loss"] / N`: the dict built in sight now holds the new value
        under that key (read back as `loss_dict["loss"]`, or by whatever the dict is handed to)."""
        base_key = N.ref_text(target.value)
        item = N.literal_key(target.slice)
        base = self.lookup(base_key, flow, frame) if base_key is not None else None
        field = _field_of_instance(target.value, flow) if base is None else None
        if field is not None:
            # `logger.meters["loss"] = SmoothedValue()` of `logger = MetricLogger()`, an object of a class read: the
            # dict is that object's attribute, and holds the item wherever the object goes (trojanzoo's meters)
            base = flow.env[field[0]].item(field[1])
        if base is None or base_key is None:
            return

        def put(new: Value) -> None:
            if field is not None:
                _set_field(flow, field[0], field[1], new)
            else:
                flow.env[base_key] = new
        made_here = bool(base.items) or not (base.opaque or base.reach or base.entities or base.modules)
        if item is None:
            if made_here and (value.entities or _instance(value)) and base_key is not None:
                # `optimizers[name] = AdamW(params[name])` in a loop over names (`criterions[key] = LossComputer(...)`):
                # a dict built in sight holds these objects under keys not known here; any of them is what
                # `optimizers[other]` reads
                items = dict(base.items)
                items[_ANY_KEY] = join([items[_ANY_KEY], value]) if _ANY_KEY in items else value
                put(replace(base, items=tuple(items.items())))
            return
        if not made_here and (base.entities or base.modules):
            # an object that may be a dict (`self.state[...]` of a model): the item stored here is read back
            # while the name still holds that very object (`eval_subscript`)
            flow.env[f"{_ITEM_OF}{base_key}[{item}]"] = base
            return
        if not made_here:
            # a dict made out of sight (`config = load_config(opt)`, `loss_dict = model(batch)`): it holds the item
            # from now on, wherever it goes (`train_epoch(model, config)` reads `config["optimizer"]`); any other
            # key holds what it held before (`_REST_KEY`)
            put(replace(base, items=((str(item), value), (_REST_KEY, base))))
            return
        # a dict built in sight, filled key by key (`terms = {}; terms["loss"] = ...; return terms`): it holds
        # the item wherever it goes, also out of the function that filled it
        items = dict(base.items)
        items[item] = value
        put(replace(base, items=tuple(items.items())))

    def _rewrite_each_item(self, target: ast.Subscript, source: ast.AST, stmt: ast.AST, flow: Flow,
                           frame: Frame) -> None:
        """`for k in stats: stats[k] = w[k] * stats[k] / len(transitions)` over a dict built in sight: each item is
        rewritten from itself, so each is read anew with `stats[k]` standing for it (AgentTuning's weighted terms,
        each divided by the count before they are summed). Only for an expression that touches no gradient (it is
        read once per item); a division the item already had is not counted twice (the loop body may be read
        again)."""
        base_key = every_item_rewritten(target, stmt, self.interp.parent)
        base = flow.env.get(base_key) if base_key is not None else None
        if base_key is None or base is None or not base.items or not isinstance(source, ast.expr) \
                or any(k.isdigit() or k in (_ANY_KEY, _REST_KEY) for k, _ in base.items):
            return
        if any(isinstance(n, ast.Call) and self.interp.touches_gradients(N.last_name(n.func) or "")
               for n in breadth_first(source)):
            return
        rewritten = []
        for key, item in base.items:
            alone = flow.copy()
            alone.env[base_key] = replace(base, items=tuple((other, item) for other, _ in base.items))
            new = self.eval(source, alone, frame)
            rewritten.append((key, replace(new, divided_twice=item.divided_twice)))
        flow.env[base_key] = replace(base, items=tuple(rewritten))

    def _store_item(self, target: ast.Subscript, source: ast.expr | None, value: Value, flow: Flow, frame: Frame,
                    stmt: ast.AST | None) -> None:
        """`losses[idx] = loss`, `values[step] = critic(obs)`: a slot of a buffer that outlives the loop now
        holds this iteration's graph (a memory leak, or a graph a later step makes stale)."""
        base = N.ref_text(target.value)
        if base is None or frame.no_grad or not (value.built or value.graph) or source is None or stmt is None:
            return
        if not isinstance(stmt, ast.AugAssign) and self._rewrites_item_slots(target, frame):
            return  # (`self._sum[idx] += v` sums onto what the slot held: it grows)
        if self._numeric_array(base, frame):
            return  # `record = np.zeros(n)` ... `record[i] = loss`: NumPy stores the number, not the tensor
        if self._tensor_data(target.value, frame):
            return  # `delta.data[idx] = (delta + step)[idx]`: a write past autograd, into a detached alias
        if self._parameter_data(target.value, flow, frame):
            return  # `self._embedding.weight.data[unused] = m`: the same, into an alias of a model's parameter
        held = self.interp.keepalives.note(stmt, base, source, value, frame, code(target.value))
        event = self.interp.keepalives.events.get(id(stmt)) if held is not value else None
        if event is not None and not isinstance(stmt, ast.AugAssign) and (self._key_may_repeat(target.slice, stmt)
                                                                         or self._stored_once_per_key(target, stmt)):
            # `logp_action_dict[agent] = logp_action` for each `agent` of `env.agent_iter()`: the agents come round
            # again and overwrite their slots, or are new each time: which, is not read
            event.provenance = weakest([event.provenance, assumed(Assumption.KEYS)])
        old = self.lookup(base, flow, frame)
        if held is value:
            # not kept across iterations (reset in the loop, no training loop, a local), yet the buffer
            # holds this graph now: a step before it is backpropagated makes it stale (GL009)
            if old is None or old.entities or old.modules or not value.built:
                return
            held = Value(built=value.built, vague_sites=value.vague_sites, reach=value.reach, vague=value.vague)
        flow.env[base] = join([old, held]) if old is not None else held

    def remember_slot(self, target: ast.Subscript, value: Value, flow: Flow, frame: Frame) -> None:
        """`hidden[s_id] = repackage_hidden(hidden[s_id])`: the slot an index held in a name selects holds this value,
        read back as `hidden[s_id]` while neither the container nor the index has changed since (AngleNAS's AWD-LSTM
        hidden states, detached at the start of each micro-batch: read as the whole buffer, they still held the
        previous window's graphs, a backward through a graph the step had changed)."""
        slot = _slot_key(target)
        if slot is None:
            return
        base_ref, index_ref = N.ref_text(target.value), N.ref_text(target.slice)
        assert base_ref is not None and index_ref is not None
        base, index = self.lookup(base_ref, flow, frame), self.lookup(index_ref, flow, frame)
        if base is None or index is None:
            flow.env.pop(slot, None)
            return
        flow.env[slot] = value
        self._slot_witnesses[(slot, id(value))] = (value, base, index, self._rebound.get(base_ref, 0),
                                                   self._rebound.get(index_ref, 0))

    def _remembered_slot(self, expr: ast.Subscript, flow: Flow, frame: Frame) -> Value | None:
        """What `_remember_slot` stored in the slot `expr` reads, if the container and the index are still the
        values they were then (any store into another slot, any change of the index, a new container: not)."""
        slot = _slot_key(expr)
        held = flow.env.get(slot) if slot is not None else None
        if held is None or slot is None:
            return None
        witness = self._slot_witnesses.get((slot, id(held)))
        base_ref, index_ref = N.ref_text(expr.value), N.ref_text(expr.slice)
        if witness is None or witness[0] is not held or base_ref is None or index_ref is None:
            return None
        # (by identity, and by binding: a name bound again to the same value, `for i in range(n)` binding `i` to one
        # value known only as an integer each time, selects another slot)
        same = self.lookup(base_ref, flow, frame) is witness[1] and self.lookup(index_ref, flow, frame) is witness[2] \
            and self._rebound.get(base_ref, 0) == witness[3] and self._rebound.get(index_ref, 0) == witness[4]
        return held if same else None

    def _stored_once_per_key(self, target: ast.Subscript, stmt: ast.AST) -> bool:
        """`if task_id not in self.task_map.keys(): ... self.task_map[task_id] = ids`: the slot is written only while
        its key is absent, once per key: whether the iterations bring new keys (or one, written once) is not read
        (HPNs' per-task maps of selected ids, lockbox 35)."""
        key, base = code(target.slice), code(target.value)
        child, node = stmt, self.interp.parent(stmt)
        while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            if isinstance(node, ast.If) and any(child is b for b in node.body):
                test = node.test
                if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotIn) \
                        and code(test.left) == key and code(test.comparators[0]) in (base, f"{base}.keys()"):
                    return True
            child, node = node, self.interp.parent(node)
        return False

    def _key_may_repeat(self, key: ast.expr, stmt: ast.AST) -> bool:
        """A key that is what an enclosing `for` loop walks (`for agent in env.agent_iter():`, the item of
        `enumerate(...)`), not a count (`range(n)`, the index of `enumerate`): its values may come round again."""
        if not isinstance(key, ast.Name):
            return False
        node = self.interp.parent(stmt)
        while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            if isinstance(node, (ast.For, ast.AsyncFor)):
                it, tgt = node.iter, node.target
                counted = isinstance(it, ast.Call) and isinstance(it.func, ast.Name) \
                    and it.func.id in ("range", "enumerate")
                if isinstance(tgt, ast.Name) and tgt.id == key.id:
                    return not counted
                if isinstance(tgt, ast.Tuple) and any(isinstance(e, ast.Name) and e.id == key.id for e in tgt.elts):
                    first = tgt.elts[0]
                    index = isinstance(first, ast.Name) and first.id == key.id
                    return not (counted and index)
            node = self.interp.parent(node)
        return False

    def _numeric_array(self, base: str, frame: Frame) -> bool:
        """Every binding of `base` in the running function (or module) is a NumPy call (`np.zeros(n)`,
        `np.empty_like(x)`): an array of numbers, into which an item stored is converted to a number (a tensor that
        requires grad cannot be stored at all; one that does not is copied as its value), keeping no graph."""
        cls = getattr(frame.cls, "node", None)
        # (an attribute of `self`: every binding of it in the class's methods, `self.v_buf = np.zeros(size)` in
        # `__init__`, then `self.v_buf[self.ptr] = v` in `add`: RLeMPC's trajectory buffers)
        on_self = base.startswith("self.") and base.count(".") == 1 and isinstance(cls, ast.ClassDef)
        scope = cls if on_self else frame.function or self.interp.module
        key = (id(scope), base)
        known = self._numeric_arrays.get(key)
        if known is None:
            values = [node.value for node in iter_tree(scope) if isinstance(node, (ast.Assign, ast.AnnAssign))
                      and node.value is not None
                      and any(N.ref_text(t) == base
                              for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]
            qualify = self.interp.imports.qualify

            def made_by_numpy(v: ast.expr) -> bool:
                return isinstance(v, ast.Call) and (qualify(v.func) or "").startswith("numpy.")

            def numeric(v: ast.expr) -> bool:
                # a NumPy call, a number, the array itself (or a method of it: `self.adv_buf.std()`), and
                # arithmetic of those (`(self.adv_buf - self.adv_buf.mean()) / self.adv_buf.std()`)
                if made_by_numpy(v) or isinstance(v, ast.Constant) or N.ref_text(v) == base:
                    return True
                if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and N.ref_text(v.func.value) == base:
                    return True
                if isinstance(v, ast.BinOp):
                    return numeric(v.left) and numeric(v.right)
                return isinstance(v, ast.UnaryOp) and numeric(v.operand)

            known = any(made_by_numpy(v) for v in values) and all(numeric(v) for v in values)
            self._numeric_arrays[key] = known
        return known

    def _tensor_data(self, stored: ast.expr, frame: Frame) -> bool:
        """`x.data` of a tensor `x` every binding of which in the running function (or module) a torch call makes
        (`delta = torch.zeros_like(X).cuda()`): each access is a new alias detached from `x`'s graph, so an item
        written into it gives that alias, dropped at once, a graph; `x` itself records none (PGD's
        `delta.data[idx] = (delta + alpha * g)[idx]`, lockbox 32)."""
        if not (isinstance(stored, ast.Attribute) and stored.attr == "data" and isinstance(stored.value, ast.Name)):
            return False
        name, scope = stored.value.id, frame.function or self.interp.module
        values = [node.value for node in iter_tree(scope) if isinstance(node, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)]
        stores = sum(1 for n in iter_tree(scope)
                     if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store))
        qualify = self.interp.imports.qualify

        def torch_made(value: ast.expr) -> bool:
            while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                    and isinstance(value.func.value, ast.Call):
                value = value.func.value  # `torch.zeros_like(X).cuda()`: the tensor the chain starts from
            return isinstance(value, ast.Call) and (qualify(value.func) or "").startswith("torch.")

        return bool(values) and len(values) == stores and all(torch_made(v) for v in values)

    def lacks_attribute(self, call: ast.Call, flow: Flow, frame: Frame) -> bool:
        """`hasattr(x, "name")` where `x` holds optimizers a framework returned as wrappers of a closed set of
        attributes (`optimizer_attributes` of the catalogue: accelerate's AcceleratedOptimizer forwards nothing to the
        optimizer it wraps), none of which has that name: duck typing of the wrapped optimizer (`first_step` of SAM)
        fails on the prepared one (Orbit's engine, lockbox 42: its SAM branch never runs)."""
        if len(call.args) != 2 or call.keywords or not isinstance(call.args[1], ast.Constant) \
                or not isinstance(call.args[1].value, str):
            return False
        if self.interp.imports.qualify(call.func) not in (None, "hasattr", "builtins.hasattr"):
            return False  # a `hasattr` of the module's own
        closed = self.table.closed_attributes
        ref = N.ref_text(call.args[0]) if closed else None
        held = self.lookup(ref, flow, frame) if ref is not None else None  # (what the call's evaluation read)
        return held is not None and bool(held.entities) and not (held.modules or held.params or held.items) and all(
            e.kind is Kind.OPTIMIZER and e.uid in closed and call.args[1].value not in closed[e.uid]
            for e in held.entities)

    def _parameter_data(self, stored: ast.expr, flow: Flow, frame: Frame) -> bool:
        """`w.data` of a part of a model (`self._embedding.weight`, a parameter): a new alias of the tensor, detached
        from autograd, on each access; an item written into it gives the alias a graph, dropped at once, and the
        parameter none (ParisaO's VQ codebook reset, lockbox 42). Not where the file gives some object an attribute
        `data` of its own (`self.data = []` in a module: `self.memory.data[i] = loss` stores in that list)."""
        if not (isinstance(stored, ast.Attribute) and stored.attr == "data"
                and isinstance(stored.value, ast.Attribute)):
            return False
        owner = self.eval(stored.value, flow.copy(), frame)
        if not (owner.params or any(h.path for h in owner.modules)):
            return False
        root: ast.AST = stored
        while (up := self.interp.parent(root)) is not None:
            root = up
        own = self._own_data_attributes.get(id(root))
        if own is None:
            own = self._own_data_attributes[id(root)] = any(
                isinstance(n, ast.Attribute) and n.attr == "data" and isinstance(n.ctx, ast.Store)
                and isinstance(n.value, ast.Name) and n.value.id == "self" for n in iter_tree(root))
        return not own

    def _rewrites_item_slots(self, target: ast.Subscript, frame: Frame) -> bool:
        """`for idx, v in enumerate(values): self._val[idx] = v` over the items of a sequence built in sight
        (`Loop.over_items`): each run of the loop writes the same few slots again, one per item, so the buffer
        holds the latest items' graphs, not one more on every iteration of the loop around it."""
        index = target.slice
        loop = self.interp.loops.get(frame.loops[-1]) if frame.loops else None
        if not isinstance(index, ast.Name) or loop is None or not loop.over_items:
            return False
        node = loop.node
        bound = node.target if isinstance(node, (ast.For, ast.AsyncFor)) else None
        if isinstance(bound, ast.Tuple) and bound.elts:
            bound = bound.elts[0]  # `enumerate`'s index
        return isinstance(bound, ast.Name) and bound.id == index.id

    def insert_module(self, owner: ast.expr, value: Value, flow: Flow, frame: Frame) -> None:
        """`student.layer2 = approx_mod` on a model built elsewhere: the module set there is a part of that model now
        (its forward runs it, `student.parameters()` holds its parameters, `student.zero_grad()` clears them). A module
        of a class read stores its parts in its own methods (`stored_on_self`); this is a part put in from outside."""
        base_key = N.ref_text(owner)
        if base_key is None or base_key == "self":
            return
        base = self.lookup(base_key, flow, frame)
        if base is None or not base.modules:
            return
        own = {m.uid for m in base.modules}
        # a module object itself (`nn.Linear(...)`, a module made elsewhere), not an attribute read off another
        # object (`config.cls_token_id = tokenizer.cls_token_id`: a setting, whatever the analysis took `tokenizer` for)
        added = frozenset(m for m in value.modules if m.uid not in own and not m.pseudo and not m.path)
        if added:
            flow.env[base_key] = replace(base, modules=base.modules | added)

    def _api_attribute_store(self, target: ast.Attribute, source: ast.AST | None, value: Value, flow: Flow,
                             frame: Frame) -> bool:
        """A store into an attribute the catalogue models: `model.require_backward_grad_sync = False` (a sync flag of
        a data-parallel wrapper), `accelerator.gradient_accumulation_steps = n` (the window its `backward` divides by,
        set after construction)."""
        owner = self.eval(target.value, flow.copy(), frame)
        for ent in owner.in_order():
            model = self.interp.catalogue.attribute(ent.api, target.attr) if ent.api else None
            if model is not None and any(e.kind == "set_window" for e in model.effects):
                window = self.interp.effects.window_text((value, source if isinstance(source, ast.expr) else None))
                self.interp.table.windows[ent.uid] = window  # (None: known to divide by nothing)
                return True
            if model is not None and any(e.kind == "sync" for e in model.effects):
                flag = source.value if isinstance(source, ast.Constant) and isinstance(source.value, bool) else None
                flow.env[f"{SYNC_OFF}{ent.uid}"] = Value(const=None if flag is None else str(not flag))
                count = flow.env.get(f"{SYNC_SET}{ent.uid}")
                flow.env[f"{SYNC_SET}{ent.uid}"] = Value(const=(count.const if count is not None and isinstance(count.const, int) else 0) + 1)
                return True
        return False

    def assign_grad(self, target: ast.Attribute, source: ast.AST | None, flow: Flow, frame: Frame, stmt: ast.AST) -> None:
        """`p.grad = None` / `p.grad = torch.zeros_like(p)` clears; `p.grad = g / n` rescales; else replaces."""
        interp = self.interp
        owner = self.eval(target.value, flow.copy(), frame)
        holders = interp.grad_holders(owner)
        if not holders:
            if isinstance(source, ast.Subscript) and not reads_grad_of(source, target.value):
                # `for j, p in enumerate(self.weights): p.grad = self.grad_buffer[j]` over tensors the analysis cannot
                # name (fresh leaves an optimizer was built on): a backup written back, into whichever parameters
                flow.hand_written(lambda s: s.refill(None))
            return
        kind = grad_assignment_kind(source)
        if kind == "clear" and self.selective(stmt, target.value):
            # `for name, p in model.named_parameters(): if "head" in name: p.grad = None` cancels the
            # gradients of some parameters on purpose (a per-parameter freeze): not a clear of the step's.
            flow.hand_written(lambda s: s.clear(0, holders, record_discards=False))
            return
        if kind == "clear":
            text = f"{code(target)} = {code(source) if source is not None else '...'}"
            interp.recorder.clear(stmt, text, code(target.value), holders, flow, frame)
        elif kind == "rescale":
            flow.hand_written(lambda s: s.rescale(holders))
        else:
            # `p.grad = self.grad_buffer[j]`, `p.grad = saved[name].to(p.device)`: gradients written in, a buffer
            # filled before the clears written back before the step (as `p.grad.copy_(buffer[i])`): what the step
            # applies is what the code put there, and the clears since dropped nothing it needed
            flow.hand_written(lambda s: s.clear(0, holders, record_discards=False).refill(holders))

    def _locals_of(self, fn: Function) -> frozenset[str]:
        """`local_names` of a function, read once per analysis."""
        memo: dict[int, frozenset[str]] = self.__dict__.setdefault("_locals_memo", {})
        found = memo.get(id(fn))
        if found is None:
            found = memo[id(fn)] = local_names(fn)
        return found

    def selective(self, stmt: ast.AST, param: ast.expr) -> bool:
        """Whether a write to `p.grad` sits under an `if` that tests the loop's parameter (or its name),
        inside the loop over parameters that binds `p` (not an accumulation gate of the batch loop:
        `for i, x in enumerate(loader): ... if (i + 1) % n == 0: for p in params: p.grad = None`)."""
        parent = self.interp.parent
        node: ast.AST | None = stmt
        tested: set[str] = set()
        named = {n.id for n in breadth_first(param) if isinstance(n, ast.Name)}  # `p`, `params[i]`
        while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            up = parent(node)
            if isinstance(up, ast.If) and node in up.body + up.orelse:
                tested |= _selecting_names(up.test)
            if isinstance(up, (ast.For, ast.AsyncFor)) and node in up.body and tested:
                bound = {n.id for n in breadth_first(up.target) if isinstance(n, ast.Name)}
                if named & bound:
                    return bool(bound & tested)
            node = up
        return False

    def forget(self, name: str, flow: Flow, frame: Frame | None = None) -> None:
        """A name a test read was assigned: what paths assumed of those tests no longer holds. Not so for the
        window gates whose arm this is (`if accum >= n: accum = 0; opt.step()`): the arm still runs where
        the window ends, and a step there is that window's."""
        drop = self.interp.akeys_testing.get(name)
        if not drop:
            return
        fn = frame.function if frame is not None else None
        if fn is not None and "." not in name and name in self._locals_of(fn):
            # a local of the function running (an inlined callee's `args = self.args`) is not its caller's name of
            # the same spelling: only the tests read in this function's own code went stale
            scopes = self.interp.akey_scopes
            drop = [k for k in drop if id(fn) in scopes.get(k, ())]
            if not drop:
                return
        if frame is not None and frame.ifs:
            conditions = self.interp.conditions
            arm = {c.akey for i in frame.ifs if (c := conditions.get(i)) is not None and c.is_accumulation_gate}
            drop = [k for k in drop if k not in arm]
        keeping = self.interp.keeping
        if keeping and any(k in keeping for k in drop):
            # a loop binds its counter anew: a test past its bound stays past it (`Interpreter.lasting_tests`)
            kept = {k: keeping[k] for k in drop if k in keeping}
            drop = [k for k in drop if k not in kept]
            flow.map(lambda s: s.forget([k for k, truth in kept.items() if s.assumption(k) not in (None, truth)]))
        if drop:
            flow.forget(list(drop))

    def _holds_no_graph(self, source: ast.AST | None) -> bool:
        """`v.item()`, `v.detach()`, `float(v)`: a call whose result holds no graph, by the catalogue."""
        if not isinstance(source, ast.Call):
            return False
        func = source.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        return name is not None and name in self._detaching

    @functools.cached_property
    def _detaching(self) -> frozenset[str]:
        """Methods and functions whose result holds no graph (`item`, `detach`, `float`): from the catalogue."""
        return self.interp.catalogue.named_by_effect("detach", "number")

    def _accumulated(self, source: ast.expr, key: str, flow: Flow, frame: Frame) -> ast.expr | None:
        """The term carrying a new graph that `source` combines with `key`'s previous value (`accumulation`):
        `loss` of `total = total + loss`, `losses[1]` of `ema = a * losses[1] + (1 - a) * ema`; None when it
        is no accumulation of `key`, or its new terms carry no graph (`ema = 0.9 * ema + 0.1 * loss.item()`)."""
        terms = combined_terms(source, key, self._detaching)
        if not terms:
            return None
        if isinstance(source, ast.BinOp) and isinstance(source.op, ast.Add) and len(terms) == 1 \
                and any(terms[0] is side for side in (source.left, source.right)):
            return terms[0]  # `total = total + loss`: the value stored decides, whatever made `loss`
        for term in terms:
            found = self._graph_term(term, flow, frame)
            if found is not None:
                return found
        return None

    def _graph_term(self, term: ast.expr, flow: Flow, frame: Frame) -> ast.expr | None:
        """`term` when it may carry a graph, narrowed to the operand that does (`losses[1]` of `a * losses[1]`).
        A term that calls what may have effects (a forward pass, a function of this file) is not evaluated
        again: it is the candidate, and the value stored decides."""
        if not self._effect_free(term):
            return term
        value = self.eval(term, flow.copy(), frame)
        if not (value.built or value.graph):
            return None
        if isinstance(term, ast.BinOp) and isinstance(term.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            sides = (self._graph_term(side, flow, frame) for side in (term.left, term.right))
            found = [t for t in sides if t is not None]
            return found[0] if len(found) == 1 else term
        if isinstance(term, ast.UnaryOp) and isinstance(term.op, (ast.USub, ast.UAdd)):
            return self._graph_term(term.operand, flow, frame) or term
        return term

    def _effect_free(self, term: ast.expr) -> bool:
        """Reading `term` again runs nothing: names, items, arithmetic, and calls that only read a value."""
        for node in breadth_first(term):
            if isinstance(node, (ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom, ast.ListComp,
                                 ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                return False
            if isinstance(node, ast.Call) and (N.last_name(node.func) or "") not in self._detaching | _READING_BUILTINS:
                return False
        return True

    def augassign(self, small: ast.AugAssign, flow: Flow, frame: Frame) -> None:
        interp = self.interp
        target = small.target
        if (moved := N.ref_text(target)) is not None and not isinstance(target, ast.Subscript):
            self._rebound[moved] = self._rebound.get(moved, 0) + 1
        rhs = self.eval(small.value, flow, frame)
        if isinstance(target, ast.Attribute) and target.attr == "data" and isinstance(target.value, ast.Attribute):
            target = target.value  # `p.grad.data /= n` rescales `p.grad`
        if isinstance(target, ast.Attribute) and target.attr == "grad":
            owner = self.eval(target.value, flow.copy(), frame)
            holders = interp.grad_holders(owner)
            if holders and isinstance(small.op, (ast.Div, ast.Mult)):
                flow.hand_written(lambda s: s.rescale(holders))
            elif holders and isinstance(small.op, (ast.Add, ast.Sub)):  # `p.grad += noise`
                interp.amp.touched(small, holders, "modify_before_unscale", flow, frame.ifs)
            return
        if isinstance(target, ast.Subscript) and isinstance(small.op, (ast.Div, ast.Mult)) and self._rescale_item(target, small, rhs, flow, frame):
            return
        if isinstance(target, ast.Subscript) and isinstance(small.op, ast.Add):
            grown = param_groups.groups_of(self.eval(target, flow.copy(), frame))
            if grown:  # `opt.param_groups[0]["params"] += [p]`: the optimizer updates `p` too
                interp.objects.add_owned_by(grown, rhs)
                return
        key = N.ref_text(target)
        if key is None:
            if isinstance(target, ast.Subscript) and isinstance(small.op, (ast.Add, ast.Sub)) \
                    and (rhs.built or rhs.graph):
                # `total_loss[name] += loss_val` over a dict's items: a slot of a buffer (its key not a literal)
                # that sums this iteration's graph onto what earlier iterations left there
                self._store_item(target, small.value, rhs, flow, frame, small)
            return
        if frame.no_grad and not _builds_collection(small.value):
            # `with torch.no_grad(): total += loss * n` (or `+= loss`): the sum records no graph of `loss`, whether
            # in place or into a new tensor (a list grown by `+= [loss]` holds the tensor itself, graph and all)
            rhs = made_without_grad(rhs, None)
        old = self.lookup(key, flow, frame) or EMPTY
        if old.counter is not None and old.counter.key is not None:
            counters = interp.counters.aliases
            if counters.running(key):
                counters.unalias(flow.env, key)  # `i += 1` in the loop of `i`: a name bound to `i` is stale
            elif old.counter.key != key:  # `global_step += 1` of `global_step = i`: a counter of its own now
                old = replace(old, counter=replace(old.counter, key=None, shift=0))
        aliases = _as_owner(key, frame)  # `self.global_step += 1` of `progress.next_step()`: `progress.global_step`
        for alias in aliases:
            self.forget(alias, flow, frame)
        counted = (key, *aliases)
        for c in counted:  # a test bound to a name before the move keeps the value it read (`bound_tests`)
            interp.cond_aliases.moved(c, _moved_by(small), frame.loops)
        onward = isinstance(small.op, ast.Add) and is_int(small.value) and small.value.value >= 1
        for c in counted:
            if not onward:  # `i -= 1`: the loop's counter may now stand below its first value
                interp.counter_floors.pop(c, None)
            if c in interp.period_counters:  # `task_step += 1`: past the period's start (any other change: unknown)
                period = periods.key(interp.scope(frame), c)
                flow.map_quiet(functools.partial(periods.advance if onward else periods.forget, k=period))
        if isinstance(small.op, ast.Add) and is_int(small.value, 1) and any(c in interp.windows for c in counted):
            for c in counted:
                if c in interp.windows:
                    flow.map(functools.partial(PathState.advance, counter=c, step=interp.counters.advance_phases))
            new = replace(old, counter=replace(old.counter, incremented=True), const=None) if old.counter else replace(old, const=None)
            flow.env[key] = present(new)
            self.forget(key, flow, frame)
            return
        if isinstance(small.op, (ast.Add, ast.Sub)) and old.counter is not None and is_int(small.value):
            new = replace(old, counter=replace(old.counter, incremented=True), const=None)
        elif isinstance(small.op, ast.Div):
            new = union_as_tensor([old, rhs])
            new = new.with_unit_divisor(code(small.value)) if _one(rhs) else new.with_divisor(code(small.value))
        elif isinstance(small.op, ast.Mult):
            new = union_as_tensor([old, rhs])
            div = self.reciprocal(small.value)
            if div is not None:
                new = _times_reciprocal(new, div, rhs, old)
            elif old.reach and not rhs.reach and not is_number(small.value):
                new = replace(new, multipliers=new.multipliers | {code(small.value)})
                if _unread_factor(rhs):
                    new = replace(new, unread_factors=new.unread_factors | {code(small.value)})
            if not rhs.reach and (old.reach or old.opaque) and (share := share_denominator(small.value)) is not None:
                new = replace(new, shares=new.shares | {share})  # `loss *= n / total`
        elif old.unread_class is not None:
            new = old  # `meter += loss` of `meter = RunningMean()`: the unread class's `__iadd__` decides what it keeps
        else:
            # `params += list(project.named_parameters())`: a collection grows and keeps what it holds (an
            # optimizer built from it owns both models); a number or a tensor is summed
            grows = isinstance(small.op, ast.Add) and _builds_collection(small.value)
            new = join([replace(old, items=()), replace(rhs, items=())]) if grows else union_as_tensor([old, rhs])
            new = present(new)
            if isinstance(small.op, (ast.Add, ast.Sub)) and (rhs.built or rhs.graph):  # `total_loss += loss` (not `+= loss.item()`)
                new = interp.keepalives.note(small, key, small.value, new, frame, code(target), added=rhs)
        flow.env[key] = present(new)  # whatever it was, `x += y` made an object (or raised)
        self.forget(key, flow, frame)

    def _rescale_item(self, target: ast.Subscript, small: ast.AugAssign, rhs: Value, flow: Flow, frame: Frame) -> bool:
        """`batch_output["loss"] /= accumulation_steps`: the item the container holds is divided (the loss
        `batch_output["loss"]` later backpropagates), not a name of its own."""
        base = N.ref_text(target.value)
        k = N.literal_key(target.slice) if type(target.slice) not in (ast.Tuple, ast.Slice) else None
        held = self.lookup(base, flow, frame) if base is not None and k is not None else None
        item = held.item(k) if held is not None and k is not None else None
        if held is not None and k is not None and item is None and (held.reach or held.graph or held.built):
            # `outputs["loss"] /= n` of a model's output (a `ModelOutput`, a dict it returns) whose items were not
            # read: the item is what reading it gives (`outputs["loss"]`), divided; the others stay unknown
            item = self.eval(target, flow.copy(), frame)
        if held is None or item is None:
            return False
        if isinstance(small.op, ast.Div):
            new = union_as_tensor([item, rhs]).with_divisor(code(small.value))
        else:
            div = self.reciprocal(small.value)
            new = union_as_tensor([item, rhs])
            new = _times_reciprocal(new, div, rhs, item) if div is not None else new
        items = tuple((key, new if key == k else v) for key, v in held.items)
        if all(key != k for key, _ in held.items):
            items = (*items, (k, new))
        flow.env[base] = replace(held, items=items)  # type: ignore[index]
        return True


def _times_reciprocal(product: Value, div: str, factor: Value, other: Value) -> Value:
    """`other * (1.0 / n)` is divided by `n`. The factor read on its own carries `n` already (once, not twice),
    unless `other` was divided by `n` too (`(loss / n) * (1.0 / n)`)."""
    if div not in factor.divisors:
        return product.with_divisor(div)
    if div in other.divisors:
        return replace(product, divided_twice=product.divided_twice | {div})
    return product


# builtins that only read their arguments (a tensor's `abs`, a number's `round`)
_READING_BUILTINS = frozenset({"abs", "round", "min", "max", "len", "float", "int"})


def grad_assignment_kind(source: ast.AST | None) -> str:
    """`p.grad = None`/zeros clears; `p.grad = g / n` rescales; anything else replaces the gradient."""
    if source is None:
        return "replace"
    if type(source) is ast.Constant and source.value is None:
        return "clear"
    if is_number(source) and source.value == 0:
        return "clear"
    if isinstance(source, ast.Call) and N.last_name(source.func) in ("zeros_like", "zeros", "zero_"):
        return "clear"
    if isinstance(source, ast.BinOp) and isinstance(source.op, (ast.Div, ast.Mult)):
        return "rescale"
    if isinstance(source, ast.Call) and N.last_name(source.func) in ("div", "mul", "true_divide"):
        return "rescale"
    return "replace"


def _builds_collection(node: ast.expr) -> bool:
    """A list or tuple display, a comprehension, or `list(...)` / `tuple(...)`."""
    if isinstance(node, (ast.List, ast.Tuple, ast.ListComp)):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple") and len(node.args) == 1


def _imported_in(fn: ast.AST, name: str) -> bool:
    """Whether a function imports `name` itself (`from registry import build_backbone` in its body)."""
    return any(isinstance(n, (ast.Import, ast.ImportFrom))
               and any((a.asname or a.name).split(".")[0] == name for a in n.names) for n in breadth_first(fn))


_COUNT_ATTRS = frozenset({"shape", "size"})


def _counts_samples(node: ast.expr) -> bool:
    """`x.shape[0]`, `x.size(0)`, `len(x)`: how many samples a batch holds (its first dimension)."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
        return isinstance(node.slice, ast.Constant) and node.slice.value == 0
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _COUNT_ATTRS:
        return len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" \
        and len(node.args) == 1


def _sample_count(side: ast.expr, fn: ast.AST | None) -> bool:
    """A factor that is the batch's sample count: written as one, or a name the function assigns once, to one."""
    if _counts_samples(side):
        return True
    if not isinstance(side, ast.Name) or fn is None:
        return False
    bound = [n for n in iter_tree(fn) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
             and any(isinstance(t, ast.Name) and t.id == side.id
                     for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
    return len(bound) == 1 and isinstance(bound[0], ast.Assign) and len(bound[0].targets) == 1 \
        and _counts_samples(bound[0].value)


def share_denominator(factor: ast.expr) -> str | None:
    """The denominator of a factor that is a share, `n / total` with a numerator that is no number
    (`batch.num_graphs / total_sample_count`, `len(chunk) / batch_size`): the loss is weighted by the part
    `n` of a count `total`, so `total` is the count the weights add up over, not a normalisation of this
    micro-batch alone (`1 / n` and `0.5 / n` are a reciprocal and a weight over `n`)."""
    if isinstance(factor, ast.BinOp) and isinstance(factor.op, ast.Div) and not is_number(factor.left):
        return code(factor.right)
    return None


def _weighted(numerator: ast.expr, value: Value) -> bool:
    """`loss * n` on the left of `/ total`, a loss (read, or from a call out of sight) multiplied by a
    factor that is no number (`chunk_loss * len(chunk) / batch_size` weights by the share
    `len(chunk) / batch_size`; `loss * 2 / batch_size` is a weight and a normalisation)."""
    return (isinstance(numerator, ast.BinOp) and isinstance(numerator.op, ast.Mult) and bool(value.reach or value.opaque)
            and not is_number(numerator.left) and not is_number(numerator.right))


def _is_last(index: ast.AST) -> bool:
    """`-1`, the index of a list's last item."""
    return (isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub)
            and isinstance(index.operand, ast.Constant) and type(index.operand.value) is int
            and index.operand.value == 1)


def _as_owner(key: str, frame: Frame) -> tuple[str, ...]:
    """`self.x` of a method run on a local instance, as its caller names it (`progress.x`, `Frame.owner`)."""
    if frame.owner is None or not key.startswith("self."):
        return ()
    return (f"{frame.owner}{key[4:]}",)


def _restart(state: PathState, counter: str, first: dict[str, frozenset[str] | None]) -> PathState:
    return state.restart(counter, first)


def _reset_period(state: PathState, period: str, value: int | None) -> PathState:
    return periods.reset(state, period, value) if value is not None else periods.forget(state, period)


def _selecting_names(test: ast.expr) -> set[str]:
    """The names a test reads to choose among parameters: not a clause that only asks whether a parameter
    has a gradient at all (`p.grad is not None`, `p.requires_grad`, `p.grad`), which every clear of all
    gradients asks; a clause on the gradient's values (`p.grad.sum() == 0`) does choose."""
    if isinstance(test, ast.BoolOp):
        return set().union(*(_selecting_names(v) for v in test.values))
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _selecting_names(test.operand)
    if _asks_for_a_gradient(test):
        return set()
    return {n.id for n in breadth_first(test) if isinstance(n, ast.Name)}


def _asks_for_a_gradient(clause: ast.expr) -> bool:
    """`p.grad`, `p.requires_grad`, `p.grad is None`, `p.grad is not None`."""
    if isinstance(clause, ast.Compare) and len(clause.ops) == 1 and isinstance(clause.ops[0], (ast.Is, ast.IsNot)) \
            and isinstance(clause.comparators[0], ast.Constant) and clause.comparators[0].value is None:
        clause = clause.left
    return isinstance(clause, ast.Attribute) and clause.attr in ("grad", "requires_grad") \
        and isinstance(clause.value, ast.Name)


def _moved_by(small: ast.AugAssign) -> int | None:
    """How far `c += 1` / `c -= 2` moves the counter (None: not a constant step)."""
    value = int_value(small.value)
    if isinstance(small.op, (ast.Add, ast.Sub)) and value is not None:
        return value if isinstance(small.op, ast.Add) else -value
    return None


def _set_field(flow: Flow, name: str, attr: str, value: Value) -> None:
    """`r.loss_value = x` on `r = Output(...)`, an object of a class read: the object holds `x` there now, so
    whoever it is handed to (a caller of the function that returns it) reads `x` as its attribute."""
    obj = flow.env.get(name)
    if obj is None or not (isinstance(obj.const, tuple) and obj.const[:1] == ("instance",)):
        return
    flow.env[name] = replace(obj, items=(*((k, v) for k, v in obj.items if k != attr), (attr, value)))


_SLOT = "%slot:"  # env key prefix: the value stored into `base[index]`, `index` a name (`_remember_slot`)


def _slot_key(target: ast.Subscript) -> str | None:
    """`%slot:hidden[s_id]` for `hidden[s_id]` (a container by its reference, an index held in a plain name)."""
    if type(target.slice) is not ast.Name:
        return None
    base = N.ref_text(target.value)
    return None if base is None else f"{_SLOT}{base}[{target.slice.id}]"


def _field_of_instance(node: ast.expr, flow: Flow) -> tuple[str, str] | None:
    """`(name, attr)` of `name.attr` when `name` holds an object of a class read that has that attribute."""
    if not (isinstance(node, ast.Attribute) and type(node.value) is ast.Name and node.value.id != "self"):
        return None
    obj = flow.env.get(node.value.id)
    if obj is None or not (isinstance(obj.const, tuple) and obj.const[:1] == ("instance",)) \
            or obj.item(node.attr) is None:
        return None
    return node.value.id, node.attr


def _one(value: Value) -> bool:
    """The int 1, bound and never counted up (`accumulation_steps = 1`)."""
    return type(value.const) is int and value.const == 1 and (value.counter is None or not value.counter.incremented)


def _instance(value: Value) -> bool:
    """An object of the project's classes made in sight: its attributes (`items`), no graph of its own."""
    return bool(value.items) and not (value.built or value.graph)


def _picked_by_name(base: Value, name: Value) -> Value | None:
    """The parameters of `base` (a dict of a module's parameters by name) that `name` stands for, when it is one of
    the names a test picked from that module (`_names_selected`): that pick, not the whole module."""
    picks = frozenset(h for h in name.params if h.path and h.path[-1][:1] == "[" and not h.pseudo)
    if not picks:
        return None
    owners = base.params | base.modules
    if not all(any(o.uid == h.uid and not o.pseudo and h.path[:len(o.path)] == o.path for o in owners) for h in picks):
        return None
    return Value(params=picks, present=True)


def _names_selected(clause: ast.comprehension, elt: ast.expr) -> bool:
    """`for n, p in m.named_parameters() if ...` yielding `n`: the names of the parameters the test picks."""
    target, it = clause.target, clause.iter
    return (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "named_parameters"
            and isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name)
            and isinstance(elt, ast.Name) and elt.id == target.elts[0].id)


def _selects_parameters(source: ast.expr) -> bool:
    """`model.named_parameters()`, `model.parameters()`: what a comprehension picks parameters from."""
    return isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) \
        and source.func.attr in ("named_parameters", "parameters")


def _unread_factor(factor: Value) -> bool:
    """A factor whose value was not read: a parameter handed in or a result of a call not read (opaque), not a number
    or a setting computed in sight (which carries what it was divided by, or a constant)."""
    return factor.opaque and not factor.divisors and factor.const is None and not factor.shares

"""Tensors with an autograd graph stored across iterations: `total_loss += loss`, `losses.append(loss)`.

Each accumulation keeps the graph of every iteration alive (activations included) until the
accumulator is dropped. That is the point when the accumulator is later backpropagated (an RL episode's
log-probabilities, a sum of micro-batch losses), and a memory leak otherwise.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from . import names as N
from .accumulation import initialisations, loop_counters
from .bounded_containers import grows_bounded
from .conventions import convention
from .events import KeepAlive
from .flow import Flow, Frame
from .fresh_returns import made_in_the_call, returns_made_afresh
from .names import last_name
from .one_batch import cuts_one_batch, draws_batches, fetches_each_time, repeats_on_one_batch
from .parameter_tests import handed_arguments
from .parts import KeepAlivesHost
from .provenance import READ, Assumption, Provenance, assumed, weakest
from .syntax import code, unpacked_targets
from .values import EMPTY, OPAQUE, PRESENT, Value, holding
from .walk import breadth_first, iter_tree


class KeepAlives:
    """Record accumulations of graph-carrying tensors, and which accumulators a backward consumed."""

    def __init__(self, interp: KeepAlivesHost) -> None:
        self.interp = interp
        self.events: dict[int, KeepAlive] = {}
        self._trained: set[str] = set()
        self._resets: dict[int, tuple[frozenset[str], frozenset[str]]] = {}  # loop id -> (resets_in, emptied_in)
        self._visiting: set[int] = set()  # methods whose resets are being read (`_method_resets`)
        # names last bound to an element of a tuple the analysis cannot split (`loss, hits = model(x)`,
        # `obs, reward, done, info = env.step(action)`): a graph is likely for some elements, not each
        self.tuple_parts: set[str] = set()
        # containers backpropagated through one item (`output["loss"].backward()`): name -> the item,
        # until the item is replaced by a value without a graph (`expressions._item_replaced`)
        self.item_graphs: dict[str, str] = {}
        # name -> (its value, {source name: the source's value}) for a name bound to the whole of other
        # values (`loss = losses`, `loss = sum(losses)`, `loss = sum(l) if isinstance(l, tuple) else l`):
        # a backward on the name proves the sources hold the graph (see `proven_by_backward`)
        self.made_from: dict[str, tuple[Value, dict[str, Value]]] = {}
        # name -> (its value, the container's name, the container's value, the item's text) for a name bound to
        # an item of a container (`loss = output["loss"]`): a backward on the name, both still bound so, is one
        # through that item (`output["loss"].backward()`, `recorder._container_holds_graph`)
        self.item_of: dict[str, tuple[Value, str, Value, str]] = {}
        # names given a graph that way: of what type they are (a tensor, a tuple of them) is not read
        self.proven_sources: set[str] = set()
        # accumulations by the value stored (`y` of `x.append(y)`): id of the value -> (the value, its event).
        # A backward pass of that very value proves a graph an unreadable call made (a loss from a callable
        # handed in: `losses.append(f(x)); losses[-1].backward()`), recording the event then
        self._stored: dict[int, tuple[Value, KeepAlive]] = {}
        # accumulations whose graph was only assumed (a forward of the project not read), by the value added
        # (`loss` of `total += loss`): a backward pass of that very value later proves it read
        self._assumed: dict[int, tuple[Value, KeepAlive]] = {}

    def bound(self, name: str, source: ast.AST | None, value: Value, flow: Flow) -> None:
        """`name = source` was stored as `value`: remember the names it is wholly made of, or the item of a
        container it is (`loss = output["loss"]`)."""
        self.item_of.pop(name, None)
        if (isinstance(source, ast.Subscript) and isinstance(source.value, ast.Name) and source.value.id != name
                and N.ref_text(source) is not None and source.value.id in flow.env):
            self.item_of[name] = (value, source.value.id, flow.env[source.value.id], code(source))
        names = _whole_sources(source) if source is not None else None
        if not names or name in names:
            self.made_from.pop(name, None)
            return
        held = {n: flow.env[n] for n in names if n in flow.env}
        if len(held) == len(names):
            self.made_from[name] = (value, held)
        else:
            self.made_from.pop(name, None)

    def item_backpropagated(self, name: str, held: Value | None, flow: Flow) -> str | None:
        """The item (`output["loss"]`) a backward on `name` ran through, when `name` is still bound to it and its
        container to what it was then."""
        entry = self.item_of.get(name)
        if entry is None or held is None or entry[0] is not held or flow.env.get(entry[1]) is not entry[2]:
            return None
        return entry[3]

    def proven_by_backward(self, name: str, held: Value | None, flow: Flow, by_name: bool = False) -> None:
        """A backward ran on `name`, bound (still) to the whole of other values that are still bound as
        they were: those hold its graph too, so storing them across iterations keeps it alive whatever
        call made them (RecBole's `losses = self.model.calculate_loss(batch)`, then
        `loss = sum(losses) ...; loss.backward(); losses_list.append(losses)`)."""
        entry = self.made_from.get(name)
        if entry is None or held is None or entry[0] is not held:
            return
        for source, was in entry[1].items():
            now = flow.env.get(source)
            if now is was and (not now.graph or now.graph_assumed and not by_name):
                flow.env[source] = replace(now, graph=True, graph_assumed=by_name)
                self.proven_sources.add(source)

    def _graph_provenance(self, value: Value) -> Provenance:
        """How sure it is that `value` holds an autograd graph: a backward ran on it (read), or the modules
        whose forward passes built it are what the analysis takes them for (a model of a class of another
        file may return plain numbers under a loss's name). A backward taken by its name proves nothing
        (`model.backward(Y)` of a NumPy network)."""
        if value.graph and not value.graph_assumed:
            return READ
        table = self.interp.table
        # a module made out of sight (handed in, an attribute set elsewhere): what its forward returns, and
        # which of the outputs carry a graph, is not read, however sure it is that it is a module
        facts = [assumed(Assumption.ATTRIBUTE if table.label(h.uid).startswith("self.") else Assumption.PARAMETER)
                 if h.uid in table.unknown_origin else table.entities[h.uid].provenance
                 for h, _gens, _site in value.built if h.uid in table.entities]
        facts.append(value.provenance)
        if any(site in table.unread_forwards or site in value.vague_sites for _h, _gens, site in value.built):
            # a forward of the project's not read here (past the reading budget), or a value it holds only through
            # code not read (`Value.vague_sites`): it may be `.item()` numbers
            facts.append(assumed(Assumption.OPAQUE))
        if value.graph_assumed and not value.built:
            facts.append(assumed(Assumption.NAME))
        return weakest(facts)

    def note(self, node: ast.AST, target: str, stored: ast.expr, value: Value, frame: Frame, shown: str = "",
             rebinds: bool = False, item: Value | None = None, added: Value | None = None) -> Value:
        """`target` accumulates `value` at `node`; return `value` marked as held by the accumulator.
        `rebinds`: `x = x + [y]` makes a new object and binds the name to it, where `x += [y]` extends the
        list in place: a parameter rebound so is a local, whatever list the caller handed in. `item`: the
        value stored (`y` of `x.append(y)`): a backward pass of it proves its graph (`proven`). `added`: what
        this statement adds (`y` of `x.append(y)`, of `x += y`) when `value` is the accumulator's whole new
        value: whether this statement keeps a graph is a question about what it adds, not about what earlier
        statements left in the accumulator (`accs.append(out)` then `accs.append((pred == t).float())`)."""
        given = value
        probe = added if added is not None else given
        value = holding(probe)  # `self.outputs.append({"loss": loss, "step": i})`: the dict keeps the loss's graph
        held_in = "" if probe.built or probe.graph else _item_holding(probe)  # the item of a container that holds it
        if frame.no_grad or not frame.loops:
            return given  # no graph in a `no_grad` block, or no loop
        # no graph (only a forward pass of a module makes one), or one only an unreadable call might have built
        # (it may well return `.item()`): kept for a backward of the stored value itself to prove it
        unproven = (not (value.built or value.graph)
                    or value.opaque and not (value.reach - value.vague) and not value.graph)
        if unproven and item is None:
            return given
        if type(stored) is ast.Name and stored.id in self.tuple_parts and not value.graph:
            if "." not in target and "[" not in target:
                self.tuple_parts.add(target)  # `score += reward`: what it sums is no clearer
            return given  # maybe the metric of `loss, hits = model(x)`, not the loss
        # the innermost loop, past loops over the entries of one value (`for name, val in losses.items():`, a
        # literal tuple, a list display handed to the function that walks it): they run within one iteration of the
        # loop around them, which is what the accumulator outlives
        loops = [lid for lid in frame.loops if lid in self.interp.loops]
        while (len(loops) > 1 and not self.interp.loop_backpropagates(loops[-1])
               and (self.interp.loops[loops[-1]].over_items or _over_entries(self.interp.loops[loops[-1]].node))):
            loops.pop()
        loop = loops[-1] if loops else None
        if loop is None or not self.interp.loop_backpropagates(loop):
            return given  # not a training loop: evaluation code has its own rules (and often no_grad)
        if self.interp.loops[loop].implicit and not target.startswith("self."):
            return given  # a local of a step function: it does not outlive the call
        cls = getattr(frame.cls, "node", None)
        if grows_bounded(node, target, frame.function, cls if isinstance(cls, ast.ClassDef) else None,
                         self.interp.module):
            return given  # `self.deque.append(loss)` of `deque(maxlen=20)`: at most 20 graphs, however many iterations
        fn = frame.function
        if fn is not None and "." not in target and "[" not in target and not _within(self.interp.loops[loop].node, fn) \
                and not _declared_global(fn, target) and (rebinds or target not in _parameters(fn)
                                                          or _rebound_before(fn, target, node)):
            return given  # a local of a function called in the loop (`rewards = rewards + log_pi`): gone at its return
        if fn is not None and not _within(self.interp.loops[loop].node, fn) and _in_fresh_local(fn, target):
            return given  # an attribute of an object the call makes (`r = Output(); r.loss = r.loss + err`): made anew
        if fn is not None and not _within(self.interp.loops[loop].node, fn) and "." in target \
                and _reset_among(target, self.resets_in(getattr(fn, "node", fn))):
            # `self.h0 = torch.zeros(...)` then `self.h0[-1] = self.proj(z)` in a method called in the loop: each call
            # makes the tensor afresh (not only the first: `if self.h0 is None:` starts it once), so it holds one
            # call's graph, dropped at the next (sa-vae's decoder)
            return given
        around = self.interp.loops[loop]
        # a parameter of a function called in the loop names the caller's object, whatever the caller calls it
        handed = fn is not None and "." not in target and "[" not in target and not _within(around.node, fn) \
            and target in _parameters(fn)
        if handed and self._handed_afresh(fn, target, around.node):
            # `labels[:, old] = sig(old_outputs)` in `compute_loss(outputs, labels, ...)`, called with the loop's own
            # `labels` (`for images, labels in loader:`): the caller's object, made afresh at each iteration
            return given
        inside = fn is not None and not handed and not _within(around.node, fn)
        behind = _parameter_behind(fn, target) if inside else None
        if behind is not None and self._handed_afresh(fn, behind, around.node):
            # `g, rel_labels = data; g.ndata["feat"] = torch.cat(...)` in a `forward` the loop calls with the batch it
            # draws (kg-subg-link's graph classifier): an attribute or item of the caller's object, made afresh at
            # each iteration, as a parameter itself is above
            return given
        if not handed and (_reset_among(target, self.resets_in(around.node))
                           or any(_reset_among(target, self.resets_in(m)) for m in around.each_batch)):
            return given  # reset in the same loop (or a hook the framework calls each batch): one iteration's graph
        owner = frame.owner
        if owner and target.startswith("self.") and fn is not None and not _within(around.node, fn) \
                and _reset_among(owner, self.resets_in(around.node)) and not _lasting_alias(around.node, owner):
            # `self.logp_action_lst.append(logp)` in `Rollout.put`, called as `rollout.put(...)` in a loop that binds
            # `rollout = Rollout()` anew at each episode's end (DeepRL-Chinese): the list goes with its object
            return given
        if _over_models(self.interp.loops[loop].node):
            outer = next((lid for lid in reversed(frame.loops[:frame.loops.index(loop)]) if lid in self.interp.loops), None)
            if outer is not None and target in self.resets_in(self.interp.loops[outer].node):
                # `errD_total = 0; for i in range(self.num_Ds): errD_total += train_Dnet(i)` in each
                # batch: the graphs of one batch's few models, dropped at the next batch
                return given
        if _over_window(self.interp.loops[loop].node):
            up = self.interp.parent(self.interp.loops[loop].node)
            while up is not None and not isinstance(up, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef)):
                up = self.interp.parent(up)  # the step's function or loop, around the `if`s
            if up is not None and target in self.resets_in(up):
                # `losses = []; for _ in range(gradient_accumulation_steps): losses.append(loss)` in each
                # step: the graphs of one accumulation window, dropped at the next step
                return given
        if self._reset_per_batch(target, frame.loops[:frame.loops.index(loop) + 1]):
            return given
        if unproven:
            assert item is not None
            if _shared(item):
                return given
            waiting = self._stored.get(id(item))
            if waiting is None or waiting[0] is not item:
                self._stored[id(item)] = (item, KeepAlive(node, target, stored, loop, shown=shown or target,
                                                          via=self.interp.calls.calls_around(node)))
            return given
        event = self.events.get(id(node))
        if event is not None and item is not None:
            self._stored[id(item)] = (item, event)
        if event is None:
            via = self.item_graphs.get(stored.id, "") if type(stored) is ast.Name and not probe.built else ""
            if not via and held_in and type(stored) is ast.Name:
                via = f"{stored.id}[{held_in}]"  # `log, out = self.step(batch)`: `log["loss"]` holds the graph
            provenance = self._graph_provenance(value)
            if self._rebuilt_through_another_name(node, target) or self._held_out_of_sight(target):
                provenance = weakest([provenance, assumed(Assumption.ATTRIBUTE)])
            event = self.events[id(node)] = KeepAlive(node, target, stored, loop, shown=shown or target, via_item=via,
                                                      provenance=provenance,
                                                      # a container written in place (`{"loss": loss}`): no `.detach()`
                                                      untyped=_untyped(stored, self.proven_sources, held_in, via),
                                                      via=self.interp.calls.calls_around(node))
            if item is not None:
                self._stored[id(item)] = (item, event)
        if added is not None and event.provenance.assumed and not _shared(added):
            self._assumed[id(added)] = (added, event)
        event.outer.add(self._outer(target, loops, fn))
        if target in self._trained:
            event.trained = True
        return replace(given, kept=given.kept | {target})

    def _handed_afresh(self, fn: object, param: str, loop: ast.AST) -> bool:
        """`fn`, run for the call being evaluated, was handed as `param` a name that `loop` binds afresh in each
        iteration (its target, or a name it assigns anew), or an item of one."""
        calls = self.interp.calls
        call = calls.current_call_node()
        if call is None or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        if last_name(call.func) != fn.name and fn.name != "forward":
            # the store is itself a call (`outputs.append(x)` in `parse_output`): the call of `fn` is further out
            call = next((c for c in reversed(calls.enclosing_calls()) if last_name(c.func) == fn.name), call)
        first = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]][:1]
        # a module called (`self.criterion()(out[0], y)`, `loss_fn(pred, y)`) runs its `forward` on itself
        module_call = fn.name == "forward" and first == ["self"] and last_name(call.func) != "forward"
        if last_name(call.func) != fn.name and not module_call:
            return False
        # (a method called on its object binds `self` itself)
        on_object = module_call or isinstance(call.func, ast.Attribute) and first in (["self"], ["cls"])
        given = handed_arguments(fn, call, on_object).get(param)
        # an item of an object made afresh (`mask_tokens(encoded["input_ids"], ...)` of `encoded = tokenizer(...)`)
        while isinstance(given, ast.Subscript) and not isinstance(given.slice, ast.Slice):
            given = given.value
        if isinstance(given, (ast.List, ast.Tuple, ast.Dict, ast.Set)) or isinstance(given, ast.Call) \
                and last_name(given.func) in ("clone", "copy", "deepcopy"):
            # `self.parse_output([mel, mel_post, gate, align], pred)` (Char2Prosody), `to_flow(f.permute(...).clone())`
            # (LapIRN): a display or a copy made at the call itself, one object per call
            return True
        if not isinstance(given, ast.Name):
            return False
        if given.id in self.resets_in(loop):
            return True
        caller = self.interp.parent(call)
        while caller is not None and not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            caller = self.interp.parent(caller)
        # `log_pi = gaussian_logprob(noise, log_std)` then `squash(mu, pi, log_pi)` in an actor's `forward` the loop
        # calls: a local the caller makes at each of its calls (`context = self._initial_context(v)`, a method of
        # its class that returns a clone, too)
        if not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)) or _within(loop, caller):
            return False
        owner = self.interp.parent(caller)
        methods = {n.name: n for n in owner.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))} \
            if isinstance(owner, ast.ClassDef) else {}
        return _made_at_each_call(caller, given.id, methods) or _bound_afresh_before(caller, given.id, call, methods)

    def _rebuilt_through_another_name(self, node: ast.AST, target: str) -> bool:
        """`q_proj.temp_weight = q_proj.temp_weight / s`, where the same file also makes that attribute afresh on an
        object it cannot name (`for fc in fcs: fc.temp_weight = fc.weight * s`, `fcs` handed in): that object may be
        this one, rebuilt before the store on every call (OmniQuant). That the accumulator outlives the iteration
        rests on the two being different objects: an assumption."""
        base, dot, attr = target.rpartition(".")
        if not dot or not attr.isidentifier() or "[" in base or base == "self":
            return False
        root: ast.AST | None = node
        while root is not None and not isinstance(root, ast.Module):
            root = self.interp.parent(root)
        if root is None:
            return False
        return any(_fresh_store_through_unknown_name(fn, attr, base) for fn in iter_tree(root)
                   if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)))

    def _held_out_of_sight(self, target: str) -> bool:
        """The accumulator is an attribute of an object no code read here made: `self.trainer.train_loop.running_loss`
        of a LightningModule, whose `trainer` the framework sets. What that object is (a list, or a running mean that
        copies the value under `no_grad`, as Lightning 1.0's `TensorRunningAccum` does) is not read."""
        parts = target.split(".")
        return len(parts) > 2 and parts[0] == "self" and parts[1].isidentifier() \
            and not self.interp.prescan.stores_on_self(parts[1])

    def _outer(self, target: str, loops: list[int], fn: object) -> tuple[tuple[int, bool], ...]:
        """The loops around the storing loop (`loops[-1]`), innermost first, each with whether `target` is made
        afresh within one of its iterations: assigned anew in it or in a loop between, or a local of the function
        holding the storing loop when that function is called from inside it (made at each call). A parameter
        of that function is the caller's object under another name: taken as made afresh (not read)."""
        out: list[tuple[int, bool]] = []
        fresh = False
        local = ("." not in target and "[" not in target and fn is not None and not _declared_global(fn, target)
                 and (target in _parameters(fn) or _binds(fn, target)))
        for lid in reversed(loops[:-1]):
            node = self.interp.loops[lid].node
            called = local and not _within(node, fn)  # the function holding the storing loop runs inside this loop
            fresh = fresh or called or target in self.resets_in(node)
            out.append((lid, fresh))
        return tuple(out)

    def _reset_per_batch(self, target: str, loops: tuple[int, ...]) -> bool:
        """`for x in loader: total = 0; for _ in range(rep_d): ...; total += loss_d`: the accumulator is kept
        in loops that repeat work on one batch (`range` loops fetching no data), and reset in each
        iteration of the loop around them that draws the batches. It holds the graphs of one batch's
        repetitions, dropped at the next batch: a bounded, short-lived set, not the run's (an epoch loop,
        `for epoch in range(n)`, draws no batch itself: the loop over the loader is inside it)."""
        inner = [self.interp.loops[lid].node for lid in loops if lid in self.interp.loops]
        while len(inner) > 1 and (repeats_on_one_batch(inner[-1]) or cuts_one_batch(inner[-1])):
            # (or loops over the micro-batches sliced from one batch: DARTS' recurrent search keeps one hidden
            # state per micro-batch slot, `hidden[s_id]`, rewritten from slot 0 at each batch its outer loop fetches)
            inner.pop()
            around = inner[-1]
            if _reset_among(target, self.resets_in(around)):
                return draws_batches(around) or fetches_each_time(around)
        return False

    def proven(self, loss: Value, backward: str, by_name: bool = False) -> None:
        """A backward pass (`backward`, its call) of `loss`: an accumulation that stored this very value keeps a
        graph after all (tntorch's `losses.append(reduce(add, loss_function(*tensors)))`, then
        `losses[-1].backward()`), and one that needs it until then."""
        waiting = self._assumed.get(id(loss))
        if waiting is not None and waiting[0] is loss and not by_name:
            # `train_loss += loss` then `loss.backward()`: the graph it holds is read, whoever built it
            waiting[1].provenance = READ
        entry = self._stored.get(id(loss))
        if entry is None or entry[0] is not loss or _shared(loss):
            return
        event = entry[1]
        if id(event.node) not in self.events:
            self.events[id(event.node)] = event
            event.trained = event.target in self._trained
        event.backpropagated_later = event.backpropagated_later or backward
        if by_name:  # proven only by a call taken for a backward by its name
            event.provenance = weakest([event.provenance, assumed(Assumption.NAME)])

    def consumed(self, loss: Value) -> None:
        """A backward pass of a value held by accumulators: their graphs were kept to be trained on."""
        for name in loss.kept:
            self._trained.add(name)
            for event in self.events.values():
                if event.target == name:
                    event.trained = True

    def resets_in(self, loop: ast.AST) -> frozenset[str]:
        """Names a loop assigns afresh (`losses = []`, `total = 0`, `losses.clear()`) in each iteration."""
        return self._resets_of(loop)[0]

    def emptied_in(self, loop: ast.AST) -> frozenset[str]:
        """The names of `resets_in` that the loop empties in place (`losses.clear()`, `del losses[:]`): what
        they held is gone wherever in the iteration that happens."""
        return self._resets_of(loop)[1]

    @functools.cached_property
    def _detaching(self) -> frozenset[str]:
        """Methods whose result holds no graph (`detach`, `item`): from the catalogue."""
        return self.interp.catalogue.named_by_effect("detach", "number")

    def _resets_of(self, loop: ast.AST) -> tuple[frozenset[str], frozenset[str]]:
        found = self._resets.get(id(loop))
        if found is None:
            out: set[str] = set()
            emptied: set[str] = set()
            body = loop.body if isinstance(loop, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef)) else []
            # `if ema: ema = a * x + (1 - a) * ema else: ema = x`: the `else:` starts the running value once
            starts = initialisations(body, loop_counters(loop))
            for stmt in body:
                for node in iter_tree(stmt):
                    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                        for t in unpacked_targets(targets):  # `feat, weights = self.trojan(x)` binds each afresh
                            text = self.interp.ref(t)
                            if text is not None and (not _mentions(node.value, text) or _cut(node.value, self._detaching)) \
                                    and starts.get(id(node)) != text:
                                out.add(text)  # made afresh, or cut from its graph (`h = h[:, -k:].detach()`)
                    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "clear":
                        text = self.interp.ref(node.func.value)
                        if text is not None:
                            out.add(text)
                            emptied.add(text)
                    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "detach_" \
                            and not node.args:
                        # `self.memory.detach_()` (a TGN memory's `detach()` called each batch): cut from its graph in place
                        text = self.interp.ref(node.func.value)
                        if text is not None:
                            out.add(text)
                    elif isinstance(node, ast.Delete):
                        for t in node.targets:
                            base = t.value if isinstance(t, ast.Subscript) else t
                            text = self.interp.ref(base)
                            if text is not None:
                                out.add(text)
                                emptied.add(text)
            out |= _slots_rewritten(body, self.interp.ref)
            if isinstance(loop, (ast.For, ast.AsyncFor)):  # `for x, labels in loader:` binds them afresh each time
                out |= {n.id for n in iter_tree(loop.target) if isinstance(n, ast.Name)}
            for recv, resets, empties in self._method_resets(body):
                out |= {_on(recv, r) for r in resets} | resets
                emptied |= {_on(recv, r) for r in empties} | empties
            found = self._resets[id(loop)] = (frozenset(out), frozenset(emptied))
        return found

    def _method_resets(self, body: list[ast.stmt]) -> list[tuple[str, frozenset[str], frozenset[str]]]:
        """What the methods of this file's classes that a block calls (`memory.clear_memory()`, `model.train_net()`
        and the `self.make_batch()` it calls) assign afresh or empty on `self`: (receiver, resets, emptied)."""
        found: list[tuple[str, frozenset[str], frozenset[str]]] = []
        for stmt in body:
            for node in iter_tree(stmt):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                    continue
                recv = self.interp.ref(node.func.value)
                if recv is None or recv.count(".") >= _DEEPEST_RESET:
                    continue  # (a reset that deep, through calls on parts of parts, is not followed)
                methods = [info.methods[node.func.attr] for info in self.interp.classes.values()
                           if node.func.attr in info.methods]
                if len(methods) > _MOST_CANDIDATES:
                    # a method name many classes of the file define (`call` of every layer of a Keras model): which one
                    # runs is not known, and following each, through each of theirs, grows without bound
                    # (transformers' modeling_tf_data2vec_vision.py: gigabytes, lockbox 43's vendored copy)
                    continue
                for fn in methods:
                    if isinstance(fn, ast.Lambda):
                        continue
                    if id(fn) in self._visiting:
                        continue  # a method that calls itself (or its caller): read once
                    self._visiting.add(id(fn))
                    try:
                        own, own_emptied = self._resets_of(fn)
                    finally:
                        self._visiting.discard(id(fn))
                    mine = frozenset(r for r in own if r.startswith("self."))
                    if mine:
                        found.append((recv, mine, frozenset(r for r in own_emptied if r.startswith("self."))))
        return found


def _untyped(stored: ast.expr, proven: set[str], held_in: str, via: str) -> bool:
    """What is stored may not be a tensor: a name given a graph by a backward of what it was made of
    (`loss = sum(losses)`), or a container written in place that holds it in an item (`{"loss": loss}`)."""
    return (type(stored) is ast.Name and stored.id in proven) or (bool(held_in) and not via)


def _item_holding(value: Value) -> str:
    """The key of the first item of a container built in sight that holds a graph (`loss` of `{"loss": loss}`)."""
    for key, item in value.items:
        held = holding(item, 2)
        if (held.built or held.graph) and not key.startswith("?"):
            return key
    return ""


def _lasting_alias(loop: ast.AST, owner: str) -> bool:
    """Every binding of `owner` in the loop's body names an object read off a name the loop does not bind (`meter =
    logger.meters["loss"]`, then `meter.update(loss)`): the same object at each iteration, not one made afresh, so
    what its methods keep on it outlives the iteration (trojanzoo's meters)."""
    if "." in owner or "[" in owner:
        return False
    bound: set[str] = set()
    values: list[ast.expr] = []
    for node in iter_tree(loop):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            bound.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {n.id for n in ast.walk(ast.Tuple(elts=list(targets), ctx=ast.Store())) if isinstance(n, ast.Name)}
            bound |= names
            if owner in names:
                if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                        and isinstance(node.targets[0], ast.Name)):
                    return False
                values.append(node.value)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            bound.update(n.id for item in node.items if item.optional_vars is not None
                         for n in ast.walk(item.optional_vars) if isinstance(n, ast.Name))
    if not values:
        return False
    for value in values:
        root = value
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if root is value or not isinstance(root, ast.Name) or root.id in bound:
            return False
    return True


def _reset_among(target: str, resets: Iterable[str]) -> bool:
    """The accumulator, or the container whose slot it is (`self._sum` of `self._sum[0]`), is made anew."""
    container = target.split("[", 1)[0]
    return any(name == target or name == container for name in resets)


def _over_entries(loop: ast.AST) -> bool:
    """`for k, v in losses.items():`, `for name in ("a", "b"):`, `for c in criterions: criterions[c]...`: a loop
    over the entries of one value (a container its body indexes by the loop variable is walked by key)."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    it = loop.iter
    if isinstance(it, (ast.Tuple, ast.List)):
        return True
    if isinstance(it, (ast.Name, ast.Attribute)) and isinstance(loop.target, ast.Name):
        walked, key = code(it), loop.target.id
        return any(isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Name) and n.slice.id == key
                   and code(n.value) == walked for part in loop.body for n in iter_tree(part))
    return (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute)
            and it.func.attr in ("items", "values", "keys") and not it.args)


_MODEL_COUNT = convention("model_count")


def _range_count(loop: ast.AST) -> str | None:
    """The text of N in `for ... in range(N):` (of `x` in `range(len(x))`), or None for any other loop."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return None
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and len(it.args) == 1):
        return None
    arg = it.args[0]
    return code(arg.args[0]) if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "len" and arg.args else code(arg)


def _over_models(loop: ast.AST) -> bool:
    """`for i in range(self.num_Ds):`: a loop over a few models, not over data; also, by what it does, a loop
    `for i in range(num_students):` that calls `self.students[i](x)`: a member of a collection, taken by the
    loop's counter, is run as a model (data is indexed, `x[i]`, not called)."""
    count = _range_count(loop)
    if count is None:
        return False
    if _MODEL_COUNT.search(count):
        return True
    assert isinstance(loop, (ast.For, ast.AsyncFor))
    counters = {n.id for n in breadth_first(loop.target) if isinstance(n, ast.Name)}
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript) and isinstance(n.func.slice, ast.Name)
               and n.func.slice.id in counters for stmt in loop.body for n in iter_tree(stmt))


_WINDOW_COUNT = convention("accumulation_window")


def _over_window(loop: ast.AST) -> bool:
    """`for _ in range(args.gradient_accumulation_steps):`: a loop over one window's micro-batches."""
    count = _range_count(loop)
    return count is not None and bool(_WINDOW_COUNT.search(count))


_LOOP_NODES = (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef)


def _within(node: ast.AST, fn: object) -> bool:
    """Whether the loop `node` is in the body of the function `fn` (a definitions.Function or its node)."""
    root = getattr(fn, "node", fn)
    if not isinstance(root, ast.AST):
        return True
    if not isinstance(node, _LOOP_NODES):
        return any(n is node for n in iter_tree(root))
    # asked once per assignment in a training loop: the function's loops are listed once, kept on its node
    loops = root.__dict__.get("_gradlint_loop_ids")
    if loops is None:
        loops = frozenset(id(n) for n in iter_tree(root) if isinstance(n, _LOOP_NODES))
        setattr(root, "_gradlint_loop_ids", loops)  # noqa: B010
    return id(node) in loops


def _parameters(fn: object) -> set[str]:
    """A parameter may be the caller's list (`def log(history, loss): history.append(loss)`)."""
    args = getattr(fn, "args", None)
    if not isinstance(args, ast.arguments):
        return set()
    return {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, [args.vararg, args.kwarg])]}


def _parameter_behind(fn: object, target: str) -> str | None:
    """The parameter of `fn` whose object an attribute or item `target` belongs to: its root name when that is a
    parameter (`data.x`), or a local every binding of which unpacks or names one parameter (`g, labels = data` for
    `g.ndata['feat']`); None for a plain name, `self`, or anything else."""
    base = target.split(".", 1)[0].split("[", 1)[0]
    root = getattr(fn, "node", fn)
    if base == target or base == "self" or not base.isidentifier() or not isinstance(root, ast.AST):
        return None
    params = _parameters(fn)
    if base in params:
        return base
    sources = set()
    for n in iter_tree(root):
        if isinstance(n, ast.Name) and n.id == base and isinstance(n.ctx, ast.Store):
            bound = _binding_value(root, n)
            if not (isinstance(bound, ast.Name) and bound.id in params):
                return None
            sources.add(bound.id)
    return next(iter(sources)) if len(sources) == 1 else None


def _binding_value(root: ast.AST, name: ast.Name) -> ast.expr | None:
    """The value a plain assignment binds to `name`, a target of it or of a tuple it unpacks into (None otherwise)."""
    for a in iter_tree(root):
        if isinstance(a, ast.Assign) and any(name is t or isinstance(t, (ast.Tuple, ast.List)) and
                                             any(name is e for e in iter_tree(t)) for t in a.targets):
            return a.value
    return None


def _fresh_store_through_unknown_name(fn: ast.FunctionDef | ast.AsyncFunctionDef, attr: str, other: str) -> bool:
    """`fn` stores `<name>.<attr>` afresh (a value not made from that attribute) through a name other than `other`
    whose object it does not know: one of its parameters, or the variable of a loop over something."""
    unknown = _parameters(fn) | {n.id for loop in iter_tree(fn) if isinstance(loop, (ast.For, ast.AsyncFor))
                                 for n in iter_tree(loop.target) if isinstance(n, ast.Name)}
    unknown -= {"self", "cls", other}
    for node in iter_tree(fn):
        if not isinstance(node, ast.Assign):
            continue
        for t in node.targets:
            if isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name) \
                    and t.value.id in unknown and not _mentions(node.value, f"{t.value.id}.{attr}"):
                return True
    return False


def _binds(fn: object, name: str) -> bool:
    """The function assigns `name` itself (`losses = []`): a local, made at each call (not a name of the
    code around it that a nested function appends to)."""
    root = getattr(fn, "node", fn)
    if not isinstance(root, ast.AST):
        return False
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in iter_tree(root))


_FRESH = (ast.Call, ast.Dict, ast.List, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)


def _in_fresh_local(fn: object, target: str) -> bool:
    """`target` is an attribute or item of a local of `fn` (not a parameter nor a global) that every statement
    binding it makes anew (`r = Output()`, `stats = {}`): each call has its own object, so what is accumulated in
    it lives as long as the object the call returns, not across the calls of the loop around."""
    base = target.split(".", 1)[0].split("[", 1)[0]
    root = getattr(fn, "node", fn)
    if base == target or base == "self" or not base.isidentifier() or not isinstance(root, ast.AST):
        return False
    if base in _parameters(fn) or _declared_global(fn, base):
        return False
    stores = sum(1 for n in iter_tree(root)
                 if isinstance(n, ast.Name) and n.id == base and isinstance(n.ctx, ast.Store))
    made = [a.value for a in iter_tree(root) if isinstance(a, ast.Assign)
            for t in a.targets if isinstance(t, ast.Name) and t.id == base]
    # every binding a plain `base = <new object>` (not a loop's variable, an unpacked item, `base += ...`)
    return bool(made) and len(made) == stores and all(isinstance(v, _FRESH) and not _calls_on_object(v) for v in made)


def _made_at_each_call(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str,
                       methods: Mapping[str, ast.AST] | None = None) -> bool:
    """`name` is a local of `fn` (not a parameter nor a global) that every binding makes anew: a call's result (or
    a part of one, unpacked), a display, or a constant (`None`); of a method of an object, only one of `fn`'s class
    (`methods`) that returns what it makes (`fresh_returns`)."""
    if name in _parameters(fn) or _declared_global(fn, name):
        return False
    stores = sum(1 for n in iter_tree(fn) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store))
    made = [a.value for a in iter_tree(fn) if isinstance(a, ast.Assign)
            for t in a.targets for n in iter_tree(t) if isinstance(n, ast.Name) and n.id == name]
    return bool(made) and len(made) == stores and all(
        isinstance(v, ast.Constant) or _new_object(v, methods or {}) for v in made)


def _bound_afresh_before(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str, call: ast.Call,
                         methods: Mapping[str, ast.AST]) -> bool:
    """The statement of `fn`'s body that holds `call` comes after a plain `name = <new object>` (a call's result that
    is not an object's method's, `self.m(...)` of a method returning what it makes, a display), with no other binding
    of `name` between: `context = self._initial_context(v)` then `self._update_context(context, ...)`."""
    if name in _parameters(fn) or _declared_global(fn, name):
        return False
    index = next((i for i, stmt in enumerate(fn.body) if any(n is call for n in iter_tree(stmt))), None)
    if index is None:
        return False
    for stmt in reversed(fn.body[:index]):
        if not any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in iter_tree(stmt)):
            continue
        value = stmt.value if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], ast.Name) else None
        return value is not None and _new_object(value, methods)
    return False


def _new_object(value: ast.expr, methods: Mapping[str, ast.AST]) -> bool:
    """A call's result that is not an object's method's, `self.m(...)` of a method of the class returning what it makes
    (`methods`: the class's), a torch factory's tensor (`torch.stack(feats, dim=1)`: a function of a module, not a
    method of an object that may hand back one it keeps), or a display: a new object at each evaluation."""
    return isinstance(value, _FRESH) and (not _calls_on_object(value) or made_in_the_call(value)
                                          or isinstance(value, ast.Call) and returns_made_afresh(value, methods))


def _calls_on_object(value: ast.expr) -> bool:
    """`self.stats.get()`, `cache.setdefault(k, {})`: a method of an object may hand back one it keeps."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and not value.func.attr[:1].isupper()


def _cut(value: ast.expr, detaching: frozenset[str]) -> bool:
    """The value is taken out of its graph by the last calls of its method chain (`h[:, -k:].detach()`,
    `x.detach().clone()`, `t.item()`; `detaching`: the catalogue's methods whose result holds no graph): whatever
    it is made of, it holds no graph."""
    node = value
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in detaching:
            return True
        if node.func.attr not in ("clone", "to", "cpu", "cuda", "float", "contiguous", "requires_grad_"):
            return False
        node = node.func.value
    return False


def _rebound_before(fn: object, name: str, node: ast.AST) -> bool:
    """A parameter bound again by a statement of the function's own body that comes before the one holding `node`
    (`encodings = self.pad(...)`, then `encodings += pe`): on every path to `node` it is a local of this call, not
    the caller's object."""
    root = getattr(fn, "node", fn)
    body = getattr(root, "body", None)
    if not isinstance(body, list):
        return False
    for stmt in body:
        if any(n is node for n in iter_tree(stmt)):
            return False
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            return True
    return False


def _declared_global(fn: object, name: str) -> bool:
    root = getattr(fn, "node", fn)
    if not isinstance(root, ast.AST):
        return False
    declared = root.__dict__.get("_gradlint_globals")  # the function's `global`/`nonlocal` names, kept on its node
    if declared is None:
        declared = frozenset(g for n in iter_tree(root) if isinstance(n, (ast.Global, ast.Nonlocal)) for g in n.names)
        setattr(root, "_gradlint_globals", declared)  # noqa: B010
    return name in declared


def _mentions(expr: ast.AST, name: str) -> bool:
    """`total = total + loss` extends `total` rather than resetting it."""
    from .names import ref_text

    return any(ref_text(n) == name for n in iter_tree(expr) if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript)))


__all__ = ["Flow", "KeepAlive", "KeepAlives"]


_WHOLE_REDUCTIONS = frozenset({"sum"})


def _whole_sources(node: ast.AST) -> frozenset[str] | None:
    """The names `node` is wholly made of, when it is one of them, the builtin `sum` of one, or a
    conditional whose arms are each such: a graph of the result is then a graph they hold. None for
    anything else (`a + b` may take its graph from either side)."""
    if isinstance(node, ast.Name):
        return frozenset({node.id})
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _WHOLE_REDUCTIONS
            and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Name)):
        return frozenset({node.args[0].id})
    if isinstance(node, ast.IfExp):
        body, orelse = _whole_sources(node.body), _whole_sources(node.orelse)
        return body | orelse if body is not None and orelse is not None else None
    return None


def _slots_rewritten(body: list[ast.stmt], ref: Callable[[ast.AST], str | None]) -> set[str]:
    """Buffers the block writes only slot by slot, through an index it starts again from a literal (`start, end, s_id =
    0, bs, 0`, then `while ...: hidden[s_id] = ...; s_id += 1`): each run of the block writes the same slots again, so
    the buffer holds one run's items, not one more with every run (AsquaredM's AWD-LSTM hidden states)."""
    restarted: set[str] = set()
    stores: dict[str, bool] = {}  # buffer -> every write of it in the block is such a slot store
    for stmt in body:
        for node in iter_tree(stmt):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    value = node.value
                    pairs: list[tuple[ast.expr, ast.expr]] = [(t, value)]
                    if isinstance(t, ast.Tuple) and isinstance(value, ast.Tuple) and len(t.elts) == len(value.elts):
                        pairs = list(zip(t.elts, value.elts))
                    for name, bound in pairs:
                        if isinstance(name, ast.Name) and isinstance(bound, ast.Constant) and type(bound.value) is int:
                            restarted.add(name.id)
    for stmt in body:
        for node in iter_tree(stmt):
            written: list[tuple[ast.AST, bool]] = []
            if isinstance(node, ast.Assign):
                written = [(t.value, isinstance(t.slice, ast.Name) and t.slice.id in restarted)
                           for t in unpacked_targets(node.targets) if isinstance(t, ast.Subscript)]
            elif isinstance(node, ast.AugAssign):
                written = [(node.target.value if isinstance(node.target, ast.Subscript) else node.target, False)]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("append", "extend", "insert", "__setitem__"):
                written = [(node.func.value, False)]
            for base, slot in written:
                text = ref(base)
                if text is not None:
                    stores[text] = stores.get(text, True) and slot
    return {name for name, slots in stores.items() if slots}


# a call made on a part this deep (`self.a.b.c.reset()`) or a method name more classes of the file define than this is
# not followed for what it resets (`_method_resets`)
_DEEPEST_RESET = 4
_MOST_CANDIDATES = 4


def _on(receiver: str, name: str) -> str:
    """`self.data` of a method called on `model`: `model.data` where the call is made."""
    return receiver + name[len("self"):]


def _shared(value: Value) -> bool:
    """The constants that stand for every value with nothing known of it (a number, `loss.item()` of a loss
    whose graph was not read, an argument of unknown origin): one object for all of them, so a backward of
    one is no backward of the value some list stored (MTGNN's `metrics = engine.train(...)`, then
    `train_loss.append(metrics[0])`, where `train()` backpropagates a loss it read as one on the next pass)."""
    return value is EMPTY or value is OPAQUE or value is PRESENT

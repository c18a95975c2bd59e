"""A schedule's call: the framework runs a step function it is given on each micro-batch and backpropagates
the loss that function computes (Megatron Core's `forward_backward_func(forward_step_func=f, ...)`, the
`schedule` effect of the API models).

The step function runs as the call `f(data_iterator, model)` would (the arguments the row names; a list of
model chunks written out hands it one chunk); its loss is what it returns, or, for a callback schedule, the
first item of what the `loss_fn` it returns makes of its output (`return output, partial(loss_func, mask)`).
The backward is divided by the schedule when the row says so, and runs the whole window of micro-batches in
the one call.
"""

from __future__ import annotations

import ast

from .apimodels import Effect
from .callsite import CallSite
from .deferred import synthetic_call
from .flow import Flow, Frame
from .parts import EffectsHost
from .syntax import code
from .values import EMPTY, OPAQUE, union_as_tensor


def schedule(interp: EffectsHost, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> None:
    """Run the step function and record the schedule's backward pass. The loss surely reaches the row's `model`
    argument, whether or not the function could be read."""
    found = site.arg(effect.ref("function"))
    node = found[1] if found is not None else None
    loss, text = EMPTY, f"{code(node)}(...)" if node is not None else "loss"
    if node is not None:
        args = [_one_chunk(a[1]) if (a := site.arg(ref)) is not None and a[1] is not None else ast.Constant(None)
                for ref in effect.ref_list("arguments")]
        # a function of this file (or of `self`) runs on the paths; one out of sight is the model's forward pass
        # by the schedule's contract, not a call that may clear or step: only its value is read
        here = interp.callables.given(node, frame) is not None
        made = interp.eval(node, flow, frame) if isinstance(node, ast.Call) else None
        bound = None
        if made is not None and interp.callables.is_bound(made):  # `partial(self.forward_step, vp_stage=i)`
            values = [interp.eval(a, flow, frame) for a in args]
            bound = interp.callables.call_bound(made, values, {}, flow, frame)
        if bound is not None:
            result = bound
        else:
            step_call = synthetic_call(site.call, node, args, [])
            result = interp.calls.eval_call(step_call, flow if here else flow.copy(), frame)
        if effect.value("loss", "returned") == "callback":
            output, callback = result.item("0"), result.item("1")
            computed = None
            if callback is not None and interp.callables.is_bound(callback):
                computed = interp.callables.call_bound(callback, [output or EMPTY], {}, flow, frame)
                text = f"{interp.callables.bound_name(callback) or 'loss_func'}(...)"
            result = computed if computed is not None else EMPTY
        first = result.item("0")
        loss = (first if first is not None else result).as_tensor()
    # the schedule backpropagates through the models it runs, however little of the function the analysis read
    model = site.arg(effect.ref("model"))
    if model is not None:
        loss = union_as_tensor([loss, model[0]])
    if loss is EMPTY:
        loss = OPAQUE
    scaled = effect.value("scales", "none") == "framework"
    counted = site.arg(effect.ref("window"))
    window = code(counted[1]) if counted is not None and counted[1] is not None else None
    interp.recorder.backward(site.call, loss, text, flow, frame, scaled, None, window if scaled else None,
                             False, f"{code(site.call.func)}(...)", windowed=True)
    interp.callables.run_grad_hooks(loss.reach, flow, frame)


def _one_chunk(node: ast.expr) -> ast.expr:
    """What a schedule hands its step function of a list of model chunks written out (`model=[model]`): one
    chunk at a time (the first stands for them)."""
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts and not isinstance(node.elts[0], ast.Starred):
        return node.elts[0]
    return node

"""Word a runtime violation as the static analyzer words the same rule (texts from `messages.py`)."""

from __future__ import annotations

import re

from .. import messages
from .evidence import Site, Violation
from .hook_returns import hook_return
from .report import Finding

RULE_NAMES = {
    "GL001": "missing-zero-grad",
    "GL002": "zero-grad-before-step",
    "GL003": "unscaled-accumulated-loss",
    "GL004": "accumulation-off-by-one",
    "GL005": "cross-model-grad-leak",
    "GL010": "double-loss-scaling",
}


def call_text(site: Site | None, fallback: str) -> str:
    return site.text if site is not None and site.text else fallback


def optimizer_name(site: Site | None, arguments_received: int = 0) -> str:
    """The optimizer's name at its step call: `opt_D` in `opt_D.step()`, `opt` in `scaler.step(opt)`.

    `arguments_received`: positional arguments the optimizer's own `step` got. When the user's call
    has more (`scaler.step(opt)` gives the optimizer none), the optimizer is the call's first argument.
    """
    if site is None or site.method != "step":
        return "optimizer"
    if site.first_arg and arguments_received == 0 and site.receiver and "(" not in site.first_arg:
        return site.first_arg
    return site.receiver or "optimizer"


def loss_text(backward: Site | None) -> str:
    """The loss of a backward call: `loss` in `(loss).backward()`, `losses` in `torch.autograd.backward(losses)`."""
    if backward is None or backward.method != "backward":
        return "the loss"
    loss = backward.receiver
    if loss in ("", "torch.autograd", "autograd") or loss.endswith(".autograd"):
        loss = backward.first_arg or "the loss"
    scaled = re.fullmatch(r"[\w.]+\.scale\((.+)\)", loss)  # `scaler.scale(loss)`: the loss is the argument
    if scaled:
        loss = scaled.group(1)
    if loss.startswith("(") and loss.endswith(")"):
        loss = loss[1:-1]
    return loss


def framework_backward(site: Site | None) -> bool:
    """`accelerator.backward(loss)`, `engine.backward(loss)`: a framework's backward given the loss (it
    may divide the loss by its own accumulation window), not `loss.backward()` or `torch.autograd.backward`.
    Also a backward the user's line does not call at all (`trainer.fit(model, loader)`: Lightning's or
    the Hugging Face Trainer's loop backpropagates the loss a hook returned, divided by its window), but
    not a framework's plain backward called by name (`self.manual_backward(loss)`)."""
    if site is None:
        return False
    if site.method != "backward":
        return bool(site.text) and not site.method.endswith("backward")
    if not site.first_arg:
        return False
    receiver = site.receiver
    return bool(receiver) and receiver not in ("torch.autograd", "autograd") and not receiver.endswith(".autograd")


def to_finding(v: Violation, optimizer: str) -> Finding:
    """The finding for one violation seen at a step of `optimizer` (its name in the user's code)."""
    code = v.code
    backward = v.backward.site if v.backward is not None else None
    b_text, b_line = call_text(backward, "backward()"), backward.line if backward else None
    step_text = call_text(v.site, "step()")
    subsumed_by = refines = ""
    if v.code == "GL001" and v.leftover:
        msg, help_ = messages.skipped_step_leftover(step_text, b_text, b_line, optimizer)
    elif v.code == "GL001":
        closure = "several" if v.closure_again else None
        msg, help_ = messages.missing_zero_grad(step_text, b_text, b_line, optimizer, closure=closure)
    elif v.code == "GL005":
        own = call_text(v.own_backward.site, "") or None if v.own_backward is not None else None
        other = v.other_step
        msg, help_ = messages.cross_model_grad_leak(
            step_text, b_text, b_line, v.param_owner or "these parameters",
            call_text(other, "") or None, other.line if other else None, optimizer, own,
        )
    elif v.code == "GL002" and (not v.site.text or v.site == v.other_step):  # a clear not found in the source
        step = v.other_step
        msg, help_ = messages.zero_grad_before_step_unseen_clear(b_text, b_line, call_text(step, "step()"), step.line if step else None)
        # the same misplaced clear, at a step where the guard could not tell which call cleared
        # (two clears between the backward and the step): one line with the precise sighting
        subsumed_by = _backward_key(backward)
    elif v.code == "GL002":
        step = v.other_step
        refines = _backward_key(backward)
        msg, help_ = messages.zero_grad_before_step(
            call_text(v.site, f"{optimizer}.zero_grad()"), b_text, b_line, call_text(step, "step()"), step.line if step else None,
            earlier=v.refilled,
        )
    elif v.code == "GL003":
        step = v.other_step
        loss = loss_text(backward)
        if v.scaled_twice and framework_backward(backward):
            # divided by hand, and again by the framework's backward: GL010, as the static side says
            code = "GL010"
            if backward is not None and backward.method != "backward":  # the framework's loop ran the backward
                msg, help_ = messages.framework_loop_divided_twice(b_text, str(v.window[0]) if v.window else "N")
            else:
                msg, help_ = messages.double_loss_scaling(b_text, backward.first_arg if backward else loss,
                                                          str(v.window[0]) if v.window else "N", None)
        elif v.scaled_twice:
            msg, help_ = messages.loss_scaled_twice(b_text, loss, str(v.window[0]) if v.window else "N",
                                                    call_text(step, "step()"), step.line if step else None)
        else:
            msg, help_ = messages.unscaled_accumulated_loss(b_text, loss, call_text(step, "step()"), step.line if step else None, None)
    else:  # GL004
        first, n = v.window or (0, 0)
        msg, help_ = messages.accumulation_first_window(step_text, first, n)
    anchor = v.site
    if code in ("GL003", "GL010") and backward is not None and backward.text and backward.method != "backward":
        # the framework's loop ran the backward after the user's hook returned the loss: at the hook's `return`
        anchor = hook_return() or anchor
    return Finding(code=code, name=RULE_NAMES[code], path=anchor.path, line=max(anchor.line, 1), col=max(anchor.col, 1),
                   message=msg, help=help_, first_step=max(v.step_index, 1), optimizer=optimizer,
                   subsumed_by=subsumed_by, refines=refines)


def _backward_key(backward: Site | None) -> str:
    return f"{backward.path}:{backward.line}:{backward.col}" if backward is not None else ""

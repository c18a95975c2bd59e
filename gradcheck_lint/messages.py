"""The wording of every diagnostic, shared by the static analyzer and the runtime guard.

Both halves describe a violation of the same contract; they pass the names and lines they know
and get back the same sentences.
"""

from __future__ import annotations

import ast
import re


def _at(line: int | None) -> str:
    where = getattr(line, "where", None)  # a line of another file of the project (`analysis.model.FileLine`)
    if where:
        return f" at {where}"
    return f" at line {line}" if line else ""


def _via(call: tuple[str, int | None] | None) -> str:
    """For a call in a helper: the call, in the loop elsewhere, that runs it once per micro-batch."""
    return f" (run by `{call[0]}`{_at(call[1])})" if call else ""


def missing_zero_grad(step: str, backward: str, backward_line: int | None, opt: str, wrong_clear: str | None = None,
                      wrong_clear_line: int | None = None, owned: str | None = None, decayed: bool = False,
                      may: bool = False, applied_by: str | None = None, applied_by_line: int | None = None,
                      closure: str | None = None, partial_clear: str | None = None,
                      partial_clear_line: int | None = None, uncleared: str | None = None,
                      clear_call: str | None = None) -> tuple[str, str]:
    """`partial_clear`: a clear that covers only some of the optimizer's parameters, leaving `uncleared`.
    `clear_call`: the call that clears them, when not `{opt}.zero_grad()` (Megatron's `model.zero_grad_buffer()`).
    `applied_by`: another optimizer's step that applied these gradients first (it updates some of the
    same parameters), when this optimizer's own step had not. `closure`: the step calls its closure again
    after an inner update ("several": its class does, L-BFGS; "unknown": its class is not known)."""
    if closure and not applied_by and not decayed and not wrong_clear:
        if closure == "several":
            msg = (f"`{step}` evaluates its closure again after each inner update, and nothing clears "
                   f"`{opt}`'s gradients inside the closure before `{backward}`{_at(backward_line)}: each "
                   f"evaluation adds its gradients to those of the one before, so the step's search uses their "
                   f"running sum.")
        else:
            msg = (f"`{step}` may evaluate its closure more than once (the optimizer's class is not known "
                   f"here; L-BFGS does), and nothing clears `{opt}`'s gradients inside the closure before "
                   f"`{backward}`{_at(backward_line)}: each evaluation would add its gradients to those of the "
                   f"one before.")
        return msg, f"call `{opt}.zero_grad()` inside the closure, before `{backward}`."
    if applied_by and not decayed:
        msg = (f"`{step}` applies gradients that `{backward}`{_at(backward_line)} already contributed to "
               f"`{applied_by}`{_at(applied_by_line)}, which updates some of the same parameters: nothing clears them "
               f"between that step and this one, so they are applied twice.")
        help_ = (f"give each parameter to one optimizer, or call `{opt}.zero_grad()` after `{applied_by}`, before the "
                 f"backward pass `{step}` should apply.")
        return msg, help_
    if decayed:
        msg = (f"`{step}` applies gradients that `{backward}`{_at(backward_line)} already contributed to an earlier step: "
               f"`{opt}`'s gradients are decayed in place after each step, not cleared, so a share of every earlier "
               f"step's gradients is applied again. If that is deliberate (a momentum-like trick), suppress this line.")
    elif wrong_clear:
        msg = (f"`{step}` applies gradients that `{backward}`{_at(backward_line)} already contributed to an earlier step: "
               f"`{wrong_clear}`{_at(wrong_clear_line)} clears other parameters, and nothing clears the gradients of "
               f"{owned or f'`{opt}`'}.")
    elif partial_clear and not may:
        msg = (f"`{step}` applies gradients that `{backward}`{_at(backward_line)} already contributed to an earlier step: "
               f"`{partial_clear}`{_at(partial_clear_line)} clears only some of `{opt}`'s parameters, and nothing clears "
               f"the gradients of {uncleared}, so they keep accumulating across iterations.")
    elif may:
        msg = (f"`{step}` may apply gradients that `{backward}`{_at(backward_line)} already contributed to an earlier step: "
               f"nothing here clears `{opt}`'s gradients, so each call of this function adds to what the last call left, "
               f"unless its caller clears them.")
    else:
        msg = (f"`{step}` applies gradients that `{backward}`{_at(backward_line)} already contributed to an earlier step: "
               f"nothing clears `{opt}`'s gradients between its steps, so `.grad` keeps accumulating across iterations.")
    if clear_call:
        msg += (f" (`{opt}.zero_grad()`, and `zero_grad()` of its models, clear nothing its step reads: "
                f"`{clear_call}` does.)")
    help_ = f"call `{clear_call or f'{opt}.zero_grad()'}` once per step: before `{backward}` or right after `{step}`."
    return msg, help_


def zero_grad_before_step(clear: str, backward: str, backward_line: int | None, step: str, step_line: int | None,
                          accumulation: str | None = None, outer_loop_line: int | None = None,
                          earlier: bool = False) -> tuple[str, str]:
    """`outer_loop_line`: the clear runs in each iteration of this loop around the backward's own loop (a chunk
    of micro-batches), the step after it. `earlier`: the gradients discarded are of earlier micro-batches, and the
    backward ran again before the step (a clear at the top of the micro-batch that steps, as the runtime saw it)."""
    if outer_loop_line is not None:
        msg = (f"`{clear}` discards the gradients of `{backward}`{_at(backward_line)} from the earlier "
               f"iterations of the loop{_at(outer_loop_line)}, which `{step}`{_at(step_line)} follows: only "
               f"the micro-batches of its last iteration reach the step.")
        help_ = f"clear once per step: move `{clear}` right after `{step}` (or before the loop{_at(outer_loop_line)})."
    elif accumulation:
        msg = (f"`{clear}` discards the gradients of `{backward}`{_at(backward_line)} on micro-batches where "
               f"`{step}`{_at(step_line)} does not run (`{accumulation}`): {WINDOW_NOT_STEPPED}.")
        help_ = f"clear only after the step: move `{clear}` under the same condition, right after `{step}`."
    elif earlier:
        msg = (f"`{clear}` discards the gradients of `{backward}`{_at(backward_line)} from the earlier "
               f"micro-batches of the window, before `{step}`{_at(step_line)} applied them: only the last micro-batch reaches the step.")
        help_ = f"clear only after the step: move `{clear}` right after `{step}`."
    else:
        msg = (f"`{clear}` clears the gradients that `{backward}`{_at(backward_line)} just computed, before "
               f"`{step}`{_at(step_line)} can apply them: the step sees no gradient.")
        help_ = f"move `{clear}` after `{step}` (or before `{backward}`)."
    return msg, help_


def operand(text: str) -> str:
    """`text` as an operand of `/`: a name, attribute, call, subscript or number stays as it is."""
    stripped = text.strip()
    if re.fullmatch(r"[\w.]+(\(.*\)|\[.*\])?", stripped) and stripped.count("(") == stripped.count(")"):
        return stripped
    return f"({stripped})"


def unscaled_accumulated_loss(backward: str, loss: str, step: str, step_line: int | None, window: str | None,
                              counter_divisor: str | None = None, micro_divisor: str | None = None) -> tuple[str, str]:
    n = f"`{window}`" if window else "the number of micro-batches"
    # one call that both backpropagates and steps (a framework's `trainer.train()`): "into each of its steps"
    into = "each of its optimizer steps" if step == backward else f"one `{step}`{_at(step_line)}"
    if micro_divisor:
        msg = (f"`{backward}` accumulates several micro-batches into {into}, but `{loss}` is divided "
               f"only by `{micro_divisor}`, counted over its own micro-batch: each loss is its micro-batch's mean, and the step "
               f"applies the sum of those means, {n} times the mean.")
        help_ = (f"divide by a count over the whole window (all its micro-batches) instead of `{micro_divisor}`, "
                 f"or also by {n}: `({operand(loss)} / {operand(window or 'N')}).backward()`.")
        return msg, help_
    if counter_divisor:
        msg = (f"`{backward}` accumulates several micro-batches into {into}, but `{loss}` is divided "
               f"by the running counter `{counter_divisor}`, not by {n}: micro-batch k is weighted 1/k, so the first ones dominate the step.")
    else:
        msg = (f"`{backward}` accumulates several micro-batches into {into}, but `{loss}` is not "
               f"divided by {n}: the step applies the sum of the micro-batch gradients, {n} times the mean.")
    help_ = f"scale the loss before backward: `({operand(loss)} / {operand(window or 'N')}).backward()`."
    return msg, help_


def unweighted_sample_window(backward: str, loss: str, step: str, step_line: int | None, window: str | None,
                             counter: str, unit: str) -> tuple[str, str]:
    total = f"`{window}`" if window else "the window's size"
    msg = (f"`{backward}` accumulates micro-batches into one `{step}`{_at(step_line)} until `{counter}` (counted by "
           f"`{unit}` per micro-batch) reaches {total}, but `{loss}` is not weighted by its micro-batch's share "
           f"of them: "
           f"the step applies the sum of the micro-batch gradients, as many times the mean as there were "
           f"micro-batches.")
    help_ = (f"weight each micro-batch's loss by its share of the window before backward: "
             f"`({operand(loss)} * {operand(unit)} / {operand(window or 'N')}).backward()`.")
    return msg, help_


def loss_hook_not_normalised(method: str, loss: str, normaliser: str, flags: tuple[str, ...]) -> tuple[str, str]:
    msg = (f"`{method}` returns `{loss}` and ignores `{normaliser}`: when the Trainer passes `{normaliser}` "
           f"(transformers 4.46 and later, for a model that accepts loss kwargs and a batch with `labels`) it takes the returned loss as "
           f"normalised over the whole accumulation window and does not divide it by the number of micro-batches, "
           f"so each window's gradient is the sum of their means: gradient_accumulation_steps times too large.")
    switch = f"; or set `{flags[0]} = False` on the class so that the Trainer divides it" if flags else ""
    help_ = (f"divide the summed per-token loss by `{normaliser}`, or divide `{loss}` by "
             f"`self.args.gradient_accumulation_steps` when training{switch}.")
    return msg, help_


def loss_scaled_twice(backward: str, loss: str, divisor: str, step: str, step_line: int | None) -> tuple[str, str]:
    msg = (f"The loss of `{backward}` (or one of its terms) is divided by `{divisor}` twice before `{step}`"
           f"{_at(step_line)} applies the accumulated micro-batches: the step applies the mean of their gradients (of "
           f"that term's) divided by `{divisor}` once more.")
    help_ = (f"divide the loss (each of its terms) by `{divisor}` once: either where it is computed or at the backward "
             f"call, not both.")
    return msg, help_


def loss_multiplied_by_window(backward: str, loss: str, factor: str, step: str,
                              step_line: int | None) -> tuple[str, str]:
    msg = (f"The loss of `{backward}` (or one of its terms) is multiplied by `{factor}`, the number of micro-batches "
           f"`{step}`{_at(step_line)} accumulates, where it should be divided by it: the step applies that "
           f"part's gradient `{factor}` squared times its mean.")
    help_ = f"divide that part of `{loss}` by `{factor}` instead of multiplying it."
    return msg, help_


def accumulation_off_by_one(test: str, counter: str, source: str, step: str, start: int = 0,
                            fires_first: bool = True, longer: bool = False, most: bool = False,
                            most_when: bool = False) -> tuple[str, str]:
    if most:
        msg = (f"`{step}` runs when `{test}` is {'true' if most_when else 'false'}, that is on N - 1 of every N micro-batches (`{counter}` from "
               f"`{source}`): it steps on almost every micro-batch instead of once per window of N.")
        help_ = f"step when the window ends, not on the other micro-batches: `if ({counter} + 1) % N == 0:` with `{counter}` from 0."
        return msg, help_
    if fires_first:
        msg = (f"`if {test}:` lets `{step}` run on the first micro-batch (`{counter}` is {start} there, from `{source}`): "
               f"the step applies that one micro-batch alone, and every later window is shifted by one micro-batch.")
    elif longer:
        msg = (f"`if {test}:` first holds after more than N micro-batches (`{counter}` is {start} on the first "
               f"micro-batch, from `{source}`): the first `{step}` applies a window longer than N.")
    else:
        msg = (f"`if {test}:` first holds before N micro-batches have accumulated (`{counter}` is {start} on the first "
               f"micro-batch, from `{source}`): the first `{step}` applies a short window.")
    if start == 0:
        fixed = test.replace(f"{counter} %", f"({counter} + 1) %", 1) if f"{counter} %" in test else f"({counter} + 1) % N == 0"
        help_ = f"count micro-batches from one: `if {fixed}:` (or `enumerate(..., start=1)`)."
    else:
        help_ = (f"test the number of micro-batches seen: with `{counter}` equal to {start} on the first micro-batch, "
                 f"step when `{counter} % N == {start - 1 if start >= 1 else 0}`" + (" (`(i + 1) % N == 0` counts from 0, `i % N == 0` from 1)." if start == 1 else "."))
    return msg, help_


def reset_window_off(gate: str, counter: str, window: str, start: int | str, first: str, later: str,
                     step: str) -> tuple[str, str]:
    """A gate on a counter the loop resets or counts down whose windows are not N micro-batches (`first`,
    `later`: the sizes of the first window and of the later ones, as source text)."""
    if later != window:
        what = f"every window holds `{later}` micro-batches instead of `{window}`"
        if first != later:
            what += f" (the first one `{first}`)"
    else:
        shown = start if isinstance(start, int) else f"`{start}`"
        what = (f"the first window holds `{first}` micro-batch{'' if first == '1' else 'es'} instead of `{window}` "
                f"(`{counter}` is {shown} before the loop), and every later window is shifted")
    msg = (f"`{gate}` lets `{step}` run where {what}: the steps apply windows of another size than the "
           f"`{window}` micro-batches the counter `{counter}` is meant to count.")
    help_ = (f"step when `{window}` micro-batches have run since the last step: test `{counter}` after it counts "
             f"this micro-batch, and start it where the first window then holds `{window}`.")
    return msg, help_


def cross_model_grad_leak(step: str, backward: str, backward_line: int | None, model: str, other_step: str | None,
                          other_step_line: int | None, opt: str, own_backward: str | None,
                          own_first: bool = False) -> tuple[str, str]:
    by = f" for `{other_step}`{_at(other_step_line)}" if other_step else ""
    if own_first and own_backward:
        # `d_loss.backward()` came first: a clear before it would not help, the leak comes after
        msg = (f"`{step}` applies gradients that `{backward}`{_at(backward_line)} wrote into `{model}`{by}, on top of "
               f"those of its own `{own_backward}`; step `{opt}` before `{backward}` or freeze `{model}` while "
               f"training the other model.")
        help_ = (f"move `{step}` (and `{opt}.zero_grad()`) before `{backward}`, or wrap the other update in "
                 f"`{model}.requires_grad_(False)` ... `requires_grad_(True)`, or feed `.detach()`ed inputs.")
        return msg, help_
    before = f" before `{own_backward}`" if own_backward else ""
    msg = (f"`{step}` applies gradients that `{backward}`{_at(backward_line)} wrote into `{model}`{by}; "
           f"clear them with `{opt}.zero_grad()`{before} or freeze `{model}` while training the other model.")
    help_ = (f"call `{opt}.zero_grad()`{before}, or wrap the other update in `{model}.requires_grad_(False)` ... "
             f"`requires_grad_(True)`, or feed `.detach()`ed inputs.")
    return msg, help_


def backward_issued_for_other_model(step: str, backward: str, backward_line: int | None, model: str, clear: str,
                                    clear_line: int | None, own: str, own_line: int | None, opt: str,
                                    discarded: bool = True) -> tuple[str, str]:
    if discarded:
        msg = (f"`{step}` applies gradients that `{backward}`{_at(backward_line)} wrote into `{model}`, a "
               f"pass made for another model: `{clear}`{_at(clear_line)} cleared that model for it, discarding "
               f"what `{own}`{_at(own_line)} had written there, so `{step}` trains `{model}` on the other "
               f"model's objective as well as its own.")
    else:
        msg = (f"`{step}` applies gradients that `{backward}`{_at(backward_line)} wrote into `{model}`, a "
               f"pass made for another model (`{clear}`{_at(clear_line)} cleared that model right before it), "
               f"on top of those of `{own}`{_at(own_line)}: `{step}` trains `{model}` on the other model's "
               f"objective as well as its own.")
    help_ = (f"step `{opt}` before `{backward}`, or feed the other model `.detach()`ed inputs for that loss (or freeze "
             f"`{model}` during it).")
    return msg, help_


def accumulation_first_window(step: str, first: int, n: int) -> tuple[str, str]:
    if first == 1:
        why = "the step condition is true on the first micro-batch of a zero-based counter, so every window is shifted by one."
    elif first < n:
        why = "the step condition holds before N micro-batches have accumulated, so the first window is short."
    else:
        why = "the step condition skips a window boundary, so this step applies more micro-batches than N."
    msg = f"`{step}` ran after {first} micro-batch{'es' if first != 1 else ''}, but the accumulation window is {n}: {why}"
    help_ = "step when N micro-batches have been seen: `if (i + 1) % N == 0:` with `i` from 0, `if i % N == 0:` with `i` from 1."
    return msg, help_


def clear_gate_never_true(step: str, clear: str, clear_line: int | None, gate: str, window: str, opt: str) -> tuple[str, str]:
    msg = (f"`{step}` applies gradients that earlier steps already applied whenever `{window}` is 1: "
           f"`{clear}`{_at(clear_line)} runs only when `{gate}`, which is never true for `{window}` = 1, so "
           f"nothing clears `{opt}`'s gradients between its steps.")
    help_ = f"clear whatever the window is: call `{opt}.zero_grad()` right after `{step}`, under the same condition."
    return msg, help_


def skipped_step_leftover(step: str, backward: str, backward_line: int | None, opt: str) -> tuple[str, str]:
    msg = (f"`{step}` applies gradients that `{backward}`{_at(backward_line)} wrote in an earlier iteration that skipped "
           f"the step: nothing clears `{opt}`'s gradients on that path, so they are added to this step's.")
    help_ = f"clear on every path: call `{opt}.zero_grad()` before `{backward}` (or before skipping the step)."
    return msg, help_


def backward_after_step(backward: str, model: str, forward: str | None, forward_line: int | None, step: str,
                        step_line: int | None, saved: bool = True, freed_loop: int | None = None) -> tuple[str, str]:
    """`model` may be "" when unknown (the runtime guard without model names): the step's parameters then.
    `saved`: an op of the graph is known to have saved those parameters for backward (a linear or
    convolution layer's weight); when not known, PyTorch raises only if one did. `freed_loop`: the line of the
    loop whose every iteration backpropagates through the graph, built once before it: the first pass freed it."""
    through = f"the graph of `{forward}`{_at(forward_line)}" if forward else f"a forward pass of `{model}`" if model else "a graph"
    changed = f"`{model}`'s parameters" if model else "the parameters it updates"
    error = ("\"one of the variables needed for gradient computation has been modified by an inplace operation\" "
             "(before 1.5 it silently used the updated weights)")
    raises = (f"PyTorch raises {error}" if saved else
              f"if an op of that forward pass saved them for backward (a linear or convolution layer does; `exp` of "
              f"them saves only its result), PyTorch raises {error}, else the gradient is computed from the old graph")
    if freed_loop is not None:
        msg = (f"`{backward}` backpropagates, on every iteration of the loop{_at(freed_loop)}, through {through}, "
               f"built once before the loop: the first backward freed what that graph saved, so the second raises "
               f"\"Trying to backward through the graph a second time\" (and `{step}`{_at(step_line)} has changed "
               f"{changed} in place since it was built).")
        again = f" (recompute `{forward or model + '(...)'}`)" if forward or model else ""
        return msg, f"run the forward pass again in each iteration, after `{step}`{again}."
    msg = (f"`{backward}` backpropagates through {through}, built before `{step}`{_at(step_line)} changed "
           f"{changed} in place: {raises}.")
    again = f" (recompute `{forward or model + '(...)'}`)" if forward or model else ""
    help_ = (f"run the forward pass again after `{step}`{again}, or call `{step}` "
             f"only after `{backward}`.")
    return msg, help_


def _operand(text: str) -> str:
    """`text` as the receiver of a method call: parenthesised unless it is a name, attribute, item or call."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return f"({text})"
    return text if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)) else f"({text})"


def loss_graph_kept_alive(statement: str, target: str, stored: str, loop_line: int | None, via_item: str = "",
                          calls_of: str = "", framework: bool = False, backward_later: str = "",
                          sequence: bool = False, freed_by: tuple[str, int] | None = None) -> tuple[str, str]:
    """`via_item`: `stored` is a dict or object that holds the graph in this item (`output["loss"]`). `sequence`:
    `stored` is a list or tuple written in place.
    `calls_of`: the loop is the calls of this function, once per batch (by the framework's loop: `framework`).
    `backward_later`: the backward call that runs on the stored value after it was stored (`losses[-1].backward()`).
    `freed_by`: the backward call (and its line) that runs through the stored graph in the same iteration without
    retaining it: it freed the activations the graph saved, so what stays is its nodes."""
    holder = f"`{stored}`" if not via_item else f"`{via_item}` in `{stored}`"
    each = "batch" if calls_of else "iteration"
    if freed_by is not None:
        kept = (f"every {each}'s graph stays in memory (its nodes; `{freed_by[0]}` at line "
                f"{freed_by[1]} freed the activations they saved) until `{target}` is dropped, so memory grows a "
                f"little with every {each}.")
    else:
        kept = (f"every {each}'s graph stays in memory (its nodes, and the activations they saved where no backward "
                f"pass freed them) until `{target}` is dropped, so memory grows with every {each}.")
    if calls_of:
        by = "the framework's calls" if framework else "the calls"
        msg = (f"`{statement}` keeps the autograd graph of {holder} alive in `{target}`, which outlives {by} of "
               f"`{calls_of}`, one per batch: {kept}")
    else:
        msg = (f"`{statement}` keeps the autograd graph of {holder} alive in `{target}`, which outlives the "
               f"iterations of the loop{_at(loop_line)}: {kept}")
    if backward_later:
        help_ = (f"backpropagate `{stored}` before storing it, then store its `.item()` (or `.detach()`): "
                 f"`{backward_later}` needs the graph only until it has run.")
    elif via_item:
        help_ = f"store the value, not the graph: replace `{via_item}` by `{via_item}.detach()` (or `.item()`) before storing `{stored}`."
    elif sequence:
        # a list or tuple written in place (`[results["loss"], batch["pid"]]`): a list has no `.item()`
        help_ = f"store values, not graphs: call `.item()` (or `.detach()`) on each element of `{stored}` that holds a tensor."
    else:
        value = _operand(stored)
        help_ = (f"store the value, not the graph: `{value}.item()` for a number, "
                 f"or `{value}.detach()` to keep a tensor.")
    return msg, help_


def loss_graph_kept_alive_at_run(backward: str, graphs: int) -> tuple[str, str]:
    msg = (f"The autograd graphs of {graphs} passes of `{backward}` are still alive two optimizer steps after their backward: "
           f"something that outlives the loop (a running total `total += loss`, a list of losses) keeps every iteration's "
           f"graph and the activations it saved in memory, and memory grows until it runs out.")
    help_ = "store the value, not the graph: `loss.item()` for a number, or `loss.detach()` to keep a tensor."
    return msg, help_


def double_loss_scaling(backward: str, loss: str, divisor: str, framework_window: str | None) -> tuple[str, str]:
    by = f" (configured with `{framework_window}`)" if framework_window else ""
    msg = (f"`{backward}` divides `{loss}` by the accumulation window, and `{loss}` is already divided by `{divisor}`: "
           f"the framework{by} {DIVIDED_BY_THE_WINDOW}, so each micro-batch counts 1/N² and every step is N times too small.")
    help_ = f"drop the manual `/ {divisor}`: the framework's backward scales the loss for its accumulation window."
    return msg, help_


def framework_loop_divided_twice(call: str, divisor: str) -> tuple[str, str]:
    msg = (f"`{call}` backpropagates a loss already divided by `{divisor}`, and the framework's loop divides it by its "
           f"accumulation window again: each micro-batch counts 1/N² and every step is N times too small.")
    help_ = f"drop the manual `/ {divisor}` from the loss your hook returns: the framework scales it for its accumulation window."
    return msg, help_


def clear_in_automatic_hook(call: str, method: str) -> tuple[str, str]:
    msg = (f"`{call}` in `{method}` runs on every micro-batch, but under automatic optimization the framework steps and "
           f"clears only at the end of each accumulation window: with a window of more than one micro-batch it discards "
           f"the gradients of the window's earlier micro-batches, and the step applies the last one alone.")
    help_ = f"remove `{call}`: the framework clears the gradients itself after each step."
    return msg, help_


def hook_loss_divided_twice(method: str, loss: str, divisor: str, setting: str) -> tuple[str, str]:
    msg = (f"`{method}` returns `{loss}` divided by `{divisor}`, and the framework divides the loss its automatic "
           f"optimization backpropagates by `{setting}` itself: with accumulation each micro-batch counts 1/N², and "
           f"without it every step is `{divisor}` times too small.")
    help_ = f"drop the `/ {divisor}`: set `{setting}` on the Trainer and return the micro-batch's loss as it is."
    return msg, help_


def divided_not_accumulated(backward: str, loss: str, divisor: str, step: str, step_line: int | None) -> tuple[str, str]:
    msg = (f"`{loss}` is divided by `{divisor}` for accumulation, but `{step}`{_at(step_line)} runs after every "
           f"`{backward}`: nothing accumulates, so every step is `{divisor}` times too small (the learning rate is silently divided).")
    help_ = f"either step once every `{divisor}` micro-batches (`if (i + 1) % {divisor} == 0:`) or drop the `/ {divisor}`."
    return msg, help_


def framework_divided_not_accumulated(backward: str, window: str, step: str, step_line: int | None, assumed: bool = False) -> tuple[str, str]:
    divides = (f"most likely divides the loss by `{window}` (its framework object is built out of sight, and this file reads "
               f"that window setting)" if assumed else f"divides the loss by the framework's accumulation window (`{window}`)")
    msg = (f"`{backward}` {divides}, but `{step}`{_at(step_line)} "
           f"runs after every micro-batch, outside the framework's accumulation context: nothing accumulates, so every step "
           f"is `{window}` times too small (the learning rate is silently divided).")
    help_ = ("run the forward, the backward and the step inside `with accelerator.accumulate(model):`, which steps once per "
             "window, or build the accelerator without a window.")
    return msg, help_


# what a GL007 message says of a clip or `unscale_` run on the micro-batches of a window that do not step: a finding
# about a window of more than one micro-batch (`project.unset_defaults` reads it so)
EVERY_MICRO_BATCH = "runs on every micro-batch, also on those that do not step"
WINDOW_NOT_STEPPED = "only the last micro-batch of each window reaches the step"
DIVIDED_BY_THE_WINDOW = "divides by the window itself"


def about_a_window(code: str, message: str) -> bool:
    """Whether a finding of `code` saying `message` is about an accumulation window of more than one micro-batch: every
    GL003, GL004 and GL006; a GL007 of a clip or `unscale_` on the micro-batches that do not step; a GL002 of a clear
    on the micro-batches where the window's step does not run; a GL010 of a loss divided again by a framework's window
    (with a window of one, the framework divides by nothing)."""
    return code in ("GL003", "GL004", "GL006") or code == "GL007" and EVERY_MICRO_BATCH in message \
        or code == "GL002" and WINDOW_NOT_STEPPED in message or code == "GL010" and DIVIDED_BY_THE_WINDOW in message


# what a GL007 says when it holds only where a GradScaler scales (`project.off_switches` reads it so): gradients still
# scaled (clipped, their norm read, changed, stepped past the scaler), or unscaled twice (an off scaler's `unscale_`
# returns at once); not a clip of part of a window, which is one whatever the scale
STILL_SCALED = "still multiplied by the GradScaler's scale"
SCALER_STEPS_SCALED = "gradients a GradScaler steps on are still multiplied by its scale"
UNSCALED_TWICE = "a second time before `scaler.update()`"


def needs_a_scaler_on(code: str, message: str) -> bool:
    """Whether a finding of `code` saying `message` holds only on runs where a GradScaler is on."""
    return code == "GL007" and any(p in message for p in (STILL_SCALED, SCALER_STEPS_SCALED, UNSCALED_TWICE))


def amp_scaled_gradients(kind: str, call: str, opt: str, other: str | None, other_line: int | None,
                         scaled: bool = False, framework: str | None = None, unscale_with: str = "",
                         window: str | None = None) -> tuple[str, str]:
    """`window`: for `unscale_twice`, the accumulation gate of the step that the `unscale_` is outside of."""
    by = f" by `{other}`{_at(other_line)}" if other else ""  # the scaled backward that wrote the gradients
    if framework is not None and kind in ("clip_before_unscale", "norm_before_unscale", "modify_before_unscale"):
        # the framework's own backward scaled them (`accelerator.backward` with fp16 mixed precision)
        return _framework_scaled_gradients(kind, call, opt, by, framework, unscale_with)
    if kind == "clip_before_unscale":
        msg = (f"`{call}` clips gradients of `{opt}` that are {STILL_SCALED} (written{by}): the "
               f"threshold applies to gradients tens of thousands of times too large, so the clip either does nothing useful or "
               f"cuts every step.")
        help_ = f"call `scaler.unscale_({opt})` right before `{call}` (once per step, where the step runs)."
    elif kind == "norm_before_unscale":
        msg = (f"`{call}` reads the norm of `{opt}`'s gradients while they are {STILL_SCALED} "
               f"(written{by}): the norm is the scale (65536 at first, changing as the scaler adapts) times too large, so "
               f"whatever logs or compares it is wrong.")
        help_ = f"read the norm after `scaler.unscale_({opt})` (once per step, where the step runs), or divide it by `scaler.get_scale()`."
    elif kind == "modify_before_unscale":
        msg = (f"`{call}` changes `{opt}`'s gradients while they are {STILL_SCALED} (written{by}): "
               f"what it adds or clamps is applied at the scale, and unscaling then divides it by tens of thousands, so the "
               f"noise or the bound is lost (a factor, `mul_`, would commute with the unscaling; this does not).")
        help_ = f"call `scaler.unscale_({opt})` before changing the gradients (once per step, where the step runs)."
    elif kind == "clip_before_scaler_step":
        msg = (f"`{call}` clips gradients of `{opt}` that `{other}`{_at(other_line)} then unscales: {SCALER_STEPS_SCALED} "
               f"until `unscale_`, so the threshold applies to gradients tens of "
               f"thousands of times too large, and the clip either does nothing useful or cuts every step.")
        scaler = other.split(".step(", 1)[0] if other and ".step(" in other else "scaler"
        help_ = f"call `{scaler}.unscale_({opt})` right before `{call}`, under the same condition as `{other or 'scaler.step'}`."
    elif kind == "unscale_twice" and window is not None:
        first = f" (`{other}`{_at(other_line)} already unscaled them)" if other else ""
        msg = (f"`{call}` unscales `{opt}`'s gradients {UNSCALED_TWICE}{first}: it {EVERY_MICRO_BATCH} "
               f"(`{window}`), while only `scaler.update()` resets the scaler's record of the last `unscale_`, "
               f"and PyTorch raises \"unscale_() has already been called on this optimizer since the last update()\".")
        help_ = (f"call `{call}` only on the micro-batch that steps: under `{window}`, right before clipping and "
                 f"`scaler.step({opt})`.")
    elif kind == "unscale_twice":
        first = f" (`{other}`{_at(other_line)} already unscaled them)" if other else ""
        msg = (f"`{call}` unscales `{opt}`'s gradients {UNSCALED_TWICE}{first}: "
               f"`unscale_` runs again before the scaler's record of the last one is reset (on every "
               f"micro-batch of a window, or after a step that was skipped), and PyTorch raises "
               f"\"unscale_() has already been called on this optimizer since the last update()\".")
        help_ = (f"call `{call}` only on the micro-batch that steps, right before clipping and "
                 f"`scaler.step({opt})`, and `scaler.update()` after every `unscale_`, also where the step is skipped.")
    elif kind == "before_backward":
        msg = (f"`{call}` runs before `{other}`{_at(other_line)}, which then adds the gradients `{opt}`'s step "
               f"applies: the clip sees only what earlier backward passes left (nothing, after a clear), so the step "
               f"applies gradients no clip has bounded.")
        unscale = f" and `scaler.unscale_({opt})`" if scaled else ""
        help_ = f"move `{call}` after `{other}`{unscale}, right before the step (under its condition, if it has one)."
    elif kind == "partial":
        then = f"`{other}`{_at(other_line)}" if other else "a later backward"
        msg = (f"`{call}` {EVERY_MICRO_BATCH}: {then} then adds more gradients to "
               f"`{opt}`'s, so it acted on a partial sum of the window"
               + (" (and scaled and unscaled gradients mix: the GradScaler's backward adds scaled ones to those it "
                  "unscaled)." if scaled else "."))
        help_ = f"move `{call}` under the condition of the step, right before it."
    else:  # bypass
        by = f" (written by `{other}`{_at(other_line)})" if other else ""
        msg = (f"`{call}` applies `{opt}`'s gradients while they are {STILL_SCALED}{by}: the step "
               f"bypasses `scaler.step`, so nothing unscales them or skips the steps whose gradients overflowed.")
        help_ = f"step through the scaler: `scaler.step({opt})` then `scaler.update()`."
    return msg, help_


def _framework_scaled_gradients(kind: str, call: str, opt: str, by: str, framework: str,
                                unscale_with: str) -> tuple[str, str]:
    scale = (f"still multiplied by the loss scale of `{framework}`'s mixed precision (written{by}, which scales the "
             f"loss with a GradScaler of its own; the optimizer's step unscales them only later)")
    if kind == "clip_before_unscale":
        msg = (f"`{call}` clips gradients of `{opt}` that are {scale}: the threshold applies to gradients tens of "
               f"thousands of times too large, so the clip either does nothing useful or cuts every step.")
    elif kind == "norm_before_unscale":
        msg = (f"`{call}` reads the norm of `{opt}`'s gradients while they are {scale}: the norm is the scale times "
               f"too large, so whatever logs or compares it is wrong.")
    else:
        msg = (f"`{call}` changes `{opt}`'s gradients while they are {scale}: what it adds or clamps is applied at "
               f"the scale, and unscaling then divides it by tens of thousands.")
    return msg, (unscale_with or f"use `{framework}`'s own clipping, which unscales the gradients first") + "."


def ddp_accumulation_without_no_sync(backward: str, model: str, step: str | None, step_line: int | None, late: bool = False,
                                     forward_line: int | None = None, prepared_by: tuple[str, str] | None = None,
                                     via: tuple[str, int | None] | None = None, by_flag: bool = False) -> tuple[str, str]:
    if late:
        msg = (f"`{backward}` runs with `{model}`'s gradient sync switched off only after the forward pass{_at(forward_line)} that made its "
               f"graph: DDP decides at forward time whether a backward all-reduces, so this micro-batch still communicates "
               f"(correct gradients, N times the communication).")
        help_ = (f"switch sync off before the forward pass: put the forward and the backward under the same context "
                 f"(`{model}.no_sync()`, `fabric.no_backward_sync({model}, ...)`, `accelerator.no_sync({model})`), or set "
                 f"`{model}.require_backward_grad_sync` before calling `{model}(...)`.")
        return msg, help_
    # a call that backpropagates and steps at the window's end itself (timm's `loss_scaler(..., update_grad=...)`)
    for_step = "(it steps itself on the last of each window)" if step == backward else f"for `{step}`{_at(step_line)}"
    if prepared_by is not None:
        # a model a framework prepared: DDP only when launched on several processes, so `model.no_sync()` may not exist
        call, context = prepared_by
        msg = (f"`{backward}`{_via(via)} accumulates micro-batches {for_step} through `{model}`, which `{call}` "
               f"wraps in DDP when the script runs on several processes; nothing switches its gradient sync off, so every "
               f"micro-batch all-reduces, also those that do not step (correct gradients, N times the communication).")
        help_ = f"switch `{model}`'s gradient sync off on the micro-batches that do not step: {context.replace('{model}', model)}."
        return msg, help_
    if by_flag:  # FSDP2 (`fully_shard`): reduce-scatters, switched with a method, not a context
        msg = (f"`{backward}`{_via(via)} accumulates micro-batches {for_step} through `{model}`, which "
               f"reduce-scatters its gradients on every backward: the micro-batches that do not step communicate for nothing "
               f"(correct gradients, N times the communication).")
        help_ = (f"switch `{model}`'s gradient sync off before the forward of the micro-batches that do not step: "
                 f"`{model}.set_requires_gradient_sync(last_micro_batch)`.")
        return msg, help_
    msg = (f"`{backward}`{_via(via)} accumulates micro-batches {for_step} through `{model}`, which all-reduces its "
           f"gradients on every backward: the micro-batches that do not step communicate for nothing (correct gradients, "
           f"N times the communication).")
    help_ = (f"run the forward and backward of the micro-batches that do not step under `{model}.no_sync()`: "
             f"`with (contextlib.nullcontext() if last_micro_batch else {model}.no_sync()):`.")
    return msg, help_


def ddp_no_sync_chosen_on_stepping_micro_batch(choice: str, model: str, test: str, off_when: bool, step: str,
                                               step_line: int | None, backward: str,
                                               backward_line: int | None) -> tuple[str, str]:
    """GL006 the wrong way round, read statically: the sync-off context is chosen on the micro-batch that steps."""
    when = f"when `{test}` holds" if off_when else f"when `{test}` does not hold"
    msg = (f"`{choice}` switches `{model}`'s gradient sync off {when}, which includes the micro-batch on which "
           f"`{step}`{_at(step_line)} steps: `{backward}`{_at(backward_line)} of that micro-batch does not "
           f"all-reduce, so each rank steps on gradients of its own and the replicas diverge, while micro-batches "
           f"that do not step all-reduce for nothing.")
    help_ = (f"choose `{model}.no_sync()` on the micro-batches that do not step and leave sync on for the last one, "
             f"with the step's own test: "
             f"`with (contextlib.nullcontext() if last_micro_batch else {model}.no_sync()):`.")
    return msg, help_


def ddp_last_micro_batch_unsynced(backward: str, model: str, step: str | None, step_line: int | None,
                                  backward_line: int | None = None) -> tuple[str, str]:
    """GL006 the wrong way round: sync switched off on the micro-batch that steps, on on the others;
    `backward_line`: the stepping micro-batch's backward, when the finding is anchored elsewhere."""
    msg = (f"`{backward}`{_at(backward_line)} is the last micro-batch before `{step or 'step()'}`{_at(step_line)}, but it runs with `{model}`'s "
           f"gradient sync switched off while the micro-batches before it all-reduce: its gradients stay on each rank, so "
           f"the gradients the step applies differ between ranks and the replicas diverge.")
    help_ = (f"switch sync off on the micro-batches that do not step and leave it on for the last one: "
             f"`with (contextlib.nullcontext() if last_micro_batch else {model}.no_sync()):`.")
    return msg, help_


def zero_grad_before_step_unseen_clear(backward: str, backward_line: int | None, step: str,
                                       step_line: int | None) -> tuple[str, str]:
    msg = (f"The gradients that `{backward}`{_at(backward_line)} just computed were cleared before `{step}`"
           f"{_at(step_line)} could apply them, by a call the runtime guard saw only by its effect and could not "
           f"find in the source: the step sees no gradient.")
    help_ = f"find what clears `.grad` between `{backward}` and `{step}`, and move it after `{step}` (or before `{backward}`)."
    return msg, help_

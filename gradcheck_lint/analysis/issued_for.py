"""Which model a backward pass is issued for, told by the clear made for it (GL005's second reading).

    opt_vq.zero_grad()
    vq_loss.backward(retain_graph=True)   # the generator's loss: also reaches the discriminator
    opt_disc.zero_grad()                  # ... whose share the author throws away
    gan_loss.backward()                   # the discriminator's loss, on the un-detached reconstruction
    opt_vq.step()                         # applies vq_loss's gradients and gan_loss's
    opt_disc.step()

The clear of `opt_disc` between the two passes discards what `vq_loss` wrote into the discriminator: the
code treats that write as unwanted, and the pass it clears for, `gan_loss`, as the discriminator's own. When
that pass also wrote into the generator, whose optimizer still holds its own loss's fresh gradients, the
generator's step applies the discriminator's objective (a generator trained to make its fakes easier to tell
apart). The first reading (the rule's module) needs a step of the other optimizer in between; here both
steps come after both passes, and only the clear says whose pass is whose.

A weaker witness: the clear discards nothing of the own pass (which never reached the other model) but
comes right before the other pass, with no backward between them, and that pass writes into the model it
cleared (SAC's `opt_q.zero_grad(); q_loss.backward(); opt_pi.zero_grad(); pi_loss.backward()` with the
policy loss run through the critic, then both steps). The clear prepares the other model for that pass,
which makes it the other model's; that the author did not mean it to train this model as well is then
an assumption (the finding is possible).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from .events import Backward, Clear, Step
from .gradstate import PathState
from .values import Holder

if TYPE_CHECKING:
    from .model import TrainingModel


class IssuedElsewhere(NamedTuple):
    holder: Holder  # the stepping optimizer's parameters the other pass wrote into
    other: Backward  # the pass made for the other model
    own: Backward  # this optimizer's own pass, whose share in the other model the clear discards
    clear: Clear  # the other model's clear between the two passes
    # the clear discarded the own pass's share in the other model (else: it only came right before the pass)
    discarded: bool = True


def issued_for_other_model(model: TrainingModel, step: Step, state: PathState,
                           holders: frozenset[Holder]) -> IssuedElsewhere | None:
    """On this path, a fresh pass in the step's parameters made for another model (see the module)."""
    held = [(h, c) for h, c in state.held(holders) if c.fresh and c.certain and not h.pseudo]
    if len({c.backward for _h, c in held}) < 2:
        return None
    passes = sorted({c.backward for _h, c in held}, key=lambda b: model.order(model.backwards[b].node))
    for i, first in enumerate(passes):
        own = model.backwards[first]
        for second in passes[i + 1:]:
            other = model.backwards[second]
            for clear in sorted(model.clears.values(), key=lambda c: model.order(c.node)):
                if clear.everything or not clear.holders or any(h.overlaps(x) for h in clear.holders for x in holders):
                    continue  # it clears (part of) this optimizer's parameters, or who knows what
                if not model.order(own.node) < model.order(clear.node) < model.order(other.node):
                    continue  # the three in this order in the code, not across iterations
                if not model.same_block(own.node, clear.node, other.node):
                    continue
                cleared = [h for h in clear.holders if any(w.overlaps(h) for w in own.written)]
                if cleared:
                    if not any(w.overlaps(h) for w in other.written for h in cleared):
                        continue  # not a clear of a model both passes went through
                elif not _prepares(model, clear, other):
                    continue
                written = [h for h, c in held if c.backward == second]
                holder = next((h for h in written if h in holders), written[0])  # named as the optimizer owns it
                return IssuedElsewhere(holder, other, own, clear, bool(cleared))
    return None


def _prepares(model: TrainingModel, clear: Clear, other: Backward) -> bool:
    """`clear` readies its model for the pass `other` alone: `other` writes into what it cleared, and no
    other backward call lies between them in the code."""
    if not any(w.overlaps(h) for w in other.written for h in clear.holders):
        return False
    start, end = model.order(clear.node), model.order(other.node)
    return not any(start < model.order(b.node) < end for b in model.backwards.values() if b is not other)

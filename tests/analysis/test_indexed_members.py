"""A member of a collection made out of sight, taken by index (`self.student_optimizers[i].step()`), is the same
object a loop over the collection names (`for opt in self.student_optimizers:`), and a loop that calls each member
it counts (`self.students[i](x)`) runs over models, not over data (lockbox 8's kdlib DML miss)."""

from __future__ import annotations

from gradcheck_lint.api import check_source

DML = '''
import torch


class DML:
    def __init__(self, students, student_optimizers):
        self.students = students
        self.student_optimizers = student_optimizers

    def train(self, loader, epochs):
        for epoch in range(epochs):
            epoch_loss = 0
            for x, y in loader:
                avg = 0
                for i in range(len(self.students)):
                    self.student_optimizers[i].zero_grad()
                    loss = torch.nn.functional.cross_entropy(self.students[i](x), y)
                    loss.backward()
                    self.student_optimizers[i].step()
                    avg += loss
                epoch_loss += avg / len(self.students)
            print(epoch_loss)
'''


def test_an_indexed_optimizer_of_an_unseen_list_steps_and_the_epoch_total_keeps_graphs() -> None:
    found = [(d.code, d.line) for d in check_source(DML)]
    assert found == [("GL008", 21)]  # `epoch_loss += avg / ...`; `avg` holds one batch's students only


def test_a_clear_by_a_loop_over_the_list_clears_the_indexed_members() -> None:
    looped = DML.replace("                    self.student_optimizers[i].zero_grad()\n", "")
    looped = looped.replace("            for x, y in loader:\n",
                            "            for x, y in loader:\n                for opt in self.student_optimizers:\n"
                            "                    opt.zero_grad()\n")
    # one object stands for every member: a step of student i after student j's backward is not read as applying
    # j's gradients again (the members' parameters are not known apart, so nothing is claimed about them)
    assert [d.code for d in check_source(looped)] == ["GL008"]


def test_a_per_batch_total_over_the_members_called_by_index_is_one_batchs_graphs() -> None:
    """KD_Lib's fixed DML: `avg += student_loss` over `for i in range(num_students)`, reset per batch, the loop
    running `self.students[i](x)`: it holds one batch's students, not every batch's (counted by `num_students`,
    not by the collection, whose name says nothing)."""
    fixed = DML.replace("for i in range(len(self.students)):", "for i in range(self.n):")
    fixed = fixed.replace("epoch_loss += avg / len(self.students)", "epoch_loss += (avg / self.n).item()")
    assert [d.code for d in check_source(fixed)] == []
    data_loop = fixed.replace("self.students[i](x)", "self.students[0](x[i])")  # data indexed, not models called
    assert [d.code for d in check_source(data_loop)] == ["GL008"]

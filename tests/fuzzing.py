"""Program generators, mutators and the no-crash contract shared by tests/test_fuzz.py and benchmarks/fuzz.py."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence

import libcst as cst
from hypothesis import strategies as st

from gradcheck_lint import Diagnostic
from gradcheck_lint.diagnostics import NOTICE_CODE
from gradcheck_lint.registry import PARSE_ERROR_CODE, all_rules
from gradcheck_lint.render import render_json

INTERNAL_ERROR = "internal error"

PREAMBLE = """\
import torch
import torch.nn as nn
from torch import optim
from torch.cuda.amp import GradScaler
from accelerate import Accelerator
import pytorch_lightning as pl

model = nn.Linear(4, 1)
G = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
D = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
opt_G = optim.Adam(G.parameters(), lr=1e-3)
opt_D = optim.Adam(D.parameters(), lr=1e-3)
scaler = GradScaler()
accelerator = Accelerator()
accum = 4
loader = [torch.randn(2, 4) for _ in range(8)]
i = 0
"""

MODELS = ("model", "G", "D", "self.model", "net")
OPTIMIZERS = ("opt", "opt_G", "opt_D", "self.opt", "optimizer")
LOSSES = ("loss", "d_loss", "g_loss")

# Leaf statements of training code; {m}/{o}/{l} are filled with names drawn from the pools above.
SIMPLE = (
    "{l} = {m}(x).sum()",
    "{l} = {m}({m2}(x)).mean()",
    "{l} = {l} / accum",
    "{l} /= accum",
    "{l}.backward()",
    "{l}.backward(retain_graph=True)",
    "{o}.step()",
    "{o}.zero_grad()",
    "{o}.zero_grad(set_to_none=True)",
    "{m}.zero_grad()",
    "scaler.scale({l}).backward()",
    "scaler.step({o})",
    "scaler.update()",
    "scaler.unscale_({o})",
    "torch.nn.utils.clip_grad_norm_({m}.parameters(), 1.0)",
    "{m}.requires_grad_(False)",
    "{m}.requires_grad_(True)",
    "fake = G(z).detach()",
    "fake = G(z)",
    "d_loss = D(fake).mean()",
    "accelerator.backward({l})",
    "torch.autograd.backward({l})",
    "{o} = torch.optim.SGD({m}.parameters(), lr=0.1)",
    "{m} = nn.Linear(4, 1)",
    "{o}, {o2} = {o2}, {o}",
    "{m}, {o} = accelerator.prepare({m}, {o})",
    "i += 1",
    "x = x.to('cpu')",
    "losses.append({l})",
    "sum(losses).backward()",
    "{o}.step(closure)",
    "del {o}",
    "{o} = None",
    "p.grad = None",
    "p.grad.zero_()",
    "assert {l} is not None",
    "pass",
    "train_step({m}, {o}, x)",
    "helper()",
    "Trainer().fit(loader)",
    "({l} := {m}(x).sum()).backward()",
    "[l.backward() for l in losses]",
    "{o}.param_groups[0]['lr'] *= 0.5",
    "print({l}.item())",
)
IN_LOOP = ("break", "continue")
IN_FUNCTION = ("return", "return {l}", "yield {l}")

LOOP_HEADERS = (
    "for i, x in enumerate(loader):",
    "for x in loader:",
    "for epoch in range(3):",
    "for p in {m}.parameters():",
    "while i < 10:",
    "while True:",
)
BRANCH_HEADERS = (
    "if (i + 1) % accum == 0:",
    "if i % accum == 0:",
    "if i % accum != accum - 1:",
    "if not (i + 1) % accum:",
    "if flag:",
    "if {l}.item() > 0:",
    "with torch.no_grad():",
    "with torch.autocast('cpu'):",
    "with accelerator.accumulate({m}):",
    "with {m}.no_sync():",
)


def contract_violations(diags: Sequence[Diagnostic], path: str) -> list[str]:
    """Return how these diagnostics break the analyzer's contract (empty when they keep it)."""
    known = {PARSE_ERROR_CODE, NOTICE_CODE, *all_rules()}  # GL099: a cut analysis says what it left out
    problems = []
    for d in diags:
        if d.code not in known:
            problems.append(f"unknown code {d.code}")
        if d.code == PARSE_ERROR_CODE and INTERNAL_ERROR in d.message:
            problems.append(d.message)
        if d.path != path:
            problems.append(f"diagnostic for {d.path!r}, expected {path!r}")
        if d.span.line < 1 or d.span.column < 1 or (d.span.end_line, d.span.end_column) < (d.span.line, d.span.column):
            problems.append(f"bad span {d.span}")
    if sum(d.code == PARSE_ERROR_CODE for d in diags) > 1 or (
        any(d.code == PARSE_ERROR_CODE for d in diags) and len(diags) > 1
    ):
        problems.append("a GL000 must be the file's only diagnostic")
    try:
        render_json(diags)
    except (TypeError, ValueError) as exc:
        problems.append(f"not serialisable: {exc}")
    return problems


# ---------------------------------------------------------------------------------------- programs
@st.composite
def simple_statement(draw: st.DrawFn, in_loop: bool, in_function: bool) -> str:
    """One leaf statement of training code."""
    pool = SIMPLE + (IN_LOOP if in_loop else ()) + (IN_FUNCTION if in_function else ())
    template = draw(st.sampled_from(pool))
    return fill(template, draw)


def fill(template: str, draw: st.DrawFn) -> str:
    """Fill a template's {m} {m2} {o} {o2} {l} holes with names from the pools."""
    return template.format(
        m=draw(st.sampled_from(MODELS)), m2=draw(st.sampled_from(MODELS)),
        o=draw(st.sampled_from(OPTIMIZERS)), o2=draw(st.sampled_from(OPTIMIZERS)),
        l=draw(st.sampled_from(LOSSES)),
    )


def indent(lines: Sequence[str], by: str = "    ") -> list[str]:
    """Indent a block's lines."""
    return [by + line if line else line for line in lines]


@st.composite
def block(draw: st.DrawFn, depth: int = 0, in_loop: bool = False, in_function: bool = False) -> list[str]:
    """A block of statements: leaves and, while depth allows, loops, branches, try, functions and classes."""
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(("simple",) * 6 + ("loop", "loop", "branch", "branch", "try", "def", "class", "match")))
        if depth >= 3:
            kind = "simple"
        if kind == "simple":
            lines.append(draw(simple_statement(in_loop, in_function)))
        elif kind == "loop":
            header = fill(draw(st.sampled_from(LOOP_HEADERS)), draw)
            body = draw(block(depth + 1, True, in_function))
            lines += [header, *indent(body)]
            if draw(st.booleans()):
                lines += ["else:", *indent(draw(block(depth + 1, in_loop, in_function)))]
        elif kind == "branch":
            header = fill(draw(st.sampled_from(BRANCH_HEADERS)), draw)
            lines += [header, *indent(draw(block(depth + 1, in_loop, in_function)))]
            if header.startswith("if") and draw(st.booleans()):
                lines += ["else:", *indent(draw(block(depth + 1, in_loop, in_function)))]
        elif kind == "try":
            lines += ["try:", *indent(draw(block(depth + 1, in_loop, in_function)))]
            lines += ["except Exception:", *indent(draw(block(depth + 1, in_loop, in_function)))]
            if draw(st.booleans()):
                lines += ["finally:", *indent(draw(block(depth + 1, in_loop, in_function)))]
        elif kind == "def":
            name = draw(st.sampled_from(("train_step", "helper", "closure", "train_epoch")))
            params = "model, opt, x" if name == "train_step" else ""
            lines += [f"def {name}({params}):", *indent(draw(block(depth + 1, False, True)))]
            if draw(st.booleans()):
                lines.append(fill("{o}.step(closure)" if name == "closure" else f"{name}({params})", draw))
        elif kind == "class":
            base = draw(st.sampled_from(("nn.Module", "object", "pl.LightningModule", "Trainer")))
            lines += [f"class Trainer({base}):", "    def __init__(self):",
                      "        self.model = nn.Linear(4, 1)",
                      "        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)",
                      "    def fit(self, loader):", *indent(draw(block(depth + 2, False, True)), "        "),
                      "    def training_step(self, batch, batch_idx):", *indent(draw(block(depth + 2, False, True)), "        ")]
        elif kind == "match":
            lines += ["match i % accum:", "    case 0:", *indent(draw(block(depth + 1, in_loop, in_function)), "        "),
                      "    case _:", *indent(draw(block(depth + 1, in_loop, in_function)), "        ")]
    return lines


@st.composite
def training_programs(draw: st.DrawFn) -> str:
    """A module of training code: the preamble, then random loops, branches, helpers and classes."""
    body = draw(block())
    return PREAMBLE + "\n".join(body) + "\n"


class _InsertFragments(cst.CSTTransformer):
    """Insert parsed training statements at given positions of the module's indented blocks."""

    def __init__(self, plan: dict[int, list[tuple[int, cst.BaseStatement]]]) -> None:
        self.plan = plan
        self.seen = -1

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        self.seen += 1
        inserts = self.plan.get(self.seen)
        if not inserts:
            return updated
        body = list(updated.body)
        for pos, stmt in inserts:
            body.insert(min(pos, len(body)), stmt)
        return updated.with_changes(body=body)


class _BlockCounter(cst.CSTVisitor):
    """Count indented blocks in the order a transformer leaves them."""

    def __init__(self) -> None:
        self.count = 0

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self.count += 1


def count_blocks(module: cst.Module) -> int:
    """Count the indented blocks of a module."""
    counter = _BlockCounter()
    module.visit(counter)
    return counter.count


def grammar_programs() -> st.SearchStrategy[str]:
    """hypothesmith's programs from Python's grammar; imported here, when a test first draws one: the
    import and the strategy build lark parsers (about 2 s), which every pytest process would pay at
    collection otherwise."""
    import hypothesmith

    return hypothesmith.from_grammar()


def node_programs() -> st.SearchStrategy[str]:
    """hypothesmith's programs built from libcst nodes (imported when first drawn, as above)."""
    import hypothesmith

    return hypothesmith.from_node()


@st.composite
def spliced_programs(draw: st.DrawFn, generated: st.SearchStrategy[str] | None = None) -> str:
    """A hypothesmith program spliced with training code: around it, inside its blocks, and it inside a loop."""
    code = draw(generated if generated is not None else st.deferred(grammar_programs))
    loop = draw(training_programs())
    try:
        module = cst.parse_module(code)
        parsed = True
    except Exception:
        module, parsed = None, False
    if parsed and module is not None:
        blocks = count_blocks(module)
        plan: dict[int, list[tuple[int, cst.BaseStatement]]] = {}
        if blocks:
            for _ in range(draw(st.integers(0, 4))):
                stmt = cst.parse_statement(draw(simple_statement(False, False)) + "\n")
                plan.setdefault(draw(st.integers(0, blocks - 1)), []).append((draw(st.integers(0, 3)), stmt))
        try:
            code = module.visit(_InsertFragments(plan)).code
        except Exception:
            code = module.code
    where = draw(st.sampled_from(("after", "before", "in_loop", "in_function")))
    if not code.endswith("\n"):
        code += "\n"
    if where == "after":
        return loop + code
    if where == "before":
        return PREAMBLE + code + loop[len(PREAMBLE):]
    if parsed and module is not None and where == "in_loop":
        return PREAMBLE + nest(code, "for i, x in enumerate(loader):", "    loss = model(x).sum()\n    loss.backward()\n", "    opt.step()\n")
    if parsed and module is not None:
        return PREAMBLE + nest(code, "def train_step(model, opt, x):", "    opt.zero_grad()\n    model(x).sum().backward()\n", "    opt.step()\ntrain_step(model, opt, x)\n")
    return loop + code


def nest(code: str, header: str, before: str, after: str) -> str:
    """Put a parsed module's statements inside a compound statement, between two training fragments."""
    module = cst.parse_module(code)
    wrapper = cst.parse_module(f"{header}\n{before}    pass\n{after}")
    compound = wrapper.body[0]
    assert isinstance(compound, (cst.For, cst.FunctionDef))
    inner = list(compound.body.body)  # type: ignore[union-attr]
    hole = next(k for k, s in enumerate(inner) if cst.Module([s]).code.strip() == "pass")
    body = inner[:hole] + list(module.body) + inner[hole + 1:]
    if not body:
        body = inner
    new = compound.with_changes(body=compound.body.with_changes(body=body))  # type: ignore[union-attr]
    return wrapper.with_changes(body=[new, *wrapper.body[1:]]).code


# ---------------------------------------------------------------------------------------- mutations
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_PUNCT = re.compile(rb"[()\[\]{}:,.=+\-*/%<>@]")
# Bytes that matter to a tokenizer: NUL, a lone continuation byte, a BOM start, line ends, tabs, quotes.
INTERESTING_BYTES = b"\x00\xff\xfe\xef\x80\x0c\t\r\n\\'\"#():"
TRAINING_NAMES = (b"step", b"zero_grad", b"backward", b"detach", b"requires_grad_", b"no_grad", b"parameters")


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def delete_line(data: bytes, rng: random.Random) -> bytes:
    """Delete one line."""
    lines = _lines(data)
    del lines[rng.randrange(len(lines))]
    return b"".join(lines)


def delete_lines(data: bytes, rng: random.Random) -> bytes:
    """Delete a run of up to eight lines."""
    lines = _lines(data)
    start = rng.randrange(len(lines))
    del lines[start:start + rng.randint(2, 8)]
    return b"".join(lines)


def duplicate_line(data: bytes, rng: random.Random) -> bytes:
    """Duplicate a line (or a run of lines) in place."""
    lines = _lines(data)
    start = rng.randrange(len(lines))
    run = lines[start:start + rng.randint(1, 4)]
    lines[start:start] = run
    return b"".join(lines)


def swap_lines(data: bytes, rng: random.Random) -> bytes:
    """Swap two lines anywhere in the file."""
    lines = _lines(data)
    a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[a], lines[b] = lines[b], lines[a]
    return b"".join(lines)


def move_line(data: bytes, rng: random.Random) -> bytes:
    """Move a line elsewhere, re-indented like its new neighbour (often still valid Python)."""
    lines = _lines(data)
    line = lines.pop(rng.randrange(len(lines)))
    at = rng.randrange(len(lines) + 1)
    neighbour = lines[at] if at < len(lines) else (lines[-1] if lines else b"")
    lead = neighbour[: len(neighbour) - len(neighbour.lstrip(b" \t"))]
    lines.insert(at, lead + line.lstrip(b" \t"))
    return b"".join(lines)


def reindent_line(data: bytes, rng: random.Random) -> bytes:
    """Change one line's indentation: deeper, shallower, or with tabs."""
    lines = _lines(data)
    k = rng.randrange(len(lines))
    body = lines[k].lstrip(b" \t")
    depth = len(lines[k]) - len(body)
    choice = rng.randrange(4)
    if choice == 0:
        lead = b" " * (depth + 4)
    elif choice == 1:
        lead = b" " * max(0, depth - 4)
    elif choice == 2:
        lead = b"\t" * (depth // 4 + rng.randint(0, 1))
    else:
        lead = b" " * rng.randint(0, 13)
    lines[k] = lead + body
    return b"".join(lines)


def truncate(data: bytes, rng: random.Random) -> bytes:
    """Cut the file at a random byte offset (possibly inside a UTF-8 sequence or a string)."""
    return data[: rng.randrange(len(data) + 1)]


def flip_byte(data: bytes, rng: random.Random) -> bytes:
    """Replace one byte by a random one."""
    if not data:
        return bytes([rng.randrange(256)])
    buf = bytearray(data)
    buf[rng.randrange(len(buf))] = rng.randrange(256)
    return bytes(buf)


def insert_bytes(data: bytes, rng: random.Random) -> bytes:
    """Insert one to three bytes, mostly ones a tokenizer cares about."""
    at = rng.randrange(len(data) + 1)
    pool = INTERESTING_BYTES if rng.random() < 0.7 else bytes(range(256))
    return data[:at] + bytes(rng.choice(pool) for _ in range(rng.randint(1, 3))) + data[at:]


def replace_token(data: bytes, rng: random.Random) -> bytes:
    """Replace one identifier or punctuation token by another of the same kind taken from the file."""
    pattern = _IDENT if rng.random() < 0.8 else _PUNCT
    found = list(pattern.finditer(data))
    if not found:
        return data
    target = rng.choice(found)
    other = rng.choice(found).group()
    return data[: target.start()] + other + data[target.end():]


def swap_names(data: bytes, rng: random.Random) -> bytes:
    """Swap every occurrence of two names, favouring the training vocabulary (`step` <-> `zero_grad`)."""
    names = sorted({m.group() for m in _IDENT.finditer(data)})
    if len(names) < 2:
        return data
    present = [n for n in TRAINING_NAMES if n in names]
    if len(present) >= 2 and rng.random() < 0.6:
        a, b = rng.sample(present, 2)
    else:
        a, b = rng.sample(names, 2)
    table = {a: b, b: a}
    return _IDENT.sub(lambda m: table.get(m.group(), m.group()), data)


class _StatementEdit(cst.CSTTransformer):
    """Swap, delete, duplicate or hoist the statements of the `target`-th block (valid Python out)."""

    def __init__(self, target: int, op: str, rng: random.Random) -> None:
        self.target, self.op, self.rng = target, op, rng
        self.seen = -1

    def _edit(self, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        if not body:
            return body
        i = self.rng.randrange(len(body))
        if self.op == "swap" and len(body) > 1:
            j = self.rng.randrange(len(body))
            body[i], body[j] = body[j], body[i]
        elif self.op == "delete" and len(body) > 1:
            del body[i]
        elif self.op == "duplicate":
            body.insert(i, body[i])
        elif self.op == "reverse":
            body.reverse()
        return body

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        self.seen += 1
        if self.seen != self.target:
            return updated
        return updated.with_changes(body=self._edit(list(updated.body)))

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        if self.target != -1:
            return updated
        return updated.with_changes(body=self._edit(list(updated.body)))


def edit_statements(data: bytes, rng: random.Random) -> bytes:
    """Swap, delete, duplicate or reverse whole statements of one block, keeping the file parseable."""
    try:
        module = cst.parse_module(data)
        blocks = count_blocks(module)
        op = rng.choice(("swap", "delete", "duplicate", "reverse"))
        edited = module.visit(_StatementEdit(rng.randrange(-1, blocks), op, rng))
        return edited.bytes
    except Exception:
        return swap_lines(data, rng)


MUTATORS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    f.__name__: f
    for f in (delete_line, delete_lines, duplicate_line, swap_lines, move_line, reindent_line, truncate, flip_byte,
              insert_bytes, replace_token, swap_names, edit_statements)
}


def mutate(data: bytes, steps: Sequence[tuple[str, int]]) -> bytes:
    """Apply named mutations in order, each seeded by its own integer (so a failing example replays)."""
    for name, seed in steps:
        data = MUTATORS[name](data, random.Random(seed))
    return data


# Mutations that usually leave the file parseable, so that the analysis runs on it, come first
# (hypothesis shrinks towards them) and are drawn more often.
STRUCTURAL = ("edit_statements", "swap_names", "replace_token", "move_line", "duplicate_line", "delete_line")
RAW = ("delete_lines", "swap_lines", "reindent_line", "truncate", "flip_byte", "insert_bytes")
assert sorted(STRUCTURAL + RAW) == sorted(MUTATORS)


def mutation_steps(max_size: int = 3) -> st.SearchStrategy[list[tuple[str, int]]]:
    """Sequences of (mutation, seed), two structural mutations for every raw one."""
    name = st.sampled_from(STRUCTURAL + STRUCTURAL + RAW)
    return st.lists(st.tuples(name, st.integers(0, 2**32 - 1)), min_size=1, max_size=max_size)

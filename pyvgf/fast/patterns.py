"""The fast executor's pattern fusions: softmax, layer normalization, GELU and the quantized
residual ADD, written as the TOSA operators a framework lowers them to, found among a plan's
steps (`find`) and each run as one compiled loop (compiled.layer_norm_rows, gelu_rows,
residual_rows; softmax as two, numpy's exp between them) instead of 3-11 passes over the
tensor; and a float residual ADD after a convolution, or after a MATMUL and its bias, made
inside the product's loops; and a depthwise convolution with the 1x1 one after it, the 1x1
expansion before them (int8: and the quantized residual ADD after them), as one compiled
call.

A pattern is fused only where its types are the loop's (fp32; for the residual ADD, signed
integers), its reductions run along the last axis, its constants are scalars or one per
column, and each of its intermediate results is read by the pattern alone and is not a graph
result; anything else runs op by op. The loops make each element with
the operations the ops make it with, in the same order (integers bit-exact); only float sums
differ: each row's sum is accumulated in float64 and rounded once, where the reference sums
pairwise in fp32 (TOSA leaves a sum's order open).

Softmax keeps numpy's exp (the reference's, vectorized): a compiled loop calling exp once per
element took 1.6x as long as numpy's exp and the five other passes together (6 x 197 x 197).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..tosa._common import F32, I8, I32, int_max, int_min
from ..tosa.interpreter import Known, Planned, Slot
from ..tosa.type_conversion import DOUBLE_ROUND
from . import conv
from .compiled import gelu_rows, layer_norm_rows, residual_rows, softmax_rows
from .kernels import NO_RESCALE, Rescale, biased_product, tile_weight
from .registry import FastOpDef
from .rescale import _rescaling


@dataclass(frozen=True)
class Found:
    """A pattern found: the steps it replaces (in plan order) and the step running it."""

    steps: tuple[int, ...]
    step: Planned


class Steps:
    """A plan's steps as a graph: the step making each slot and the steps reading it; `inputs`
    the graph inputs' shapes (their slots come first)."""

    def __init__(self, planned: Sequence[Planned], slots: dict[int, Slot | None], results: set[int],
                 inputs: Sequence[tuple[int, ...]]):
        self.planned = planned
        self.inputs = inputs
        self.slot = [slots.get(p.node.id) for p in planned]
        self.made_by = {s.index: i for i, s in enumerate(self.slot) if isinstance(s, Slot)}
        self.readers: dict[int, list[tuple[int, str]]] = {}
        for i, p in enumerate(planned):
            for name, arg in p.args.items():
                for part in arg if isinstance(arg, list) else [arg]:
                    if isinstance(part, Slot):
                        self.readers.setdefault(part.index, []).append((i, name))
        self.results = results

    def op(self, i: int) -> str:
        return self.planned[i].node.op

    def arg(self, i: int, name: str) -> Known | Slot | None:
        arg = self.planned[i].args.get(name)
        return arg if isinstance(arg, (Known, Slot)) else None

    def users(self, i: int) -> list[tuple[int, str]]:
        """The steps reading step i's result, and as which operand; none where it is a graph
        result (it must then be kept)."""
        slot = self.slot[i]
        if not isinstance(slot, Slot) or slot.index in self.results:
            return []
        return self.readers.get(slot.index, [])

    def then(self, i: int, op: str, names: Sequence[str] = ("input1", "input2")) -> tuple[int, str] | None:
        """The one step reading step i's result, when it is `op` reading it as one of `names`."""
        users = self.users(i)
        if len(users) == 1 and self.op(users[0][0]) == op and users[0][1] in names:
            return users[0]
        return None

    def other(self, i: int, name: str) -> Known | Slot | None:
        """A binary op's operand other than `name`."""
        return self.arg(i, "input2" if name == "input1" else "input1")

    def f32(self, i: int) -> bool:
        node = self.planned[i].node
        return not isinstance(node.result_type, tuple) and node.result_type.dtype == F32

    def last_axis(self, i: int) -> bool:
        """Whether a reduction step runs along its input's last axis."""
        axis, node = self.arg(i, "axis"), self.planned[i].node
        return isinstance(axis, Known) and int(axis.value) == len(node.result_type.shape) - 1

    def shape(self, i: int) -> tuple[int, ...]:
        return tuple(self.planned[i].node.result_type.shape)

    def rows(self, i: int) -> bool:
        """Whether step i's result has rows to loop over: a last axis (rank 0 is valid SPIR-V,
        though model-converter writes a scalar as shape [1]; a dimension is at least 1)."""
        return len(self.shape(i)) > 0

    def made_shape(self, arg: Slot) -> tuple[int, ...]:
        """The shape of a slot's value: a step's result or a graph input (`inputs`)."""
        i = self.made_by.get(arg.index)
        return tuple(self.inputs[arg.index]) if i is None else self.shape(i)


def _scalar(arg: Known | Slot | None) -> np.float32 | None:
    """A known operand of one element, as fp32."""
    if not isinstance(arg, Known):
        return None
    value = np.asarray(arg.value)
    return F32.type(value.reshape(-1)[0]) if value.size == 1 and value.dtype == F32 else None


def per_column(arg: Known | Slot | None, columns: int) -> np.ndarray | None:
    """A known fp32 operand broadcast along the last axis only (one value, or one per column),
    as a vector of `columns`."""
    if not isinstance(arg, Known):
        return None
    value = np.asarray(arg.value)
    if value.dtype != F32 or value.size not in (1, columns) or (value.size > 1 and value.shape[-1] != columns):
        return None
    return np.ascontiguousarray(np.broadcast_to(value.reshape(-1), (columns,)))


def _step(name: str, make: Callable[[], Callable[..., np.ndarray]], steps: Steps,
          indices: Sequence[int], sources: dict[str, Slot], at: int | None = None,
          blas: bool = False) -> Found:
    """The step running a pattern, standing for the steps `indices` (in plan order; the last
    one's result is its result): make(), made at the step's first run (not at load, so that
    its constants stay unread until a run uses them), is a function of the values of
    `sources`, in their order, which the step reads under their names, as the node of step
    `at` (the first of `indices` unless given), whose place in the plan it takes; `blas`: it
    calls BLAS (registry.py)."""
    at = indices[0] if at is None else at
    names = tuple(sources)
    made: list[Callable[..., np.ndarray]] = []  # two threads' first runs may both make one

    def run(**operands: np.ndarray) -> np.ndarray:
        if not made:
            made.append(make())
        return made[0](*map(operands.__getitem__, names))
    tail = tuple((steps.planned[j].node, steps.planned[j].opdef, steps.planned[j].args)
                 for j in indices if j != at)
    return Found(tuple(indices), Planned(steps.planned[at].node,
                                         FastOpDef(name, run, None, blas=blas), dict(sources), tail))


def _read(steps: Steps, i: int, source: Slot) -> dict[str, Slot]:
    """source under the name step i reads it as."""
    return {next(n for n, a in steps.planned[i].args.items() if a == source): source}


def _rows(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).reshape(-1, x.shape[-1])


def _softmax(steps: Steps, i: int) -> Found | None:
    """REDUCE_MAX(x) -> SUB(x, max) -> EXP -> REDUCE_SUM -> RECIPROCAL -> MUL(exp, 1/sum), along
    the last axis: one compiled loop over the rows (compiled.softmax_rows)."""
    x = steps.arg(i, "input")
    if steps.op(i) != "REDUCE_MAX" or not isinstance(x, Slot) or not steps.f32(i) \
            or not steps.last_axis(i):
        return None
    sub = steps.then(i, "SUB", ("input2",))
    if sub is None or steps.arg(sub[0], "input1") != x or steps.shape(sub[0]) != steps.made_shape(x) \
            or not steps.rows(sub[0]):
        return None
    exp = steps.then(sub[0], "EXP", ("input1",))
    users = sorted(steps.users(exp[0]), key=lambda u: steps.op(u[0])) if exp else []
    if len(users) != 2 or [steps.op(u[0]) for u in users] != ["MUL", "REDUCE_SUM"] \
            or not steps.last_axis(users[1][0]):
        return None
    (mul, _), (total, _) = users
    reciprocal = steps.then(total, "RECIPROCAL", ("input1",))
    if reciprocal is None or (steps.then(reciprocal[0], "MUL") or (None,))[0] != mul:
        return None

    def softmax(x: np.ndarray) -> np.ndarray:
        out = np.empty(x.shape, F32)
        softmax_rows(_rows(x), out.reshape(-1, x.shape[-1]))
        return out
    return _step("SOFTMAX", lambda: softmax, steps, sorted((i, sub[0], exp[0], total, reciprocal[0], mul)),
                 _read(steps, i, x))


def _layer_norm(steps: Steps, i: int) -> Found | None:
    """REDUCE_SUM(x) -> MUL(1/n) -> SUB(x, mean) = d; MUL(d, d) -> REDUCE_SUM -> MUL(1/n) ->
    ADD(eps) -> RSQRT -> MUL(d, rstd), then MUL(scale) and ADD(offset) where they follow."""
    x = steps.arg(i, "input")
    if steps.op(i) != "REDUCE_SUM" or not isinstance(x, Slot) or not steps.f32(i) \
            or not steps.last_axis(i):
        return None
    mean = steps.then(i, "MUL")
    sub = mean and steps.then(mean[0], "SUB", ("input2",))
    if sub is None or steps.arg(sub[0], "input1") != x or steps.shape(sub[0]) != steps.made_shape(x) \
            or not steps.rows(sub[0]):
        return None
    inv_n = _scalar(steps.other(*mean))
    users = steps.users(sub[0])
    square = [u for u in users if steps.op(u[0]) == "MUL" and steps.arg(u[0], "input1") == steps.arg(u[0], "input2")]
    if inv_n is None or len(users) != 3 or len(square) != 2 or square[0][0] != square[1][0]:
        return None
    apply = [u for u in users if u[0] != square[0][0]]
    total = steps.then(square[0][0], "REDUCE_SUM", ("input",))
    variance = total and steps.last_axis(total[0]) and steps.then(total[0], "MUL")
    plus = variance and steps.then(variance[0], "ADD")
    rsqrt = plus and steps.then(plus[0], "RSQRT", ("input1",))
    scaled = rsqrt and steps.then(rsqrt[0], "MUL")
    if not scaled or len(apply) != 1 or apply[0][0] != scaled[0] or steps.op(scaled[0]) != "MUL":
        return None
    inv_n2, eps = _scalar(steps.other(*variance)), _scalar(steps.other(*plus))
    if inv_n2 is None or eps is None:
        return None
    chain = [i, mean[0], sub[0], square[0][0], total[0], variance[0], plus[0], rsqrt[0], scaled[0]]
    columns = steps.shape(sub[0])[-1]
    scale = offset = None
    if (times := steps.then(scaled[0], "MUL")) and (scale := per_column(steps.other(*times), columns)) is not None:
        chain.append(times[0])
        if (add := steps.then(times[0], "ADD")) and (offset := per_column(steps.other(*add), columns)) is not None:
            chain.append(add[0])
    ones, zeros = np.ones(columns, F32), np.zeros(columns, F32)

    def layer_norm(x: np.ndarray) -> np.ndarray:
        out = np.empty(x.shape, F32)
        layer_norm_rows(_rows(x), out.reshape(-1, columns), inv_n, inv_n2, eps,
                        ones if scale is None else scale, scale is not None,
                        zeros if offset is None else offset, offset is not None)
        return out
    return _step("LAYER_NORM", lambda: layer_norm, steps, sorted(chain), _read(steps, i, x))


def _gelu(steps: Steps, i: int) -> Found | None:
    """[ADD(x, bias) =] h; MUL(h, a) -> ERF -> ADD(k) = e; MUL(h, c) = g; MUL(e, g): GELU's
    h * c * (erf(h * a) + k) with c = 0.5, a = 1/sqrt(2) and k = 1 as exported, any constants
    here; found from its ERF."""
    inner = steps.planned[i].args.get("input")
    if steps.op(i) != "ERF" or not isinstance(inner, Slot) or not steps.f32(i):
        return None
    scale = steps.made_by.get(inner.index)
    if scale is None or steps.op(scale) != "MUL" or len(steps.users(scale)) != 1:
        return None
    h = next((steps.arg(scale, n) for n in ("input1", "input2") if isinstance(steps.arg(scale, n), Slot)), None)
    a = _scalar(steps.other(scale, "input1" if steps.arg(scale, "input1") == h else "input2"))
    plus = steps.then(i, "ADD")
    k = plus and _scalar(steps.other(*plus))
    final = plus and steps.then(plus[0], "MUL")
    if h is None or a is None or k is None or final is None or steps.shape(final[0]) != steps.made_shape(h) \
            or not steps.rows(final[0]):
        return None
    product = steps.other(*final)
    half = steps.made_by.get(product.index) if isinstance(product, Slot) else None
    if half is None or steps.op(half) != "MUL" or steps.then(half, "MUL") is None \
            or steps.then(half, "MUL")[0] != final[0]:
        return None
    name = "input1" if steps.arg(half, "input1") == h else "input2"
    c = _scalar(steps.other(half, name))
    if steps.arg(half, name) != h or c is None:
        return None
    chain, source, bias = [scale, i, plus[0], half, final[0]], h, None
    maker = steps.made_by.get(h.index)
    columns = steps.shape(final[0])[-1]
    users = {u[0] for u in steps.users(maker)} if maker is not None else set()
    if maker is not None and steps.op(maker) == "ADD" and users == {scale, half} and steps.f32(maker):
        x = next((steps.arg(maker, n) for n in ("input1", "input2") if isinstance(steps.arg(maker, n), Slot)), None)
        other = steps.other(maker, "input1" if steps.arg(maker, "input1") == x else "input2")
        bias = per_column(other, columns)
        if x is not None and bias is not None and steps.made_shape(x) == steps.shape(maker):
            chain, source = [maker, *chain], x
        else:
            bias = None
    chain.sort()
    no_bias = np.zeros(columns, F32)

    def gelu(x: np.ndarray) -> np.ndarray:
        out = np.empty(x.shape, F32)
        gelu_rows(_rows(x), out.reshape(-1, columns), no_bias if bias is None else bias,
                  bias is not None, a, k, c)
        return out
    return _step("GELU", lambda: gelu, steps, chain, _read(steps, chain[0], source))


def _signed_rescale(steps: Steps, i: int, to: np.dtype | None) -> dict[str, object] | None:
    """A RESCALE step's known operands, where it reads and writes signed integers (to `to`,
    when given) and every operand but its input is known; else None."""
    p = steps.planned[i]
    if p.node.op != "RESCALE" or (to is not None and p.node.result_type.dtype != to):
        return None
    known = {name: arg.value for name, arg in p.args.items() if isinstance(arg, Known)}
    if len(known) != len(p.args) - 1 or known["input_unsigned"] or known["output_unsigned"]:
        return None
    return known


class _QuantizedAdd(NamedTuple):
    """A quantized residual ADD as _quantized_add finds it from its ADD step: out =
    RESCALE(y' + RESCALE(x)), y' = RESCALE(y) where `y_step` made it from y (else y itself, of
    int32), y itself RESCALE(y) where `y_first_step` made it so (y rescaled twice); each
    RESCALE by its known operands (None: none)."""

    x_name: str
    x: Slot
    x_step: int
    x_rescale: dict[str, object]
    y_name: str
    y: Slot
    y_step: int | None
    y_rescale: dict[str, object] | None
    y_first_step: int | None
    y_first: dict[str, object] | None
    add: int
    after: int
    outer: dict[str, object]

    @property
    def indices(self) -> tuple[int, ...]:
        """Its steps, in plan order (y may be made after x's RESCALE)."""
        steps = (self.y_first_step, self.y_step, self.x_step, self.add, self.after)
        return tuple(sorted(i for i in steps if i is not None))

    def rescales(self, channels: int, width: int) -> tuple[Rescale, Rescale, Rescale, Rescale]:
        """y's first RESCALE (NO_RESCALE: none), y's, x's and the sum's, as residual_rows takes
        them, for rows of `width` pixels of `channels`."""
        first = NO_RESCALE if self.y_first is None else _tiled_rescale(self.y_first, channels, width)
        return (first, *(_tiled_rescale(r, channels, width)  # type: ignore[return-value]
                         for r in (self.y_rescale, self.x_rescale, self.outer)))


def _quantized_add(steps: Steps, i: int, x_name: str | None = None) -> _QuantizedAdd | None:
    """RESCALE(x) -> ADD(y, that) -> RESCALE, found from its ADD (step i): a quantized
    residual ADD (int8 or int16 x, the int32 sum), as TOSA writes one; y an int32 tensor, or
    itself RESCALE(y) of an int8 or int16 one, as TFLite's lowering writes it (Arm's real
    models, the benchmark suite's int8 MobileNetV2), or rescaled twice (Arm's real models: to
    int32, then int32 to int32). x is the ADD's operand `x_name` where given, else input2 or
    input1, whichever a RESCALE makes."""
    if steps.op(i) != "ADD" or steps.planned[i].node.result_type.dtype != I32 or not steps.rows(i):
        return None
    shape = steps.shape(i)
    inner = (_inner_rescale(steps, i, x_name, shape) if x_name else
             _inner_rescale(steps, i, "input2", shape) or _inner_rescale(steps, i, "input1", shape))
    after = steps.then(i, "RESCALE", ("input",))
    outer = after and _signed_rescale(steps, after[0], None)
    if inner is None or not outer:
        return None
    x_step, x_name, x, x_rescale = inner
    y_name = "input1" if x_name == "input2" else "input2"
    y_inner = _inner_rescale(steps, i, y_name, shape)
    if y_inner is not None:
        y_step, _, y, y_rescale = y_inner
    else:
        y_step, y, y_rescale = None, steps.arg(i, y_name), None
    y_first_step = y_first_rescale = None
    if y_step is not None and (first := _inner_rescale(steps, y_step, "input", shape)):
        y_first_step, _, y, y_first_rescale = first
    if not isinstance(y, Slot) or steps.made_shape(y) != shape:
        return None
    return _QuantizedAdd(x_name, x, x_step, x_rescale, y_name, y, y_step, y_rescale, y_first_step,
                         y_first_rescale, i, after[0], outer)  # type: ignore[index]


def _residual(steps: Steps, i: int) -> Found | None:
    """A quantized residual ADD (_quantized_add) as one compiled loop (residual_rows)."""
    found = _quantized_add(steps, i)
    if found is None:
        return None
    shape = steps.shape(i)
    channels, width = shape[-1], shape[-2] if len(shape) > 1 else 1
    out_dtype = np.asarray(found.outer["output_zp"]).dtype
    rows = (-1, width * channels)

    def make() -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        tiled = found.rescales(channels, width)  # each per-column vector along a row of W * C

        def residual(y_value: np.ndarray, x_value: np.ndarray) -> np.ndarray:
            out = np.empty(shape, out_dtype)
            residual_rows(np.ascontiguousarray(y_value).reshape(rows),
                          np.ascontiguousarray(x_value).reshape(rows), *tiled, out.reshape(rows))
            return out
        return residual
    # The ADD's place: x stands for its RESCALE's result.
    return _step("RESIDUAL_ADD", make, steps, found.indices,
                 {found.y_name: found.y, found.x_name: found.x}, at=i)


def _inner_rescale(steps: Steps, i: int, name: str, shape: tuple[int, ...]
                   ) -> tuple[int, str, Slot, dict[str, object]] | None:
    """ADD step i's operand `name` where only it reads it and a signed RESCALE to int32 made
    it from a tensor of `shape`: that RESCALE's step, `name`, its input and known operands."""
    arg = steps.arg(i, name)
    j = steps.made_by.get(arg.index) if isinstance(arg, Slot) else None
    if j is None or len(steps.users(j)) != 1:
        return None
    known, x = _signed_rescale(steps, j, I32), steps.arg(j, "input")
    if known is None or not isinstance(x, Slot) or steps.made_shape(x) != shape:
        return None
    return j, name, x, known


def _tiled_rescale(rescale: dict[str, object] | None, channels: int, width: int) -> Rescale:
    """A RESCALE's known operands as the kernels.Rescale of a row of `width` pixels of
    `channels` (None: the identity on int32)."""
    if rescale is None:
        vectors = (np.zeros(channels, np.int64), np.full(channels, 1 << 30, np.int32),
                   np.full(channels, 30, np.int64))
        bounds = (0, int_min(I32), int_max(I32), False)
    else:
        r = _rescaling(rescale["multiplier"], rescale["shift"], rescale["per_channel"],
                       rescale["rounding_mode"] == DOUBLE_ROUND, np.asarray(rescale["output_zp"]),
                       False)
        zp = int(np.asarray(rescale["input_zp"]).reshape(-1)[0])
        vectors = (np.full(channels, -zp, np.int64), *r.factors(channels))
        bounds = (r.output_zp, r.low, r.high, r.double_round)
    return (*(np.tile(v, width) for v in vectors), *bounds)  # type: ignore[return-value]


def _conv_add(steps: Steps, i: int) -> Found | None:
    """CONV2D or CONV3D -> ADD(that, y), in fp32, y a run-time tensor of its shape made before
    it: a float residual ADD, made inside the convolution's GEMM blocks as each is finished
    (conv._Conv) instead of in a pass of its own; found from the convolution."""
    p = steps.planned[i]
    x = steps.arg(i, "input")
    known = _convolution(steps, i, steps.op(i)) if steps.op(i) in ("CONV2D", "CONV3D") else None
    if known is None:
        return None
    add = steps.then(i, "ADD")
    y = _residual_operand(steps, i, add)
    if y is None:
        return None
    conv = p.opdef.prepare(**known, input=p.node.operands["input"].type)
    if conv is None:
        return None

    def conv_add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return conv(input=x, residual=y)  # type: ignore[no-any-return]
    return _step(f"{steps.op(i)} + ADD", lambda: conv_add, steps, (i, add[0]),  # type: ignore[index]
                 {"input": x, "residual": y}, blas=True)


def _residual_operand(steps: Steps, producer: int, add: tuple[int, str] | None,
                      place: int | None = None) -> Slot | None:
    """The other operand of `add`, an fp32 ADD of step `producer`'s result, where it is a
    run-time tensor of that shape made before step `place` (the producer's unless given: a
    step in its place can read it); else None."""
    y = add and steps.other(*add)
    if not add or not isinstance(y, Slot) or not steps.f32(add[0]) \
            or steps.made_by.get(y.index, -1) >= (producer if place is None else place) \
            or {steps.made_shape(y), steps.shape(add[0])} != {steps.shape(producer)}:
        return None
    return y


class _DepthwiseChain(NamedTuple):
    """DEPTHWISE_CONV2D [-> CLAMP] -> CONV2D 1x1 [-> CLAMP | -> ADD(that, y)] in fp32, as
    _depthwise_chain finds it: its steps, the two convolutions' known operands and CLAMPs, y."""

    indices: set[int]
    depthwise: dict[str, object]
    first: conv.Bounds
    product: dict[str, object]
    then: conv.Bounds
    y: Slot | None

    def form(self, steps: Steps, i: int, expand: tuple[dict[str, object], conv.Bounds] | None
             = None) -> Callable[[], Callable[..., np.ndarray]]:
        """What makes the step's function of the input of step i and y: a conv.DepthwiseConv."""
        shape = tuple(steps.planned[i].node.operands["input"].type.shape)
        return lambda: conv.DepthwiseConv(
            shape, _operands(self.depthwise), self.first, _operands(self.product), self.then,
            expand and (_operands(expand[0]), expand[1]))


def _depthwise_chain(steps: Steps, i: int, place: int) -> _DepthwiseChain | None:
    """DEPTHWISE_CONV2D (step i) [-> CLAMP] -> CONV2D 1x1 [-> CLAMP, or -> ADD(that, y) as
    _conv_add takes it, y made before step `place`], in fp32 (conv.fusable), each
    intermediate read by the next alone."""
    depthwise = _convolution(steps, i, "DEPTHWISE_CONV2D")
    first, after = _clamp_bounds(steps, i) if depthwise is not None else (None, i)
    pointwise = steps.then(after, "CONV2D", ("input",)) if depthwise is not None else None
    j = pointwise[0] if pointwise else -1
    product = _convolution(steps, j, "CONV2D") if pointwise else None
    if product is None or not isinstance(steps.arg(i, "input"), Slot) or not conv.fusable(
            steps.planned[i].node.operands["input"].type, depthwise, product):  # type: ignore[arg-type]
        return None
    then, last = _clamp_bounds(steps, j)
    add = steps.then(j, "ADD") if last == j else None
    y = _residual_operand(steps, j, add, place=place)
    indices = {i, after, j, last} | ({add[0]} if y else set())  # type: ignore[index]
    return _DepthwiseChain(indices, depthwise, first, product, then, y)  # type: ignore[arg-type]


def _depthwise_conv(steps: Steps, i: int) -> Found | None:
    """_depthwise_chain from step i: MobileNet's depthwise layer and the projection after it,
    as one compiled call (conv.DepthwiseConv) whose depthwise result is made a band of rows at
    a time and multiplied while in cache, never whole; one step where there were two."""
    chain = _depthwise_chain(steps, i, i)
    if chain is None:
        return None
    return _step("DEPTHWISE_CONV2D + CONV2D", chain.form(steps, i), steps, sorted(chain.indices),
                 _sources(steps.arg(i, "input"), chain.y), blas=True)  # type: ignore[arg-type]


def _expanded_depthwise_conv(steps: Steps, i: int) -> Found | None:
    """CONV2D 1x1 (step i, conv.expandable) [-> CLAMP] -> _depthwise_chain, in fp32, each
    intermediate read by the next alone: MobileNetV2's expansion, depthwise layer and
    projection as one compiled call (conv.DepthwiseConv's `expand`); one step where there
    were three."""
    expansion = _convolution(steps, i, "CONV2D")
    x = steps.arg(i, "input")
    if expansion is None or not isinstance(x, Slot) or not conv.expandable(
            steps.planned[i].node.operands["input"].type, expansion):  # type: ignore[arg-type]
        return None
    bounds, after = _clamp_bounds(steps, i)
    depthwise = steps.then(after, "DEPTHWISE_CONV2D", ("input",))
    chain = depthwise and _depthwise_chain(steps, depthwise[0], i)
    if not chain:
        return None
    return _step("CONV2D + DEPTHWISE_CONV2D + CONV2D", chain.form(steps, i, (expansion, bounds)),
                 steps, sorted(chain.indices | {i, after}), _sources(x, chain.y), at=i, blas=True)


class _Int8Chain(NamedTuple):
    """DEPTHWISE_CONV2D -> RESCALE -> CONV2D 1x1 -> RESCALE [-> a quantized residual ADD] in
    int8, as _int8_chain finds it: its steps, the convolutions' known operands, their
    RESCALEs' accumulator forms, the residual ADD."""

    indices: set[int]
    depthwise: dict[str, object]
    first: object
    product: dict[str, object]
    then: object
    columns: int
    added: _QuantizedAdd | None

    def form(self, steps: Steps, i: int, expand: tuple[dict[str, object], object] | None = None
             ) -> Callable[[], Callable[..., np.ndarray]]:
        """As _DepthwiseChain.form, a conv.DepthwiseConvInt8."""
        shape = tuple(steps.planned[i].node.operands["input"].type.shape)
        return lambda: conv.DepthwiseConvInt8(
            shape, _operands(self.depthwise), self.first, _operands(self.product), self.then,
            self.added and self.added.rescales(self.columns, 1),
            expand and (_operands(expand[0]), expand[1]))

    @property
    def y(self) -> Slot | None:
        return None if self.added is None else self.added.y


def _operands(known: dict[str, object]) -> dict[str, object]:
    """A convolution's known operands that its forms take (_CONV_OPERANDS)."""
    return {k: known[k] for k in _CONV_OPERANDS}


def _sources(x: Slot, y: Slot | None) -> dict[str, Slot]:
    """A depthwise + 1x1 step's run-time operands, by the names its function takes."""
    return {"input": x} if y is None else {"input": x, "residual": y}


def _int8_chain(steps: Steps, i: int, place: int) -> _Int8Chain | None:
    """DEPTHWISE_CONV2D (step i) -> RESCALE to int8 -> CONV2D 1x1 -> RESCALE to int8 [-> a
    quantized residual ADD as _int8_residual takes it, y made before step `place`], each read
    by the next alone, where conv.fusable says."""
    depthwise = _convolution(steps, i, "DEPTHWISE_CONV2D", I32)
    first = _int8_rescale(steps, i) if depthwise is not None else None
    pointwise = steps.then(first[1], "CONV2D", ("input",)) if first else None
    product = _convolution(steps, pointwise[0], "CONV2D", I32) if pointwise else None
    then = _int8_rescale(steps, pointwise[0]) if product is not None else None  # type: ignore[index]
    if then is None or not isinstance(steps.arg(i, "input"), Slot) or not conv.fusable(
            steps.planned[i].node.operands["input"].type, depthwise, product):  # type: ignore[arg-type]
        return None
    added = _int8_residual(steps, then[1], place)
    indices = {i, first[1], pointwise[0], then[1], *(added.indices if added else ())}  # type: ignore[index]
    return _Int8Chain(indices, depthwise, first[0], product, then[0],  # type: ignore[arg-type, index]
                      steps.shape(then[1])[-1], added)


def _int8_depthwise_conv(steps: Steps, i: int) -> Found | None:
    """_int8_chain from step i: _depthwise_conv's step for int8 models
    (conv.DepthwiseConvInt8), bit-exact."""
    chain = _int8_chain(steps, i, i)
    if chain is None:
        return None
    return _step("DEPTHWISE_CONV2D + CONV2D", chain.form(steps, i), steps, sorted(chain.indices),
                 _sources(steps.arg(i, "input"), chain.y), at=i, blas=True)  # type: ignore[arg-type]


def _int8_expanded_depthwise_conv(steps: Steps, i: int) -> Found | None:
    """CONV2D 1x1 (step i, conv.expandable) -> RESCALE to int8 -> _int8_chain, each read by the
    next alone: _expanded_depthwise_conv's step for int8 models, bit-exact."""
    expansion = _convolution(steps, i, "CONV2D", I32)
    x = steps.arg(i, "input")
    if expansion is None or not isinstance(x, Slot) or not conv.expandable(
            steps.planned[i].node.operands["input"].type, expansion):  # type: ignore[arg-type]
        return None
    rescale = _int8_rescale(steps, i)
    depthwise = steps.then(rescale[1], "DEPTHWISE_CONV2D", ("input",)) if rescale else None
    chain = depthwise and _int8_chain(steps, depthwise[0], i)
    if not chain:
        return None
    return _step("CONV2D + DEPTHWISE_CONV2D + CONV2D", chain.form(steps, i, (expansion, rescale[0])),  # type: ignore[index]
                 steps, sorted(chain.indices | {i, rescale[1]}), _sources(x, chain.y), at=i,  # type: ignore[index]
                 blas=True)


def _int8_residual(steps: Steps, producer: int, place: int) -> _QuantizedAdd | None:
    """The quantized residual ADD (_quantized_add) whose x is step `producer`'s int8 result,
    where its y is an int8 tensor made before step `place`, rescaled once or twice, and its
    result int8."""
    rescale = steps.then(producer, "RESCALE", ("input",))
    add = rescale and steps.then(rescale[0], "ADD")
    found = add and _quantized_add(steps, *add)  # type: ignore[misc]
    if not found:
        return None
    source = found.y_step if found.y_first_step is None else found.y_first_step
    if source is None or steps.planned[source].node.operands["input"].type.dtype != I8 \
            or np.asarray(found.outer["output_zp"]).dtype != I8 \
            or steps.made_by.get(found.y.index, -1) >= place:
        return None
    return found


_CONV_OPERANDS = ("weight", "bias", "input_zp", "weight_zp", "pad", "stride", "dilation")
"""A convolution's operands its forms (conv._Depthwise, _Conv) take, but its input."""


def _int8_rescale(steps: Steps, i: int) -> tuple[object, int] | None:
    """The RESCALE that alone reads step i's int32 result and makes int8, all its operands
    but its input known, where the table fuses it (`bandwise`): its accumulator form
    (rescale.py) and its step."""
    return _accumulated(steps, i, "RESCALE", I8)


def _accumulated(steps: Steps, i: int, op: str, dtype: np.dtype = F32) -> tuple[object, int] | None:
    """The `op` making `dtype` that alone reads step i's result, all its operands but its
    input known, where the table fuses it (`bandwise`): its accumulator form and its step."""
    after = steps.then(i, op, ("input",))
    known = _known_but_input(steps, after[0], op, dtype) if after else None
    opdef = steps.planned[after[0]].opdef if after else None  # type: ignore[index]
    if known is None or not opdef.bandwise or opdef.from_accumulator is None:  # type: ignore[union-attr]
        return None
    return opdef.from_accumulator(**known), after[0]  # type: ignore[union-attr, index]


def _known_but_input(steps: Steps, i: int, op: str, dtype: np.dtype = F32) -> dict[str, object] | None:
    """Step i's operands but its input, where it is `op` making `dtype` and they are all
    known."""
    p = steps.planned[i]
    known = {name: arg.value for name, arg in p.args.items() if isinstance(arg, Known)}
    result = p.node.result_type
    if steps.op(i) != op or isinstance(result, tuple) or result.dtype != dtype \
            or len(known) != len(p.args) - 1 or not isinstance(steps.arg(i, "input"), Slot):
        return None
    return known


def _convolution(steps: Steps, i: int, op: str, dtype: np.dtype = F32) -> dict[str, object] | None:
    """_known_but_input of a convolution with a plan-time form (in a table without them, as
    every op is called as it is, so is a pattern of them)."""
    known = _known_but_input(steps, i, op, dtype)
    return None if known is None or steps.planned[i].opdef.prepare is None else known


def _clamp_bounds(steps: Steps, i: int) -> tuple[conv.Bounds, int]:
    """The CLAMP that alone reads step i's result, as a float convolution's finish takes it
    (its accumulator form's bounds), and its step, where the table fuses it (`bandwise`);
    else no clamp, and step i."""
    clamp = _accumulated(steps, i, "CLAMP")
    if clamp is None:
        return (-np.inf, np.inf, False), i
    return clamp[0].bounds, clamp[1]  # type: ignore[attr-defined]


def _matmul_add(steps: Steps, i: int) -> Found | None:
    """MATMUL [1, H, C] @ constant [1, C, W] -> ADD of a bias per column -> ADD(that, y), in
    fp32, y as _conv_add takes it: a transformer's projection and its residual, made as one
    GEMM whose blocks get the bias, then y, as each is finished (kernels.split_gemm; on the
    FMA tiles where kernels.tile_weight lays the weight out for them)."""
    p = steps.planned[i]
    a, b = steps.arg(i, "A"), steps.arg(i, "B")
    if steps.op(i) != "MATMUL" or not steps.f32(i) or not isinstance(a, Slot) \
            or not isinstance(b, Known) or np.asarray(b.value).dtype != F32 \
            or p.node.operands["A"].type.dtype != F32 or steps.shape(i)[0] != 1:
        return None
    plus = steps.then(i, "ADD")
    bias = plus and per_column(steps.other(*plus), steps.shape(i)[-1])
    add = steps.then(plus[0], "ADD") if bias is not None else None
    y = _residual_operand(steps, i, add)
    if y is None:
        return None
    matrix = tile_weight(np.asarray(b.value)[0])

    def matmul_add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return biased_product(x, matrix, bias, y)
    return _step("MATMUL + ADD + ADD", lambda: matmul_add, steps, (i, plus[0], add[0]),  # type: ignore[index]
                 {"A": a, "residual": y}, blas=True)


PATTERNS = (_softmax, _layer_norm, _gelu, _residual, _expanded_depthwise_conv, _depthwise_conv,
            _int8_expanded_depthwise_conv, _int8_depthwise_conv, _conv_add, _matmul_add)
"""Each pattern's matcher: (steps, the index of its first step's candidate) -> Found or None."""


def find(steps: Steps) -> list[Found]:
    """Every pattern found among the steps, none sharing a step."""
    found: list[Found] = []
    taken: set[int] = set()
    for i in range(len(steps.planned)):
        for match in PATTERNS:
            hit = match(steps, i)
            if hit is not None and not taken & set(hit.steps):
                found.append(hit)
                taken.update(hit.steps)
                break
    return found

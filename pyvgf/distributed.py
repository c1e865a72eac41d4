"""Scale-out on Ray: a model over a whole dataset, and differential campaigns over many workers.

    from pyvgf.distributed import evaluate, campaign
    print(evaluate("model.vgf", images, references=float_outputs, workers=2))
    print(campaign(graphs(max_ops=4), ["cpu", "mydriver.tests:run_vgf"], n=10_000, out_dir="repro"))

Both connect to Ray as `ray.init()` does when Ray is not initialised yet: a local instance on a
laptop, or the cluster that RAY_ADDRESS (or an earlier `ray.init(address=...)`) names. Ray
schedules everything; Ray Data's actors restart and retry their batches when a worker dies, and
campaign tasks are retried the same way, so a lost worker neither loses nor repeats results.

Needs the `ray` extra: `pip install 'pyvgf[ray]'`; `campaign` needs hypothesis too (`testing`).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import ray.data
    from hypothesis.strategies import SearchStrategy

    from .testing.case import GraphCase

Backend = str | Callable[[bytes, list[np.ndarray]], Sequence[np.ndarray]]
"""A pyvgf backend name ("cpu", "vulkan"), "package.module:function", or a function
(model bytes, inputs) -> outputs. Names and "module:function" are resolved on each worker."""

CHUNK = 25
"""Cases one campaign task draws and checks: the unit of work Ray schedules and retries."""

_COLUMN = re.compile(r"(input|reference)_(\d+)$")


class Summary(dict):
    """The results of `evaluate` or `campaign`: a dict whose str() is a table."""

    def __str__(self) -> str:
        return self["table"]


# --------------------------------------------------------------------------------------------
# Ray and backends


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise ImportError("pyvgf.distributed needs Ray: pip install 'pyvgf[ray]'") from exc
    if not ray.is_initialized():
        ray.init()
    return ray


def _resolve(backend: Backend) -> Callable[[bytes, list[np.ndarray]], Sequence[np.ndarray]]:
    """The function behind a backend spec (see `Backend`); raises ValueError naming a bad one."""
    if callable(backend):
        return backend
    if not isinstance(backend, str):
        raise TypeError(f"backend {backend!r}: expected a name, 'module:function' or a function")
    if ":" in backend:
        module_name, _, attr = backend.partition(":")
        try:
            target: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"backend {backend!r} cannot be imported: {exc}") from exc
        if not callable(target):
            raise ValueError(f"backend {backend!r} is not a function")
        return target
    from .hal import backends

    if backend not in backends():
        raise ValueError(f"unknown backend {backend!r}; known: {', '.join(backends())}, or 'module:function'")

    def run(model: bytes, inputs: list[np.ndarray]) -> Sequence[np.ndarray]:
        import pyvgf

        with pyvgf.load(model, backend=backend) as loaded:
            return loaded.run(inputs)

    run.__name__ = backend
    return run


def _label(backend: Backend) -> str:
    if isinstance(backend, str):
        return backend
    return f"{getattr(backend, '__module__', '?')}:{getattr(backend, '__qualname__', repr(backend))}"


def _share_cores() -> None:
    """numba's threads (the fast cpu executor's loops) only on the CPUs Ray gave this worker."""
    import ray

    try:
        import numba
    except ImportError:  # no `fast` extra: the reference executor, one thread
        return

    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
    numba.set_num_threads(max(1, min(int(cpus), numba.config.NUMBA_NUM_THREADS)))


def _workers(ray: Any, workers: int | None) -> int:
    if workers is None:
        return max(1, int(ray.cluster_resources().get("CPU", 1)))
    if workers < 1:
        raise ValueError(f"workers must be 1 or more, got {workers}")
    return workers


def _table(title: str, header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = [title, "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# evaluate


class _Evaluator:
    """The Ray Data callable class: loads the model once per actor, runs each row of a batch."""

    def __init__(self, model: bytes, backend: Backend):
        _share_cores()
        if isinstance(backend, str) and ":" not in backend:
            import pyvgf

            self._run = pyvgf.load(model, backend=backend).run
        else:
            function = _resolve(backend)
            self._run = lambda inputs: function(model, inputs)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        _share_cores()
        columns: dict[str, list[str]] = {"input": [], "reference": []}
        for name in sorted(batch, key=lambda c: (len(c), c)):
            match = _COLUMN.match(name)
            if match:
                columns[match[1]].append(name)
        rows = len(next(iter(batch.values())))
        result: dict[str, np.ndarray] = {"row": np.asarray(batch["row"]) if "row" in batch else np.full(rows, -1)}
        for r in range(rows):
            outputs = self._run([np.asarray(batch[c][r]) for c in columns["input"]])
            if len(columns["reference"]) not in (0, len(outputs)):
                raise ValueError(f"{len(columns['reference'])} references for a model of {len(outputs)} outputs")
            for k, column in enumerate(columns["reference"]):
                got = np.asarray(outputs[k]).astype(np.float64)
                want = np.asarray(batch[column][r]).astype(np.float64)
                if got.shape != want.shape:
                    raise ValueError(f"output {k}: shape {list(got.shape)}, reference {list(want.shape)}")
                error = result.setdefault(f"max_abs_error_{k}", np.zeros(rows))
                error[r] = np.abs(got - want).max(initial=0.0)
                vector = got.squeeze().ndim == 1
                top1 = result.setdefault(f"top1_{k}", np.full(rows, -1, np.int8))
                top1[r] = int(got.argmax() == want.argmax()) if vector else -1
        return result


def _dataset_from(inputs: Iterable[Sequence[np.ndarray] | np.ndarray],
                  references: Iterable[Sequence[np.ndarray] | np.ndarray] | None) -> ray.data.Dataset:
    import ray.data

    def arrays(item: object, what: str, row: int) -> list[np.ndarray]:
        if isinstance(item, np.ndarray):
            return [item]
        if isinstance(item, (str, bytes, Mapping)) or not isinstance(item, Sequence):
            raise TypeError(f"{what} row {row}: expected a list of arrays, got {type(item).__name__}")
        return [np.asarray(a) for a in item]

    expected = iter(references) if references is not None else None
    rows = []
    for i, item in enumerate(inputs):
        row: dict[str, object] = {"row": i}
        row.update({f"input_{k}": a for k, a in enumerate(arrays(item, "inputs", i))})
        if expected is not None:
            ref = next(expected, None)
            if ref is None:
                raise ValueError(f"references: {i} rows, fewer than the inputs")
            row.update({f"reference_{k}": a for k, a in enumerate(arrays(ref, "references", i))})
        rows.append(row)
    if expected is not None and next(expected, None) is not None:
        raise ValueError(f"references: more rows than the {len(rows)} inputs")
    if not rows:
        raise ValueError("inputs: no rows")
    return ray.data.from_items(rows)


def evaluate(model: str | os.PathLike | bytes, inputs: ray.data.Dataset | Iterable[Sequence[np.ndarray]],
             references: Iterable[Sequence[np.ndarray]] | None = None, *,
             backend: Backend = "cpu", workers: int | None = None, batch_size: int = 8,
             ray_options: Mapping[str, Any] | None = None) -> Summary:
    """Run `model` (a .vgf or .pte path, or its bytes) over every row of `inputs` on Ray workers.

    `inputs` is an iterable of input lists (one array per model input) and `references` one of
    expected output lists, row for row; or `inputs` is a Ray Dataset with columns `input_0`,
    `input_1`, ... and, for references, `reference_0`, ... (`references` stays None). Each of `workers` Ray Data
    actors (default: one per CPU of the cluster, autoscaled) loads the model once with `backend`
    and runs the rows of its batches. `ray_options` go to `map_batches` (e.g. `num_gpus=1`).

    Returns a `Summary` with `rows`, `seconds`, `rows_per_second`, `start_seconds` (until the
    first results came back: the actors starting and loading the model), `steady_rows_per_second`
    (the rate after that; None when all came at once) and, with references,
    per-output lists `max_abs_error` and `top1_agreement` (the fraction of rows whose argmax
    matches; None for outputs that are not vectors). Its str() is a table.
    """
    ray = _ray()
    data = model if isinstance(model, bytes) else Path(model).read_bytes()
    if isinstance(backend, str):
        _resolve(backend)
    if isinstance(inputs, ray.data.Dataset):
        if references is not None:
            raise ValueError("references: with a Dataset of inputs, give them as its columns reference_0, ...")
    else:
        inputs = _dataset_from(inputs, references)
    if workers is None:
        compute = ray.data.ActorPoolStrategy(min_size=1, max_size=_workers(ray, None))
    else:
        compute = ray.data.ActorPoolStrategy(size=_workers(ray, workers))
    start = time.perf_counter()
    results = inputs.map_batches(_Evaluator, fn_constructor_kwargs={"model": data, "backend": backend},
                                 batch_size=batch_size, batch_format="numpy", compute=compute,
                                 **({"num_cpus": 1} | dict(ray_options or {})))
    rows, seen, errors, agree, first = 0, [], {}, {}, None
    for batch in results.iter_batches(batch_size=None, batch_format="numpy"):
        if first is None:
            first = (time.perf_counter() - start, len(batch["row"]))
        rows += len(batch["row"])
        seen.append(batch["row"])
        for name, values in batch.items():
            if name.startswith("max_abs_error_"):
                k = int(name.rsplit("_", 1)[1])
                errors[k] = max(errors.get(k, 0.0), float(values.max(initial=0.0)))
            elif name.startswith("top1_"):
                k = int(name.rsplit("_", 1)[1])
                hits, vectors = agree.get(k, (0, 0))
                agree[k] = (hits + int((values == 1).sum()), vectors + int((values >= 0).sum()))
    seconds = time.perf_counter() - start
    ids = np.concatenate(seen) if seen else np.zeros(0, np.int64)
    if ids.size and ids.min() >= 0 and not np.array_equal(np.sort(ids), np.arange(rows)):
        raise RuntimeError(f"evaluate: {rows} results are not each input row once")
    summary = Summary(rows=rows, seconds=seconds, rows_per_second=rows / seconds if seconds else float("inf"),
                      start_seconds=first[0] if first else seconds, steady_rows_per_second=None,
                      backend=_label(backend), workers=workers or "autoscaled")
    if first and rows > first[1] and seconds > first[0]:
        summary["steady_rows_per_second"] = (rows - first[1]) / (seconds - first[0])
    if errors:
        summary["max_abs_error"] = [errors[k] for k in sorted(errors)]
        summary["top1_agreement"] = [agree[k][0] / agree[k][1] if agree[k][1] else None for k in sorted(agree)]
    steady = summary["steady_rows_per_second"]
    title = (f"pyvgf evaluate: {rows} rows on {summary['backend']}, {summary['workers']} workers, "
             f"{seconds:.1f} s ({summary['start_seconds']:.1f} s to the first result, then "
             f"{'-' if steady is None else f'{steady:.1f}'} rows/s)")
    table_rows = [(k, f"{e:.6g}", "-" if a is None else f"{a:.4f}")
                  for k, (e, a) in enumerate(zip(summary.get("max_abs_error", []), summary.get("top1_agreement", [])))]
    summary["table"] = _table(title, ("output", "max_abs_error", "top1_agreement"), table_rows)
    return summary


# --------------------------------------------------------------------------------------------
# campaign


def _seed(*parts: int) -> int:
    return int(np.random.SeedSequence(list(parts)).generate_state(1)[0])


def draw(strategy: SearchStrategy[GraphCase], seed: int, chunk: int, size: int = CHUNK) -> list[GraphCase]:
    """The cases of one campaign chunk: the same every time for the same arguments (and the same
    hypothesis version). Every hypothesis run starts with its simplest example; only chunk 0
    keeps it, so a campaign does not check that one case once per chunk."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    cases: list[GraphCase] = []
    skip = 0 if chunk == 0 else 1

    @settings(max_examples=size + skip, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @hypothesis_seed(_seed(seed, chunk))
    @given(strategy)
    def collect(case: GraphCase) -> None:
        cases.append(case)

    collect()
    return cases[skip:size + skip]


def _save_arrays(folder: Path, arrays: Sequence[np.ndarray], stem: str) -> list[str]:
    folder.mkdir(parents=True)
    dtypes = []
    for i, array in enumerate(arrays):
        array = np.asarray(array)
        dtypes.append(str(array.dtype))
        np.save(folder / f"{stem}_{i}.npy",
                array.view(f"<u{array.dtype.itemsize}") if array.dtype.kind == "V" else array)
    return dtypes


def read_reproducer(folder: str | os.PathLike) -> dict[str, Any]:
    """A campaign's reproducer folder as Python objects: `model` (VGF bytes), `mlir`, `inputs`
    (arrays of the drawn dtypes, bfloat16 and fp8 included), `outputs` ({backend: arrays}, for
    each backend that returned) and `record` (failure.json: seeds, case, message)."""
    import ml_dtypes  # noqa: F401  (registers the dtype names that failure.json uses)

    folder = Path(folder)
    record = json.loads((folder / "failure.json").read_text())

    def arrays(where: Path, stem: str, dtypes: list[str]) -> list[np.ndarray]:
        return [_typed(np.load(where / f"{stem}_{i}.npy"), dtype) for i, dtype in enumerate(dtypes)]

    outputs = {label: arrays(folder / "outputs" / _safe(label), "output", dtypes)
               for label, dtypes in record["output_dtypes"].items()}
    return {"model": (folder / "model.vgf").read_bytes(), "mlir": (folder / "model.mlir").read_text(),
            "inputs": arrays(folder / "inputs", "input", record["input_dtypes"]), "outputs": outputs,
            "record": record}


def _typed(array: np.ndarray, dtype: str) -> np.ndarray:
    wanted = np.dtype(dtype)
    return array.view(wanted) if wanted.kind == "V" else array


def _safe(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", label)


def _bisect(model: bytes, inputs: list[np.ndarray], backends: Sequence[Backend]) -> tuple[str, dict[str, bytes]] | None:
    """`pyvgf.testing.bisect` of the reference against each other backend in turn: the first
    operator a pair disagrees on, as text, and the files of its one-operator reproducer (None
    when no pair disagrees on the outputs, e.g. when a backend raised)."""
    from .testing.bisection import bisect

    pair = [b if isinstance(b, str) and ":" not in b else _resolve(b) for b in backends]
    with tempfile.TemporaryDirectory(prefix="pyvgf-bisect-") as tmp:
        for other in pair[1:]:
            try:
                culprit = bisect(model, inputs, (pair[0], other), out=tmp)
            except Exception as exc:  # noqa: BLE001 - the failure stands without its bisection
                return f"bisect failed: {type(exc).__name__}: {exc}", {}
            if culprit is not None:
                files = {str(p.relative_to(tmp)): p.read_bytes() for p in Path(tmp).rglob("*") if p.is_file()}
                return str(culprit).replace(tmp, "bisect"), files
    return None


def _check(case: GraphCase, backends: Sequence[Backend], seed: int, chunk: int, index: int) -> dict | None:
    """Run one case on every backend; on a disagreement or a backend's error, what its
    reproducer folder will hold (the driver writes it: workers need no shared disk)."""
    from .testing import assert_backends_agree

    input_seed = _seed(seed, chunk, index)
    inputs = case.random_inputs(input_seed)
    model = case.to_vgf()
    labels = [_label(b) for b in backends]
    outputs: dict[str, list[np.ndarray]] = {}

    def recording(label: str, function: Callable) -> Callable:
        def run(vgf: bytes, arrays: list[np.ndarray]) -> Sequence[np.ndarray]:
            outputs[label] = [np.asarray(o) for o in function(vgf, arrays)]
            return outputs[label]
        run.__name__ = label
        return run

    try:
        assert_backends_agree(model, inputs, [recording(lab, _resolve(b)) for lab, b in zip(labels, backends)])
        return None
    except Exception as exc:  # noqa: BLE001 - a backend's error is a finding, kept in the reproducer
        message = f"{type(exc).__name__}: {exc}"
    found = _bisect(model, inputs, backends)
    record = {"case": f"case-{chunk:05d}-{index:03d}", "seed": seed, "chunk": chunk, "index": index,
              "input_seed": input_seed, "chunk_size": CHUNK, "description": case.description,
              "backends": labels, "message": message, "bisect": None if found is None else found[0]}
    return {"record": record, "model": model, "mlir": case.to_mlir(), "inputs": inputs, "outputs": outputs,
            "bisect_files": {} if found is None else found[1]}


def _write(out_dir: Path, failure: dict) -> str:
    """A reproducer folder: model.vgf, model.mlir, inputs/, outputs/<backend>/, failure.json
    (and bisect/: `pyvgf.testing.bisect`'s one-operator reproducer of the first disagreeing op);
    written under a temporary name and renamed, so a folder is there whole or not at all."""
    record = dict(failure["record"])
    final = out_dir / record["case"]
    partial = out_dir / f".{record['case']}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        record["input_dtypes"] = _save_arrays(partial / "inputs", failure["inputs"], "input")
        record["output_dtypes"] = {label: _save_arrays(partial / "outputs" / _safe(label), arrays, "output")
                                   for label, arrays in failure["outputs"].items()}
        (partial / "model.vgf").write_bytes(failure["model"])
        (partial / "model.mlir").write_text(failure["mlir"])
        for name, data in failure["bisect_files"].items():
            (partial / "bisect" / name).parent.mkdir(parents=True, exist_ok=True)
            (partial / "bisect" / name).write_bytes(data)
        (partial / "failure.json").write_text(json.dumps(record, indent=2) + "\n")
        shutil.rmtree(final, ignore_errors=True)
        partial.rename(final)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return str(final)


def _chunk(strategy: SearchStrategy[GraphCase], backends: Sequence[Backend], seed: int, chunk: int,
           size: int, budget: int) -> dict[str, Any]:
    """Draw a chunk's cases and check them, stopping after `budget` failures."""
    failures, cases = [], 0
    for index, case in enumerate(draw(strategy, seed, chunk, size)):
        cases += 1
        found = _check(case, backends, seed, chunk, index)
        if found:
            failures.append(found)
            if len(failures) >= budget:
                break
    return {"chunk": chunk, "cases": cases, "failures": failures}


def _chunk_task(*args: Any) -> dict[str, Any]:
    """One Ray task: `_chunk` on the CPUs Ray gave it."""
    _share_cores()
    return _chunk(*args)


def campaign(strategy: SearchStrategy[GraphCase], backends: Sequence[Backend], *, n: int, seed: int = 0,
             workers: int | None = None, out_dir: str | os.PathLike, max_failures: int = 10,
             progress: bool = True, ray_options: Mapping[str, Any] | None = None) -> Summary:
    """Check `n` cases drawn from a `pyvgf.testing` strategy on `backends` over Ray tasks.

    The first backend is the reference (`pyvgf.testing.assert_backends_agree`'s rules). Cases
    are drawn in chunks of `CHUNK`, chunk c from hypothesis seeded by (seed, c) (`draw`), so a
    campaign draws the same cases whatever the number of workers. Every disagreement or backend
    error leaves a reproducer folder under `out_dir`, written by this process (workers on other
    machines send theirs back), see `read_reproducer`. At most `workers` tasks (default: one
    per CPU of the cluster) run at once; `ray_options` go to each task (e.g. `num_gpus=1`, or
    a custom resource naming a device). The campaign stops once `max_failures` are found
    (tasks still running are cancelled) and keeps that many.

    Returns a `Summary` with `cases` (the number checked) and `failures` (the reproducer
    folders, sorted); its str() is a table.
    """
    for backend in backends:
        _resolve(backend)
    if len(backends) < 2:
        raise ValueError("campaign needs at least two backends")
    if n < 1 or max_failures < 1:
        raise ValueError(f"n and max_failures must be 1 or more, got {n} and {max_failures}")
    ray = _ray()
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    task = ray.remote(_chunk_task).options(**({"num_cpus": 1, "max_retries": 3} | dict(ray_options or {})))
    strategy_ref = ray.put(strategy)
    limit = _workers(ray, workers)
    chunks = [(c, min(CHUNK, n - c * CHUNK)) for c in range(-(-n // CHUNK))]
    pending: dict[Any, int] = {}
    cases, failures, start = 0, [], time.perf_counter()
    from tqdm.auto import tqdm

    with tqdm(total=n, unit="case", desc="pyvgf campaign", disable=not progress) as bar:
        while chunks or pending:
            while chunks and len(pending) < limit:
                c, size = chunks.pop(0)
                pending[task.remote(strategy_ref, list(backends), seed, c, size, max_failures - len(failures))] = c
            done, _ = ray.wait(list(pending), num_returns=1)
            pending.pop(done[0])
            result = ray.get(done[0])
            cases += result["cases"]
            failures += [_write(out, failure) for failure in result["failures"][:max_failures - len(failures)]]
            bar.update(result["cases"])
            bar.set_postfix(failures=len(failures))
            if len(failures) >= max_failures:
                for ref in pending:
                    ray.cancel(ref)
                break
    seconds = time.perf_counter() - start
    failures.sort()
    summary = Summary(cases=cases, failures=failures, seconds=seconds, seed=seed,
                      backends=[_label(b) for b in backends], stopped_early=cases < n)
    title = (f"pyvgf campaign: {cases} of {n} cases (seed {seed}) on {', '.join(summary['backends'])}: "
             f"{len(failures)} failures in {seconds:.1f} s" + (" (stopped at max_failures)" if cases < n else ""))
    rows = []
    for folder in failures:
        record = json.loads((Path(folder) / "failure.json").read_text())
        rows.append((record["case"], record["description"], record["message"].splitlines()[0][:100], folder))
    summary["table"] = _table(title, ("case", "drawn", "failure", "reproducer"), rows)
    return summary

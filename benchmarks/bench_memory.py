"""Peak memory of the commands that grow with the run: the JSON report and the embedder.

Run: ``.venv/bin/python benchmarks/bench_memory.py [report|embedder|onnx] [--rows N]``

* ``report``: ``evalframe run DATA --outputs OUT -m exact-match -m contains -m rouge-l -m
  levenshtein --format json --out report.json`` over N rows (default 1,000,000) of
  English-like text (references of 10-60 words, noisy paraphrases as outputs), as one
  process under ``/usr/bin/time -v``: its wall time and peak resident set (the whole command:
  reading, scoring, the report).
* ``embedder``: ``cosine-embedding`` over N rows (default 200,000) with the embedded model,
  in one process: texts embedded per second and the peak resident set, against its size
  after loading the model; ``--rows`` twice as many shows whether memory grows with the rows
  (``--short``: texts of four words, so that many rows take minutes, not hours;
  ``--random``: random unit vectors in the model's place, so memory per row shows in
  seconds; ``--distinct K``: the rows repeat K pairs of texts, so the rows grow and the
  distinct texts do not).
* ``onnx``: the same model in a plain onnxruntime loop (batches of 32 tokenised texts of
  similar length, mean pooling, no evalframe): the model's own rate on this machine, the
  ceiling for ``embedder``.

Files are written to a temporary directory and removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, text_pairs

ROOT = Path(__file__).resolve().parent.parent


def write_inputs(folder: Path, rows: int) -> tuple[Path, Path]:
    refs, cands = text_pairs(rows, seed=11)
    data, outputs = folder / "data.jsonl", folder / "outputs.jsonl"
    with data.open("w") as d, outputs.open("w") as o:
        for i in range(rows):
            sid = f"s{i}"
            tags = [f"topic-{i % 7}"] if i % 5 else []
            d.write(
                json.dumps(
                    {"id": sid, "input": {"question": f"q{i}"}, "expected_output": refs[i],
                     "metadata": {"tags": tags}}
                ) + "\n"
            )  # fmt: skip
            o.write(json.dumps({"id": sid, "actual_output": cands[i] if i % 10 else refs[i]}))
            o.write("\n")
    return data, outputs


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Wall seconds and peak RSS (GB) of a command, under ``/usr/bin/time -v``; its stderr."""
    start = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-v", *argv], capture_output=True, text=True, env=env, check=False
    )
    wall = time.perf_counter() - start
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    if done.returncode not in (0, 1) or peak is None:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return wall, int(peak.group(1)) / 1024**2, done.stderr


def report(rows: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data, outputs = write_inputs(folder, rows)
        out = folder / "report.json"
        metrics = ["exact-match", "contains", "rouge-l", "levenshtein"]
        argv = [str(Path(sys.executable).parent / "evalframe"), "run", str(data)]
        argv += ["--outputs", str(outputs), "--format", "json", "--out", str(out)]
        for m in metrics:
            argv += ["-m", m]
        wall, peak, _ = timed(argv)
        size = out.stat().st_size
        print(
            f"run --format json --out, {rows:,} rows x {len(metrics)} metrics: {wall:.1f} s, "
            f"peak RSS {peak:.2f} GB, report {size / 1e9:.2f} GB"
        )


EMBED = """
import os, resource, sys, time
import evalframe as ef
rows = int(sys.argv[1])
sys.path.insert(0, sys.argv[2])
from _common import text_pairs
refs, cands = text_pairs(rows, seed=13)
if sys.argv[3] == "short":  # a few word pieces a text: the model's time out of the way
    refs = [f"{i} " + " ".join(t.split()[:3]) for i, t in enumerate(refs)]
    cands = [f"{i} " + " ".join(t.split()[:3]) for i, t in enumerate(cands)]
distinct = int(sys.argv[5])
if distinct:  # the rows repeat the first texts: the distinct texts held fixed
    refs = [refs[i % distinct] for i in range(rows)]
    cands = [cands[i % distinct] for i in range(rows)]
records = [{"id": f"s{i}", "input": {"q": "x"}, "expected_output": refs[i]} for i in range(rows)]
ds = ef.Dataset.from_records(records, name="embed")
outputs = {f"s{i}": cands[i] for i in range(rows)}
providers = ef.Providers(cache=False)
if sys.argv[4] == "random":  # the model left out: what the run keeps per row, in seconds
    import numpy as np
    from evalframe.providers import OnnxEmbedder
    from evalframe.providers._base import Embedded

    class Random(OnnxEmbedder):  # the embedded model's id and shape, random unit vectors
        def embed(self, texts, ledger):  # as the model does: 1,024 texts at a time, float32
            rng, vectors = np.random.default_rng(len(texts)), []
            for start in range(0, len(texts), 1024):
                n = min(1024, len(texts) - start)
                out = rng.standard_normal((n, 384), dtype=np.float32)
                vectors += [v / np.linalg.norm(v) for v in out]  # one array a text
            return Embedded(vectors, [None] * len(texts))

    providers = ef.Providers(embeddings=Random(), cache=False)
warm = ef.Dataset.from_records(
    [{"id": "w", "input": {"q": "x"}, "expected_output": "a b"}], name="w"
)
ef.evaluate(warm, outputs={"w": "a c"}, metrics=["cosine-embedding"], providers=providers)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
start = time.perf_counter()
run = ef.evaluate(ds, outputs=outputs, metrics=["cosine-embedding"], providers=providers)
wall = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
texts = len(set(refs) | set(cands))
print(f"{rows} {texts} {wall:.2f} {base:.2f} {peak:.2f}")
"""


def embedder(rows: int, short: bool, random: bool, distinct: int) -> None:
    out = subprocess.run(
        [sys.executable, "-c", EMBED, str(rows), str(Path(__file__).parent),
         "short" if short else "full", "random" if random else "model", str(distinct)],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    n, texts = int(out[0]), int(out[1])
    wall, base, peak = float(out[2]), float(out[3]), float(out[4])
    print(
        f"cosine-embedding, {'random vectors' if random else 'embedded model'}, {n:,} rows "
        f"({texts:,} distinct texts): {wall:.1f} s, "
        f"{texts / wall:,.0f} texts/s; peak RSS {peak:.2f} GB (after loading {base:.2f} GB)"
    )


def onnx(rows: int) -> None:
    """The embedded model's own rate: a plain onnxruntime loop over the same texts."""
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    from evalframe.providers._onnx import _default_model_path

    tok = Tokenizer.from_file(str(ROOT / "evalframe" / "_assets" / "tokenizer.json"))
    tok.enable_truncation(256)  # as the embedder: 256 word pieces, CLS and SEP included
    tok.enable_padding()
    options = ort.SessionOptions()
    options.intra_op_num_threads = min(4, os.cpu_count() or 1)
    session = ort.InferenceSession(
        str(_default_model_path()), options, providers=["CPUExecutionProvider"]
    )
    refs, cands = text_pairs(rows, seed=13)
    texts = sorted(set(refs) | set(cands))
    start = time.perf_counter()
    texts.sort(key=len)  # batches of similar length, as the embedder makes them
    for k in range(0, len(texts), 32):
        enc = tok.encode_batch(texts[k : k + 32])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        names = {i.name for i in session.get_inputs()}
        hidden = session.run(None, {k: v for k, v in feeds.items() if k in names})[0]
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    wall = time.perf_counter() - start
    rate = len(texts) / wall
    print(f"plain onnxruntime loop, {len(texts):,} texts: {wall:.1f} s, {rate:,.0f} texts/s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["report", "embedder", "onnx"])
    parser.add_argument("--rows", type=int, default=0)
    parser.add_argument(
        "--short", action="store_true", help="embedder: texts of a few words (memory per row)"
    )
    parser.add_argument(
        "--random", action="store_true", help="embedder: random vectors in the model's place"
    )
    parser.add_argument(
        "--distinct",
        type=int,
        default=0,
        help="embedder: rows repeat this many pairs of texts (memory per row, texts fixed)",
    )
    args = parser.parse_args()
    print(machine(), f"load {os.getloadavg()[0]:.1f}")
    if args.what == "report":
        report(args.rows or 1_000_000)
    elif args.what == "embedder":
        embedder(args.rows or 200_000, args.short, args.random, args.distinct)
    else:
        onnx(args.rows or 200_000)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

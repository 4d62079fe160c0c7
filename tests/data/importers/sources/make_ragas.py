"""Write a Ragas evaluation dataset with the real ragas, offline."""

import sys
from pathlib import Path

from ragas import EvaluationDataset, SingleTurnSample

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
samples = [
    SingleTurnSample(
        user_input="What is the capital of France?",
        response="The capital of France is Paris.",
        retrieved_contexts=["Paris is the capital and largest city of France."],
        reference_contexts=["Paris is the capital of France."],
        reference="Paris",
    ),
    SingleTurnSample(
        user_input="What is the capital of Germany?",
        response="Munich, I think.",
        retrieved_contexts=["Munich is the capital of Bavaria.", "Berlin is Germany's capital."],
        reference="Berlin",
    ),
]
dataset = EvaluationDataset(samples=samples)
dataset.to_jsonl(str(out / "ragas_capitals.jsonl"))
dataset.to_csv(str(out / "ragas_capitals.csv"))

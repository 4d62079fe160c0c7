"""Write Hugging Face datasets offline, SQuAD-shaped: python hf_driver.py OUT_DIR

- squad_dict/: DatasetDict.save_to_disk with train and validation splits;
- squad_train.parquet, squad_validation.parquet: Dataset.to_parquet of each split;
- squad_validation.jsonl: Dataset.to_json (JSON lines, as the library writes by default);
- squad_validation.json: Dataset.to_json(lines=False).
Answers are nested (answers.text, answers.answer_start), with several acceptable answers
and, as in SQuAD 2.0, an unanswerable question (no answer at all).
"""

import sys
from pathlib import Path

import datasets

out = Path(sys.argv[1])
features = datasets.Features(
    {
        "id": datasets.Value("string"),
        "title": datasets.Value("string"),
        "context": datasets.Value("string"),
        "question": datasets.Value("string"),
        "answers": datasets.Sequence(
            {"text": datasets.Value("string"), "answer_start": datasets.Value("int32")}
        ),
    }
)
context = "Paris is the capital of France. The Seine flows through the city of Paris."
train = datasets.Dataset.from_dict(
    {
        "id": ["t1"],
        "title": ["France"],
        "context": [context],
        "question": ["Which river flows through Paris?"],
        "answers": [{"text": ["The Seine"], "answer_start": [32]}],
    },
    features=features,
)
validation = datasets.Dataset.from_dict(
    {
        "id": ["v1", "v2"],
        "title": ["France", "France"],
        "context": [context, context],
        "question": ["What is the capital of France?", "What is the capital of Spain?"],
        "answers": [
            {"text": ["Paris", "the city of Paris"], "answer_start": [0, 57]},
            {"text": [], "answer_start": []},  # unanswerable, as in SQuAD 2.0
        ],
    },
    features=features,
)
datasets.DatasetDict({"train": train, "validation": validation}).save_to_disk(
    str(out / "squad_dict")
)
train.to_parquet(str(out / "squad_train.parquet"))
validation.to_parquet(str(out / "squad_validation.parquet"))
validation.to_json(str(out / "squad_validation.jsonl"))
validation.to_json(str(out / "squad_validation.json"), lines=False)

"""Write Ragas evaluation datasets and results offline: python ragas_driver.py OUT_DIR

- single_turn.csv / .jsonl: EvaluationDataset.to_csv / to_jsonl, with an empty response;
- multi_turn.jsonl: a MultiTurnSample conversation with a tool call;
- scores.csv: evaluate() with non-LLM metrics, then EvaluationResult.to_pandas().to_csv,
  which carries Ragas' own score columns;
- v01_columns.csv: the Ragas 0.1 column names (question, answer, contexts, ground_truth)
  as a pandas to_csv writes them (list columns as Python list text), with an empty list.
"""

import sys
from pathlib import Path

import pandas as pd
from ragas import EvaluationDataset, MultiTurnSample, SingleTurnSample, evaluate
from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from ragas.metrics import ExactMatch, NonLLMStringSimilarity, StringPresence

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
single = EvaluationDataset(
    samples=[
        SingleTurnSample(
            user_input="What is the capital of France?",
            response="The capital of France is Paris.",
            retrieved_contexts=[
                "Paris is the capital and largest city of France.",
                "France's capital hosts the Louvre, 'the world's most-visited museum'.",
            ],
            reference_contexts=["Paris is the capital of France."],
            reference="Paris",
        ),
        SingleTurnSample(
            user_input="What is the capital of Germany?",
            response="",  # the system answered nothing
            retrieved_contexts=["Munich is the capital of Bavaria."],
            reference="Berlin",
        ),
        SingleTurnSample(
            user_input="What is the capital of Italy?",
            response="Rome",
            retrieved_contexts=[],
            reference="Rome",
        ),
    ]
)
single.to_csv(str(out / "single_turn.csv"))
single.to_jsonl(str(out / "single_turn.jsonl"))

multi = EvaluationDataset(
    samples=[
        MultiTurnSample(
            user_input=[
                HumanMessage(content="What's the weather in Paris?"),
                AIMessage(
                    content="Let me check.",
                    tool_calls=[ToolCall(name="weather", args={"city": "Paris"})],
                ),
                ToolMessage(content="18 C, sunny"),
                AIMessage(content="It is 18 C and sunny in Paris."),
            ],
            reference="The weather in Paris is 18 C and sunny.",
            reference_tool_calls=[ToolCall(name="weather", args={"city": "Paris"})],
        )
    ]
)
multi.to_jsonl(str(out / "multi_turn.jsonl"))

result = evaluate(
    single, metrics=[ExactMatch(), StringPresence(), NonLLMStringSimilarity()], show_progress=False
)
result.to_pandas().to_csv(out / "scores.csv", index=False)

pd.DataFrame(
    {
        "question": ["What is the capital of France?", "What is the capital of Spain?"],
        "answer": ["Paris", "Madrid"],
        "contexts": [
            ["Paris is the capital of France.", 'France\'s capital is "Paris".'],
            [],
        ],
        "ground_truth": ["Paris", "Madrid"],
    }
).to_csv(out / "v01_columns.csv", index=False)

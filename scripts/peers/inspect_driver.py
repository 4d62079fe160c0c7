"""Write Inspect AI eval logs (.eval and .json) offline, with the mockllm model.

Three samples (one plain target, two any-of target lists), a lookup tool, two epochs,
scored by includes(); run: python inspect_driver.py OUT_DIR
"""

import sys
from pathlib import Path

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import tool


@tool
def lookup():
    async def execute(country: str) -> str:
        """Look up the capital of a country.

        Args:
            country: The country.
        """
        return {"France": "Paris", "Germany": "Berlin", "Italy": "Rome"}[country]

    return execute


SAMPLES = [
    Sample(id="fr", input="Capital of France?", target="Paris"),
    Sample(id="de", input="Capital of Germany?", target=["Berlin", "the city of Berlin"]),
    Sample(
        id="it", input="Capital of Italy?", target=["Rome", "Roma"], metadata={"region": "south"}
    ),
]
ANSWERS = [  # per epoch, per sample
    {"France": "Paris", "Germany": "Munich", "Italy": "It is ROMA."},
    {"France": "Paris.", "Germany": "the city of berlin", "Italy": "Milan"},
]


def outputs() -> list[ModelOutput]:
    made = []
    for epoch in ANSWERS:
        for country, answer in epoch.items():
            call = ModelOutput.for_tool_call("mockllm/model", "lookup", {"country": country})
            final = ModelOutput.from_content("mockllm/model", answer)
            for output in (call, final):  # counted here: mockllm would fetch a tokenizer
                output.usage = ModelUsage(input_tokens=12, output_tokens=4, total_tokens=16)
                made.append(output)
    return made


out = Path(sys.argv[1])
for fmt in ("eval", "json"):
    logs = out / f"logs-{fmt}"
    task = Task(
        name="capitals",
        dataset=SAMPLES,
        solver=[use_tools(lookup()), generate()],
        scorer=includes(),
        epochs=2,
    )
    eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs()),
        log_dir=str(logs),
        log_format=fmt,
        max_samples=1,
        display="none",
    )
    (written,) = logs.iterdir()
    written.rename(out / f"capitals.{fmt}")
    logs.rmdir()

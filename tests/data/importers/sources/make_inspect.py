"""Write an Inspect eval log with the real inspect_ai, offline (the mockllm model)."""

import sys

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
        return {"France": "Paris", "Germany": "Berlin"}[country]

    return execute


outputs = []
for answer_fr, answer_de in (("Paris", "Munich"), ("Paris.", "Berlin")):  # epoch 1, epoch 2
    for country, answer in (("France", answer_fr), ("Germany", answer_de)):
        call = ModelOutput.for_tool_call("mockllm/model", "lookup", {"country": country})
        final = ModelOutput.from_content("mockllm/model", answer)
        for output in (call, final):  # counted here: mockllm would fetch a tokenizer
            output.usage = ModelUsage(input_tokens=12, output_tokens=4, total_tokens=16)
            outputs.append(output)

task = Task(
    name="capitals",
    dataset=[
        Sample(id="fr", input="Capital of France?", target="Paris"),
        Sample(id="de", input="Capital of Germany?", target="Berlin"),
    ],
    solver=[use_tools(lookup()), generate()],
    scorer=includes(),
    epochs=2,
)
eval(
    task,
    model=get_model("mockllm/model", custom_outputs=outputs),
    log_dir=sys.argv[1],
    log_format="json",
    max_samples=1,
    display="none",
)

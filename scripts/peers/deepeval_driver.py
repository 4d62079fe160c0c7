"""Write DeepEval datasets offline in every form save_as writes: python deepeval_driver.py OUT_DIR

- test_cases.{json,jsonl,csv}: test cases (outputs, retrieval context with several passages,
  tool calls) saved with include_test_cases=True;
- goldens.{json,jsonl,csv}: goldens without outputs;
- mixed.json: goldens and test cases in one dataset.
"""

import sys

from deepeval.dataset import EvaluationDataset, Golden
from deepeval.test_case import LLMTestCase, ToolCall

out = sys.argv[1]
cases = [
    LLMTestCase(
        name="refund-window",
        input="How long do I have to return an item?",
        actual_output="You have 30 days to return it.",
        expected_output="30 days",
        retrieval_context=[
            "Items can be returned within 30 days of delivery.",
            "Refunds are issued to the original payment method.",
        ],
        context=["Returns policy, section 2"],
        tools_called=[ToolCall(name="policy_search", input_parameters={"topic": "returns"})],
        expected_tools=[ToolCall(name="policy_search")],
        additional_metadata={"team": "support"},
        comments="checked by hand",
    ),
    LLMTestCase(
        name="shipping-time",
        input="How long does shipping take?",
        actual_output="About a week.",
        expected_output="3-5 business days",
        retrieval_context=["Standard shipping takes 3-5 business days."],
    ),
]
goldens = [
    Golden(input="Do you ship abroad?", expected_output="Yes, to 40 countries.",
           context=["Shipping policy", "International rates"],
           additional_metadata={"team": "logistics"}),
    Golden(input="Can I pay by invoice?", expected_output="Yes, for business accounts."),
]  # fmt: skip
for file_type in ("json", "jsonl", "csv"):
    tested = EvaluationDataset()
    for case in cases:
        tested.add_test_case(case)
    tested.save_as(
        file_type=file_type, directory=out, file_name="test_cases", include_test_cases=True
    )
    EvaluationDataset(goldens=goldens).save_as(
        file_type=file_type, directory=out, file_name="goldens"
    )
mixed = EvaluationDataset(goldens=goldens)
for case in cases:
    mixed.add_test_case(case)
mixed.save_as(file_type="json", directory=out, file_name="mixed", include_test_cases=True)

"""How parseable is a protocol for the embedded model? ``python -m llmarchive.protocols.instruction_trial``.

The decision instruction (:mod:`panels.instruction`) was frozen after trying
candidates on the embedded SmolLM2-135M model.  This module repeats that
trial so the figure in the closing note can be re-made: it sends items of
one protocol, in all four versions, to the embedded model (greedy, one
replicate, the protocol's own ``max_tokens``, a literal ChatML template with
no system message, as method §5 has no system instruction), extracts each
decision with the protocol's grammar and prints the valid rate per version.

It is a design-time check, not a measurement: nothing is recorded and no
number here enters the archive.  A low valid rate on a 135M model is a
result (the loss bound reports it), never a reason to loosen the grammar.

    python -m llmarchive.protocols.instruction_trial [PROTOCOL] [--items N] [--instruction TEXT]
"""
import argparse
import sys
import time
from typing import Optional, Sequence

from llmarchive.protocols import registry
from llmarchive.archive import ArchivePaths
from measure import extract
from llmarchive.subjects import embedded_model_path

CHATML = "<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"


def trial(protocol: dict, items: int, instruction: Optional[str] = None, out=sys.stdout) -> dict[str, list]:
    """Run ``items`` items × 4 versions; return per version the decisions (None = not valid)."""
    from llama_cpp import Llama   # here, not above: loading llama.cpp's library costs time only this trial needs

    llm = Llama(model_path=str(embedded_model_path()), n_ctx=2048, n_threads=2, n_batch=512, seed=0, verbose=False)
    results: dict[str, list] = {}
    for item in protocol["panel"][:items]:
        for version, text in item["versions"].items():
            if instruction is not None:
                text = text[: len(text) - len(protocol["instruction"])] + instruction
            llm.reset()
            started = time.perf_counter()
            response = llm(CHATML.format(prompt=text), max_tokens=protocol["generation"]["max_tokens"],
                           temperature=0.0, top_k=1, seed=0)["choices"][0]["text"]
            found = extract(response, protocol["options"], protocol["grammar_version"])
            results.setdefault(version, []).append(found.token if found.outcome == "valid" else None)
            print(f"{item['item_id']} {version:7} {found.outcome:11} {found.token or '-':2} "
                  f"{time.perf_counter() - started:5.1f} s", file=out, flush=True)
    return results


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmarchive.protocols.instruction_trial", description=__doc__.split("\n\n")[0])
    parser.add_argument("protocol", nargs="?", default="risky_choice_framing__wording__v0")
    parser.add_argument("--items", type=int, default=15)
    parser.add_argument("--instruction", help="try another instruction in place of the frozen one")
    args = parser.parse_args(argv)
    protocol = registry.load_protocol(ArchivePaths.from_env(), args.protocol)
    results = trial(protocol, args.items, args.instruction)
    for version, decisions in results.items():
        valid = [d for d in decisions if d is not None]
        print(f"{version:7} valid {len(valid)}/{len(decisions)} "
              f"({100 * len(valid) / len(decisions):.0f}%)  A={valid.count('A')} B={valid.count('B')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Tessera: an LLM inference engine with vLLM's Python API.

    from tessera import LLM, SamplingParams
    llm = LLM(model="SmolLM2-135M-Instruct.Q4_1.gguf")
    outputs = llm.generate(["Hello, my name is"], SamplingParams(temperature=0.0, max_tokens=32))
"""

import os as _os

# An idle OpenMP thread of the CPU backend spins 300,000 times (libgomp's default) before it
# sleeps, taking the time slices the working threads need when the cores are shared (4x
# slower batches beside another busy program; docs/benchmarks.md, "OpenMP spinning"). The CLI
# bounds it the same way. libgomp reads the variable when it loads, so this runs before _core
# is imported; a user's OMP_WAIT_POLICY or GOMP_SPINCOUNT is kept.
if "OMP_WAIT_POLICY" not in _os.environ:
    _os.environ.setdefault("GOMP_SPINCOUNT", "2000")

from tessera.beam_search import BeamSearchOutput, BeamSearchSequence
from tessera.llm import LLM
from tessera.outputs import CompletionOutput, Logprob, RequestOutput
from tessera.sampling_params import BeamSearchParams, GuidedDecodingParams, SamplingParams, StructuredOutputsParams

__all__ = ["LLM", "SamplingParams", "BeamSearchParams", "StructuredOutputsParams", "GuidedDecodingParams",
           "RequestOutput", "CompletionOutput", "Logprob", "BeamSearchOutput", "BeamSearchSequence"]
__version__ = "0.1.0"

"""Tessera: an LLM inference engine with vLLM's Python API.

    from tessera import LLM, SamplingParams
    llm = LLM(model="SmolLM2-135M-Instruct.Q4_1.gguf")
    outputs = llm.generate(["Hello, my name is"], SamplingParams(temperature=0.0, max_tokens=32))
"""

from tessera.beam_search import BeamSearchOutput, BeamSearchSequence
from tessera.llm import LLM
from tessera.outputs import CompletionOutput, Logprob, RequestOutput
from tessera.sampling_params import BeamSearchParams, SamplingParams

__all__ = ["LLM", "SamplingParams", "BeamSearchParams", "RequestOutput", "CompletionOutput", "Logprob",
           "BeamSearchOutput", "BeamSearchSequence"]
__version__ = "0.1.0"

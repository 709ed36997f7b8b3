"""One line for a stage that runs out of memory, on its devices or on the host.

XLA raises a JaxRuntimeError ("RESOURCE_EXHAUSTED: Out of memory allocating N bytes")
when a program's buffers do not fit a device, most often a batch too large for a GPU,
found when the first state or step compiles and runs; numpy raises MemoryError
("Unable to allocate 38.1 GiB ...") on the host. Wherever in a stage either happens,
it ended in a traceback. The stage's checkpoints are released on the way out
(runner.run_stage), so the line can promise what the last checkpoint keeps.
"""

import re

import jax
import ml_collections

_BYTES = re.compile(r"(\d{10,}) bytes")  # from 1 GB up: worth a readable size
_OUT_OF_MEMORY = "Out of memory"


def is_out_of_memory(error: BaseException) -> bool:
    if isinstance(error, MemoryError):
        return True
    # XLA:CPU says it as "INTERNAL: Error dispatching computation: Out of memory ..."
    # when a buffer of a running program cannot be had.
    text = str(error)
    return isinstance(error, jax.errors.JaxRuntimeError) and (
        "RESOURCE_EXHAUSTED" in text or _OUT_OF_MEMORY in text)


def what_ran_out(error: BaseException) -> str:
    """Which memory, and how much was asked for: "CPU device memory (Out of memory
    allocating 25600102852 bytes, 25.6 GB)"."""
    if isinstance(error, MemoryError):
        where = "the host's memory"
    else:
        where = f"{jax.devices()[0].platform.upper()} device memory"
    detail = (str(error).strip().splitlines() or [type(error).__name__])[0]
    detail = detail[max(detail.find(_OUT_OF_MEMORY), 0):].removeprefix("RESOURCE_EXHAUSTED: ")
    detail = detail.rstrip(".")
    detail = _BYTES.sub(lambda match: f"{match.group(1)} bytes, "
                        f"{int(match.group(1)) / 1e9:,.1f} GB", detail)
    return f"{where} ({detail})"


def explain(stage: str, config: ml_collections.ConfigDict, error: BaseException) -> str:
    """What ran out, how much was asked for, and the fields that set it."""
    section = config[stage]
    fields = [f"{stage}.optim.batch_size ({section.optim.batch_size})",
              f"{stage}.train.eval_batch_size ({section.train.eval_batch_size})"]
    if "code_cache_batch_size" in section.train:  # stage 2 encodes its code cache
        fields.append(f"{stage}.train.code_cache_batch_size "
                      f"({section.train.code_cache_batch_size})")
    if config.get("num_seeds", 1) > 1:
        fields.append(f"num_seeds ({config.num_seeds})")
    fields.append(f"the sizes in {stage}.model")
    return (f"stage {stage} ran out of {what_ran_out(error)}; lower "
            f"{', '.join(fields[:-1])} or {fields[-1]}, or train on more devices; the "
            f"checkpoints saved so far are intact: rerun the same command to resume")

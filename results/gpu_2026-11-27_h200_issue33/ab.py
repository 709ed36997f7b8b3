"""benchmarks/loop_overhead.py with one of the loop's two newest changes undone, to
tell on a GPU what each costs or gains: `python3 ab.py VARIANT [benchmark flags]`.

  current   the loop as committed
  syncsave  StageCheckpoints.save runs orbax's save on the loop's thread, no copy
            (as before e6db99e)
  ahead     the host is not held to two calls ahead of the device (before 147b84d)
  old       both undone
"""
import runpy
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from causal_disent.runs import checkpoint  # noqa: E402
from causal_disent.train import loop  # noqa: E402

variant = sys.argv.pop(1)
assert variant in ("current", "syncsave", "ahead", "old"), variant
if variant in ("ahead", "old"):
    loop.MAX_CALLS_AHEAD = 10**9
if variant in ("syncsave", "old"):
    def save_on_this_thread(self, state, step, *, force=False):
        if not (force or self.due(step)) or step == self._last_saved_step:
            return
        self._last_saved_step = step
        self._save_now(state, step)
    checkpoint.StageCheckpoints.save = save_on_this_thread
print("variant", variant, flush=True)
sys.argv[0] = str(REPO / "benchmarks/loop_overhead.py")
runpy.run_path(sys.argv[0], run_name="__main__")

r"""Where a device waits for its host: the idle gaps between the device's operations in
a `jax.profiler` trace, and what the host's main thread was doing in each.

  python benchmarks/trace_gaps.py TRACE               # a trace folder or .xplane.pb
  python benchmarks/trace_gaps.py TRACE --top=20 --min_gap_us=50

`benchmarks/loop_overhead.py --profile=DIR` keeps its trace of a stage's run and
prints this summary of the timed loop under its case. The device's work is the union
of its operations: on a GPU or TPU the events of its plane's streams (lines named
"Stream ..." where there are such; a plane's summary lines, "XLA Modules", "XLA Ops"
and "Steps", span the loops' host-controlled waits and are left out), on a CPU the
events of XLA's compute threads on the host. The window runs from the first operation
to the last; every gap between operations of at least `--min_gap_us` is idle time, and
it is put down to the innermost frame of the host's main thread (the one that started
the trace, or the one `loop_overhead.py` names; the Python tracer names its frames
"$file:line function") at the gap's middle. It prints the device's busy share, the idle time by frame (with the two frames
around it, outermost first) and the longest gaps with their host stacks. It also
counts the device's operations, their mean length and the idle time in the gaps
shorter than the minimum: a device whose idle time lies mostly there, between
operations of a few microseconds, is waiting for the host to launch each one (the
program's kernels come faster than the host issues them), which no change to the
loop's Python removes; fewer, larger kernels or XLA's command buffers (CUDA graphs)
do. A JSON line with the figures follows. On a CPU some of XLA's work leaves no event
on those threads (gaps appear while the host waits for the step), so there the idle
share is an upper bound.

The Python tracer slows the host's Python a little (each call is recorded), so a
traced run shows the device idle somewhat more than an untraced one; where the idle
time goes, not its exact amount, is what the trace tells.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runs from a checkout

from causal_disent.utils import arguments  # noqa: E402

# A device plane's lines that summarise its work over spans that include idle time
# (a module's span holds the host-controlled waits of its loops).
SUMMARY_LINES = ("XLA Modules", "XLA Ops", "Steps", "Framework", "TensorFlow", "Source")
CPU_COMPUTE_LINE_PREFIX = "tf_XLA"  # XLA:CPU's compute threads on the host's plane
CPU_WAIT_WORDS = ("Await", "wait")  # their events that wait rather than compute
PYTHON_EVENT_PREFIX = "$"  # the Python tracer's events
DEFAULT_MIN_GAP_US = 20  # shorter idle spans are not listed as gaps


@dataclasses.dataclass(frozen=True)
class Gap:
    start_ns: int
    end_ns: int
    stack: tuple[str, ...]  # the host's main thread at the middle, outermost first

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclasses.dataclass
class TraceGaps:
    device: str  # the plane (and lines) taken as the device's work
    window_ns: int  # first operation's start to last operation's end
    busy_ns: int  # the union of the operations
    gaps: list[Gap]  # idle spans of at least the minimum, in time order
    operations: int = 0  # the device's operations (kernels, thunks) in the window
    operations_ns: int = 0  # their durations summed (overlapping ones each in full)
    short_gaps: int = 0  # idle spans between operations shorter than the minimum

    @property
    def idle_ns(self) -> int:
        return self.window_ns - self.busy_ns


def find_trace(path: str | Path) -> Path:
    """The trace file at `path`: itself, or the newest .xplane.pb below it (what
    `jax.profiler.trace(path)` writes). ValueError when there is none."""
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise ValueError(f"{path} does not exist; give the folder passed to "
                         f"jax.profiler.trace, or the .xplane.pb file in it")
    found = sorted(path.rglob("*.xplane.pb"), key=lambda file: file.stat().st_mtime)
    if not found:
        raise ValueError(f"no jax.profiler trace (*.xplane.pb) in {path}; give the folder "
                         f"passed to jax.profiler.trace, or the file itself")
    return found[-1]


def merged(intervals) -> list[tuple[int, int]]:
    """The union of (start, end) intervals, as disjoint intervals in time order;
    empty ones (start >= end) are left out."""
    union: list[list[int]] = []
    for start, end in sorted((start, end) for start, end in intervals if end > start):
        if union and start <= union[-1][1]:
            union[-1][1] = max(union[-1][1], end)
        else:
            union.append([start, end])
    return [(start, end) for start, end in union]


def idle_spans(busy: list[tuple[int, int]], min_gap_ns: int) -> list[tuple[int, int]]:
    """The spans between consecutive busy intervals (`merged`) of at least
    `min_gap_ns`."""
    return [(end, start) for (_, end), (start, _) in zip(busy, busy[1:])
            if start - end >= min_gap_ns]


def stacks_at(events, times: list[int]) -> list[tuple[str, ...]]:
    """For each of `times` (sorted), the names of the `events` (start, end, name) of one
    thread that contain it, outermost first: one sweep, since a thread's calls nest."""
    ordered = sorted(events, key=lambda event: (event[0], -event[1]))
    stacks, open_events, next_event = [], [], 0
    for time in times:
        while next_event < len(ordered) and ordered[next_event][0] <= time:
            start, end, name = ordered[next_event]
            while open_events and open_events[-1][0] <= start:  # ended before this began
                open_events.pop()
            open_events.append((end, name))
            next_event += 1
        while open_events and open_events[-1][0] <= time:
            open_events.pop()
        # Events that overlap without nesting (rare) may leave an ended one below.
        stacks.append(tuple(name for end, name in open_events if end > time))
    return stacks


def _events(line) -> list[tuple[int, int, str]]:
    return [(event.start_ns, event.end_ns, event.name) for event in line.events]


def device_operations(profile) -> tuple[str, list[tuple[int, int, str]]]:
    """(what was taken as the device, its operations): the first accelerator plane's
    stream lines (all its lines but the summary ones where none is named "Stream"),
    else XLA:CPU's compute threads on the host plane."""
    planes = list(profile.planes)
    for plane in planes:
        if plane.name.startswith("/device:") and "CUSTOM" not in plane.name:
            lines = [line for line in plane.lines
                     if not any(line.name.startswith(name) for name in SUMMARY_LINES)]
            streams = [line for line in lines if line.name.startswith("Stream")]
            chosen = streams or lines
            events = [event for line in chosen for event in _events(line)]
            if events:
                return (f"{plane.name} ({len(chosen)} line{'s' * (len(chosen) != 1)})",
                        events)
    for plane in planes:
        if plane.name == "/host:CPU":
            lines = [line for line in plane.lines
                     if line.name.startswith(CPU_COMPUTE_LINE_PREFIX)]
            events = [event for line in lines for event in _events(line)
                      if not any(word in event[2] for word in CPU_WAIT_WORDS)]
            if events:
                return f"XLA:CPU's compute threads ({len(lines)} on the host)", events
    raise ValueError("the trace holds no device operations (no accelerator plane, and "
                     "no XLA:CPU compute thread on the host's): trace a window in which "
                     "the device computes")


def main_thread_line(profile):
    """The host's main thread's line: the one that called `jax.profiler.start_trace`
    (the tracer records the frames in progress when it starts), else the one with the
    most Python events among those not started by `threading`; None when no line has
    Python events. Its events are scanned, not kept: a traced run holds millions."""
    best, best_key = None, None
    for plane in profile.planes:
        if not plane.name.startswith("/host:"):
            continue
        for line in plane.lines:
            python, first, started_trace = 0, None, False
            for event in line.events:
                name = event.name
                if name.startswith(PYTHON_EVENT_PREFIX):
                    python += 1
                    first = first or name
                    started_trace = started_trace or name.endswith(" start_trace")
            if python:
                key = (started_trace, not first.startswith("$threading.py"), python)
                if best_key is None or key > best_key:
                    best, best_key = line, key
    return best


def host_main_thread(profile, window: tuple[int, int] | None = None, line=None
                     ) -> list[tuple[int, int, str]]:
    """The events of the host's main thread (`line`, else `main_thread_line`'s), in
    start order; with `window` (start, end), only those that overlap it; [] when no
    line has Python events."""
    line = line if line is not None else main_thread_line(profile)
    if line is None:
        return []
    if window is None:
        return _events(line)
    return [(event.start_ns, event.end_ns, event.name) for event in line.events
            if event.end_ns > window[0] and event.start_ns < window[1]]


def trace_gaps(profile, min_gap_ns: int = DEFAULT_MIN_GAP_US * 1000,
               window: tuple[int, int] | None = None, main_thread=None) -> TraceGaps:
    """The device's busy time and idle gaps in `profile` (a jax.profiler.ProfileData),
    each gap with the host main thread's stack at its middle; with `window` (start,
    end in the trace's nanoseconds), only the operations in it, cut at its ends.
    `main_thread`: the line to take the host's stacks from (`main_thread_line`'s
    choice when None)."""
    device, operations = device_operations(profile)
    if window is not None:
        operations = [(max(start, window[0]), min(end, window[1]), name)
                      for start, end, name in operations
                      if end > window[0] and start < window[1]]
    busy = merged((start, end) for start, end, _ in operations)
    if not busy:
        raise ValueError(f"the trace's device operations ({device}) all last 0 ns: "
                         f"trace a window in which the device computes")
    spans = idle_spans(busy, min_gap_ns)
    middles = [(start + end) // 2 for start, end in spans]
    stacks = stacks_at(host_main_thread(profile, window, main_thread), middles)
    return TraceGaps(device=device, window_ns=busy[-1][1] - busy[0][0],
                     busy_ns=sum(end - start for start, end in busy),
                     gaps=[Gap(start, end, stack)
                           for (start, end), stack in zip(spans, stacks)],
                     operations=len(operations),
                     operations_ns=sum(end - start for start, end, _ in operations),
                     short_gaps=len(busy) - 1 - len(spans))


def load(path: str | Path):
    """The ProfileData of the trace at `path` (`find_trace`)."""
    from jax.profiler import ProfileData  # pylint: disable=import-outside-toplevel

    trace = find_trace(path)
    try:
        return ProfileData.from_file(str(trace))
    except RuntimeError as error:  # what jaxlib raises for a file it cannot parse
        raise ValueError(f"cannot read {trace} as a jax.profiler trace ({error}); "
                         f"trace again") from None


def by_frame(found: TraceGaps, top: int) -> list[dict]:
    """The gaps' idle time grouped by the host's innermost frame (with the two frames
    around it), the largest `top` groups first."""
    groups = collections.defaultdict(lambda: [0, 0])
    for gap in found.gaps:
        key = gap.stack[-3:] if gap.stack else ("(no host event: the host was outside "
                                                "the traced thread's calls)",)
        groups[key][0] += gap.duration_ns
        groups[key][1] += 1
    ranked = sorted(groups.items(), key=lambda item: -item[1][0])[:top]
    return [{"frames": list(frames), "idle_ms": nanoseconds / 1e6, "gaps": count}
            for frames, (nanoseconds, count) in ranked]


def summary(found: TraceGaps, top: int = 10) -> dict:
    """The figures `report` prints, JSON-ready."""
    in_gaps = sum(gap.duration_ns for gap in found.gaps)
    longest = sorted(found.gaps, key=lambda gap: -gap.duration_ns)[:top]
    first = found.gaps[0].start_ns if found.gaps else 0
    return {
        "device": found.device, "window_ms": found.window_ns / 1e6,
        "busy_ms": found.busy_ns / 1e6, "busy_fraction": found.busy_ns / found.window_ns,
        "idle_ms": found.idle_ns / 1e6, "gaps": len(found.gaps),
        "idle_in_gaps_ms": in_gaps / 1e6,
        "operations": found.operations,
        "mean_operation_us": (found.operations_ns / found.operations / 1e3
                              if found.operations else 0.0),
        "short_gaps": found.short_gaps,
        "idle_in_short_gaps_ms": (found.idle_ns - in_gaps) / 1e6,
        "by_frame": by_frame(found, top),
        "longest": [{"at_ms": (gap.start_ns - first) / 1e6, "ms": gap.duration_ns / 1e6,
                     "stack": list(gap.stack[-4:])} for gap in longest],
    }


def report(figures: dict, min_gap_us: float) -> list[str]:
    """`summary`'s figures as console lines."""
    lines = [
        f"device: {figures['device']}; window {figures['window_ms']:.1f} ms, busy "
        f"{figures['busy_ms']:.1f} ms ({100 * figures['busy_fraction']:.1f} %), idle "
        f"{figures['idle_ms']:.1f} ms, {figures['idle_in_gaps_ms']:.1f} ms of it in "
        f"{figures['gaps']} gaps of at least {min_gap_us:g} µs",
        f"{figures['operations']} device operations of {figures['mean_operation_us']:.1f} µs "
        f"on average; {figures['idle_in_short_gaps_ms']:.1f} ms idle in "
        f"{figures['short_gaps']} shorter gaps between them (idle time mostly there, "
        f"between short operations, is the device waiting for the host to launch them)",
        "idle time by the host's innermost frame at each gap's middle (the frames around "
        "it first):"]
    for group in figures["by_frame"]:
        share = group["idle_ms"] / figures["idle_in_gaps_ms"] if figures["idle_in_gaps_ms"] else 0
        lines.append(f"  {group['idle_ms']:9.2f} ms {100 * share:5.1f} % {group['gaps']:6d} "
                     f"gaps  {' > '.join(group['frames'])}")
    lines.append("the longest gaps (ms after the first gap, length, the host's stack):")
    for gap in figures["longest"]:
        lines.append(f"  {gap['at_ms']:10.2f} {gap['ms']:8.3f} ms  {' > '.join(gap['stack'])}")
    return lines


def main() -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", help="a folder jax.profiler.trace wrote, or its .xplane.pb")
    parser.add_argument("--top", type=arguments.positive_int, default=10, help="rows in each list")
    parser.add_argument("--min_gap_us", type=arguments.positive_int, default=DEFAULT_MIN_GAP_US,
                        help="shorter idle spans (µs) are not counted as gaps")
    args = parser.parse_args()
    try:
        found = trace_gaps(load(args.trace), args.min_gap_us * 1000)
    except ValueError as error:
        sys.exit(f"error: {error}")
    figures = summary(found, args.top)
    print("\n".join(report(figures, args.min_gap_us)))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

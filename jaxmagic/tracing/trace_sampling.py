"""Where tracing spends its time, by the user's source line: the tracing thread's stack is sampled
every millisecond, each sample going to the innermost line of the user's own code on the stack
(the line whose Python, with the JAX work it calls, was running). Each sample stands for the time
since the one before it: a sampler cannot look while native code holds the interpreter (JAX's own
C++ does, sometimes for tens of milliseconds), and that time belongs to the line that was running. Frames outside the traced call
(jaxmagic's own, and whoever called it) are not looked at: time spent there is JAX's own set-up.

For the "my compile takes a minute" question: a Python loop unrolled into thousands of equations
shows up as the line that made them.

>>> import jax, jax.numpy as jnp
>>> def unrolled(x):
...     for _ in range(2000):
...         x = jnp.sin(x) + 1
...     return x
>>> _ = jax.jit(lambda v: jnp.sin(v) + 1).trace(jnp.ones(3))  # JAX's first-time set-up, elsewhere
>>> with sampled_lines() as samples:
...     _ = jax.jit(unrolled).trace(jnp.ones(3))
>>> samples.seconds > 0 and samples.total > 0
True
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import types
from dataclasses import dataclass, field
from typing import Iterator

from jaxmagic.tracing.sources import is_jaxmagic_file, traced_user_frame

INTERVAL_S = 0.001
MIN_SAMPLES = 10


@dataclass
class Samples:
    """Samples of one thread: ``by_line`` maps ``(file, line)`` to the seconds its samples stand
    for; ``total`` counts the samples; ``seconds`` is how long sampling ran; ``interval`` the time
    asked for between samples; ``longest`` the most time one sample stands for."""

    by_line: dict[tuple[str, int], float] = field(default_factory=dict)
    total: int = 0
    seconds: float = 0.0
    interval: float = INTERVAL_S
    longest: float = 0.0

    @property
    def reliable(self) -> bool:
        """Whether the samples are many and even enough to split the time by line: at least
        ``MIN_SAMPLES``, none standing for more than a quarter of the time. Native code that holds
        the interpreter for long (JAX 0.8's, on a busy machine) can leave a trace with a handful of
        samples, the last of them standing for most of the time.

        >>> Samples(total=3, seconds=0.2, longest=0.15).reliable
        False
        >>> Samples(total=150, seconds=0.2, longest=0.004).reliable
        True
        """
        return self.total >= MIN_SAMPLES and self.longest <= self.seconds / 4

    def line_seconds(self) -> dict[tuple[str, int], float]:
        """Seconds of tracing spent on each line, the largest first."""
        return dict(sorted(self.by_line.items(), key=lambda item: item[1], reverse=True))


@contextlib.contextmanager
def sampled_lines(interval: float | None = None) -> Iterator[Samples]:
    """Sample the calling thread's stack while the block runs, every ``interval`` seconds
    (``INTERVAL_S`` unless given)."""
    interval = INTERVAL_S if interval is None else interval
    samples = Samples(interval=interval)
    target = threading.get_ident()
    done = threading.Event()

    def sample():
        last = start
        while not done.wait(interval):
            frame = sys._current_frames().get(target)
            if frame is None:
                continue
            stack = []
            # another thread's frames are read while it runs: a link that is no longer a frame ends the walk
            while isinstance(frame, types.FrameType) and not is_jaxmagic_file(frame.f_code.co_filename):
                stack.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
                frame = frame.f_back
            found = traced_user_frame(stack)  # only frames inside the traced call: not the magic's caller
            now = time.perf_counter()
            samples.total += 1
            samples.longest = max(samples.longest, now - last)
            if found is not None:
                where = found[:2]
                samples.by_line[where] = samples.by_line.get(where, 0.0) + now - last
            last = now

    sampler = threading.Thread(target=sample, name="jaxmagic-trace-sampler", daemon=True)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, interval / 2))  # the sampler needs the GIL that often
    start = time.perf_counter()
    sampler.start()
    try:
        yield samples
    finally:
        done.set()
        sampler.join()
        samples.seconds = time.perf_counter() - start
        sys.setswitchinterval(switch)

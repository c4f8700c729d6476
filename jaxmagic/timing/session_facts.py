"""What a timing session reads besides time: whether the modes give the same results, XLA's memory
for each compiled mode, what the eager mode donates and writes out, and the sharded mode's
communication. Each is a bonus: a failure to read one never fails the timing.
"""

from __future__ import annotations

import jaxmagic.timing.agreement as agreement
import jaxmagic.timing.footprint as footprint
import jaxmagic.timing.modes as mode_setup
from jaxmagic.compiled import memory as memory_reader
from jaxmagic.tracing.call import Call


class SessionFacts:
    """The part of a timing session (``session._Session``) that reads what the modes did besides
    their time; the session holds the state named here."""

    call: Call
    budget: float
    rtol: float | None
    atol: float | None
    runners: dict
    first_calls: dict
    outputs: dict
    memory: dict
    communication: dict
    calls: dict
    jaxpr: object
    phase: str

    def note(self, kind: str, *, warning: bool = False, mode: str | None = None, **facts) -> None:
        raise NotImplementedError

    def _tell(self, stage: str, mode: str | None = None, index: int | None = None, of: int | None = None) -> None:
        raise NotImplementedError

    def _remaining(self) -> float:
        raise NotImplementedError

    def _uncompiled(self) -> list[str]:
        raise NotImplementedError

    def _quiet(self, mode: str):
        raise NotImplementedError

    def _check_results(self) -> None:
        self.phase = "comparing the modes' results"
        self._tell("checking results")
        reference = next((m for m in ("eager", "op-by-op", "jit") if m in self.outputs), None)
        if reference is None:
            return
        for mode, output in self.outputs.items():
            if mode == reference:
                continue
            comparable = self.runners[mode].to_reference(output)
            if mode == "pmap" and all(leaf is None for leaf in _leaves(comparable)):
                self.note("pmap_per_device_results", mode=mode, reference=reference)
                continue
            found = agreement.mismatch(self.outputs[reference], comparable, rtol=self.rtol, atol=self.atol)
            if found is None:
                continue
            if mode == "pmap" and not found.detail.startswith("values"):
                self.note("pmap_slices_differ", mode=mode, reference=reference, difference=str(found))
            elif mode == "pmap":
                self.note("pmap_results_differ", warning=True, mode=mode, reference=reference, difference=str(found))
            else:
                self.note("results_differ", warning=True, mode=mode, reference=reference, difference=str(found))

    def _memory(self) -> None:
        self.phase = "reading XLA's memory analysis"
        self._tell("memory analysis")
        for mode, runner in self.runners.items():
            if not runner.compiles or mode not in self.first_calls:
                continue
            cost = self.first_calls[mode]
            # jit's caches make this free after the first call; pmap compiles again.
            if mode == "pmap" and cost.one_time_s > max(0.0, self._remaining()) / 4:
                self.note("pmap_memory_skipped", mode=mode)
                continue
            try:
                self.memory[mode] = memory_reader.compiled_memory(runner.lowered().compile())
            except Exception:  # memory is a bonus; the timing must not fail for it
                continue
        traced = any(m in self.first_calls for m in ("jit", "sharded"))
        if "eager" in self.runners or (self._uncompiled() and traced):  # eager: to see what it donates
            self.jaxpr = self._trace()

    def _trace(self):
        """The call's jaxpr, for what an uncompiled run does (``None`` where it cannot be traced):
        from the jit or sharded mode's jitted function, or one made for it when neither was asked for."""
        traced_by = next((self.runners[m] for m in ("jit", "sharded") if m in self.first_calls), None)
        try:
            if traced_by is not None:
                args, kwargs = traced_by.fresh_arguments()
                return traced_by.jitted.trace(*args, **kwargs).jaxpr
            args, kwargs, _ = mode_setup.on_device((self.call.args, self.call.kwargs))
            return mode_setup.jitted_version(self.call).trace(*args, **kwargs).jaxpr
        except Exception:  # the uncompiled modes' footprint, estimate and donations are a bonus
            return None

    def _protect_from_donation(self) -> list[str]:
        """The eager mode runs the user's call as written, and an inner jit of it may donate (consume)
        what it is given: its arguments are then copied for every call; arrays it holds (in a
        partial, a closure, a global) cannot be, and it is not run. The uncompiled modes to skip."""
        runner = self.runners.get("eager")
        if runner is None or self.jaxpr is None:
            return []
        try:
            arguments, held = footprint.donated_inputs(self.jaxpr)
        except Exception:
            return []
        if held:
            self.note("not_run", warning=True, mode="eager", budget_s=self.budget, left_s=0.0, donates_held=True)
            return ["eager"]
        if arguments:
            runner.donated = tuple(range(len(runner.args)))
            runner.donated_names = tuple(runner.kwargs)
            self.note("eager_donates", mode="eager")
        return []

    def _eager_memory(self) -> None:
        """What each uncompiled mode that ran writes out besides its outputs, from the jit mode's trace."""
        if self.jaxpr is None:
            return
        for mode in self._uncompiled():
            if mode in self.first_calls:
                written = footprint.intermediate_bytes(self.jaxpr, op_by_op=mode == "op-by-op")
                self.memory[mode] = {"intermediates": written}

    def _communication(self) -> None:
        """The sharded mode's collectives (from its optimized HLO) and, where JAX's profiler
        reports their kernels, the device time they took per call."""
        runner = self.runners.get("sharded")
        if runner is None or "sharded" not in self.first_calls:
            return
        if self.first_calls["sharded"].run_s * 4 > max(0.0, self._remaining()) / 4:
            return  # no time left to profile a few calls
        self.phase = "reading the sharded mode's communication"
        self._tell("communication")
        from jaxmagic.compiled import profiling
        from jaxmagic.compiled.collectives import communication_seconds, compiled_collectives

        try:
            compiled = runner.lowered().compile()
            collectives = compiled_collectives(compiled, compiled.as_text())
            self.communication = {"collectives": collectives}
            if not collectives:
                self.note("sharded_no_communication", mode="sharded")
                return
            calls = 3
            self.calls["sharded"] = self.calls.get("sharded", 0) + 1 + calls  # the profiler warms up first
            with self._quiet("sharded"):
                profiled = profiling.profile(
                    runner.jitted,
                    runner.args,
                    runner.kwargs,
                    name=self.call.name,
                    calls=calls,
                    copy_arguments=bool(runner.donated or runner.donated_names),
                )
        except Exception:  # communication is a bonus; the timing must not fail for it
            return
        seconds = communication_seconds(collectives, profiled.kernels)
        self.communication.update(seconds=seconds, device_seconds=profiled.device_seconds)
        self.note(
            "sharded_communication",
            mode="sharded",
            count=len(collectives),
            moved=sum(c.bytes for c in collectives),
            seconds=seconds,
            device_seconds=profiled.device_seconds,
        )


def _leaves(tree) -> list:
    import jax

    return jax.tree_util.tree_leaves(tree, is_leaf=lambda x: x is None)

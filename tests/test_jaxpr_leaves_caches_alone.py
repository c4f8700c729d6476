"""``%jaxpr`` must not change what the user's next call does: its trace and compile are its own,
never found again by the user's jitted function (JAX caches traces per function object)."""


def test_a_global_changed_after_jaxpr_is_read_by_the_next_call(ip, run):
    run("scale = 1.0\n@jax.jit\ndef scaled(x):\n    return x * scale\nv = jnp.ones(3)").assert_ok()
    run("%jaxpr --stage hlo scaled(v)").assert_ok()
    run("scale = 2.0").assert_ok()
    after = run("scaled(v)").assert_ok().result
    assert after.tolist() == [2.0, 2.0, 2.0], "the user's first call traces with the global as it is now"


def test_the_user_s_first_call_after_jaxpr_still_compiles_as_a_first_call(ip, run):
    import jax

    run("@jax.jit\ndef fresh(x):\n    return jnp.cos(x) + 1\nw = jnp.ones(5)").assert_ok()
    run("%jaxpr --profile 1 fresh(w)").assert_ok()
    compiled = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, duration, **_: compiled.append(event) if "backend_compile" in event else None
    )
    run("fresh(w)").assert_ok()
    assert compiled, "the user's call compiled: %jaxpr's compile was its own"

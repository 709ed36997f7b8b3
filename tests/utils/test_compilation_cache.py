"""utils/compilation_cache.py: where the command line's cache of compiled programs goes,
that a program compiled once is read back from it, and a folder that cannot hold it."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental.compilation_cache import compilation_cache as jax_cache

from causal_disent.utils import compilation_cache

SETTINGS = ("jax_compilation_cache_dir", "jax_compilation_cache_max_size",
            "jax_enable_compilation_cache")


@pytest.fixture
def own_jax_settings(monkeypatch):
    """No cache of JAX's own set and none in the environment; the worker's settings
    (tests/conftest.py gives each worker a cache folder) are put back afterwards."""
    saved = {name: getattr(jax.config, name) for name in SETTINGS}
    monkeypatch.delenv(compilation_cache.ENVIRONMENT_VARIABLE, raising=False)
    jax_cache.reset_cache()
    jax.config.update("jax_compilation_cache_dir", None)
    yield
    jax_cache.reset_cache()
    for name, value in saved.items():
        jax.config.update(name, value)


def test_a_named_folder_is_made_and_bounded(own_jax_settings, tmp_path):
    folder = tmp_path / "made" / "here"
    assert compilation_cache.enable(str(folder)) == folder
    assert folder.is_dir()
    assert jax.config.jax_compilation_cache_dir == str(folder)
    assert jax.config.jax_compilation_cache_max_size == compilation_cache.MAX_BYTES


def test_a_program_compiled_once_is_read_back_with_the_same_results(own_jax_settings,
                                                                      tmp_path):
    folder = compilation_cache.enable(str(tmp_path / "cache"))
    hits = []

    def count_hits(event, **kwargs):
        if event == "/jax/compilation_cache/cache_hits":
            hits.append(event)

    jax.monitoring.register_event_listener(count_hits)

    def program(x):  # a program no other test compiles
        return jnp.cumsum(jnp.sin(x) * 1.2345) @ jnp.cos(x[::-1])

    x = jnp.linspace(0.0, 3.0, 1789)
    first = np.asarray(jax.jit(program)(x))
    entries = [path for path in folder.iterdir() if path.name.startswith("jit_program")]
    assert entries  # conftest keeps even quick compiles (min compile time 0)
    jax.clear_caches()  # forget the compiled program in memory
    again = np.asarray(jax.jit(program)(x))
    jax.monitoring.unregister_event_listener(count_hits)
    assert hits and first.tobytes() == again.tobytes()


def test_off_and_a_cache_of_jaxs_own(own_jax_settings, tmp_path, monkeypatch):
    assert compilation_cache.enable("off") is None
    assert jax.config.jax_compilation_cache_dir is None
    assert not jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", True)
    monkeypatch.setenv(compilation_cache.ENVIRONMENT_VARIABLE, "off")
    assert compilation_cache.enable() is None
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "jax_own"))
    assert compilation_cache.enable() == tmp_path / "jax_own"  # $JAX_COMPILATION_CACHE_DIR
    assert jax.config.jax_compilation_cache_max_size == -1  # untouched: the user's choice
    assert jax.config.jax_enable_compilation_cache
    assert compilation_cache.enable("off") is None  # the flag turns even that one off
    assert not jax.config.jax_enable_compilation_cache


def test_the_environment_names_the_folder_and_else_the_machines_default(
        own_jax_settings, tmp_path, monkeypatch):
    monkeypatch.setenv(compilation_cache.ENVIRONMENT_VARIABLE, str(tmp_path / "from_env"))
    assert compilation_cache.enable() == tmp_path / "from_env"
    monkeypatch.delenv(compilation_cache.ENVIRONMENT_VARIABLE)
    jax.config.update("jax_compilation_cache_dir", None)  # a fresh process, as it were
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    expected = tmp_path / "xdg" / "causal_disent" / "compiled" / compilation_cache.machine_name()
    assert compilation_cache.enable() == expected and expected.is_dir()
    assert re.fullmatch(r"[\w]+-[0-9a-f]{12}", compilation_cache.machine_name())


def test_a_folder_that_cannot_hold_the_cache(own_jax_settings, tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(compilation_cache.CacheFolderError,
                       match=r"a_file \(--compilation_cache\) cannot be used: .*; give a "
                             r"writable folder, or 'off'$"):
        compilation_cache.enable(str(blocker))
    monkeypatch.setenv(compilation_cache.ENVIRONMENT_VARIABLE, str(blocker / "below"))
    with pytest.raises(compilation_cache.CacheFolderError,
                       match=r"\(\$CAUSAL_DISENT_COMPILATION_CACHE\) cannot be used"):
        compilation_cache.enable()
    # The default folder unusable (a read-only home, say): the run goes on without it.
    monkeypatch.delenv(compilation_cache.ENVIRONMENT_VARIABLE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert compilation_cache.enable() is None
    assert jax.config.jax_compilation_cache_dir is None


def test_without_filelock_the_run_compiles_afresh(own_jax_settings, tmp_path, monkeypatch):
    """JAX needs filelock for a bounded cache and would fail at the first compile."""
    real_find_spec = compilation_cache.importlib.util.find_spec
    monkeypatch.setattr(compilation_cache.importlib.util, "find_spec",
                        lambda name, *args: None if name == "filelock"
                        else real_find_spec(name, *args))
    assert compilation_cache.enable(str(tmp_path / "cache")) is None
    assert jax.config.jax_compilation_cache_dir is None

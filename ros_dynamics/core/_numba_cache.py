"""numba's on-disk cache, keyed on all the sources of ``ros_dynamics.core``.

numba stamps a cached kernel with the content hash of the one file that defines it, so a kernel
whose callee in *another* module changed (e.g. ``coriolis`` after an edit of ``kinematics``)
would be loaded stale.  Here every kernel defined in ``ros_dynamics/core`` is stamped with the
hash of all the ``.py`` files of that folder instead: any edit of any core source invalidates
every core kernel, for anyone, whatever their environment (cache location unchanged: numba's
usual choice, ``__pycache__`` or ``NUMBA_CACHE_DIR``).  Kernels outside the core have no
callees in other modules, so numba's own stamp is right for them.

This must be imported before the first ``@njit(cache=True)`` of the core (``core/__init__.py``
imports it first): numba picks a function's cache locator when the decorator runs.
"""

import functools
import hashlib
import os
import warnings

from numba.core import caching

# numba's list of locator classes (``CacheImpl`` since numba 0.61, ``_CacheImpl`` before)
_IMPL = getattr(caching, 'CacheImpl', None) or getattr(caching, '_CacheImpl', None)

CORE_DIR = os.path.dirname(os.path.abspath(__file__))


@functools.lru_cache(maxsize=None)
def sources_digest():
    """sha256 over the names and contents of the core's .py files (computed once per process)."""
    h = hashlib.sha256()
    for name in sorted(os.listdir(CORE_DIR)):
        if name.endswith('.py'):
            h.update(name.encode())
            with open(os.path.join(CORE_DIR, name), 'rb') as f:
                h.update(f.read())
    return h.digest()


class CoreSourcesLocator(caching._CacheLocator):
    """numba's usual locator for a core kernel, with the stamp of all core sources."""

    def __init__(self, inner):
        self._inner = inner

    def ensure_cache_path(self):
        self._inner.ensure_cache_path()

    def get_cache_path(self):
        return self._inner.get_cache_path()

    def get_disambiguator(self):
        return self._inner.get_disambiguator()

    def get_source_stamp(self):
        return sources_digest()

    @classmethod
    def from_function(cls, py_func, py_file):
        if os.path.dirname(os.path.abspath(py_file)) != CORE_DIR:
            return None
        for other in _IMPL._locator_classes:
            if other is not cls:
                inner = other.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner)
        return None


def install():
    """Put the locator first in numba's list (idempotent)."""
    classes = getattr(_IMPL, '_locator_classes', None)
    if not isinstance(classes, list):
        warnings.warn('ros_dynamics: this numba has no cache locator list; cached kernels are '
                      'keyed on their own file only (clear the cache after editing the core)')
        return
    if CoreSourcesLocator not in classes:
        classes.insert(0, CoreSourcesLocator)


install()

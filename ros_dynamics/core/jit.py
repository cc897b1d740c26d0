"""How the kernels are compiled: numba's flags, entry kernels compiled at their first call (one
process at a time), and numba's on-disk cache keyed on all the sources of ``ros_dynamics.core``.

Flags (``JIT``): fastmath allows reassociation and FMA but keeps NaN and inf semantics (no
'nnan', 'ninf'): the entry kernels inline the input checks, and ``np.isfinite`` must stay a
test; ``error_model='numpy'``: no Python ZeroDivisionError checks.

Entry kernels (``entry``): each kernel that Python calls is sealed to one signature (float64
C-contiguous inputs), so numba's dispatcher itself is the type check: anything else raises
TypeError, and only then does the caller convert (``api._run``).  Importing the package compiles
nothing: a kernel is compiled, or loaded from the disk cache, at its first call (``ready``), so
a process pays only for the kernels it uses; ``python -m ros_dynamics.warmup`` fills the cache
with all of them.  Compilation takes an exclusive file lock (``fcntl.flock``) in the cache
directory: a second process that needs a kernel another one is compiling waits, then loads it
from the cache instead of compiling it again.

Cache key: numba stamps a cached kernel with the content hash of the one file that defines it,
so a kernel whose callee in *another* module changed (e.g. ``coriolis`` after an edit of
``kinematics``) would be loaded stale.  Here every kernel defined in ``ros_dynamics/core`` is
stamped with the hash of all the ``.py`` files of that folder instead: any edit of any core
source invalidates every core kernel, for anyone, whatever their environment (cache location
unchanged: numba's usual choice, ``__pycache__`` or ``NUMBA_CACHE_DIR``).  A module outside the
core whose kernels call core kernels declares it (:func:`depends_on_core`) and gets the same
stamp combined with its own file's content; numba's own stamp is right for the others.  This module
must be imported before the first ``@njit(cache=True)`` of the core (``core/__init__.py``
imports it first): numba picks a function's cache locator when the decorator runs.
"""

import contextlib
import fcntl
import functools
import hashlib
import os

from numba import njit
from numba.extending import register_jitable
from numba.core import caching

JIT = dict(cache=True, nogil=True, fastmath={'reassoc', 'contract', 'nsz', 'arcp', 'afn'},
           error_model='numpy')

CORE_DIR = os.path.dirname(os.path.abspath(__file__))
LOCK_NAME = 'ros_dynamics-compile.lock'

#: every entry kernel, in definition order: name -> (dispatcher, signature)
ENTRY_KERNELS = {}


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


#: modules outside the core whose kernels call core kernels: their file -> (that file and the
#: other non-core files whose kernels they call)
DEPENDENT_FILES = {}


def depends_on_core(path, *others):
    """Declare that the kernels of the module whose file is ``path`` call core kernels (and
    kernels of the modules whose files are ``others``): their cache stamp is then that of the
    core's sources and of those files, so that an edit of any of them invalidates them.  Call
    it before the module's first ``@njit(cache=True)``."""
    path = os.path.abspath(path)
    DEPENDENT_FILES[path] = (path,) + tuple(os.path.abspath(p) for p in others)


class CoreSourcesLocator(caching._CacheLocator):
    """numba's usual locator for a core kernel, with the stamp of all core sources (and, for a
    module that :func:`depends_on_core`, of its own file).

    Everything else numba asks of a locator (e.g. ``_py_file`` for the warning it gives when it
    declines to cache a function) is the usual locator's answer."""

    def __init__(self, inner, dependent=None):
        self._inner = inner
        self._dependent = dependent

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def ensure_cache_path(self):
        self._inner.ensure_cache_path()

    def get_cache_path(self):
        return self._inner.get_cache_path()

    def get_disambiguator(self):
        return self._inner.get_disambiguator()

    def get_source_stamp(self):
        if self._dependent is None:
            return sources_digest()
        h = hashlib.sha256(sources_digest())
        for path in DEPENDENT_FILES[self._dependent]:
            with open(path, 'rb') as f:
                h.update(f.read())
        return h.digest()

    @classmethod
    def from_function(cls, py_func, py_file):
        path = os.path.abspath(py_file)
        dependent = path in DEPENDENT_FILES
        if os.path.dirname(path) != CORE_DIR and not dependent:
            return None
        for other in caching.CacheImpl._locator_classes:
            if other is not cls:
                inner = other.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner, path if dependent else None)
        return None


if CoreSourcesLocator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes.insert(0, CoreSourcesLocator)


def entry(restype, *argtypes, **flags):
    """Decorator: an entry kernel sealed to the signature ``restype(*argtypes)``, compiled (or
    loaded from the disk cache) by :func:`ready` at its first call.  Until then it has no
    compiled version and every call raises TypeError (the callers' cue to call ``ready``)."""
    def decorate(fn):
        kernel = njit(**(flags or JIT))(fn)
        kernel._can_compile = False       # (what disable_compile() sets; it refuses before a
        #                                    first signature)
        ENTRY_KERNELS[fn.__name__] = (kernel, restype(*argtypes))
        return kernel
    return decorate


@contextlib.contextmanager
def compile_lock(kernel):
    """Exclusive inter-process lock on the kernel's cache directory."""
    with open(os.path.join(kernel._cache.cache_path, LOCK_NAME), 'a') as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def cached(kernel):
    """Whether the entry kernel is ready without compiling: compiled in this process, or held
    by the disk cache for its signature and the current sources."""
    if kernel.overloads:
        return True
    signature = ENTRY_KERNELS[kernel.py_func.__name__][1]
    return kernel._cache.load_overload(signature, kernel.targetctx) is not None


def ready(kernel):
    """The entry kernel, compiled: loaded from the disk cache, or compiled (and cached) under
    :func:`compile_lock`, so that a process waiting for another one's compilation loads it."""
    if not kernel.overloads:
        signature = ENTRY_KERNELS[kernel.py_func.__name__][1]
        with compile_lock(kernel):
            kernel._can_compile = True
            try:
                kernel.compile(signature)
            finally:
                kernel._can_compile = False
    return kernel


def helper(fn):
    """Decorator for the small compiled functions the kernels call (not called from Python):
    compiled with the kernels' flags, each once per process for non-literal argument types.
    (A plain @njit callee is compiled again for every literal argument it is called with, e.g.
    ``dot6(A, 0, x)``, ``dot6(A, 1, x)``, ... and ``dot6(A, i, x)``: seven compilations of one
    function; an overload types non-literal arguments first.)"""
    return register_jitable(**JIT)(fn)


def shared(fn):
    """Decorator for the larger compiled functions several entry kernels call (the kinematics
    pass, the sweeps of Algorithms 1 and 2, the named views): compiled once per process like a
    :func:`helper`, and always inlined by LLVM (``forceinline``), so that the named tuples of
    arrays they take (``m``, ``w``) never cross a call at run time.  Inlined by numba instead
    (``inline='always'``), each would be compiled again into every kernel that calls it."""
    return register_jitable(**JIT, forceinline=True)(fn)

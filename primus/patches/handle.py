"""What a patch's ``install(module, handle)`` changes upstream through. wrapt wraps and unwraps (a wrapper
a later one covers is spliced out on undo); the handle adds the guard (upstream's errors propagate unchanged:
same object, same traceback, nothing chained; so does a ``SettingsError`` the patch raises on purpose, the user's
to fix; any other failure of patch code is logged and turns the patch off, unless ``required``) and the undo of
plain attribute replacements."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

import wrapt

from primus.errors import SettingsError

log = logging.getLogger("primus.patches")

Undo = Callable[[], object]  # what it returns is ignored
# Raised past the guard as they are, the patch left on: leaving the process, and the user's settings refused on
# purpose (a patch that stops a bad configuration before training is working, not failing).
_PASSED_ON = (KeyboardInterrupt, SystemExit, SettingsError)


class _UpstreamCall:
    """The ``wrapped`` a guarded wrapper receives: calls upstream and remembers what happened, so the
    guard can tell upstream's exceptions (propagate) from the patch's own (disable the patch).
    Attributes (``__name__``, ``__module__``, ``__self__``...) are upstream's. Not a wrapt proxy:
    its ``_self_`` attributes made each guarded call ~2 us slower than this slotted object, whose
    ``result`` and ``error`` are set only once there is one (one store per call instead of four).
    Made by the guard with ``object.__new__`` (in C): an ``__init__`` was a Python frame per guarded call."""

    __slots__ = ("__wrapped__", "result", "error")

    def __call__(self, *args, **kwargs):
        try:
            self.result = self.__wrapped__(*args, **kwargs)
        except BaseException as e:
            self.error = e
            raise
        return self.result

    def __getattr__(self, name: str) -> Any:
        if name in _UpstreamCall.__slots__:  # not set: no result or error yet (never upstream's of that name)
            raise AttributeError(name)
        return getattr(self.__wrapped__, name)

    # These two come from the class before __getattr__ is asked.
    __module__ = property(lambda self: self.__wrapped__.__module__)
    __doc__ = property(lambda self: self.__wrapped__.__doc__)


class Declared(Protocol):
    """What a handle reads of its patch (``registry.Patch``; named here, not imported: the registry imports this)."""

    @property
    def id(self) -> str: ...

    @property
    def required(self) -> bool: ...


class PatchHandle:
    """Given to ``Patch.install``: makes changes that the registry can undo and guard. ``enabled`` is what
    each of its wrappers asks before calling into the patch; off, they pass straight to upstream."""

    def __init__(
        self,
        patch: Declared,
        context: Any,  # the registry's PatchContext
        on_failure: Callable[[PatchHandle, BaseException], None] = lambda h, e: None,
    ):
        self.patch = patch
        self.context = context
        self.enabled = True
        self._on_failure = on_failure
        self._undo: list[Undo] = []

    # -- changes -------------------------------------------------------------------------
    def wrap(self, owner: Any, name: str, wrapper: Callable) -> None:
        """Wrap ``owner.<name>`` (``"Class.method"`` allowed) with a wrapt wrapper
        ``wrapper(wrapped, instance, args, kwargs)``, guarded so that patch-code errors fall back
        to the original call."""
        # The guard asks ``enabled`` itself: wrapt's ``enabled=`` callable costs a Python call at each binding and
        # each call of a method, on the training thread.
        guarded = self._guard(wrapper)
        installed = wrapt.wrap_object(owner, name, wrapt.FunctionWrapper, (guarded,))

        def unwrap():
            try:
                if wrapt.unwrap_object(owner, name, installed, missing_ok=True) is None:
                    self._replaced_since(owner, name)
            except wrapt.WrapperNotOutermostError:  # under a wrapper wrapt cannot splice: ours stays, off
                self._replaced_since(owner, name)

        self._undo.append(unwrap)

    def replace(self, owner: Any, name: str, value: Any) -> None:
        """Set ``owner.<name> = value``, remembering the original for undo. Only the owner's own attribute
        is restored: an inherited one is deleted again, so a subclass keeps no copy of its base's."""
        own = _own_attribute(owner, name)
        setattr(owner, name, value)

        def restore():
            if _own_attribute(owner, name) is not value:
                self._replaced_since(owner, name)
            elif own is wrapt.MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, own)

        self._undo.append(restore)

    def on_undo(self, fn: Undo) -> None:
        self._undo.append(fn)

    def _replaced_since(self, owner: Any, name: str) -> None:
        log.warning(
            "primus patch %s: %s.%s was replaced again by someone else; left as it is",
            self.patch.id,
            getattr(owner, "__name__", owner),
            name,
        )

    # -- guard ---------------------------------------------------------------------------
    def _guard(self, wrapper: Callable) -> Callable:
        handle = self
        new = object.__new__

        def guarded(wrapped, instance, args, kwargs):
            if not handle.enabled:
                return wrapped(*args, **kwargs)
            call = new(_UpstreamCall)
            call.__wrapped__ = wrapped
            try:
                return wrapper(call, instance, args, kwargs)
            except BaseException as error:
                if error is getattr(call, "error", None) or isinstance(error, _PASSED_ON):
                    raise
                if handle.patch.required:
                    handle.fail(error)
                    raise
                failure = error
            # Outside the except block, so that re-raising upstream's error chains nothing onto it.
            handle.fail(failure)
            if hasattr(call, "error"):
                raise call.error
            return call.result if hasattr(call, "result") else wrapped(*args, **kwargs)

        return guarded

    def fail(self, error: BaseException) -> None:
        if self.enabled:
            self.enabled = False
            log.warning("primus patch %s failed and is now disabled: %r", self.patch.id, error)
            self._on_failure(self, error)

    def undo(self) -> None:
        # Off first: a wrapper someone bound early (``from m import f``) becomes a pass-through.
        self.enabled = False
        while self._undo:
            self._undo.pop()()


def _own_attribute(owner: Any, name: str) -> Any:
    """``owner``'s own attribute (not an inherited one), unbound; ``wrapt.MISSING`` if it has none."""
    try:
        return vars(owner).get(name, wrapt.MISSING)
    except TypeError:  # no __dict__ (slots)
        return getattr(owner, name, wrapt.MISSING)

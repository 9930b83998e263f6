"""The exceptions the module raises beyond the native stepscope.Error."""
from ._stepscope import Error


class ArgumentError(Error, TypeError):
    """An argument of the wrong type, or an unknown keyword: an input problem like any other
    (so `except stepscope.Error` catches it) that is also the TypeError Python code expects."""


ArgumentError.__module__ = "stepscope"

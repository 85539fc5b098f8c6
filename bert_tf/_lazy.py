"""Module-level names that import their module on first use (PEP 562), so importing a package
does not pull in TensorFlow, Keras or tensorflow_text until a name that needs them is read."""

import importlib


def lazy_exports(package, exports):
    """(__getattr__, __dir__) for `package` whose public names map to the module defining them;
    a loaded name is cached in the package's namespace."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name):
        if name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__

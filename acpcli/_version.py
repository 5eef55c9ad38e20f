"""The version, apart from the package's door (``acpcli/__init__.py`` re-exports it), so that
the modules that read it do not import the door, which exports the Python API above them."""

__version__ = "0.1.0.dev0"

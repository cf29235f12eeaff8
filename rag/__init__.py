"""papers: cited question answering over research-paper abstracts and full texts."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("papers-qa")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

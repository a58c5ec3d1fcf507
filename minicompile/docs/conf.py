"""Sphinx's configuration for the documentation site (read by ``sphinx-build -c``; see :mod:`.site`)."""
from minicompile.config import __version__

project = "minicompile"
release = version = __version__
html_title = f"minicompile {version}"

extensions = [
    "myst_nb",  # Markdown pages and notebooks
    "sphinx.ext.autodoc",  # the API reference, from the docstrings
    "minicompile.docs.docstrings",  # the package's docstring habits, as reStructuredText
]

# The notebooks arrive executed (minicompile.docs.notebooks keeps them between builds).
nb_execution_mode = "off"
nb_merge_streams = True  # one block per cell for its printed text, in order
myst_heading_anchors = 3  # README links such as (#use) find their sections

autodoc_member_order = "bysource"
autodoc_typehints = "signature"

html_theme = "furo"
html_static_path = ["static"]
html_css_files = ["pictures.css"]
html_copy_source = False
html_show_sourcelink = False

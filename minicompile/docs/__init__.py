"""The documentation site, and the tutorials as executed notebooks.

``make docs`` (``python -m minicompile.docs site build/docs``) builds the site:
the README, the architecture page, the API reference generated from the
docstrings, and every tutorial executed with its outputs and pictures.
``make tutorials`` (``python -m minicompile.docs notebooks build/notebooks``)
writes the executed notebooks alone; both keep them between runs.

Modules: :mod:`.notebooks` (tutorial scripts -> executed notebooks), :mod:`.api`
(the reference pages), :mod:`.docstrings` (a Sphinx extension for the package's
docstrings), :mod:`.site` (staging and Sphinx), ``conf.py`` (Sphinx's settings),
``architecture.md``.  The packages they need are the ``docs`` extra:
``pip install -e '.[docs]'``.
"""

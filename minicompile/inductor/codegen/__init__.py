"""Code generation: what every generator shares (``common``) and one package per backend
(``cpp``, ``triton``, ``spyre``), each with a ``compile`` module that takes a graph and
returns the compiled callable.  A backend imports the inductor's shared stages and ``ir``,
never another backend."""

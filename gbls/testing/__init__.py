"""gbls in a project's own tests: a pytest plugin that captures graph breaks and recompilations.

The checks (``checks``: ``assert_no_graph_breaks``, ``assert_no_recompiles``, the ``fullgraph``
marker) run the project's code under the worker's capture in the test's own process: no fork, no
sandbox, since it is the project's own test. They import torch; this package's ``__init__`` and
the plugin (``plugin``, which pytest loads in every run where gbls is installed) do not.
"""

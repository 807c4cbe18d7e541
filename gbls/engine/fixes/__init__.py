"""Quick fixes: the catalogue (``catalogue``, ``branches``, ``recompiles``), the source shapes they
look for (``syntax``), the edits they make (``edits``), and which of them gbls offers and prefers
(``policy``)."""

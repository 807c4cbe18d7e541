"""Quick fixes: the catalogue (``catalogue``, ``branches``), the source shapes they look for
(``syntax``), and the edits they make (``edits``)."""

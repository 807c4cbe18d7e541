"""``gbls check``'s output formats, one module each: ``text`` (like ruff's), ``json`` (as
``gbls.schema.json`` describes it), ``sarif`` (for code scanning), ``github`` (workflow annotations);
``common`` what all of them say alike.

Lines and columns are 1-based in every format; ends are exclusive.
"""

"""When an edit may reuse the last analysis: only comments and blank lines moved."""

from __future__ import annotations

from pathlib import Path

from gbls.engine.cache import code_key, line_map

BASE = "import torch\n\n\n@torch.compile\ndef f(x):\n    print(x)  # noisy\n    return x\n"


def key(source: str) -> object:
    found = code_key(source)
    assert found is not None
    return found[0]


def test_comments_and_blank_lines_do_not_change_the_key() -> None:
    edited = "# header\n" + BASE.replace("\n\n\n", "\n\n\n\n").replace(
        "    print(x)  # noisy", "    # print\n    print(x)"
    )
    assert key(edited) == key(BASE)


def test_code_changes_and_column_moves_do_change_it() -> None:
    assert key(BASE.replace("print(x)", "print(x, x)")) != key(BASE)
    assert key(BASE.replace("print(x)", "print( x)")) != key(BASE)  # a column moved


def test_gbls_comments_are_code() -> None:
    assert key(BASE.replace("# noisy", "# gbls: ignore[GB0059]")) != key(BASE)
    assert key(BASE.replace("@torch.compile", "# gbls: example(torch.randn(3))\n@torch.compile")) != key(BASE)


def test_lines_map_token_by_token() -> None:
    old, new = code_key(BASE), code_key("\n\n" + BASE)
    assert old is not None and new is not None
    assert line_map(old[1], new[1])[6] == 8


def test_untokenizable_text_has_no_key() -> None:
    assert code_key("def f(:\n    '''unterminated\n") is None


def test_workspace_imports_are_followed_not_libraries(tmp_path: Path) -> None:
    from gbls.engine.imports import workspace_imports

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "layers.py").write_text("from . import blocks\nimport torch\n")
    (tmp_path / "pkg" / "blocks.py").write_text("X = 1\n")
    (tmp_path / "helpers.py").write_text("import os\n")
    main = tmp_path / "main.py"
    main.write_text("import torch\nimport helpers\nfrom pkg.layers import thing\n")
    found = workspace_imports(str(main), [str(tmp_path)], lambda p: Path(p).read_text())
    assert found == sorted(
        str(tmp_path / name) for name in ("helpers.py", "pkg/__init__.py", "pkg/layers.py", "pkg/blocks.py")
    )

"""Which of the project's tests reach a file (``reach``): found from the syntax only."""

from __future__ import annotations

from pathlib import Path

from gbls.engine import reach
from gbls.engine.sources import read_source

from ..support import FIXTURES


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def test_the_module_name_is_the_file_s_packages_and_its_own() -> None:
    library = FIXTURES / "runs" / "testreach" / "mylib"
    assert reach.module_name(str(library / "ops.py")) == "mylib.ops"
    assert reach.module_name(str(library / "__init__.py")) == "mylib"


def test_tests_that_name_the_module_anywhere_in_them_are_found(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "src/lib/__init__.py": "",
            "src/lib/ops.py": "",
            "src/lib/other.py": "",
            "tests/test_body.py": "def test_x():\n    from lib.ops import Scaler\n",
            "tests/unit/test_plain.py": "import lib.ops as ops\n",
            "tests/test_from_package.py": "from lib import ops\n",
            "tests/ops_test.py": "from lib.ops import *\n",
            "tests/test_other.py": "from lib.other import thing\nimport ops\n",
            "tests/helpers.py": "from lib.ops import Scaler\n",  # not a test file
            "tests/.hidden/test_h.py": "from lib.ops import Scaler\n",
        },
    )
    found = reach.tests_of([str(tmp_path / "src/lib/ops.py")], str(tmp_path), read_source)
    # A file none of whose tests says so, or all of whose tests do (test_body.py's one), runs whole.
    assert [str(Path(path).relative_to(tmp_path)) for path in found] == [
        "tests/ops_test.py",
        "tests/test_body.py",
        "tests/test_from_package.py",
        "tests/unit/test_plain.py",
    ]


def test_of_a_large_test_file_only_the_tests_that_use_the_module_run(tmp_path: Path) -> None:
    """As x-transformers' test_up, the one test of a 197-test file that imports up_wrapper."""
    write(
        tmp_path,
        {
            "lib/__init__.py": "from lib.layers import Dense\n",
            "lib/layers.py": "",
            "lib/up.py": "",
            "tests/test_lib.py": (
                "import pytest\n"
                "from lib import Dense\n"
                "from lib.up import Wrapper as W\n\n"
                "def make():\n    return W(2)\n\n"
                "def make_twice():\n    return make(), make()\n\n"
                "def test_dense():\n    Dense()\n\n"
                "def test_wrapper():\n    W(1)\n\n"
                "def test_helper():\n    make_twice()\n\n"
                "def test_inside():\n    import lib.up\n\n"
                "class TestUp:\n    def test_method(self):\n        W(3)\n\n"
                "    def test_other(self):\n        Dense()\n"
            ),
        },
    )
    found = reach.tests_of([str(tmp_path / "lib/up.py")], str(tmp_path), read_source)
    assert [str(Path(test).relative_to(tmp_path)) for test in found] == [
        "tests/test_lib.py::test_wrapper",
        "tests/test_lib.py::test_helper",
        "tests/test_lib.py::test_inside",
        "tests/test_lib.py::TestUp::test_method",
    ]
    run = reach.test_run(str(tmp_path), found[:1])
    assert (run.module, run.args) == ("pytest", ("tests/test_lib.py::test_wrapper",))


def test_at_most_a_few_test_files_are_run(tmp_path: Path) -> None:
    write(tmp_path, {"ops.py": ""} | {f"test_{n:02}.py": "import ops\n" for n in range(20)})
    found = reach.tests_of([str(tmp_path / "ops.py")], str(tmp_path), read_source)
    assert len(found) == reach.MOST_TESTS and found == sorted(found)


def test_a_file_no_test_imports_has_none(tmp_path: Path) -> None:
    write(tmp_path, {"ops.py": "", "test_a.py": "import os\n", "test_broken.py": "def (:\n"})
    assert reach.tests_of([str(tmp_path / "ops.py")], str(tmp_path), read_source) == []


def test_the_run_is_python_m_pytest_from_the_folder(tmp_path: Path) -> None:
    run = reach.test_run(str(tmp_path), [str(tmp_path / "tests" / "test_ops.py")])
    assert (run.name, run.module, run.args, run.cwd) == (
        "-m pytest tests/test_ops.py",
        "pytest",
        ("tests/test_ops.py",),
        str(tmp_path),
    )


def test_the_test_a_line_is_in_is_named_as_pytest_names_it() -> None:
    source = (
        "import torch\n\n"
        "def test_a():\n    x = 1\n\n"
        "class TestScaler:\n    def test_b(self):\n        y = 2\n\n    def helper(self):\n        pass\n"
    )
    assert reach.test_in("tests/test_x.py", 4, source) == "test_a"
    assert reach.test_in("tests/test_x.py", 8, source) == "TestScaler::test_b"
    assert reach.test_in("tests/test_x.py", 11, source) == ""  # a helper is no test
    assert reach.test_in("tests/test_x.py", 1, source) == ""
    assert reach.test_in("train.py", 4, source) == ""  # not a test file


def test_a_test_file_is_its_own_test(tmp_path: Path) -> None:
    write(tmp_path, {"ops.py": "", "test_ops.py": "import ops\n", "test_more.py": "import test_ops\n"})
    found = reach.tests_of([str(tmp_path / "test_ops.py")], str(tmp_path), read_source)
    assert found == [str(tmp_path / "test_ops.py"), str(tmp_path / "test_more.py")]


def test_a_test_reaches_a_file_through_the_modules_that_import_it(tmp_path: Path) -> None:
    """The optimizers call the compiled utilities: a test of an optimizer reaches them, as one of the
    utilities does; a test of something else does not."""
    write(
        tmp_path,
        {
            "lib/__init__.py": "from lib.optimizers import Adam\n",
            "lib/optimizers.py": "from lib.utils import step\n",
            "lib/utils.py": "",
            "lib/other.py": "",
            "tests/test_lib.py": (
                "from lib import Adam\nfrom lib.utils import step\nfrom lib.other import thing\n\n"
                "def test_adam():\n    Adam()\n\n"
                "def test_step():\n    step()\n\n"
                "def test_thing():\n    thing()\n"
            ),
        },
    )
    found = reach.tests_of([str(tmp_path / "lib/utils.py")], str(tmp_path), read_source)
    assert [str(Path(test).relative_to(tmp_path)) for test in found] == [
        "tests/test_lib.py::test_adam",
        "tests/test_lib.py::test_step",
    ]

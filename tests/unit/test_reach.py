"""What reaches a file (``reach``): the workspace files that import it and compile something, or are
scripts that import a file that does, found from the syntax in one walk of the workspace; and, when
none ran its code, which one to blame."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gbls.engine import reach
from gbls.engine.model import CutReport, failure_report
from gbls.engine.ranges import Span
from gbls.engine.sources import read_source

from .test_reach_tests import write


def test_the_importers_of_several_files_and_of_a_file_outside_the_workspace(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(
        project,
        {
            "model.py": "import torch\n\n\nclass Net(torch.nn.Module):\n    pass\n",
            "layers.py": "def double(x):\n    return x * 2\n",
            "train.py": "import torch\nimport model, layers\nf = torch.compile(model.Net())\n",
            "export.py": "import torch\nimport model\nf = torch.compile(model.Net())\n",
            "plain.py": "from layers import double\n",  # compiles nothing
            # A test: pytest runs it, not the file as a script.
            "test_model.py": "import torch\nfrom model import Net\nf = torch.compile(Net())\n",
        },
    )
    outside = tmp_path / "elsewhere" / "model.py"
    write(outside.parent, {"model.py": "x = 1\n"})
    model, layers = str(project / "model.py"), str(project / "layers.py")
    found = reach.importers([model, layers, str(outside)], str(project), read_source)
    assert {path: sorted(files) for path, files in found.items()} == {
        model: [str(project / "export.py"), str(project / "train.py")],
        layers: [str(project / "train.py")],
        str(outside): [],
    }
    read: list[str] = []

    def reading(path: str) -> str | None:
        read.append(path)
        return read_source(path)

    assert reach.importers([str(outside)], str(project), reading) == {str(outside): []}
    assert read == []  # no file of the workspace was read: none can import a file outside it


def test_a_script_that_calls_compiled_code_without_saying_compile_reaches_it(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "lib/__init__.py": "from lib.layers import Dense\n",
            "lib/layers.py": "class Dense:\n    pass\n",
            "lib/mixer.py": (
                "import torch\n\n\nclass Mixer:\n    @torch.compile\n"
                "    def mix(self, x):\n        return x\n"
            ),
            # Scripts: a loop at the top level, a __main__ block; a package's module is no script.
            "train_mix.py": "from lib.mixer import Mixer\n\nfor _ in range(3):\n    Mixer().mix(1)\n",
            "tools/run.py": "from lib.mixer import Mixer\n\nif __name__ == '__main__':\n    Mixer().mix(1)\n",
            "lib/helpers.py": "from lib.mixer import Mixer\n\nDEFAULT = Mixer()\n",
            # A script that reaches no compiled code: layers compile nothing.
            "use_dense.py": "from lib import Dense\n\nprint(Dense())\n",
        },
    )
    mixer, layers = str(tmp_path / "lib/mixer.py"), str(tmp_path / "lib/layers.py")
    found = reach.importers([mixer, layers], str(tmp_path), read_source)
    scripts = [str(tmp_path / "tools/run.py"), str(tmp_path / "train_mix.py")]
    assert sorted(found[mixer]) == scripts
    # They import lib/layers.py too (lib/__init__.py does); use_dense.py imports nothing that compiles.
    assert sorted(found[layers]) == scripts


def test_the_importer_that_got_furthest_is_blamed(tmp_path: Path) -> None:
    """model.py: bench.py failed importing a library, train.py reached it and was cut before it ran
    compiled code of it: train.py says why."""
    model = str(tmp_path / "model.py")
    bench = dataclasses.replace(
        failure_report(
            str(tmp_path / "bench.py"), "import", "ModuleNotFoundError: No module named 'tiktoken'"
        ),
        failure_span=Span(3, 0, 3, 14),
    )
    cut = CutReport(20.0, str(tmp_path / "train.py"), Span(224, 8, 224, 30), str(tmp_path / "train.py"), None)
    train = dataclasses.replace(
        failure_report(str(tmp_path / "train.py"), "", ""),
        status="ok",
        failure_span=None,
        executed=(str(tmp_path / "train.py"), model),
        cut=cut,
    )
    said = reach.unreached(model, [bench, train], str(tmp_path))
    assert said.startswith("train.py, which imports it, was cut after 20 s at train.py:224, still running")
    assert reach.unreached(model, [bench], str(tmp_path)).startswith("bench.py stopped at line 3 before")

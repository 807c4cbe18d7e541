"""What reaches a file that compiles nothing (``reach``): the workspace files that import it and
compile something, found from the syntax in one walk of the workspace."""

from __future__ import annotations

from pathlib import Path

from gbls.engine import reach
from gbls.engine.sources import read_source

from .test_reaching_tests import write


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

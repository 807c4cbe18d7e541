"""The qualified name of a chain's frame, read from its file: a frame names only ``forward``."""

from __future__ import annotations

from gbls.engine.sources import Sources

MODEL = """\
class Block:
    class MLP:
        def forward(self, x):
            return x

    def forward(self, x):
        def inner(y):
            return y
        return inner(x)


def forward(x):
    return x
"""


def test_a_frame_is_named_with_its_classes_and_enclosing_functions() -> None:
    sources = Sources(lambda path: MODEL)
    assert sources.qualname("model.py", "forward", 4) == "Block.MLP.forward"
    assert sources.qualname("model.py", "forward", 9) == "Block.forward"
    assert sources.qualname("model.py", "inner", 8) == "Block.forward.<locals>.inner"
    assert sources.qualname("model.py", "forward", 13) == "forward"


def test_a_file_that_does_not_say_keeps_the_frames_name() -> None:
    assert Sources(lambda path: MODEL).qualname("model.py", "gone", 4) == "gone"
    assert Sources(lambda path: None).qualname("model.py", "forward", 4) == "forward"
    assert Sources(lambda path: "def (:\n").qualname("model.py", "forward", 1) == "forward"

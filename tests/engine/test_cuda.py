"""Code written for CUDA, analysed where CUDA cannot be used: CUDA mapped to the CPU.

Each fixture under ``fixtures/cuda`` has a twin under ``fixtures/cuda/twins``: the same program
written for the CPU, on the same lines (and, where a break is, the same columns). gbls's report of
the CUDA file is checked against torch's own ``TORCH_LOGS=graph_breaks,recompiles`` log of the twin
run under plain python: the same breaks, effects and recompilations, and a note that says CUDA was
mapped.
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import re
import resource
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import torch

from gbls.engine.model import FileReport
from gbls.runtime import sandbox
from gbls.settings import Settings, from_options
from gbls.worker.analysis import patches
from gbls.worker.analysis.cuda import ToCpu, Unavailable
from gbls.worker.shared.events import CudaOnlyEvent, Event
from gbls.worker.shared.protocol import CudaOnly

from ..support import FIXTURES
from ..support.torchlog import logged_breaks
from ..support.torchlog_recompiles import logged_recompiles
from ..support.worker import Analyse
from .test_engine import TORCH_DIR, root_of
from .test_engine import assert_agrees_with_torch as assert_breaks_agree
from .test_fidelity import assert_effects_are_dynamos, assert_torch_agrees
from .test_hook_guards import logged_guards, logged_script_guards
from .test_recompiles import assert_agrees_with_torch as assert_recompiles_agree

CUDA = FIXTURES / "cuda"
TWINS = CUDA / "twins"
ROOT = Path(__file__).parent.parent.parent
# The twin of every file of the CUDA folder, the helper module the fixtures import included.
TWIN_PATHS = {str(path): str(TWINS / path.name) for path in CUDA.glob("*.py")}
FIXTURE_NAMES = [
    "hardcoded.py",
    "dot_cuda.py",
    "default_device.py",
    "autocast.py",
    "to_device.py",
    "synchronize.py",
    "branches.py",
    "reached.py",
    "break_in_argument.py",  # a break while a mapped device is evaluated
]
# The fixtures whose programs compile each function once.
COMPILED_ONCE = {"synchronize.py", "branches.py", "reached.py", "break_in_argument.py"}
MAPPED = "CUDA was mapped to the CPU: "
T = TypeVar("T")


def as_twin(value: T) -> T:
    """``value`` (a report, however deep) with each CUDA fixture's path replaced by its twin's."""
    if isinstance(value, str):
        return TWIN_PATHS.get(value, value)  # type: ignore[return-value]
    if isinstance(value, tuple):
        return tuple(as_twin(item) for item in value)  # type: ignore[return-value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: as_twin(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        return dataclasses.replace(value, **fields)
    return value


def mapped_notes(report: FileReport) -> list[str]:
    """The report's note that CUDA was mapped (an older torch adds notes of its own)."""
    return [note for note in report.notes if note.startswith(MAPPED)]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
async def test_a_cuda_file_reports_what_torch_logs_for_its_cpu_twin(analyse_file: Analyse, name: str) -> None:
    report = await analyse_file(CUDA / name)
    twin = TWINS / name
    assert report.status == "ok", report.message
    (note,) = mapped_notes(report)
    assert note.startswith(MAPPED + "torch.cuda.is_available() is False here")
    mapped = as_twin(report)
    assert_breaks_agree(mapped, twin)
    assert_torch_agrees(mapped, twin)
    assert_effects_are_dynamos(mapped, twin)
    assert_recompiles_agree(mapped, twin)
    # Not vacuous: every fixture breaks, as its twin does, and recompiles (but those compiled once).
    logged = {root_of(entry) for entry in logged_breaks(twin) if not root_of(entry)[0].startswith(TORCH_DIR)}
    assert report.breaks and {(b.root.path, b.root.span.line) for b in mapped.breaks} == logged
    assert bool(report.recompiles) == bool(logged_recompiles(twin).recompiles) == (name not in COMPILED_ONCE)
    assert all(function.analysed for function in report.functions)


async def test_a_cuda_only_call_is_not_checkable_on_its_line_and_the_rest_is_analysed(
    analyse_file: Analyse,
) -> None:
    fixture = CUDA / "synchronize.py"
    report = await analyse_file(fixture)
    assert report.status == "ok" and not report.message
    # Each the program reached (the one in ``step`` once Dynamo traced it), in the source's order.
    assert [
        (call.call, call.span.line, call.span.column, call.span.end_column, call.skipped)
        for call in report.cuda_only
    ] == [
        ("torch.cuda.synchronize()", 7, 4, 28, True),
        ("torch.cuda.Stream()", 12, 9, 28, False),
        ("torch.cuda.stream(...)", 13, 5, 30, False),
        ("torch.cuda.synchronize()", 15, 0, 24, True),
        ("torch.cuda.memory_allocated()", 16, 9, 38, False),
    ]
    first = report.cuda_only[0]
    assert first.message == (
        "not checkable here: `torch.cuda.synchronize()` needs a GPU, and CUDA was mapped to the CPU: "
        "gbls left it out"
    )
    # The break after it in the same compiled function, and the function compiled after it.
    assert [(b.function, b.gb_id, b.span.line) for b in report.breaks] == [
        ("step", "GB0059", 8),
        ("positive", "GB0036", 21),
    ]
    assert "0.0 MiB" in report.output  # the memory statistic, a placeholder, formatted as 0


async def test_a_program_that_puts_nothing_on_cuda_runs_as_python_runs_it(analyse_file: Analyse) -> None:
    """Run with the device "cpu", the program never takes its CUDA branch (the ``print``): python logs
    no break, and nothing was mapped."""
    fixture = CUDA / "cpu_device.py"
    report = await analyse_file(fixture)
    assert report.status == "ok", report.message
    assert not mapped_notes(report) and report.breaks == () and logged_breaks(fixture) == []
    assert [function.analysed for function in report.functions] == [True]


async def test_only_the_cuda_only_calls_the_program_reached_are_not_checkable(analyse_file: Analyse) -> None:
    """``torch.cuda.set_device`` under ``if ddp:`` and the compiled ``synchronize`` under ``if timed:``
    never run; the statistics reset after the step does."""
    report = await analyse_file(CUDA / "reached.py")
    assert [(call.call, call.span.line, call.skipped) for call in report.cuda_only] == [
        ("torch.cuda.reset_peak_memory_stats()", 19, True)
    ]
    assert mapped_notes(report) and [b.span.line for b in report.breaks] == [14]


def without_comments(guards: list[str]) -> list[str]:
    """Guards without the source line and the file each names (the twin's text, the twin's path)."""
    return [re.sub(r"\s+# .*$", "", guard) for guard in guards]


@pytest.mark.parametrize("name", ["branches.py", "hardcoded.py", "autocast.py", "to_device.py"])
def test_the_mapping_adds_no_guard_to_the_program_written_for_the_cpu(name: str) -> None:
    """Dynamo calls the mapping's functions on the constants they are given instead of tracing them:
    ``gbls check --in-process`` of the CUDA file, where Dynamo translates the mapped code, logs the
    guards that python logs for the CPU twin, a guard on a device the program holds included."""
    twin = logged_script_guards(TWINS / name)
    gbls = [sys.executable, "-m", "gbls", "check", "--in-process", str(CUDA / name)]
    mapped, log = logged_guards(gbls, ROOT, codes=(0, 1))  # where ``-m gbls`` finds gbls
    assert MAPPED in log and "__gbls" not in "".join(mapped)
    assert twin and without_comments(mapped) == without_comments(twin)


async def test_the_device_setting_says_why_cuda_was_mapped(analyse_file: Analyse) -> None:
    fixture = CUDA / "hardcoded.py"
    forced = await analyse_file(fixture, settings=Settings(device="cpu"))
    assert mapped_notes(forced)[0].startswith(MAPPED + 'the device setting is "cpu". ')
    # No GPU here: asked for one, the analysis maps CUDA all the same, and says why.
    wanted = await analyse_file(fixture, settings=Settings(device="cuda"))
    assert mapped_notes(wanted)[0].startswith(
        MAPPED + 'the device setting is "cuda", but torch.cuda.is_available() is False here'
    )
    assert [b.key for b in forced.breaks] == [b.key for b in wanted.breaks] != []


async def test_a_declared_example_is_mapped_too(analyse_file: Analyse, tmp_path: Path) -> None:
    path = tmp_path / "example.py"
    path.write_text(
        "import torch\n\n\n"
        '# gbls: example(torch.randn(4, device="cuda"))\n'
        "@torch.compile\n"
        "def positive(x):\n"
        "    return x.nonzero()\n"
    )
    report = await analyse_file(path)
    (function,) = report.functions
    assert (function.analysed, function.target.input_source, function.target.inputs) == (
        True,
        "example",
        "x: f32[4]",
    )
    assert [b.gb_id for b in report.breaks] == ["GB0036"] and mapped_notes(report)


def limits_in(output: str) -> tuple[int, int]:
    """The soft limits the probe printed (a CUDA build of torch prints warnings of its own around them)."""
    (line,) = [line for line in output.splitlines() if line.startswith("limits ")]
    address_space, data = line.split()[1:]
    return int(address_space), int(data)


async def test_every_analysis_limits_written_memory_not_address_space(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    """CUDA reserves address space far past any memory limit, and graphs whose values are not
    computed map their outputs without writing them: every analysis, on the GPU or not, is limited
    by RLIMIT_DATA, not RLIMIT_AS."""
    probe = tmp_path / "limits.py"
    probe.write_text(
        "from resource import RLIMIT_AS, RLIMIT_DATA, getrlimit\n"
        'print("limits", getrlimit(RLIMIT_AS)[0], getrlimit(RLIMIT_DATA)[0])\n'
    )
    unlimited = resource.getrlimit(resource.RLIMIT_AS)[0], resource.getrlimit(resource.RLIMIT_DATA)[0]
    on_gpu = await analyse_file(probe, settings=Settings(device="cuda"))
    address_space, data = limits_in(on_gpu.output)
    assert address_space == unlimited[0] and data != unlimited[1]
    on_cpu = await analyse_file(probe, settings=Settings(device="auto"))
    address_space, data = limits_in(on_cpu.output)
    assert address_space == unlimited[0] and data != unlimited[1]


@pytest.fixture
def to_cpu() -> Iterator[tuple[ToCpu, list[Event]]]:
    """The mapping of an analysis of ``<cuda>``, installed in this process, and what it emitted."""
    events: list[Event] = []
    installed = ToCpu("a test", "<cuda>", events.append).install()
    yield installed, events
    patches.restore()
    for name in ("__gbls_device__", "__gbls_moved__", "__gbls_no_cuda__", "__gbls_unavailable__"):
        delattr(builtins, name)


def run_mapped(to_cpu: ToCpu, source: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(to_cpu.compile(textwrap.dedent(source), "<cuda>"), namespace)
    return namespace


def test_cuda_code_runs_on_the_cpu_and_torch_still_answers_truthfully(
    to_cpu: tuple[ToCpu, list[Event]],
) -> None:
    mapping, events = to_cpu
    namespace = run_mapped(
        mapping,
        """\
        import torch
        import torch as T
        from torch.cuda import synchronize as sync
        rank = 1
        ones = torch.ones(2, device="cuda")
        names = (f"cuda:{rank}", "cuda:" + str(rank), "cuda:%d" % rank, "cuda:{}".format(rank), rank)
        moved = [ones.to(name) for name in names]
        layer = torch.nn.Linear(2, 2).cuda(0, non_blocking=True)
        pinned = ones.pin_memory()
        on_gpu = ones.is_cuda
        kind = torch.device("cuda").type
        available = torch.cuda.is_available()
        sync()
        T.cuda.synchronize()
        with torch.cuda.stream(torch.cuda.Stream()):
            start = torch.cuda.Event(enable_timing=True)
            start.record()
        timing = f"{start.elapsed_time(start):.1f} ms, {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB"
        major, minor = (*torch.cuda.get_device_capability(), 0, 0)[:2]
        modern = torch.cuda.get_device_capability()[0] >= 8
        """,
    )
    assert mapping.mapped
    assert namespace["ones"].device.type == "cpu" and {t.device.type for t in namespace["moved"]} == {"cpu"}
    assert namespace["layer"].weight.device.type == "cpu" and namespace["pinned"] is namespace["ones"]
    # What the program says keeps its meaning; its tensors are on the CPU, and say so.
    assert namespace["names"][:4] == ("cuda:1",) * 4 and namespace["kind"] == "cuda"
    assert namespace["on_gpu"] is False
    assert namespace["available"] is torch.cuda.is_available() is False
    assert namespace["timing"] == "0.0 ms, 0.0 MiB"
    assert (namespace["major"], namespace["minor"], namespace["modern"]) == (0, 0, False)
    assert [
        (event.call.call, event.call.line, event.call.skipped)
        for event in events
        if isinstance(event, CudaOnlyEvent) and event.call is not None
    ] == [
        ("torch.cuda.synchronize()", 13, True),
        ("torch.cuda.synchronize()", 14, True),
        ("torch.cuda.stream(...)", 15, False),  # not run: nor is the Stream() it would have been given
        ("torch.cuda.Event(...)", 16, False),
        ("torch.cuda.max_memory_allocated()", 18, False),
        ("torch.cuda.get_device_capability()", 19, False),
        ("torch.cuda.get_device_capability()", 20, False),
    ]


def test_the_branches_the_program_tests_take_the_gpu_path_and_the_devices_used_are_the_cpu(
    to_cpu: tuple[ToCpu, list[Event]],
) -> None:
    mapping, events = to_cpu
    namespace = run_mapped(
        mapping,
        """\
        import torch
        device = "cuda"
        device_type = "cuda" if "cuda" in device else "cpu"
        gpu = torch.device("cuda:0")
        path = ("gpu" if device_type == "cuda" else "cpu", gpu.type == "cuda", str(gpu))
        torch.set_default_device(gpu)
        default = torch.zeros(1).device
        torch.set_default_device(None)
        with torch.device(device):
            inside = torch.zeros(1).device
        with torch.autocast(device_type, dtype=torch.bfloat16):
            product = torch.ones(2, 2, device=gpu) @ torch.ones(2, 2, device=0)
        generator = torch.Generator(device)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        """,
    )
    assert namespace["path"] == ("gpu", True, "cuda:0")
    assert (namespace["default"].type, namespace["inside"].type) == ("cpu", "cpu")
    assert (namespace["product"].device.type, namespace["product"].dtype) == ("cpu", torch.bfloat16)
    assert namespace["generator"].device.type == "cpu"
    assert mapping.mapped and events == []  # the synchronize was in a branch never taken


def test_code_that_puts_nothing_on_cuda_is_not_said_to_be_mapped(to_cpu: tuple[ToCpu, list[Event]]) -> None:
    mapping, _ = to_cpu
    namespace = run_mapped(
        mapping,
        """\
        import torch
        device = "cpu"
        x = torch.ones(2, device=device).to(device).to(torch.float64)
        if torch.cuda.is_available():
            print(torch.cuda.device_count())
        if False:
            x = x.cuda()
        """,
    )
    assert namespace["x"].dtype == torch.float64 and not mapping.mapped


def test_the_mapped_code_is_at_the_positions_of_the_code_as_written(
    to_cpu: tuple[ToCpu, list[Event]],
) -> None:
    """What Dynamo translates and reports: each instruction of the mapped code is at a position of
    the code as written (a mapped value's call where the value is), its strings as written."""
    mapping, _ = to_cpu
    cuda = 'import torch\nx = torch.ones(2, device="cuda")\ny = x.to("cuda:0").cuda().is_cuda\n'
    mapped = mapping.compile(cuda, "<cuda>")
    unmapped = compile(cuda, "<cuda>", "exec")
    assert {"cuda", "cuda:0"} <= set(mapped.co_consts)
    if sys.version_info >= (3, 11):
        assert set(mapped.co_positions()) <= set(unmapped.co_positions())
    assert {line for *_, line in mapped.co_lines()} == {line for *_, line in unmapped.co_lines()}


def test_code_that_does_not_use_cuda_is_compiled_as_it_is(to_cpu: tuple[ToCpu, list[Event]]) -> None:
    mapping, _ = to_cpu
    source = "import torch\nif torch.cuda.is_available():\n    print(torch.cuda.device_count())\n"
    code = mapping.compile(source, "<plain>")
    assert code.co_code == compile(source, "<plain>", "exec").co_code


def test_the_placeholder_takes_what_cuda_only_values_are_used_for() -> None:
    value = Unavailable()
    with value.stream(value) as entered:
        assert entered is value
    assert (value + 1, 2 * value, value / 2**20, sum([value, value]), list(value), bool(value)) == (
        0,
        0,
        0,
        0,
        [],
        False,
    )
    assert (f"{value:.2f}", f"{value}", value[0] < 8) == ("0.00", "<not run: needs CUDA>", True)
    with pytest.raises(AttributeError):
        value.__deepcopy__  # noqa: B018 - protocols it has not are not pretended


def test_the_device_setting_and_the_gpu_it_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    assert from_options({"device": "cuda"}).device == "cuda"
    assert from_options({"device": "gpu"}) == Settings()  # a bad value keeps the default
    assert Settings().device == "auto" and Settings().for_worker().device == "auto"
    # Only "cuda" shows the GPU, so only a change to or from it starts another worker.
    assert (
        Settings(device="cpu").worker_key() == Settings().worker_key() != Settings(device="cuda").worker_key()
    )
    assert sandbox.worker_environment({}, gpu=False)["CUDA_VISIBLE_DEVICES"] == ""
    shown = sandbox.worker_environment({}, gpu=True)
    assert "CUDA_VISIBLE_DEVICES" not in shown and shown["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1"
    monkeypatch.setattr(sandbox, "_gpu_devices", lambda: ["/dev/nvidia0", "/dev/nvidiactl"])
    support = sandbox.Bwrap(sized=True, admin=True)
    arguments = sandbox._bwrap_arguments([], support, gpu=True)
    assert "--dev-bind" not in sandbox._bwrap_arguments([], support)
    assert arguments[arguments.index("--dev") + 2 :][:6] == [
        "--dev-bind", "/dev/nvidia0", "/dev/nvidia0", "--dev-bind", "/dev/nvidiactl", "/dev/nvidiactl"
    ]  # fmt: skip


def test_the_cli_shows_cuda_only_calls_in_json_and_text() -> None:
    def check(*arguments: str) -> subprocess.Popen[str]:
        command = [sys.executable, "-m", "gbls", "check", *arguments, str(CUDA / "synchronize.py")]
        return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)

    as_json, as_text = check("--format", "json", "--device", "cpu"), check()
    out, _ = as_json.communicate(timeout=600)
    (file,) = json.loads(out)["files"]
    assert as_json.returncode == 1 and file["status"] == "ok"  # breaks found; the calls fail nothing
    assert [note for note in file["notes"] if note.startswith(MAPPED + 'the device setting is "cpu"')]
    (first,) = [call for call in file["cuda_only"] if call["range"]["start"]["line"] == 7]
    assert (first["call"], first["skipped"], first["range"]) == (
        "torch.cuda.synchronize()",
        True,
        {"start": {"line": 7, "column": 5}, "end": {"line": 7, "column": 29}},
    )
    assert first["message"].startswith("not checkable here: `torch.cuda.synchronize()` needs a GPU")
    assert len(file["cuda_only"]) == 5
    text, _ = as_text.communicate(timeout=600)
    assert (
        "tests/fixtures/cuda/synchronize.py:7:5: note: not checkable here: `torch.cuda.synchronize()`" in text
    )
    assert (
        "Found 2 graph breaks in tests/fixtures/cuda/synchronize.py; 2 compile sites, both analysed." in text
    )


def test_a_cuda_only_call_said_to_be_outside_the_file_is_dropped() -> None:
    """Like a break's frame: a position that cannot be in the analysed source is tampering."""
    from gbls.engine.report import checked
    from gbls.worker.shared.protocol import OK, Result

    path = str(CUDA / "synchronize.py")
    source = (CUDA / "synchronize.py").read_text()
    inside, outside = CudaOnly("torch.cuda.synchronize()", 7, 4, 28, True), CudaOnly("x()", 900, 0, 1, True)
    result = checked(path, source, Result(path=path, status=OK, cuda_only=(inside, outside)))
    assert result.cuda_only == (inside,)
    assert result.failure is not None and result.failure.kind == "tampered"

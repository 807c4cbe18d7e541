"""The lines between the server and the worker: each kind read back as itself, the JSON each side
writes, and a line that does not fit refused."""

from __future__ import annotations

import pytest

from gbls.worker.shared import protocol
from gbls.worker.shared.protocol import (
    PROTOCOL_VERSION,
    AliveLine,
    AnalyseLine,
    CancelLine,
    FatalLine,
    ProtocolError,
    ReadyLine,
    Request,
    Result,
    ResultLine,
)

READY = ReadyLine(
    torch="2.9.0", python="3.11.7", executable="/usr/bin/python3", sandbox="bwrap", scratch="/tmp/gbls-w"
)


def test_every_kind_of_line_is_read_back_as_itself() -> None:
    request = Request(id="a", path="/w/f.py", source="x = 1\n", workspace="/w")
    lines = (
        READY,
        FatalLine(message="no torch"),
        AliveLine(),
        AnalyseLine(request=request),
        CancelLine(id="a"),
    )
    for line in lines:
        assert protocol.decode(protocol.encode(line)) == line
    result = Result(path="/w/f.py", status=protocol.OK, features=("check",))
    answer = protocol.decode(protocol.encode(ResultLine(id="a", result=result)))
    assert isinstance(answer, ResultLine) and protocol.from_dict(Result, answer.result) == result


def test_the_json_on_the_wire() -> None:
    """What either side of another version reads: a change here bumps PROTOCOL_VERSION."""
    v = PROTOCOL_VERSION
    assert protocol.encode(READY) == (
        f'{{"v":{v},"type":"ready","torch":"2.9.0","python":"3.11.7","executable":"/usr/bin/python3",'
        '"sandbox":"bwrap","scratch":"/tmp/gbls-w"}'
    )
    assert protocol.encode(CancelLine(id="a")) == f'{{"v":{v},"type":"cancel","id":"a"}}'
    assert protocol.encode(AliveLine()) == f'{{"v":{v},"type":"alive"}}'


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ('{"v": 2, "type": "alive"}', "protocol version 2"),
        ("[]", "protocol version None"),
        ("alive", "not JSON"),
        (f'{{"v": {PROTOCOL_VERSION}, "type": "hello"}}', "no known type"),
        (f'{{"v": {PROTOCOL_VERSION}}}', "no known type"),
        (f'{{"v": {PROTOCOL_VERSION}, "type": "cancel", "id": 7}}', "CancelLine.id"),
        (f'{{"v": {PROTOCOL_VERSION}, "type": "analyse", "request": {{"id": "a"}}}}', "Request"),
    ],
)
def test_a_line_that_does_not_fit_is_refused(line: str, error: str) -> None:
    with pytest.raises(ProtocolError, match=error):
        protocol.decode(line)

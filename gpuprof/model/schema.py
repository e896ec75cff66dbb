"""The shape of a Run as JSON (run files, store rows), checked before a Run is built from it.

A run file may come from anywhere: a list where a launch belongs, a 26-digit launch index, a 50 MB
kernel name or a metric that is a dict must be refused with the field named, not become a run the
store keeps and every later command trips over. :func:`problem` names the first field that does not
fit; :meth:`gpuprof.model.Run.from_dict` refuses such data.
"""

from __future__ import annotations

from typing import Any

LONGEST_TEXT = 1 << 20  # characters in one string: a kernel name is kilobytes, not megabytes
_INT64 = (-(1 << 63), (1 << 63) - 1)
_DEPTH = 32  # nesting inside device/workload/environment records

_TEXT, _OPTIONAL_TEXT, _INT, _NUMBER, _RECORD, _OPTIONAL_RECORD = (
    "text",
    "text or null",
    "int",
    "number",
    "object",
    "object or null",
)
_RUN = {
    "kind": _TEXT,
    "format": _TEXT,
    "source": _TEXT,
    "device": _RECORD,
    "workload": _OPTIONAL_RECORD,
    "environment": _RECORD,
    "notes": "list of text",
    "created": _TEXT,
    "run_id": _TEXT,
    "schema_version": _INT,
    "launches": "list",
}
_LAUNCH = {
    "kernel": _TEXT,
    "index": _INT,
    "device": _TEXT,
    "invocations": _INT,
    "attributes": "text record",
    "metrics": "list",
}
_METRIC = {
    "name": _TEXT,
    "value": "number, text or null",
    "unit": _TEXT,
    "canonical": _OPTIONAL_TEXT,
    "origin": _TEXT,
    "minimum": "number or null",
    "maximum": "number or null",
}
_REQUIRED = {"run": ("kind", "format", "source"), "launch": ("kernel", "index"), "metric": ("name", "value")}


def _fits(value: Any, kind: str) -> bool:
    if kind in (_TEXT, _OPTIONAL_TEXT):
        return (value is None and kind == _OPTIONAL_TEXT) or (isinstance(value, str) and len(value) <= LONGEST_TEXT)
    if kind == _INT:
        return isinstance(value, int) and not isinstance(value, bool) and _INT64[0] <= value <= _INT64[1]
    if kind in ("number or null", "number, text or null"):
        if value is None or (kind != "number or null" and isinstance(value, str) and len(value) <= LONGEST_TEXT):
            return True
        return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1e309
    if kind in (_RECORD, _OPTIONAL_RECORD):
        return (value is None and kind == _OPTIONAL_RECORD) or (isinstance(value, dict) and _plain(value, 0))
    if kind == "text record":
        return isinstance(value, dict) and all(_fits(v, _TEXT) for v in value.values())
    if kind == "list of text":
        return isinstance(value, list) and all(_fits(v, _TEXT) for v in value)
    return isinstance(value, list)


def _plain(value: Any, depth: int) -> bool:
    """JSON of bounded depth with no string over :data:`LONGEST_TEXT` (device, workload, environment)."""
    if depth > _DEPTH:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) and len(k) <= LONGEST_TEXT and _plain(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, str):
        return len(value) <= LONGEST_TEXT
    return not isinstance(value, int) or _INT64[0] <= value <= _INT64[1] or isinstance(value, bool)


def _record(data: Any, fields: dict[str, str], what: str, where: str) -> str | None:
    if not isinstance(data, dict):
        return f"{where or what}: an object is expected, not {type(data).__name__}"
    for key in data:
        if key not in fields:
            return f"{where}{'.' if where else ''}{str(key)[:40]}: not a field of a {what}"
    for key in _REQUIRED[what]:
        if key not in data:
            return f"{where}{'.' if where else ''}{key}: missing"
    for key, value in data.items():
        if not _fits(value, fields[key]):
            return f"{where}{'.' if where else ''}{key}: {fields[key]} expected" + (
                " (within 32 levels of nesting, no text over 1 MiB characters, integers within 64 bits)"
                if fields[key] in (_RECORD, _OPTIONAL_RECORD)
                else ""
            )
    return None


def problem(data: Any) -> str | None:
    """The first field of ``data`` that does not fit a Run (``launches[3].metrics[0].value: ...``), or None."""
    found = _record(data, _RUN, "run", "")
    if found:
        return found
    for i, launch in enumerate(data.get("launches", [])):
        found = _record(launch, _LAUNCH, "launch", f"launches[{i}]")
        if found:
            return found
        for j, metric in enumerate(launch.get("metrics", [])):
            found = _record(metric, _METRIC, "metric", f"launches[{i}].metrics[{j}]")
            if found:
                return found
    return None

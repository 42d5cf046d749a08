"""JUnit XML view: one testcase per gate (classname = suite), perf checks included."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from qgate.core.provenance import provenance_properties
from qgate.report.localise import worst_notes
from qgate.report.model import Report
from qgate.report.verdict import verdict_label


def render_junit(report: Report) -> str:
    """A <testsuites> document that CI systems show as test results."""
    name = f"qgate.{report.profile.get('name', 'report')}"
    root = ET.Element("testsuites", name=name)
    add_suite(root, name, report)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def add_suite(root: ET.Element, name: str, report: Report) -> None:
    """One <testsuite> of a report's gates under `root`."""
    verdicts = report.all_verdicts()
    failures = sum(1 for v in verdicts if not v.passed)
    skipped = 1 if report.perf.status.startswith("skipped") else 0
    suite = ET.SubElement(
        root,
        "testsuite",
        name=name,
        tests=str(len(verdicts) + skipped),
        failures=str(failures),
        errors="0",
        skipped=str(skipped),
        timestamp=report.created_at,
    )
    props = ET.SubElement(suite, "properties")
    for key, value in (
        ("verdict", verdict_label(report.verdict)),
        ("perf_status", report.perf.status),
        ("profile_sha256", report.profile_sha256),
        ("qgate_version", report.qgate_version),
        *provenance_properties(report.provenance),
    ):
        ET.SubElement(props, "property", name=key, value=value)
    notes = worst_notes(report)  # where a failed gate's damage sits, beside its stored reason
    for v in verdicts:
        case = ET.SubElement(suite, "testcase", name=v.gate, classname=v.suite, time="0")
        detail = (
            f"observed={v.observed} limit={v.limit}"
            + (f" n={v.n}" if v.n is not None else "")
            + (f" power={v.power:.3f}" if v.power is not None else "")
            + (" underpowered" if v.underpowered else "")
        )
        if not v.passed:
            kind = (
                "GateInconclusive"
                if v.inconclusive
                else "GateNotExercised"
                if v.exercised is False
                else "GateFailed"
                if v.settled
                else "GateNotSettled"
            )
            failure = ET.SubElement(case, "failure", message=v.reason, type=kind)
            failure.text = detail + (f" — {notes[v.gate]}" if v.gate in notes else "")
        else:
            ET.SubElement(case, "system-out").text = f"{v.reason} ({detail})"
    if skipped:
        case = ET.SubElement(suite, "testcase", name="perf", classname="perf", time="0")
        ET.SubElement(case, "skipped", message=report.perf.status)

"""Write each heavy test's measured peak memory beside it (issue 54): reads the list a `pytest` session ends with
(tests/conftest.py's pytest_terminal_summary, e.g. a `.ci/run` log) and puts, above each test function (above its
decorators), one comment line `# peak memory: <GB> GB of the machine in use while it ran (<source>)`, replacing the
one an earlier run wrote. A parametrized test gets its highest case.

    python scripts/write_test_peaks.py CI_LOG "fresh-clone .ci/run of <commit>, <date>, <machine kind>"
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LINE = re.compile(r"^\s*(\d+\.\d+) GB\s+[+-]\d+\.\d+ to Ray's threshold\s+(tests/\S+?\.py)::(\S+?)(\[.*\])?(\s|$)")
TAG = "# peak memory: "


def peaks(log: str) -> dict[tuple[str, str], float]:
    """(file, test name) -> its highest peak in GB, from the summary lines of `log`."""
    found: dict[tuple[str, str], float] = {}
    for line in log.splitlines():
        m = LINE.match(line)
        if m:
            key = (m.group(2), m.group(3).split("::")[-1])
            found[key] = max(float(m.group(1)), found.get(key, 0.0))
    return found


def write(root: Path, found: dict[tuple[str, str], float], source: str) -> list[str]:
    """Put the comment above each test in `found`; the tests not found in their file (names to check)."""
    missing = []
    by_file: dict[str, dict[str, float]] = {}
    for (path, name), gb in found.items():
        by_file.setdefault(path, {})[name] = gb
    for path, tests in by_file.items():
        lines = (root / path).read_text().splitlines(keepends=True)
        for name, gb in tests.items():
            at = next((i for i, line in enumerate(lines) if re.match(rf"\s*(async\s+)?def {re.escape(name)}\(", line)), None)
            if at is None:
                missing.append(f"{path}::{name}")
                continue
            indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
            top = at
            while top > 0 and _in_decorators(lines[top - 1], indent):
                top -= 1
            comment = f"{indent}{TAG}{gb:.1f} GB of the machine in use while it ran ({source})\n"
            if top > 0 and lines[top - 1].lstrip().startswith(TAG):
                lines[top - 1] = comment
            else:
                lines.insert(top, comment)
        (root / path).write_text("".join(lines))
    return missing


def _in_decorators(line: str, indent: str) -> bool:
    """Whether `line`, above a def indented by `indent`, belongs to its decorators: one (`@...`), or a line of one
    spread over several (indented deeper, or closing its brackets)."""
    body = line.lstrip()
    if not body or body.startswith("#"):
        return False
    return body.startswith("@") or len(line) - len(body) > len(indent) or body[0] in ")]}"


def main(argv: list[str]) -> int:
    log, source = Path(argv[1]).read_text(errors="replace"), argv[2]
    found = peaks(log)
    missing = write(Path(__file__).resolve().parents[1], found, source)
    print(f"{len(found)} tests' peaks written" + (f"; not found: {', '.join(missing)}" if missing else ""))
    return 1 if missing or not found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""README.md and docs/*.md say only what the checkout does: their links lead to files, the repo paths they name
exist, and every app command they show is one the app accepts.

Why: the docs are how a user finds a command. A renamed file, a dropped config option or a misspelt key in a
documented command fails here, not on the user's machine.

- Links: every relative markdown link `[x](path)` or `[x](path#anchor)` names a file of the checkout, and an anchor
  names a heading of its Markdown file.
- Paths: every repo path in backticks or in a code block (`judge_rl/...`, `conf/...`, `scripts/...`, `tests/...`,
  `sweeps/...`, `experiments/...`, `packaging/...`, `docs/...`, `.ci/...`) exists. A path with a placeholder
  (`<...>`, `*`, `{...}`) is a pattern, not a path, and is not checked.
- Commands: every command line of an app, in a code block or in backticks, is checked without running a job. The
  forms: `python -m judge_rl[.eval|.policy|.curate|.report] ...`, the same after `.venv/bin/python`, `make run
  ARGS="..."` and the console command `judge-rl [eval|policy|curate|report] ...`, after any `NAME=value` environment
  words. A Hydra app's overrides are composed in process by Hydra (conf/, as the app composes them before it runs):
  an unknown group option or key fails. A sweep (`-m`) composes once per swept config-group option, the options of
  its sweep file (`hydra.sweeper.params`) included. `judge_rl.report` (argparse) parses its arguments with its own
  parser, and its writer is stubbed out; `python -m judge_rl.report` alone is the app's name, not a command. Another
  `judge_rl` module (`python -m judge_rl.servers.http`) must exist. A placeholder in a command (`<dir>`, `$VAR`, a
  lone `...`) fails: write a command that runs, or list it in `SKIP` with the reason. A command that needs an
  optional extra that `make install` leaves out (`NEEDS`) is skipped, with the reason, where the extra is absent.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import shlex
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser

import judge_rl.config.schema  # noqa: F401  registers the structured schemas conf/ names (server/_schema, ...)

from conftest import CONF_DIR, REPO_ROOT

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
APPS = {"judge_rl": "config", "judge_rl.eval": "evaluate", "judge_rl.policy": "policy", "judge_rl.curate": "curate",
        "judge_rl.report": None}  # module -> its conf/<name>.yaml (None: argparse)
CONSOLE_WORDS = {"eval": "judge_rl.eval", "policy": "judge_rl.policy", "curate": "judge_rl.curate",
                 "report": "judge_rl.report"}  # `judge-rl <word> ...`; no word: the main job
# Exact command text -> why it is not checked. Keep it short: a documented command should run.
SKIP: dict[str, str] = {}
# A command that names this word needs this module, an optional extra that `make install` leaves out.
NEEDS = {"hydra/launcher=submitit_slurm": ("hydra_plugins.hydra_submitit_launcher",
                                           'the SLURM launcher is the optional extra `pip install -e ".[cluster]"`')}
REPO_PATH = re.compile(r"(?<![\w./$-])(?:judge_rl|conf|scripts|tests|sweeps|experiments|packaging|docs|\.ci)/[\w./-]*")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
ENV_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=\S*")


@dataclass(frozen=True)
class Shown:
    """A piece of code a doc shows: its file, line, text, and whether it is a code block's line."""

    doc: Path
    line: int
    text: str
    block: bool

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(REPO_ROOT)}:{self.line}"


def prose_and_code(doc: Path) -> tuple[list[tuple[int, str]], list[Shown]]:
    """The doc's prose lines (outside code blocks) and every code it shows: each code-block line (a line ending in
    `\\` joined with the next) and each backticked span of the prose."""
    prose, code, fence, pending = [], [], False, None
    for n, line in enumerate(doc.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            if pending is not None:
                start, text = pending
                line, n = text + " " + line.strip(), start
            if line.rstrip().endswith("\\"):
                pending = (n, line.rstrip()[:-1].rstrip())
                continue
            pending = None
            code.append(Shown(doc, n, line.strip(), True))
            continue
        prose.append((n, line))
        code += [Shown(doc, n, s.replace("\\|", "|").strip(), False) for s in SPAN.findall(line)]
    return prose, code


def shown_code() -> list[Shown]:
    return [c for doc in DOCS for c in prose_and_code(doc)[1]]


# ------------------------------------------------------------------ links and paths


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@functools.lru_cache(maxsize=None)
def anchors(doc: Path) -> set[str]:
    """The anchors of a Markdown file's headings (a repeated heading gets -1, -2, ... as on GitHub)."""
    seen: Counter[str] = Counter()
    out = set()
    for _, line in prose_and_code(doc)[0]:
        m = re.match(r"#{1,6}\s+(.*)", line)
        if m:
            s = slug(m.group(1))
            out.add(s if not seen[s] else f"{s}-{seen[s]}")
            seen[s] += 1
    return out


def bad_links(doc: Path, base: Path | None = None) -> tuple[int, list[str]]:
    """The number of relative links in `doc` (relative to `base`, default its folder), and one line for each that
    names no file or no heading."""
    bad, n, base = [], 0, base or doc.parent
    for line_no, line in prose_and_code(doc)[0]:
        for target in LINK.findall(SPAN.sub("", line)):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            n += 1
            path, _, anchor = target.partition("#")
            file = (base / path).resolve() if path else doc
            where = f"{doc.name if base != doc.parent else doc.relative_to(REPO_ROOT)}:{line_no}: {target}"
            if not file.exists() or (path and not file.is_relative_to(REPO_ROOT)):
                bad.append(f"{where}: no such file in the checkout")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                bad.append(f"{where}: no heading #{anchor} in {file.relative_to(REPO_ROOT)}")
    return n, bad


def bad_paths(code: list[Shown]) -> tuple[int, list[str]]:
    """The number of repo paths named in `code`, and one line for each that does not exist."""
    bad, n = [], 0
    for c in code:
        for m in REPO_PATH.finditer(c.text):
            if c.text[m.end():m.end() + 1] in ("<", "*", "{"):
                continue  # a pattern such as judge_rl/evaluation/benchmarks/<kind>.py
            n += 1
            path = m.group(0).rstrip(".")
            if not (REPO_ROOT / path).exists():
                bad.append(f"{c.where}: {path}")
    return n, bad


def test_every_relative_link_leads_to_a_file_and_heading():
    results = [bad_links(doc) for doc in DOCS]
    assert sum(n for n, _ in results) > 10, "the docs link their pages: expected more links"
    bad = [line for _, lines in results for line in lines]
    assert not bad, "\n".join(bad)


def test_every_repo_path_the_docs_name_exists():
    n, bad = bad_paths(shown_code())
    assert n > 50
    assert not bad, "paths named in the docs that do not exist:\n" + "\n".join(bad)


# an absolute path in a documented command: one machine's folder, which a reader's checkout does not have; system
# folders and /tmp are everyone's
ABSOLUTE = re.compile(r"(?:^|(?<=[\s=(\"'`]))/[A-Za-z][\w.-]*/[\w./<>-]*", re.M)
EVERYONE_S = ("/tmp/", "/dev/", "/proc/", "/usr/", "/etc/")


def absolute_paths(code: list[Shown]) -> list[str]:
    return [f"{c.where}: {m.group(0)}" for c in code for m in ABSOLUTE.finditer(c.text)
            if not m.group(0).startswith(EVERYONE_S)]


def test_no_documented_command_names_one_machines_folder():
    """Commands use paths a reader can run from the checkout (relative ones, ../shared, /tmp): a study's commands once
    wrote under an absolute folder of the machine they ran on."""
    assert not absolute_paths(shown_code()), "\n".join(absolute_paths(shown_code()))
    probe = [Shown(REPO_ROOT / "probe.md", 1, "JUDGE_RL_LADDER=/work/study/ladder python -m judge_rl run_dir=/tmp/x "
                   "cache_dir=/home/u/c", True)]
    assert absolute_paths(probe) == ["probe.md:1: /work/study/ladder", "probe.md:1: /home/u/c"]


def test_the_link_and_path_checks_fail_what_does_not_exist(tmp_path):
    """The checks can fail: a link to a missing file, a missing heading, and a missing repo path are each found."""
    doc = tmp_path / "probe.md"
    doc.write_text("# Probe\n\n[a](training.md#no-such-heading) [b](nope.md) [c](#probe) [d](configuration.md#wb)\n"
                   "Code: `judge_rl/no_such_module.py` and `judge_rl/recipes/<recipe>.py`.\n")
    n, bad = bad_links(doc, base=REPO_ROOT / "docs")  # links resolved from docs/, as the real pages' are
    assert n == 4 and len(bad) == 2 and "no heading #no-such-heading" in bad[0] and "no such file" in bad[1], bad
    code = [Shown(REPO_ROOT / "README.md", 4, c.text, False) for c in prose_and_code(doc)[1]]
    n, bad = bad_paths(code)
    assert n == 1 and bad == ["README.md:4: judge_rl/no_such_module.py"], bad


# ------------------------------------------------------------------ commands


@dataclass(frozen=True)
class Command:
    """An app command a doc shows: the module it runs and its arguments."""

    shown: Shown
    module: str
    args: tuple[str, ...]


def as_command(shown: Shown) -> Command | None:
    """The app command `shown` is, or None where it runs no app of judge_rl."""
    try:
        words = shlex.split(shown.text, comments=True)
    except ValueError:  # unbalanced quotes: prose in backticks, not a command
        return None
    while words and ENV_WORD.fullmatch(words[0]):
        words = words[1:]
    if words[:2] == ["make", "run"]:
        args = [w for w in words[2:] if w.startswith("ARGS=")]
        return Command(shown, "judge_rl", tuple(shlex.split(args[0][5:])) if args else ())
    if words[:1] == ["judge-rl"]:
        module = CONSOLE_WORDS.get(words[1], "judge_rl") if len(words) > 1 else "judge_rl"
        return Command(shown, module, tuple(words[1 + (module != "judge_rl"):]))
    if len(words) >= 3 and Path(words[0]).name in ("python", "python3") and words[1] == "-m":
        if words[2] == "judge_rl" or words[2].startswith("judge_rl."):
            return Command(shown, words[2], tuple(words[3:]))
    return None


def shown_commands() -> list[Command]:
    """Every app command README.md and docs/*.md show."""
    return [c for c in map(as_command, shown_code()) if c is not None]


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is not there either
        return False


def module_exists(module: str) -> bool:
    """A module of this checkout (`judge_rl.servers.http`), found by its file: nothing is imported."""
    path = REPO_ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__main__.py").is_file()


def hydra_overrides(args: tuple[str, ...]) -> list[str]:
    """The overrides of a Hydra app's command line, flags read as the app reads them (judge_rl/jobs/shell.py)."""
    out, words = [], list(args)
    while words:
        w = words.pop(0)
        if w in ("-m", "--multirun", "--resolve"):
            continue
        if w in ("--cfg", "-c"):
            assert words and words.pop(0) in ("job", "hydra", "all"), f"{w} takes job, hydra or all"
        elif w == "--dry-run":
            out.append("dry_run=true")
        elif w.startswith("-") and not w.startswith("--cfg="):
            raise AssertionError(f"{w}: not a flag of judge_rl's Hydra apps")
        elif not w.startswith("-"):
            out.append(w)
    return out


def is_group(key: str) -> bool:
    """Whether `key` names a config group (conf/<key>/, or sweeps/ and experiments/ at the repo root)."""
    return (CONF_DIR / key).is_dir() or (REPO_ROOT / key).is_dir()


def sweep_points(overrides: list[str]) -> list[tuple[str, ...]]:
    """Override lists that cover every swept config-group option once: each sweep at its first value, then each other
    option of a swept group in turn. Other values of a plain key (`trainer.total_steps=10,20`) differ from the first
    only in value, so the first stands for them."""
    parsed = OverridesParser.create().parse_overrides(overrides)
    first = [next(iter(o.sweep_string_iterator())) if o.is_sweep_override() else None for o in parsed]
    base = [text if v is None else f"{o.get_key_element()}={v}" for text, o, v in zip(overrides, parsed, first)]
    points = [tuple(base)]
    for i, o in enumerate(parsed):
        if o.is_sweep_override() and is_group(o.key_or_group):
            points += [tuple(base[:i] + [f"{o.get_key_element()}={v}"] + base[i + 1:])
                       for v in list(o.sweep_string_iterator())[1:]]
    return points


@functools.lru_cache(maxsize=None)
def composed(config_name: str, overrides: tuple[str, ...]):
    """conf/<config_name>.yaml composed with `overrides` as the app composes it (Hydra config included); no job runs."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name=config_name, overrides=list(overrides), return_hydra_config=True)


def check_hydra_command(config_name: str, args: tuple[str, ...]) -> int:
    """Compose every point of the command line (`sweep_points`), and the points of the sweep file it names
    (`+sweeps=...`: its `hydra.sweeper.params`, for keys the command line does not set). The sweep file's first point
    composes with the whole command line; its other points as the sweep file makes them, with their own option alone
    (the same for every command that runs that sweep, so composed once). Returns the number of points."""
    n = 0
    for point in sweep_points(hydra_overrides(args)):
        cfg = composed(config_name, point)
        n += 1
        given = {o.key_or_group for o in OverridesParser.create().parse_overrides(list(point))}
        params = cfg.hydra.sweeper.get("params") or {}
        swept = [f"{k}={v}" for k, v in params.items() if k.lstrip("+~") not in given]
        if not swept:
            continue
        first, *others = sweep_points(swept)
        composed(config_name, (*point, *first))
        sweep_file = tuple(o for o in point if o.lstrip("+").startswith("sweeps="))
        for values in others:
            composed(config_name, (*sweep_file, *values))
        n += 1 + len(others)
    return n


class ReportParsed(Exception):
    """Raised in place of writing the report: judge_rl.report's parser accepted the arguments."""


def check_report_command(args: tuple[str, ...], monkeypatch) -> None:
    """Parse `python -m judge_rl.report` arguments with the app's own parser; `--paper` must name published numbers.
    Nothing is read or written: the report's writer is replaced by a stub that stops the app."""
    import judge_rl.report as report

    def parsed(paths, out, columns, paper, *rest):
        papers = yaml.safe_load((REPO_ROOT / "judge_rl/reports/paper_results.yaml").read_text())
        assert paper is None or paper in papers, f"--paper {paper}: not a key of judge_rl/reports/paper_results.yaml"
        raise ReportParsed

    monkeypatch.setattr(report, "write_report", parsed)
    with pytest.raises(ReportParsed):
        report.main(list(args))


COMMANDS = shown_commands()


def test_the_docs_show_commands_of_every_app():
    """Every app has at least one documented command with arguments: the extraction below finds them."""
    shown = Counter(c.module for c in COMMANDS if c.args)
    assert all(shown[m] for m in APPS), shown


@pytest.mark.parametrize("command", COMMANDS, ids=[c.shown.where for c in COMMANDS])
def test_a_documented_command_is_accepted_by_its_app(command: Command, monkeypatch):
    """The command composes (Hydra apps) or parses (the report app) as its app would read it; nothing runs."""
    text = command.shown.text
    if text in SKIP:
        pytest.skip(SKIP[text])
    for word, (module, why) in NEEDS.items():
        if word in command.args and not installed(module):
            pytest.skip(f"{word}: {why}")
    if command.module not in APPS:
        assert module_exists(command.module), f"{command.shown.where}: no module {command.module}"
        return
    if not command.args and APPS[command.module] is None:
        return  # the report app's name: it runs only on directories
    placeholders = [w for w in command.args if "<" in w or "$" in w or w in ("...", "…")]
    assert not placeholders, f"{command.shown.where}: placeholders {placeholders} in `{text}`: show a command that runs"
    monkeypatch.setenv("JUDGE_RL_ROOT", str(REPO_ROOT))  # conf/config.yaml's search path: experiments/, sweeps/
    if APPS[command.module] is None:
        check_report_command(command.args, monkeypatch)
    else:
        assert check_hydra_command(APPS[command.module], command.args) >= 1


def test_the_command_check_fails_a_misspelt_option_or_key(monkeypatch):
    """The check can fail: a group option, a key or a swept value that does not exist each fail composition."""
    from hydra.errors import HydraException

    monkeypatch.setenv("JUDGE_RL_ROOT", str(REPO_ROOT))
    for args in (("reward=strenght",), ("trainer.total_stepz=3",), ("-m", "algorithm=grpo,nope"),
                 ("-m", "+sweeps=thinkj_table99")):
        with pytest.raises(HydraException):
            check_hydra_command("config", args)
    with pytest.raises(HydraException):
        check_hydra_command("evaluate", ("--dry-run",))  # the eval app has no dry_run
    with pytest.raises(SystemExit):
        check_report_command(("multirun/x", "--colums", "wall_s"), monkeypatch)
    assert as_command(Shown(REPO_ROOT, 1, 'FOO=1 make run ARGS="algorithm=bt logger=none"', True)).args == (
        "algorithm=bt", "logger=none")
    assert as_command(Shown(REPO_ROOT, 1, "judge-rl eval benchmark=shp", True)).module == "judge_rl.eval"

"""The fenced blocks of README.md and docs/*.md, as tests/test_docs_commands.py runs them
and tests/test_pytest_plugin.py takes the plugin's examples from them.

A block's language is its fence's tag. The commands are ``sh`` (or ``bash``; each line a
command, ``\\`` continuing it), ``console`` (``$ COMMAND`` lines, each followed by what it
prints), ``yaml`` (a CI job's ``steps``) and ``python``; ``text``, ``json`` and ``ini``
blocks are not commands. A block of commands that is not run here says why on the line
right before its fence, as an HTML comment (the site and GitHub show nothing of it):

    <!-- not run here: REASON -->                   the whole block
    <!-- lines with `TEXT` not run here: REASON -->  its lines that hold TEXT
    <!-- run by .ci/run -->                         every command of it is a line of .ci/run
    <!-- run by tests/test_NAME.py -->              that test runs it as written, and checks
                                                    more (it takes it with ``run_by``)

Every block is still checked for syntax (``bash -n``, ``compile``, YAML).
"""

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CI_RUN = ROOT / ".ci" / "run"
COMMANDS = ("sh", "bash", "console", "yaml", "python")
NOT_COMMANDS = ("text", "json", "ini")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<language>[\w+-]*)\s*$")
MARKER = re.compile(
    r"^\s*<!-- (?:lines with `(?P<text>[^`]+)` )?not run here: (?P<reason>.*?) -->$"
)
RUN_BY = re.compile(r"^\s*<!-- run by (?P<runner>\.ci/run|tests/\w+\.py) -->$")
ANY_MARKER = re.compile(r"^\s*<!--.*\b(not run here|run by)\b")  # a line that is one


@dataclass
class Block:
    path: str  # relative to the checkout: README.md, docs/mirror.md
    line: int  # the opening fence's line, from 1
    language: str  # the fence's tag ("" if none)
    text: str
    reason: str | None = None  # why it, or some of its lines, is not run here
    skipped: str | None = None  # only the lines with this text are not run here
    runner: str | None = None  # what runs it instead: .ci/run, tests/test_NAME.py

    @property
    def where(self):
        return f"{self.path}:{self.line}"

    @property
    def run_here(self):
        """Whether tests/test_docs_commands.py runs it (some of its lines, when
        ``skipped``)."""
        return (
            self.language in COMMANDS
            and self.runner is None
            and (self.reason is None or self.skipped is not None)
        )

    def commands(self):
        """Its shell commands: each line, continuation lines joined to it, without blank
        lines and comment lines; a ``console`` block's ``$`` lines."""
        if self.language == "console":
            return [command for command, _ in transcript(self.text)]
        commands, current = [], ""
        for line in self.text.splitlines():
            current += line
            if line.endswith("\\"):
                current += "\n"
                continue
            if current.strip() and not current.strip().startswith("#"):
                commands.append(current.strip())
            current = ""
        return commands

    def commands_run_here(self):
        return [c for c in self.commands() if self.skipped is None or self.skipped not in c]


def transcript(text):
    """A console block as [(command, [the lines it prints]), ...]."""
    pairs = []
    for line in text.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:], []))
        elif pairs:
            pairs[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"a console block starts with a $ line, not {line!r}")
    return pairs


def pages():
    """README.md and docs/*.md, as paths relative to the checkout."""
    return ["README.md", *(f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md")))]


def blocks(path):
    """The fenced blocks of one page, with the marker right before each."""
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    found, number = [], 0
    while number < len(lines):
        opening = FENCE.match(lines[number])
        if not opening:
            number += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        end = number + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        block = Block(
            path,
            number + 1,
            opening["language"],
            "\n".join(line[indent:] for line in lines[number + 1 : end]) + "\n",
        )
        before = lines[number - 1] if number else ""
        if marker := MARKER.match(before):
            block.reason, block.skipped = marker["reason"].strip(), marker["text"]
        if run_by := RUN_BY.match(before):
            block.runner = run_by["runner"]
        found.append(block)
        number = end + 1
    return found


def all_blocks():
    return [block for path in pages() for block in blocks(path)]


def stray_markers(path):
    """Markers that are not on the line right before an opening fence: (line, text)."""
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    before_fence = {block.line - 2 for block in blocks(path)}
    return [
        (number + 1, line)
        for number, line in enumerate(lines)
        if ANY_MARKER.search(line) and number not in before_fence
    ]


def run_by(runner):
    """The blocks marked as run by ``runner`` (tests/test_NAME.py), for it to run."""
    found = [block for block in all_blocks() if block.runner == runner]
    assert found, f"no block is marked <!-- run by {runner} -->"
    return found


def plugin_examples():
    """The Python blocks that are a client project's tests using the pytest plugin."""
    return [
        b
        for b in all_blocks()
        if b.language == "python" and re.search(r"def test_\w*\(.*demoserv_", b.text)
    ]


def plugin_ini():
    """The ini blocks that configure the pytest plugin."""
    return [b for b in all_blocks() if b.language == "ini" and "demoserv_catalogue" in b.text]

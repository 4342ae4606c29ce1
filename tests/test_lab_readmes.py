"""Each lab's README, run as a student runs it: every `sh` block in order, in a terminal
(bash reading the block), on the cluster `make up` starts; every command must succeed
unless the README says it fails, and each output block the README shows must appear in
what the terminals printed.

How a README reads here, as a person would read it:
- a fenced block marked `sh` is typed into the current terminal;
- every command in it must exit 0, except one whose line ends with the comment
  `# fails` (or `# fails: why`), which must exit with another status: a lab that shows
  an error on purpose (the API server down, a permission denied) says so where the
  command is; for a command written over several lines, the comment ends its last one;
- prose between blocks that says "another terminal" opens a new one (the previous block
  keeps running there, like a controller in the foreground);
- a fenced block right after a `sh` block that is not `sh` itself is what the terminals
  print: each of its lines must appear (a line "..." stands for lines left out, a
  "  # comment" at the end of a line is the README's remark, AGE and IP columns may
  differ).

How a failure is seen: each terminal's bash reports, through an ERR trap, every command
that ends with a status other than 0 (as `set -e` would stop at it: not the conditions
of `if`, `while` or `||`); a `# fails` command is run as `{ command; } && report`, which
reports it only if it succeeded. A command that fails in a pipeline but not at its end is
not seen, as bash does not see it without `pipefail`.

HOME is a fresh folder, so `~/.minikube-py` is this test's cluster and `make up` in a
README starts it; the test stops it and deletes it at the end. The image cache
(XDG_CACHE_HOME) stays the user's.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
# The autoscaling lab starts the cluster again with shorter HPA periods (`up
# --extra-config`), which later `up`s keep; the troubleshooting lab purges the home and
# builds a kubeadm-layout cluster: both run after the labs that share the usual one, so
# that only the last pays for a cold `up`.
LABS = ("scheduler", "scheduler_plugin", "controller", "life_of_a_pod", "service_packet",
        "scheduling_external", "operator", "storage", "network_policy", "gateway",
        "autoscaling", "troubleshooting")
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
BLOCK_TIMEOUT = 180.0  # seconds: `make up` on a new home builds the images
OUTPUT_TIMEOUT = 60.0  # seconds for a promised line to appear (a bound for failures)
# Columns whose values differ from run to run: ages (3s, 2m5s, 4h) and pod IPs.
VOLATILE = re.compile(r"^(\d+[smhd](\d+[sm])?|\d+\.\d+\.\d+\.\d+)$")
COMMENT = re.compile(r"\s{2,}#.*$")
EXPECTED_TO_FAIL = re.compile(r"\s+#\s*fails\b.*$")  # the end of a command's last line
FAILED = "@@failed"  # what a terminal prints for a command that failed: status, command
SUCCEEDED = "@@succeeded-though-it-fails"  # ... for a `# fails` command that did not
REPORT_FAILURES = f"trap 'echo \"{FAILED} $? $BASH_COMMAND\"' ERR"


@dataclass
class Block:
    language: str
    text: str
    prose_before: str  # what the README says between the previous block and this one


def blocks(readme: Path) -> list[Block]:
    text = readme.read_text()
    found, last_end = [], 0
    for match in FENCE.finditer(text):
        found.append(Block(match.group(1), match.group(2), text[last_end:match.start()]))
        last_end = match.end()
    return found


def opens_terminal(block: Block) -> bool:
    return "another terminal" in block.prose_before.lower()


def commands_to_type(text: str) -> str:
    """A block as typed, each command marked `# fails` wrapped to report a success."""
    typed, command = [], []
    for line in text.splitlines():
        command.append(line)
        if line.endswith("\\"):  # continued on the next line
            continue
        marked = EXPECTED_TO_FAIL.search(command[-1])
        if marked:
            shown = " ".join(part.rstrip("\\").strip() for part in command)
            command[-1] = command[-1][:marked.start()]
            command[0] = "{ " + command[0]
            command[-1] += f"; }} && echo {shlex.quote(f'{SUCCEEDED} {shown}')}"
        typed += command
        command = []
    return "\n".join(typed + command)


def promised_lines(block: Block) -> list[str]:
    lines = [COMMENT.sub("", line).rstrip() for line in block.text.splitlines()]
    return [line for line in lines if line.strip() and line.strip() != "..."]


def line_matches(expected: str, printed: str) -> bool:
    """Same words in the same order, volatile columns aside; a sentence (three words or
    more, a log line) also matches a printed line that contains it."""
    want, got = expected.split(), printed.split()
    if len(want) == len(got) and all(w == g or (VOLATILE.match(w) and VOLATILE.match(g))
                                     for w, g in zip(want, got, strict=True)):
        return True
    return len(want) >= 3 and " ".join(want) in " ".join(got)


@dataclass
class Terminal:
    """bash reading commands from a pipe, as a terminal's shell reads what is typed; its
    output (and that of everything it starts in the background) is collected."""

    env: dict[str, str]
    process: subprocess.Popen[bytes] = field(init=False)
    lines: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.process = subprocess.Popen(
            ["bash"], cwd=ROOT, env=self.env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()
        assert self.process.stdin is not None
        self.process.stdin.write(f"{REPORT_FAILURES}\n".encode())
        self.process.stdin.flush()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.lines.append(raw.decode(errors="replace").rstrip("\n"))

    def type(self, commands: str, marker: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{commands}\necho {marker} $?\n".encode())
        self.process.stdin.flush()

    def close(self) -> None:
        """Like closing the window: everything it started is stopped."""
        for signum in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.process.pid, signum)
            except ProcessLookupError:
                break
            try:
                self.process.wait(5)
                break
            except subprocess.TimeoutExpired:
                continue


class Student:
    """Runs one README's blocks in order."""

    def __init__(self, home: Path, output_timeout: float = OUTPUT_TIMEOUT) -> None:
        self.output_timeout = output_timeout
        # The images `up` builds are kept per user, past a purge, as a container engine
        # keeps its own: the student's machine has the ones this run's `up`s built
        # already (a cold build is the same code with nothing in the folder)
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        # what the labs' programs leave in TMPDIR (a Python client killed with its terminal
        # leaves its certificate files) stays in the student's home, not in /tmp
        tmp = home / "tmp"
        tmp.mkdir(exist_ok=True)
        self.env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": cache,
                    "TMPDIR": str(tmp)}
        for name in ("KUBECONFIG", "MINIKUBE_PY_HOME", "PYTHONPATH"):
            self.env.pop(name, None)
        self.terminals: list[Terminal] = []
        self.typed = 0

    def printed(self) -> list[str]:
        return [line for terminal in self.terminals for line in terminal.lines]

    def follow(self, readme: Path) -> None:
        found = blocks(readme)
        shell = [block for block in found if block.language == "sh"]
        previous = ""
        for block in found:
            if block.language == "sh":
                if not self.terminals or opens_terminal(block):
                    self.terminals.append(Terminal(self.env))
                following = shell[shell.index(block) + 1:]
                self.run(commands_to_type(block.text), readme,
                         keeps_terminal=bool(following) and opens_terminal(following[0]))
            elif previous == "sh":
                self.expect(promised_lines(block), readme)
            previous = block.language
        self.check_statuses(self.printed(), readme)  # the programs left running, too

    @staticmethod
    def check_statuses(printed: list[str], readme: Path) -> None:
        """Fail on a command that failed unmarked, or succeeded marked `# fails`."""
        wrong = [line for line in printed if line.startswith((FAILED, SUCCEEDED))]
        if wrong:
            pytest.fail(f"{readme.parent.name}: a command's exit status is not what the "
                        "README says (mark a command that fails on purpose `# fails`):\n"
                        + "\n".join(wrong) + "\n--- printed:\n" + "\n".join(printed[-60:]))

    def run(self, commands: str, readme: Path, *, keeps_terminal: bool) -> None:
        """Type the block and wait until it is done. In a block that keeps its terminal
        (the README goes on in another one), the last command is the program left
        running: it is typed once the commands before it are done, and the README goes
        on once the program has printed its first line (it has started)."""
        if keeps_terminal:
            *before, last = commands.rstrip().splitlines()
            assert not before or not before[-1].endswith("\\"), "one line for the program"
            if before:
                self.run("\n".join(before), readme, keeps_terminal=False)
            terminal = self.terminals[-1]
            start = len(terminal.lines)
            terminal.type(last, "@@left-running")
            deadline = time.monotonic() + BLOCK_TIMEOUT
            while len(terminal.lines) == start:
                if time.monotonic() > deadline:
                    pytest.fail(f"{readme.parent.name}: the program left running printed "
                                f"nothing in {BLOCK_TIMEOUT:.0f}s: {last}")
                time.sleep(0.1)
            return
        terminal = self.terminals[-1]
        self.typed += 1
        marker = f"@@block-{self.typed}-done"
        start = len(terminal.lines)
        terminal.type(commands, marker)
        deadline = time.monotonic() + BLOCK_TIMEOUT
        while not any(line.startswith(marker) for line in terminal.lines[start:]):
            if time.monotonic() > deadline:
                pytest.fail(f"{readme.parent.name}: this block did not finish in "
                            f"{BLOCK_TIMEOUT:.0f}s:\n{commands}\nprinted:\n"
                            + "\n".join(terminal.lines[-40:]))
            time.sleep(0.1)
        self.check_statuses(terminal.lines[start:], readme)

    def expect(self, lines: list[str], readme: Path) -> None:
        deadline = time.monotonic() + self.output_timeout
        while True:
            printed = self.printed()
            missing = [want for want in lines
                       if not any(line_matches(want, line) for line in printed)]
            if not missing:
                return
            if time.monotonic() > deadline:
                pytest.fail(f"{readme.parent.name}: the README promises lines that were "
                            "not printed:\n" + "\n".join(missing) + "\n--- printed:\n"
                            + "\n".join(printed[-60:]))
            time.sleep(0.2)

    def close(self) -> None:
        for terminal in self.terminals:
            terminal.close()


@pytest.fixture(scope="module")
def student_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("student")
    yield home
    # The components' logs outlive the purge, under pytest's kept temporary folders, for
    # whoever reads why a lab failed.
    logs = home / ".minikube-py" / "logs"
    if logs.is_dir():
        shutil.copytree(logs, home / "cluster-logs", dirs_exist_ok=True)
    subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "minikube_py.cluster",
                    "down", "--purge"], cwd=ROOT, capture_output=True, timeout=120,
                   env={**os.environ, "MINIKUBE_PY_HOME": str(home / ".minikube-py")})


@pytest.mark.parametrize("lab", LABS)
def test_lab_readme_runs_as_written(lab: str, student_home: Path) -> None:
    student = Student(student_home)
    try:
        student.follow(ROOT / "labs" / lab / "README.md")
    except pytest.fail.Exception as failure:
        pytest.fail(f"{failure.msg}\n{cluster_diagnosis(student_home / '.minikube-py')}",
                    pytrace=False)
    finally:
        student.close()


def cluster_diagnosis(state: Path, lines: int = 12) -> str:
    """What a reader of a failed lab needs about the cluster behind it: each component's
    process, and the last lines of the supervisor's and the controller-manager's logs."""
    status = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m",
                             "minikube_py.cluster", "status"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60,
                            env={**os.environ, "MINIKUBE_PY_HOME": str(state)})
    parts = ["--- minikube-py status:", status.stdout.strip() + status.stderr.strip()]
    kubelets = subprocess.run(["pgrep", "-af", f"minikube_py.kubelet.*{state}"],
                              capture_output=True, text=True)
    parts += ["--- kubelet processes:", kubelets.stdout.strip()]
    for log in ("supervisor.log", "controller-manager.log"):
        try:
            tail = (state / "logs" / log).read_text(errors="replace").splitlines()[-lines:]
        except OSError as error:
            tail = [str(error)]
        parts += [f"--- the end of {log}:", *tail]
    return "\n".join(parts)


def test_the_runner_fails_on_a_promise_the_terminal_did_not_print(tmp_path: Path) -> None:
    """The runner itself: a README whose promised output differs fails."""
    readme = tmp_path / "lab" / "README.md"
    readme.parent.mkdir()
    readme.write_text("Say hello:\n\n```sh\necho hello world\n```\n\n```text\n"
                      "hello world  # the greeting\n...\n```\n\nAnd:\n\n```sh\necho one\n```\n"
                      "\n```\ntwo\n```\n")
    student = Student(tmp_path, output_timeout=1.0)
    try:
        with pytest.raises(pytest.fail.Exception, match="two"):
            student.follow(readme)
        assert any(line_matches("hello world", line) for line in student.printed())
    finally:
        student.close()


@pytest.mark.parametrize(("block", "refused"), [
    ("echo one\nls /nonexistent\necho two", "@@failed 2 ls /nonexistent"),
    ("ls /nonexistent | cat\nfalse", "@@failed 1 false"),
    ("X=$(false)", "@@failed 1 X=$(false)"),
    ("true  # fails: it does not", "@@succeeded-though-it-fails true"),
    ("echo a \\\n  b  # fails", "@@succeeded-though-it-fails echo a b"),
])
def test_the_runner_fails_on_an_exit_status_the_readme_does_not_say(
        tmp_path: Path, block: str, refused: str) -> None:
    """A command that fails unmarked fails the README, and so does one marked `# fails`
    that succeeds (a pipeline's status is its last command's, as bash has it)."""
    readme = tmp_path / "lab" / "README.md"
    readme.parent.mkdir()
    readme.write_text(f"Run:\n\n```sh\n{block}\n```\n")
    student = Student(tmp_path, output_timeout=1.0)
    try:
        with pytest.raises(pytest.fail.Exception) as failed:
            student.follow(readme)
        assert refused in str(failed.value)
    finally:
        student.close()


def test_the_runner_lets_a_command_marked_fails_fail(tmp_path: Path) -> None:
    readme = tmp_path / "lab" / "README.md"
    readme.parent.mkdir()
    readme.write_text("Run:\n\n```sh\nls /nonexistent  # fails: there is no such file\n"
                      "ls /nonexistent \\\n  /neither  # fails\n"
                      "for i in 1 2; do false || echo recovered; done\necho after\n```\n\n"
                      "```text\nNo such file or directory\nrecovered\nafter\n```\n")
    student = Student(tmp_path, output_timeout=1.0)
    try:
        student.follow(readme)
    finally:
        student.close()

"""What every scenario shares: launching local parties, parsing options, exit codes, printing.

The command-line contract (docs/design.md): MPyC's options first-class, scenario options in lower case and
never a prefix of MPyC's, exact option names only, ``-M m`` launching and waiting for parties ``1..m-1``, exit
codes 0 / 2 (bad usage or input) / 1 (a failure in the protocol) with one ``error: party i: ...`` line,
``t = 0`` refused unless ``--allow-t0``; the options every scenario takes: :data:`HELP_EPILOGS`.

The lifecycle itself (launching, settling, exit codes, agreement) lives in :mod:`secure.launcher`,
shared with user scripts (:func:`secure.run`); this module keeps the parsing and the printing."""
from __future__ import annotations

import argparse
import contextlib
import difflib
import logging
import os
import re
import sys
import textwrap
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, NoReturn, TextIO

from dp.budget.agreement import SpendRequest, active_reservation, agree_spend
from dp.report_text import format_bytes, text_table  # format_bytes re-exported: the jobs' byte counts read alike
from scenarios.kit.packages import installed, missing_package_message
from secure.errors import InputError
from secure.launcher import run_parties

__all__ = ["UsageError", "usage_errors", "ScenarioParser", "print_table", "format_bytes", "run_scenario"]


class UsageError(Exception):
    """Bad command-line usage (exit 2, shared with the other parties like any bad input)."""


@contextlib.contextmanager
def usage_errors() -> Iterator[None]:
    """A check's ``ValueError`` or ``TypeError`` as a :class:`UsageError` with the same one line."""
    try:
        yield
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None


#: what ``-h`` says after the options, by the kind of program (see :class:`ScenarioParser`)
HELP_EPILOGS = {
    "party": ("Every scenario also takes --silence-limit SECONDS (how long a party may stay silent while another "
              "waits for it before everyone stops; default 60) and --allow-t0 (run with threshold t = 0 although "
              "it hides nothing).\n"
              "MPyC's own options come first-class: -M m (m local parties; this process becomes party 0, launches "
              "the others and waits for them), -I i, -T t, -B port, -P host:port, -C ini, -L bits, --ssl, --no-log, "
              "--output-file ...; run with -H to see all of them."),
    "launcher": ("This program launches its own local MPyC parties: of MPyC's options only -M3 and -L are taken "
                 "(run with -H to see MPyC's options)."),
    "tool": "This tool does not run MPyC: MPyC's options (which -H shows in the scenarios) do not apply here.",
}


def _head(doc: str) -> str:
    """A module docstring up to the end of its first ``::`` block (the example command lines), or whole."""
    block = re.search(r"::\n(?:[ \t]+\S.*\n|[ \t]*\n)*", doc)
    return doc if block is None else doc[:block.end()].rstrip() + "\n"


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The description as written; each option's help followed by its default, unless it is none or said."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default in (None, argparse.SUPPRESS) or action.default is False or "default" in text:
            return text
        return f"{text} (default: %(default)s)"


class ScenarioParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that raises :class:`UsageError` instead of exiting on bad usage and refuses
    abbreviations; ``runs_as``: ``"party"``, ``"launcher"`` or ``"tool"`` (docs/command_line.md)."""

    def __init__(self, *args: Any, runs_as: str = "party", **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        kwargs.setdefault("formatter_class", _HelpFormatter)
        kwargs.setdefault("epilog", "\n".join(textwrap.fill(part, 100) for part in HELP_EPILOGS[runs_as].split("\n")))
        if kwargs.get("description"):
            kwargs["description"] = _head(kwargs["description"])
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        """A single-valued option given twice (``--epsilon 1 --epsilon 2``) is refused, not the last one taken."""
        seen: dict[argparse.Action, str] = {}
        for word in args or ():
            if word == "--":
                break
            name = word.split("=", 1)[0] if word.startswith("--") else word
            action = self._option_string_actions.get(name)
            if not isinstance(action, argparse._StoreAction):  # flags and list options may repeat
                continue
            if action in seen:
                shown = name if seen[action] == name else f"{seen[action]} and {name}"
                raise UsageError(f"{shown} given twice: give it once (it takes one value)")
            seen[action] = name
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments: "):
            unknown = [word for word in message.split(": ", 1)[1].split() if word.startswith("-")]
            if unknown:
                raise UsageError(self._unknown_option(unknown[0].split("=", 1)[0]))
        raise UsageError(message)

    def refuse_unknown(self, words: Sequence[str]) -> None:
        """Refuse a long option that none of this parser's nor its commands' is (an abbreviation such as ``--led``)
        with the jobs' line, before argparse takes it for a stray word (the tools with commands)."""
        parsers = [self, *(command for action in self._actions if isinstance(action, argparse._SubParsersAction)
                           for command in action.choices.values())]
        known = sorted({option for each in parsers for action in each._actions for option in action.option_strings
                        if option.startswith("--")})
        for word in words[:words.index("--")] if "--" in words else words:
            name = word.split("=", 1)[0]
            if name.startswith("--") and len(name) > 2 and name not in known:
                raise UsageError(self._unknown_option(name, known))

    def _unknown_option(self, name: str, ours: Sequence[str] = ()) -> str:
        """``unknown option --column (did you mean --columns? ...)``: the closest of ``ours`` (default: ours)."""
        ours = ours or [option for action in self._actions for option in action.option_strings
                        if option.startswith("--")]
        close = [option for option in ours if option.startswith(name)] or difflib.get_close_matches(name, ours, n=1)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        return f"unknown option {name} ({hint}options must be spelled out in full)"

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if status:
            raise UsageError(message or "bad usage")
        if message:
            print(message, end="")
        raise SystemExit(0)


def run_scenario(parse: Callable[[list[str]], Any], body: Callable[..., Awaitable[Any]],
                 public: Callable[[Any], dict[str, Any]], argv: Sequence[str] | None = None, *,
                 t0_privacy: str | None = None, spend: Callable[[Any], SpendRequest | None] | None = None,
                 job: str | None = None) -> int:
    """One party's whole life (:func:`secure.launcher.run_parties`); the process exit code.  Its parameters, ``-h``,
    a missing optional package, progress: docs/command_line.md."""
    if asks_for_help(sys.argv[1:] if argv is None else argv):
        return show_help(parse)
    command_line = list(sys.argv[1:] if argv is None else argv)  # before MPyC takes its options off sys.argv

    async def guarded(options: Any) -> Any:
        install_progress()
        if spend is not None:
            await agree_spend(spend(options))
        with missing_package_stops_party():
            deliver = await (body(options) if job is None else body(options, (job, command_line)))
        reservation = active_reservation() if spend is not None or job is not None else None

        def guarded_deliver() -> Any:  # the budget line after the job's output (or at once, with nothing to deliver)
            with missing_package_stops_party(), output_errors_stop_party():
                delivered = deliver() if callable(deliver) else deliver
            if reservation is not None:
                print(f"  {reservation.describe()}", flush=True)
            return delivered

        return guarded_deliver if callable(deliver) else guarded_deliver()

    def checked_parse(words: list[str]) -> Any:
        from mpyc.runtime import mpc  # imported by run_parties before it parses

        if mpc.options.no_numpy or os.getenv("MPYC_NONUMPY") == "1":
            raise UsageError("--no-numpy is not supported: the jobs compute with MPyC's secure numpy arrays "
                             "(leave out --no-numpy and MPYC_NONUMPY=1)")
        return parse(words)

    return run_parties(checked_parse, guarded, public, argv, usage_errors=(UsageError, InputError),
                       t0_privacy=t0_privacy)


def asks_for_help(argv: Sequence[str]) -> bool:
    """``-h`` or ``--help`` among the options (before a ``--``)."""
    words = list(argv)
    words = words[:words.index("--")] if "--" in words else words
    return "-h" in words or "--help" in words


def show_help(parse: Callable[[list[str]], Any]) -> int:
    """Print the scenario's help (``parse(["--help"])`` only: no other option can fail first); the exit code."""
    try:
        parse(["--help"])
    except SystemExit as exc:
        return 0 if exc.code in (None, 0) else 2
    except UsageError as exc:
        print(f"error: party 0: {exc}", file=sys.stderr, flush=True)
        return 2
    raise RuntimeError("the scenario's parser printed no help: build it with ScenarioParser")


@contextlib.contextmanager
def missing_package_stops_party() -> Iterator[None]:
    """Turn ``ModuleNotFoundError`` of an optional package into one line saying what to install.
    :raise secure.errors.InputError: ``party i: ... needs the 'tqdm' package: pip install ...``."""
    try:
        yield
    except ModuleNotFoundError as exc:
        from secure.session import party_id

        message = missing_package_message(exc)
        if message is None:
            raise
        raise InputError(f"party {party_id()}: {message}") from None


@contextlib.contextmanager
def output_errors_stop_party() -> Iterator[None]:
    """An ``OSError`` while party 0 writes its result files (after the release) as one line (docs/command_line.md)."""
    try:
        yield
    except OSError as exc:
        from secure.session import party_id

        where = exc.filename if exc.filename is not None else "a result file"
        reason = (exc.strerror or str(exc)).lower()
        raise InputError(f"party {party_id()}: cannot write {where}: {reason} (the release above was made)") from None


def print_table(rows: Sequence[tuple[str, str]], title: str | None = None) -> None:
    """Print ``name value`` rows aligned in two columns (:func:`dp.report_text.text_table`)."""
    print(text_table(rows, title))


class TerminalBars:
    """A :data:`secure.meter.ProgressReporter` drawing one ``tqdm`` bar per task on ``stream``."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.bars: dict[str, Any] = {}

    def __call__(self, task: str, done: int, total: int) -> None:
        from tqdm import tqdm

        bar = self.bars.get(task)
        if bar is None or bar.total != total:
            if bar is not None:
                bar.close()
            bar = self.bars[task] = tqdm(total=total, desc=task, file=self.stream, leave=False,
                                         dynamic_ncols=True, mininterval=0.5)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
            del self.bars[task]


def install_progress() -> None:
    """Send this party's progress reports (:func:`secure.meter.report_progress`, public steps) to a ``tqdm`` bar
    when stderr is a terminal, MPyC logs at INFO level (not ``--no-log``) and ``tqdm`` is installed (an optional
    package); to log lines otherwise."""
    from secure.meter import set_progress_reporter

    terminal = bool(getattr(sys.stderr, "isatty", lambda: False)())
    logging_on = logging.getLogger().isEnabledFor(logging.INFO)
    set_progress_reporter(TerminalBars(sys.stderr) if terminal and logging_on and installed("tqdm") else None)


def log_phase(message: str) -> None:
    """Log a progress line through MPyC's logger (silenced by ``--no-log``)."""
    logging.info(message)

"""The small process that owns one build.

Started by `launch.launch_job` (through `detach.py`, which forks first so the launcher returns
at once) with stdin /dev/null and stdout/stderr on the job's log, holding by inheritance the
job's lock and its target slot lock. It makes its own session (so the group id is its own pid),
starts `docker buildx bake` as its child in that group, records both pids with their start
times, and waits.

bake's output comes through a pipe the supervisor drains into the log (`logwriter.LogWriter`),
so a log that cannot be written (a full disk) never stops or blocks the build: the log says
where it stopped holding lines, and the output is read and dropped until there is room again.

When bake ends it records exit code, end time, digest (from bake's metadata file) and state,
writes a footer line into the log, and exits; exiting drops both locks. The outcome comes only
from the exit code and the metadata file, never from what the build printed. It goes first
into the job's outcome slot, whose room was taken at the start, so it is on disk (and readers
show it) even on a full state disk; the job store gets it as soon as it can (`recorder.py`).
A SIGTERM then (bake has ended: nothing to cancel) ends the supervisor after one last try; the
next reader with room records the outcome from its slot. A record of a build whose log missed
output says "log stopped: ..." at once and "log incomplete: disk full at ..." at the end.

bake gets SIGTERM if the supervisor dies (PR_SET_PDEATHSIG): a build nobody records would
hold the machine and push unseen, so a lost supervisor takes its build down with it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from rocmtui.core.jobs.afterbuild import AfterBuild
from rocmtui.core.jobs.bakefiles import (
    MetadataRoom,
    digest_from_metadata,
    forget,
    metadata_file_in,
)
from rocmtui.core.jobs.logwriter import MARKER_BYTES, LogWriter, Reserve
from rocmtui.core.jobs.outcome import OutcomeSlot
from rocmtui.core.jobs.procstat import start_time
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.recorder import JobRecorder, Stopped
from rocmtui.core.jobs.store import JobStore, JobStoreError
from rocmtui.core.jobs.truebuild import ask_buildkit, only_our_files

if TYPE_CHECKING:
    from rocmtui.core.jobs.linkwatch import LinkGuard
import ctypes

from rocmtui.core.jobs.evidence import error_step_of
from rocmtui.core.runs.livetargets import live_file_for
from rocmtui.core.states import JobState
from rocmtui.core.text.units import fmt_age

EXIT_CODE_NOT_STARTED = 127
_PR_SET_PDEATHSIG = 1
CHUNK = 1 << 16


def _set_pdeathsig() -> None:
    """In bake's child before exec: SIGTERM when the supervisor dies."""
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # the supervisor died before prctl took effect
        os._exit(EXIT_CODE_NOT_STARTED)


def _log(message: str) -> None:
    """A line of our own in the job's log (stdout is the log file)."""
    with contextlib.suppress(OSError):
        os.write(1, f"\n# rocmtui: {message}\n".encode())


class Supervisor:
    """Runs bake for one job and records how it ended."""

    def __init__(
        self,
        store: JobStore,
        job_id: str,
        argv: Sequence[str],
        push: bool,
        registry_url: str | None = None,
        link: LinkGuard | None = None,
    ) -> None:
        self.store = store
        self.job_id = job_id
        self.argv = list(argv)
        self.push = push
        self.registry_url = registry_url  # the fleet's registry: asked once a push has ended
        self.signals: list[int] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self.reserve = Reserve(store.jobs_dir / job_id / "reserve")
        self.marker_room = Reserve(store.jobs_dir / job_id / "reserve.log", MARKER_BYTES)
        self.log = LogWriter(1, self.reserve, self.marker_room)  # stdout is the job's log
        self.slot = OutcomeSlot(store.jobs_dir / job_id)  # the outcome's room, taken now
        # bake's metadata: written off the state disk, kept in room taken now (bakefiles.py)
        self.bake_metadata = metadata_file_in(self.argv)
        self.metadata_room = MetadataRoom(store.jobs_dir / job_id)
        self.metadata: Path | None = None  # where it can be read once bake has ended
        self.recorder = JobRecorder(store, job_id, self.log, self.slot, lambda: len(self.signals))
        self.build_signals = 0  # signals that came while bake ran (after: not a cancel)
        self._wake: tuple[int, ...] = ()  # the signal wake-up pipe, from wait() to close()
        self.pids: dict[str, Any] = {}  # recorded at start, or with the outcome
        self.link = link  # a remote node's link, watched while bake runs (linkwatch.py)
        # a group's targets as bake prints them, for the run chart while it runs
        self.live = live_file_for(store.jobs_dir / job_id, self.log.note)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signals.append(signum)

    def start(self) -> JobRecord:
        """Start bake as our child; record both pids with their start times."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)  # set only so that the supervisor finds this package
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,  # drained by wait(): a full disk never blocks the build
            stderr=subprocess.STDOUT,
            close_fds=True,  # the lock descriptors stay with the supervisor only
            env=env,
            preexec_fn=_set_pdeathsig,  # safe: the supervisor is single-threaded
        )
        me = os.getpid()
        self.pids = {
            "supervisor_pid": me,
            "supervisor_start": start_time(me),
            "bake_pid": self.proc.pid,
            "bake_start": start_time(self.proc.pid),
        }
        try:
            return self.store.update(self.job_id, **self.pids)
        except (JobStoreError, OSError) as exc:  # recorded with the outcome instead
            self.log.note(f"could not record the build's pids yet: {exc}")
            return self.store.get(self.job_id)

    def wait(self) -> int:
        """Drain bake's output into the log until bake exits; a stray SIGTERM/SIGINT (not from
        `cancel`) is passed on to bake.

        Sleeps in one `select` on bake's output, a pidfd (bake exited) and a signal wake-up
        pipe, so an hours-long build costs no periodic wake-ups.
        """
        assert self.proc is not None and self.proc.stdout is not None
        out: int | None = self.proc.stdout.fileno()
        handled = 0
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        os.set_blocking(wake_r, False)
        signal.set_wakeup_fd(wake_w)
        self.recorder.wake_fd = wake_r  # the outcome's wait for room wakes on a signal too
        try:
            pidfd: int | None = os.pidfd_open(self.proc.pid)
        except (AttributeError, OSError):  # old kernel: poll for its end every second
            pidfd = None
        next_look = time.monotonic() + self.link.period if self.link else None
        try:
            while True:
                watched = [fd for fd in (out, pidfd, wake_r) if fd is not None]
                timeout = 1.0 if pidfd is None else None
                if next_look is not None:  # a remote node: look at its link every few seconds
                    left = max(0.0, next_look - time.monotonic())
                    timeout = left if timeout is None else min(timeout, left)
                ready, _, _ = select.select(watched, [], [], timeout)
                if out is not None and out in ready and not self._pump(out):
                    out = None  # end of output: bake (and whatever shared its pipe) is done
                ended = pidfd in ready if pidfd is not None else self.proc.poll() is not None
                if ended or (out is None and pidfd is None and self.proc.poll() is not None):
                    if out is not None:
                        self._drain(out)  # what it wrote last; never wait on a helper's EOF
                    code = self.proc.wait()
                    self.build_signals = len(self.signals)
                    return code
                if wake_r in ready:
                    with contextlib.suppress(BlockingIOError):
                        os.read(wake_r, 4096)
                link = self.link
                if link is not None and next_look is not None and time.monotonic() >= next_look:
                    link.tick(self.log.note)
                    next_look = time.monotonic() + link.period
                if len(self.signals) > handled:
                    handled = len(self.signals)
                    record = self.store.get(self.job_id)
                    if record.cancel_requested_at is None:  # not a group-wide cancel: forward
                        with contextlib.suppress(ProcessLookupError):
                            self.proc.send_signal(self.signals[-1])
        finally:
            if pidfd is not None:
                os.close(pidfd)
            self._wake = (wake_r, wake_w)  # closed by close(), after the outcome's wait

    def close(self) -> None:
        """The outcome is recorded (or given up): the reserve goes back, and a SIGTERM from
        now on simply ends the supervisor (there is nothing left to lose)."""
        self.reserve.release()
        self.marker_room.release()
        self.log.reserve = self.log.marker_room = None  # the footer: any room there is now
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        if len(self.signals) > self.build_signals:  # one came while the outcome waited
            signal.raise_signal(signal.SIGTERM)
        signal.set_wakeup_fd(-1)
        self.recorder.wake_fd = None
        for fd in self._wake:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._wake = ()

    def _pump(self, out: int) -> bool:
        """Move one chunk of bake's output to the log; False at the end of the output."""
        try:
            data = os.read(out, CHUNK)
        except InterruptedError:
            return True
        except OSError:
            return False
        self.log.write(data)
        self.recorder.after_write()  # the log stopped: the record says so at once
        if self.live is not None:
            self.live.feed(data, self.log.holding)
        return bool(data)

    def _drain(self, out: int) -> None:
        """Whatever bake left in the pipe, without waiting for more."""
        os.set_blocking(out, False)
        with contextlib.suppress(BlockingIOError, OSError):
            while self._pump(out):
                pass

    def outcome(self, returncode: int) -> dict[str, Any]:
        """The fields to record for bake's end (read from the store and the job's files, which
        needs no disk space); the footer line goes into the log, if it can."""
        exit_code = returncode if returncode >= 0 else 128 - returncode
        latest = self.store.get(self.job_id)
        digest = digest_from_metadata(self.bake_metadata or latest.metadata_path, latest.target)
        message = None
        error_step = None
        if latest.cancel_requested_at is not None or self.build_signals:
            state = JobState.CANCELLED
            message = "cancelled" if latest.cancel_requested_at else "stopped by a signal"
        elif self.link is not None and (link := self.link.message()) is not None:
            gave_up = self.link.watch.gave_up
            state = JobState.FAILED if exit_code or gave_up else JobState.SUCCEEDED
            message = link
        elif (why := only_our_files(exit_code, self.bake_metadata)) is not None:
            # bake failed writing rocmtui's file: the build's own word, from BuildKit
            word = ask_buildkit(latest, self.argv, os.environ, self.registry_url, why)
            state, digest, message = word.state or JobState.FAILED, word.digest, word.message
            if state == JobState.FAILED:
                error_step = error_step_of(latest.log_path, self._dropped())
        elif exit_code == 0 and self.push and digest is None:
            state = JobState.FAILED
            message = "bake exited 0 but its metadata file names no pushed image digest"
        elif exit_code == 0:
            state = JobState.SUCCEEDED
        else:
            state = JobState.FAILED
            error_step = error_step_of(latest.log_path, self._dropped())
        ended = time.time()
        if self.log.incomplete:
            message = f"{message}; {self.log.incomplete}" if message else self.log.incomplete
        return {
            **self.pids,
            "state": state,
            "exit_code": exit_code,
            "ended_at": ended,
            "digest": digest,
            "error_step": error_step,
            "message": message,
        }

    def _dropped(self) -> bytes:
        """The end of the output the log could not keep, while it is not holding lines."""
        return b"" if self.log.holding else bytes(self.log.dropped_tail)

    def footer(self, fields: dict[str, Any], started_at: float) -> None:
        """The log's last line of ours: how the job ended. Before the store hears of it (a
        follower stops at the recorded end), and only if the log holds lines: never into the
        outcome's room."""
        digest = fields.get("digest")
        self.log.note(
            f"job {self.job_id} {fields['state']} (bake exit code {fields['exit_code']}) after "
            f"{fmt_age(fields['ended_at'] - started_at)}" + (f"; digest {digest}" if digest else "")
        )

    def finish(self, returncode: int, record: JobRecord) -> JobRecord:
        """Record the outcome of bake's exit (see `outcome` and `record`), then what follows
        from it (`afterbuild.AfterBuild`)."""
        code = returncode if returncode >= 0 else 128 - returncode
        # bake's code first, the moment it is known: readers never wait on what follows
        # (the metadata, the failed step read from a long log)
        self.slot.write(
            {"exit_code": code, "ended_at": time.time(), "signalled": self.build_signals > 0}
        )
        if self.live is not None and self.log.holding:
            self.live.write()  # its last word, before the store says the build ended
        fields = self.outcome(returncode)
        # into its kept room before the store (which may wait for room): no new block needed
        self.metadata = self.metadata_room.keep(self.bake_metadata)
        self.footer(fields, record.started_at)
        recorded = self.recorder.record(fields, self.build_signals)
        self.close()
        after = AfterBuild(self.store, self.argv, self.registry_url, self.log.note, self.live)
        after.run(recorded, self.metadata)
        forget(self.bake_metadata, record.path)
        return recorded


def _keep_oom_at_start(
    node_json: str | None, job_dir: Path, path: str | None
) -> subprocess.Popen[bytes] | None:
    """Read the node's OOM count beside the starting build, in a child of its own
    (`verdicts/atstart`): the launch never waits for it, the supervisor stays single-threaded,
    and a one-shot `rocmtui jobs` can tell a later OOM kill from an earlier one. The child's
    PATH (`path`, from the launch) leaves out the job's ssh wrapper (`remote.py`), whose
    `ControlMaster=no` would keep the read's own kept connection from forming. Nothing when no
    node was given."""
    if not node_json:
        return None
    env = dict(os.environ)  # PYTHONPATH still in it: the child finds this package
    if path is not None:
        env["PATH"] = path
    try:
        return subprocess.Popen(
            # -P and cwd /: never a `rocmtui` folder beside the bake file (the supervisor's
            # working folder), as for the supervisor itself (tests/fleet/test_child_imports.py)
            [sys.executable, "-P", "-m", "rocmtui.core.verdicts.atstart", str(job_dir), node_json],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            cwd="/",
            env=env,
        )
    except OSError as exc:
        _log(f"no OOM count at the start: {exc.strerror or exc}")
        return None


def _reap(child: subprocess.Popen[bytes] | None) -> None:
    """The OOM-count child ended long ago unless bake ended within seconds; then its reading
    would come too late to matter: stop it rather than keep the supervisor waiting."""
    if child is None:
        return
    if child.poll() is None:
        child.kill()
    child.wait()


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="rocmtui.core.jobs.supervisor")
    parser.add_argument("--store", required=True, help="the state folder")
    parser.add_argument("--job", required=True, help="the job id")
    parser.add_argument("--push", action="store_true", help="the build pushes an image")
    parser.add_argument(
        "--registry-url", default=None, help="the fleet's registry, asked about a push at its end"
    )
    parser.add_argument(
        "--slot-fd",
        type=int,
        action="append",
        default=[],
        help="inherited descriptor of a slot lock (one per image the build makes)",
    )
    parser.add_argument("--link-node", default=None, help="a remote node: watch the link to it")
    parser.add_argument("--link-timeout", type=float, default=120.0, help="seconds down: give up")
    parser.add_argument(
        "--vitals-node", default=None, help="the node as JSON: its OOM count at the start is kept"
    )
    parser.add_argument("--vitals-path", default=None, help="PATH for that read: no ssh wrapper")
    parser.add_argument("bake", nargs=argparse.REMAINDER, help="-- bake's argument list")
    args = parser.parse_args(argv)
    if args.bake and args.bake[0] == "--":
        args.bake = args.bake[1:]
    if not args.bake:
        parser.error("no bake command given")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Supervise one job (see the module doc); `detach.main` forks first and calls this."""
    args = _parse(sys.argv[1:] if argv is None else argv)
    os.setsid()  # our own session and group: cancel signals exactly this group
    store = JobStore(Path(args.store))
    link = None
    if args.link_node:
        from rocmtui.core.jobs.linkwatch import LinkGuard

        link = LinkGuard(store, args.job, args.link_node, args.link_timeout)
    sup = Supervisor(store, args.job, args.bake, args.push, args.registry_url, link)
    try:
        record = sup.start()
    except OSError as exc:
        sup.close()
        _log(f"could not start bake: {exc.strerror or exc}")
        store.update(
            args.job,
            only_if_unfinished=True,
            state=JobState.FAILED,
            exit_code=EXIT_CODE_NOT_STARTED,
            ended_at=time.time(),
            message=f"could not start bake: {exc.strerror or exc}",
            supervisor_pid=os.getpid(),
            supervisor_start=start_time(os.getpid()),
        )
        return 1
    at_start = _keep_oom_at_start(args.vitals_node, store.jobs_dir / args.job, args.vitals_path)
    returncode = sup.wait()
    # bake is done: its images' slots are free now, even while the outcome waits for room
    for fd in args.slot_fd:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # the next holder never reads us as its holder
            os.close(fd)
    try:
        sup.finish(returncode, record)
    except Stopped as stopped:  # a SIGTERM while the store had no room: bake has ended
        sup.log.note(f"supervisor stopped by a signal before the job store had room; {stopped}")
        return 0
    except Exception as exc:  # the outcome slot (if held) still says how it ended
        _log(f"supervisor could not record the outcome: {type(exc).__name__}: {exc}")
        return 1
    finally:
        _reap(at_start)
        sup.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

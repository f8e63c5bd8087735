"""The App starts things: the fleet screen, the keymap from the fleet file, the palette, the
other screens when first asked for; and it has one handler per intent that bubbles up here
(`rocmtui.console.intents`): a screen to show, or a flow of `ConsoleActions` to start, which
goes on by itself from there."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from msgspec.structs import replace
from textual import on
from textual.app import App, SystemCommand
from textual.binding import BindingType
from textual.screen import Screen

from rocmtui.console import keys, palette, performance, prefs, stylesheets
from rocmtui.console.actions import Console, ConsoleActions
from rocmtui.console.backend.access import FleetBackend
from rocmtui.console.backend.views import BakeRequest, JobView
from rocmtui.console.intents import (
    BakeRequested,
    CancelRequested,
    HistoryRequested,
    JobsChanged,
    LayoutChanged,
    LogRequested,
    LogsRequested,
    NewRunRequested,
    PanesChanged,
    PruneRequested,
    PublishedRequested,
    RebuildRequested,
    RunAgainRequested,
    RunsRequested,
    TimelineRequested,
)
from rocmtui.console.messages import BakeLoaded
from rocmtui.console.outside_text import markup_escaped
from rocmtui.console.run_actions import RunStarter
from rocmtui.console.screens.fleet import FleetScreen
from rocmtui.core.config.fleetfile import FleetConfig

if TYPE_CHECKING:  # imported when first shown: nothing on the way to the first frame waits
    from rocmtui.console.screens.history import HistoryScreen
    from rocmtui.console.screens.logs import LogsScreen
    from rocmtui.console.screens.published import PublishedScreen
    from rocmtui.console.screens.runs import RunsScreen

SETTLE_AFTER = 3.0  # s after mount: start-up objects are frozen (performance.settle_heap)
STYLES = stylesheets.STYLES


class RocmTui(App[list[JobView]]):
    """The console. Returns, on exit, the builds that keep running."""

    CSS_PATH = stylesheets.FIRST  # the others after the first frame (console/stylesheets.py)
    TITLE = "rocmtui"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("app"))

    def __init__(
        self,
        config: FleetConfig,
        *,
        backend: FleetBackend | None = None,
        read_only: bool = False,
        clock: Callable[[], float] = time.time,
        live: bool = True,
        remember: bool | None = None,
    ) -> None:
        super().__init__()
        performance.install_strip_patch()  # composited lines without reference cycles
        self.read_only = read_only or config.read_only
        if self.read_only and not config.read_only:
            config = replace(config, read_only=True)  # the core's launch and cancel refuse
        self.config = config
        self.backend = backend or FleetBackend(config)
        self.backend.read_only = self.read_only
        self.clock = clock
        self.live = live  # False: tests feed recorded snapshots, no probes run
        self.remember = live if remember is None else remember  # the per-user prefs file
        self.keymap, self.keymap_problems = keys.check_keymap(config.keys)
        self.fleet_screen = FleetScreen(
            config, self.backend, clock=clock, live=live, read_only=self.read_only,
            keymap=self.keymap,
        )  # fmt: skip
        console = Console(config, self.keymap, self.read_only, live, self.remember)
        self.actions = ConsoleActions(
            self, console, self.backend, self.fleet_screen, show_log=self.open_log
        )  # fmt: skip
        self.runs = RunStarter(
            self, console, self.backend, self.fleet_screen,
            runs_changed=lambda: self.runs_screen.action_refresh(),
        )  # fmt: skip
        self._logs_screen: LogsScreen | None = None
        self._published_screen: PublishedScreen | None = None
        self._history_screen: HistoryScreen | None = None
        self._runs_screen: RunsScreen | None = None
        self.theme_problem = self._first_theme()

    def _first_theme(self) -> str | None:
        """The theme before the first frame: the operator's last choice in the palette, else
        the fleet file's `theme`; a name Textual does not know is said, not fatal."""
        chosen = prefs.load().get("theme") if self.remember else None
        for name in (chosen, self.config.theme):
            if isinstance(name, str) and name in self.available_themes:
                self.theme = name
                break
        if self.config.theme and self.config.theme not in self.available_themes:
            known = ", ".join(sorted(self.available_themes))
            return f"theme {self.config.theme!r} (fleet file) is not one of: {known}"
        return None

    def _theme_chosen(self, theme: str) -> None:
        """Remember a theme chosen in the palette (the screens take its colours themselves)."""
        if self.remember:

            def save() -> None:
                said = prefs.save(theme=theme)
                if said:  # a full disk, a read-only state home: the theme holds for this run
                    self.call_from_thread(self.notify, said, severity="warning", markup=False)

            self.run_worker(save, name="save-theme", thread=True, exit_on_error=False)

    @property
    def _background_screens(self) -> list[Screen[Any]]:
        """Screens that show through the top one: none when it is opaque.

        Textual (8.2) always counts the screen right under the top one, and passes its
        changes up as repaints of the top screen. With help (or the log panes) covering a log
        that follows a fast build, every frame of the hidden log would repaint the unchanged
        page on top: 138 KB/s to the terminal for nothing. So screens under an opaque one wait;
        Textual lays a screen out again when it is resumed.
        """
        if self.screen.styles.background.a == 1:  # (one of rocmtui.console.textual_private.USES)
            return []
        return super()._background_screens

    def get_default_screen(self) -> Screen[Any]:
        """The fleet screen is the bottom of the stack (no blank screen is drawn first), with
        the breakpoint classes of the terminal's size (known by now) before it is styled."""
        self.fleet_screen.fit_breakpoints(self.size)
        return self.fleet_screen

    def on_mount(self) -> None:
        """Keys from the fleet file."""
        self.set_keymap(self.keymap)
        for problem in [*self.keymap_problems, *filter(None, [self.theme_problem])]:
            self.notify(problem, title="Fleet file", severity="warning", markup=False)
        self.watch(self, "theme", self._theme_chosen, init=False)
        # once start-up is over (first rounds on screen, bake file read): a full collection
        # then would delay the first frame with fleet data
        self.set_timer(SETTLE_AFTER, performance.settle_heap, name="heap-settle")
        self.call_after_refresh(stylesheets.load_later, self)

    @property
    def logs_screen(self) -> LogsScreen:
        """The log panes' screen, made (and its modules imported) when first needed."""
        if self._logs_screen is None:
            # on first use: kept off the console's start
            from rocmtui.console.screens.logs import LogsScreen

            layout = prefs.PaneLayout.remembered(prefs.load() if self.remember else {})
            self._logs_screen = LogsScreen(
                clock=self.clock, read_only=self.read_only, keymap=self.keymap, layout=layout
            )
            self.install_screen(self._logs_screen, name="logs")
        return self._logs_screen

    @property
    def published_screen(self) -> PublishedScreen:
        """The target × arch matrix and versions (`m`), made when first needed; its feed asks
        the registry from then on."""
        if self._published_screen is None:
            # on first use: kept off the console's start
            from rocmtui.console.screens.published import PublishedScreen

            self._published_screen = PublishedScreen(
                self.config, dict(self.backend.env), clock=self.clock, live=self.live,
                read_only=self.read_only, keymap=self.keymap,
            )  # fmt: skip
            self.install_screen(self._published_screen, name="matrix")
        return self._published_screen

    @property
    def history_screen(self) -> HistoryScreen:
        """What builds cost (`h`), made (and its modules imported) when first needed."""
        if self._history_screen is None:
            # on first use: kept off the console's start
            from rocmtui.console.screens.history import HistoryScreen

            self._history_screen = HistoryScreen(
                self.config, clock=self.clock, live=self.live, read_only=self.read_only,
                keymap=self.keymap,
            )  # fmt: skip
            self.install_screen(self._history_screen, name="history")
        return self._history_screen

    def timeline_screen(self, job_id: str, title: str, running: bool) -> Screen[None]:
        """One build's steps on a time axis (`t`): a new screen each time, its modules
        imported when first needed."""
        # on first use: kept off the console's start
        from rocmtui.console.screens.timeline import TimelineScreen

        return TimelineScreen(
            self.config, job_id, title, running=running, clock=self.clock, live=self.live,
            read_only=self.read_only, keymap=self.keymap,
        )  # fmt: skip

    @property
    def runs_screen(self) -> RunsScreen:
        """Fleet runs (`u`), made (and its modules imported) when first needed."""
        if self._runs_screen is None:
            # on first use: kept off the console's start
            from rocmtui.console.screens.runs import RunsScreen

            self._runs_screen = RunsScreen(
                self.config, clock=self.clock, live=self.live, read_only=self.read_only,
                keymap=self.keymap,
            )  # fmt: skip
            self.install_screen(self._runs_screen, name="runs")
        return self._runs_screen

    @property
    def open_history_screen(self) -> HistoryScreen | None:
        """The history screen if one was made."""
        return self._history_screen

    @property
    def open_published_screen(self) -> PublishedScreen | None:
        """The published screen if one was made."""
        return self._published_screen

    @property
    def open_logs_screen(self) -> LogsScreen | None:
        """The log panes' screen if one was made (nothing to update otherwise)."""
        return self._logs_screen

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """The palette lists the catalog's actions of this screen (never dangerous ones when
        read-only), then Textual's own but those the catalog already named: its "Keys" (a
        second, different help) and "Quit" were listed twice."""
        scope = str(getattr(screen, "SCOPE", ""))  # a screen's or a dialog's catalog scope
        named = set()
        scopes = ("app", scope, *keys.WIDGET_SCOPES.get(scope, ()))
        for entry in keys.entries(scopes, self.read_only):
            target = palette.target(self, screen, entry.scope)
            if target is None:  # a widget's keys, and no such widget has the focus
                continue
            key = keys.display_key(entry.key, self.keymap, entry.id)
            named.add(entry.description)
            yield SystemCommand(
                markup_escaped(entry.description),
                markup_escaped(f"key {key}"),
                palette.runner(target, entry.action),
            )
        for command in super().get_system_commands(screen):
            if command.title not in named:
                yield command

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        """The palette's Screenshot: Textual saves to ~/Downloads and failed where there is
        none (a server). The SVG goes there when it exists, else to the working directory,
        else to the state folder; the notification names the file."""
        if path is None:
            path = str(palette.screenshot_folder(self.config))
        return super().deliver_screenshot(filename, path, time_format)

    def action_help(self) -> None:
        """`?`: the keys (the screen is built once and kept: it opens at once over a busy log)."""
        # on first use: kept off the console's start
        from rocmtui.console.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            return
        if not self.is_screen_installed("help"):
            self.install_screen(HelpScreen(self.keymap, self.read_only), name="help")
        self.push_screen("help")

    # ---------------------------------------------------------------- intents

    @on(BakeRequested)
    @on(RebuildRequested)
    def open_bake(self, intent: BakeRequested | RebuildRequested) -> None:
        """`b`, `r`: the bake dialog; the plan it closes with is launched (`ConsoleActions`)."""
        self._bake_dialog(intent.request)

    def _bake_dialog(self, request: BakeRequest) -> None:
        dialog = self.actions.bake_dialog(request)
        if dialog is not None:
            self.push_screen(dialog, self.actions.bake_chosen)

    @on(BakeLoaded)
    def _bake_read(self) -> None:
        """The fleet screen has shown the bake file (it bubbles up from there): a dialog asked
        for meanwhile opens now."""
        request = self.actions.waiting_request()
        if request is not None:
            self._bake_dialog(request)
        self.runs.bake_file_read()

    @on(CancelRequested)
    def confirm_cancel(self, intent: CancelRequested) -> None:
        """`c`: asked, then cancelled through the core."""
        self.actions.confirm_cancel(intent.job)

    @on(PruneRequested)
    def confirm_prune(self, intent: PruneRequested) -> None:
        """`p`: shown, asked, then pruned through the core."""
        self.actions.confirm_prune(intent.node)

    @on(RunAgainRequested)
    def run_again(self, intent: RunAgainRequested) -> None:
        """`r` on the Runs screen: asked, then started on its nodes."""
        self.runs.run_again(intent)

    @on(NewRunRequested)
    def new_run(self) -> None:
        """`R`: the new-run dialog, asked once more, then the run on its nodes."""
        self.runs.new_run()

    @on(LogRequested)
    def _log_requested(self, intent: LogRequested) -> None:
        self.open_log(intent.job_id, intent.at)

    def open_log(self, job_id: str, at: str | None = None) -> None:
        """The job's pane among the log panes, brought forward, on show (at the first line of
        step `at`, a step's name, when given)."""
        job = next((j for j in self.fleet_screen.data.jobs if j.record.id == job_id), None)
        if job is None:
            self.notify("That job is not in the job store (yet).", severity="warning")
            return
        logs = self.logs_screen
        logs.open_job(job, at=at)
        if self.screen is not logs:
            self.push_screen(logs)

    @on(TimelineRequested)
    def open_timeline(self, intent: TimelineRequested) -> None:
        """The job's steps on a time axis: a timeline screen of its own on top."""
        job = next((j for j in self.fleet_screen.data.jobs if j.record.id == intent.job_id), None)
        record = job.record if job is not None else None
        title = f"{record.target} {record.arch or '-'} on {record.node}" if record else ""
        running = record is not None and record.ended_at is None
        self.push_screen(self.timeline_screen(intent.job_id, title or intent.job_id, running))

    @on(LogsRequested)
    def _show_logs(self) -> None:
        self.push_screen(self.logs_screen)

    @on(PublishedRequested)
    def _show_published(self) -> None:
        self.push_screen(self.published_screen)

    @on(HistoryRequested)
    def _show_history(self) -> None:
        self.push_screen(self.history_screen)

    @on(RunsRequested)
    def _show_runs(self) -> None:
        self.push_screen(self.runs_screen)

    @on(JobsChanged)
    def jobs_changed(self, intent: JobsChanged) -> None:
        """Open panes take the new states and progress; a push that ended may have changed
        what the registry holds, so the published screen asks again."""
        if self._logs_screen is not None:
            self._logs_screen.update_jobs(intent.jobs)
        if self._published_screen is not None and intent.pushes_ended:
            self._published_screen.refresh_soon()

    @on(PanesChanged)
    def panes_changed(self, intent: PanesChanged) -> None:
        """The open panes' jobs have their progress read, from the next jobs round (now)."""
        self.backend.watch_progress(intent.job_ids)
        self.fleet_screen.poke_jobs()

    @on(LayoutChanged)
    def _layout_changed(self, intent: LayoutChanged) -> None:
        self.actions.remember_layout(intent.layout)

    async def action_quit(self) -> None:
        """`q`: quit; builds keep running and the console says which."""
        running = self.actions.still_running()
        if not running:
            self._stop()
            self.exit([])
            return
        # on first use: kept off the console's start
        from rocmtui.console.dialogs.confirm import QuitDialog
        from rocmtui.console.dialogs.quit import quit_question

        def answered(yes: bool | None) -> None:
            if yes:
                self._stop()
                self.exit(running)

        self.push_screen(QuitDialog(quit_question(running), "Quit", keymap=self.keymap), answered)

    def _stop(self) -> None:
        """The console is quitting: the loops end and a published round in flight is killed."""
        self.fleet_screen.stop_feeds()
        if self._published_screen is not None:
            self._published_screen.stop_feed()

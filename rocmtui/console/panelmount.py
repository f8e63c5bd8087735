"""The fleet screen's panels, mounted in two steps: the nodes panel with the first frame, the
services, jobs, variables and watch panels and the footer right after it is painted.

Composing, styling and drawing every panel before the first frame took about as many
instructions as the whole bare Textual app, and the first frame with the monitor's round waited
for them (bench/bench_start_instructions.py). Until the others are mounted, what is said to them
waits here: a fault is kept for its panel, and the screen renders its data into a panel once
the panel exists (`get` is None before).
"""

from __future__ import annotations

from typing import TypeVar

from textual.screen import Screen

from rocmtui.console.widgets.jobs import JobsPanel
from rocmtui.console.widgets.nodes import NodesPanel
from rocmtui.console.widgets.panels import FleetPanel, ServicesPanel, VariablesPanel, WatchPanel
from rocmtui.core.config.fleetfile import FleetConfig

LATER = ("services", "jobs", "variables")  # the panels mounted after the first frame
P = TypeVar("P", bound=FleetPanel)


class FleetPanels:
    """The panels mounted so far, by name, and the faults said before their panel was."""

    def __init__(self, config: FleetConfig) -> None:
        self.config = config
        self._mounted: dict[str, FleetPanel] = {}
        self._faults: dict[str, str | None] = {}

    def first(self) -> NodesPanel:
        """The first frame's panel (made here, mounted by the screen's compose)."""
        nodes = self._fitted(NodesPanel(id="nodes"))
        self._mounted["nodes"] = nodes
        return nodes

    @property
    def nodes(self) -> NodesPanel:
        panel = self._mounted["nodes"]
        assert isinstance(panel, NodesPanel)
        return panel

    def _fitted(self, panel: P) -> P:
        """A panel with the fleet file's settings."""
        refresh = self.config.refresh_seconds
        panel.late_after = max(3 * refresh, refresh + self.config.probe_deadline_seconds)
        if isinstance(panel, NodesPanel):
            panel.disk_warn_percent = self.config.disk_warn_percent
        return panel

    async def mount_the_rest(self, screen: Screen[None]) -> None:
        """The other panels, the watch panel and the footer, in the order the screen always had
        (each then shows its fault, if one was said meanwhile)."""
        later = [
            self._fitted(ServicesPanel(id="services")),
            self._fitted(JobsPanel(id="jobs")),
            self._fitted(VariablesPanel(id="variables")),
        ]
        await screen.mount_all([*later, WatchPanel(id="watch")], after=self.nodes)
        from rocmtui.console.widgets.footer import QuietFooter  # not needed by the first frame

        await screen.mount(QuietFooter())
        screen.refresh_bindings()  # the footer lists the keys once told (the focus moved before)
        for panel in later:
            name = str(panel.id)
            self._mounted[name] = panel
            panel.show_fault(self._faults.pop(name, None))

    @property
    def all_mounted(self) -> bool:
        """Every panel and the footer are mounted (right after the first frame)."""
        return all(name in self._mounted for name in ("nodes", *LATER))

    def get(self, name: str) -> FleetPanel | None:
        """The panel called `name`, once mounted."""
        return self._mounted.get(name)

    def fault(self, name: str, reason: str | None) -> None:
        """Show (None: clear) why a panel's data is missing, now or once that panel is mounted."""
        panel = self._mounted.get(name)
        if panel is None:
            self._faults[name] = reason
        else:
            panel.show_fault(reason)

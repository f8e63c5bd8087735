"""What the fleet screen's keys are about: the row under the cursor, and the intent each key
makes of it.

A key on the fleet screen acts on the focused panel's row: a job row names its job and node, a
node row its node and that node's running (else last) job. Which row that is, and what `b`,
`r`, `l`, `t`, `c` and `p` ask for on it (or why they cannot), is decided here; the screen
keeps the actions Textual's bindings call, and posts what is decided as intents
(`rocmtui.console.intents`) up to the App.
"""

from __future__ import annotations


class RowIntents:
    def focused_row(self) -> tuple[str | None, JobView | None, str]:
        """(node, job, why) for the row under the cursor of the focused panel only: a job row
        names both; a node row names its node and its running (else last) job. `why` says
        what is missing when the focused panel has no such row."""
        jobs, nodes = self.panels.get("jobs"), self.panels.nodes
        if jobs is not None and self.focused is jobs.table:
            job = next((j for j in self.data.jobs if j.record.id == jobs.selected_key), None)
            return (job.record.node if job else None), job, "No job in the Jobs panel yet."
        if self.focused is nodes.table and nodes.selected_key is not None:
            node = nodes.selected_key
            job = running_job_on(node, self.data.jobs) or last_job_on(node, self.data.jobs)
            return node, job, f"No job on {clean(node, 30)} yet."
        return None, None, "Select a job (Jobs panel) or a node first: Tab moves between panels."

    def action_bake(self) -> None:
        """`b`: the bake dialog, on the focused row's node."""
        node, _, _ = self.focused_row()
        self.post_message(BakeRequested(BakeRequest(node=node)))

    def action_rebuild(self) -> None:
        """`r`: exactly what the focused row's job built, on its node: the dialog opens ready,
        Enter starts it."""
        _, job, why = self.focused_row()
        if job is None:
            self.notify(f"{why} (b starts a new build)", severity="information", markup=False)
            return
        if job.record.state == JobState.STALLED:  # its node needs a person: another one
            elsewhere = BakeRequest.elsewhere(job, self.data.fleet)
            if elsewhere is not None:
                self.post_message(RebuildRequested(elsewhere))
                return
        self.post_message(RebuildRequested(BakeRequest.rebuild(job)))

    def action_open_log(self) -> None:
        """`l`: the log pane of the focused row's job (a node's running, else last, job)."""
        _, job, why = self.focused_row()
        if job is None:
            self.notify(why, severity="information", markup=False)
            return
        self.post_message(LogRequested(job.record.id))

    def action_show_timeline(self) -> None:
        """`t`: the focused row's job's steps on a time axis."""
        _, job, why = self.focused_row()
        if job is None:
            self.notify(why, severity="information", markup=False)
            return
        self.post_message(TimelineRequested(job.record.id))

    def action_cancel_job(self) -> None:
        """`c`: cancel the focused row's running job, after a confirmation."""
        _, job, why = self.focused_row()
        if job is None or not job.active:
            said = (
                why
                if job is None
                else f"{clean(job.record.target, 40)} is not running ({job.record.state})."
            )
            self.notify(said, severity="information", markup=False)
            return
        if job.record.outside is not None:  # no question that could only end in a refusal
            self.notify(
                clean(job.record.outside.cancel_refusal(), 300), severity="warning", markup=False
            )
            return
        self.post_message(CancelRequested(job))

    def action_prune(self) -> None:
        """`p`: the focused row's node's build cache, shown, then pruned once confirmed."""
        node, _, why = self.focused_row()
        if node is None:
            self.notify(why, severity="information", markup=False)
            return
        self.post_message(PruneRequested(node))

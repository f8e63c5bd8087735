"""Modal dialogs: bake, the questions (a build to start or stop, quit), a cell's detail."""

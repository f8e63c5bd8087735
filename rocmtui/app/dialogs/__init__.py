"""Modal dialogs: bake, confirmations, quit."""
